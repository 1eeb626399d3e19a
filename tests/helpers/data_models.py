"""Single-operator int8 models of the data-movement operators, the oracle of c/ops_data.c through LiteRT's
reference kernels (BUILTIN_REF). Every tensor shares one quantization, as the converter gives these operators;
constants (begin, end, perm, indices, paddings, axes) are inside the model."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from ai_edge_litert import schema_py_generated as schema

from heliabuild.kernels.int8 import Quant
from heliabuild.model.io import Model
from heliabuild.synth.builder import GraphBuilder
from helpers.int8_models import _q

OP = schema.BuiltinOperator


def data_model(
    code: int,
    input_shapes: Sequence[Sequence[int]],
    output_shapes: Sequence[Sequence[int]],
    quant: Quant,
    *,
    constants: Sequence[tuple[int, np.ndarray]] = (),
    options: object | None = None,
    version: int = 1,
) -> Model:
    """One operator `code` with int8 graph inputs of `input_shapes` and constant operands inserted at their
    operand positions (`constants`: (position, array), in increasing position; an int8 constant is quantized
    like the rest)."""
    builder = GraphBuilder()
    inputs = [builder.activation(f"input{k}", s, "int8", _q(quant)) for k, s in enumerate(input_shapes)]
    operands = list(inputs)
    for position, array in constants:
        quantization = _q(quant) if array.dtype == np.int8 else None
        operands.insert(position, builder.constant(f"constant{position}", array, quantization))
    outputs = [builder.activation(f"output{k}", s, "int8", _q(quant)) for k, s in enumerate(output_shapes)]
    builder.operator(code, operands, outputs, options, version=version)
    return builder.finish(inputs, outputs, description="test data op", name="<data op>", dynamic_batch=False)


def options_of(kind: type, **fields: object) -> object:
    """A schema options object of `kind` with `fields` set (camelCase names as the schema spells them)."""
    options = kind()
    for name, value in fields.items():
        setattr(options, name, value)
    return options
