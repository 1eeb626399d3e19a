"""Floating-point SQUARED_DIFFERENCE (FP32 and FP16).

Contract (aot-operator-contracts.md, "Floating-point squared difference"):
FP32 and FP16 operands with equal layouts and positive static dimensions,
scalars included. Leading singleton axes can differ through rank four;
higher ranks need identical shapes. Float broadcasting is rejected (integer
broadcasting belongs to the integer route, which this module does not
cover). Each tensor's byte count fits INT32_MAX; FP16 needs a
Cortex-M55-class platform. No scratch, no activation clamp.

The result is a rounded subtraction followed by a rounded multiplication at
the selected precision: (x - y) rounded, then squared and rounded. NaN
payloads are unspecified. The reference uses gradual underflow (the scalar
FPU's result); heliaCORE 7.47.0 and later give it for FP32 under MVE too,
while earlier releases flush subnormal squares, and FP16 MVE lanes may flush.
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
    float_route_dtypes,
    positive_extents,
    shape_text,
)

OPERATOR = "SQUARED_DIFFERENCE"
MAX_SINGLETON_RANK = 4

RULES: dict[str, str] = {
    "squared_difference.arity": "two operands and one output",
    "squared_difference.dtype": "FP32 or FP16 operands (the integer route is another contract)",
    "squared_difference.same-dtype": "both operands and the output share a dtype",
    "squared_difference.fp16-target": "FP16 needs a Cortex-M55-class platform",
    "squared_difference.static-extents": "positive static dimensions (scalars included)",
    "squared_difference.layout": "equal layouts; leading singleton axes may differ through rank four; "
    "higher ranks identical; float broadcasting is rejected",
    "squared_difference.output-shape": "the output has the operands' layout",
    "squared_difference.byte-count": "each tensor's byte count fits INT32_MAX",
}

_ROLES = ("x", "y", "output")


def strip_leading_ones(shape: Sequence[int]) -> tuple[int, ...]:
    """`shape` without its leading extents of one."""
    dims = tuple(shape)
    start = 0
    while start < len(dims) and dims[start] == 1:
        start += 1
    return dims[start:]


def same_layout(a: Sequence[int], b: Sequence[int]) -> bool:
    """Whether two shapes describe the same flat layout for this route: identical, or (both rank <= 4)
    equal once leading singleton axes are stripped."""
    if tuple(a) == tuple(b):
        return True
    return max(len(a), len(b)) <= MAX_SINGLETON_RANK and strip_leading_ones(a) == strip_leading_ones(b)


def admit(
    inputs: Sequence[TensorSpec],
    outputs: Sequence[TensorSpec],
    *,
    target: TargetCapabilities,
) -> Refusal | None:
    """None when the float SQUARED_DIFFERENCE route takes these tensors on `target`, else the first broken rule."""
    check = Checker(OPERATOR, RULES)
    if arity(check, "squared_difference.arity", inputs, outputs, 2):
        return check.refusal
    tensors = (*inputs, outputs[0])
    note = "integer SQUARED_DIFFERENCE (with broadcasting) is the integer route, outside this contract"
    if float_route_dtypes(check, "squared_difference", tensors, target, note):
        return check.refusal
    if positive_extents(check, "squared_difference.static-extents", tensors, _ROLES):
        return check.refusal
    x, y = inputs
    if not same_layout(x.shape, y.shape):
        if max(x.rank, y.rank) > MAX_SINGLETON_RANK:
            why = "above rank 4 the shapes must be identical"
        else:
            why = "only leading singleton axes may differ; float broadcasting is rejected"
        return check.fail(
            "squared_difference.layout", f"operands {shape_text(x.shape)} and {shape_text(y.shape)}: {why}"
        )
    shape = broadcast_shape([x.shape, y.shape])
    if tuple(outputs[0].shape) != shape:
        return check.fail(
            "squared_difference.output-shape",
            f"output shape {shape_text(outputs[0].shape)} is not the operands' shape {shape_text(shape or ())}",
        )
    if byte_counts(check, "squared_difference.byte-count", tensors, _ROLES):
        return check.refusal
    return None


def reference(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """(x - y)^2 as the route computes it: the difference rounded to the operands' precision, then the
    square rounded to it. Shapes that differ only in leading singleton axes give the longer shape.

    FP16 is computed on widened values: the FP32 difference of two halves
    rounded to half is the correctly rounded half difference (24 >= 2 x 11 + 2
    significand bits), and the FP32 square of a half is exact before its
    rounding to half. Raises KernelError unless both are float32 or both float16.
    """
    x, y = np.asarray(x), np.asarray(y)
    if x.dtype != y.dtype or x.dtype not in (np.float32, np.float16):
        raise KernelError(f"{OPERATOR} reference: operands {x.dtype} and {y.dtype}, expected float32 or float16")
    with np.errstate(all="ignore"):
        difference = np.subtract(x.astype(np.float32), y.astype(np.float32)).astype(x.dtype)
        wide = difference.astype(np.float32)
        return np.multiply(wide, wide).astype(x.dtype)
