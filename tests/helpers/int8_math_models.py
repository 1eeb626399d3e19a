"""Single-operator int8 models of the LUT and arithmetic-heavy operators, for LiteRT's reference kernels (the
oracle of heliabuild.kernels.int8_math). Quantization parameters are given explicitly, as the tests draw them."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from heliabuild.kernels.int8 import Quant
from heliabuild.model.io import Model
from heliabuild.synth.builder import GraphBuilder
from helpers.int8_models import ACTIVATION_CODES, OP, PADDING_CODES, _finish, _q, _weights, schema

UNARY_CODES = {
    "LOGISTIC": (OP.LOGISTIC, 2),
    "TANH": (OP.TANH, 2),
    "EXP": (OP.EXP, 2),
    "HARD_SWISH": (OP.HARD_SWISH, 1),
    "RSQRT": (OP.RSQRT, 2),
    "L2_NORMALIZATION": (OP.L2_NORMALIZATION, 2),
    "LOG_SOFTMAX": (OP.LOG_SOFTMAX, 2),
}
"""Operator -> (builtin code, the version LiteRT 2.3 registers for its int8 form)."""


def unary_model(operator: str, shape: Sequence[int], input_quant: Quant, output_quant: Quant) -> Model:
    code, version = UNARY_CODES[operator]
    builder = GraphBuilder()
    x = builder.activation("input", shape, "int8", _q(input_quant))
    y = builder.activation("output", shape, "int8", _q(output_quant))
    builder.operator(code, [x], [y], None, version=version)
    return _finish(builder, [x], y, operator.lower())


def squared_difference_model(
    shape1: Sequence[int], shape2: Sequence[int], quant1: Quant, quant2: Quant, output_quant: Quant
) -> Model:
    builder = GraphBuilder()
    a = builder.activation("input1", shape1, "int8", _q(quant1))
    b = builder.activation("input2", shape2, "int8", _q(quant2))
    y = builder.activation("output", np.broadcast_shapes(tuple(shape1), tuple(shape2)), "int8", _q(output_quant))
    builder.operator(OP.SQUARED_DIFFERENCE, [a, b], [y], None, version=2)
    return _finish(builder, [a, b], y, "squared_difference")


def batch_matmul_model(
    lhs_shape: Sequence[int],
    rhs_shape: Sequence[int],
    output_shape: Sequence[int],
    lhs_quant: Quant,
    rhs_quant: Quant,
    output_quant: Quant,
    *,
    adj_x: bool = False,
    adj_y: bool = False,
    rhs: np.ndarray | None = None,
) -> Model:
    """BATCH_MATMUL of two activations, or of an activation and the constant `rhs`."""
    builder = GraphBuilder()
    a = builder.activation("lhs", lhs_shape, "int8", _q(lhs_quant))
    if rhs is None:
        b = builder.activation("rhs", rhs_shape, "int8", _q(rhs_quant))
    else:
        b = builder.constant("rhs", rhs.astype(np.int8), _q(rhs_quant))
    y = builder.activation("output", output_shape, "int8", _q(output_quant))
    options = schema.BatchMatMulOptionsT()
    options.adjX, options.adjY = adj_x, adj_y
    builder.operator(OP.BATCH_MATMUL, [a, b], [y], options, version=1)
    return _finish(builder, [a] if rhs is not None else [a, b], y, "batch_matmul")


def transpose_conv_model(
    input_shape: Sequence[int],
    filter: np.ndarray,
    filter_scales: np.ndarray,
    bias: np.ndarray | None,
    input_quant: Quant,
    output_quant: Quant,
    output_shape: Sequence[int],
    *,
    stride: tuple[int, int],
    padding: str,
    activation: str = "NONE",
) -> Model:
    builder = GraphBuilder()
    shape = builder.constant("output_shape", np.array(output_shape, np.int32))
    x = builder.activation("input", input_shape, "int8", _q(input_quant))
    weights = _weights(builder, filter, filter_scales, 0, bias, input_quant.scale)
    y = builder.activation("output", output_shape, "int8", _q(output_quant))
    options = schema.TransposeConvOptionsT()
    options.padding = PADDING_CODES[padding]
    options.strideH, options.strideW = stride
    options.fusedActivationFunction = ACTIVATION_CODES[activation]
    builder.operator(OP.TRANSPOSE_CONV, [shape, weights[0], x, *weights[1:]], [y], options, version=3)
    return _finish(builder, [x], y, "transpose_conv")


def resize_model(
    kind: str,
    input_shape: Sequence[int],
    output_hw: tuple[int, int],
    quant: Quant,
    *,
    align_corners: bool,
    half_pixel_centers: bool,
) -> Model:
    """RESIZE_NEAREST_NEIGHBOR (`kind` 'nearest') or RESIZE_BILINEAR ('bilinear'), the size a constant."""
    builder = GraphBuilder()
    x = builder.activation("input", input_shape, "int8", _q(quant))
    size = builder.constant("size", np.array(output_hw, np.int32))
    y = builder.activation("output", (input_shape[0], *output_hw, input_shape[3]), "int8", _q(quant))
    if kind == "nearest":
        options, code = schema.ResizeNearestNeighborOptionsT(), OP.RESIZE_NEAREST_NEIGHBOR
    else:
        options, code = schema.ResizeBilinearOptionsT(), OP.RESIZE_BILINEAR
    options.alignCorners, options.halfPixelCenters = align_corners, half_pixel_centers
    builder.operator(code, [x, size], [y], options, version=3)
    return _finish(builder, [x], y, f"resize_{kind}")


def binary_s16_model(
    kind: str,
    shape1: Sequence[int],
    shape2: Sequence[int],
    quant1: Quant,
    quant2: Quant,
    output_quant: Quant,
    activation: str = "NONE",
    pot_scale: bool = False,
) -> Model:
    """int16 ADD (general scales: pot_scale_int16 false, as the converter's 16x8 mode emits it) or MUL."""
    builder = GraphBuilder()
    a = builder.activation("input1", shape1, "int16", _q(quant1))
    b = builder.activation("input2", shape2, "int16", _q(quant2))
    y = builder.activation("output", np.broadcast_shapes(tuple(shape1), tuple(shape2)), "int16", _q(output_quant))
    if kind == "add":
        options, code, version = schema.AddOptionsT(), OP.ADD, 3
        options.potScaleInt16 = pot_scale
    else:
        options, code, version = schema.MulOptionsT(), OP.MUL, 4
    options.fusedActivationFunction = ACTIVATION_CODES[activation]
    builder.operator(code, [a, b], [y], options, version=version)
    return _finish(builder, [a, b], y, f"{kind}_s16")
