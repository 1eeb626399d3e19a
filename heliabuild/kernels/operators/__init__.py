"""Reference semantics and admission checks of the AOT operator contracts.

One module per operator family (aot-operator-contracts.md):

- `comparisons`: EQUAL, NOT_EQUAL, GREATER, GREATER_EQUAL, LESS, LESS_EQUAL on INT32
- `select`: SELECT_V2 on a Boolean condition and INT32 values
- `div`: FP32/FP16 DIV with a fused activation
- `neg`: FP32/FP16 NEG
- `squared_difference`: FP32/FP16 SQUARED_DIFFERENCE

Each has `admit(...) -> Refusal | None` (the rules, in `RULES`, in checking
order) and `reference(...)` (numpy semantics, the executable statement of the
contract). `admit(operator, ...)` below dispatches on the TFLite operator name
as the AOT planner sees it; `require(refusal)` raises an AdmissionError.
"""

from __future__ import annotations

from collections.abc import Sequence

from heliabuild.kernels.operators import comparisons, div, neg, select, squared_difference
from heliabuild.kernels.operators.admission import (
    CORTEX_M4,
    CORTEX_M55,
    AdmissionError,
    Refusal,
    TargetCapabilities,
    TensorSpec,
    require,
)

OPERATORS: tuple[str, ...] = (
    *comparisons.OPERATORS,
    select.OPERATOR,
    div.OPERATOR,
    neg.OPERATOR,
    squared_difference.OPERATOR,
)
"""Every TFLite operator name these contracts cover."""

RULES: dict[str, str] = {
    **comparisons.RULES,
    **select.RULES,
    **div.RULES,
    **neg.RULES,
    **squared_difference.RULES,
}
"""Every admission rule id -> the contract's sentence."""


def admit(
    operator: str,
    inputs: Sequence[TensorSpec],
    outputs: Sequence[TensorSpec],
    *,
    activation: str | int = "NONE",
    target: TargetCapabilities,
) -> Refusal | None:
    """None when the route of `operator` (a TFLite builtin name) takes these tensors, activation and target.

    Raises KeyError-free: an operator outside OPERATORS, or a fused
    activation on an operator without one, is itself a Refusal (rule
    `operator.unsupported` / `operator.activation`).
    """
    name = operator.upper()
    if name != div.OPERATOR and str(activation).upper() not in ("NONE", "0"):
        return Refusal(name, "operator.activation", f"{name}: fused activation {activation} on an operator without one")
    if name in comparisons.OPERATORS:
        return comparisons.admit(name, inputs, outputs, target=target)
    if name == select.OPERATOR:
        return select.admit(inputs, outputs, target=target)
    if name == div.OPERATOR:
        return div.admit(inputs, outputs, activation=activation, target=target)
    if name == neg.OPERATOR:
        return neg.admit(inputs, outputs, target=target)
    if name == squared_difference.OPERATOR:
        return squared_difference.admit(inputs, outputs, target=target)
    return Refusal(
        name, "operator.unsupported", f"{name}: no operator contract here; expected one of {', '.join(OPERATORS)}"
    )


__all__ = [
    "CORTEX_M4",
    "CORTEX_M55",
    "OPERATORS",
    "RULES",
    "AdmissionError",
    "Refusal",
    "TargetCapabilities",
    "TensorSpec",
    "admit",
    "comparisons",
    "div",
    "neg",
    "require",
    "select",
    "squared_difference",
]
