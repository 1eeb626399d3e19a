"""Single-operator int8 TFLite models and LiteRT's reference kernels, the oracle of the int8 C kernels.

Each builder returns a `heliabuild.model.io.Model` with one operator, its
constants (weights, biases, paddings, shapes) inside, and the graph inputs in
the order `run_reference` takes them. Quantization parameters are given
explicitly (the tests draw them), not calibrated.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from ai_edge_litert import schema_py_generated as schema
from ai_edge_litert.interpreter import Interpreter, OpResolverType

from heliabuild.kernels.int8 import Quant
from heliabuild.model import serialize
from heliabuild.model.io import Model
from heliabuild.synth.builder import GraphBuilder
from heliabuild.synth.quant import quantization_parameters

OP = schema.BuiltinOperator
ACTIVATION_CODES = {
    "NONE": schema.ActivationFunctionType.NONE,
    "RELU": schema.ActivationFunctionType.RELU,
    "RELU_N1_TO_1": schema.ActivationFunctionType.RELU_N1_TO_1,
    "RELU6": schema.ActivationFunctionType.RELU6,
}
PADDING_CODES = {"SAME": schema.Padding.SAME, "VALID": schema.Padding.VALID}


def run_reference(model: Model, inputs: Sequence[np.ndarray]) -> np.ndarray:
    """Invoke `model` in LiteRT with the reference kernels (BUILTIN_REF) and return output 0."""
    return run_all(model, inputs)[0]


def run_all(model: Model, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
    """Every output of `model` run by LiteRT's reference kernels (BUILTIN_REF)."""
    interpreter = Interpreter(
        model_content=bytes(serialize(model)), experimental_op_resolver_type=OpResolverType.BUILTIN_REF
    )
    interpreter.allocate_tensors()
    for detail, array in zip(interpreter.get_input_details(), inputs, strict=True):
        interpreter.set_tensor(detail["index"], np.ascontiguousarray(array))
    interpreter.invoke()
    return [interpreter.get_tensor(detail["index"]).copy() for detail in interpreter.get_output_details()]


def _q(quant: Quant) -> schema.QuantizationParametersT:
    return quantization_parameters([quant.scale], [quant.zero_point])


def _finish(builder: GraphBuilder, inputs: list[int], output: int, what: str) -> Model:
    return builder.finish(inputs, [output], description=f"test int8 {what}", name=f"<int8 {what}>", dynamic_batch=False)


def _weights(
    builder: GraphBuilder,
    filter: np.ndarray,
    filter_scales: np.ndarray,
    axis: int,
    bias: np.ndarray | None,
    input_scale: float,
    bias_dtype: type = np.int32,
) -> list[int]:
    scales = np.asarray(filter_scales, np.float32).reshape(-1)
    f = builder.constant("filter", filter.astype(np.int8), quantization_parameters(scales, [0] * scales.size, axis))
    if bias is None:
        return [f]
    bias_scales = (np.float32(input_scale) * scales).astype(np.float32)
    b = builder.constant("bias", bias.astype(bias_dtype), quantization_parameters(bias_scales, [0] * scales.size, 0))
    return [f, b]


def fully_connected_model(
    input_shape: Sequence[int],
    filter: np.ndarray,
    filter_scales: np.ndarray,
    bias: np.ndarray | None,
    input_quant: Quant,
    output_quant: Quant,
    activation: str = "NONE",
) -> Model:
    builder = GraphBuilder()
    x = builder.activation("input", input_shape, "int8", _q(input_quant))
    weights = _weights(builder, filter, filter_scales, 0, bias, input_quant.scale)
    batches = int(np.prod(input_shape)) // filter.shape[1]
    y = builder.activation("output", (batches, filter.shape[0]), "int8", _q(output_quant))
    options = schema.FullyConnectedOptionsT()
    options.fusedActivationFunction = ACTIVATION_CODES[activation]
    builder.operator(OP.FULLY_CONNECTED, [x, *weights], [y], options, version=4)
    return _finish(builder, [x], y, "fully_connected")


def conv_model(
    input_shape: Sequence[int],
    filter: np.ndarray,
    filter_scales: np.ndarray,
    bias: np.ndarray | None,
    input_quant: Quant,
    output_quant: Quant,
    output_shape: Sequence[int],
    *,
    stride: tuple[int, int],
    dilation: tuple[int, int],
    padding: str,
    activation: str,
    depthwise: bool,
) -> Model:
    builder = GraphBuilder()
    x = builder.activation("input", input_shape, "int8", _q(input_quant))
    weights = _weights(builder, filter, filter_scales, 3 if depthwise else 0, bias, input_quant.scale)
    y = builder.activation("output", output_shape, "int8", _q(output_quant))
    if depthwise:
        options = schema.DepthwiseConv2DOptionsT()
        options.depthMultiplier = filter.shape[3] // input_shape[3]
        code = OP.DEPTHWISE_CONV_2D
    else:
        options = schema.Conv2DOptionsT()
        code = OP.CONV_2D
    options.padding = PADDING_CODES[padding]
    options.strideH, options.strideW = stride
    options.dilationHFactor, options.dilationWFactor = dilation
    options.fusedActivationFunction = ACTIVATION_CODES[activation]
    builder.operator(code, [x, *weights], [y], options, version=3)
    return _finish(builder, [x], y, "conv")


def pool_model(
    kind: str,
    input_shape: Sequence[int],
    output_shape: Sequence[int],
    quant: Quant,
    *,
    filter_size: tuple[int, int],
    stride: tuple[int, int],
    padding: str,
    activation: str,
) -> Model:
    builder = GraphBuilder()
    x = builder.activation("input", input_shape, "int8", _q(quant))
    y = builder.activation("output", output_shape, "int8", _q(quant))
    options = schema.Pool2DOptionsT()
    options.padding = PADDING_CODES[padding]
    options.strideH, options.strideW = stride
    options.filterHeight, options.filterWidth = filter_size
    options.fusedActivationFunction = ACTIVATION_CODES[activation]
    code = OP.AVERAGE_POOL_2D if kind == "average" else OP.MAX_POOL_2D
    builder.operator(code, [x], [y], options, version=2)
    return _finish(builder, [x], y, f"{kind}_pool")


def binary_model(
    kind: str,
    shape1: Sequence[int],
    shape2: Sequence[int],
    quant1: Quant,
    quant2: Quant,
    output_quant: Quant,
    activation: str = "NONE",
) -> Model:
    builder = GraphBuilder()
    a = builder.activation("input1", shape1, "int8", _q(quant1))
    b = builder.activation("input2", shape2, "int8", _q(quant2))
    y = builder.activation("output", np.broadcast_shapes(tuple(shape1), tuple(shape2)), "int8", _q(output_quant))
    options = schema.AddOptionsT() if kind == "add" else schema.MulOptionsT()
    options.fusedActivationFunction = ACTIVATION_CODES[activation]
    builder.operator(OP.ADD if kind == "add" else OP.MUL, [a, b], [y], options, version=2)
    return _finish(builder, [a, b], y, kind)


def reshape_model(input_shape: Sequence[int], output_shape: Sequence[int], quant: Quant) -> Model:
    builder = GraphBuilder()
    x = builder.activation("input", input_shape, "int8", _q(quant))
    shape = builder.constant("shape", np.array(output_shape, np.int32))
    y = builder.activation("output", output_shape, "int8", _q(quant))
    options = schema.ReshapeOptionsT()
    options.newShape = [int(d) for d in output_shape]
    builder.operator(OP.RESHAPE, [x, shape], [y], options, version=1)
    return _finish(builder, [x], y, "reshape")


def pad_model(input_shape: Sequence[int], paddings: Sequence[tuple[int, int]], quant: Quant) -> Model:
    builder = GraphBuilder()
    x = builder.activation("input", input_shape, "int8", _q(quant))
    pads = builder.constant("paddings", np.array(paddings, np.int32).reshape(len(input_shape), 2))
    output_shape = [d + b + a for d, (b, a) in zip(input_shape, paddings, strict=True)]
    y = builder.activation("output", output_shape, "int8", _q(quant))
    builder.operator(OP.PAD, [x, pads], [y], schema.PadOptionsT(), version=2)
    return _finish(builder, [x], y, "pad")


def concatenation_model(
    shapes: Sequence[Sequence[int]], axis: int, quants: Sequence[Quant], output_quant: Quant
) -> Model:
    builder = GraphBuilder()
    inputs = [
        builder.activation(f"input{i}", s, "int8", _q(q)) for i, (s, q) in enumerate(zip(shapes, quants, strict=True))
    ]
    output_shape = list(shapes[0])
    output_shape[axis] = sum(s[axis] for s in shapes)
    y = builder.activation("output", output_shape, "int8", _q(output_quant))
    options = schema.ConcatenationOptionsT()
    options.axis = axis
    builder.operator(OP.CONCATENATION, inputs, [y], options, version=2)
    return _finish(builder, inputs, y, "concatenation")


def quantize_model(shape: Sequence[int], quant: Quant) -> Model:
    builder = GraphBuilder()
    x = builder.activation("input", shape, "float32")
    y = builder.activation("output", shape, "int8", _q(quant))
    builder.operator(OP.QUANTIZE, [x], [y], schema.QuantizeOptionsT(), version=2)
    return _finish(builder, [x], y, "quantize")


def dequantize_model(shape: Sequence[int], quant: Quant) -> Model:
    builder = GraphBuilder()
    x = builder.activation("input", shape, "int8", _q(quant))
    y = builder.activation("output", shape, "float32")
    builder.operator(OP.DEQUANTIZE, [x], [y], schema.DequantizeOptionsT(), version=2)
    return _finish(builder, [x], y, "dequantize")


def softmax_model(shape: Sequence[int], input_quant: Quant, beta: float = 1.0) -> Model:
    builder = GraphBuilder()
    x = builder.activation("input", shape, "int8", _q(input_quant))
    y = builder.activation("output", shape, "int8", _q(Quant(1.0 / 256.0, -128)))
    options = schema.SoftmaxOptionsT()
    options.beta = beta
    builder.operator(OP.SOFTMAX, [x], [y], options, version=2)
    return _finish(builder, [x], y, "softmax")


UNARY_CODES = {"RELU": OP.RELU, "RELU6": OP.RELU6, "RELU_N1_TO_1": OP.RELU_N1_TO_1, "QUANTIZE": OP.QUANTIZE}


def requantize_model(kind: str, shape: Sequence[int], input_quant: Quant, output_quant: Quant) -> Model:
    """One standalone RELU, RELU6 or RELU_N1_TO_1, or an int8 -> int8 QUANTIZE (`kind`)."""
    builder = GraphBuilder()
    x = builder.activation("input", shape, "int8", _q(input_quant))
    y = builder.activation("output", shape, "int8", _q(output_quant))
    options = schema.QuantizeOptionsT() if kind == "QUANTIZE" else None
    builder.operator(UNARY_CODES[kind], [x], [y], options, version=1 if kind == "RELU_N1_TO_1" else 2)
    return _finish(builder, [x], y, kind.lower())


def reshape_like_model(kind: str, input_shape: Sequence[int], output_shape: Sequence[int], quant: Quant) -> Model:
    """One SQUEEZE (squeezing every axis of extent 1 the output drops) or EXPAND_DIMS (a constant axis)."""
    builder = GraphBuilder()
    x = builder.activation("input", input_shape, "int8", _q(quant))
    y = builder.activation("output", output_shape, "int8", _q(quant))
    if kind == "SQUEEZE":
        options = schema.SqueezeOptionsT()
        options.squeezeDims = [a for a, d in enumerate(input_shape) if d == 1][: len(input_shape) - len(output_shape)]
        builder.operator(OP.SQUEEZE, [x], [y], options, version=1)
    else:
        axis = next((a for a in range(len(output_shape)) if output_shape[a] == 1), 0)
        builder.operator(OP.EXPAND_DIMS, [x, builder.constant("axis", np.array([axis], np.int32))], [y], version=1)
    return _finish(builder, [x], y, kind.lower())


def mean_model(
    input_shape: Sequence[int],
    axes: Sequence[int],
    keep_dims: bool,
    input_quant: Quant,
    output_quant: Quant,
    output_shape: Sequence[int],
) -> Model:
    """One int8 MEAN over constant `axes`."""
    builder = GraphBuilder()
    x = builder.activation("input", input_shape, "int8", _q(input_quant))
    axis = builder.constant("axes", np.array(list(axes), np.int32))
    y = builder.activation("output", output_shape, "int8", _q(output_quant))
    options = schema.ReducerOptionsT()
    options.keepDims = keep_dims
    builder.operator(OP.MEAN, [x, axis], [y], options, version=2)
    return _finish(builder, [x], y, "mean")


def broadcast_model(
    kind: str, shape1: Sequence[int], shape2: Sequence[int], quant1: Quant, quant2: Quant, output_quant: Quant,
    activation: str = "NONE",
) -> Model:  # fmt: skip
    """One int8 SUB (with its fused activation), MAXIMUM or MINIMUM (`kind`) of two broadcasting inputs."""
    builder = GraphBuilder()
    a = builder.activation("input1", shape1, "int8", _q(quant1))
    b = builder.activation("input2", shape2, "int8", _q(quant2))
    y = builder.activation("output", np.broadcast_shapes(tuple(shape1), tuple(shape2)), "int8", _q(output_quant))
    if kind == "sub":
        options = schema.SubOptionsT()
        options.fusedActivationFunction = ACTIVATION_CODES[activation]
        builder.operator(OP.SUB, [a, b], [y], options, version=2)
    else:
        code = OP.MAXIMUM if kind == "maximum" else OP.MINIMUM
        builder.operator(code, [a, b], [y], schema.MaximumMinimumOptionsT(), version=2)
    return _finish(builder, [a, b], y, kind)
