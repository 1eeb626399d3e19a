"""ctypes bindings of the contract kernels (`c/ops_contracts.c`, declared at the end of `c/helia_ops.h`).

The C kernels implement the operator contracts of `heliabuild.kernels.operators` (INT32 comparisons,
SELECT_V2, FP32/FP16 DIV, NEG and SQUARED_DIFFERENCE) and give the same results as those modules'
`reference(...)` functions (NaN payloads of DIV and SQUARED_DIFFERENCE aside, which the contract leaves
unspecified). `ContractKernels(load_host_library(build_dir))` runs the host build on numpy arrays; a
refused request raises `ContractKernelError` with the C status and writes nothing.

`kernel_dims(shapes, output_shape, max_rank)` is the extents lists a broadcasting kernel takes (the
firmware generator uses it too): one flat axis when no operand broadcasts, else every shape right-aligned
and left-padded with 1 to a common rank.
"""

from __future__ import annotations

import ctypes
import math
from collections.abc import Sequence
from typing import ClassVar

import numpy as np

from heliabuild.errors import ContractKernelError
from heliabuild.kernels.native import Status

MAX_RANK = 6
"""HELIA_OPS_MAX_RANK: the rank of the broadcasting binary kernels' extents lists."""
SELECT_MAX_RANK = 8
"""HELIA_SELECT_MAX_RANK: SELECT_V2's extents lists (the contract's "through rank eight")."""

ACTIVATION_CODES: dict[str, int] = {"NONE": 0, "RELU": 1, "RELU_N1_TO_1": 2, "RELU6": 3}
"""DIV's fused activations -> HELIA_ACTIVATION_* (TFLite's ActivationFunctionType codes)."""

COMPARISONS: dict[str, str] = {
    "EQUAL": "helia_equal_s32",
    "NOT_EQUAL": "helia_not_equal_s32",
    "GREATER": "helia_greater_s32",
    "GREATER_EQUAL": "helia_greater_equal_s32",
    "LESS": "helia_less_s32",
    "LESS_EQUAL": "helia_less_equal_s32",
}
"""TFLite comparison name -> the C run function (the check is `<name>_check`)."""

FLOAT_SUFFIX = {np.dtype(np.float32): "f32", np.dtype(np.float16): "f16"}


def kernel_dims(
    shapes: Sequence[Sequence[int]], output_shape: Sequence[int], max_rank: int = MAX_RANK
) -> tuple[int, list[tuple[int, ...]]]:
    """(rank, [dims of each shape..., dims of the output]) for a broadcasting kernel.

    Each shape is right-aligned and left-padded with 1 to the largest rank (at least 1); when they are then
    all the output's, nothing broadcasts and the layouts are one flat axis (any rank, leading singleton
    axes included). ContractKernelError when broadcasting needs a rank above `max_rank`.
    """
    rank = max([len(s) for s in shapes] + [len(output_shape), 1])
    padded = [(1,) * (rank - len(s)) + tuple(int(d) for d in s) for s in (*shapes, output_shape)]
    if all(p == padded[-1] for p in padded):
        count = math.prod(output_shape)
        return 1, [(count,)] * len(padded)
    if rank > max_rank:
        raise ContractKernelError(f"broadcasting at rank {rank}; the kernel takes at most {max_rank}")
    return rank, padded


def _dims(values: Sequence[int], size: int) -> ctypes.Array:
    return (ctypes.c_int32 * size)(*(list(values) + [1] * (size - len(values))))


class BroadcastArgs(ctypes.Structure):
    _fields_ = [
        ("input1", ctypes.c_void_p),
        ("input2", ctypes.c_void_p),
        ("output", ctypes.c_void_p),
        ("rank", ctypes.c_int32),
        ("input1_dims", ctypes.c_int32 * MAX_RANK),
        ("input2_dims", ctypes.c_int32 * MAX_RANK),
        ("output_dims", ctypes.c_int32 * MAX_RANK),
        ("activation", ctypes.c_int32),
    ]


class SelectArgs(ctypes.Structure):
    _fields_ = [
        ("condition", ctypes.c_void_p),
        ("x", ctypes.c_void_p),
        ("y", ctypes.c_void_p),
        ("output", ctypes.c_void_p),
        ("rank", ctypes.c_int32),
        ("condition_dims", ctypes.c_int32 * SELECT_MAX_RANK),
        ("x_dims", ctypes.c_int32 * SELECT_MAX_RANK),
        ("y_dims", ctypes.c_int32 * SELECT_MAX_RANK),
        ("output_dims", ctypes.c_int32 * SELECT_MAX_RANK),
    ]


def _contiguous(array: np.ndarray, dtype: object = None) -> np.ndarray:
    """A C-contiguous copy that keeps a scalar's rank 0 (np.ascontiguousarray makes it rank 1)."""
    return np.array(array, dtype=dtype, order="C")


def _float_pair(x: np.ndarray, y: np.ndarray, what: str) -> tuple[np.ndarray, np.ndarray, str]:
    x, y = np.asarray(x), np.asarray(y)
    if x.dtype != y.dtype or x.dtype not in FLOAT_SUFFIX:
        raise ContractKernelError(f"{what}: operands {x.dtype} and {y.dtype}, expected both float32 or both float16")
    return _contiguous(x), _contiguous(y), FLOAT_SUFFIX[x.dtype]


class ContractKernels:
    """The contract kernels of a loaded `libheliakernels` (heliabuild.kernels.native.load_host_library).

    Each method takes numpy arrays, runs the C kernel with NumPy broadcasting and returns a new array;
    `run(function, args)` calls one entry point on prepared arguments and returns its Status (for tests
    of refusals and in-place calls).
    """

    _BROADCAST: ClassVar[tuple[str, ...]] = (
        "helia_div_f32",
        "helia_div_f16",
        "helia_squared_difference_f32",
        "helia_squared_difference_f16",
        *COMPARISONS.values(),
    )

    def __init__(self, library: ctypes.CDLL) -> None:
        self.library = library
        signatures: dict[str, tuple[list[object], object]] = {}
        for name in self._BROADCAST:
            signatures[name] = ([ctypes.POINTER(BroadcastArgs)], ctypes.c_int)
        signatures["helia_select_v2_s32"] = ([ctypes.POINTER(SelectArgs)], ctypes.c_int)
        for suffix in ("f32", "f16"):
            signatures[f"helia_neg_{suffix}"] = ([ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int32], ctypes.c_int)
        for name, (argtypes, restype) in signatures.items():
            for function_name in (name, f"{name}_check"):
                function = getattr(library, function_name)
                function.argtypes = argtypes
                function.restype = restype

    def run(self, function: str, *arguments: object) -> Status:
        """Status of `function(arguments...)`; a ctypes Structure is passed by reference."""
        passed = [ctypes.byref(a) if isinstance(a, ctypes.Structure) else a for a in arguments]
        return Status(getattr(self.library, function)(*passed))

    def _call(self, function: str, *arguments: object) -> None:
        status = self.run(function, *arguments)
        if status != Status.OK:
            raise ContractKernelError(f"{function}: refused with status {status.name} ({status.value})", status)

    @staticmethod
    def broadcast_args(
        x: np.ndarray, y: np.ndarray, out: np.ndarray, activation: str = "NONE", rank: int | None = None
    ) -> BroadcastArgs:
        """The argument struct of a binary kernel on these C-contiguous arrays (dims from `kernel_dims`)."""
        found, dims = kernel_dims([x.shape, y.shape], out.shape)
        return BroadcastArgs(
            x.ctypes.data, y.ctypes.data, out.ctypes.data, found if rank is None else rank,
            _dims(dims[0], MAX_RANK), _dims(dims[1], MAX_RANK), _dims(dims[2], MAX_RANK),
            ACTIVATION_CODES.get(str(activation).upper(), -1),
        )  # fmt: skip

    def _binary(self, function: str, x: np.ndarray, y: np.ndarray, out: np.ndarray, activation: str) -> np.ndarray:
        args = self.broadcast_args(x, y, out, activation)
        self._call(function, args)
        return out

    def div(self, x: np.ndarray, y: np.ndarray, activation: str = "NONE") -> np.ndarray:
        """x / y with the fused activation, FP32 or FP16 (as heliabuild.kernels.operators.div.reference)."""
        x, y, suffix = _float_pair(x, y, "DIV")
        out = np.zeros(np.broadcast_shapes(x.shape, y.shape), x.dtype)
        return self._binary(f"helia_div_{suffix}", x, y, out, activation)

    def squared_difference(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        """(x - y)^2, FP32 or FP16 (as heliabuild.kernels.operators.squared_difference.reference)."""
        x, y, suffix = _float_pair(x, y, "SQUARED_DIFFERENCE")
        out = np.zeros(np.broadcast_shapes(x.shape, y.shape), x.dtype)
        return self._binary(f"helia_squared_difference_{suffix}", x, y, out, "NONE")

    def comparison(self, operator: str, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        """The INT32 comparison `operator` (EQUAL ... LESS_EQUAL) as a bool array."""
        name = operator.upper()
        if name not in COMPARISONS:
            raise ContractKernelError(f"unknown comparison {operator!r}; expected one of {', '.join(COMPARISONS)}")
        x = _contiguous(x, np.int32)
        y = _contiguous(y, np.int32)
        out = np.zeros(np.broadcast_shapes(x.shape, y.shape), np.bool_)
        return self._binary(COMPARISONS[name], x, y, out, "NONE")

    @staticmethod
    def select_args(condition: np.ndarray, x: np.ndarray, y: np.ndarray, out: np.ndarray) -> SelectArgs:
        rank, dims = kernel_dims([condition.shape, x.shape, y.shape], out.shape, SELECT_MAX_RANK)
        return SelectArgs(
            condition.ctypes.data, x.ctypes.data, y.ctypes.data, out.ctypes.data, rank,
            *(_dims(d, SELECT_MAX_RANK) for d in dims),
        )  # fmt: skip

    def select_v2(self, condition: np.ndarray, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        """`x` where `condition` else `y`, INT32 values, broadcasting through rank 8."""
        c = _contiguous(condition)
        if c.dtype != np.bool_:
            raise ContractKernelError(f"SELECT_V2: condition is {c.dtype}, expected bool")
        x = _contiguous(x, np.int32)
        y = _contiguous(y, np.int32)
        out = np.zeros(np.broadcast_shapes(c.shape, x.shape, y.shape), np.int32)
        self._call("helia_select_v2_s32", self.select_args(c, x, y, out))
        return out

    def neg(self, x: np.ndarray) -> np.ndarray:
        """-x by the sign bit, FP32 or FP16, any shape (as heliabuild.kernels.operators.neg.reference)."""
        x = _contiguous(x)
        if x.dtype not in FLOAT_SUFFIX:
            raise ContractKernelError(f"NEG: input is {x.dtype}, expected float32 or float16")
        out = np.zeros(x.shape, x.dtype)
        self._call(f"helia_neg_{FLOAT_SUFFIX[x.dtype]}", x.ctypes.data, out.ctypes.data, x.size)
        return out
