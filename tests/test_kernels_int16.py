"""The int16 (16x8) ADD and MUL C kernels, byte for byte against LiteRT's reference kernels (BUILTIN_REF)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from helpers.int8_math_models import binary_s16_model
from helpers.int8_models import run_reference
from hypothesis import given, settings
from hypothesis import strategies as st
from test_kernels_int8_elementwise import broadcast_shapes

from heliabuild.kernels.int8 import Int8KernelError, Quant
from heliabuild.kernels.int16 import Int16Kernels, add_s16_params, mul_s16_params
from heliabuild.kernels.native import Status, load_host_library

SCALES = st.floats(1e-5, 1e-2)


@pytest.fixture(scope="module")
def kernels(host_kernel_library: Path) -> Int16Kernels:
    return Int16Kernels(load_host_library(host_kernel_library))


@pytest.mark.parametrize("kind", ["add", "mul"])
@settings(max_examples=200)
@given(
    pair=broadcast_shapes(),
    scales=st.tuples(SCALES, SCALES, st.floats(1e-5, 2e-2)),
    activation=st.sampled_from(["NONE", "RELU", "RELU6", "RELU_N1_TO_1"]),
    seed=st.integers(0, 2**32 - 1),
)
def test_int16_add_and_mul_are_bit_exact(
    kernels: Int16Kernels,
    kind: str,
    pair: tuple[tuple[int, ...], tuple[int, ...]],
    scales: tuple[float, float, float],
    activation: str,
    seed: int,
) -> None:
    q1, q2, qo = (Quant(s, 0) for s in scales)
    rng = np.random.default_rng(seed)
    a = rng.integers(-32768, 32768, pair[0], dtype=np.int16)
    b = rng.integers(-32768, 32768, pair[1], dtype=np.int16)
    derive = add_s16_params if kind == "add" else mul_s16_params
    try:
        params = derive(q1, q2, qo, activation)
    except Int8KernelError:
        assert kind == "add" and 2 * max(q1.scale, q2.scale) / 2**15 >= qo.scale * (1 - 1e-6)
        return
    expected = run_reference(binary_s16_model(kind, a.shape, b.shape, q1, q2, qo, activation), [a, b])
    assert kernels.binary_s16(kind, params, a, b).tobytes() == expected.tobytes()


def test_int16_forms_other_than_16x8_are_refused() -> None:
    with pytest.raises(Int8KernelError, match="zero point 3 is not 0"):
        add_s16_params(Quant(1e-3, 3), Quant(1e-3, 0), Quant(1e-3, 0))
    with pytest.raises(Int8KernelError, match="output multiplier must be below 1"):
        add_s16_params(Quant(0.5, 0), Quant(0.5, 0), Quant(1e-6, 0))


def test_int16_refusals_carry_the_status(kernels: Int16Kernels) -> None:
    from dataclasses import replace

    params = add_s16_params(Quant(1e-3, 0), Quant(2e-3, 0), Quant(3e-3, 0))
    a, b = np.zeros((2, 3), np.int16), np.zeros((3,), np.int16)
    kernels.binary_s16("add", params, a, b)
    for change in ({"left_shift": 20}, {"act_min": -40000}, {"input2_shift": 1}):
        with pytest.raises(Int8KernelError) as refused:
            kernels.binary_s16("add", replace(params, **change), a, b)
        assert refused.value.status == Status.BAD_PARAMETER


def test_int16_mul_takes_litert_float32_multiplier(kernels: Int16Kernels) -> None:
    """The case Hypothesis found: with the double quotient s1 * s2 / s_out the multiplier was 82 units low and one
    product of -582593128 (-10029.4997 real) rounded to -10029, LiteRT -10030."""
    q1, q2, qo = Quant(0.006077124909495156, 0), Quant(1e-05, 0), Quant(0.0035300773153078666, 0)
    rng = np.random.default_rng(3)
    a = rng.integers(-32768, 32768, (3, 5, 4), dtype=np.int16)
    b = rng.integers(-32768, 32768, (3, 1, 4), dtype=np.int16)
    expected = run_reference(binary_s16_model("mul", a.shape, b.shape, q1, q2, qo), [a, b])
    assert kernels.binary_s16("mul", mul_s16_params(q1, q2, qo), a, b).tobytes() == expected.tobytes()
    assert mul_s16_params(q1, q2, qo).output_multiplier == 1211417216
