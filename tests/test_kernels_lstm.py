"""The integer UNIDIRECTIONAL_SEQUENCE_LSTM C kernel, byte for byte against LiteRT's reference kernels
(BUILTIN_REF), through several invokes of one instance: the state the kernel leaves is the state LiteRT
carries."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from ai_edge_litert.interpreter import Interpreter, OpResolverType
from hypothesis import given, settings
from hypothesis import strategies as st

from heliabuild.kernels.int8 import Int8KernelError, Quant
from heliabuild.kernels.lstm import LstmKernels, cell_log2, lstm_params
from heliabuild.kernels.native import Status, load_host_library
from heliabuild.model import serialize
from heliabuild.synth.lstm import LstmQuant, lstm_model, random_weights

F32 = st.floats(0.002, 0.05).map(lambda v: float(np.float32(v)))
GATE_SCALES = st.tuples(F32, F32, F32, F32)


@pytest.fixture(scope="module")
def kernels(host_kernel_library: Path) -> LstmKernels:
    return LstmKernels(load_host_library(host_kernel_library))


def _interpreter(model: object) -> Interpreter:
    interpreter = Interpreter(
        model_content=bytes(serialize(model)), experimental_op_resolver_type=OpResolverType.BUILTIN_REF
    )
    interpreter.allocate_tensors()
    return interpreter


@settings(max_examples=120, deadline=None)
@given(
    batches=st.integers(1, 3),
    steps=st.integers(1, 5),
    features=st.integers(1, 9),
    units=st.integers(1, 10),
    input_quant=st.tuples(F32, st.integers(-128, 127)),
    state_quant=st.tuples(st.floats(0.002, 0.03).map(lambda v: float(np.float32(v))), st.integers(-40, 40)),
    log2=st.integers(-15, -9),
    input_scales=GATE_SCALES,
    recurrent_scales=GATE_SCALES,
    clip=st.sampled_from([0.0, 0.5, 3.0, 10.0]),
    time_major=st.booleans(),
    bias_range=st.sampled_from([0, 2000, 200000]),
    cifg=st.booleans(),
    seed=st.integers(0, 2**32 - 1),
)
def test_the_integer_lstm_is_bit_exact_through_invokes_that_carry_its_state(
    kernels: LstmKernels,
    batches: int,
    steps: int,
    features: int,
    units: int,
    input_quant: tuple[float, int],
    state_quant: tuple[float, int],
    log2: int,
    input_scales: tuple[float, float, float, float],
    recurrent_scales: tuple[float, float, float, float],
    clip: float,
    time_major: bool,
    bias_range: int,
    cifg: bool,
    seed: int,
) -> None:
    """With `cifg` the input gate has no weights or bias (LiteRT takes it as 1 - forget)."""
    quant = LstmQuant(input_quant, state_quant, log2, input_scales, recurrent_scales, clip)
    shape = (steps, batches, features) if time_major else (batches, steps, features)
    interpreter = _interpreter(lstm_model(shape, units, quant, seed, time_major, bias_range, cifg))
    codes = random_weights(np.random.default_rng(seed), features, units, bias_range)
    input_w, recurrent_w, biases = ([None, *gates[1:]] if cifg else gates for gates in codes)
    params = lstm_params(
        Quant(*input_quant), Quant(*state_quant), 2.0**log2, Quant(*state_quant),
        [None if w is None else (w, s) for w, s in zip(input_w, input_scales, strict=True)],
        [None if w is None else (w, s) for w, s in zip(recurrent_w, recurrent_scales, strict=True)],
        biases, clip,
    )  # fmt: skip
    # LiteRT resets a variable int8 tensor to its zero point and an int16 one to 0 when it allocates them.
    output_state = np.full((batches, units), state_quant[1], np.int8)
    cell_state = np.zeros((batches, units), np.int16)
    rng = np.random.default_rng(seed)
    for _ in range(3):
        x = rng.integers(-128, 128, shape, dtype=np.int8)
        interpreter.set_tensor(interpreter.get_input_details()[0]["index"], x)
        interpreter.invoke()
        expected = interpreter.get_tensor(interpreter.get_output_details()[0]["index"])
        found = kernels.lstm(params, x, input_w, recurrent_w, output_state, cell_state, time_major)
        assert found.tobytes() == expected.tobytes()


def test_the_gates_saturate_as_litert_s_do(kernels: LstmKernels) -> None:
    """Scales large enough to drive every gate and the cell state to their int16 limits."""
    for seed in range(6):
        quant = LstmQuant((0.05, 0), (0.03, 0), -15, (0.05,) * 4, (0.05,) * 4, 0.0)
        interpreter = _interpreter(lstm_model((1, 6, 8), 6, quant, seed, bias_range=200000))
        input_w, recurrent_w, biases = random_weights(np.random.default_rng(seed), 8, 6, 200000)
        params = lstm_params(
            Quant(0.05, 0), Quant(0.03, 0), 2.0**-15, Quant(0.03, 0),
            list(zip(input_w, quant.input_weight_scales, strict=True)),
            list(zip(recurrent_w, quant.recurrent_weight_scales, strict=True)), biases,
        )  # fmt: skip
        output_state, cell_state = np.zeros((1, 6), np.int8), np.zeros((1, 6), np.int16)
        x = np.random.default_rng(seed).integers(-128, 128, (1, 6, 8), dtype=np.int8)
        interpreter.set_tensor(interpreter.get_input_details()[0]["index"], x)
        interpreter.invoke()
        expected = interpreter.get_tensor(interpreter.get_output_details()[0]["index"])
        assert kernels.lstm(params, x, input_w, recurrent_w, output_state, cell_state).tobytes() == expected.tobytes()
        assert np.abs(cell_state.astype(np.int32)).max() >= 32000


@pytest.mark.parametrize(
    ("scale", "message"),
    [
        (3e-4, "is not a power of two"),
        (2.0**-8, r"2\^-8 is outside 2\^-15..2\^-9"),
        (2.0**-16, r"2\^-16 is outside"),
        (0.0, "is not a power of two"),
    ],
)
def test_a_cell_scale_the_kernel_cannot_read_is_refused(scale: float, message: str) -> None:
    with pytest.raises(Int8KernelError, match=message):
        cell_log2(scale)


def test_the_check_refuses_bad_arguments_and_writes_nothing(kernels: LstmKernels) -> None:
    input_w, recurrent_w, biases = random_weights(np.random.default_rng(0), 3, 4)
    scales = [(w, 0.01) for w in input_w]
    params = lstm_params(Quant(0.02, 0), Quant(0.01, 0), 2.0**-11, Quant(0.01, 0), scales,
                         [(u, 0.01) for u in recurrent_w], biases)  # fmt: skip
    state = np.full((1, 4), 7, np.int8)
    cell = np.full((1, 4), 9, np.int16)
    x = np.zeros((1, 2, 3), np.int8)
    bad = type(params)(**{**vars(params), "cell_log2": -8})
    with pytest.raises(Int8KernelError) as refused:
        kernels.lstm(bad, x, input_w, recurrent_w, state, cell)
    assert refused.value.status == Status.BAD_PARAMETER
    assert state.tolist() == [[7] * 4] and cell.tolist() == [[9] * 4]
    bad = type(params)(**{**vars(params), "hidden_zero_point": 128})
    with pytest.raises(Int8KernelError):
        kernels.lstm(bad, x, input_w, recurrent_w, state, cell)
    with pytest.raises(Int8KernelError, match="int8 and int16"):
        kernels.lstm(params, x, input_w, recurrent_w, state.astype(np.int16), cell)
