"""QUANTIZE float32 -> int16 and DEQUANTIZE int16 -> float32 (c/ops_int16_convert.c), the boundary operators of a
16x8 model with float input and output, byte for byte against LiteRT's reference kernels (BUILTIN_REF)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from helpers.int8_models import run_reference
from helpers.int16_models import conversion_s16_model
from hypothesis import given, settings
from hypothesis import strategies as st

from heliabuild.kernels.int8 import Int8KernelError, Quant
from heliabuild.kernels.int16 import Int16Kernels
from heliabuild.kernels.native import Status, load_host_library


@pytest.fixture(scope="module")
def kernels(host_kernel_library: Path) -> Int16Kernels:
    return Int16Kernels(load_host_library(host_kernel_library))


@settings(max_examples=150, deadline=None)
@given(
    scale=st.floats(1e-6, 1.0),
    zero_point=st.sampled_from([0, 0, 17, -300]),
    spread=st.sampled_from([1.0, 1e3, 1e6]),
    seed=st.integers(0, 2**32 - 1),
)
def test_quantize_f32_s16_is_bit_exact(
    kernels: Int16Kernels, scale: float, zero_point: int, spread: float, seed: int
) -> None:
    """Values from well inside the int16 range to far beyond it (saturation), ties at half steps included."""
    rng = np.random.default_rng(seed)
    quant = Quant(scale, zero_point)
    x = (rng.standard_normal(300) * spread * scale * 100).astype(np.float32)
    x[:20] = ((rng.integers(-40000, 40000, 20) + 0.5) * np.float32(quant.scale)).astype(np.float32)
    expected = run_reference(conversion_s16_model("quantize", x.shape, quant), [x])
    assert kernels.quantize_s16(x, quant).tobytes() == expected.tobytes()


@settings(max_examples=60, deadline=None)
@given(scale=st.floats(1e-6, 1.0))
def test_dequantize_s16_f32_is_bit_exact_on_every_code(kernels: Int16Kernels, scale: float) -> None:
    """Zero point 0: LiteRT refuses any other for an int16 DEQUANTIZE (dequantize.cc)."""
    codes = np.arange(-32768, 32768, dtype=np.int16)
    quant = Quant(scale, 0)
    expected = run_reference(conversion_s16_model("dequantize", codes.shape, quant), [codes])
    assert kernels.dequantize_s16(codes, quant).tobytes() == expected.tobytes()


def test_the_conversions_refuse_bad_arguments(kernels: Int16Kernels) -> None:
    x = np.zeros(4, np.float32)
    for quant in (Quant(1e-3, 40000), Quant(-1.0, 0)):
        with pytest.raises(Int8KernelError) as refused:
            kernels.quantize_s16(x, quant)
        assert refused.value.status == Status.BAD_PARAMETER
