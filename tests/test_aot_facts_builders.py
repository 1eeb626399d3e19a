"""Small synthetic models for the AOT knob, entry, report and FP16 overflow tests (no tests here).

Every builder returns a heliabuild Model made with heliabuild.synth's
GraphBuilder, with exactly the shapes, scales and weights a test names.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from ai_edge_litert import schema_py_generated as schema

from heliabuild.model import Model, load_model, serialize
from heliabuild.synth import GraphBuilder
from heliabuild.synth.quant import quantization_parameters

OP = schema.BuiltinOperator
ACT = schema.ActivationFunctionType
PAD = schema.Padding


def reload(model: Model) -> Model:
    """The model serialized and read back, as the planner sees a file."""
    return load_model(bytes(serialize(model)))


def conv_options(stride=(1, 1), padding="VALID", dilation=(1, 1), depth_multiplier=None):
    options = schema.Conv2DOptionsT() if depth_multiplier is None else schema.DepthwiseConv2DOptionsT()
    options.strideH, options.strideW = stride
    options.padding = PAD.SAME if padding == "SAME" else PAD.VALID
    options.dilationHFactor, options.dilationWFactor = dilation
    options.fusedActivationFunction = ACT.NONE
    if depth_multiplier is not None:
        options.depthMultiplier = depth_multiplier
    return options


def out_size(size: int, kernel: int, stride: int, padding: str, dilation: int = 1) -> int:
    effective = (kernel - 1) * dilation + 1
    if padding == "SAME":
        return -(-size // stride)
    return (size - effective) // stride + 1


def int8_conv_model(
    *,
    op: str = "CONV_2D",
    input_shape: Sequence[int] = (1, 8, 8, 4),
    kernel: tuple[int, int] = (3, 3),
    out_channels: int = 4,
    stride: tuple[int, int] = (1, 1),
    padding: str = "VALID",
    dilation: tuple[int, int] = (1, 1),
    dtype: str = "int8",
    input_scale: float = 0.05,
    weight_scales: Sequence[float] | None = None,
    output_scale: float = 0.1,
) -> Model:
    """One quantized CONV_2D or DEPTHWISE_CONV_2D with the given scales (per-channel weights)."""
    n, h, w, c = input_shape
    kh, kw = kernel
    oh = out_size(h, kh, stride[0], padding, dilation[0])
    ow = out_size(w, kw, stride[1], padding, dilation[1])
    scales = list(weight_scales) if weight_scales is not None else [0.01] * out_channels
    b = GraphBuilder()
    activation_dtype = np.int8 if dtype == "int8" else np.int16
    x = b.activation("input", input_shape, activation_dtype, quantization_parameters([input_scale], [0]))
    if op == "CONV_2D":
        weights = np.ones((out_channels, kh, kw, c), dtype=np.int8)
        axis = 0
    else:
        weights = np.ones((1, kh, kw, out_channels), dtype=np.int8)
        axis = 3
    wq = b.constant("weights", weights, quantization_parameters(scales, [0] * len(scales), axis))
    bias_dtype = np.int32 if dtype == "int8" else np.int64
    bias = b.constant(
        "bias",
        np.zeros(out_channels, dtype=bias_dtype),
        quantization_parameters([input_scale * s for s in scales], [0] * len(scales)),
    )
    y = b.activation(
        "output", (n, oh, ow, out_channels), activation_dtype, quantization_parameters([output_scale], [0])
    )
    code = OP.CONV_2D if op == "CONV_2D" else OP.DEPTHWISE_CONV_2D
    multiplier = None if op == "CONV_2D" else out_channels // c
    b.operator(code, [x, wq, bias], [y], conv_options(stride, padding, dilation, multiplier))
    return reload(b.finish([x], [y], "int8 conv", "conv.tflite"))


def int8_fc_model(
    *, batch: int = 2, depth: int = 16, units: int = 8, per_channel: bool = False, dtype: str = "int8"
) -> Model:
    b = GraphBuilder()
    activation_dtype = np.int8 if dtype == "int8" else np.int16
    x = b.activation("input", (batch, depth), activation_dtype, quantization_parameters([0.05], [0]))
    scales = [0.01] * units if per_channel else [0.01]
    wq = b.constant("weights", np.ones((units, depth), np.int8), quantization_parameters(scales, [0] * len(scales)))
    bias = b.constant(
        "bias", np.zeros(units, np.int32), quantization_parameters([0.0005] * len(scales), [0] * len(scales))
    )
    y = b.activation("output", (batch, units), activation_dtype, quantization_parameters([0.1], [0]))
    options = schema.FullyConnectedOptionsT()
    b.operator(OP.FULLY_CONNECTED, [x, wq, bias], [y], options)
    return reload(b.finish([x], [y], "int8 fc", "fc.tflite"))


def float_conv_layer(
    b: GraphBuilder,
    x: int,
    input_shape: Sequence[int],
    weights: np.ndarray,
    bias: np.ndarray | None,
    *,
    dtype=np.float16,
    stride=(1, 1),
    padding="VALID",
    name: str = "conv",
) -> tuple[int, tuple[int, ...]]:
    """Append a float CONV_2D reading tensor `x` of `input_shape`; (output tensor, output shape)."""
    n, h, w, _ = input_shape
    oc, kh, kw, _ = weights.shape
    shape = (n, out_size(h, kh, stride[0], padding), out_size(w, kw, stride[1], padding), oc)
    wt = b.constant(f"{name}/weights", weights.astype(dtype))
    inputs = [x, wt]
    if bias is not None:
        inputs.append(b.constant(f"{name}/bias", bias.astype(dtype)))
    else:
        inputs.append(-1)
    y = b.activation(f"{name}/out", shape, dtype)
    b.operator(OP.CONV_2D, inputs, [y], conv_options(stride, padding))
    return y, shape


def reshape(b: GraphBuilder, x: int, shape: Sequence[int], name: str, dtype=np.float16) -> int:
    target = b.constant(f"{name}/shape", np.array(shape, dtype=np.int32))
    y = b.activation(name, shape, dtype)
    options = schema.ReshapeOptionsT()
    options.newShape = [int(d) for d in shape]
    b.operator(OP.RESHAPE, [x, target], [y], options)
    return y


def pad(b: GraphBuilder, x: int, in_shape: Sequence[int], pads: Sequence[Sequence[int]], name: str, fill=None) -> int:
    """PAD (no fill operand) or PADV2 with a constant fill value."""
    shape = tuple(d + p[0] + p[1] for d, p in zip(in_shape, pads, strict=True))
    paddings = b.constant(f"{name}/paddings", np.array(pads, dtype=np.int32))
    y = b.activation(name, shape, np.float16)
    if fill is None:
        b.operator(OP.PAD, [x, paddings], [y], schema.PadOptionsT())
    else:
        value = b.constant(f"{name}/value", np.array([fill], dtype=np.float16))
        b.operator(OP.PADV2, [x, paddings, value], [y], schema.PadV2OptionsT())
    return y
