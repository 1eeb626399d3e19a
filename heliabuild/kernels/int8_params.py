"""The parameter derivations of heliabuild's int8 operator kernels, as TFLite does them (pure numpy, no C library).

The C kernels (`c/helia_ops.h`, `c/ops_*.c`) take integer parameters only:
quantized multipliers and shifts, activation bounds, explicit paddings. This
module derives them from the float32 scales a TFLite model stores, with the
arithmetic LiteRT uses (docs/kernels.md, "int8 operator kernels"), so the
firmware generator and the tests share one derivation:

- `quantize_multiplier(real)` (heliabuild.kernels.fixed_point): TFLite's QuantizeMultiplier, the one the
  AOT plan's requantization uses too;
- `activation_range(activation, quant)`: the fused activation as int8 bounds;
- `conv_params`, `fully_connected_params`, `pool_params`, `add_params`,
  `mul_params`, `softmax_params`: every integer a kernel needs;
- `weight_sums(filter, depthwise)`, `conv_scratch_bytes(params)`,
  `reads_in_place(params)`: the per-channel weight sums and the im2col row the
  Helium bodies take, and whether CONV_2D's 1x1 entry applies (docs/kernels.md,
  "Helium (MVE) bodies");
- `mbqm_single`, `mbqm_double` (heliabuild.kernels.fixed_point): the two roundings of TFLite's
  MultiplyByQuantizedMultiplier that LiteRT's reference kernels use.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from heliabuild.errors import Int8KernelError
from heliabuild.kernels.fixed_point import effective_scale, quantize_multiplier, round_half_away

MAX_RANK = 6


ADD_LEFT_SHIFT = 20


ACTIVATIONS = ("NONE", "RELU", "RELU_N1_TO_1", "RELU6")


SOFTMAX_SCALED_DIFF_INTEGER_BITS = 5


SOFTMAX_OUTPUT_SCALE = 1.0 / 256.0


SOFTMAX_OUTPUT_ZERO_POINT = -128


@dataclass(frozen=True)
class Quant:
    """Per-tensor quantization: real = scale * (q - zero_point); the scale as float32 stores it."""

    scale: float
    zero_point: int

    def __post_init__(self) -> None:
        object.__setattr__(self, "scale", float(np.float32(self.scale)))
        object.__setattr__(self, "zero_point", int(self.zero_point))


def quantize_value(real: float, quant: Quant) -> int:
    """TFLite's activation-range quantization of one float: zero_point + round(real / scale) in float32."""
    return quant.zero_point + round_half_away(float(np.float32(real) / np.float32(quant.scale)))


def activation_range(activation: str, quant: Quant, bounds: tuple[int, int] = (-128, 127)) -> tuple[int, int]:
    """The output bounds of a fused activation (TFLite's CalculateActivationRangeQuantized) within the type's
    `bounds` (int8's by default)."""
    if activation not in ACTIVATIONS:
        raise Int8KernelError(
            f"int8 kernels: fused activation {activation!r} is not supported; expected one of {', '.join(ACTIVATIONS)}"
        )
    low, high = bounds
    if activation == "RELU":
        low = max(low, quantize_value(0.0, quant))
    elif activation == "RELU6":
        low, high = max(low, quantize_value(0.0, quant)), min(high, quantize_value(6.0, quant))
    elif activation == "RELU_N1_TO_1":
        low, high = max(low, quantize_value(-1.0, quant)), min(high, quantize_value(1.0, quant))
    return low, high


def output_size(size: int, filter_size: int, stride: int, dilation: int, padding: str) -> int:
    """TFLite's ComputeOutSize for SAME or VALID padding."""
    effective = (filter_size - 1) * dilation + 1
    if padding == "SAME":
        return (size + stride - 1) // stride
    if padding == "VALID":
        return (size + stride - effective) // stride
    raise Int8KernelError(f"int8 kernels: padding {padding!r} is not supported; expected SAME or VALID")


def padding_before(size: int, filter_size: int, stride: int, dilation: int, out: int) -> int:
    """TFLite's ComputePaddingWithOffset: the padding before the first row (the odd pixel goes after)."""
    effective = (filter_size - 1) * dilation + 1
    return max(((out - 1) * stride + effective - size) // 2, 0)


def _per_channel(filter_scales: Sequence[float] | np.ndarray) -> np.ndarray:
    return np.asarray(filter_scales, dtype=np.float32).reshape(-1)


def _multipliers(input_scale: float, filter_scales: np.ndarray, output_scale: float) -> tuple[np.ndarray, np.ndarray]:
    """Per-channel multipliers: (double(input_scale) * double(filter_scale)) / double(output_scale)."""
    pairs = [quantize_multiplier(effective_scale(input_scale, f, output_scale)) for f in filter_scales]
    return np.array([m for m, _ in pairs], np.int32), np.array([s for _, s in pairs], np.int32)


@dataclass(frozen=True)
class ConvParams:
    """Every integer CONV_2D / DEPTHWISE_CONV_2D needs (helia_conv_s8_args without the pointers)."""

    input_shape: tuple[int, int, int, int]
    filter_shape: tuple[int, int, int, int]
    output_shape: tuple[int, int, int, int]
    stride: tuple[int, int]
    dilation: tuple[int, int]
    pad: tuple[int, int]
    depthwise: bool
    depth_multiplier: int
    multipliers: np.ndarray
    shifts: np.ndarray
    input_zero_point: int
    output_zero_point: int
    act_min: int
    act_max: int


def conv_params(
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
    """The parameters of an int8 CONV_2D (filter [out_c, kh, kw, in_c]) or DEPTHWISE_CONV_2D ([1, kh, kw, out_c])."""
    n, h, w, c = (int(d) for d in input_shape)
    fshape = tuple(int(d) for d in filter_shape)
    out_c = fshape[3] if depthwise else fshape[0]
    kh, kw = fshape[1], fshape[2]
    oh = output_size(h, kh, stride[0], dilation[0], padding)
    ow = output_size(w, kw, stride[1], dilation[1], padding)
    if oh < 1 or ow < 1:
        raise Int8KernelError(f"int8 conv: a {kh}x{kw} filter does not fit a {h}x{w} input with {padding} padding")
    scales = _per_channel(filter_scales)
    multipliers, shifts = _multipliers(input_quant.scale, scales, output_quant.scale)
    low, high = activation_range(activation, output_quant)
    return ConvParams(
        input_shape=(n, h, w, c),
        filter_shape=fshape,  # type: ignore[arg-type]
        output_shape=(n, oh, ow, out_c),
        stride=(int(stride[0]), int(stride[1])),
        dilation=(int(dilation[0]), int(dilation[1])),
        pad=(padding_before(h, kh, stride[0], dilation[0], oh), padding_before(w, kw, stride[1], dilation[1], ow)),
        depthwise=depthwise,
        depth_multiplier=out_c // c if depthwise else 1,
        multipliers=multipliers,
        shifts=shifts,
        input_zero_point=input_quant.zero_point,
        output_zero_point=output_quant.zero_point,
        act_min=low,
        act_max=high,
    )


def weight_sums(filter: np.ndarray, depthwise: bool = False) -> np.ndarray:
    """Each output channel's sum of filter values, int32: over a row of a FULLY_CONNECTED [out, depth] or CONV_2D
    [out_c, kh, kw, in_c] filter, over the taps of a DEPTHWISE_CONV_2D [1, kh, kw, out_c] filter. The Helium bodies
    fold the input zero point out with them; they must be exactly these (the kernels' check touches no data)."""
    values = np.asarray(filter, dtype=np.int64)
    if depthwise:
        return values.reshape(-1, values.shape[-1]).sum(axis=0).astype(np.int32)
    return values.reshape(values.shape[0], -1).sum(axis=1).astype(np.int32)


def conv_scratch_bytes(params: ConvParams) -> int:
    """The scratch bytes CONV_2D's Helium body uses (helia_conv2d_s8_scratch_bytes): one im2col row, kh x kw x
    in_c; 0 for DEPTHWISE_CONV_2D."""
    return 0 if params.depthwise else params.filter_shape[1] * params.filter_shape[2] * params.input_shape[3]


def reads_in_place(params: ConvParams) -> bool:
    """Whether CONV_2D's 1x1 entry (helia_conv2d_1x1_s8) takes `params`: a 1x1 filter, no padding, every output
    pixel reading inside the input."""
    _, h, w, _ = params.input_shape
    _, oh, ow, _ = params.output_shape
    one = params.filter_shape[1] == 1 and params.filter_shape[2] == 1 and params.pad == (0, 0)
    return not params.depthwise and one and (oh - 1) * params.stride[0] < h and (ow - 1) * params.stride[1] < w


@dataclass(frozen=True)
class FullyConnectedParams:
    batches: int
    depth: int
    output_depth: int
    multipliers: np.ndarray
    shifts: np.ndarray
    input_zero_point: int
    output_zero_point: int
    act_min: int
    act_max: int


def fully_connected_params(
    input_count: int,
    filter_shape: Sequence[int],
    input_quant: Quant,
    filter_scales: Sequence[float] | np.ndarray,
    output_quant: Quant,
    activation: str = "NONE",
) -> FullyConnectedParams:
    """FULLY_CONNECTED on an input of `input_count` elements, flattened to [-1, depth] as TFLite does."""
    output_depth, depth = (int(d) for d in filter_shape)
    if input_count % depth:
        raise Int8KernelError(f"int8 fully connected: {input_count} input elements are not a multiple of depth {depth}")
    multipliers, shifts = _multipliers(input_quant.scale, _per_channel(filter_scales), output_quant.scale)
    low, high = activation_range(activation, output_quant)
    return FullyConnectedParams(
        input_count // depth, depth, output_depth, multipliers, shifts,
        input_quant.zero_point, output_quant.zero_point, low, high,
    )  # fmt: skip


@dataclass(frozen=True)
class PoolParams:
    input_shape: tuple[int, int, int, int]
    output_shape: tuple[int, int, int, int]
    filter: tuple[int, int]
    stride: tuple[int, int]
    pad: tuple[int, int]
    act_min: int
    act_max: int


def pool_params(
    input_shape: Sequence[int],
    filter_size: tuple[int, int],
    output_quant: Quant,
    *,
    stride: tuple[int, int] = (1, 1),
    padding: str = "VALID",
    activation: str = "NONE",
) -> PoolParams:
    """AVERAGE_POOL_2D / MAX_POOL_2D (input and output share one quantization)."""
    n, h, w, c = (int(d) for d in input_shape)
    oh = output_size(h, filter_size[0], stride[0], 1, padding)
    ow = output_size(w, filter_size[1], stride[1], 1, padding)
    if oh < 1 or ow < 1:
        raise Int8KernelError(f"int8 pool: a {filter_size} window does not fit a {h}x{w} input with {padding} padding")
    low, high = activation_range(activation, output_quant)
    return PoolParams(
        (n, h, w, c), (n, oh, ow, c), (int(filter_size[0]), int(filter_size[1])), (int(stride[0]), int(stride[1])),
        (padding_before(h, filter_size[0], stride[0], 1, oh), padding_before(w, filter_size[1], stride[1], 1, ow)),
        low, high,
    )  # fmt: skip


@dataclass(frozen=True)
class BinaryParams:
    """ADD / MUL: zero points, multipliers (ADD: both inputs and the output; MUL: the output) and bounds."""

    input1_zero_point: int
    input2_zero_point: int
    output_zero_point: int
    left_shift: int
    input1_multiplier: int
    input1_shift: int
    input2_multiplier: int
    input2_shift: int
    output_multiplier: int
    output_shift: int
    act_min: int
    act_max: int


def add_params(
    input1: Quant,
    input2: Quant,
    output: Quant,
    activation: str = "NONE",
    *,
    left_shift: int = ADD_LEFT_SHIFT,
    bounds: tuple[int, int] = (-128, 127),
) -> BinaryParams:
    """TFLite's int8 ADD preparation: both inputs rescaled to 2 * max(scale) with 2^20 headroom (int16's
    general-scale ADD: 2^15 and the int16 `bounds`)."""
    twice_max = 2.0 * max(input1.scale, input2.scale)
    m1, s1 = quantize_multiplier(input1.scale / twice_max)
    m2, s2 = quantize_multiplier(input2.scale / twice_max)
    mo, so = quantize_multiplier(twice_max / ((1 << left_shift) * output.scale))
    if so > 0:
        raise Int8KernelError(
            f"int{8 if bounds == (-128, 127) else 16} add: output scale {output.scale!r} is below 2 * max input "
            f"scale / 2^{left_shift}; the output multiplier must be below 1"
        )
    low, high = activation_range(activation, output, bounds)
    return BinaryParams(
        input1.zero_point, input2.zero_point, output.zero_point, left_shift, m1, s1, m2, s2, mo, so, low, high
    )


def mul_params(
    input1: Quant, input2: Quant, output: Quant, activation: str = "NONE", *, bounds: tuple[int, int] = (-128, 127)
) -> BinaryParams:
    """TFLite's int8 MUL preparation: one multiplier, double(s1) * double(s2) / double(s_out)."""
    mo, so = quantize_multiplier(input1.scale * input2.scale / output.scale)
    low, high = activation_range(activation, output, bounds)
    return BinaryParams(input1.zero_point, input2.zero_point, output.zero_point, 0, 0, 0, 0, 0, mo, so, low, high)


@dataclass(frozen=True)
class SoftmaxParams:
    input_multiplier: int
    input_left_shift: int
    diff_min: int


def softmax_params(input_scale: float, beta: float = 1.0) -> SoftmaxParams:
    """TFLite's int8 SOFTMAX preparation: PreprocessSoftmaxScaling and CalculateInputRadius, 5 integer bits.

    The input multiplier is beta * input_scale * 2^26 (capped at 2^31 - 1) as a quantized multiplier
    whose shift must be >= 0; differences below -floor(31 * 2^26 / 2^shift) contribute nothing.
    """
    bits = SOFTMAX_SCALED_DIFF_INTEGER_BITS
    real = min(float(np.float32(beta)) * float(np.float32(input_scale)) * float(1 << (31 - bits)), float(2**31 - 1))
    multiplier, shift = quantize_multiplier(real)
    if shift < 0:
        raise Int8KernelError(
            f"int8 softmax: beta * input scale = {real / (1 << (31 - bits))!r} is below 2^-27; LiteRT refuses it too"
        )
    radius = math.floor(float((1 << bits) - 1) * float(1 << (31 - bits)) / float(1 << shift))
    return SoftmaxParams(multiplier, shift, -radius)


@dataclass(frozen=True)
class RequantizeParams:
    """Standalone RELU / RELU6 / RELU_N1_TO_1 and int8 -> int8 QUANTIZE (helia_requantize_s8_args)."""

    input_zero_point: int
    output_zero_point: int
    multiplier: int
    shift: int
    act_min: int
    act_max: int


def requantize_params(input_quant: Quant, output_quant: Quant, activation: str = "NONE") -> RequantizeParams:
    """The multiplier of input_scale / output_scale and the activation's bounds, as LiteRT prepares them: the
    RELU family divides the float32 scales in float32 (ReluPrepare), QUANTIZE (activation NONE) in double."""
    if activation == "NONE":
        ratio = float(input_quant.scale) / float(output_quant.scale)
    else:
        ratio = float(np.float32(input_quant.scale) / np.float32(output_quant.scale))
    multiplier, shift = quantize_multiplier(ratio)
    low, high = activation_range(activation, output_quant)
    return RequantizeParams(input_quant.zero_point, output_quant.zero_point, multiplier, shift, low, high)


@dataclass(frozen=True)
class MeanParams:
    """MEAN (helia_mean_s8_args without the pointers): the input as [outer, reduced, inner]."""

    output_shape: tuple[int, ...]
    outer: int
    reduced: int
    inner: int
    input_zero_point: int
    output_zero_point: int
    multiplier: int
    shift: int


def mean_params(
    input_shape: Sequence[int], axes: Sequence[int], keep_dims: bool, input_quant: Quant, output_quant: Quant
) -> MeanParams:
    """LiteRT's int8 MEAN preparation: the quantized multiplier of double(in_scale) / double(out_scale), with
    1/n (n the count reduced per output) folded in: k = min(floor(log2 n), 32, 31 + shift), multiplier =
    (multiplier << k) // n, shift - k. The axes (negative ones counted from the end, repeats ignored, as LiteRT
    resolves them) must be a contiguous run; Int8KernelError otherwise."""
    shape = tuple(int(d) for d in input_shape)
    rank = len(shape)
    raw = [int(a) for a in axes]
    if not raw or any(not -rank <= a < rank for a in raw):
        raise Int8KernelError(f"int8 mean: axes {raw} are not a nonempty list of axes of a rank {rank} input")
    resolved = sorted({a % rank for a in raw})
    if resolved != list(range(resolved[0], resolved[-1] + 1)):
        raise Int8KernelError(f"int8 mean: axes {raw} are not contiguous; the kernel reduces one run of axes")
    first, last = resolved[0], resolved[-1]
    kept = [1 if first <= a <= last else d for a, d in enumerate(shape) if keep_dims or not first <= a <= last]
    reduced = math.prod(shape[first : last + 1])
    multiplier, shift = quantize_multiplier(float(input_quant.scale) / float(output_quant.scale))
    fold = min(reduced.bit_length() - 1, 32, 31 + shift)
    return MeanParams(
        tuple(kept), math.prod(shape[:first]), reduced, math.prod(shape[last + 1 :]),
        input_quant.zero_point, output_quant.zero_point, (multiplier << fold) // reduced, shift - fold,
    )  # fmt: skip
