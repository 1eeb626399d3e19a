"""The built-in planner: `plan_model(...) -> (plan_document, report_document)`.

For subgraph 0 of a model, a platform and a configuration, the planner
writes exactly the plan of docs/aot-plan.md:

1. admission (`heliabuild.aot.admission`): operators the platform cannot run
   stop the conversion with one PlanRefusedError listing each by id;
2. the configuration is checked against the platform and the knob table
   (unknown knobs or values, memories the platform does not have, an
   approximate value requested without `allow_approximate`);
3. `operators[]`: ids from `heliabuild.model.ids` (a stable id that would also select another operator
   falls back to the node id, with a warning naming the operators); one knob entry per knob
   that applies (`heliabuild.aot.knobs`), resolved from the winning
   `operators` rule, then `optimization.knobs`, then `auto`; `kernel` and
   `fixed` from the entry table (`heliabuild.aot.entries`, `entry_table`), null where
   heliabuild has no table. Operators without a table (an `ethos-u` command
   stream, the fence, anything else) are planned with no knobs and null
   kernel fields, never guessed;
4. `tensors[]`: every constant storage root the operators read
   (`heliabuild.aot.facts.storage_roots`) in first-reader order; its `id` is
   the root tensor's name, with `#1`, `#2` added to repeats in that order
   (Vela names every command stream `ethos_u_command_stream`), or `#<tensor
   index>` for a tensor without a name; residency from the merged
   `memory.tensors` rules: `direct`, `pin` (into `destination_memory`;
   a constant an `ethos-u` command stream addresses in place stays `direct`,
   with a warning), or for `stream` the schedule's decision;
5. the schedule (`heliabuild.aot.schedule`): without `optimization.plan`,
   `plan_schedule` when a stream pool is configured and `source: none`
   otherwise; with it, the input plan is read under APPLIED
   (`heliabuild.aot.records`), compared with the plan this conversion
   produces (`heliabuild.aot.replay.compare_plan`), and its schedule applied
   (`schedule_check.derive`, which rejects it naming the unit or tensor);
6. the report (`heliabuild.aot.report`).

`make_plan` returns the same documents and the conversion's warnings.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from heliabuild import __version__
from heliabuild.aot import entries, knobs
from heliabuild.aot.admission import check_admission
from heliabuild.aot.config import AotConfig, ConfigError, OperatorRule, TensorRequest, as_config
from heliabuild.aot.facts import (
    NPU_OPERATOR,
    REASON_FIXED_IN_PLACE,
    REASON_PINNED,
    OperatorFacts,
    model_facts,
    storage_roots,
    unstageable_reasons,
)
from heliabuild.aot.platforms import Platform, get_platform
from heliabuild.aot.prefix import check_prefix
from heliabuild.aot.schedule import OperatorOrder, Schedule, ScheduleConstant, SchedulePool, align_up
from heliabuild.aot.schedule_check import derive
from heliabuild.aot.schedule_plan import plan_schedule, schedule_warnings, tensor_placements
from heliabuild.errors import HeliaError
from heliabuild.model.ids import operator_id_warnings
from heliabuild.model.io import Model, load_model, model_sha256

SCHEMA_VERSION = 1
SUBGRAPH = 0
DEFAULT_KNOB_SOURCE = {"kind": "default", "rule": None}


class PlanInputError(HeliaError):
    """A model, configuration or input plan the planner cannot use (besides refused operators)."""


@dataclass(frozen=True)
class PlanResult:
    """What one conversion produced: the plan and report documents and its warnings (one sentence each)."""

    plan: dict[str, Any]
    report: dict[str, Any]
    warnings: tuple[str, ...]


@dataclass(frozen=True)
class PlannedConstant:
    """One `tensors[]` entry as the planner decided it, before the schedule fills `unit` and `pool_offset`."""

    id: str
    requested: TensorRequest
    memory: str
    destination_memory: str | None
    pinned: bool
    schedule: ScheduleConstant


def plan_model(
    model: Model | str | os.PathLike[str],
    platform: Platform | str,
    config: AotConfig | Mapping[str, Any] | str | os.PathLike[str] | None = None,
    *,
    module_prefix: str,
    vela_per_layer: str | os.PathLike[str] | None = None,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The plan and report documents of `model` for `platform` under `config` (module docstring)."""
    result = make_plan(model, platform, config, module_prefix=module_prefix, vela_per_layer=vela_per_layer)
    return result.plan, result.report


def make_plan(
    model: Model | str | os.PathLike[str],
    platform: Platform | str,
    config: AotConfig | Mapping[str, Any] | str | os.PathLike[str] | None = None,
    *,
    module_prefix: str,
    vela_per_layer: str | os.PathLike[str] | None = None,
) -> PlanResult:
    """plan_model, with the conversion's warnings."""
    return _Conversion(
        load_model(model), get_platform(platform), as_config(config), module_prefix, vela_per_layer
    ).run()


class _Conversion:
    def __init__(
        self,
        model: Model,
        platform: Platform,
        config: AotConfig,
        module_prefix: str,
        vela_per_layer: str | os.PathLike[str] | None,
    ) -> None:
        self.model = model
        self.platform = platform
        self.config = config
        self.prefix = check_prefix(module_prefix)
        self.vela_per_layer = vela_per_layer
        self.warnings: list[str] = []
        if not model.subgraphs:
            raise PlanInputError(f"{model.name}: the model has no subgraph to plan")

    # --- the steps ----------------------------------------------------------------------------------------------

    def run(self) -> PlanResult:
        self.facts = model_facts(self.model, SUBGRAPH)
        self.warnings.extend(operator_id_warnings(self.model, SUBGRAPH))
        check_admission(self.model, self.platform, None, SUBGRAPH)
        self._check_configuration()
        self.order = OperatorOrder(tuple(f.id for f in self.facts))
        operators = [self._operator(f) for f in self.facts]
        self.constants = self._constants()
        self.pool = self._pool()
        self._check_capacity()
        self.engines = {(t.source, t.destination): t.engines for t in self.platform.transfers}
        schedule = plan_schedule(self._schedule_constants(), self.order, self.pool, self.engines)
        plan = self._document(operators, schedule)
        if self.config.plan_path is not None:
            schedule = self._replay(plan)
            plan = self._document(operators, schedule)
        self.warnings.extend(schedule_warnings(schedule, self._schedule_constants()))
        report = self._report(plan, schedule)
        return PlanResult(plan=plan, report=report, warnings=tuple(dict.fromkeys(self.warnings)))

    # --- configuration against the platform and the knob table --------------------------------------------------

    def _where(self) -> str:
        return self.config.source

    def _check_knob(self, name: str, value: str, where: str) -> None:
        if name not in knobs.KNOBS:
            raise ConfigError(f"{where}: unknown knob {name!r}; expected one of {', '.join(knobs.KNOBS)}")
        spec = knobs.KNOBS[name]
        if not spec.accepts(value):
            raise ConfigError(
                f"{where}: knob {name} value {value!r} is unknown; expected one of "
                f"{', '.join((knobs.AUTO, *spec.values))}"
            )
        if value in spec.approximate and not self.config.allow_approximate:
            raise ConfigError(
                f"{where}: knob {name} value {value!r} is approximate, but optimization.allow_approximate is false",
                hint="set optimization.allow_approximate: true to permit approximate values",
            )

    def _memory(self, name: str, where: str) -> str:
        memory = self.platform.memory(name)
        if memory is None:
            names = ", ".join(m.name for m in self.platform.memories)
            raise ConfigError(f"{where}: memory {name!r} is not a memory of {self.platform.name} ({names})")
        return memory.name

    def _check_configuration(self) -> None:
        source = self._where()
        for name, value in self.config.knobs.items():
            self._check_knob(name, value, f"{source}: optimization.knobs")
        ids_and_nodes = {f.id for f in self.facts} | {f.node_id for f in self.facts}
        for position, rule in enumerate(self.config.operators):
            assert isinstance(rule, OperatorRule)
            where = f"{source}: operators.{position}"
            for name, value in rule.knobs.items():
                self._check_knob(name, value, where)
            if not any(rule.matches(f.index, f.op_type, (f.id, f.node_id)) for f in self.facts):
                wanted = ", ".join(f"{k} {v!r}" for k, v in rule.to_json().items() if k != "knobs")
                known = (
                    " (an id is a stable id or a node id)"
                    if rule.id is not None and rule.id not in ids_and_nodes
                    else ""
                )
                self.warnings.append(f"{where} ({wanted}) matches no operator of {self.model.name}{known}")
        for position, rule in enumerate(self.config.tensors):
            where = f"{source}: memory.tensors.{position}"
            for field_name in ("memory", "destination_memory"):
                value = getattr(rule, field_name)
                if value is not None:
                    self._memory(value, f"{where}.{field_name}")
        pool = self.config.stream_pool
        if pool is not None:
            assert not isinstance(pool, Mapping)
            memory = self._memory(pool.memory, f"{source}: memory.stream_pool.memory")
            size = self.platform.memory(memory).bytes  # type: ignore[union-attr]
            if pool.bytes > size:
                raise ConfigError(
                    f"{source}: memory.stream_pool.bytes: {pool.bytes} bytes do not fit {memory} "
                    f"({size} bytes on {self.platform.name})"
                )

    # --- operators ------------------------------------------------------------------------------------------------

    def _requested(self, facts: OperatorFacts, name: str) -> tuple[str, dict[str, Any]]:
        """The value requested for knob `name` of the operator and its source: the last matching rule setting
        it, else optimization.knobs, else auto (default)."""
        winner: tuple[int, OperatorRule] | None = None
        for position, rule in enumerate(self.config.operators):
            assert isinstance(rule, OperatorRule)
            if name in rule.knobs and rule.matches(facts.index, facts.op_type, (facts.id, facts.node_id)):
                winner = (position, rule)
        if winner is not None:
            position, rule = winner
            return rule.knobs[name], {"kind": "operator", "rule": rule.source_rule(position)}
        if name in self.config.knobs:
            return self.config.knobs[name], {"kind": "model", "rule": None}
        return knobs.AUTO, dict(DEFAULT_KNOB_SOURCE)

    def _operator(self, facts: OperatorFacts) -> dict[str, Any]:
        chosen: dict[str, dict[str, Any]] = {}
        values: dict[str, str] = {}
        for name in knobs.applicable_knobs(facts, self.platform.capabilities):
            requested, source = self._requested(facts, name)
            explicit = requested != knobs.AUTO
            value = requested if explicit else knobs.auto_value(name, self.config.goal, self.config.allow_approximate)
            values[name] = value
            chosen[name] = {
                "value": value,
                "requested": requested,
                "resolved_by": "explicit" if explicit else "auto_table",
                "approximate": knobs.is_approximate(name, value),
                "source": source,
            }
        choice = entries.kernel_choice(facts, values, self.platform.capabilities)
        return {
            "id": facts.id,
            "id_source": facts.id_source,
            "index": facts.index,
            "node_id": facts.node_id,
            "op_type": facts.op_type,
            "knobs": chosen,
            "kernel": choice.to_plan(),
            "fixed": entries.fixed_choices(facts, choice),
        }

    # --- constants ------------------------------------------------------------------------------------------------

    def _constants(self) -> list[PlannedConstant]:
        roots = storage_roots(self.model, SUBGRAPH)
        reasons = unstageable_reasons(self.model, SUBGRAPH)
        ids = constant_ids([(root.name, root.tensor) for root in roots])
        planned: list[PlannedConstant] = []
        source = self._where()
        for root, constant_id in zip(roots, ids, strict=True):
            request = self.config.requested(constant_id)
            memory = (
                self._memory(request.memory, f"{source}: memory.tensors ({constant_id})") if request.memory else None
            )
            memory = memory or self.platform.constant_memory
            reason = reasons.get(root.tensor)
            pinned = False
            destination: str | None = None
            if request.residency == "pin":
                if reason == REASON_FIXED_IN_PLACE:
                    self.warnings.append(
                        f"constant {constant_id!r} may be pinned but an {NPU_OPERATOR} command stream addresses it "
                        "in place; it stays direct"
                    )
                elif request.destination_memory is None:
                    raise ConfigError(
                        f"{source}: memory.tensors: constant {constant_id!r} is pinned but no rule gives its "
                        "destination_memory",
                        hint="add destination_memory (e.g. DTCM) to the rule that pins it",
                    )
                else:
                    pinned = True
                    destination = self._memory(request.destination_memory, f"{source}: memory.tensors ({constant_id})")
            if pinned and reason is None:
                reason = REASON_PINNED
            planned.append(
                PlannedConstant(
                    id=constant_id,
                    requested=request,
                    memory=memory,
                    destination_memory=destination,
                    pinned=pinned,
                    schedule=ScheduleConstant(
                        id=constant_id,
                        storage_id=None,
                        bytes=root.bytes,
                        alignment=self.platform.alignment,
                        memory=memory,
                        permitted=request.residency == "stream",
                        stageable_reason=reason,
                        readers=root.readers,
                    ),
                )
            )
        return planned

    def _check_capacity(self) -> None:
        """Refuse a placement whose constants, pinned copies or stream pool do not fit their memories.

        Each memory holds its stored constants laid out in `tensors[]` order at the
        platform's alignment, the pinned copies made into it, and the stream pool.
        """
        needed: dict[str, int] = {}
        for constant in self.constants:
            size = align_up(constant.schedule.bytes, constant.schedule.alignment)
            needed[constant.memory] = needed.get(constant.memory, 0) + size
            if constant.pinned and constant.destination_memory is not None:
                needed[constant.destination_memory] = needed.get(constant.destination_memory, 0) + size
        if self.pool is not None:
            needed[self.pool.memory] = needed.get(self.pool.memory, 0) + self.pool.bytes
        for name, required in sorted(needed.items()):
            memory = self.platform.memory(name)
            if memory is not None and required > memory.bytes:
                raise PlanInputError(
                    f"{self.model.name}: the constants, pinned copies and stream pool placed in {name} need "
                    f"{required} bytes, but {self.platform.name}'s {name} holds {memory.bytes}",
                    hint="Store the constants in a larger memory (a memory.tensors rule), or shrink the stream pool.",
                )

    def _schedule_constants(self) -> list[ScheduleConstant]:
        return [constant.schedule for constant in self.constants]

    def _pool(self) -> SchedulePool | None:
        pool = self.config.stream_pool
        if pool is None:
            return None
        assert not isinstance(pool, Mapping)
        memory = self._memory(pool.memory, f"{self._where()}: memory.stream_pool.memory")
        return SchedulePool(memory, pool.bytes, pool.alignment or self.platform.alignment)

    def _tensors(self, schedule: Schedule) -> list[dict[str, Any]]:
        placements = tensor_placements(schedule, self._schedule_constants())
        documents = []
        for constant in self.constants:
            placed = placements.get(constant.schedule.name)
            if placed is not None:
                residency = "stream"
            elif constant.pinned:
                residency = "pin"
            else:
                residency = "direct"
            documents.append(
                {
                    "id": constant.id,
                    "storage_id": None,
                    "requested": constant.requested.residency,
                    "residency": residency,
                    "memory": constant.memory,
                    "destination_memory": constant.destination_memory if residency == "pin" else None,
                    "bytes": constant.schedule.bytes,
                    "alignment": constant.schedule.alignment,
                    "unit": None if placed is None else placed[0],
                    "pool_offset": None if placed is None else placed[1],
                }
            )
        return documents

    # --- the documents --------------------------------------------------------------------------------------------

    def _document(self, operators: list[dict[str, Any]], schedule: Schedule) -> dict[str, Any]:
        return {
            "schema_version": SCHEMA_VERSION,
            "generator": {"helia_aot": None, "cmsis_nn_required": None, "heliabuild": __version__},
            "model": {"file": Path(self.model.name).name, "sha256": model_sha256(self.model), "subgraph": SUBGRAPH},
            "module_prefix": self.prefix,
            "platform": self.platform.to_plan(),
            "optimization": {"goal": self.config.goal, "allow_approximate": self.config.allow_approximate, "knobs": {}},
            "operators": operators,
            "tensors": self._tensors(schedule),
            # wait_before and last_reader as operator positions, as docs/aot-plan.md writes them
            "schedule": schedule.to_json(self.order),
        }

    def _replay(self, produced: dict[str, Any]) -> Schedule:
        """Read the input plan, compare it with `produced`, and return its schedule with derived fields."""
        from heliabuild.aot.replay import compare_plan, read_input_plan, replay_schedule

        path = self.config.plan_path
        assert path is not None
        given = read_input_plan(path)
        compare_plan(given, produced)
        schedule = replay_schedule(given) or Schedule.none(None)
        # derive checks the schedule first, stated derived fields included (wait_before and last_reader as the
        # operator positions a plan states, or ids), and rejects it naming the unit or tensor.
        return derive(schedule, self._schedule_constants(), self.order, self.pool, self.engines)

    def _report(self, plan: dict[str, Any], schedule: Schedule) -> dict[str, Any]:
        from heliabuild.aot.report import build_report

        return build_report(
            self.model,
            plan,
            platform=self.platform,
            facts=self.facts,
            constants=self._schedule_constants(),
            schedule=schedule,
            vela_per_layer=self.vela_per_layer,
        )


def constant_ids(roots: Sequence[tuple[str, int]]) -> list[str]:
    """The `tensors[].id` of each storage root (name, tensor index), in order: the name, `#1`, `#2` ... on
    repeats, `#<tensor index>` for a tensor without a name; an id that would still repeat gets the next free
    suffix."""
    taken: set[str] = set()
    counts: dict[str, int] = {}
    result: list[str] = []
    for name, tensor in roots:
        base = name or f"#{tensor}"
        count = counts.get(base, 0)
        candidate = base if count == 0 else f"{base}#{count}"
        while candidate in taken:
            count += 1
            candidate = f"{base}#{count}"
        counts[base] = count + 1
        taken.add(candidate)
        result.append(candidate)
    return result
