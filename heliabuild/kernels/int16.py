"""heliabuild's int16 kernels, the TFLite converter's 16x8 forms (int16 activations, zero point 0): parameters
and bindings of ADD and MUL (`c/ops_int16.c`; docs/kernels.md, "int16 (16x8) kernels").

- `add_s16_params`: both inputs rescaled to 2 * max(scale) with 2^15 headroom, the output multiplier of
  2 * max / (2^15 * scale_out), as LiteRT's general-scale int16 ADD (pot_scale_int16 false) prepares;
- `mul_s16_params`: one multiplier, scale_1 * scale_2 / scale_out;

both `heliabuild.kernels.int8.BinaryParams` (zero points 0, int16 activation bounds).

`Int16Kernels(load_host_library(build_dir))` runs them on numpy arrays (an `Int8Kernels`, so refusals raise
`Int8KernelError` and `recorder` sees each call).
"""

from __future__ import annotations

import ctypes
from collections.abc import Sequence
from typing import ClassVar

import numpy as np

from heliabuild.kernels.int8 import (
    MAX_RANK,
    BinaryParams,
    Int8KernelError,
    Int8Kernels,
    Quant,
    _c_array,
    _dims,
    _pointer,
    add_params,
    mul_params,
)

ADD_S16_LEFT_SHIFT = 15
INT16_RANGE = (-32768, 32767)


def _symmetric(*quants: Quant) -> None:
    for quant in quants:
        if quant.zero_point != 0:
            raise Int8KernelError(f"int16 kernels: zero point {quant.zero_point} is not 0 (LiteRT's 16x8 form)")


def add_s16_params(input1: Quant, input2: Quant, output: Quant, activation: str = "NONE") -> BinaryParams:
    _symmetric(input1, input2, output)
    return add_params(input1, input2, output, activation, left_shift=ADD_S16_LEFT_SHIFT, bounds=INT16_RANGE)


def mul_s16_params(input1: Quant, input2: Quant, output: Quant, activation: str = "NONE") -> BinaryParams:
    _symmetric(input1, input2, output)
    return mul_params(input1, input2, output, activation, bounds=INT16_RANGE)


_I16 = ctypes.POINTER(ctypes.c_int16)
_DIMS = ctypes.c_int32 * MAX_RANK


class BinaryS16Args(ctypes.Structure):
    _fields_ = [
        ("input1", _I16), ("input2", _I16), ("output", _I16), ("rank", ctypes.c_int32),
        ("input1_dims", _DIMS), ("input2_dims", _DIMS), ("output_dims", _DIMS),
        *[(name, ctypes.c_int32) for name in ("left_shift", "input1_multiplier", "input1_shift",
                                              "input2_multiplier", "input2_shift", "output_multiplier",
                                              "output_shift", "act_min", "act_max")],
    ]  # fmt: skip


class Int16Kernels(Int8Kernels):
    """Int8Kernels plus the int16 ADD and MUL."""

    _SIGNATURES: ClassVar[dict[str, tuple[list[object], object]]] = {
        **Int8Kernels._SIGNATURES,
        "helia_add_s16": ([ctypes.POINTER(BinaryS16Args)], ctypes.c_int),
        "helia_mul_s16": ([ctypes.POINTER(BinaryS16Args)], ctypes.c_int),
    }

    def binary_s16(self, kind: str, params: BinaryParams, input1: np.ndarray, input2: np.ndarray) -> np.ndarray:
        """`kind` 'add' or 'mul', NumPy broadcasting over rank <= 6."""
        a, b = _c_array(input1, "int16"), _c_array(input2, "int16")
        shape = np.broadcast_shapes(a.shape, b.shape)
        rank = max(len(shape), 1)
        out = np.zeros(shape, np.int16)

        def extended(s: Sequence[int]) -> tuple[int, ...]:
            return (1,) * (rank - len(s)) + tuple(s)

        args = BinaryS16Args(
            _pointer(a, _I16), _pointer(b, _I16), _pointer(out, _I16), rank,
            _dims(extended(a.shape)), _dims(extended(b.shape)), _dims(extended(shape)),
            *(getattr(params, name) for name, _ in BinaryS16Args._fields_[7:]),
        )  # fmt: skip
        self._call(f"helia_{kind}_s16", args, arrays=(a, b, out))
        return out
