"""The int16 (16x8) FULLY_CONNECTED, CONV_2D and DEPTHWISE_CONV_2D C kernels (c/ops_int16_conv.c), byte for byte
against LiteRT's reference kernels (BUILTIN_REF): int16 activations, int8 weights per tensor or per channel, int64
bias."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from helpers.int8_models import run_reference
from helpers.int16_models import conv_s16_model, fully_connected_s16_model
from hypothesis import given, settings
from hypothesis import strategies as st

from heliabuild.kernels.int8 import Int8KernelError, Quant
from heliabuild.kernels.int16 import Int16Kernels, conv_s16_params, fully_connected_s16_params
from heliabuild.kernels.native import Status, load_host_library

ACTIVATIONS = st.sampled_from(["NONE", "RELU", "RELU6", "RELU_N1_TO_1"])


@pytest.fixture(scope="module")
def kernels(host_kernel_library: Path) -> Int16Kernels:
    return Int16Kernels(load_host_library(host_kernel_library))


def _inputs(rng: np.random.Generator, shape: tuple[int, ...], extreme: bool) -> np.ndarray:
    """Uniform int16 codes, or (extreme) only the two ends of the range, which drive the accumulator hardest."""
    if extreme:
        return rng.choice(np.array([-32768, 32767], np.int16), shape)
    return rng.integers(-32768, 32768, shape, dtype=np.int16)


def _bias(rng: np.random.Generator, channels: int, magnitude: int) -> np.ndarray:
    return rng.integers(-(2**magnitude), 2**magnitude, channels, dtype=np.int64)


def _outside_int32(accumulators: np.ndarray, multipliers: np.ndarray, shifts: np.ndarray, channel_axis: int) -> bool:
    """Whether any accumulator scaled by its channel's multiplier leaves int32: there LiteRT's int64 arithmetic
    overflows (undefined in C++), and heliabuild saturates instead (docs/kernels.md)."""
    real = multipliers.astype(np.float64) * np.exp2(shifts.astype(np.float64) - 31)
    shape = [1] * accumulators.ndim
    shape[channel_axis] = -1
    return bool((np.abs(accumulators.astype(np.float64) * real.reshape(shape)) >= 2.0**31 - 2.0**16).any())


@settings(max_examples=250, deadline=None)
@given(
    batches=st.integers(1, 3),
    depth=st.integers(1, 300),
    output_depth=st.integers(1, 12),
    per_channel=st.booleans(),
    input_scale=st.floats(1e-5, 1e-2),
    output_scale=st.floats(1e-4, 1.0),
    bias_magnitude=st.sampled_from([None, 10, 30, 38, 45]),
    activation=ACTIVATIONS,
    extreme=st.booleans(),
    seed=st.integers(0, 2**32 - 1),
)
def test_fully_connected_s16_is_bit_exact(
    kernels: Int16Kernels,
    batches: int,
    depth: int,
    output_depth: int,
    per_channel: bool,
    input_scale: float,
    output_scale: float,
    bias_magnitude: int | None,
    activation: str,
    extreme: bool,
    seed: int,
) -> None:
    rng = np.random.default_rng(seed)
    filter = rng.integers(-127, 128, (output_depth, depth), dtype=np.int8)
    scales = rng.uniform(1e-3, 1e-1, output_depth if per_channel else 1).astype(np.float32)
    bias = None if bias_magnitude is None else _bias(rng, output_depth, bias_magnitude)
    qi, qo = Quant(input_scale, 0), Quant(output_scale, 0)
    x = _inputs(rng, (batches, depth), extreme)
    params = fully_connected_s16_params(x.size, filter.shape, qi, scales, qo, activation)
    expected = run_reference(fully_connected_s16_model(x.shape, filter, scales, bias, qi, qo, activation), [x])
    got = kernels.fully_connected_s16(params, x, filter, bias)
    accumulators = x.astype(np.int64) @ filter.T.astype(np.int64) + (0 if bias is None else bias)
    if _outside_int32(accumulators, params.multipliers, params.shifts, 1):
        differs = got != expected
        saturated = np.where(accumulators > 0, params.act_max, params.act_min)
        assert np.array_equal(got[differs], saturated[differs])
        return
    assert got.tobytes() == expected.tobytes()


@settings(max_examples=300, deadline=None)
@given(
    batches=st.integers(1, 2),
    size=st.tuples(st.integers(1, 9), st.integers(1, 9)),
    channels=st.integers(1, 6),
    output_channels=st.integers(1, 6),
    kernel=st.tuples(st.integers(1, 3), st.integers(1, 3)),
    stride=st.tuples(st.integers(1, 3), st.integers(1, 3)),
    dilation=st.tuples(st.integers(1, 2), st.integers(1, 2)),
    padding=st.sampled_from(["SAME", "VALID"]),
    depthwise=st.booleans(),
    per_channel=st.booleans(),
    input_scale=st.floats(1e-5, 1e-2),
    output_scale=st.floats(1e-4, 1.0),
    bias_magnitude=st.sampled_from([0, 10, 30, 38, 45]),
    activation=ACTIVATIONS,
    extreme=st.booleans(),
    seed=st.integers(0, 2**32 - 1),
)
def test_conv2d_and_depthwise_s16_are_bit_exact(
    kernels: Int16Kernels,
    batches: int,
    size: tuple[int, int],
    channels: int,
    output_channels: int,
    kernel: tuple[int, int],
    stride: tuple[int, int],
    dilation: tuple[int, int],
    padding: str,
    depthwise: bool,
    per_channel: bool,
    input_scale: float,
    output_scale: float,
    bias_magnitude: int,
    activation: str,
    extreme: bool,
    seed: int,
) -> None:
    """`depthwise`: DEPTHWISE_CONV_2D with depth multiplier `output_channels`."""
    rng = np.random.default_rng(seed)
    if depthwise:
        output_channels *= channels
        filter = rng.integers(-127, 128, (1, *kernel, output_channels), dtype=np.int8)
    else:
        filter = rng.integers(-127, 128, (output_channels, *kernel, channels), dtype=np.int8)
    scales = rng.uniform(1e-3, 1e-1, output_channels if per_channel else 1).astype(np.float32)
    bias = _bias(rng, output_channels, bias_magnitude)
    qi, qo = Quant(input_scale, 0), Quant(output_scale, 0)
    x = _inputs(rng, (batches, *size, channels), extreme)
    try:
        params = conv_s16_params(
            x.shape, filter.shape, qi, scales, qo, stride=stride, dilation=dilation, padding=padding,
            activation=activation, depthwise=depthwise,
        )  # fmt: skip
    except Int8KernelError as refused:
        assert "does not fit" in refused.message
        return
    model = conv_s16_model(
        x.shape, filter, scales, bias, qi, qo, params.output_shape, stride=stride, dilation=dilation,
        padding=padding, activation=activation, depthwise=depthwise,
    )  # fmt: skip
    expected = run_reference(model, [x])
    assert kernels.conv_s16(params, x, filter, bias).tobytes() == expected.tobytes()


def test_the_16x8_forms_refuse_other_quantizations() -> None:
    with pytest.raises(Int8KernelError, match="zero point 5 is not 0"):
        fully_connected_s16_params(4, (2, 4), Quant(1e-3, 5), [0.01], Quant(1e-2, 0))
    with pytest.raises(Int8KernelError, match="zero point -1 is not 0"):
        conv_s16_params((1, 3, 3, 1), (1, 1, 1, 1), Quant(1e-3, 0), [0.01], Quant(1e-2, -1))
    with pytest.raises(Int8KernelError, match="output multiplier"):
        fully_connected_s16_params(4, (2, 4), Quant(1.0, 0), [1.0], Quant(1e-8, 0))


def test_the_16x8_kernels_refuse_bad_arguments(kernels: Int16Kernels) -> None:
    from dataclasses import replace

    x = np.zeros((2, 8), np.int16)
    filter = np.ones((3, 8), np.int8)
    params = fully_connected_s16_params(x.size, filter.shape, Quant(1e-3, 0), [0.01], Quant(1e-2, 0))
    kernels.fully_connected_s16(params, x, filter, None)
    for change, status in (
        ({"act_min": -40000}, Status.BAD_PARAMETER),
        ({"shifts": np.array([8], np.int32)}, Status.BAD_PARAMETER),
        ({"depth": 0}, Status.BAD_SHAPE),
    ):
        with pytest.raises(Int8KernelError) as refused:
            kernels.fully_connected_s16(replace(params, **change), x, filter, None)
        assert refused.value.status == status
    conv = conv_s16_params((1, 4, 4, 2), (3, 3, 3, 2), Quant(1e-3, 0), [0.01], Quant(1e-2, 0))
    image, weights = np.zeros((1, 4, 4, 2), np.int16), np.ones((3, 3, 3, 2), np.int8)
    kernels.conv_s16(conv, image, weights, None)
    with pytest.raises(Int8KernelError) as refused:
        kernels.conv_s16(replace(conv, stride=(0, 1)), image, weights, None)
    assert refused.value.status == Status.BAD_PARAMETER
