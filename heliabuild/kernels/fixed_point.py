"""TFLite's fixed-point arithmetic stated in Python: the one `quantize_multiplier` that the kernels' parameter
derivations (heliabuild.kernels.int8 and its siblings) and the AOT plan's requantization class
(heliabuild.aot.requantization) both use, and the two roundings of MultiplyByQuantizedMultiplier (docs/kernels.md,
"int8 operator kernels"). Pure Python: importing it loads neither numpy nor ctypes.
"""

from __future__ import annotations

import math

from heliabuild.errors import Int8KernelError


def round_half_away(value: float) -> int:
    """std::round: to nearest, ties away from zero (exact for |value| < 2^52)."""
    return int(math.copysign(math.floor(abs(value) + 0.5), value))


def quantize_multiplier(real: float) -> tuple[int, int]:
    """TFLite's QuantizeMultiplier: (multiplier, shift) with real = multiplier * 2^(shift - 31).

    The multiplier is in [2^30, 2^31 - 1]; a real below 2^-32 becomes (0, 0), as in TFLite, and one of
    2^30 or more saturates to (2^31 - 1, 30), as TFLite's single-rounding build does (its double-rounding
    build would shift past 30, undefined; no real scales give such a multiplier). Raises Int8KernelError
    for a negative or non-finite real.
    """
    if not math.isfinite(real) or real < 0:
        raise Int8KernelError(f"the real multiplier {real!r} has no quantized multiplier; expected a finite value >= 0")
    if real == 0.0:
        return 0, 0
    mantissa, shift = math.frexp(real)
    fixed = round_half_away(mantissa * (1 << 31))
    if fixed == 1 << 31:
        fixed //= 2
        shift += 1
    if shift < -31:
        return 0, 0
    if shift > 30:  # saturate at the largest multiplier the kernels accept
        return 2**31 - 1, 30
    return fixed, shift


def effective_scale(input_scale: float, filter_scale: float, output_scale: float) -> float:
    """The real multiplier of a convolution or fully connected output channel, as TFLite computes it
    (GetQuantizedConvolutionMultipler): double(input_scale) * double(filter_scale) / double(output_scale).
    Raises Int8KernelError for an output scale of 0, which no multiplier represents."""
    if output_scale == 0.0:
        raise Int8KernelError(f"the output scale {output_scale!r} divides by zero; expected a scale above 0")
    return float(input_scale) * float(filter_scale) / float(output_scale)


def _wrap32(value: int) -> int:
    return (value + 2**31) % 2**32 - 2**31


def mbqm_single(x: int, multiplier: int, shift: int) -> int:
    """Single-rounding MultiplyByQuantizedMultiplier (helia_fixed.h): floor((x*m + 2^(30-shift)) / 2^(31-shift))."""
    total = 31 - shift
    return _wrap32((x * multiplier + (1 << (total - 1))) >> total)


def mbqm_double(x: int, multiplier: int, shift: int) -> int:
    """Double-rounding (gemmlowp) MultiplyByQuantizedMultiplier (helia_fixed.h), int32 in and out."""
    left, right = max(shift, 0), max(-shift, 0)
    shifted = _wrap32(x << left)
    if shifted == multiplier == -(2**31):
        high = 2**31 - 1
    else:
        product = shifted * multiplier
        nudged = product + ((1 << 30) if product >= 0 else 1 - (1 << 30))
        high = abs(nudged) >> 31 if nudged >= 0 else -(abs(nudged) >> 31)
    mask = (1 << right) - 1
    threshold = (mask >> 1) + (1 if high < 0 else 0)
    return (high >> right) + (1 if high & mask > threshold else 0)
