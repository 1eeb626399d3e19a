"""heliabuild's int8 operator kernels: the ctypes bindings of the host build, and (importable from here too)
the parameter derivations of heliabuild.kernels.int8_params (quantize_multiplier and the fixed-point arithmetic
are heliabuild.kernels.fixed_point's).

`Int8Kernels(load_host_library(build_dir))` runs the host build of the C
kernels on numpy arrays; a refused request raises `Int8KernelError` with the
C status and writes nothing. Setting `Int8Kernels.recorder` hands every call
(a `HostKernelCall`: function, argument structs, buffers) to a callback before it
runs, which is how the Cortex-M55 test replays the calls on the target.
"""

from __future__ import annotations

import ctypes
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from heliabuild.errors import Int8KernelError
from heliabuild.kernels.int8_params import (
    ACTIVATIONS,
    ADD_LEFT_SHIFT,
    MAX_RANK,
    SOFTMAX_OUTPUT_SCALE,
    SOFTMAX_OUTPUT_ZERO_POINT,
    SOFTMAX_SCALED_DIFF_INTEGER_BITS,
    BinaryParams,
    ConvParams,
    FullyConnectedParams,
    MeanParams,
    PoolParams,
    Quant,
    RequantizeParams,
    SoftmaxParams,
    activation_range,
    add_params,
    conv_params,
    conv_scratch_bytes,
    fully_connected_params,
    mean_params,
    mul_params,
    output_size,
    padding_before,
    pool_params,
    quantize_value,
    reads_in_place,
    requantize_params,
    softmax_params,
    weight_sums,
)
from heliabuild.kernels.native import Status

_I8 = ctypes.POINTER(ctypes.c_int8)


_I32 = ctypes.POINTER(ctypes.c_int32)


_F32 = ctypes.POINTER(ctypes.c_float)


def _fields(*names: str) -> list[tuple[str, type]]:
    return [(name, ctypes.c_int32) for name in names]


class FullyConnectedArgs(ctypes.Structure):
    _fields_ = [
        ("input", _I8), ("filter", _I8), ("bias", _I32), ("multipliers", _I32), ("shifts", _I32), ("output", _I8),
        *_fields("batches", "depth", "output_depth", "quant_count", "input_zero_point", "output_zero_point",
                 "act_min", "act_max"),
        ("weight_sums", _I32),
    ]  # fmt: skip


class ConvArgs(ctypes.Structure):
    _fields_ = [
        ("input", _I8), ("filter", _I8), ("bias", _I32), ("multipliers", _I32), ("shifts", _I32), ("output", _I8),
        *_fields("batches", "input_h", "input_w", "input_c", "filter_h", "filter_w", "output_h", "output_w",
                 "output_c", "stride_h", "stride_w", "dilation_h", "dilation_w", "pad_top", "pad_left",
                 "depth_multiplier", "quant_count", "input_zero_point", "output_zero_point", "act_min", "act_max"),
        ("weight_sums", _I32), ("scratch", _I8), ("scratch_bytes", ctypes.c_int32),
    ]  # fmt: skip


class PoolArgs(ctypes.Structure):
    _fields_ = [
        ("input", _I8), ("output", _I8),
        *_fields("batches", "input_h", "input_w", "channels", "output_h", "output_w", "filter_h", "filter_w",
                 "stride_h", "stride_w", "pad_top", "pad_left", "act_min", "act_max"),
    ]  # fmt: skip


_DIMS = ctypes.c_int32 * MAX_RANK


class BinaryArgs(ctypes.Structure):
    _fields_ = [
        ("input1", _I8), ("input2", _I8), ("output", _I8), ("rank", ctypes.c_int32),
        ("input1_dims", _DIMS), ("input2_dims", _DIMS), ("output_dims", _DIMS),
        *_fields("input1_zero_point", "input2_zero_point", "output_zero_point", "left_shift", "input1_multiplier",
                 "input1_shift", "input2_multiplier", "input2_shift", "output_multiplier", "output_shift",
                 "act_min", "act_max"),
    ]  # fmt: skip


class PadArgs(ctypes.Structure):
    _fields_ = [
        ("input", ctypes.c_void_p), ("output", ctypes.c_void_p), ("element_size", ctypes.c_size_t),
        ("rank", ctypes.c_int32), ("input_dims", _DIMS), ("before", _DIMS), ("after", _DIMS),
        ("pad_value", ctypes.c_void_p),
    ]  # fmt: skip


class ConcatArgs(ctypes.Structure):
    _fields_ = [
        ("inputs", ctypes.POINTER(ctypes.c_void_p)), ("axis_extents", _I32), ("output", ctypes.c_void_p),
        ("element_size", ctypes.c_size_t), ("input_count", ctypes.c_int32), ("outer", ctypes.c_int32),
        ("inner", ctypes.c_int32),
    ]  # fmt: skip


class SoftmaxArgs(ctypes.Structure):
    _fields_ = [
        ("input", _I8), ("output", _I8),
        *_fields("rows", "depth", "input_multiplier", "input_left_shift", "diff_min"),
    ]  # fmt: skip


class RequantizeArgs(ctypes.Structure):
    _fields_ = [
        ("input", _I8), ("output", _I8),
        *_fields("count", "input_zero_point", "output_zero_point", "multiplier", "shift", "act_min", "act_max"),
    ]  # fmt: skip


class MeanArgs(ctypes.Structure):
    _fields_ = [
        ("input", _I8), ("output", _I8),
        *_fields("outer", "reduced", "inner", "input_zero_point", "output_zero_point", "multiplier", "shift"),
    ]  # fmt: skip


def _pointer(array: np.ndarray | None, kind: type) -> object:
    if array is None:
        return ctypes.cast(None, kind)
    return array.ctypes.data_as(kind)


def _c_array(array: np.ndarray | Sequence[int] | Sequence[float], dtype: str) -> np.ndarray:
    return np.ascontiguousarray(np.asarray(array), dtype=dtype)


def _dims(shape: Sequence[int]) -> ctypes.Array:
    values = list(shape) + [1] * (MAX_RANK - len(shape))
    return _DIMS(*values)


@dataclass(frozen=True)
class HostKernelCall:
    """One C kernel call as the bindings make it: the function, its arguments (argument structs as
    ctypes Structures, the rest as ctypes values or ints) and every buffer the arguments point into
    (numpy arrays, or ctypes pointer tables for CONCATENATION), the output last."""

    function: str
    arguments: tuple[object, ...]
    arrays: tuple[object, ...]
    written: int = 1
    """How many of the last arrays the kernel writes (the output, and before it CONV_2D's scratch row)."""


class Int8Kernels:
    """The int8 operator kernels of a loaded `libheliakernels` (heliabuild.kernels.native.load_host_library).

    Each method takes numpy arrays (copied to C-contiguous int8/int32/float32)
    and the parameters derived above, runs the C kernel and returns a new
    output array. A refusal raises Int8KernelError with the C status.
    """

    _SIGNATURES: ClassVar[dict[str, tuple[list[object], object]]] = {
        "helia_fully_connected_s8": ([ctypes.POINTER(FullyConnectedArgs)], ctypes.c_int),
        "helia_conv2d_s8": ([ctypes.POINTER(ConvArgs)], ctypes.c_int),
        "helia_conv2d_1x1_s8": ([ctypes.POINTER(ConvArgs)], ctypes.c_int),
        "helia_depthwise_conv2d_s8": ([ctypes.POINTER(ConvArgs)], ctypes.c_int),
        "helia_average_pool2d_s8": ([ctypes.POINTER(PoolArgs)], ctypes.c_int),
        "helia_max_pool2d_s8": ([ctypes.POINTER(PoolArgs)], ctypes.c_int),
        "helia_add_s8": ([ctypes.POINTER(BinaryArgs)], ctypes.c_int),
        "helia_mul_s8": ([ctypes.POINTER(BinaryArgs)], ctypes.c_int),
        "helia_reshape": ([ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p, ctypes.c_size_t], ctypes.c_int),
        "helia_pad": ([ctypes.POINTER(PadArgs)], ctypes.c_int),
        "helia_concatenation": ([ctypes.POINTER(ConcatArgs)], ctypes.c_int),
        "helia_quantize_f32_s8": ([_F32, _I8, ctypes.c_int32, ctypes.c_float, ctypes.c_int32], ctypes.c_int),
        "helia_dequantize_s8_f32": ([_I8, _F32, ctypes.c_int32, ctypes.c_float, ctypes.c_int32], ctypes.c_int),
        "helia_softmax_s8": ([ctypes.POINTER(SoftmaxArgs)], ctypes.c_int),
        "helia_requantize_s8": ([ctypes.POINTER(RequantizeArgs)], ctypes.c_int),
        "helia_mean_s8": ([ctypes.POINTER(MeanArgs)], ctypes.c_int),
        **dict.fromkeys(
            ("helia_sub_s8", "helia_maximum_s8", "helia_minimum_s8", "helia_prelu_s8"),
            ([ctypes.POINTER(BinaryArgs)], ctypes.c_int),
        ),
        "helia_ops_mbqm_double": ([ctypes.c_int32] * 3, ctypes.c_int32),
        "helia_ops_mbqm_single": ([ctypes.c_int32] * 3, ctypes.c_int32),
    }

    def __init__(self, library: ctypes.CDLL) -> None:
        self.library = library
        for name, (argtypes, restype) in self._SIGNATURES.items():
            function = getattr(library, name)
            function.argtypes = argtypes
            function.restype = restype

    recorder: Callable[[HostKernelCall], None] | None = None
    """Called with every HostKernelCall before it runs (the M55 tests replay the calls on the target)."""

    def _call(self, name: str, *arguments: object, arrays: Sequence[object] = (), written: int = 1) -> None:
        if self.recorder is not None:
            self.recorder(HostKernelCall(name, tuple(arguments), tuple(arrays), written))
        passed = [ctypes.byref(a) if isinstance(a, ctypes.Structure) else a for a in arguments]
        status = Status(getattr(self.library, name)(*passed))
        if status != Status.OK:
            raise Int8KernelError(f"{name}: refused with status {status.name} ({status.value})", status)

    def mbqm(self, rounding: str, x: int, multiplier: int, shift: int) -> int:
        """The C MultiplyByQuantizedMultiplier, `rounding` 'single' or 'double'."""
        return int(getattr(self.library, f"helia_ops_mbqm_{rounding}")(x, multiplier, shift))

    def fully_connected(
        self,
        params: FullyConnectedParams,
        input: np.ndarray,
        filter: np.ndarray,
        bias: np.ndarray | None,
        *,
        sums: bool = True,
    ) -> np.ndarray:
        """With `sums` the call passes the weight sums (what the firmware does; the Helium body needs them)."""
        x, f = _c_array(input, "int8"), _c_array(filter, "int8")
        b = None if bias is None else _c_array(bias, "int32")
        m, s = _c_array(params.multipliers, "int32"), _c_array(params.shifts, "int32")
        ws = weight_sums(f) if sums else None
        out = np.zeros((params.batches, params.output_depth), np.int8)
        args = FullyConnectedArgs(
            _pointer(x, _I8), _pointer(f, _I8), _pointer(b, _I32), _pointer(m, _I32), _pointer(s, _I32),
            _pointer(out, _I8), params.batches, params.depth, params.output_depth, m.size,
            params.input_zero_point, params.output_zero_point, params.act_min, params.act_max, _pointer(ws, _I32),
        )  # fmt: skip
        self._call("helia_fully_connected_s8", args, arrays=(x, f, b, m, s, ws, out))
        return out

    def conv(
        self,
        params: ConvParams,
        input: np.ndarray,
        filter: np.ndarray,
        bias: np.ndarray | None,
        kernel: str | None = None,
        *,
        sums: bool = True,
        scratch: bool = True,
        pointwise: bool = False,
    ) -> np.ndarray:
        """CONV_2D, or DEPTHWISE_CONV_2D when `params.depthwise`; `kernel` names another kernel taking
        helia_conv_s8_args (TRANSPOSE_CONV's, called without weight sums or scratch). With `sums` and `scratch` the
        call passes the weight sums and CONV_2D's im2col row (what the firmware does; the Helium bodies need them);
        `pointwise` calls the 1x1 entry (helia_conv2d_1x1_s8, no scratch)."""
        x, f = _c_array(input, "int8"), _c_array(filter, "int8")
        b = None if bias is None else _c_array(bias, "int32")
        m, s = _c_array(params.multipliers, "int32"), _c_array(params.shifts, "int32")
        ws = weight_sums(f, params.depthwise) if sums and kernel is None else None
        row_bytes = 0 if pointwise or kernel is not None else conv_scratch_bytes(params)
        row = np.zeros(row_bytes, np.int8) if scratch and row_bytes else None
        out = np.zeros(params.output_shape, np.int8)
        n, h, w, c = params.input_shape
        args = ConvArgs(
            _pointer(x, _I8), _pointer(f, _I8), _pointer(b, _I32), _pointer(m, _I32), _pointer(s, _I32),
            _pointer(out, _I8), n, h, w, c, params.filter_shape[1], params.filter_shape[2],
            params.output_shape[1], params.output_shape[2], params.output_shape[3], *params.stride, *params.dilation,
            *params.pad, params.depth_multiplier, m.size, params.input_zero_point, params.output_zero_point,
            params.act_min, params.act_max, _pointer(ws, _I32), _pointer(row, _I8), 0 if row is None else row.size,
        )  # fmt: skip
        name = kernel or ("helia_depthwise_conv2d_s8" if params.depthwise else "helia_conv2d_s8")
        name = "helia_conv2d_1x1_s8" if pointwise else name
        self._call(name, args, arrays=(x, f, b, m, s, ws, row, out), written=2)
        return out

    def pool(self, kind: str, params: PoolParams, input: np.ndarray) -> np.ndarray:
        """`kind` 'average' or 'max'."""
        x = _c_array(input, "int8")
        out = np.zeros(params.output_shape, np.int8)
        n, h, w, c = params.input_shape
        args = PoolArgs(
            _pointer(x, _I8), _pointer(out, _I8), n, h, w, c, params.output_shape[1], params.output_shape[2],
            *params.filter, *params.stride, *params.pad, params.act_min, params.act_max,
        )  # fmt: skip
        self._call(f"helia_{kind}_pool2d_s8", args, arrays=(x, out))
        return out

    def binary(self, kind: str, params: BinaryParams, input1: np.ndarray, input2: np.ndarray) -> np.ndarray:
        """`kind` 'add', 'mul', 'sub' (add_params), 'maximum' or 'minimum' (raw codes: any params), NumPy
        broadcasting over rank <= 6."""
        a, b = _c_array(input1, "int8"), _c_array(input2, "int8")
        shape = np.broadcast_shapes(a.shape, b.shape)
        rank = max(len(shape), 1)
        out = np.zeros(shape, np.int8)

        def extended(s: tuple[int, ...]) -> tuple[int, ...]:
            return (1,) * (rank - len(s)) + tuple(s)

        args = BinaryArgs(
            _pointer(a, _I8), _pointer(b, _I8), _pointer(out, _I8), rank,
            _dims(extended(a.shape)), _dims(extended(b.shape)), _dims(extended(shape)),
            params.input1_zero_point, params.input2_zero_point, params.output_zero_point, params.left_shift,
            params.input1_multiplier, params.input1_shift, params.input2_multiplier, params.input2_shift,
            params.output_multiplier, params.output_shift, params.act_min, params.act_max,
        )  # fmt: skip
        self._call(f"helia_{kind}_s8", args, arrays=(a, b, out))
        return out

    def reshape(self, input: np.ndarray, shape: Sequence[int]) -> np.ndarray:
        x = np.ascontiguousarray(input)
        out = np.zeros(tuple(shape), x.dtype)
        self._call("helia_reshape", x.ctypes.data, x.nbytes, out.ctypes.data, out.nbytes, arrays=(x, out))
        return out

    def pad(self, input: np.ndarray, paddings: Sequence[tuple[int, int]], value: int | float) -> np.ndarray:
        x = np.ascontiguousarray(input)
        before = [int(p[0]) for p in paddings]
        after = [int(p[1]) for p in paddings]
        out = np.zeros(tuple(d + b + a for d, b, a in zip(x.shape, before, after, strict=True)), x.dtype)
        pad_value = np.array([value], x.dtype)
        args = PadArgs(
            x.ctypes.data, out.ctypes.data, x.itemsize, x.ndim, _dims(x.shape), _dims(before), _dims(after),
            pad_value.ctypes.data,
        )  # fmt: skip
        self._call("helia_pad", args, arrays=(x, pad_value, out))
        return out

    def concatenation(self, inputs: Sequence[np.ndarray], axis: int) -> np.ndarray:
        arrays = [np.ascontiguousarray(a) for a in inputs]
        first = arrays[0]
        axis = axis % first.ndim
        shape = list(first.shape)
        shape[axis] = sum(a.shape[axis] for a in arrays)
        out = np.zeros(tuple(shape), first.dtype)
        pointers = (ctypes.c_void_p * len(arrays))(*[a.ctypes.data for a in arrays])
        extents = np.array([a.shape[axis] for a in arrays], np.int32)
        args = ConcatArgs(
            ctypes.cast(pointers, ctypes.POINTER(ctypes.c_void_p)), _pointer(extents, _I32), out.ctypes.data,
            first.itemsize, len(arrays), math.prod(shape[:axis]), math.prod(shape[axis + 1 :]),
        )  # fmt: skip
        self._call("helia_concatenation", args, arrays=(*arrays, pointers, extents, out))
        return out

    def quantize(self, input: np.ndarray, quant: Quant) -> np.ndarray:
        x = _c_array(input, "float32")
        out = np.zeros(x.shape, np.int8)
        self._call(
            "helia_quantize_f32_s8", _pointer(x, _F32), _pointer(out, _I8), x.size, quant.scale, quant.zero_point,
            arrays=(x, out),
        )  # fmt: skip
        return out

    def dequantize(self, input: np.ndarray, quant: Quant) -> np.ndarray:
        x = _c_array(input, "int8")
        out = np.zeros(x.shape, np.float32)
        self._call(
            "helia_dequantize_s8_f32", _pointer(x, _I8), _pointer(out, _F32), x.size, quant.scale, quant.zero_point,
            arrays=(x, out),
        )  # fmt: skip
        return out

    def softmax(self, params: SoftmaxParams, input: np.ndarray) -> np.ndarray:
        """SOFTMAX over the last axis; the output has scale 1/256 and zero point -128."""
        x = _c_array(input, "int8")
        out = np.zeros(x.shape, np.int8)
        depth = x.shape[-1] if x.ndim else 1
        args = SoftmaxArgs(
            _pointer(x, _I8), _pointer(out, _I8), x.size // depth, depth,
            params.input_multiplier, params.input_left_shift, params.diff_min,
        )  # fmt: skip
        self._call("helia_softmax_s8", args, arrays=(x, out))
        return out

    def requantize(self, params: RequantizeParams, input: np.ndarray) -> np.ndarray:
        """Standalone RELU / RELU6 / RELU_N1_TO_1, or int8 -> int8 QUANTIZE (activation NONE)."""
        x = _c_array(input, "int8")
        out = np.zeros(x.shape, np.int8)
        args = RequantizeArgs(
            _pointer(x, _I8), _pointer(out, _I8), x.size, params.input_zero_point, params.output_zero_point,
            params.multiplier, params.shift, params.act_min, params.act_max,
        )  # fmt: skip
        self._call("helia_requantize_s8", args, arrays=(x, out))
        return out

    def mean(self, params: MeanParams, input: np.ndarray) -> np.ndarray:
        """MEAN over the run of axes `params` was derived for."""
        x = _c_array(input, "int8")
        out = np.zeros(params.output_shape, np.int8)
        args = MeanArgs(
            _pointer(x, _I8), _pointer(out, _I8), params.outer, params.reduced, params.inner,
            params.input_zero_point, params.output_zero_point, params.multiplier, params.shift,
        )  # fmt: skip
        self._call("helia_mean_s8", args, arrays=(x, out))
        return out


__all__ = [
    "ACTIVATIONS",
    "ADD_LEFT_SHIFT",
    "MAX_RANK",
    "SOFTMAX_OUTPUT_SCALE",
    "SOFTMAX_OUTPUT_ZERO_POINT",
    "SOFTMAX_SCALED_DIFF_INTEGER_BITS",
    "BinaryArgs",
    "BinaryParams",
    "ConcatArgs",
    "ConvArgs",
    "ConvParams",
    "FullyConnectedArgs",
    "FullyConnectedParams",
    "HostKernelCall",
    "Int8KernelError",
    "Int8Kernels",
    "MeanArgs",
    "MeanParams",
    "PadArgs",
    "PoolArgs",
    "PoolParams",
    "Quant",
    "RequantizeArgs",
    "RequantizeParams",
    "SoftmaxArgs",
    "SoftmaxParams",
    "activation_range",
    "add_params",
    "conv_params",
    "conv_scratch_bytes",
    "fully_connected_params",
    "mean_params",
    "mul_params",
    "output_size",
    "padding_before",
    "pool_params",
    "quantize_value",
    "reads_in_place",
    "requantize_params",
    "softmax_params",
    "weight_sums",
]
