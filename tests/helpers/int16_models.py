"""Single-operator int16 (16x8) TFLite models, for LiteRT's reference kernels (the oracle of
heliabuild.kernels.int16): FULLY_CONNECTED and CONV_2D with int16 activations, int8 weights and int64 bias,
and int16 LOGISTIC, TANH and SOFTMAX. Quantization parameters are given explicitly, as the tests draw them."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from heliabuild.kernels.int8 import Quant
from heliabuild.kernels.int16 import SIGMOID_OUTPUT
from heliabuild.model.io import Model
from heliabuild.synth.builder import GraphBuilder
from heliabuild.synth.quant import quantization_parameters
from helpers.int8_models import ACTIVATION_CODES, OP, PADDING_CODES, _finish, _q, _weights, schema


def fully_connected_s16_model(
    input_shape: Sequence[int],
    filter: np.ndarray,
    filter_scales: np.ndarray,
    bias: np.ndarray | None,
    input_quant: Quant,
    output_quant: Quant,
    activation: str = "NONE",
) -> Model:
    builder = GraphBuilder()
    x = builder.activation("input", input_shape, "int16", _q(input_quant))
    weights = _weights(builder, filter, filter_scales, 0, bias, input_quant.scale, np.int64)
    batches = int(np.prod(input_shape)) // filter.shape[1]
    y = builder.activation("output", (batches, filter.shape[0]), "int16", _q(output_quant))
    options = schema.FullyConnectedOptionsT()
    options.fusedActivationFunction = ACTIVATION_CODES[activation]
    builder.operator(OP.FULLY_CONNECTED, [x, *weights], [y], options, version=7)
    return _finish(builder, [x], y, "fully_connected_s16")


def conv_s16_model(
    input_shape: Sequence[int],
    filter: np.ndarray,
    filter_scales: np.ndarray,
    bias: np.ndarray,
    input_quant: Quant,
    output_quant: Quant,
    output_shape: Sequence[int],
    *,
    stride: tuple[int, int],
    dilation: tuple[int, int],
    padding: str,
    activation: str,
    depthwise: bool = False,
) -> Model:
    """CONV_2D or DEPTHWISE_CONV_2D 16x8; LiteRT requires the bias of this form."""
    builder = GraphBuilder()
    x = builder.activation("input", input_shape, "int16", _q(input_quant))
    weights = _weights(builder, filter, filter_scales, 3 if depthwise else 0, bias, input_quant.scale, np.int64)
    y = builder.activation("output", output_shape, "int16", _q(output_quant))
    if depthwise:
        options = schema.DepthwiseConv2DOptionsT()
        options.depthMultiplier = filter.shape[3] // input_shape[3]
        code, version = OP.DEPTHWISE_CONV_2D, 5
    else:
        options, code, version = schema.Conv2DOptionsT(), OP.CONV_2D, 4
    options.padding = PADDING_CODES[padding]
    options.strideH, options.strideW = stride
    options.dilationHFactor, options.dilationWFactor = dilation
    options.fusedActivationFunction = ACTIVATION_CODES[activation]
    builder.operator(code, [x, *weights], [y], options, version=version)
    return _finish(builder, [x], y, "conv_s16")


_UNARY = {"LOGISTIC": (OP.LOGISTIC, 3), "TANH": (OP.TANH, 3)}


def unary_s16_model(
    operator: str, shape: Sequence[int], input_quant: Quant, output_quant: Quant = SIGMOID_OUTPUT
) -> Model:
    """int16 LOGISTIC or TANH."""
    code, version = _UNARY[operator]
    builder = GraphBuilder()
    x = builder.activation("input", shape, "int16", _q(input_quant))
    y = builder.activation("output", shape, "int16", _q(output_quant))
    builder.operator(code, [x], [y], version=version)
    return _finish(builder, [x], y, f"{operator.lower()}_s16")


def softmax_s16_model(shape: Sequence[int], input_quant: Quant, beta: float = 1.0) -> Model:
    builder = GraphBuilder()
    x = builder.activation("input", shape, "int16", _q(input_quant))
    y = builder.activation("output", shape, "int16", _q(SIGMOID_OUTPUT))
    options = schema.SoftmaxOptionsT()
    options.beta = beta
    builder.operator(OP.SOFTMAX, [x], [y], options, version=3)
    return _finish(builder, [x], y, "softmax_s16")


def int16_chain_model(seed: int = 0) -> Model:
    """A 16x8 network of every int16 kernel: CONV_2D (RELU) -> TANH and LOGISTIC -> their MUL -> RESHAPE ->
    FULLY_CONNECTED -> ADD of a constant -> SOFTMAX; weights and scales drawn from `seed`."""
    rng = np.random.default_rng(seed)
    builder = GraphBuilder()

    def tensor(name: str, shape: Sequence[int], scale: float) -> int:
        return builder.activation(name, shape, "int16", _q(Quant(scale, 0)))

    def weights(name: str, filter: np.ndarray, scales: np.ndarray, bias: np.ndarray, input_scale: float) -> list[int]:
        f = builder.constant(
            f"{name}_filter", filter.astype(np.int8), quantization_parameters(scales, [0] * scales.size, 0)
        )
        bias_scales = (np.float32(input_scale) * scales).astype(np.float32)
        b = builder.constant(
            f"{name}_bias", bias.astype(np.int64), quantization_parameters(bias_scales, [0] * scales.size, 0)
        )
        return [f, b]

    x = tensor("input", (1, 6, 6, 3), 2e-4)
    conv_filter = rng.integers(-127, 128, (4, 3, 3, 3))
    conv_scales = rng.uniform(5e-3, 2e-2, 4).astype(np.float32)
    conv = tensor("conv", (1, 6, 6, 4), 4e-4)
    options = schema.Conv2DOptionsT()
    options.padding, options.strideH, options.strideW = PADDING_CODES["SAME"], 1, 1
    options.dilationHFactor = options.dilationWFactor = 1
    options.fusedActivationFunction = ACTIVATION_CODES["RELU"]
    conv_bias = rng.integers(-(2**20), 2**20, 4)
    conv_weights = weights("conv", conv_filter, conv_scales, conv_bias, 2e-4)
    builder.operator(OP.CONV_2D, [x, *conv_weights], [conv], options, version=4)
    tanh = tensor("tanh", (1, 6, 6, 4), SIGMOID_OUTPUT.scale)
    builder.operator(OP.TANH, [conv], [tanh], version=3)
    logistic = tensor("logistic", (1, 6, 6, 4), SIGMOID_OUTPUT.scale)
    builder.operator(OP.LOGISTIC, [conv], [logistic], version=3)
    gated = tensor("gated", (1, 6, 6, 4), 2.0**-15)
    builder.operator(OP.MUL, [tanh, logistic], [gated], schema.MulOptionsT(), version=4)
    flat = tensor("flat", (1, 144), 2.0**-15)
    shape = builder.constant("shape", np.array([1, 144], np.int32))
    reshape = schema.ReshapeOptionsT()
    reshape.newShape = [1, 144]
    builder.operator(OP.RESHAPE, [gated, shape], [flat], reshape, version=1)
    fc_filter = rng.integers(-127, 128, (10, 144))
    fc_scales = np.array([0.01], np.float32)
    dense = tensor("dense", (1, 10), 1e-3)
    fc_weights = weights("dense", fc_filter, fc_scales, rng.integers(-5000, 5000, 10), 2.0**-15)
    builder.operator(OP.FULLY_CONNECTED, [flat, *fc_weights], [dense], schema.FullyConnectedOptionsT(), version=7)
    offset = builder.constant("offset", rng.integers(-3000, 3000, (1, 10)).astype(np.int16), _q(Quant(1e-3, 0)))
    shifted = tensor("shifted", (1, 10), 1.5e-3)
    add = schema.AddOptionsT()
    add.potScaleInt16 = False
    builder.operator(OP.ADD, [dense, offset], [shifted], add, version=3)
    y = tensor("output", (1, 10), SIGMOID_OUTPUT.scale)
    builder.operator(OP.SOFTMAX, [shifted], [y], schema.SoftmaxOptionsT(), version=3)
    return _finish(builder, [x], y, "int16 chain")


def conversion_s16_model(kind: str, shape: Sequence[int], quant: Quant) -> Model:
    """QUANTIZE float32 -> int16 (`kind` 'quantize') or DEQUANTIZE int16 -> float32 ('dequantize')."""
    builder = GraphBuilder()
    if kind == "quantize":
        x = builder.activation("input", shape, "float32")
        y = builder.activation("output", shape, "int16", _q(quant))
        builder.operator(OP.QUANTIZE, [x], [y], schema.QuantizeOptionsT(), version=1)
    else:
        x = builder.activation("input", shape, "int16", _q(quant))
        y = builder.activation("output", shape, "float32")
        builder.operator(OP.DEQUANTIZE, [x], [y], schema.DequantizeOptionsT(), version=1)
    return _finish(builder, [x], y, f"{kind}_s16")
