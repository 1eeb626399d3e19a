"""int8 SVDF models as the TFLite converter emits them for streaming keyword spotting: one SVDF in TFLite's
integer form.

Inputs by the schema: the input int8 [batch, input_size], weights_feature int8 [filters, input_size] (symmetric,
per tensor), weights_time int16 [filters, memory_size] (zero point 0), an optional int32 bias [units] at the
scale state_scale * time_scale, and the activation state, an int16 variable tensor [batch, filters *
memory_size] with zero point 0. The output is int8 [batch, units], units = filters / rank.

- `svdf_model(...)`: the bare operator with the given shapes and quantizations and random weight codes (for the
  kernel's bit-exactness tests);
- `svdf_network(seed, ...)`: a streaming keyword model: input [1, features] (one frame) -> SVDF (RELU) ->
  FULLY_CONNECTED -> SOFTMAX. Each invoke pushes one frame into the state, so the outputs depend on the frames
  of earlier invokes.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from ai_edge_litert import schema_py_generated as schema

from heliabuild.model.io import Model
from heliabuild.synth.builder import GraphBuilder
from heliabuild.synth.layers import Int8Graph, QTensor
from heliabuild.synth.quant import ActivationQuant, quantization_parameters

OP = schema.BuiltinOperator
ACTIVATIONS = {"NONE": schema.ActivationFunctionType.NONE, "RELU": schema.ActivationFunctionType.RELU}


@dataclass(frozen=True)
class SvdfQuant:
    """The quantizations an integer SVDF is built with: input and output (scale, zero point), the feature and
    time weights' scales and the activation state's scale (its zero point is 0)."""

    input: tuple[float, int]
    output: tuple[float, int]
    feature_scale: float = 0.01
    time_scale: float = 1e-4
    state_scale: float = 0.002


def _q(scale: float, zero_point: int) -> schema.QuantizationParametersT:
    return quantization_parameters([scale], [zero_point])


def add_svdf(
    builder: GraphBuilder,
    name: str,
    x: int,
    batches: int,
    filters: int,
    memory: int,
    rank: int,
    quant: SvdfQuant,
    weights: tuple[np.ndarray, np.ndarray, np.ndarray | None],
    activation: str = "RELU",
) -> int:
    """Append one SVDF reading tensor `x`; return its output tensor. `weights` is (weights_feature int8 codes,
    weights_time int16 codes, int32 bias codes or None)."""
    feature, time, bias = weights
    feature_t = builder.constant(f"{name}/weights_feature", feature, _q(quant.feature_scale, 0))
    time_t = builder.constant(f"{name}/weights_time", time, _q(quant.time_scale, 0))
    bias_t = -1 if bias is None else builder.constant(f"{name}/bias", bias, _q(quant.state_scale * quant.time_scale, 0))
    state = builder.activation(
        f"{name}/activation_state", (batches, filters * memory), "int16", _q(quant.state_scale, 0)
    )
    builder.tensors[state].isVariable = True
    output = builder.activation(f"{name}/output", (batches, filters // rank), "int8", _q(*quant.output))
    options = schema.SVDFOptionsT()
    options.rank = rank
    options.fusedActivationFunction = ACTIVATIONS[activation]
    options.asymmetricQuantizeInputs = False
    builder.operator(OP.SVDF, [x, feature_t, time_t, bias_t, state], [output], options, version=1)
    return output


def random_weights(
    rng: np.random.Generator, input_size: int, filters: int, memory: int, rank: int, bias: bool = True
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """Uniform int8 feature codes, int16 time codes and int32 bias codes."""
    feature = rng.integers(-127, 128, (filters, input_size), dtype=np.int8)
    time = rng.integers(-32767, 32768, (filters, memory), dtype=np.int16)
    codes = rng.integers(-(2**20), 2**20, filters // rank).astype(np.int32) if bias else None
    return feature, time, codes


def svdf_model(
    batches: int,
    input_size: int,
    filters: int,
    memory: int,
    rank: int,
    quant: SvdfQuant,
    seed: int = 0,
    bias: bool = True,
    activation: str = "RELU",
) -> Model:
    """One SVDF (module docstring) on an int8 input [batches, input_size], weights drawn from `seed`."""
    builder = GraphBuilder()
    x = builder.activation("input", (batches, input_size), "int8", _q(*quant.input))
    weights = random_weights(np.random.default_rng(seed), input_size, filters, memory, rank, bias)
    output = add_svdf(builder, "svdf", x, batches, filters, memory, rank, quant, weights, activation)
    return builder.finish([x], [output], "heliabuild synth svdf operator", "<synth svdf>", dynamic_batch=False)


def svdf_network(seed: int = 0, features: int = 16, filters: int = 16, memory: int = 8, classes: int = 4) -> Model:
    """The streaming keyword model (module docstring), deterministic in its arguments."""
    rng = np.random.default_rng(seed)
    g = Int8Graph(rng)
    x = g.input((1, features))
    output_quant = ActivationQuant(1.0 / 64.0, -128)
    quant = SvdfQuant(
        input=(x.quant.scale, x.quant.zero_point),
        output=(output_quant.scale, output_quant.zero_point),
        feature_scale=float(np.float32(1.0 / (127.0 * np.sqrt(features)))),
        time_scale=float(np.float32(1.0 / (32767.0 * np.sqrt(memory)))),
        state_scale=float(np.float32(4.0 / 32767.0)),
    )
    feature = rng.integers(-127, 128, (filters, features), dtype=np.int8)
    time = rng.integers(-32767, 32768, (filters, memory), dtype=np.int16)
    bias = rng.integers(-(2**22), 2**22, filters).astype(np.int32)
    hidden_index = add_svdf(g.builder, "svdf", x.index, 1, filters, memory, 1, quant, (feature, time, bias))
    codes = np.clip(rng.normal(-64.0, 40.0, (g.batch, filters)), -128, 127).astype(np.int8)
    hidden = QTensor(hidden_index, (1, filters), output_quant, codes)
    return g.finish(
        g.softmax(g.fully_connected(hidden, classes)),
        description=f"heliabuild.synth svdf: int8 streaming SVDF, {features} features, {filters} filters, memory "
        f"{memory}, seed {seed}",
        name=f"<synth svdf seed={seed}>",
    )
