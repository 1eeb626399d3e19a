"""int8 LSTM models as the TFLite converter emits them for `keras.layers.LSTM`: one
UNIDIRECTIONAL_SEQUENCE_LSTM with the integer (8x8->16) quantization.

The operator's 24 inputs follow the TFLite schema: the input [batch, time, features] (or time-major
[time, batch, features]), per gate (input, forget, cell, output) the input weights [units, features] and the
recurrent weights [units, units], int8 symmetric per tensor; no peephole, projection or layer norm (their
slots are -1), nor, with `cifg`, the input gate's weights and bias; per gate an int32 bias at the scale
input_scale * input_weight_scale; the output state (int8 [batch, units], a variable tensor) and the cell state
(int16 [batch, units], a variable tensor with a power-of-two scale and zero point 0). Its five intermediates
are the gates' int16 Q3.12 (read by LiteRT only with layer norm) and the hidden state, quantized as the output
state. The output [batch, time, units] is quantized as the output state too, because each step's output state
is copied to it.

- `lstm_model(...)`: the bare operator with the given shapes and quantizations and random weight codes (for the
  kernel's bit-exactness tests);
- `lstm_network(seed, steps, features, units)`: the sequence model, input int8 [1, steps, features] ->
  UNIDIRECTIONAL_SEQUENCE_LSTM -> STRIDED_SLICE (the last step, as Keras' return_sequences=False converts) ->
  FULLY_CONNECTED -> SOFTMAX. Its state persists across invokes (LiteRT resets variable tensors only when it
  allocates them), so each invoke of one instance sees the previous one's state.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from ai_edge_litert import schema_py_generated as schema

from heliabuild.model.io import Model
from heliabuild.synth.builder import GraphBuilder
from heliabuild.synth.layers import Int8Graph, QTensor
from heliabuild.synth.quant import ActivationQuant, quantization_parameters

OP = schema.BuiltinOperator
GATES = ("input", "forget", "cell", "output")
GATE_QUANT = (2.0**-12, 0)
"""The intermediates' Q3.12 (LiteRT reads them only for a layer-norm LSTM)."""


@dataclass(frozen=True)
class LstmQuant:
    """The quantizations an integer LSTM is built with: input and output state (scale, zero point), the cell
    state's scale as a power of two, per gate the input and recurrent weight scales, and the cell clip (0:
    none)."""

    input: tuple[float, int]
    state: tuple[float, int]
    cell_log2: int = -11
    input_weight_scales: tuple[float, float, float, float] = (0.01, 0.01, 0.01, 0.01)
    recurrent_weight_scales: tuple[float, float, float, float] = (0.01, 0.01, 0.01, 0.01)
    cell_clip: float = 0.0


def _q(scale: float, zero_point: int) -> schema.QuantizationParametersT:
    return quantization_parameters([scale], [zero_point])


def _variable(builder: GraphBuilder, name: str, shape: tuple[int, ...], dtype: str, quant: tuple[float, int]) -> int:
    index = builder.activation(name, shape, dtype, _q(*quant))
    builder.tensors[index].isVariable = True
    return index


def add_lstm(
    builder: GraphBuilder,
    name: str,
    x: int,
    shape: tuple[int, int, int],
    units: int,
    quant: LstmQuant,
    weights: tuple[list[np.ndarray], list[np.ndarray], list[np.ndarray]],
    time_major: bool = False,
    cifg: bool = False,
) -> int:
    """Append one UNIDIRECTIONAL_SEQUENCE_LSTM reading tensor `x` of `shape`; return its output tensor. `weights`
    holds per gate the int8 input weight codes [units, features], the int8 recurrent codes [units, units] and
    the int32 bias codes [units]. With `cifg` the input gate has no weights or bias (its slots are -1; LiteRT
    takes it as 1 - forget) and the input gate's codes are not used."""
    batch = shape[1] if time_major else shape[0]
    steps = shape[0] if time_major else shape[1]
    input_w, recurrent_w, biases = weights
    inputs = [x]
    used = [k for k in range(len(GATES)) if not (cifg and k == 0)]

    def per_gate(make: Callable[[int, str], int]) -> list[int]:
        return [make(k, gate) if k in used else -1 for k, gate in enumerate(GATES)]

    gate_weights = per_gate(
        lambda k, gate: builder.constant(f"{name}/{gate}/kernel", input_w[k], _q(quant.input_weight_scales[k], 0))
    )
    gate_recurrent = per_gate(
        lambda k, gate: builder.constant(
            f"{name}/{gate}/recurrent_kernel", recurrent_w[k], _q(quant.recurrent_weight_scales[k], 0)
        )
    )
    gate_bias = per_gate(
        lambda k, gate: builder.constant(
            f"{name}/{gate}/bias", biases[k], _q(quant.input[0] * quant.input_weight_scales[k], 0)
        )
    )
    inputs += gate_weights + gate_recurrent + [-1, -1, -1] + gate_bias + [-1, -1]
    output_state = _variable(builder, f"{name}/output_state", (batch, units), "int8", quant.state)
    cell_state = _variable(builder, f"{name}/cell_state", (batch, units), "int16", (2.0**quant.cell_log2, 0))
    inputs += [output_state, cell_state, -1, -1, -1, -1]
    intermediates = [
        builder.activation(f"{name}/intermediate_{gate}", (), "int16", _q(*GATE_QUANT)) for gate in GATES
    ] + [builder.activation(f"{name}/intermediate_hidden", (), "int8", _q(*quant.state))]
    out_shape = (steps, batch, units) if time_major else (batch, steps, units)
    output = builder.activation(f"{name}/output", out_shape, "int8", _q(*quant.state))
    options = schema.UnidirectionalSequenceLSTMOptionsT()
    options.fusedActivationFunction = schema.ActivationFunctionType.TANH
    options.cellClip = float(quant.cell_clip)
    options.projClip = 0.0
    options.timeMajor = bool(time_major)
    options.asymmetricQuantizeInputs = False
    builder.operator(OP.UNIDIRECTIONAL_SEQUENCE_LSTM, inputs, [output], options, version=1)
    builder.operators[-1].intermediates = intermediates
    return output


def random_weights(
    rng: np.random.Generator, features: int, units: int, bias_range: int = 2000
) -> tuple[list[np.ndarray], list[np.ndarray], list[np.ndarray]]:
    """Uniform int8 weight codes in [-127, 127] and int32 bias codes in [-bias_range, bias_range], per gate."""
    input_w = [rng.integers(-127, 128, (units, features), dtype=np.int8) for _ in GATES]
    recurrent_w = [rng.integers(-127, 128, (units, units), dtype=np.int8) for _ in GATES]
    biases = [rng.integers(-bias_range, bias_range + 1, units).astype(np.int32) for _ in GATES]
    return input_w, recurrent_w, biases


def lstm_model(
    shape: tuple[int, int, int],
    units: int,
    quant: LstmQuant,
    seed: int = 0,
    time_major: bool = False,
    bias_range: int = 2000,
    cifg: bool = False,
) -> Model:
    """One UNIDIRECTIONAL_SEQUENCE_LSTM (module docstring) on an int8 input of `shape` ([batch, time, features],
    or [time, batch, features] with `time_major`), weights drawn from `seed`."""
    builder = GraphBuilder()
    x = builder.activation("input", shape, "int8", _q(*quant.input))
    weights = random_weights(np.random.default_rng(seed), shape[2], units, bias_range)
    output = add_lstm(builder, "lstm", x, shape, units, quant, weights, time_major, cifg)
    return builder.finish([x], [output], "heliabuild synth lstm operator", "<synth lstm>", dynamic_batch=False)


def lstm_network(seed: int = 0, steps: int = 8, features: int = 8, units: int = 16, classes: int = 4) -> Model:
    """The LSTM sequence model (module docstring), deterministic in its arguments."""
    if min(steps, features, units, classes) < 1:
        raise ValueError(f"steps, features, units and classes must be 1 or more, got {steps}, {features}, {units}")
    rng = np.random.default_rng(seed)
    g = Int8Graph(rng)
    x = g.input((1, steps, features))
    state_quant = ActivationQuant(1.0 / 128.0, 0)
    weight_scale = float(np.float32(2.0 / (127.0 * np.sqrt(features + units))))
    quant = LstmQuant(
        input=(x.quant.scale, x.quant.zero_point),
        state=(state_quant.scale, state_quant.zero_point),
        input_weight_scales=(weight_scale,) * 4,
        recurrent_weight_scales=(weight_scale,) * 4,
        cell_clip=10.0,
    )
    bias_range = int(0.5 / (x.quant.scale * weight_scale))
    weights = random_weights(rng, features, units, bias_range)
    # Keras' unit_forget_bias: the forget gate starts at bias 1, so the cell keeps state across steps and invokes.
    weights[2][1] += np.int32(round(1.0 / (x.quant.scale * weight_scale)))
    sequence = add_lstm(g.builder, "lstm", x.index, (1, steps, features), units, quant, weights)
    last = g.builder.activation("lstm/last_step", (1, units), "int8", state_quant.parameters())
    begin = g.builder.constant("lstm/strided_slice/begin", np.array([0, -1, 0], np.int32))
    end = g.builder.constant("lstm/strided_slice/end", np.array([0, 0, 0], np.int32))
    strides = g.builder.constant("lstm/strided_slice/strides", np.array([1, 1, 1], np.int32))
    options = schema.StridedSliceOptionsT()
    options.beginMask, options.endMask, options.shrinkAxisMask = 5, 7, 2
    g.builder.operator(OP.STRIDED_SLICE, [sequence, begin, end, strides], [last], options, version=2)
    # The calibration codes of the last step: an output state (TANH times a gate) mostly well inside [-1, 1].
    codes = np.clip(rng.normal(0.0, 24.0, (g.batch, units)), -128, 127).astype(np.int8)
    hidden = QTensor(last, (1, units), state_quant, codes)
    logits = g.fully_connected(hidden, classes)
    return g.finish(
        g.softmax(logits),
        description=f"heliabuild.synth lstm: int8 UNIDIRECTIONAL_SEQUENCE_LSTM, {steps} steps, {features} features, "
        f"{units} units, seed {seed}",
        name=f"<synth lstm seed={seed}>",
    )


__all__ = ["GATES", "LstmQuant", "add_lstm", "lstm_model", "lstm_network", "random_weights"]
