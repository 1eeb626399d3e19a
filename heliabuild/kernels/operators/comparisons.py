"""INT32 comparisons: EQUAL, NOT_EQUAL, GREATER, GREATER_EQUAL, LESS and LESS_EQUAL.

Contract (aot-operator-contracts.md, "INT32 comparisons and selection"): the
route takes two unquantized INT32 inputs and produces a Boolean output.
Scalar through rank-four operands use singleton broadcasting, and the
broadcast output count must fit INT32_MAX / 4. Comparisons preserve
full-width signed values (no narrowing, no float conversion); the route
needs no float support and no scratch. INT8 and INT16 comparisons keep their
quantized route, which this module does not cover.

Where the contract is silent heliabuild decides: extents must be static
(an unknown -1 extent is refused); zero extents are admitted (an empty
output), since only SELECT_V2 asks for positive dimensions.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from heliabuild.errors import KernelError
from heliabuild.kernels.operators.admission import (
    INT32_MAX,
    Checker,
    Refusal,
    TargetCapabilities,
    TensorSpec,
    arity,
    broadcast_shape,
    shape_text,
)

OPERATORS: dict[str, np.ufunc] = {
    "EQUAL": np.equal,
    "NOT_EQUAL": np.not_equal,
    "GREATER": np.greater,
    "GREATER_EQUAL": np.greater_equal,
    "LESS": np.less,
    "LESS_EQUAL": np.less_equal,
}
"""The six comparisons and the numpy function whose INT32 semantics they have."""

MAX_RANK = 4
MAX_OUTPUT_COUNT = INT32_MAX // 4
"""The largest broadcast output element count: the count must fit INT32_MAX / 4."""

RULES: dict[str, str] = {
    "comparison.operator": "one of EQUAL, NOT_EQUAL, GREATER, GREATER_EQUAL, LESS, LESS_EQUAL",
    "comparison.arity": "two inputs and one output",
    "comparison.int32": "both inputs are INT32 (INT8 and INT16 keep their quantized route)",
    "comparison.unquantized": "the INT32 inputs are unquantized",
    "comparison.static-shape": "every extent is static (heliabuild's reading; the contract is silent)",
    "comparison.rank": "scalar through rank-four operands",
    "comparison.broadcast": "singleton broadcasting: aligned from the right, each axis equal or 1",
    "comparison.output-count": "the broadcast output count fits INT32_MAX / 4",
    "comparison.bool-output": "the output is Boolean",
    "comparison.output-shape": "the output has the broadcast shape",
}


def admit(
    operator: str,
    inputs: Sequence[TensorSpec],
    outputs: Sequence[TensorSpec],
    *,
    target: TargetCapabilities | None = None,
) -> Refusal | None:
    """None when the INT32 comparison route takes `operator` on these tensors, else the first broken rule.

    `target` is accepted for a uniform call and ignored: the route needs no
    float support.
    """
    name = operator.upper()
    check = Checker(name, RULES)
    if name not in OPERATORS:
        return check.fail("comparison.operator", f"not a comparison; expected one of {', '.join(OPERATORS)}")
    if arity(check, "comparison.arity", inputs, outputs, 2):
        return check.refusal
    for role, tensor in zip(("x", "y"), inputs, strict=True):
        if tensor.dtype != "int32":
            note = (
                " (INT8 and INT16 comparisons keep their quantized route)" if tensor.dtype in ("int8", "int16") else ""
            )
            return check.fail("comparison.int32", f"input {role} is {tensor.dtype}, expected int32{note}")
    for role, tensor in zip(("x", "y"), inputs, strict=True):
        if tensor.quantized:
            return check.fail("comparison.unquantized", f"input {role} is quantized; the INT32 route takes raw values")
    for role, tensor in zip(("x", "y", "output"), (*inputs, outputs[0]), strict=True):
        if not tensor.static:
            return check.fail("comparison.static-shape", f"{role} shape {shape_text(tensor.shape)} is not static")
    for role, tensor in zip(("x", "y", "output"), (*inputs, outputs[0]), strict=True):
        if tensor.rank > MAX_RANK:
            return check.fail("comparison.rank", f"{role} has rank {tensor.rank}, expected scalar through rank 4")
    shape = broadcast_shape([t.shape for t in inputs])
    if shape is None:
        shapes = " and ".join(shape_text(t.shape) for t in inputs)
        return check.fail("comparison.broadcast", f"inputs {shapes} do not broadcast (each axis equal or 1)")
    count = TensorSpec("bool", shape).element_count
    if count > MAX_OUTPUT_COUNT:
        return check.fail(
            "comparison.output-count",
            f"broadcast output {shape_text(shape)} has {count} elements, more than INT32_MAX / 4 ({MAX_OUTPUT_COUNT})",
        )
    if outputs[0].dtype != "bool":
        return check.fail("comparison.bool-output", f"output is {outputs[0].dtype}, expected bool")
    if tuple(outputs[0].shape) != shape:
        return check.fail(
            "comparison.output-shape",
            f"output shape {shape_text(outputs[0].shape)} is not the broadcast shape {shape_text(shape)}",
        )
    return None


def reference(operator: str, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """The comparison `operator` of INT32 `x` and `y`, singleton-broadcast, as a bool array.

    Values compare at full signed 32-bit width. Raises KernelError for an
    unknown operator or non-INT32 inputs (admission's job is the rest).
    """
    name = operator.upper()
    if name not in OPERATORS:
        raise KernelError(
            f"comparison reference: unknown operator {operator!r}; expected one of {', '.join(OPERATORS)}"
        )
    x, y = np.asarray(x), np.asarray(y)
    if x.dtype != np.int32 or y.dtype != np.int32:
        raise KernelError(f"{name} reference: inputs are {x.dtype} and {y.dtype}, expected int32")
    return np.asarray(OPERATORS[name](x, y), dtype=np.bool_)
