"""heliabuild's integer SVDF (`c/ops_svdf.c`): its parameters, derived from a model's float32 scales as LiteRT
prepares them, and its binding (docs/kernels.md, "Integer SVDF").

`svdf_params(...)` gives the two multipliers, input_scale * feature_scale / state_scale (the feature matmul to
the int16 state) and state_scale * time_scale / output_scale (the time dot to the output), each computed in
float32 as LiteRT does, then TFLite's QuantizeMultiplier; the zero points; the int8 bounds. Refused
(Int8KernelError): an activation state or weights_time with a zero point other than 0, a rank below 1, a fused
activation other than RELU (LiteRT refuses the others and does not apply RELU: the output is clamped to int8).
`SvdfKernels(load_host_library(build_dir)).svdf(...)` runs the host build; the state array is updated in place,
as the generated module's carried state is.
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from heliabuild.kernels.fixed_point import quantize_multiplier
from heliabuild.kernels.int8 import (
    _I8,
    Int8KernelError,
    Int8Kernels,
    Quant,
    _c_array,
    _pointer,
    activation_range,
)

_F32 = np.float32


@dataclass(frozen=True)
class SvdfParams:
    """Every integer of helia_svdf_s8_args besides the buffers and extents."""

    rank: int
    input_zero_point: int
    output_zero_point: int
    feature_multiplier: int
    feature_shift: int
    time_multiplier: int
    time_shift: int
    act_min: int
    act_max: int


def svdf_params(
    input_quant: Quant,
    feature_scale: float,
    time_quant: Quant,
    state_quant: Quant,
    output_quant: Quant,
    rank: int,
    activation: str = "RELU",
) -> SvdfParams:
    """The kernel's parameters (module docstring). LiteRT's integer SVDF refuses any fused activation but RELU,
    and then does not apply it (its output is clamped to int8 only); heliabuild does the same."""
    if activation != "RELU":
        raise Int8KernelError(f"integer SVDF: fused activation {activation}; LiteRT's integer SVDF takes only RELU")
    if state_quant.zero_point != 0 or time_quant.zero_point != 0:
        raise Int8KernelError("integer SVDF: the activation state and weights_time need zero point 0")
    if rank < 1:
        raise Int8KernelError(f"integer SVDF: rank {rank} is not 1 or more")
    feature = _F32(_F32(input_quant.scale) * _F32(feature_scale)) / _F32(state_quant.scale)
    time = _F32(_F32(state_quant.scale) * _F32(time_quant.scale)) / _F32(output_quant.scale)
    feature_m, feature_s = quantize_multiplier(float(feature))
    time_m, time_s = quantize_multiplier(float(time))
    act_min, act_max = activation_range("NONE", output_quant)  # RELU admitted, not applied (LiteRT)
    return SvdfParams(
        rank, input_quant.zero_point, output_quant.zero_point, feature_m, feature_s, time_m, time_s, act_min, act_max
    )


_I16 = ctypes.POINTER(ctypes.c_int16)
_I32 = ctypes.POINTER(ctypes.c_int32)


class SvdfArgs(ctypes.Structure):
    _fields_ = [
        ("input", _I8), ("weights_feature", _I8), ("weights_time", _I16), ("bias", _I32), ("state", _I16),
        ("output", _I8),
        *[(name, ctypes.c_int32) for name in ("batches", "input_size", "filters", "memory_size", "rank",
                                              "input_zero_point", "output_zero_point", "feature_multiplier",
                                              "feature_shift", "time_multiplier", "time_shift", "act_min",
                                              "act_max")],
    ]  # fmt: skip


class SvdfKernels(Int8Kernels):
    """Int8Kernels plus the integer SVDF."""

    _SIGNATURES: ClassVar[dict[str, tuple[list[object], object]]] = {
        **Int8Kernels._SIGNATURES,
        "helia_svdf_s8": ([ctypes.POINTER(SvdfArgs)], ctypes.c_int),
    }

    def svdf(
        self,
        params: SvdfParams,
        x: np.ndarray,
        weights_feature: np.ndarray,
        weights_time: np.ndarray,
        bias: np.ndarray | None,
        state: np.ndarray,
    ) -> np.ndarray:
        """The output [batches, filters / rank] of one call on `x` [batches, input_size]; `state` (int16,
        C-contiguous [batches, filters * memory_size]) is updated in place."""
        if state.dtype != np.int16 or not state.flags.c_contiguous:
            raise Int8KernelError("integer SVDF: the state array must be C-contiguous int16")
        data = _c_array(x, "int8")
        feature = _c_array(weights_feature, "int8")
        time = _c_array(weights_time, "int16")
        bias_array = None if bias is None else _c_array(bias, "int32")
        filters, memory = time.shape
        out = np.zeros((data.shape[0], filters // max(params.rank, 1)), np.int8)
        args = SvdfArgs(
            _pointer(data, _I8), _pointer(feature, _I8), _pointer(time, _I16), _pointer(bias_array, _I32),
            _pointer(state, _I16), _pointer(out, _I8), data.shape[0], data.shape[1], filters, memory,
            *(getattr(params, name) for name, _ in SvdfArgs._fields_[10:]),
        )  # fmt: skip
        arrays = [a for a in (data, feature, time, bias_array) if a is not None]
        self._call("helia_svdf_s8", args, arrays=(*arrays, state, out), written=2)
        return out
