"""The report's hints (`hints[]` of `<prefix>_report.json`): what a user could change, never a change.

Each hint has a free-form `facts` object:

- a knob hint per knob, listing the operators where the knob applies that do
  not run the value `auto` picks for `goal: latency` with
  `allow_approximate: true` (kernel `specialized`, accumulation `fast`),
  where that value applies, leaving out operators an `operators` rule pins
  (knob source `operator`);
- the placement hint, when the constants read directly from outside TCM (a
  memory whose name contains `TCM`), leaving out those fixed in place (which
  cannot move), all come from one cold memory (neither a TCM nor SRAM) and
  fit, with their alignment, in the free DTCM: the DTCM's
  bytes less the stream pool when it lies there and the constants already
  stored in or pinned to it. heliabuild does not lay out the activation
  arena, so the free DTCM does not count it; `facts` says so.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from heliabuild.aot import knobs
from heliabuild.aot.facts import REASON_FIXED_IN_PLACE, OperatorFacts, storage_roots
from heliabuild.model.io import Model

LATENCY_GOAL = "latency"


DTCM = "DTCM"


WARM_MEMORIES = ("SRAM",)
"""Memories besides the TCMs that the placement hint does not call cold."""


def knob_hints(
    facts: Sequence[OperatorFacts], operators: Sequence[Mapping[str, Any]], capabilities: Sequence[str]
) -> list[dict[str, Any]]:
    """One knob hint per knob with operators to list (module docstring)."""
    hints: list[dict[str, Any]] = []
    for name in knobs.KNOBS:
        target = knobs.auto_value(name, LATENCY_GOAL, True)
        listed: list[str] = []
        current: dict[str, int] = {}
        for layer, operator in zip(facts, operators, strict=True):
            choice = (operator.get("knobs") or {}).get(name)
            if choice is None or choice.get("value") == target:
                continue
            if (choice.get("source") or {}).get("kind") == "operator":
                continue
            if not any(v == target and ok for v, ok, _ in knobs.alternatives(name, layer, capabilities)):
                continue
            listed.append(layer.id)
            current[choice["value"]] = current.get(choice["value"], 0) + 1
        if not listed:
            continue
        approximate = bool(knobs.is_approximate(name, target))
        setting = f"{name}: {target}"
        goal = "goal: latency with allow_approximate: true" if approximate else "goal: latency"
        hints.append(
            {
                "kind": "knob",
                "message": (
                    f"{len(listed)} operator(s) where {setting} applies run another value; set {setting} under "
                    f"optimization.knobs (or {goal}) to select it" + (" (approximate)" if approximate else "") + "."
                ),
                "operator_ids": listed,
                "facts": {
                    "knob": name,
                    "value": target,
                    "approximate": approximate,
                    "current_values": dict(sorted(current.items())),
                },
            }
        )
    return hints


def _is_tcm(memory: str) -> bool:
    return "TCM" in memory.upper()


def _align(value: int, alignment: int) -> int:
    return -(-value // max(alignment, 1)) * max(alignment, 1)


def placement_hint(
    plan: Mapping[str, Any],
    model: Model,
    platform: Any,
    ids: Mapping[int, str],
    reasons: Mapping[int, str | None] | None = None,
) -> dict[str, Any] | None:
    """The placement hint (module docstring), or None. Constants fixed in place (`reasons`) cannot move and
    are left out."""
    if platform is None or not hasattr(platform, "memory"):
        return None
    dtcm = platform.memory(DTCM)
    if dtcm is None:
        return None
    tensors = plan.get("tensors") or []
    fixed = {ids[root] for root, reason in (reasons or {}).items() if reason == REASON_FIXED_IN_PLACE and root in ids}
    outside = [
        t
        for t in tensors
        if t.get("residency") == "direct"
        and t.get("memory")
        and not _is_tcm(t["memory"])
        and str(t.get("storage_id") or t["id"]) not in fixed
    ]
    if not outside:
        return None
    memories = {str(t["memory"]).upper() for t in outside}
    if len(memories) != 1:
        return None
    memory = str(outside[0]["memory"])
    if memory.upper() in WARM_MEMORIES:
        return None
    used = 0
    for entry in tensors:
        where = entry.get("destination_memory") if entry.get("residency") == "pin" else entry.get("memory")
        if entry.get("residency") != "stream" and where and str(where).upper() == DTCM:
            used += _align(int(entry["bytes"]), int(entry.get("alignment") or 1))
    pool = (plan.get("schedule") or {}).get("pool")
    pool_bytes = int(pool["bytes"]) if pool and str(pool["memory"]).upper() == DTCM else 0
    free = dtcm.bytes - used - pool_bytes
    needed = sum(_align(int(t["bytes"]), int(t.get("alignment") or 1)) for t in outside)
    if needed > free:
        return None
    wanted = {str(t.get("storage_id") or t["id"]) for t in outside}
    readers: set[int] = set()
    for root in storage_roots(model):
        if ids.get(root.tensor) in wanted:
            readers.update(root.readers)
    operator_ids = [op["id"] for op in plan.get("operators") or [] if op.get("index") in readers]
    return {
        "kind": "placement",
        "message": (
            f"The {len(outside)} constant(s) read from outside TCM ({needed} bytes) all come from {memory} and fit "
            f"in the free {dtcm.name} ({free} bytes): a memory.tensors rule with residency pin and "
            f"destination_memory {dtcm.name} would place them there."
        ),
        "operator_ids": operator_ids,
        "facts": {
            "memory": memory,
            "constants": len(outside),
            "bytes": needed,
            "destination_memory": dtcm.name,
            "destination_bytes": dtcm.bytes,
            "destination_used_bytes": used,
            "stream_pool_bytes": pool_bytes,
            "destination_free_bytes": free,
            "activation_arena_counted": False,
        },
    }
