"""The kernel section of a plan's operator, chosen from heliabuild.aot.entry_table.

`kernel_choice(facts, knob_values, capabilities)` gives the plan's `kernel`
section of an operator:

- `candidates`: every entry whose rule holds, in precedence order, for the
  families that enumerate (convolution, depthwise, fully connected); null for
  pooling (its provider does not enumerate alternatives) and for the
  single-entry families that record no entry.
- `entry`: the first candidate the `kernel` knob allows (`specialized`, the
  default: the first; `generic`: the family's generic entry, so specialized
  entries stay listed ahead of it). SOFTMAX, ADD and MUL record a null entry,
  as the document says unmigrated single-entry layers do; their `symbol` is
  still known for the report's `kernel_calls`.
- `provider`: `heliabuild.cmsis_nn.<family>/1` for pooling, convolution,
  depthwise and fully connected; null otherwise. An opaque string: compare it,
  do not parse it.
- `requantization`: for int8 and int16 CONV_2D, DEPTHWISE_CONV_2D and
  FULLY_CONNECTED, from the model's scales (see `requantization`); else null.
- `local_scratch_bytes`: always null: heliabuild does not resolve the local
  tensors the document defines it by.

One route is left unresolved on purpose: on an MVE target an int8 depthwise
layer with one input channel and more than one output channel may be
diverted by `arm_depthwise_conv_wrapper_s8` into a convolution, by a
threshold that depends on the compiler; heliabuild records no entry for it.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass

from heliabuild.aot.entry_table import (
    _SELECTS_BY_QUANTIZATION,
    GENERIC,
    KERNEL_KNOB,
    PACKED,
    PACKED_FP16_ENTRIES,
    SPECIALIZED,
    WEIGHT_LAYOUT,
    Entry,
    _nhwc,
    _out_nhwc,
    family_of,
)
from heliabuild.aot.facts import FENCE_OPERATOR, NPU_OPERATOR, OperatorFacts
from heliabuild.aot.requantization import (
    requantization,
)


def capability_set(capabilities: Collection[str] | object) -> frozenset[str]:
    """A target's capabilities as a frozenset: a collection of names, or anything with `.capabilities`
    (a Platform) or a plan's `platform` dict."""
    if isinstance(capabilities, Mapping):
        return frozenset(str(c) for c in capabilities.get("capabilities", ()))
    found = getattr(capabilities, "capabilities", capabilities)
    return frozenset(str(c) for c in found)  # type: ignore[union-attr]


@dataclass(frozen=True)
class PlannedKernel:
    """The plan's `kernel` section of one operator (module docstring), plus `symbol`, the CORE function the
    generated layer calls for it when the table knows it (the entry, or the single-entry symbol of a family
    that records no entry)."""

    entry: str | None
    provider: str | None
    candidates: tuple[str, ...] | None
    requantization: str | None
    local_scratch_bytes: int | None = None
    symbol: str | None = None

    def to_plan(self) -> dict[str, object]:
        return {
            "entry": self.entry,
            "provider": self.provider,
            "candidates": None if self.candidates is None else list(self.candidates),
            "requantization": self.requantization,
            "local_scratch_bytes": self.local_scratch_bytes,
        }


NO_CHOICE = PlannedKernel(entry=None, provider=None, candidates=None, requantization=None)


def _diverted_depthwise(facts: OperatorFacts, capabilities: frozenset[str]) -> bool:
    if facts.op_type != "DEPTHWISE_CONV_2D" or facts.dtype != "int8" or "MVE" not in capabilities:
        return False
    dims, out = _nhwc(facts), _out_nhwc(facts)
    return dims is not None and out is not None and dims[3] == 1 and out[3] > 1


def specialized_reason(facts: OperatorFacts, capabilities: Collection[str] | object) -> str | None:
    """None when a shape-specialized entry's rule holds for the layer, else why none does (for the report)."""
    caps = capability_set(capabilities)
    family = family_of(facts)
    if family is None:
        return f"heliabuild's entry table has no {facts.dtype} {facts.op_type} entry"
    if _diverted_depthwise(facts, caps):
        return "the wrapper may divert a one-input-channel depthwise layer on MVE; heliabuild records no entry"
    specialized = [entry for entry in family.entries if entry.specialized]
    if not specialized:
        return f"heliabuild's table has no shape-specialized {family.dtype} {family.op_type} entry"
    reasons = []
    for entry in specialized:
        reason = entry.check(facts, caps)
        if reason is None:
            return None
        reasons.append(f"{entry.symbol} {reason}")
    return "; ".join(reasons)


def kernel_choice(
    facts: OperatorFacts,
    knob_values: Mapping[str, str] | None,
    capabilities: Collection[str] | object,
) -> PlannedKernel:
    """The kernel section of the operator under the resolved knob values (module docstring)."""
    caps = capability_set(capabilities)
    family = family_of(facts)
    if family is None:
        return NO_CHOICE
    requant = requantization(facts) if family.requantized else None
    if _diverted_depthwise(facts, caps):
        return PlannedKernel(entry=None, provider=family.provider, candidates=None, requantization=requant)
    candidates = [entry for entry in family.entries if entry.check(facts, caps) is None]
    chosen: Entry | None = None
    if candidates:
        value = (knob_values or {}).get(KERNEL_KNOB, SPECIALIZED)
        key = (family.op_type, family.dtype)
        if value == GENERIC and key not in _SELECTS_BY_QUANTIZATION:
            chosen = family.generic if family.generic in candidates else None
        else:
            chosen = candidates[0]
    symbol = None if chosen is None else chosen.symbol
    return PlannedKernel(
        entry=symbol if family.records_entry else None,
        provider=family.provider,
        candidates=tuple(e.symbol for e in candidates) if family.enumerates else None,
        requantization=requant,
        symbol=symbol,
    )


def weight_layout(facts: OperatorFacts, entry: str | None) -> str | None:
    """`packed` for an FP16 convolution on arm_convolve_1x1_f16 or arm_convolve_1_x_n_f16 (heliabuild packs
    the weights of every such layer), else None (heliabuild records no layout)."""
    if facts.op_type == "CONV_2D" and entry in PACKED_FP16_ENTRIES:
        return PACKED
    return None


def fixed_choices(facts: OperatorFacts, choice: PlannedKernel) -> dict[str, dict[str, str]]:
    """The plan's `fixed` choices heliabuild makes for the operator: `weight_layout: packed`, set by
    heuristic, where `weight_layout` gives one; nothing otherwise."""
    layout = weight_layout(facts, choice.entry)
    if layout is not None:
        return {WEIGHT_LAYOUT: {"value": layout, "set_by": "heuristic"}}
    return {}


def core_calls(facts: OperatorFacts, choice: PlannedKernel) -> list[str] | None:
    """The CORE symbols the generated layer calls directly: [] for `ethos-u` and the stream-split fence
    (they call nothing), the table's symbol for an operator it covers, None (unrecorded) otherwise."""
    if facts.op_type in (NPU_OPERATOR, FENCE_OPERATOR):
        return []
    if choice.symbol is not None:
        return [choice.symbol]
    return None
