"""Single-operator float and integer models, for kernel work.

single_op_model builds a model whose one operator reads every graph input
and writes the graph output, with numpy broadcasting between input shapes.
Float32 and int32 models run in the LiteRT interpreter; float16 models are
valid flatbuffers with FLOAT16 tensors that LiteRT's reference kernels may
refuse.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from ai_edge_litert import schema_py_generated as schema

from heliabuild.errors import HeliaError
from heliabuild.model.io import Model
from heliabuild.synth.builder import GraphBuilder

OP = schema.BuiltinOperator
_FLOATS = ("float32", "float16")
_COMPARISON_TYPES = ("int32", "float32", "float16")
MAX_RANK = 6


@dataclass(frozen=True)
class OpSpec:
    """How one single-operator kind is built: builtin code, options class,
    input names, allowed data types (of the value inputs) and whether the
    output is bool."""

    code: int
    options: type
    inputs: tuple[str, ...]
    dtypes: tuple[str, ...]
    bool_output: bool = False
    fused_activation: bool = False


SINGLE_OPS: dict[str, OpSpec] = {
    "div": OpSpec(OP.DIV, schema.DivOptionsT, ("x", "y"), _FLOATS, fused_activation=True),
    "neg": OpSpec(OP.NEG, schema.NegOptionsT, ("x",), (*_FLOATS, "int32")),
    "squared_difference": OpSpec(OP.SQUARED_DIFFERENCE, schema.SquaredDifferenceOptionsT, ("x", "y"), _FLOATS),
    "equal": OpSpec(OP.EQUAL, schema.EqualOptionsT, ("x", "y"), _COMPARISON_TYPES, bool_output=True),
    "not_equal": OpSpec(OP.NOT_EQUAL, schema.NotEqualOptionsT, ("x", "y"), _COMPARISON_TYPES, bool_output=True),
    "greater": OpSpec(OP.GREATER, schema.GreaterOptionsT, ("x", "y"), _COMPARISON_TYPES, bool_output=True),
    "greater_equal": OpSpec(
        OP.GREATER_EQUAL, schema.GreaterEqualOptionsT, ("x", "y"), _COMPARISON_TYPES, bool_output=True
    ),
    "less": OpSpec(OP.LESS, schema.LessOptionsT, ("x", "y"), _COMPARISON_TYPES, bool_output=True),
    "less_equal": OpSpec(OP.LESS_EQUAL, schema.LessEqualOptionsT, ("x", "y"), _COMPARISON_TYPES, bool_output=True),
    "select_v2": OpSpec(OP.SELECT_V2, schema.SelectV2OptionsT, ("condition", "x", "y"), ("int32", *_FLOATS)),
}

ACTIVATIONS: dict[str, int] = {
    "NONE": schema.ActivationFunctionType.NONE,
    "RELU": schema.ActivationFunctionType.RELU,
    "RELU_N1_TO_1": schema.ActivationFunctionType.RELU_N1_TO_1,
    "RELU6": schema.ActivationFunctionType.RELU6,
}

# Shapes of the default models behind the single-operator KINDS entries: the
# second value input broadcasts along every axis but the last.
DEFAULT_SHAPES: dict[int, tuple[tuple[int, ...], ...]] = {
    1: ((1, 8, 8, 16),),
    2: ((1, 8, 8, 16), (1, 1, 1, 16)),
    3: ((1, 8, 8, 16), (1, 8, 8, 16), (1, 1, 1, 16)),
}


def default_shapes(op: str) -> list[tuple[int, ...]]:
    """The input shapes the KINDS entry of `op` uses."""
    return list(DEFAULT_SHAPES[len(_spec(op).inputs)])


def _spec(op: str) -> OpSpec:
    if op not in SINGLE_OPS:
        raise HeliaError(f"single-operator model: unknown operator {op!r}; expected one of {', '.join(SINGLE_OPS)}")
    return SINGLE_OPS[op]


def _check_shapes(op: str, spec: OpSpec, shapes: Sequence[Sequence[int]]) -> list[tuple[int, ...]]:
    if len(shapes) != len(spec.inputs):
        raise HeliaError(
            f"single-operator model {op}: {len(shapes)} input shapes given, expected "
            f"{len(spec.inputs)} ({', '.join(spec.inputs)})"
        )
    checked: list[tuple[int, ...]] = []
    for name, shape in zip(spec.inputs, shapes, strict=True):
        dims = tuple(shape)
        if len(dims) > MAX_RANK or not all(isinstance(d, int | np.integer) and d >= 1 for d in dims):
            raise HeliaError(
                f"single-operator model {op}: input {name} has shape {list(dims)}, expected at most "
                f"{MAX_RANK} positive integer dimensions"
            )
        checked.append(tuple(int(d) for d in dims))
    try:
        np.broadcast_shapes(*checked)
    except ValueError:
        raise HeliaError(
            f"single-operator model {op}: input shapes {[list(s) for s in checked]} do not broadcast together",
            hint="each axis, aligned from the right, must match or be 1",
        ) from None
    return checked


def single_op_model(
    op: str,
    dtype: str,
    shapes: Sequence[Sequence[int]],
    activation: str = "NONE",
) -> Model:
    """A model with the one operator `op` on inputs of `dtype` and `shapes` (broadcasting).

    `op` is a key of SINGLE_OPS; `dtype` the type of the value inputs (the
    condition of select_v2 is always bool; comparisons output bool);
    `activation` a fused activation, only for div. Raises HeliaError for an
    unknown operator, a type or activation the operator does not take, or
    shapes that do not broadcast. Graph inputs are named after SINGLE_OPS'
    input names, the output after `op`; shapes are static (no -1 signature).
    """
    spec = _spec(op)
    if dtype not in spec.dtypes:
        raise HeliaError(
            f"single-operator model {op}: data type {dtype!r} is not supported; "
            f"expected one of {', '.join(spec.dtypes)}"
        )
    if activation not in ACTIVATIONS or (activation != "NONE" and not spec.fused_activation):
        allowed = ", ".join(ACTIVATIONS) if spec.fused_activation else "NONE"
        raise HeliaError(
            f"single-operator model {op}: fused activation {activation!r} is not supported; expected {allowed}"
        )
    checked = _check_shapes(op, spec, shapes)
    output_shape = np.broadcast_shapes(*checked)

    builder = GraphBuilder()
    inputs = []
    for name, shape in zip(spec.inputs, checked, strict=True):
        input_type = "bool" if name == "condition" else dtype
        inputs.append(builder.activation(name, shape, input_type))
    output = builder.activation(op, output_shape, "bool" if spec.bool_output else dtype)
    options = spec.options()
    if spec.fused_activation:
        options.fusedActivationFunction = ACTIVATIONS[activation]
    builder.operator(spec.code, inputs, [output], options, version=1)
    suffix = "" if activation == "NONE" else f" + {activation}"
    shape_text = ", ".join("x".join(map(str, s)) or "scalar" for s in checked)
    return builder.finish(
        inputs,
        [output],
        description=f"heliabuild.synth single operator: {op.upper()}{suffix} {dtype} on {shape_text}",
        name=f"<synth {op} {dtype}>",
        signature_names=(list(spec.inputs), ["output_0"]),
        dynamic_batch=False,
    )
