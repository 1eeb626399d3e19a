"""heliabuild's int16 kernels, the TFLite converter's 16x8 forms (int16 activations, zero point 0): parameters
and bindings of ADD and MUL (`c/ops_int16.c`), FULLY_CONNECTED, CONV_2D and DEPTHWISE_CONV_2D (int8 weights,
int64 bias: `c/ops_int16_conv.c`), LOGISTIC, TANH and SOFTMAX with their tables (`c/ops_int16_lut.c`), QUANTIZE
float32 -> int16 and DEQUANTIZE int16 -> float32 (`c/ops_int16_convert.c`); docs/kernels.md, "int16 (16x8)
kernels".

- `add_s16_params`: both inputs rescaled to 2 * max(scale) with 2^15 headroom, the output multiplier of
  2 * max / (2^15 * scale_out), as LiteRT's general-scale int16 ADD (pot_scale_int16 false) prepares;
- `mul_s16_params`: one multiplier, scale_1 * scale_2 / scale_out in float32, as LiteRT's MUL computes it;

both `heliabuild.kernels.int8.BinaryParams` (zero points 0, int16 activation bounds).

`Int16Kernels(load_host_library(build_dir))` runs them on numpy arrays (an `Int8Kernels`, so refusals raise
`Int8KernelError` and `recorder` sees each call).
"""

from __future__ import annotations

import ctypes
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import ClassVar

import numpy as np

from heliabuild.kernels.fixed_point import quantize_multiplier
from heliabuild.kernels.fixed_point import round_half_away as _round_half_away
from heliabuild.kernels.int8 import (
    MAX_RANK,
    BinaryParams,
    ConvParams,
    Int8KernelError,
    Int8Kernels,
    Quant,
    _c_array,
    _dims,
    _pointer,
    activation_range,
    add_params,
    conv_params,
    mul_params,
)
from heliabuild.kernels.int8_params import _multipliers

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
    """The int8 MUL's parameters with the multiplier LiteRT's MUL prepares, s1 * s2 / s_out evaluated in float32
    (its scales are floats): int16 products reach 2^30, where the double quotient's multiplier was one step off
    in a Hypothesis-found case."""
    _symmetric(input1, input2, output)
    real = float(np.float32(np.float32(input1.scale) * np.float32(input2.scale)) / np.float32(output.scale))
    multiplier, shift = quantize_multiplier(real)
    params = mul_params(input1, input2, output, activation, bounds=INT16_RANGE)
    return replace(params, output_multiplier=multiplier, output_shift=shift)


# ---- FULLY_CONNECTED and CONV_2D, 16x8 (c/ops_int16_conv.c) ----------------------------------------------


@dataclass(frozen=True)
class FullyConnectedS16Params:
    batches: int
    depth: int
    output_depth: int
    multipliers: np.ndarray
    shifts: np.ndarray
    act_min: int
    act_max: int


def _weighted_multipliers(
    input_quant: Quant, filter_scales: Sequence[float] | np.ndarray, output_quant: Quant, per_channel: bool
) -> tuple[np.ndarray, np.ndarray]:
    """Per tensor, LiteRT rounds the input-filter scale product to float32 first (GetQuantizedConvolutionMultipler);
    per channel it keeps the product in double (PopulateConvolutionQuantizationParams)."""
    scales = np.asarray(filter_scales, np.float32).reshape(-1)
    if per_channel:
        return _multipliers(input_quant.scale, scales, output_quant.scale)
    product = float(np.float32(input_quant.scale) * scales[0])
    multiplier, shift = quantize_multiplier(product / output_quant.scale)
    return np.full(scales.size, multiplier, np.int32), np.full(scales.size, shift, np.int32)


def _check_shifts(shifts: np.ndarray, what: str) -> None:
    if shifts.size and int(shifts.max()) > 7:
        raise Int8KernelError(f"{what}: the output multiplier is 2^{int(shifts.max()) - 31} or above 2^-24 x 2^31")


def fully_connected_s16_params(
    input_count: int,
    filter_shape: Sequence[int],
    input_quant: Quant,
    filter_scales: Sequence[float] | np.ndarray,
    output_quant: Quant,
    activation: str = "NONE",
) -> FullyConnectedS16Params:
    """16x8 FULLY_CONNECTED on `input_count` int16 elements flattened to [-1, depth]."""
    _symmetric(input_quant, output_quant)
    output_depth, depth = (int(d) for d in filter_shape)
    if input_count % depth:
        raise Int8KernelError(f"int16 fully connected: {input_count} input elements are not a multiple of {depth}")
    scales = np.asarray(filter_scales, np.float32).reshape(-1)
    multipliers, shifts = _weighted_multipliers(input_quant, scales, output_quant, scales.size > 1)
    _check_shifts(shifts, "int16 fully connected")
    low, high = activation_range(activation, output_quant, INT16_RANGE)
    return FullyConnectedS16Params(input_count // depth, depth, output_depth, multipliers, shifts, low, high)


def conv_s16_params(
    input_shape: Sequence[int],
    filter_shape: Sequence[int],
    input_quant: Quant,
    filter_scales: Sequence[float] | np.ndarray,
    output_quant: Quant,
    *,
    stride: tuple[int, int] = (1, 1),
    dilation: tuple[int, int] = (1, 1),
    padding: str = "SAME",
    activation: str = "NONE",
    depthwise: bool = False,
) -> ConvParams:
    """16x8 CONV_2D (filter [out_c, kh, kw, in_c]) or DEPTHWISE_CONV_2D ([1, kh, kw, out_c]): the int8
    derivation (per-channel multipliers in double, as LiteRT's PopulateConvolutionQuantizationParams) with int16
    activation bounds."""
    _symmetric(input_quant, output_quant)
    params = conv_params(
        input_shape, filter_shape, input_quant, filter_scales, output_quant,
        stride=stride, dilation=dilation, padding=padding, depthwise=depthwise,
    )  # fmt: skip
    _check_shifts(params.shifts, "int16 conv")
    low, high = activation_range(activation, output_quant, INT16_RANGE)
    return replace(params, act_min=low, act_max=high)


# ---- LOGISTIC, TANH, SOFTMAX (c/ops_int16_lut.c) ---------------------------------------------------------

SIGMOID_OUTPUT = Quant(1.0 / 32768.0, 0)
"""The output quantization LiteRT's int16 LOGISTIC, TANH and SOFTMAX require."""


def sigmoid_table() -> np.ndarray:
    """The 256 uint16 values int16 LOGISTIC and TANH interpolate: sigmoid(i / 24) in 0.16, each less half the
    linear interpolation's error at the midpoint of the step after it (so the interpolation errs both ways),
    rounded to nearest, and 65535 last; the values LiteRT's reference kernels interpolate (inferred from every
    int16 input of LiteRT 2.3's BUILTIN_REF LOGISTIC at four input scales and TANH's last step, docs/kernels.md)."""
    step = 1.0 / 24.0

    def sigmoid(x: float) -> float:
        return 1.0 / (1.0 + math.exp(-x))

    values = []
    for i in range(255):
        x = i * step
        midpoint_error = (sigmoid(x) + sigmoid(x + step)) / 2.0 - sigmoid(x + step / 2.0)
        values.append(round(65536.0 * (sigmoid(x) - midpoint_error / 2.0)))
    return np.array([*values, 65535], np.uint16)


@dataclass(frozen=True)
class SigmoidS16Params:
    input_multiplier: int
    input_left_shift: int


def _log2_rounded(scale: float) -> tuple[int, bool]:
    """TFLite's CheckedLog2 in float32: the nearest integer to log2(scale), and whether scale is a power of two
    within 1e-3 of the exponent."""
    exponent = np.float32(math.log(np.float32(scale))) * np.float32(1.0 / math.log(2.0))
    rounded = float(np.round(exponent))
    return int(rounded), abs(float(exponent) - rounded) < 1e-3


def sigmoid_s16_params(operator: str, input_quant: Quant, output_quant: Quant) -> SigmoidS16Params:
    """The input rescale of int16 LOGISTIC or TANH (`operator`) to 1/(3 * 4096): a power-of-two input scale
    of 2^-12 (TANH: also 2^-11) multiplies by 3 << shift exactly; any other scale by the truncated
    scale * 3 * 4096 doubled until above 32767 / 2, with as many rounding right shifts, as LiteRT prepares it."""
    _symmetric(input_quant, output_quant)
    if output_quant != SIGMOID_OUTPUT:
        raise Int8KernelError(f"int16 {operator}: output scale {output_quant.scale} is not 2^-15")
    log2, power_of_two = _log2_rounded(input_quant.scale)
    shift = 12 + log2
    if power_of_two and shift in ((0, 1) if operator == "TANH" else (0,)):
        return SigmoidS16Params(3 << shift, 0)
    multiplier = float(input_quant.scale) * 4096.0 * 3.0
    shift = 0
    while multiplier <= 32767.0 / 2.0 and shift <= 30:
        shift += 1
        multiplier *= 2.0
    if not 1 <= int(multiplier) <= 0xFFFF:
        raise Int8KernelError(f"int16 {operator}: input scale {input_quant.scale} is outside the kernel's range")
    return SigmoidS16Params(int(multiplier), shift)


LUT_S16_SIZE = 513


def lut_s16(function: Callable[[float], float], low: float, high: float) -> np.ndarray:
    """LiteRT's int16 interpolation table of `function` over [low, high] onto [-1, 1] in Q0.15: 512 steps, each
    sample less half the midpoint's interpolation error (rounded), plus the end point, clamped to int16."""
    steps = LUT_S16_SIZE - 1
    step = (high - low) / steps
    scale = 32768.0
    table = []
    for i in range(steps):
        value = function(low + i * step)
        midpoint = function(low + i * step + step / 2)
        following = function(low + (i + 1) * step)
        sample = _round_half_away(value * scale)
        interpolated = _round_half_away((following * scale + _round_half_away(value * scale)) / 2)
        bias = _round_half_away((interpolated - _round_half_away(midpoint * scale)) / 2)
        table.append(sample - bias)
    table.append(_round_half_away(function(high) * scale))
    return np.clip(np.array(table, np.int64), -32768, 32767).astype(np.int16)


@dataclass(frozen=True)
class SoftmaxS16Params:
    input_multiplier: int
    input_shift: int


def softmax_s16_params(input_quant: Quant, output_quant: Quant, beta: float = 1.0) -> SoftmaxS16Params:
    """int16 SOFTMAX: the multiplier of float32(scale * beta) / (10 / 65535), so that [-65535, 0] spans [-10, 0]."""
    _symmetric(input_quant, output_quant)
    if abs(output_quant.scale - SIGMOID_OUTPUT.scale) > 0.001 * SIGMOID_OUTPUT.scale:
        raise Int8KernelError(f"int16 SOFTMAX: output scale {output_quant.scale} is not 2^-15")
    real = float(np.float32(input_quant.scale) * np.float32(beta)) / (10.0 / 65535.0)
    multiplier, shift = quantize_multiplier(real)
    if shift > 14:
        raise Int8KernelError(
            f"int16 SOFTMAX: input scale x beta {real * 10 / 65535} is above the kernel's 2^14 x 10/65535"
        )
    return SoftmaxS16Params(multiplier, shift)


def softmax_tables() -> tuple[np.ndarray, np.ndarray]:
    """int16 SOFTMAX's exp table over [-10, 0] and its 1 / (1 + x) table over [0, 1]."""
    return lut_s16(math.exp, -10.0, 0.0), lut_s16(lambda x: 1.0 / (1.0 + x), 0.0, 1.0)


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


_I8 = ctypes.POINTER(ctypes.c_int8)
_I32 = ctypes.POINTER(ctypes.c_int32)
_I64 = ctypes.POINTER(ctypes.c_int64)
_U16 = ctypes.POINTER(ctypes.c_uint16)
_F32 = ctypes.POINTER(ctypes.c_float)


def _int32_fields(*names: str) -> list[tuple[str, type]]:
    return [(name, ctypes.c_int32) for name in names]


class FullyConnectedS16Args(ctypes.Structure):
    _fields_ = [
        ("input", _I16), ("filter", _I8), ("bias", _I64), ("multipliers", _I32), ("shifts", _I32),
        ("output", _I16), *_int32_fields("batches", "depth", "output_depth", "quant_count", "act_min", "act_max"),
    ]  # fmt: skip


class ConvS16Args(ctypes.Structure):
    _fields_ = [
        ("input", _I16), ("filter", _I8), ("bias", _I64), ("multipliers", _I32), ("shifts", _I32),
        ("output", _I16),
        *_int32_fields("batches", "input_h", "input_w", "input_c", "filter_h", "filter_w", "output_h", "output_w",
                       "output_c", "stride_h", "stride_w", "dilation_h", "dilation_w", "pad_top", "pad_left",
                       "quant_count", "act_min", "act_max", "depth_multiplier"),
    ]  # fmt: skip


class SigmoidS16Args(ctypes.Structure):
    _fields_ = [
        ("input", _I16), ("output", _I16), ("count", ctypes.c_int32), ("table", _U16),
        *_int32_fields("input_multiplier", "input_left_shift"),
    ]  # fmt: skip


class SoftmaxS16Args(ctypes.Structure):
    _fields_ = [
        ("input", _I16), ("output", _I16), *_int32_fields("rows", "depth", "input_multiplier", "input_shift"),
        ("exp_table", _I16), ("reciprocal_table", _I16),
    ]  # fmt: skip


def _quant_arrays(multipliers: np.ndarray, shifts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """One multiplier and shift when every channel's are equal (per tensor), else one per channel."""
    if len(set(zip(multipliers.tolist(), shifts.tolist(), strict=True))) == 1:
        return _c_array(multipliers[:1], "int32"), _c_array(shifts[:1], "int32")
    return _c_array(multipliers, "int32"), _c_array(shifts, "int32")


class Int16Kernels(Int8Kernels):
    """Int8Kernels plus the int16 (16x8) kernels."""

    _SIGNATURES: ClassVar[dict[str, tuple[list[object], object]]] = {
        **Int8Kernels._SIGNATURES,
        "helia_add_s16": ([ctypes.POINTER(BinaryS16Args)], ctypes.c_int),
        "helia_mul_s16": ([ctypes.POINTER(BinaryS16Args)], ctypes.c_int),
        "helia_fully_connected_s16": ([ctypes.POINTER(FullyConnectedS16Args)], ctypes.c_int),
        "helia_conv2d_s16": ([ctypes.POINTER(ConvS16Args)], ctypes.c_int),
        "helia_depthwise_conv2d_s16": ([ctypes.POINTER(ConvS16Args)], ctypes.c_int),
        "helia_logistic_s16": ([ctypes.POINTER(SigmoidS16Args)], ctypes.c_int),
        "helia_tanh_s16": ([ctypes.POINTER(SigmoidS16Args)], ctypes.c_int),
        "helia_softmax_s16": ([ctypes.POINTER(SoftmaxS16Args)], ctypes.c_int),
        "helia_quantize_f32_s16": ([_F32, _I16, ctypes.c_int32, ctypes.c_float, ctypes.c_int32], ctypes.c_int),
        "helia_dequantize_s16_f32": ([_I16, _F32, ctypes.c_int32, ctypes.c_float, ctypes.c_int32], ctypes.c_int),
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

    def fully_connected_s16(
        self, params: FullyConnectedS16Params, input: np.ndarray, filter: np.ndarray, bias: np.ndarray | None
    ) -> np.ndarray:
        x, w = _c_array(input, "int16"), _c_array(filter, "int8")
        b = None if bias is None else _c_array(bias, "int64")
        multipliers, shifts = _quant_arrays(params.multipliers, params.shifts)
        out = np.zeros((params.batches, params.output_depth), np.int16)
        args = FullyConnectedS16Args(
            _pointer(x, _I16), _pointer(w, _I8), _pointer(b, _I64), _pointer(multipliers, _I32),
            _pointer(shifts, _I32), _pointer(out, _I16), params.batches, params.depth, params.output_depth,
            multipliers.size, params.act_min, params.act_max,
        )  # fmt: skip
        self._call("helia_fully_connected_s16", args, arrays=(x, w, b, multipliers, shifts, out))
        return out

    def conv_s16(
        self, params: ConvParams, input: np.ndarray, filter: np.ndarray, bias: np.ndarray | None
    ) -> np.ndarray:
        x, w = _c_array(input, "int16"), _c_array(filter, "int8")
        b = None if bias is None else _c_array(bias, "int64")
        multipliers, shifts = _quant_arrays(params.multipliers, params.shifts)
        out = np.zeros(params.output_shape, np.int16)
        n, h, wd, c = params.input_shape
        _, oh, ow, oc = params.output_shape
        args = ConvS16Args(
            _pointer(x, _I16), _pointer(w, _I8), _pointer(b, _I64), _pointer(multipliers, _I32),
            _pointer(shifts, _I32), _pointer(out, _I16), n, h, wd, c, params.filter_shape[1], params.filter_shape[2],
            oh, ow, oc, *params.stride, *params.dilation, *params.pad, multipliers.size, params.act_min, params.act_max,
            params.depth_multiplier,
        )  # fmt: skip
        kind = "depthwise_conv2d" if params.depthwise else "conv2d"
        self._call(f"helia_{kind}_s16", args, arrays=(x, w, b, multipliers, shifts, out))
        return out

    def sigmoid_s16(self, operator: str, params: SigmoidS16Params, input: np.ndarray) -> np.ndarray:
        """`operator` 'LOGISTIC' or 'TANH' on every element of `input`."""
        x = _c_array(input, "int16")
        table = _c_array(sigmoid_table(), "uint16")
        out = np.zeros(x.shape, np.int16)
        args = SigmoidS16Args(
            _pointer(x, _I16), _pointer(out, _I16), x.size, _pointer(table, _U16),
            params.input_multiplier, params.input_left_shift,
        )  # fmt: skip
        self._call(f"helia_{operator.lower()}_s16", args, arrays=(x, table, out))
        return out

    def softmax_s16(self, params: SoftmaxS16Params, input: np.ndarray) -> np.ndarray:
        """SOFTMAX over the last axis of `input`."""
        x = _c_array(input, "int16")
        exp_table, reciprocal_table = (_c_array(t, "int16") for t in softmax_tables())
        depth = x.shape[-1] if x.ndim else 1
        out = np.zeros(x.shape, np.int16)
        args = SoftmaxS16Args(
            _pointer(x, _I16), _pointer(out, _I16), x.size // max(depth, 1), depth, params.input_multiplier,
            params.input_shift, _pointer(exp_table, _I16), _pointer(reciprocal_table, _I16),
        )  # fmt: skip
        self._call("helia_softmax_s16", args, arrays=(x, exp_table, reciprocal_table, out))
        return out

    def quantize_s16(self, input: np.ndarray, quant: Quant) -> np.ndarray:
        """QUANTIZE float32 -> int16."""
        x = _c_array(input, "float32")
        out = np.zeros(x.shape, np.int16)
        arguments = (_pointer(x, _F32), _pointer(out, _I16), x.size, ctypes.c_float(quant.scale), quant.zero_point)
        self._call("helia_quantize_f32_s16", *arguments, arrays=(x, out))
        return out

    def dequantize_s16(self, input: np.ndarray, quant: Quant) -> np.ndarray:
        """DEQUANTIZE int16 -> float32."""
        x = _c_array(input, "int16")
        out = np.zeros(x.shape, np.float32)
        arguments = (_pointer(x, _I16), _pointer(out, _F32), x.size, ctypes.c_float(quant.scale), quant.zero_point)
        self._call("helia_dequantize_s16_f32", *arguments, arrays=(x, out))
        return out
