"""The integer LSTM and SVDF kernels on the target: seeded random cases of each (CASES_PER_OPERATOR), their
outputs taken from LiteRT's reference kernels, replayed by one Cortex-M55 firmware on QEMU mps3-an547; every
output must match LiteRT byte for byte there too (tests/test_kernels_int8_m55.py's replay). The replay starts
each call from zeroed state arrays, LiteRT's reset value when the output state's zero point is 0; the state
carried across invokes on the target is tested through the generated module (tests/test_codegen_qemu_state.py)."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

import numpy as np
from ai_edge_litert.interpreter import Interpreter, OpResolverType
from test_kernels_int8_m55 import replay_on_cortex_m55
from test_kernels_int8_math_m55 import MathEmitter

from heliabuild.kernels import lstm, svdf
from heliabuild.kernels.int8 import Quant
from heliabuild.kernels.native import load_host_library
from heliabuild.model import serialize
from heliabuild.model.io import Model
from heliabuild.synth.lstm import LstmQuant, lstm_model
from heliabuild.synth.lstm import random_weights as lstm_weights
from heliabuild.synth.svdf import SvdfQuant, svdf_model
from heliabuild.synth.svdf import random_weights as svdf_weights


class StateEmitter(MathEmitter):
    STRUCT_NAMES: ClassVar[dict[type, str]] = {
        **MathEmitter.STRUCT_NAMES,
        lstm.LstmArgs: "helia_lstm_s8_args",
        svdf.SvdfArgs: "helia_svdf_s8_args",
    }


class Kernels(lstm.LstmKernels, svdf.SvdfKernels):
    _SIGNATURES: ClassVar[dict[str, tuple[list[object], object]]] = {
        **lstm.LstmKernels._SIGNATURES,
        **svdf.SvdfKernels._SIGNATURES,
    }


def _first_invoke(model: Model, x: np.ndarray) -> np.ndarray:
    interpreter = Interpreter(
        model_content=bytes(serialize(model)), experimental_op_resolver_type=OpResolverType.BUILTIN_REF
    )
    interpreter.allocate_tensors()
    interpreter.set_tensor(interpreter.get_input_details()[0]["index"], x)
    interpreter.invoke()
    return interpreter.get_tensor(interpreter.get_output_details()[0]["index"]).copy()


def _scale(rng: np.random.Generator, low: float, high: float) -> float:
    return float(np.float32(rng.uniform(low, high)))


def case_lstm(k: Kernels, rng: np.random.Generator) -> np.ndarray:
    batches, steps, features, units = (int(v) for v in rng.integers(1, [3, 6, 9, 9]))
    seed, log2, time_major = int(rng.integers(2**31)), int(rng.integers(-15, -8)), bool(rng.integers(2))
    input_scales = tuple(_scale(rng, 0.002, 0.05) for _ in range(4))
    recurrent_scales = tuple(_scale(rng, 0.002, 0.05) for _ in range(4))
    input_q = (_scale(rng, 0.005, 0.05), int(rng.integers(-128, 128)))
    state_q = (_scale(rng, 0.002, 0.03), 0)
    clip = float(rng.choice([0.0, 3.0]))
    quant = LstmQuant(input_q, state_q, log2, input_scales, recurrent_scales, clip)  # type: ignore[arg-type]
    shape = (steps, batches, features) if time_major else (batches, steps, features)
    x = rng.integers(-128, 128, shape, dtype=np.int8)
    expected = _first_invoke(lstm_model(shape, units, quant, seed, time_major), x)
    input_w, recurrent_w, biases = lstm_weights(np.random.default_rng(seed), features, units)
    params = lstm.lstm_params(
        Quant(*input_q), Quant(*state_q), 2.0**log2, Quant(*state_q),
        list(zip(input_w, input_scales, strict=True)), list(zip(recurrent_w, recurrent_scales, strict=True)),
        biases, clip,
    )  # fmt: skip
    output_state, cell_state = np.zeros((batches, units), np.int8), np.zeros((batches, units), np.int16)
    k.lstm(params, x, input_w, recurrent_w, output_state, cell_state, time_major)
    return expected


def case_svdf(k: Kernels, rng: np.random.Generator) -> np.ndarray:
    batches, input_size, units, rank, memory = (int(v) for v in rng.integers(1, [3, 13, 6, 4, 9]))
    filters, seed, bias = units * rank, int(rng.integers(2**31)), bool(rng.integers(2))
    quant = SvdfQuant(
        (_scale(rng, 0.002, 0.1), int(rng.integers(-128, 128))),
        (_scale(rng, 0.005, 1.0), int(rng.integers(-128, 128))),
        _scale(rng, 5e-4, 0.05), _scale(rng, 1e-5, 1e-3), _scale(rng, 1e-4, 2e-2),
    )  # fmt: skip
    x = rng.integers(-128, 128, (batches, input_size), dtype=np.int8)
    expected = _first_invoke(svdf_model(batches, input_size, filters, memory, rank, quant, seed, bias), x)
    feature, time, bias_codes = svdf_weights(np.random.default_rng(seed), input_size, filters, memory, rank, bias)
    params = svdf.svdf_params(
        Quant(*quant.input), quant.feature_scale, Quant(quant.time_scale, 0), Quant(quant.state_scale, 0),
        Quant(*quant.output), rank,
    )  # fmt: skip
    k.svdf(params, x, feature, time, bias_codes, np.zeros((batches, filters * memory), np.int16))
    return expected


def test_the_lstm_and_svdf_kernels_are_bit_exact_on_the_cortex_m55(
    tmp_path: Path, host_kernel_library: Path, firmware_library: Path
) -> None:
    kernels = Kernels(load_host_library(host_kernel_library))
    replay_on_cortex_m55(
        kernels, {"lstm": case_lstm, "svdf": case_svdf}, StateEmitter(), tmp_path, firmware_library, 20261203
    )
