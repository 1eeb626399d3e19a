"""The plan's records (`<prefix>_plan.json`): `OptimizationPlan` and the records it nests, the reader and
writer of its `schedule` section, and `load_plan` (the rules: heliabuild.aot.records)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field, fields, replace
from enum import StrEnum
from typing import Any, Self

from heliabuild.aot.binding import (
    APPLIED,
    Parse,
    ValidationContext,
    _array,
    _boolean,
    _check_version,
    _free_object,
    _integer,
    _join,
    _json,
    _mapping,
    _member,
    _nullable,
    _optional,
    _read_json_file,
    _Reader,
    _Record,
    _record,
    _required,
    _string,
    known_member,
)
from heliabuild.aot.enums import (
    KNOB_VALUES,
    Engine,
    Goal,
    IdSource,
    KnobName,
    Requantization,
    Residency,
    ResolvedBy,
    ScheduleSource,
    SetBy,
    SourceKind,
)
from heliabuild.aot.schedule import UNKNOWN_FIELD_HINT, OperatorOrder, Schedule, SchedulePool, Unit

APPLIED_UNKNOWN_HINT = UNKNOWN_FIELD_HINT
"""The hint of an unknown field under `schedule` in a plan read as input (the document's wording)."""


@dataclass(frozen=True, kw_only=True)
class PlanGenerator(_Record):
    """`generator`: the heliaAOT release that wrote the file (None when heliabuild did), the ns-cmsis-nn version
    the module requires, and heliabuild's version when heliabuild wrote it."""

    helia_aot: str | None = field(default=None, metadata=_optional(_nullable(_string)))
    cmsis_nn_required: str | None = field(default=None, metadata=_optional(_nullable(_string)))
    heliabuild: str | None = field(default=None, metadata=_optional(_nullable(_string)))


@dataclass(frozen=True, kw_only=True)
class PlanModel(_Record):
    """`model`: the model's file name, the SHA-256 of its bytes (None when not recorded) and the subgraph."""

    file: str = field(metadata=_required(_string))
    sha256: str | None = field(metadata=_required(_nullable(_string)))
    subgraph: int = field(metadata=_required(_integer))


@dataclass(frozen=True, kw_only=True)
class PlanPlatform(_Record):
    """`platform`: the target's name, CPU (`core` in files of heliaAOT 0.30 and earlier), capabilities and
    whether it supports FP16."""

    name: str = field(metadata=_required(_string))
    cpu: str = field(metadata=_required(_string))
    capabilities: tuple[str, ...] = field(default=(), metadata=_optional(_array(_string)))
    supports_fp16: bool | None = field(default=None, metadata=_optional(_nullable(_boolean)))

    @classmethod
    def _prepare(cls, document: dict[str, Any]) -> dict[str, Any]:
        if "cpu" not in document and "core" in document:
            renamed = dict(document)
            renamed["cpu"] = renamed.pop("core")
            return renamed
        return document


@dataclass(frozen=True, kw_only=True)
class PlanOptimization(_Record):
    """`optimization`: the goal, the approximation gate and the (reserved, empty) model-level knobs, kept as read."""

    goal: Goal | str = field(metadata=_required(_member(Goal)))
    allow_approximate: bool = field(metadata=_required(_boolean))
    knobs: dict[str, Any] = field(default_factory=dict, metadata=_optional(_free_object))


@dataclass(frozen=True, kw_only=True)
class KnobRule(_Record):
    """The winning `operators` rule of a knob: its position in the rules, and the type and id it matches."""

    position: int = field(metadata=_required(_integer))
    type: str | None = field(default=None, metadata=_optional(_nullable(_string)))
    id: str | None = field(default=None, metadata=_optional(_nullable(_string)))


@dataclass(frozen=True, kw_only=True)
class KnobSource(_Record):
    """Where a knob's request came from: `kind` and, for `operator`, the winning `rule`."""

    kind: SourceKind | str = field(metadata=_required(_member(SourceKind)))
    rule: KnobRule | None = field(default=None, metadata=_optional(_nullable(_record(KnobRule))))


@dataclass(frozen=True, kw_only=True)
class KnobChoice(_Record):
    """One knob of an operator (`operators[].knobs.<name>`): the value used, the value requested, how it was
    resolved, whether it is approximate (None where the knob has no approximate alternative) and its source.

    `name` is the knob's key; `value` and `requested` are members of the knob's value enum
    (`KNOB_VALUES`) when heliabuild knows both knob and value, else the strings written.
    """

    name: KnobName | str
    value: str = field(metadata=_required(_string))
    requested: str = field(metadata=_required(_string))
    resolved_by: ResolvedBy | str = field(metadata=_required(_member(ResolvedBy)))
    approximate: bool | None = field(default=None, metadata=_optional(_nullable(_boolean)))
    source: KnobSource = field(metadata=_required(_record(KnobSource)))

    @classmethod
    def read_json(cls, value: Any, reader: _Reader, path: str, **extra: Any) -> Self:
        choice = super().read_json(value, reader, path, **extra)
        values = KNOB_VALUES.get(choice.name)
        return replace(
            choice, value=known_member(values, choice.value), requested=known_member(values, choice.requested)
        )


@dataclass(frozen=True, kw_only=True)
class KernelChoice(_Record):
    """`operators[].kernel`: the ns-cmsis-nn entry, the opaque provider, the candidates in precedence order, the
    requantization route and the local scratch bytes; each None where unknown (and absent in older plans)."""

    entry: str | None = field(default=None, metadata=_optional(_nullable(_string)))
    provider: str | None = field(default=None, metadata=_optional(_nullable(_string)))
    candidates: tuple[str, ...] | None = field(default=None, metadata=_optional(_nullable(_array(_string))))
    requantization: Requantization | str | None = field(
        default=None, metadata=_optional(_nullable(_member(Requantization)))
    )
    local_scratch_bytes: int | None = field(default=None, metadata=_optional(_nullable(_integer)))


@dataclass(frozen=True, kw_only=True)
class FixedChoice(_Record):
    """One `operators[].fixed.<name>` choice: its value (a JSON scalar, kept as written) and what set it."""

    name: str
    value: Any = field(metadata=_required(_json))
    set_by: SetBy | str = field(metadata=_required(_member(SetBy)))


def _named(cls: type[_Record], names: type[StrEnum] | None = None) -> Parse:
    """A JSON object of records keyed by name, read as a tuple of records whose `name` is the key (a member of
    `names` when it is one), sorted by name: the order of an object's keys means nothing."""

    def read(value: Any, reader: _Reader, path: str) -> tuple[Any, ...]:
        document = _mapping(value, reader, path)
        return tuple(
            cls.read_json(document[name], reader, _join(path, name), name=known_member(names, name))
            for name in sorted(document)
        )

    return read


def _dump_named(records: tuple[Any, ...]) -> dict[str, Any]:
    return {str(record.name): record.to_json() for record in records}


@dataclass(frozen=True, kw_only=True)
class PlanOperator(_Record):
    """One `operators[]` entry: stable id and how it was made, position, AIR node id, operator type, the knobs
    that apply (sorted by name), the kernel choice and the fixed choices."""

    id: str = field(metadata=_required(_string))
    id_source: IdSource | str | None = field(default=None, metadata=_optional(_nullable(_member(IdSource))))
    index: int = field(metadata=_required(_integer))
    node_id: str = field(metadata=_required(_string))
    op_type: str = field(metadata=_required(_string))
    knobs: tuple[KnobChoice, ...] = field(
        default=(), metadata=_optional(_named(KnobChoice, KnobName), dump=_dump_named)
    )
    kernel: KernelChoice = field(default_factory=KernelChoice, metadata=_optional(_record(KernelChoice)))
    fixed: tuple[FixedChoice, ...] = field(default=(), metadata=_optional(_named(FixedChoice), dump=_dump_named))

    def knob(self, name: str) -> KnobChoice | None:
        """The knob called `name`, None when it does not apply."""
        return next((choice for choice in self.knobs if choice.name == name), None)

    def fixed_choice(self, name: str) -> FixedChoice | None:
        """The fixed choice called `name`, None when the operator has none."""
        return next((choice for choice in self.fixed if choice.name == name), None)


@dataclass(frozen=True, kw_only=True)
class PlanTensor(_Record):
    """One `tensors[]` entry: a constant the operators read, by storage root (see the plan document)."""

    id: str = field(metadata=_required(_string))
    storage_id: str | None = field(default=None, metadata=_optional(_nullable(_string)))
    requested: Residency | str | None = field(default=None, metadata=_optional(_nullable(_member(Residency))))
    residency: Residency | str = field(metadata=_required(_member(Residency)))
    memory: str | None = field(default=None, metadata=_optional(_nullable(_string)))
    destination_memory: str | None = field(default=None, metadata=_optional(_nullable(_string)))
    bytes: int = field(metadata=_required(_integer))
    alignment: int = field(metadata=_required(_integer))
    unit: int | None = field(default=None, metadata=_optional(_nullable(_integer)))
    pool_offset: int | None = field(default=None, metadata=_optional(_nullable(_integer)))

    @property
    def key(self) -> tuple[str, str | None]:
        """(`id`, `storage_id`): what a plan read as input is compared by."""
        return (self.id, self.storage_id)

    @property
    def name(self) -> str:
        """The name a schedule unit gives the constant: its storage_id when it has one, else its id."""
        return self.id if self.storage_id is None else self.storage_id


_SCHEDULE_FIELDS = ("source", "pool", "units")


_POOL_FIELDS = ("memory", "bytes", "alignment")


_UNIT_FIELDS = tuple(item.name for item in fields(Unit))


def _applied_fields(document: dict[str, Any], known: tuple[str, ...], reader: _Reader, path: str) -> None:
    """Under APPLIED, reject the fields of a schedule object this release does not know (the document's wording)."""
    if reader.context is not APPLIED:
        return
    unknown = sorted(set(document) - set(known))
    if unknown:
        reader.fail(
            path,
            f"unknown field(s) {unknown!r} under schedule, which this release would have to apply.",
            APPLIED_UNKNOWN_HINT,
        )


def _take(document: dict[str, Any], key: str, parse: Parse, reader: _Reader, path: str) -> Any:
    if key not in document:
        reader.fail(path, f"missing field {key!r}.")
    return parse(document[key], reader, _join(path, key))


def _operator_reference(value: Any, reader: _Reader, path: str) -> int | str:
    """A derived unit field naming an operator: its position (an integer) or its id (a string), as written."""
    if isinstance(value, str):
        return value
    return _integer(value, reader, path)


def _pool(value: Any, reader: _Reader, path: str) -> SchedulePool:
    document = _mapping(value, reader, path)
    _applied_fields(document, _POOL_FIELDS, reader, path)
    return SchedulePool(
        memory=_take(document, "memory", _string, reader, path),
        bytes=_take(document, "bytes", _integer, reader, path),
        alignment=_take(document, "alignment", _integer, reader, path),
    )


_UNIT_DERIVED: dict[str, Parse] = {
    "bytes": _nullable(_integer),
    "source_memory": _nullable(_string),
    "source_offset": _nullable(_integer),
    "wait_before": _nullable(_operator_reference),
    "last_reader": _nullable(_operator_reference),
}


def _unit(value: Any, reader: _Reader, path: str) -> Unit:
    document = _mapping(value, reader, path)
    _applied_fields(document, _UNIT_FIELDS, reader, path)
    derived = {
        key: parse(document[key], reader, _join(path, key)) for key, parse in _UNIT_DERIVED.items() if key in document
    }
    return Unit(
        id=_take(document, "id", _integer, reader, path),
        tensors=_take(document, "tensors", _array(_string), reader, path),
        pool_offset=_take(document, "pool_offset", _integer, reader, path),
        issue_after=_take(document, "issue_after", _nullable(_string), reader, path),
        engine=_take(document, "engine", _member(Engine), reader, path),
        **derived,
    )


def _schedule(value: Any, reader: _Reader, path: str) -> Schedule:
    document = _mapping(value, reader, path)
    _applied_fields(document, _SCHEDULE_FIELDS, reader, path)
    source = _take(document, "source", _member(ScheduleSource), reader, path)
    pool = _nullable(_pool)(document.get("pool"), reader, _join(path, "pool"))
    units = _array(_unit)(document.get("units", []), reader, _join(path, "units"))
    return Schedule(source=source, pool=pool, units=units)


def read_schedule(
    document: Any, source: str = "<schedule document>", context: ValidationContext | None = None
) -> Schedule:
    """Read a plan's `schedule` section alone, by the rules `OptimizationPlan` reads it by (paths start `schedule`).

    `source` names the plan in errors; under `context=APPLIED` an unknown field under `schedule`,
    `schedule.pool` or `schedule.units[i]` is rejected with the document's message and hint. Raises PlanReadError.
    """
    return _schedule(document, _Reader(source, context, "optimization plan"), "schedule")


def dump_schedule(schedule: Schedule | None, operators: OperatorOrder | None = None) -> dict[str, Any] | None:
    """The `schedule` section as a plan writes it (`Schedule.to_json`); with `operators`, units write
    `wait_before` and `last_reader` as operator positions."""
    return None if schedule is None else schedule.to_json(operators)


@dataclass(frozen=True, kw_only=True)
class OptimizationPlan(_Record):
    """`<prefix>_plan.json` (see the module docstring for the reading rules).

    `origin` is the file (or name) the plan was read from and `context` the
    validation context it was read under; neither is part of the document nor
    compared.
    """

    schema_version: int = field(metadata=_required(_integer))
    generator: PlanGenerator = field(metadata=_required(_record(PlanGenerator)))
    model: PlanModel = field(metadata=_required(_record(PlanModel)))
    module_prefix: str = field(metadata=_required(_string))
    platform: PlanPlatform = field(metadata=_required(_record(PlanPlatform)))
    optimization: PlanOptimization = field(metadata=_required(_record(PlanOptimization)))
    operators: tuple[PlanOperator, ...] = field(metadata=_required(_array(_record(PlanOperator))))
    tensors: tuple[PlanTensor, ...] = field(default=(), metadata=_optional(_array(_record(PlanTensor))))
    schedule: Schedule | None = field(default=None, metadata=_optional(_nullable(_schedule), dump=dump_schedule))
    origin: str | None = field(default=None, compare=False)
    context: ValidationContext | None = field(default=None, compare=False)

    @classmethod
    def from_json(
        cls, document: Any, source: str = "<plan document>", context: ValidationContext | None = None
    ) -> OptimizationPlan:
        """Read a plan document; `source` names it in errors (a path as given). Raises PlanReadError."""
        reader = _Reader(source, context, "optimization plan")
        return cls.read_json(_check_version(document, reader), reader, "", origin=source, context=context)


def load_plan(path: str | os.PathLike[str], context: ValidationContext | None = None) -> OptimizationPlan:
    """Read the plan file at `path` (named in errors as given). Raises PlanReadError."""
    source = os.fspath(path)
    document = _read_json_file(path, _Reader(source, context, "optimization plan"))
    return OptimizationPlan.from_json(document, source, context)
