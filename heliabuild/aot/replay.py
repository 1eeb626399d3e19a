"""Reading a plan as input (`optimization.plan`): the comparison with the conversion the configuration produces.

The plan document ("Reading a plan as input") applies a plan's `schedule`
and requires every other section to describe the conversion:

- `read_input_plan(path)` reads the plan under `APPLIED` (an unknown field
  under `schedule`, `schedule.pool` or `schedule.units[]` is rejected);
- `compare_plan(input_plan, produced_plan)` raises `PlanMismatchError` naming
  the first differing field and both values, by the document's rules (the
  order is documented in docs/aot-plan.md, "Replaying a plan");
- `replay_schedule(input_plan)` hands the input plan's schedule (its input
  fields and the derived fields it states) to the planner, which checks it
  with `heliabuild.aot.schedule` and writes it back with its derived fields.

Not compared: `generator`, `module_prefix`, `optimization`, `model.file`,
`platform` other than `name`, `operators[].id`, `id_source`, `index` and
`kernel`, knobs and fixed choices only one side names, `tensors[].unit` and
`pool_offset`, the `schedule` (applied instead), unknown fields and the
report.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from enum import Enum
from typing import Any, NoReturn

from heliabuild.aot.records import APPLIED, OptimizationPlan, PlanOperator, PlanTensor, Residency, load_plan
from heliabuild.aot.schedule import Schedule
from heliabuild.errors import PlanMismatchError

MISMATCH_HINT = (
    "A plan read as input must describe the conversion the configuration produces: convert the same model for the "
    "same target with the same rules, and edit only the plan's schedule."
)

_INTERCHANGEABLE = frozenset({Residency.DIRECT.value, Residency.STREAM.value})


def read_input_plan(path: str | os.PathLike[str]) -> OptimizationPlan:
    """Read the plan `optimization.plan` names, under `APPLIED`. Raises PlanReadError."""
    return load_plan(path, APPLIED)


def replay_schedule(input_plan: OptimizationPlan) -> Schedule | None:
    """The input plan's `schedule` section, for the planner to check and apply; None when the plan has none.

    The schedule holds the input fields of each unit (`id`, `tensors`,
    `pool_offset`, `issue_after`, `engine`) and the derived fields the plan
    states (None where it states none); `heliabuild.aot.schedule` validates it
    and derives the rest. The plan must have been read under `APPLIED`
    (`read_input_plan`), so that an unknown field under `schedule` was
    rejected: ValueError otherwise.
    """
    if input_plan.context is not APPLIED:
        raise ValueError(
            f"the plan {input_plan.origin!r} was not read under APPLIED: read a plan given as input with "
            "read_input_plan(path) or load_plan(path, APPLIED)"
        )
    return input_plan.schedule


def compare_plan(
    input_plan: OptimizationPlan | Mapping[str, Any], produced_plan: OptimizationPlan | Mapping[str, Any]
) -> None:
    """Raise PlanMismatchError unless `input_plan` describes the conversion that produced `produced_plan`.

    Either plan may be given as its document (read with
    `OptimizationPlan.from_json`). The error names the input plan (its
    `origin`), the first differing field by its path in the input plan and
    both values, and carries them as `field`, `plan_value` and
    `conversion_value`. Checked in order: `model.sha256` (a null one is
    rejected), `model.subgraph`, `platform.name`; `operators` by position
    (`node_id`, `op_type`, the `value` of every knob and fixed choice both
    name, by name; then the count); `tensors` when the input plan lists any
    (an entry listed twice, each input entry in order, then the conversion's
    entries the plan lacks).
    """
    plan = (
        input_plan
        if isinstance(input_plan, OptimizationPlan)
        else OptimizationPlan.from_json(input_plan, "<input plan>")
    )
    produced = (
        produced_plan
        if isinstance(produced_plan, OptimizationPlan)
        else OptimizationPlan.from_json(produced_plan, "<conversion plan>")
    )
    _Comparison(plan, produced).run()


def _plain(value: Any) -> Any:
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, tuple):
        return [_plain(item) for item in value]
    return value


def _show(value: Any) -> str:
    """A value in JSON spelling, for messages."""
    return json.dumps(_plain(value))


def _same(left: Any, right: Any) -> bool:
    """JSON equality: `true` is not `1`, and enum members equal their strings."""
    left, right = _plain(left), _plain(right)
    return isinstance(left, bool) == isinstance(right, bool) and left == right


def _same_memory(left: str | None, right: str | None) -> bool:
    """Memory names match in any letter case; null matches only null."""
    if left is None or right is None:
        return left is right
    return left.casefold() == right.casefold()


def _constant(tensor: PlanTensor) -> str:
    if tensor.storage_id is None:
        return f"constant {tensor.id!r}"
    return f"constant {tensor.id!r} (storage_id {tensor.storage_id!r})"


class _Comparison:
    """One comparison of an input plan with the conversion's plan; `run` raises at the first difference."""

    def __init__(self, plan: OptimizationPlan, produced: OptimizationPlan) -> None:
        self.plan = plan
        self.produced = produced
        self.where = f"optimization.plan {plan.origin or '<input plan>'}"

    def reject(self, field: str, detail: str, plan_value: Any, conversion_value: Any) -> NoReturn:
        raise PlanMismatchError(
            f"{self.where} does not describe this conversion: {detail}",
            MISMATCH_HINT,
            field=field,
            plan_value=_plain(plan_value),
            conversion_value=_plain(conversion_value),
        )

    def differ(self, field: str, plan_value: Any, conversion_value: Any) -> NoReturn:
        self.reject(
            field,
            f"{field} is {_show(plan_value)} in the plan but {_show(conversion_value)} in the conversion.",
            plan_value,
            conversion_value,
        )

    def run(self) -> None:
        self.model()
        self.operators()
        self.tensors()

    def model(self) -> None:
        plan, produced = self.plan, self.produced
        if plan.model.sha256 is None:
            self.reject(
                "model.sha256",
                "model.sha256 is null in the plan, so the plan names no model "
                f"(the conversion's model has {_show(produced.model.sha256)}).",
                None,
                produced.model.sha256,
            )
        if plan.model.sha256 != produced.model.sha256:
            self.differ("model.sha256", plan.model.sha256, produced.model.sha256)
        if not _same(plan.model.subgraph, produced.model.subgraph):
            self.differ("model.subgraph", plan.model.subgraph, produced.model.subgraph)
        if plan.platform.name != produced.platform.name:
            self.differ("platform.name", plan.platform.name, produced.platform.name)

    def operators(self) -> None:
        mine, theirs = self.plan.operators, self.produced.operators
        for position, (operator, other) in enumerate(zip(mine, theirs, strict=False)):
            self.operator(f"operators.{position}", operator, other)
        if len(mine) != len(theirs):
            self.reject(
                "operators",
                f"the plan lists {len(mine)} operators but the conversion has {len(theirs)}.",
                len(mine),
                len(theirs),
            )

    def operator(self, path: str, operator: PlanOperator, other: PlanOperator) -> None:
        if operator.node_id != other.node_id:
            self.differ(f"{path}.node_id", operator.node_id, other.node_id)
        if operator.op_type != other.op_type:
            self.differ(f"{path}.op_type", operator.op_type, other.op_type)
        for choice in sorted(operator.knobs, key=lambda item: str(item.name)):
            counterpart = other.knob(choice.name)
            if counterpart is not None and not _same(choice.value, counterpart.value):
                self.differ(f"{path}.knobs.{choice.name}.value", choice.value, counterpart.value)
        for fixed in sorted(operator.fixed, key=lambda item: item.name):
            counterpart_fixed = other.fixed_choice(fixed.name)
            if counterpart_fixed is not None and not _same(fixed.value, counterpart_fixed.value):
                self.differ(f"{path}.fixed.{fixed.name}.value", fixed.value, counterpart_fixed.value)

    def tensors(self) -> None:
        mine = self.plan.tensors
        if not mine:
            return  # plans of heliaAOT 1.3 and earlier list no constants: nothing to compare
        positions = self.positions(mine, "the plan")
        theirs = self.produced.tensors
        produced = {tensor.key: tensor for tensor in reversed(theirs)}  # the first entry of a key wins
        for position, tensor in enumerate(mine):
            path = f"tensors.{position}"
            other = produced.get(tensor.key)
            if other is None:
                self.reject(
                    path,
                    f"{path} is {_constant(tensor)} in the plan, which is not a constant of the conversion.",
                    list(tensor.key),
                    None,
                )
            self.tensor(path, tensor, other)
        for other in theirs:
            if other.key not in positions:
                self.reject(
                    "tensors",
                    f"the conversion's {_constant(other)} is not in the plan's tensors.",
                    None,
                    list(other.key),
                )

    def positions(self, tensors: Sequence[PlanTensor], side: str) -> dict[tuple[str, str | None], int]:
        """The position of each key; an entry listed twice is a rejection."""
        positions: dict[tuple[str, str | None], int] = {}
        for position, tensor in enumerate(tensors):
            first = positions.setdefault(tensor.key, position)
            if first != position:
                self.reject(
                    f"tensors.{position}",
                    f"tensors.{position} lists {_constant(tensor)} a second time in {side} (first at tensors.{first}).",
                    list(tensor.key),
                    None,
                )
        return positions

    def tensor(self, path: str, tensor: PlanTensor, other: PlanTensor) -> None:
        if not _same(tensor.requested, other.requested):
            self.differ(f"{path}.requested", tensor.requested, other.requested)
        permits_stream = other.requested == Residency.STREAM
        interchangeable = permits_stream and {str(tensor.residency), str(other.residency)} <= _INTERCHANGEABLE
        if not interchangeable and not _same(tensor.residency, other.residency):
            self.differ(f"{path}.residency", tensor.residency, other.residency)
        if tensor.memory is not None and not _same_memory(tensor.memory, other.memory):
            self.differ(f"{path}.memory", tensor.memory, other.memory)
        if not _same_memory(tensor.destination_memory, other.destination_memory):
            self.differ(f"{path}.destination_memory", tensor.destination_memory, other.destination_memory)
        if not _same(tensor.bytes, other.bytes):
            self.differ(f"{path}.bytes", tensor.bytes, other.bytes)
        if not _same(tensor.alignment, other.alignment):
            self.differ(f"{path}.alignment", tensor.alignment, other.alignment)


__all__ = ["MISMATCH_HINT", "compare_plan", "read_input_plan", "replay_schedule"]
