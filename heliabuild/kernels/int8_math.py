"""heliabuild's LUT and arithmetic-heavy int8 kernels: parameter derivations (as LiteRT does them) and bindings.

The C kernels (`c/ops_lut.c`, `c/ops_arith.c`) take integers and tables only. This module derives them from
the float32 scales a model stores, with LiteRT's arithmetic (docs/kernels.md, "LUT and arithmetic-heavy int8
kernels"), for the firmware generator and the tests alike:

- `lookup_table(operator, input, output)`: LOGISTIC, TANH and EXP as 256 output codes, one per input code,
  computed the way LiteRT's int8 reference kernels fill their table (float32 dequantize, the function,
  float32 rescale, round half away from zero, saturate);
- `hard_swish_params`, `rsqrt_params`, `squared_difference_params`: every integer those kernels take;
  L2_NORMALIZATION needs only the input zero point (its output is LiteRT's 1/128, 0).

`Int8MathKernels(load_host_library(build_dir))` runs the host build on numpy arrays; it is an
`heliabuild.kernels.int8.Int8Kernels`, so a refusal raises `Int8KernelError`, `recorder` sees each call, and
SQUARED_DIFFERENCE is `binary("squared_difference", params, a, b)`.
"""

from __future__ import annotations

import ctypes
import math
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from heliabuild.kernels.fixed_point import quantize_multiplier
from heliabuild.kernels.int8 import (
    _I8,
    BinaryArgs,
    BinaryParams,
    Int8KernelError,
    Int8Kernels,
    Quant,
    _c_array,
    _pointer,
    softmax_params,
)

LOOKUP_OPERATORS = ("LOGISTIC", "TANH", "EXP")
LOGISTIC_OUTPUT = Quant(1.0 / 256.0, -128)
TANH_OUTPUT = Quant(1.0 / 128.0, 0)
L2_NORMALIZATION_OUTPUT = Quant(1.0 / 128.0, 0)
LOG_SOFTMAX_OUTPUT = Quant(16.0 / 256.0, 127)
"""The output quantization LiteRT requires of int8 LOGISTIC, TANH, L2_NORMALIZATION and LOG_SOFTMAX."""
SQUARED_DIFFERENCE_LEFT_SHIFT = 7
RSQRT_SHIFT = 20
_F32 = np.float32


def _logistic(x: np.float32) -> np.float32:
    return _F32(1.0) / (_F32(1.0) + _F32(math.exp(-float(x)) if float(x) > -88.8 else math.inf))


def _tanh(x: np.float32) -> np.float32:
    return _F32(math.tanh(float(x)))


def _exp(x: np.float32) -> np.float32:
    return _F32(math.exp(float(x))) if float(x) < 88.8 else _F32(math.inf)


_FUNCTIONS = {"LOGISTIC": _logistic, "TANH": _tanh, "EXP": _exp}


def _saturated_code(rescaled: float, zero_point: int) -> int:
    if not math.isfinite(rescaled) or abs(rescaled) > 2**20:
        return 127 if rescaled > 0 else -128
    rounded = int(math.copysign(math.floor(abs(rescaled) + 0.5), rescaled))
    return max(-128, min(127, rounded + zero_point))


def lookup_table(operator: str, input_quant: Quant, output_quant: Quant) -> np.ndarray:
    """The 256 output codes of `operator` (LOGISTIC, TANH or EXP) for input codes -128..127, in that order.

    Each entry is LiteRT's: d = float32(scale_in * (q - zp_in)); f(d) in float32 (the function itself
    correctly rounded to float32); r = float32(f(d) * float32(1 / scale_out)); round half away from zero,
    plus zp_out, saturated to int8. LOGISTIC and TANH need LiteRT's output quantization (LOGISTIC_OUTPUT,
    TANH_OUTPUT), else Int8KernelError.
    """
    function = _FUNCTIONS.get(operator)
    if function is None:
        raise Int8KernelError(f"int8 lookup: {operator!r} is not one of {', '.join(LOOKUP_OPERATORS)}")
    required = {"LOGISTIC": LOGISTIC_OUTPUT, "TANH": TANH_OUTPUT}.get(operator)
    if required is not None and output_quant != required:
        raise Int8KernelError(
            f"int8 {operator}: output quantization (scale {output_quant.scale}, zero point "
            f"{output_quant.zero_point}) is not LiteRT's ({required.scale}, {required.zero_point})"
        )
    inverse = _F32(1.0) / _F32(output_quant.scale)
    scale = _F32(input_quant.scale)
    table = []
    with np.errstate(over="ignore"):
        for code in range(-128, 128):
            real = scale * _F32(code - input_quant.zero_point)
            table.append(_saturated_code(float(function(real) * inverse), output_quant.zero_point))
    return np.array(table, np.int8)


@dataclass(frozen=True)
class HardSwishParams:
    """TFLite's HardSwishParams: int16 fixed-point multipliers and their exponents."""

    input_zero_point: int
    output_zero_point: int
    reluish_multiplier: int
    reluish_shift: int
    output_multiplier: int
    output_shift: int


def _int16_multiplier(real: float) -> tuple[int, int]:
    """QuantizeMultiplier, then TFLite's DownScaleInt32ToInt16Multiplier (round the top 16 bits)."""
    multiplier, shift = quantize_multiplier(real)
    if multiplier >= 2**31 - 1 - 2**15:
        return 2**15 - 1, shift
    return (multiplier + 2**15) >> 16, shift


def hard_swish_params(input_quant: Quant, output_quant: Quant) -> HardSwishParams:
    """TFLite's int8 HARD_SWISH preparation, in float32 as LiteRT computes it: the input on a 2^7 finer
    scale, its multiplier to the output scale and to the "relu-ish" scale where 3.0 is 2^15."""
    hires = _F32(1.0 / 128.0) * _F32(input_quant.scale)
    output_multiplier, output_shift = _int16_multiplier(float(hires / _F32(output_quant.scale)))
    reluish_multiplier, reluish_shift = _int16_multiplier(float(hires / _F32(3.0 / 32768.0)))
    if output_shift > 0:
        raise Int8KernelError(
            f"int8 hard swish: output scale {output_quant.scale!r} is not above input scale / 128 "
            f"({input_quant.scale!r} / 128); the output multiplier must be below 1, as LiteRT requires"
        )
    if not -31 <= output_shift <= 0 or not -31 <= reluish_shift <= 30:
        raise Int8KernelError(
            f"int8 hard swish: input scale {input_quant.scale!r} and output scale {output_quant.scale!r} give "
            f"shifts {output_shift} (output) and {reluish_shift} (relu-ish) outside the kernel's [-31, 0] and "
            "[-31, 30]"
        )
    return HardSwishParams(
        input_quant.zero_point, output_quant.zero_point, reluish_multiplier, reluish_shift, output_multiplier,
        output_shift,
    )  # fmt: skip


@dataclass(frozen=True)
class RsqrtParams:
    input_zero_point: int
    output_zero_point: int
    multiplier: int
    shift: int


def rsqrt_params(input_quant: Quant, output_quant: Quant) -> RsqrtParams:
    """TFLite's int8 RSQRT preparation: the quantized multiplier of 1 / (sqrt(scale_in) * scale_out)."""
    real = 1.0 / (math.sqrt(float(_F32(input_quant.scale))) * float(_F32(output_quant.scale)))
    multiplier, shift = quantize_multiplier(real)
    if shift - RSQRT_SHIFT < -31:
        raise Int8KernelError(
            f"int8 rsqrt: 1 / (sqrt(input scale) * output scale) = {real!r} is below 2^-12; the kernel's "
            "rescale would shift right past 31 bits"
        )
    return RsqrtParams(input_quant.zero_point, output_quant.zero_point, multiplier, shift)


def squared_difference_params(input1: Quant, input2: Quant, output: Quant) -> BinaryParams:
    """TFLite's int8 SQUARED_DIFFERENCE preparation: both inputs rescaled to 2 * max(scale) with 2^7 headroom,
    the square by (2 * max)^2 / (2^14 * scale_out). Every multiplier must be below one."""
    twice_max = 2.0 * max(input1.scale, input2.scale)
    m1, s1 = quantize_multiplier(input1.scale / twice_max)
    m2, s2 = quantize_multiplier(input2.scale / twice_max)
    real = twice_max * twice_max / ((1 << (2 * SQUARED_DIFFERENCE_LEFT_SHIFT)) * output.scale)
    mo, so = quantize_multiplier(real)
    if so > 0:
        raise Int8KernelError(
            f"int8 squared difference: output scale {output.scale!r} is below (2 * max input scale)^2 / 2^14; "
            "the output multiplier must be below 1"
        )
    return BinaryParams(
        input1.zero_point, input2.zero_point, output.zero_point, SQUARED_DIFFERENCE_LEFT_SHIFT, m1, s1, m2, s2,
        mo, so, -128, 127,
    )  # fmt: skip


@dataclass(frozen=True)
class LogSoftmaxParams:
    input_multiplier: int
    input_left_shift: int
    reverse_multiplier: int
    reverse_shift: int
    diff_min: int


def log_softmax_params(input_scale: float) -> LogSoftmaxParams:
    """TFLite's int8 LOG_SOFTMAX preparation: SOFTMAX's input scaling (beta 1, 5 integer bits) and the
    multiplier of its inverse, 2^(31 - shift) / multiplier, as a multiplier below one."""
    softmax = softmax_params(input_scale, 1.0)
    real = float(1 << (31 - softmax.input_left_shift)) / float(softmax.input_multiplier)
    reverse_multiplier, reverse_shift = quantize_multiplier(real)
    if reverse_shift > 0:
        raise Int8KernelError(f"int8 log softmax: input scale {input_scale!r} is too large (a reverse scale above 1)")
    return LogSoftmaxParams(
        softmax.input_multiplier, softmax.input_left_shift, reverse_multiplier, reverse_shift, softmax.diff_min
    )


# ---- ctypes -------------------------------------------------------------------------------------


class LookupArgs(ctypes.Structure):
    _fields_ = [("input", _I8), ("output", _I8), ("table", _I8), ("count", ctypes.c_int32)]


class HardSwishArgs(ctypes.Structure):
    _fields_ = [
        ("input", _I8), ("output", _I8),
        *[(name, ctypes.c_int32) for name in ("count", "input_zero_point", "output_zero_point",
                                              "reluish_multiplier", "reluish_shift", "output_multiplier",
                                              "output_shift")],
    ]  # fmt: skip


class RsqrtArgs(ctypes.Structure):
    _fields_ = [
        ("input", _I8), ("output", _I8),
        *[(name, ctypes.c_int32) for name in ("count", "input_zero_point", "output_zero_point", "multiplier",
                                              "shift")],
    ]  # fmt: skip


class L2NormalizationArgs(ctypes.Structure):
    _fields_ = [
        ("input", _I8), ("output", _I8),
        *[(name, ctypes.c_int32) for name in ("rows", "depth", "input_zero_point")],
    ]  # fmt: skip


class LogSoftmaxArgs(ctypes.Structure):
    _fields_ = [
        ("input", _I8), ("output", _I8),
        *[(name, ctypes.c_int32) for name in ("rows", "depth", "input_multiplier", "input_left_shift",
                                              "reverse_multiplier", "reverse_shift", "diff_min")],
    ]  # fmt: skip


class Int8MathKernels(Int8Kernels):
    """Int8Kernels plus the LUT and arithmetic-heavy kernels; each method returns a new output array."""

    _SIGNATURES: ClassVar[dict[str, tuple[list[object], object]]] = {
        **Int8Kernels._SIGNATURES,
        "helia_lookup_s8": ([ctypes.POINTER(LookupArgs)], ctypes.c_int),
        "helia_hard_swish_s8": ([ctypes.POINTER(HardSwishArgs)], ctypes.c_int),
        "helia_rsqrt_s8": ([ctypes.POINTER(RsqrtArgs)], ctypes.c_int),
        "helia_squared_difference_s8": ([ctypes.POINTER(BinaryArgs)], ctypes.c_int),  # binary("squared_difference")
        "helia_l2_normalization_s8": ([ctypes.POINTER(L2NormalizationArgs)], ctypes.c_int),
        "helia_log_softmax_s8": ([ctypes.POINTER(LogSoftmaxArgs)], ctypes.c_int),
    }

    def lookup(self, table: np.ndarray, input: np.ndarray) -> np.ndarray:
        x, t = _c_array(input, "int8"), _c_array(table, "int8")
        if t.size != 256:
            raise Int8KernelError(f"int8 lookup: the table has {t.size} entries, expected 256")
        out = np.zeros(x.shape, np.int8)
        args = LookupArgs(_pointer(x, _I8), _pointer(out, _I8), _pointer(t, _I8), x.size)
        self._call("helia_lookup_s8", args, arrays=(x, t, out))
        return out

    def hard_swish(self, params: HardSwishParams, input: np.ndarray) -> np.ndarray:
        x = _c_array(input, "int8")
        out = np.zeros(x.shape, np.int8)
        args = HardSwishArgs(
            _pointer(x, _I8), _pointer(out, _I8), x.size, params.input_zero_point, params.output_zero_point,
            params.reluish_multiplier, params.reluish_shift, params.output_multiplier, params.output_shift,
        )  # fmt: skip
        self._call("helia_hard_swish_s8", args, arrays=(x, out))
        return out

    def rsqrt(self, params: RsqrtParams, input: np.ndarray) -> np.ndarray:
        x = _c_array(input, "int8")
        out = np.zeros(x.shape, np.int8)
        args = RsqrtArgs(
            _pointer(x, _I8), _pointer(out, _I8), x.size, params.input_zero_point, params.output_zero_point,
            params.multiplier, params.shift,
        )  # fmt: skip
        self._call("helia_rsqrt_s8", args, arrays=(x, out))
        return out

    def l2_normalization(self, input_zero_point: int, input: np.ndarray) -> np.ndarray:
        """L2_NORMALIZATION over the last axis; the output has LiteRT's quantization (1/128, 0)."""
        x = _c_array(input, "int8")
        out = np.zeros(x.shape, np.int8)
        depth = x.shape[-1] if x.ndim else 1
        args = L2NormalizationArgs(_pointer(x, _I8), _pointer(out, _I8), x.size // depth, depth, input_zero_point)
        self._call("helia_l2_normalization_s8", args, arrays=(x, out))
        return out

    def log_softmax(self, params: LogSoftmaxParams, input: np.ndarray) -> np.ndarray:
        """LOG_SOFTMAX over the last axis; the output has LiteRT's quantization (16/256, 127)."""
        x = _c_array(input, "int8")
        out = np.zeros(x.shape, np.int8)
        depth = x.shape[-1] if x.ndim else 1
        args = LogSoftmaxArgs(
            _pointer(x, _I8), _pointer(out, _I8), x.size // depth, depth, params.input_multiplier,
            params.input_left_shift, params.reverse_multiplier, params.reverse_shift, params.diff_min,
        )  # fmt: skip
        self._call("helia_log_softmax_s8", args, arrays=(x, out))
        return out
