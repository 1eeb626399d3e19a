"""The int16 LOGISTIC, TANH and SOFTMAX C kernels (c/ops_int16_lut.c), byte for byte against LiteRT's reference
kernels (BUILTIN_REF): LOGISTIC and TANH over every int16 input code, SOFTMAX over Hypothesis-drawn rows."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from helpers.int8_models import run_reference
from helpers.int16_models import softmax_s16_model, unary_s16_model
from hypothesis import given, settings
from hypothesis import strategies as st

from heliabuild.kernels.int8 import Int8KernelError, Quant
from heliabuild.kernels.int16 import (
    SIGMOID_OUTPUT,
    Int16Kernels,
    sigmoid_s16_params,
    softmax_s16_params,
)
from heliabuild.kernels.native import Status, load_host_library

EVERY_CODE = np.arange(-32768, 32768, dtype=np.int16)

INPUT_SCALES = (2.0**-12, 2.0**-11, 2.0**-10, 2.0**-15, 1e-4, 3.1e-4, 1.0 / 3000.0, 1e-3, 5e-3, 2e-5, 0.05)
"""The power-of-two scales LiteRT's prepare singles out (2^-12; TANH also 2^-11), others on both sides of them,
and scales whose rescaled inputs reach the table's saturated end."""


@pytest.fixture(scope="module")
def kernels(host_kernel_library: Path) -> Int16Kernels:
    return Int16Kernels(load_host_library(host_kernel_library))


@pytest.mark.parametrize("operator", ["LOGISTIC", "TANH"])
@pytest.mark.parametrize("scale", INPUT_SCALES)
def test_sigmoid_s16_is_bit_exact_on_every_input_code(kernels: Int16Kernels, operator: str, scale: float) -> None:
    quant = Quant(scale, 0)
    expected = run_reference(unary_s16_model(operator, EVERY_CODE.shape, quant), [EVERY_CODE])
    got = kernels.sigmoid_s16(operator, sigmoid_s16_params(operator, quant, SIGMOID_OUTPUT), EVERY_CODE)
    assert got.tobytes() == expected.tobytes()


@settings(max_examples=20, deadline=None)
@given(operator=st.sampled_from(["LOGISTIC", "TANH"]), scale=st.floats(1e-5, 0.08))
def test_sigmoid_s16_is_bit_exact_at_any_input_scale(kernels: Int16Kernels, operator: str, scale: float) -> None:
    quant = Quant(scale, 0)
    expected = run_reference(unary_s16_model(operator, EVERY_CODE.shape, quant), [EVERY_CODE])
    got = kernels.sigmoid_s16(operator, sigmoid_s16_params(operator, quant, SIGMOID_OUTPUT), EVERY_CODE)
    assert got.tobytes() == expected.tobytes()


@settings(max_examples=150, deadline=None)
@given(
    rows=st.integers(1, 4),
    depth=st.integers(1, 300),
    scale=st.floats(1e-5, 5e-3),
    beta=st.sampled_from([1.0, 0.5, 2.0, 0.125]),
    spread=st.sampled_from([1, 8, 64, 1024]),
    seed=st.integers(0, 2**32 - 1),
)
def test_softmax_s16_is_bit_exact(
    kernels: Int16Kernels, rows: int, depth: int, scale: float, beta: float, spread: int, seed: int
) -> None:
    """`spread` divides the codes: narrow rows keep many exps near 1, wide ones drive most to the table's end."""
    rng = np.random.default_rng(seed)
    x = (rng.integers(-32768, 32768, (rows, depth)) // spread).astype(np.int16)
    quant = Quant(scale, 0)
    try:
        params = softmax_s16_params(quant, SIGMOID_OUTPUT, beta)
    except Int8KernelError as refused:
        assert "above the kernel's" in refused.message
        return
    expected = run_reference(softmax_s16_model(x.shape, quant, beta), [x])
    assert kernels.softmax_s16(params, x).tobytes() == expected.tobytes()


def test_softmax_s16_is_bit_exact_on_a_long_flat_row(kernels: Int16Kernels) -> None:
    """Every exp at 1: the largest sums the row bound allows."""
    x = np.full((1, 4000), 1234, np.int16)
    quant = Quant(1e-3, 0)
    expected = run_reference(softmax_s16_model(x.shape, quant), [x])
    assert kernels.softmax_s16(softmax_s16_params(quant, SIGMOID_OUTPUT), x).tobytes() == expected.tobytes()


def test_the_int16_lut_forms_refuse_other_quantizations() -> None:
    with pytest.raises(Int8KernelError, match=r"output scale .* is not 2\^-15"):
        sigmoid_s16_params("LOGISTIC", Quant(1e-3, 0), Quant(1.0 / 16384.0, 0))
    with pytest.raises(Int8KernelError, match="zero point 7 is not 0"):
        sigmoid_s16_params("TANH", Quant(1e-3, 7), SIGMOID_OUTPUT)
    with pytest.raises(Int8KernelError, match="outside the kernel's range"):
        sigmoid_s16_params("TANH", Quant(10.0, 0), SIGMOID_OUTPUT)
    with pytest.raises(Int8KernelError, match=r"output scale .* is not 2\^-15"):
        softmax_s16_params(Quant(1e-3, 0), Quant(1.0 / 256.0, 0))


def test_the_int16_lut_kernels_refuse_bad_arguments(kernels: Int16Kernels) -> None:
    from dataclasses import replace

    x = np.zeros((3, 5), np.int16)
    sigmoid = sigmoid_s16_params("LOGISTIC", Quant(1e-3, 0), SIGMOID_OUTPUT)
    kernels.sigmoid_s16("LOGISTIC", sigmoid, x)
    for change in ({"input_multiplier": 0}, {"input_multiplier": 1 << 16}, {"input_left_shift": 32}):
        with pytest.raises(Int8KernelError) as refused:
            kernels.sigmoid_s16("TANH", replace(sigmoid, **change), x)
        assert refused.value.status == Status.BAD_PARAMETER
    softmax = softmax_s16_params(Quant(1e-3, 0), SIGMOID_OUTPUT)
    kernels.softmax_s16(softmax, x)
    with pytest.raises(Int8KernelError) as refused:
        kernels.softmax_s16(replace(softmax, input_shift=15), x)
    assert refused.value.status == Status.BAD_PARAMETER
