"""SELECT_V2 on INT32 values.

Contract (aot-operator-contracts.md, "INT32 comparisons and selection"): a
Boolean condition and INT32 x and y tensors, with singleton broadcasting
through rank eight. All dimensions must be positive and each tensor's byte
count must fit INT32_MAX. Selection copies values exactly; the route needs
no float support and no scratch.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from heliabuild.errors import KernelError
from heliabuild.kernels.operators.admission import (
    Checker,
    Refusal,
    TargetCapabilities,
    TensorSpec,
    arity,
    broadcast_shape,
    byte_counts,
    positive_extents,
    shape_text,
)

OPERATOR = "SELECT_V2"
MAX_RANK = 8

RULES: dict[str, str] = {
    "select_v2.arity": "three inputs (condition, x, y) and one output",
    "select_v2.condition-bool": "the condition is Boolean",
    "select_v2.int32": "x, y and the output are INT32",
    "select_v2.rank": "singleton broadcasting through rank eight",
    "select_v2.positive-dims": "all dimensions are positive",
    "select_v2.broadcast": "singleton broadcasting: aligned from the right, each axis equal or 1",
    "select_v2.output-shape": "the output has the broadcast shape",
    "select_v2.byte-count": "each tensor's byte count fits INT32_MAX",
}

_ROLES = ("condition", "x", "y", "output")


def admit(
    inputs: Sequence[TensorSpec],
    outputs: Sequence[TensorSpec],
    *,
    target: TargetCapabilities | None = None,
) -> Refusal | None:
    """None when the INT32 SELECT_V2 route takes these tensors, else the first broken rule.

    `target` is accepted for a uniform call and ignored (no float support needed).
    """
    check = Checker(OPERATOR, RULES)
    if arity(check, "select_v2.arity", inputs, outputs, 3):
        return check.refusal
    tensors = (*inputs, outputs[0])
    if inputs[0].dtype != "bool":
        return check.fail("select_v2.condition-bool", f"condition is {inputs[0].dtype}, expected bool")
    for role, tensor in zip(_ROLES[1:], tensors[1:], strict=True):
        if tensor.dtype != "int32":
            return check.fail("select_v2.int32", f"{role} is {tensor.dtype}, expected int32")
    for role, tensor in zip(_ROLES, tensors, strict=True):
        if tensor.rank > MAX_RANK:
            return check.fail("select_v2.rank", f"{role} has rank {tensor.rank}, expected at most {MAX_RANK}")
    if positive_extents(check, "select_v2.positive-dims", tensors, _ROLES):
        return check.refusal
    shape = broadcast_shape([t.shape for t in inputs])
    if shape is None:
        shapes = ", ".join(shape_text(t.shape) for t in inputs)
        return check.fail("select_v2.broadcast", f"inputs {shapes} do not broadcast (each axis equal or 1)")
    if tuple(outputs[0].shape) != shape:
        return check.fail(
            "select_v2.output-shape",
            f"output shape {shape_text(outputs[0].shape)} is not the broadcast shape {shape_text(shape)}",
        )
    if byte_counts(check, "select_v2.byte-count", tensors, _ROLES):
        return check.refusal
    return None


def reference(condition: np.ndarray, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Elementwise `x` where `condition` else `y`, singleton-broadcast; values are copied exactly (int32).

    Raises KernelError unless the condition is bool and x and y are int32.
    """
    condition, x, y = np.asarray(condition), np.asarray(x), np.asarray(y)
    if condition.dtype != np.bool_ or x.dtype != np.int32 or y.dtype != np.int32:
        raise KernelError(
            f"{OPERATOR} reference: condition {condition.dtype}, x {x.dtype}, y {y.dtype}; expected bool, int32, int32"
        )
    return np.where(condition, x, y).astype(np.int32, copy=False)
