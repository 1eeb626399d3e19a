"""Floating-point NEG (FP32 and FP16).

Contract (aot-operator-contracts.md, "Floating-point NEG"): FP32 and FP16
tensors of any rank, scalars included, with identical input and output
shapes and positive static dimensions; each tensor's byte count fits
INT32_MAX; FP16 needs a Cortex-M55-class target. Negation toggles the IEEE
sign bit: subnormals and NaN payloads are preserved, and +0 and -0 exchange.
Integer NEG is not supported.
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
    byte_counts,
    float_route_dtypes,
    positive_extents,
    shape_text,
)

OPERATOR = "NEG"

RULES: dict[str, str] = {
    "neg.arity": "one input and one output",
    "neg.integer": "integer NEG is not supported",
    "neg.dtype": "FP32 or FP16 tensors",
    "neg.same-dtype": "input and output share a dtype",
    "neg.fp16-target": "FP16 needs a Cortex-M55-class target",
    "neg.static-extents": "positive static dimensions (scalars included)",
    "neg.same-shape": "identical input and output shapes",
    "neg.byte-count": "each tensor's byte count fits INT32_MAX",
}

_ROLES = ("input", "output")
_SIGN_BITS = {
    np.dtype(np.float32): (np.uint32, np.uint32(0x8000_0000)),
    np.dtype(np.float16): (np.uint16, np.uint16(0x8000)),
}


def admit(
    inputs: Sequence[TensorSpec],
    outputs: Sequence[TensorSpec],
    *,
    target: TargetCapabilities,
) -> Refusal | None:
    """None when the float NEG route takes these tensors on `target`, else the first broken rule."""
    check = Checker(OPERATOR, RULES)
    if arity(check, "neg.arity", inputs, outputs, 1):
        return check.refusal
    tensors = (inputs[0], outputs[0])
    if float_route_dtypes(check, "neg", tensors, target, "integer NEG is not supported"):
        return check.refusal
    if positive_extents(check, "neg.static-extents", tensors, _ROLES):
        return check.refusal
    if inputs[0].shape != outputs[0].shape:
        return check.fail(
            "neg.same-shape",
            f"output shape {shape_text(outputs[0].shape)} differs from input shape {shape_text(inputs[0].shape)}",
        )
    if byte_counts(check, "neg.byte-count", tensors, _ROLES):
        return check.refusal
    return None


def reference(x: np.ndarray) -> np.ndarray:
    """-x by toggling the IEEE sign bit of every element (any shape, scalars included); no arithmetic, so
    subnormals and NaN payloads survive bit for bit. Raises KernelError unless x is float32 or float16."""
    x = np.asarray(x)
    if x.dtype not in _SIGN_BITS:
        raise KernelError(f"{OPERATOR} reference: input is {x.dtype}, expected float32 or float16")
    bits, sign = _SIGN_BITS[x.dtype]
    return np.bitwise_xor(np.asarray(x, order="C").view(bits), sign).view(x.dtype)
