"""Floating-point DIV (FP32 and FP16) with a fused activation.

Contract (aot-operator-contracts.md, "Floating-point division"):

- Both operands and the output share a dtype, FP32 or FP16, and have positive
  static extents; each tensor's byte count fits INT32_MAX. FP16 needs an
  M55-class target. Integer DIV is not supported.
- Equal layouts use a flat call (any rank); otherwise scalar through
  rank-four operands broadcast (compact, left-padded NHWC, no scratch).
  Operand order is preserved, a scalar numerator included.
- The fused activation is NONE, RELU, RELU_N1_TO_1 or RELU6, clamped with the
  dtype's float bounds; an unbounded end is the finite dtype limit (+-FLT_MAX
  for FP32, +-65504 for FP16), so an infinite quotient saturates to it. NaN
  propagates through the clamp. FP16 rounds the quotient to half before the
  activation. No reciprocal-multiply approximation: the quotient is the
  correctly rounded IEEE quotient.
- The FP16 clamp turns negative zero into positive zero under RELU and RELU6
  (LiteRT's FP32 reference keeps the sign); this reference does the same, so
  it describes the target, and fused FP16 division has no bitwise parity with
  LiteRT for signed zero.
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
    activation_name,
    arity,
    broadcast_shape,
    byte_counts,
    float_route_dtypes,
    positive_extents,
    shape_text,
)

OPERATOR = "DIV"
MAX_BROADCAST_RANK = 4
ACTIVATIONS = ("NONE", "RELU", "RELU_N1_TO_1", "RELU6")
FLT_MAX = float(np.finfo(np.float32).max)
HALF_MAX = float(np.finfo(np.float16).max)  # 65504

RULES: dict[str, str] = {
    "div.arity": "two operands and one output",
    "div.integer": "integer DIV is not supported",
    "div.dtype": "FP32 or FP16 operands",
    "div.same-dtype": "both operands and the output share a dtype",
    "div.fp16-target": "FP16 needs an M55-class target",
    "div.static-extents": "positive static extents",
    "div.layout": "equal layouts, or scalar through rank-four broadcasting",
    "div.output-shape": "the output has the operands' (broadcast) shape",
    "div.byte-count": "each tensor's byte count fits INT32_MAX",
    "div.activation": "fused activation NONE, RELU, RELU_N1_TO_1 or RELU6",
}

_ROLES = ("numerator", "denominator", "output")


def admit(
    inputs: Sequence[TensorSpec],
    outputs: Sequence[TensorSpec],
    *,
    activation: str | int = "NONE",
    target: TargetCapabilities,
) -> Refusal | None:
    """None when the float DIV route takes these tensors and activation on `target`, else the first broken rule."""
    check = Checker(OPERATOR, RULES)
    if arity(check, "div.arity", inputs, outputs, 2):
        return check.refusal
    tensors = (*inputs, outputs[0])
    if float_route_dtypes(check, "div", tensors, target, "integer DIV is not supported"):
        return check.refusal
    if positive_extents(check, "div.static-extents", tensors, _ROLES):
        return check.refusal
    x, y = inputs
    if x.shape != y.shape:
        if max(x.rank, y.rank) > MAX_BROADCAST_RANK:
            return check.fail(
                "div.layout",
                f"operands {shape_text(x.shape)} and {shape_text(y.shape)} differ at rank "
                f"{max(x.rank, y.rank)}; broadcasting covers scalar through rank 4, higher ranks need equal layouts",
            )
        if broadcast_shape([x.shape, y.shape]) is None:
            return check.fail(
                "div.layout",
                f"operands {shape_text(x.shape)} and {shape_text(y.shape)} do not broadcast (each axis equal or 1)",
            )
    shape = broadcast_shape([x.shape, y.shape])
    if tuple(outputs[0].shape) != shape:
        return check.fail(
            "div.output-shape",
            f"output shape {shape_text(outputs[0].shape)} is not the operands' shape {shape_text(shape or ())}",
        )
    if byte_counts(check, "div.byte-count", tensors, _ROLES):
        return check.refusal
    name = activation_name(activation)
    if name not in ACTIVATIONS:
        return check.fail("div.activation", f"fused activation {name}, expected one of {', '.join(ACTIVATIONS)}")
    return None


def activation_bounds(activation: str | int, dtype: str | np.dtype) -> tuple[float, float]:
    """(lower, upper) clamp of `activation` for FP32 or FP16; unbounded ends are the finite dtype limits."""
    name = activation_name(activation)
    limit = {"float32": FLT_MAX, "float16": HALF_MAX}.get(np.dtype(dtype).name)
    if limit is None:
        raise KernelError(f"{OPERATOR} activation bounds: dtype {np.dtype(dtype).name}, expected float32 or float16")
    bounds = {"NONE": (-limit, limit), "RELU": (0.0, limit), "RELU_N1_TO_1": (-1.0, 1.0), "RELU6": (0.0, 6.0)}
    if name not in bounds:
        raise KernelError(f"{OPERATOR} activation: {name}, expected one of {', '.join(ACTIVATIONS)}")
    return bounds[name]


def clamp(values: np.ndarray, lower: float, upper: float) -> np.ndarray:
    """min(max(v, lower), upper) elementwise in the values' dtype; a NaN passes through unchanged (payload
    included) and a zero inside the bounds keeps its sign."""
    low = values.dtype.type(lower)
    high = values.dtype.type(upper)
    return np.where(values < low, low, np.where(values > high, high, values))


def reference(x: np.ndarray, y: np.ndarray, activation: str | int = "NONE") -> np.ndarray:
    """x / y with the fused activation, as the route computes it, in the operands' dtype.

    FP32: the IEEE quotient, then the clamp. FP16: the quotient rounded to
    half (computed as the FP32 quotient of the widened operands rounded to
    half, which is the correctly rounded half quotient because FP32 carries
    24 >= 2 x 11 + 2 significand bits), then the clamp in half, then, under
    RELU and RELU6, negative zero becomes positive zero. Raises KernelError
    unless both operands are float32 or both float16.
    """
    x, y = np.asarray(x), np.asarray(y)
    if x.dtype != y.dtype or x.dtype not in (np.float32, np.float16):
        raise KernelError(f"{OPERATOR} reference: operands {x.dtype} and {y.dtype}, expected float32 or float16")
    lower, upper = activation_bounds(activation, x.dtype)
    with np.errstate(all="ignore"):
        quotient = np.divide(x.astype(np.float32), y.astype(np.float32)).astype(x.dtype)
    result = clamp(quotient, lower, upper)
    if x.dtype == np.float16 and activation_name(activation) in ("RELU", "RELU6"):
        result = np.where(result == 0, np.float16(0.0), result)
    return np.asarray(result, dtype=x.dtype)
