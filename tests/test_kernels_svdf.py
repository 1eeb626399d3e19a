"""The integer SVDF C kernel, byte for byte against LiteRT's reference kernels (BUILTIN_REF), through several
invokes of one instance: the activation state the kernel leaves is the state LiteRT carries."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from ai_edge_litert.interpreter import Interpreter, OpResolverType
from hypothesis import given, settings
from hypothesis import strategies as st

from heliabuild.kernels.int8 import Int8KernelError, Quant
from heliabuild.kernels.native import Status, load_host_library
from heliabuild.kernels.svdf import SvdfKernels, svdf_params
from heliabuild.model import serialize
from heliabuild.synth.svdf import SvdfQuant, random_weights, svdf_model


def _f32(low: float, high: float) -> st.SearchStrategy[float]:
    return st.floats(low, high).map(lambda v: float(np.float32(v)))


@pytest.fixture(scope="module")
def kernels(host_kernel_library: Path) -> SvdfKernels:
    return SvdfKernels(load_host_library(host_kernel_library))


@settings(max_examples=150, deadline=None)
@given(
    batches=st.integers(1, 3),
    input_size=st.integers(1, 12),
    units=st.integers(1, 5),
    rank=st.integers(1, 3),
    memory=st.integers(1, 8),
    input_quant=st.tuples(_f32(0.002, 0.1), st.integers(-128, 127)),
    output_quant=st.tuples(_f32(0.005, 1.0), st.integers(-128, 127)),
    feature_scale=_f32(0.0005, 0.05),
    time_scale=_f32(1e-5, 1e-3),
    state_scale=_f32(1e-4, 2e-2),
    bias=st.booleans(),
    seed=st.integers(0, 2**32 - 1),
)
def test_the_integer_svdf_is_bit_exact_through_invokes_that_carry_its_state(
    kernels: SvdfKernels,
    batches: int,
    input_size: int,
    units: int,
    rank: int,
    memory: int,
    input_quant: tuple[float, int],
    output_quant: tuple[float, int],
    feature_scale: float,
    time_scale: float,
    state_scale: float,
    bias: bool,
    seed: int,
) -> None:
    filters = units * rank
    quant = SvdfQuant(input_quant, output_quant, feature_scale, time_scale, state_scale)
    interpreter = Interpreter(
        model_content=bytes(serialize(svdf_model(batches, input_size, filters, memory, rank, quant, seed, bias))),
        experimental_op_resolver_type=OpResolverType.BUILTIN_REF,
    )
    interpreter.allocate_tensors()
    feature, time, bias_codes = random_weights(np.random.default_rng(seed), input_size, filters, memory, rank, bias)
    params = svdf_params(
        Quant(*input_quant), feature_scale, Quant(time_scale, 0), Quant(state_scale, 0), Quant(*output_quant), rank
    )
    state = np.zeros((batches, filters * memory), np.int16)  # LiteRT resets an int16 variable tensor to 0
    rng = np.random.default_rng(seed)
    for _ in range(memory + 2):
        x = rng.integers(-128, 128, (batches, input_size), dtype=np.int8)
        interpreter.set_tensor(interpreter.get_input_details()[0]["index"], x)
        interpreter.invoke()
        expected = interpreter.get_tensor(interpreter.get_output_details()[0]["index"])
        assert kernels.svdf(params, x, feature, time, bias_codes, state).tobytes() == expected.tobytes()


def test_litert_takes_only_relu_and_does_not_apply_it(kernels: SvdfKernels) -> None:
    """LiteRT's integer SVDF refuses NONE at invoke, and with RELU gives outputs below the zero point."""
    quant = SvdfQuant((0.02, 0), (0.05, 10), 0.02, 5e-4, 0.005)
    for activation in ("NONE", "RELU"):
        interpreter = Interpreter(
            model_content=bytes(serialize(svdf_model(1, 8, 8, 4, 1, quant, 3, activation=activation))),
            experimental_op_resolver_type=OpResolverType.BUILTIN_REF,
        )
        interpreter.allocate_tensors()
        interpreter.set_tensor(interpreter.get_input_details()[0]["index"], np.full((1, 8), 90, np.int8))
        if activation == "NONE":
            with pytest.raises(RuntimeError, match="kTfLiteActRelu"):
                interpreter.invoke()
            with pytest.raises(Int8KernelError, match="takes only RELU"):
                svdf_params(Quant(0.02, 0), 0.02, Quant(5e-4, 0), Quant(0.005, 0), Quant(0.05, 10), 1, activation)
            continue
        interpreter.invoke()
        expected = interpreter.get_tensor(interpreter.get_output_details()[0]["index"])
        assert expected.min() < 10
        feature, time, bias = random_weights(np.random.default_rng(3), 8, 8, 4, 1)
        params = svdf_params(Quant(0.02, 0), 0.02, Quant(5e-4, 0), Quant(0.005, 0), Quant(0.05, 10), 1)
        state = np.zeros((1, 32), np.int16)
        assert kernels.svdf(params, np.full((1, 8), 90, np.int8), feature, time, bias, state).tobytes() == (
            expected.tobytes()
        )


def test_the_svdf_check_refuses_bad_arguments_and_writes_nothing(kernels: SvdfKernels) -> None:
    with pytest.raises(Int8KernelError, match="zero point 0"):
        svdf_params(Quant(0.02, 0), 0.02, Quant(5e-4, 0), Quant(0.005, 3), Quant(0.05, 10), 1)
    feature, time, bias = random_weights(np.random.default_rng(0), 4, 6, 3, 2)
    params = svdf_params(Quant(0.02, 0), 0.02, Quant(5e-4, 0), Quant(0.005, 0), Quant(0.05, 10), 4)
    state = np.full((1, 18), 5, np.int16)
    with pytest.raises(Int8KernelError) as refused:  # 6 filters are not a multiple of rank 4
        kernels.svdf(params, np.zeros((1, 4), np.int8), feature, time, bias, state)
    assert refused.value.status == Status.BAD_SHAPE
    assert state.tolist() == [[5] * 18]
