"""Single-operator int8 models of the LUT and arithmetic-heavy operators, for LiteRT's reference kernels (the
oracle of heliabuild.kernels.int8_math). Quantization parameters are given explicitly, as the tests draw them."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from heliabuild.kernels.int8 import Quant
from heliabuild.model.io import Model
from heliabuild.synth.builder import GraphBuilder
from helpers.int8_models import OP, _finish, _q

UNARY_CODES = {
    "LOGISTIC": (OP.LOGISTIC, 2),
    "TANH": (OP.TANH, 2),
    "EXP": (OP.EXP, 2),
    "HARD_SWISH": (OP.HARD_SWISH, 1),
    "RSQRT": (OP.RSQRT, 2),
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
