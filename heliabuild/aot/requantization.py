"""The requantization class of a layer, as the plan's `kernel.requantization` records it: `rshift_only` when
every output channel's quantized multiplier shifts right or is 0, else `general`. The multipliers are the
kernels' own (heliabuild.kernels.fixed_point), so the plan and the firmware agree on every scale."""

from __future__ import annotations

from collections.abc import Sequence

from heliabuild.aot.facts import OperatorFacts
from heliabuild.errors import Int8KernelError
from heliabuild.kernels.fixed_point import effective_scale, quantize_multiplier

RSHIFT_ONLY = "rshift_only"


GENERAL = "general"


def effective_scales(facts: OperatorFacts) -> list[float] | None:
    """Per output channel, input_scale * weight_scale_c / output_scale in float64 (the stored float32 scales
    widened, as TFLite computes them: heliabuild.kernels.fixed_point.effective_scale, as the kernels do); None
    when a scale is missing, Int8KernelError for an output scale of 0."""
    data, weights, out = facts.data_input, facts.weights, facts.output
    if data is None or weights is None or out is None:
        return None
    if data.quantization is None or weights.quantization is None or out.quantization is None:
        return None
    input_scale, output_scale = data.quantization.scales[0], out.quantization.scales[0]
    return [effective_scale(input_scale, w, output_scale) for w in weights.quantization.scales]


def requantization(facts: OperatorFacts) -> str | None:
    """`rshift_only` when every output channel's multiplier has a shift below 0 or is 0, else `general`;
    None for a layer without the scales (float layers, other operators). Int8KernelError naming the operator
    for scales no quantized multiplier represents (negative, not finite, an output scale of 0), as the
    kernels' derivation refuses them (one heliabuild.kernels.fixed_point.quantize_multiplier for both)."""
    if facts.dtype not in ("int8", "int16") or facts.op_type not in (
        "CONV_2D",
        "DEPTHWISE_CONV_2D",
        "FULLY_CONNECTED",
    ):
        return None
    try:
        scales = effective_scales(facts)
        return requantization_of(scales) if scales else None
    except Int8KernelError as error:
        raise Int8KernelError(
            f"operator {facts.id} ({facts.op_type}), its effective scale (input scale x weight scale / output "
            f"scale): {error.message}",
            hint="the model's quantization scales must be finite and not negative, the output's above 0",
        ) from None


def requantization_of(scales: Sequence[float]) -> str:
    """The requantization class of a list of effective scales."""
    for scale in scales:
        multiplier, shift = quantize_multiplier(scale)
        if multiplier != 0 and shift >= 0:
            return GENERAL
    return RSHIFT_ONLY
