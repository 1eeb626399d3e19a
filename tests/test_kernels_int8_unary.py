"""Standalone RELU, RELU6, RELU_N1_TO_1 and int8 -> int8 QUANTIZE (requantize): the C kernel byte for byte
against LiteRT's reference kernels over shapes, zero points and scales, and its refusals."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from helpers.int8_models import requantize_model, run_reference
from hypothesis import given, settings
from hypothesis import strategies as st

from heliabuild.kernels.int8 import Int8KernelError, Int8Kernels, Quant, requantize_params
from heliabuild.kernels.native import Status, load_host_library

KINDS = ("RELU", "RELU6", "RELU_N1_TO_1", "QUANTIZE")


@pytest.fixture(scope="module")
def kernels(host_kernel_library: Path) -> Int8Kernels:
    return Int8Kernels(load_host_library(host_kernel_library))


def activation_of(kind: str) -> str:
    return "NONE" if kind == "QUANTIZE" else kind


QUANT = st.builds(Quant, st.floats(1e-3, 0.5), st.integers(-128, 127))


@pytest.mark.parametrize("kind", KINDS)
@settings(max_examples=150, deadline=None)
@given(
    shape=st.lists(st.integers(1, 6), min_size=1, max_size=4).map(tuple),
    input_quant=QUANT,
    ratio=st.floats(0.05, 20.0),
    output_zero_point=st.integers(-128, 127),
    seed=st.integers(0, 2**32 - 1),
)
def test_requantize_is_bit_exact(
    kernels: Int8Kernels,
    kind: str,
    shape: tuple[int, ...],
    input_quant: Quant,
    ratio: float,
    output_zero_point: int,
    seed: int,
) -> None:
    output_quant = Quant(input_quant.scale * ratio, output_zero_point)
    x = np.random.default_rng(seed).integers(-128, 128, size=shape, dtype=np.int8)
    expected = run_reference(requantize_model(kind, shape, input_quant, output_quant), [x])
    found = kernels.requantize(requantize_params(input_quant, output_quant, activation_of(kind)), x)
    assert found.tobytes() == expected.tobytes()


@pytest.mark.parametrize("kind", KINDS)
def test_every_input_code_under_equal_quantization(kernels: Int8Kernels, kind: str) -> None:
    """Every int8 code through each kind with the input's quantization kept (the converter's usual RELU)."""
    quant = Quant(0.0473, -17)
    x = np.arange(-128, 128, dtype=np.int8)
    expected = run_reference(requantize_model(kind, x.shape, quant, quant), [x])
    found = kernels.requantize(requantize_params(quant, quant, activation_of(kind)), x)
    assert found.tobytes() == expected.tobytes()


def test_requantize_runs_in_place_and_refuses_bad_arguments_writing_nothing(kernels: Int8Kernels) -> None:
    import ctypes

    from heliabuild.kernels.int8 import _I8, RequantizeArgs, _pointer

    params = requantize_params(Quant(0.1, 3), Quant(0.05, -7), "RELU6")
    x = np.arange(-128, 128, dtype=np.int8)
    expected = kernels.requantize(params, x)
    function = kernels.library.helia_requantize_s8

    def args(source: np.ndarray, target: object, count: int = 256, **changes: int) -> RequantizeArgs:
        fields = {
            "input_zero_point": params.input_zero_point, "output_zero_point": params.output_zero_point,
            "multiplier": params.multiplier, "shift": params.shift, "act_min": params.act_min,
            "act_max": params.act_max, **changes,
        }  # fmt: skip
        return RequantizeArgs(_pointer(source, _I8), target, count, *fields.values())

    in_place = x.copy()
    assert function(ctypes.byref(args(in_place, _pointer(in_place, _I8)))) == Status.OK
    assert in_place.tobytes() == expected.tobytes()
    buffer = np.zeros(300, np.int8)
    buffer[:256] = x
    shifted = ctypes.cast(buffer.ctypes.data + 1, _I8)
    for bad, status in (
        (args(buffer, shifted), Status.PARTIAL_OVERLAP),
        (args(x, shifted, count=0), Status.BAD_SHAPE),
        (args(x, shifted, input_zero_point=128), Status.BAD_PARAMETER),
        (args(x, shifted, act_min=5, act_max=4), Status.BAD_PARAMETER),
        (args(x, shifted, multiplier=5), Status.BAD_PARAMETER),
        (args(x, ctypes.cast(None, _I8)), Status.NULL_POINTER),
    ):
        before = buffer.copy()
        assert function(ctypes.byref(bad)) == status
        assert buffer.tobytes() == before.tobytes()
    with pytest.raises(Int8KernelError):
        kernels.requantize(params, np.zeros(0, np.int8))
