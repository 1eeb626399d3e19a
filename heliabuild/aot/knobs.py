"""The knob table: which knobs apply to which operators, their values, and the `auto` table by goal.

Two knobs, each with the value `auto` besides its own:

- `kernel`: `specialized` or `generic`. Applies to CONV_2D,
  DEPTHWISE_CONV_2D, TRANSPOSE_CONV and FULLY_CONNECTED layers whose dtype
  heliabuild's entry table (`heliabuild.aot.entry_table`) covers.
- `accumulation`: `precise` or `fast` (approximate). Applies to FP16 CONV_2D,
  DEPTHWISE_CONV_2D and FULLY_CONNECTED layers on a target with the `FP16`
  capability.

`kernel: specialized` lets a layer call the first shape-specialized entry
whose rule holds; `generic` makes it call its family's generic entry.
`accumulation: fast` accumulates FP16 sums in half precision; it is the one
approximate value, so `auto` picks it only under `allow_approximate: true`.

The `auto` table (`AUTO_TABLE`), by `optimization.goal`:

| goal | kernel | accumulation |
|---|---|---|
| latency | specialized | fast if `allow_approximate`, else precise |
| balanced | specialized | precise |
| size | generic | precise |
| accuracy | specialized | precise |

`size` takes the generic entries because a module that calls fewer distinct
entries links less code; every other goal takes the specialized ones, which
compute the same results faster. Only `latency` trades accuracy, and only
when approximation is allowed.

`applies(knob, facts, capabilities)` is None when the knob applies to the
operator on the target, else the reason it does not. `alternatives(...)`
lists each value of an applicable knob with whether it applies and why not,
as the report shows them: `generic` and `precise` always apply where their
knob does; `specialized` applies when some specialized entry's rule holds
for the layer; `fast` applies wherever its knob does.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from typing import NamedTuple

from heliabuild.aot.entries import capability_set, specialized_reason
from heliabuild.aot.entry_table import GENERIC, KERNEL_KNOB, SPECIALIZED, covered_dtypes, family_of
from heliabuild.aot.facts import OperatorFacts

AUTO = "auto"
ACCUMULATION_KNOB = "accumulation"
PRECISE = "precise"
FAST = "fast"

GOALS = ("latency", "balanced", "size", "accuracy")
DEFAULT_GOAL = "balanced"


@dataclass(frozen=True)
class Knob:
    """A knob: its `values` (without `auto`), the `approximate` ones among them and the operator types it
    can apply to."""

    name: str
    values: tuple[str, ...]
    approximate: frozenset[str]
    op_types: tuple[str, ...]

    @property
    def has_approximate(self) -> bool:
        return bool(self.approximate)

    def accepts(self, value: str) -> bool:
        """A value a configuration may request: one of `values`, or `auto`."""
        return value == AUTO or value in self.values


KNOBS: dict[str, Knob] = {
    KERNEL_KNOB: Knob(
        name=KERNEL_KNOB,
        values=(SPECIALIZED, GENERIC),
        approximate=frozenset(),
        op_types=("CONV_2D", "DEPTHWISE_CONV_2D", "TRANSPOSE_CONV", "FULLY_CONNECTED"),
    ),
    ACCUMULATION_KNOB: Knob(
        name=ACCUMULATION_KNOB,
        values=(PRECISE, FAST),
        approximate=frozenset({FAST}),
        op_types=("CONV_2D", "DEPTHWISE_CONV_2D", "FULLY_CONNECTED"),
    ),
}
"""Every knob, in the order a plan lists them."""

AUTO_TABLE: dict[str, dict[str, tuple[str, str]]] = {
    "latency": {KERNEL_KNOB: (SPECIALIZED, SPECIALIZED), ACCUMULATION_KNOB: (FAST, PRECISE)},
    "balanced": {KERNEL_KNOB: (SPECIALIZED, SPECIALIZED), ACCUMULATION_KNOB: (PRECISE, PRECISE)},
    "size": {KERNEL_KNOB: (GENERIC, GENERIC), ACCUMULATION_KNOB: (PRECISE, PRECISE)},
    "accuracy": {KERNEL_KNOB: (SPECIALIZED, SPECIALIZED), ACCUMULATION_KNOB: (PRECISE, PRECISE)},
}
"""goal -> knob -> (value with allow_approximate, value without)."""


class Alternative(NamedTuple):
    """One value of a knob for one operator: whether it applies there and, if not, why."""

    value: str
    applies: bool
    reason: str | None


def knob(name: str) -> Knob:
    """The knob called `name`; KeyError naming the known knobs otherwise."""
    try:
        return KNOBS[name]
    except KeyError:
        raise KeyError(f"unknown knob {name!r}; expected one of {', '.join(KNOBS)}") from None


def applies(name: str, facts: OperatorFacts, platform_capabilities: Collection[str] | object) -> str | None:
    """None when knob `name` applies to the operator on the target, else the reason it does not."""
    spec = knob(name)
    caps = capability_set(platform_capabilities)
    if facts.op_type not in spec.op_types:
        return f"{name} applies to {', '.join(spec.op_types)}, not {facts.op_type}"
    if name == KERNEL_KNOB:
        if family_of(facts) is None:
            covered = covered_dtypes(facts.op_type)
            listed = ", ".join(covered) if covered else "no dtype"
            return f"heliabuild's entry table covers {listed} for {facts.op_type}, not {facts.dtype}"
        return None
    if facts.dtype != "float16":
        return f"{name} applies to FP16 layers, not {facts.dtype}"
    if "FP16" not in caps:
        return f"{name} needs a target with the FP16 capability"
    return None


def applicable_knobs(facts: OperatorFacts, platform_capabilities: Collection[str] | object) -> list[str]:
    """The knobs that apply to the operator on the target, in KNOBS order."""
    return [name for name in KNOBS if applies(name, facts, platform_capabilities) is None]


def auto_value(name: str, goal: str, allow_approximate: bool) -> str:
    """The value `auto` resolves to for knob `name` under `goal` (module docstring's table)."""
    knob(name)
    if goal not in AUTO_TABLE:
        raise KeyError(f"unknown goal {goal!r}; expected one of {', '.join(GOALS)}")
    with_approximate, without = AUTO_TABLE[goal][name]
    return with_approximate if allow_approximate else without


def is_approximate(name: str, value: str) -> bool | None:
    """Whether `value` is approximate, for a knob with an approximate alternative; None for other knobs."""
    spec = knob(name)
    if not spec.has_approximate:
        return None
    return value in spec.approximate


def alternatives(
    name: str, facts: OperatorFacts, capabilities: Collection[str] | object
) -> list[tuple[str, bool, str | None]]:
    """Each value of knob `name` with whether it applies to the operator on the target and why not.

    Where the knob itself does not apply, every value carries the knob's reason.
    """
    spec = knob(name)
    blocked = applies(name, facts, capabilities)
    result: list[tuple[str, bool, str | None]] = []
    for value in spec.values:
        reason = blocked
        if reason is None and name == KERNEL_KNOB and value == SPECIALIZED:
            reason = specialized_reason(facts, capabilities)
        result.append(Alternative(value, reason is None, reason))
    return result
