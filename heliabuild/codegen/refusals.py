"""A model's refused operators as a person reads them: grouped by operator type, counted, the first few by index.

`ModuleRefusal` is one operator the module generator cannot lower: its index, stable id, type and the reason
(`no_kernel` when heliabuild has no kernel for the type at all; otherwise the reason names the refused form:
a dtype, a fused activation, a broadcast rank, a quantization). `summary(refusals, total)` is the grouped
sentence, at most `SUMMARY_LIMIT` characters (docs/firmware.md, "Refusals"):

    refuses 254 of 310 operators: no kernel for SPLIT x34 (ops 12 '0:split', 29, 46, ...), TANH x68 (...) ...

Groups are in the order of their first operator. The detail shrinks until the sentence fits: first the stable
id of each group's first operator is dropped, then the indices beyond the first, then the groups that do not
fit are counted (`and 3 more types`). A group refused for a form, not for its type, keeps its first operator's
reason. `supported_hint(forms)` says what the backend runs, generated from the admission table (type -> forms),
so it lists nothing the table does not admit.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

SUMMARY_LIMIT = 240
"""The longest grouped sentence (the message adds the model's path and `the module generator ` in front)."""

SHOWN_INDICES = 3
"""Operator indices listed per group before `...`."""


@dataclass(frozen=True)
class ModuleRefusal:
    """One operator the module generator refuses: position, stable id, type and why."""

    index: int
    id: str
    op_type: str
    reason: str
    no_kernel: bool = False

    def to_json(self) -> dict[str, object]:
        return {
            "id": self.id,
            "index": self.index,
            "no_kernel": self.no_kernel,
            "op_type": self.op_type,
            "reason": self.reason,
        }

    def __str__(self) -> str:
        return f"op {self.index} {self.id!r} ({self.op_type}): {self.reason}"


def _groups(refusals: Sequence[ModuleRefusal]) -> list[list[ModuleRefusal]]:
    by_type: dict[tuple[str, bool], list[ModuleRefusal]] = {}
    for refusal in refusals:
        by_type.setdefault((refusal.op_type, refusal.no_kernel), []).append(refusal)
    return sorted(by_type.values(), key=lambda group: group[0].index)


def _group_text(group: Sequence[ModuleRefusal], indices: int, with_id: bool) -> str:
    first = group[0]
    shown = [str(r.index) for r in group[:indices]]
    if with_id:
        shown[0] += f" {first.id!r}"
    listed = ", ".join(shown) + (", ..." if len(group) > indices else "")
    where = f"{'ops' if len(group) > 1 else 'op'} {listed}"
    count = f" x{len(group)}" if len(group) > 1 else ""
    reason = "" if first.no_kernel else f": {first.reason}"
    return f"{first.op_type}{count} ({where}{reason})"


def _sentence(
    groups: Sequence[Sequence[ModuleRefusal]], head: str, indices: int, with_id: bool, limit: int
) -> tuple[str, int]:
    """The sections `no kernel for ...` and `refused forms: ...` and how many groups did not fit (counted at
    the end)."""
    ordered = [g for g in groups if g[0].no_kernel] + [g for g in groups if not g[0].no_kernel]
    text, hidden = head, len(ordered)
    for position in range(len(ordered)):
        candidate = ordered[: position + 1]
        rest = len(ordered) - len(candidate)
        missing = [_group_text(g, indices, with_id) for g in candidate if g[0].no_kernel]
        forms = [_group_text(g, indices, with_id) for g in candidate if not g[0].no_kernel]
        parts = (["no kernel for " + ", ".join(missing)] if missing else []) + (
            ["refused forms: " + ", ".join(forms)] if forms else []
        )
        tail = f"; and {rest} more type{'s' if rest != 1 else ''}" if rest else ""
        attempt = head + "; ".join(parts) + tail
        if len(attempt) > limit and position > 0:
            break
        text, hidden = attempt, rest
    return text, hidden


def summary(refusals: Sequence[ModuleRefusal], total: int, limit: int = SUMMARY_LIMIT) -> str:
    """The grouped sentence of `refusals` (nonempty) among `total` operators, at most `limit` characters."""
    count = len(refusals)
    head = f"refuses {count} of {total} operator{'s' if total != 1 else ''}: "
    groups = _groups(refusals)
    for indices, with_id in ((SHOWN_INDICES, True), (SHOWN_INDICES, False), (1, False)):
        text, hidden = _sentence(groups, head, indices, with_id, limit)
        if hidden == 0 and len(text) <= limit:
            return text
    return text


def supported_hint(forms: Mapping[str, str]) -> str:
    """What the backend runs, from its admission table `forms` (operator type -> the forms it admits),
    operators sharing a form listed together in the table's order."""
    by_form: dict[str, list[str]] = {}
    for op_type, form in forms.items():
        by_form.setdefault(form, []).append(op_type)
    listed = "; ".join(f"{form}: {', '.join(types)}" for form, types in by_form.items())
    return f"the qemu-m55 backend runs {listed} (docs/firmware.md, 'Kernels')"
