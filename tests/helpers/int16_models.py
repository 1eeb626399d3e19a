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
) -> Model:
    """CONV_2D 16x8; LiteRT requires the bias of this form."""
    builder = GraphBuilder()
    x = builder.activation("input", input_shape, "int16", _q(input_quant))
    weights = _weights(builder, filter, filter_scales, 0, bias, input_quant.scale, np.int64)
    y = builder.activation("output", output_shape, "int16", _q(output_quant))
    options = schema.Conv2DOptionsT()
    options.padding = PADDING_CODES[padding]
    options.strideH, options.strideW = stride
    options.dilationHFactor, options.dilationWFactor = dilation
    options.fusedActivationFunction = ACTIVATION_CODES[activation]
    builder.operator(OP.CONV_2D, [x, *weights], [y], options, version=4)
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
