"""The checks every lowering makes of an operator's operands; a failed check raises `_Refusal` with the reason,
which heliabuild.codegen.lowering.lower_model reports against the operator."""

from __future__ import annotations

from heliabuild.aot.facts import OperatorFacts, TensorFacts
from heliabuild.kernels import int8

MAX_RANK = 6


ACTIVATIONS = ("NONE", "RELU", "RELU6", "RELU_N1_TO_1")


class _Refusal(Exception):
    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def _quant(tensor: TensorFacts, what: str) -> int8.Quant:
    q = tensor.quantization
    if q is None or not q.scales:
        raise _Refusal(f"{what} {tensor.name!r} has no quantization")
    if q.per_axis:
        raise _Refusal(f"{what} {tensor.name!r} is quantized per channel; the kernel needs one scale")
    return int8.Quant(q.scales[0], q.zero_points[0] if q.zero_points else 0)


def _need(condition: bool, reason: str) -> None:
    if not condition:
        raise _Refusal(reason)


def _dtype(tensor: TensorFacts | None, dtype: str, what: str) -> TensorFacts:
    _need(tensor is not None, f"{what} is missing")
    assert tensor is not None
    _need(tensor.dtype == dtype, f"{what} {tensor.name!r} is {tensor.dtype}, expected {dtype}")
    _need(tensor.static, f"{what} {tensor.name!r} has a dynamic shape {list(tensor.shape)}")
    return tensor


def _activation(op: OperatorFacts) -> str:
    activation = op.fused_activation or "NONE"
    _need(activation in ACTIVATIONS, f"fused activation {activation} has no int8 kernel")
    return activation


def _constant(tensor: TensorFacts | None, what: str) -> TensorFacts:
    _need(tensor is not None and tensor.is_constant, f"{what} must be a constant")
    assert tensor is not None
    return tensor
