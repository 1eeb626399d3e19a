"""A small int8 MobileNetV2 with the operator pattern the TFLite converter emits for `keras.applications.MobileNetV2`.

`mobilenet_v2_network(seed)`: input int8 [1, 32, 32, 3] -> CONV_2D 3x3/2 RELU6 -> inverted residual blocks
(expansion 1x1 CONV_2D RELU6, a stride-2 block's PAD (Keras's ZeroPadding2D) and VALID DEPTHWISE_CONV_2D, else
SAME; DEPTHWISE RELU6; projection 1x1 CONV_2D without activation; a residual ADD where the stride is 1 and the
channels agree) -> 1x1 CONV_2D RELU6 -> MEAN over H and W (Keras's GlobalAveragePooling2D: keep_dims false)
-> FULLY_CONNECTED -> SOFTMAX [1, 10]. Activations are calibrated as heliabuild.synth.layers does; PAD keeps its
input's quantization (its zeros are the zero point) and MEAN gets its own.
"""

from __future__ import annotations

import numpy as np
from ai_edge_litert import schema_py_generated as schema

from heliabuild.model.io import Model
from heliabuild.synth.layers import Int8Graph, QTensor

OP = schema.BuiltinOperator
MOBILENET_INPUT_SHAPE = (1, 32, 32, 3)
MOBILENET_CLASSES = 10
BLOCKS = ((1, 6, 1), (6, 12, 2), (6, 12, 1), (6, 16, 2), (6, 16, 1))
"""(expansion, output channels, stride) of each inverted residual block."""


def _pad(g: Int8Graph, x: QTensor) -> QTensor:
    """PAD by one row and column after (Keras's correct_pad for an even input), quantization kept."""
    layer = g.layer_name("block_pad")
    paddings = np.array([[0, 0], [0, 1], [0, 1], [0, 0]], np.int32)
    pads = g.builder.constant(f"{layer}/paddings", paddings)
    _n, h, w, c = x.shape
    shape = (1, h + 1, w + 1, c)
    codes = np.pad(x.codes, ((0, 0), (0, 1), (0, 1), (0, 0)), constant_values=x.quant.zero_point)
    index = g.builder.activation(f"{layer}/Pad", shape, np.int8, x.quant.parameters())
    g.builder.operator(OP.PAD, [x.index, pads], [index], schema.PadOptionsT(), version=2)
    return QTensor(index, shape, x.quant, codes)


def _inverted_residual(g: Int8Graph, x: QTensor, expansion: int, channels: int, stride: int) -> QTensor:
    y = x
    if expansion != 1:
        y = g.conv2d(y, x.shape[3] * expansion, kernel=(1, 1), relu6=True)
    if stride == 2:
        y = g.depthwise_conv2d(_pad(g, y), stride=2, padding="VALID", relu6=True)
    else:
        y = g.depthwise_conv2d(y, relu6=True)
    y = g.conv2d(y, channels, kernel=(1, 1), relu=False, gain=0.7)
    if stride == 1 and x.shape[3] == channels:
        y = g.add(x, y, relu=False)
    return y


def mobilenet_v2_network(seed: int = 0) -> Model:
    """The small int8 MobileNetV2 of the module docstring (23 operators), deterministic in `seed`."""
    g = Int8Graph(np.random.default_rng(seed))
    x = g.input(MOBILENET_INPUT_SHAPE)
    x = g.conv2d(x, 8, stride=2, relu6=True)
    for expansion, channels, stride in BLOCKS:
        x = _inverted_residual(g, x, expansion, channels, stride)
    x = g.conv2d(x, 32, kernel=(1, 1), relu6=True)
    x = g.mean(x, (1, 2), keep_dims=False, base="global_average_pooling2d")
    x = g.fully_connected(x, MOBILENET_CLASSES)
    x = g.softmax(x)
    return g.finish(
        x,
        description=f"heliabuild.synth mobilenet_v2: int8 MobileNetV2 blocks, MEAN pooling, seed {seed}",
        name=f"<synth mobilenet_v2 seed={seed}>",
    )
