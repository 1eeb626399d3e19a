"""One quantize_multiplier: the AOT plan's requantization and the generated module's kernel arguments come from
the same derivation, so they agree on every scale, extreme ones included; a scale no quantized multiplier
represents is refused by both, with one sentence naming the operator and the value.

Each case is a real int8 model (CONV_2D with per-channel weight scales, and FULLY_CONNECTED) built with the
given scales: the plan side is heliabuild.aot.requantization (the class the plan records as
`operators[].kernel.requantization`), the kernel side is the multipliers and shifts heliabuild.codegen lowers
into the module."""

from __future__ import annotations

import math

import numpy as np
import pytest
from helpers.int8_models import conv_model, fully_connected_model
from hypothesis import given, settings
from hypothesis import strategies as st

from heliabuild.aot import requantization as plan
from heliabuild.aot.facts import model_facts
from heliabuild.codegen.lowering import ModelRefusedError, lower_model
from heliabuild.errors import HeliaError, Int8KernelError
from heliabuild.kernels.fixed_point import quantize_multiplier
from heliabuild.kernels.int8 import Quant

TINY = float(np.finfo(np.float32).smallest_subnormal)
HUGE = float(np.finfo(np.float32).max)
EXTREME = [
    TINY,  # the smallest float32 subnormal
    float(np.finfo(np.float32).smallest_normal),
    1e-30,
    2.0**-32,
    2.0**-31,
    2.0**-1,
    1.0,
    2.0**30,
    2.0**31,
    HUGE,
    1.0 - 2.0**-24,  # rounds up to 2^31: halved, shift raised
    0.0,
]
"""Scales as a model stores them (float32): tiny, subnormal, exact powers of two, huge, and 0."""


def _conv(input_scale: float, weight_scales: list[float], output_scale: float):
    channels = len(weight_scales)
    return conv_model(
        (1, 2, 2, 2),
        np.ones((channels, 1, 1, 2), np.int8),
        np.array(weight_scales, np.float32),
        None,
        Quant(input_scale, 0),
        Quant(output_scale, 0),
        (1, 2, 2, channels),
        stride=(1, 1),
        dilation=(1, 1),
        padding="VALID",
        activation="NONE",
        depthwise=False,
    )


def _fully_connected(input_scale: float, weight_scale: float, output_scale: float):
    return fully_connected_model(
        (1, 4), np.ones((3, 4), np.int8), np.array([weight_scale], np.float32), None, Quant(input_scale, 0),
        Quant(output_scale, 0),
    )  # fmt: skip


def _kernel_pairs(model) -> list[tuple[int, int]]:
    """The (multiplier, shift) of each output channel in the module's kernel call."""
    (call,) = lower_model(model, "model.tflite")
    fields = dict(call.fields)
    return list(zip(fields["multipliers"].values, fields["shifts"].values, strict=True))


def _kernel_class(pairs: list[tuple[int, int]]) -> str:
    general = any(multiplier != 0 and shift >= 0 for multiplier, shift in pairs)
    return plan.GENERAL if general else plan.RSHIFT_ONLY


def _assert_agree(model) -> None:
    (facts,) = model_facts(model)
    planned = plan.requantization(facts)
    pairs = _kernel_pairs(model)
    assert planned == _kernel_class(pairs)
    scales = plan.effective_scales(facts)
    assert scales is not None
    derived = [quantize_multiplier(scale) for scale in scales]
    assert pairs == (derived if len(set(derived)) > 1 else derived[:1])
    for multiplier, shift in pairs:
        assert (multiplier, shift) == (0, 0) or (2**30 <= multiplier < 2**31 and -31 <= shift <= 30)


FLOAT32 = st.floats(min_value=0.0, width=32, allow_nan=False, allow_infinity=False, allow_subnormal=True)
POSITIVE = FLOAT32.filter(lambda scale: scale > 0.0)


@settings(max_examples=60, deadline=None)
@given(input_scale=FLOAT32, weight_scales=st.lists(FLOAT32, min_size=1, max_size=3), output_scale=POSITIVE)
def test_plan_and_kernel_agree_on_any_scales(input_scale: float, weight_scales: list[float], output_scale: float):
    _assert_agree(_conv(input_scale, weight_scales, output_scale))


@pytest.mark.parametrize("output_scale", [s for s in EXTREME if s > 0.0])
@pytest.mark.parametrize("scale", EXTREME)
def test_plan_and_kernel_agree_on_extreme_scales(scale: float, output_scale: float) -> None:
    _assert_agree(_conv(scale, [scale, 1.0, TINY], output_scale))
    _assert_agree(_conv(1.0, [scale], output_scale))
    _assert_agree(_fully_connected(scale, 0.5, output_scale))


def test_the_saturated_and_the_vanishing_multipliers() -> None:
    """A real of 2^30 or more saturates to the largest multiplier, one below 2^-32 vanishes: plan and kernel."""
    saturated = _conv(HUGE, [HUGE], TINY)
    assert _kernel_pairs(saturated) == [(2**31 - 1, 30)]
    assert plan.requantization(model_facts(saturated)[0]) == plan.GENERAL
    vanishing = _conv(TINY, [TINY], HUGE)
    assert _kernel_pairs(vanishing) == [(0, 0)]
    assert plan.requantization(model_facts(vanishing)[0]) == plan.RSHIFT_ONLY


BAD = [
    ("negative weight scale", 0.5, -0.25, 0.5, "real multiplier -0.25 "),
    ("negative output scale", 0.5, 0.25, -0.5, "real multiplier -0.25 "),
    ("infinite input scale", math.inf, 0.25, 0.5, "real multiplier inf "),
    ("NaN weight scale", 0.5, math.nan, 0.5, "real multiplier nan "),
    ("output scale 0", 0.5, 0.25, 0.0, "output scale 0.0 divides by zero"),
]


@pytest.mark.parametrize(("case", "input_scale", "weight_scale", "output_scale", "value"), BAD, ids=[b[0] for b in BAD])
def test_a_bad_scale_is_refused_by_plan_and_kernel(
    case: str, input_scale: float, weight_scale: float, output_scale: float, value: str
) -> None:
    for model in (
        _conv(input_scale, [weight_scale], output_scale),
        _fully_connected(input_scale, weight_scale, output_scale),
    ):
        (facts,) = model_facts(model)
        with pytest.raises(Int8KernelError) as planned:
            plan.requantization(facts)
        assert isinstance(planned.value, HeliaError)
        message = planned.value.message
        assert message.startswith(f"operator {facts.id} ({facts.op_type}), its effective scale") and value in message
        assert "\n" not in message and planned.value.hint
        with pytest.raises(ModelRefusedError) as lowered:
            lower_model(model, "model.tflite")
        (refusal,) = lowered.value.refusals
        assert refusal.id == facts.id and value in refusal.reason


@pytest.mark.parametrize("real", [-1.0, -TINY, math.inf, -math.inf, math.nan])
def test_quantize_multiplier_refuses_what_no_multiplier_represents(real: float) -> None:
    with pytest.raises(Int8KernelError, match=r"has no quantized multiplier; expected a finite value >= 0"):
        quantize_multiplier(real)
