"""Typed records of heliaAOT-format optimization plans and reports, read by the document's rules.

`OptimizationPlan` and `OptimizationReport` (frozen dataclasses of small
nested records) read `<prefix>_plan.json` and `<prefix>_report.json` as the
plan document's "Schema versions" section asks (docs/aot-plan.md, "Plan and
report schemas"):

- a field a record does not know is ignored;
- a knob, knob value or enum member it does not know is kept as the string
  written (known ones are `StrEnum` members, which compare equal to their
  strings);
- only `schema_version` other than 1 is a rejection by version (a
  `PlanReadError` naming the file and both versions); a known field of the
  wrong JSON type or a missing required field is a `PlanReadError` naming the
  field path;
- `platform.core` (heliaAOT 0.30 and earlier) reads as `platform.cpu`;
- under `context=APPLIED` (a plan read as input with `optimization.plan`), an
  unknown field under `schedule`, `schedule.pool` or `schedule.units[i]` is
  rejected with the document's message and hint, and every read error starts
  `optimization.plan <path> is not an optimization plan this release reads:`.

`to_json()` writes back every field the record knows: a known field absent
from the file reads as its default and stays absent, so for a plan heliabuild
wrote (or any file without unknown fields, save `core`)
`to_json(from_json(document)) == document`.

The plan's `schedule` section reuses the records of `heliabuild.aot.schedule`
(`Schedule`, `SchedulePool`, `Unit`); a unit's derived fields that the file does
not state are None and are not written back. This module is the one reader of
that section (`read_schedule` reads it alone); `Schedule.to_json` (through
`dump_schedule`) is its one writer.

Readers do not validate against the JSON Schemas: `validate_plan_document` and
`validate_report_document` check a document against `schemas/plan-schema.json`
and `schemas/report-schema.json`, which list exactly what heliabuild writes.
"""

from __future__ import annotations

import copy
import json
import os
from collections.abc import Callable, Mapping
from dataclasses import MISSING, Field, dataclass, field, fields, replace
from enum import Enum, StrEnum
from functools import cache
from typing import Any, NoReturn, Self, TypeVar

from heliabuild.aot.schedule import UNKNOWN_FIELD_HINT, OperatorOrder, Schedule, SchedulePool, Unit
from heliabuild.documents import read_json
from heliabuild.errors import PlanReadError, SchemaError

SCHEMA_VERSION = 1
"""The `schema_version` this release reads and writes."""

PLAN_SCHEMA_FILE = "plan-schema.json"
REPORT_SCHEMA_FILE = "report-schema.json"

APPLIED_UNKNOWN_HINT = UNKNOWN_FIELD_HINT
"""The hint of an unknown field under `schedule` in a plan read as input (the document's wording)."""

VERSION_HINT = (
    "Read the file with the heliaAOT or heliabuild release that wrote it (its generator field names it), "
    "or write it again with this one."
)


class ValidationContext(StrEnum):
    """How strictly a plan is read; `APPLIED`: the plan is read as input and its schedule applied."""

    APPLIED = "applied"


APPLIED = ValidationContext.APPLIED


# ---------------------------------------------------------------------------------------------------------------------
# Enumerations: the members heliabuild knows. A reader keeps any other member as the string written.


class KnobName(StrEnum):
    KERNEL = "kernel"
    ACCUMULATION = "accumulation"


class KernelValue(StrEnum):
    AUTO = "auto"
    SPECIALIZED = "specialized"
    GENERIC = "generic"


class AccumulationValue(StrEnum):
    AUTO = "auto"
    PRECISE = "precise"
    FAST = "fast"


KNOB_VALUES: Mapping[str, type[StrEnum]] = {KnobName.KERNEL: KernelValue, KnobName.ACCUMULATION: AccumulationValue}
"""The values of each knob heliabuild knows (`auto` is only ever requested, never used)."""


class ResolvedBy(StrEnum):
    EXPLICIT = "explicit"
    AUTO_TABLE = "auto_table"
    AUTO_HEURISTIC = "auto_heuristic"  # reserved
    PLAN = "plan"  # reserved


class SourceKind(StrEnum):
    OPERATOR = "operator"
    MODEL = "model"
    DEFAULT = "default"
    PLAN = "plan"  # reserved


class IdSource(StrEnum):
    OUTPUT_NAME = "output_name"
    OP_TYPE_POSITION = "op_type_position"
    NODE_ID = "node_id"


class Residency(StrEnum):
    DIRECT = "direct"
    PIN = "pin"
    STREAM = "stream"


class Requantization(StrEnum):
    RSHIFT_ONLY = "rshift_only"
    GENERAL = "general"


class SetBy(StrEnum):
    ATTRIBUTE = "attribute"
    DEFAULT = "default"
    HEURISTIC = "heuristic"
    KNOB = "knob"
    PLACEMENT = "placement"
    PLAN = "plan"  # reserved


class Engine(StrEnum):
    CPU = "cpu"
    DMA = "dma"


class ScheduleSource(StrEnum):
    PLAN = "plan"
    NONE = "none"


class Goal(StrEnum):
    LATENCY = "latency"
    BALANCED = "balanced"
    SIZE = "size"
    ACCURACY = "accuracy"


class HintKind(StrEnum):
    KNOB = "knob"
    PLACEMENT = "placement"


_E = TypeVar("_E", bound=StrEnum)


def known_member(kind: type[_E] | None, value: str) -> _E | str:
    """`value` as a member of `kind` when it is one, else the string itself."""
    if kind is not None:
        member = kind._value2member_map_.get(value)
        if member is not None:
            return member  # type: ignore[return-value]
    return value


# ---------------------------------------------------------------------------------------------------------------------
# Reading machinery


@dataclass(frozen=True)
class _Reader:
    """The file being read (`source`, as given), the validation context and what the file should be."""

    source: str
    context: ValidationContext | None
    kind: str

    def fail(self, path: str, detail: str, hint: str | None = None) -> NoReturn:
        where = f"optimization.plan {self.source}" if self.context is APPLIED else self.source
        location = f"{path}: " if path else ""
        raise PlanReadError(f"{where} is not an {self.kind} this release reads: {location}{detail}", hint)


Parse = Callable[[Any, _Reader, str], Any]
"""A field reader: (JSON value, reader, field path) -> the record's value; fails through the reader."""

_PARSE = "heliabuild.parse"
_DUMP = "heliabuild.dump"
_OPTIONAL = "heliabuild.optional"


def _join(path: str, key: str | int) -> str:
    return f"{path}.{key}" if path else str(key)


def _show(value: Any) -> str:
    text = json.dumps(_plain(value), sort_keys=True)
    return text if len(text) <= 80 else text[:77] + "..."


def _plain(value: Any) -> Any:
    """`value` as plain JSON data: records as documents, enum members as their strings, tuples as lists."""
    if isinstance(value, _Record):
        return value.to_json()
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, (tuple, list)):
        return [_plain(item) for item in value]
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    return value


def _mapping(value: Any, reader: _Reader, path: str) -> dict[str, Any]:
    if isinstance(value, dict):
        return value
    reader.fail(path, f"expected an object, found {_show(value)}.")


def _string(value: Any, reader: _Reader, path: str) -> str:
    if isinstance(value, str):
        return value
    reader.fail(path, f"expected a string, found {_show(value)}.")


def _integer(value: Any, reader: _Reader, path: str) -> int:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    reader.fail(path, f"expected an integer, found {_show(value)}.")


def _boolean(value: Any, reader: _Reader, path: str) -> bool:
    if isinstance(value, bool):
        return value
    reader.fail(path, f"expected true or false, found {_show(value)}.")


def _number(value: Any, reader: _Reader, path: str) -> int | float:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return value
    reader.fail(path, f"expected a number, found {_show(value)}.")


def _json(value: Any, reader: _Reader, path: str) -> Any:
    """Any JSON value, copied."""
    return copy.deepcopy(value)


def _free_object(value: Any, reader: _Reader, path: str) -> dict[str, Any]:
    """A free-form JSON object, copied."""
    return copy.deepcopy(_mapping(value, reader, path))


def _nullable(parse: Parse) -> Parse:
    def read(value: Any, reader: _Reader, path: str) -> Any:
        return None if value is None else parse(value, reader, path)

    return read


def _array(parse: Parse) -> Parse:
    def read(value: Any, reader: _Reader, path: str) -> tuple[Any, ...]:
        if not isinstance(value, list):
            reader.fail(path, f"expected an array, found {_show(value)}.")
        return tuple(parse(item, reader, _join(path, position)) for position, item in enumerate(value))

    return read


def _member(kind: type[StrEnum]) -> Parse:
    def read(value: Any, reader: _Reader, path: str) -> StrEnum | str:
        return known_member(kind, _string(value, reader, path))

    return read


def _record(cls: type[_Record]) -> Parse:
    def read(value: Any, reader: _Reader, path: str) -> _Record:
        return cls.read_json(value, reader, path)

    return read


def _required(parse: Parse, *, dump: Callable[[Any], Any] | None = None) -> dict[str, Any]:
    """Field metadata of a field every file of schema version 1 has (absent is a read error): `parse` reads the
    JSON value, `dump` (default: plain JSON of the value) writes it."""
    return {_PARSE: parse, _DUMP: dump}


def _optional(parse: Parse, *, dump: Callable[[Any], Any] | None = None) -> dict[str, Any]:
    """Field metadata of a field a file may leave out: absent reads as the field's default and is written back
    absent."""
    return {_PARSE: parse, _DUMP: dump, _OPTIONAL: True}


@cache
def _json_fields(cls: type) -> tuple[Field[Any], ...]:
    return tuple(item for item in fields(cls) if _PARSE in item.metadata)


def _default_of(item: Field[Any]) -> Any:
    if item.default is not MISSING:
        return item.default
    if item.default_factory is not MISSING:
        return item.default_factory()
    return MISSING


@dataclass(frozen=True, kw_only=True)
class _Record:
    """A record read from a JSON object: its fields with `_PARSE` metadata are the object's fields, by name.

    `omitted` names the optional fields the file left out, so `to_json` leaves
    them out again while they keep their default value.
    """

    omitted: frozenset[str] = field(default=frozenset(), compare=False, repr=False)

    @classmethod
    def _prepare(cls, document: dict[str, Any]) -> dict[str, Any]:
        """Rename fields of older files before reading (identity unless a record overrides it)."""
        return document

    @classmethod
    def read_json(cls, value: Any, reader: _Reader, path: str, **extra: Any) -> Self:
        """Read the record from JSON `value` at field path `path`; `extra` sets fields that are not in the object."""
        document = cls._prepare(_mapping(value, reader, path))
        values: dict[str, Any] = {}
        omitted: set[str] = set()
        for item in _json_fields(cls):
            if item.name in document:
                values[item.name] = item.metadata[_PARSE](document[item.name], reader, _join(path, item.name))
            elif item.metadata.get(_OPTIONAL):
                omitted.add(item.name)
            else:
                reader.fail(path, f"missing field {item.name!r}.")
        return cls(**values, **extra, omitted=frozenset(omitted))

    def to_json(self) -> dict[str, Any]:
        """The JSON object of every known field, leaving out optional fields the file left out (at their default)."""
        document: dict[str, Any] = {}
        for item in _json_fields(type(self)):
            value = getattr(self, item.name)
            if item.name in self.omitted and value == _default_of(item):
                continue
            dump = item.metadata[_DUMP]
            document[item.name] = dump(value) if dump is not None else _plain(value)
        return document


# ---------------------------------------------------------------------------------------------------------------------
# The plan


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


def _check_version(document: Any, reader: _Reader) -> dict[str, Any]:
    """The document as an object whose `schema_version` is this release's, else a PlanReadError."""
    if not isinstance(document, dict):
        reader.fail("", f"expected a JSON object, found {_show(document)}.")
    if "schema_version" not in document:
        reader.fail("", f"missing field 'schema_version' (this release reads schema_version {SCHEMA_VERSION}).")
    found = document["schema_version"]
    if type(found) is not int or found != SCHEMA_VERSION:
        reader.fail(
            "schema_version",
            f"the file has schema_version {_show(found)}; this release reads schema_version {SCHEMA_VERSION}.",
            VERSION_HINT,
        )
    return document


def _read_json_file(path: str | os.PathLike[str], reader: _Reader) -> Any:
    """The JSON document in the file `path`, read as heliabuild.documents says; PlanReadError through
    `reader` when the file is not a bounded regular file of UTF-8 JSON values."""
    try:
        return read_json(path, "file", error=PlanReadError)
    except PlanReadError as error:
        reader.fail("", f"{error.message.removeprefix(f'{os.fspath(path)}: ')}.")


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


# ---------------------------------------------------------------------------------------------------------------------
# The report


@dataclass(frozen=True, kw_only=True)
class KnobAlternative(_Record):
    """One alternative value of a knob for an operator: whether it applies on this target and, if not, why."""

    value: str = field(metadata=_required(_string))
    applies: bool = field(metadata=_required(_boolean))
    reason: str | None = field(default=None, metadata=_optional(_nullable(_string)))


@dataclass(frozen=True)
class ReportKnob:
    """The alternatives of knob `name` (`operators[].knobs.<name>` of the report)."""

    name: KnobName | str
    alternatives: tuple[KnobAlternative, ...]


def _report_knobs(value: Any, reader: _Reader, path: str) -> tuple[ReportKnob, ...]:
    document = _mapping(value, reader, path)
    knobs: list[ReportKnob] = []
    for name in sorted(document):
        values = KNOB_VALUES.get(name)
        alternatives = _array(_record(KnobAlternative))(document[name], reader, _join(path, name))
        typed = tuple(replace(item, value=known_member(values, item.value)) for item in alternatives)
        knobs.append(ReportKnob(name=known_member(KnobName, name), alternatives=typed))
    return tuple(knobs)


def _dump_report_knobs(knobs: tuple[ReportKnob, ...]) -> dict[str, Any]:
    return {str(knob.name): [item.to_json() for item in knob.alternatives] for knob in knobs}


@dataclass(frozen=True, kw_only=True)
class ConstantFact(_Record):
    """A constant an operator reads (`operators[].constants[]`): whether it could be staged into a stream pool,
    and why not."""

    id: str = field(metadata=_required(_string))
    bytes: int = field(metadata=_required(_integer))
    stageable: bool = field(metadata=_required(_boolean))
    reason: str | None = field(default=None, metadata=_optional(_nullable(_string)))


@dataclass(frozen=True, kw_only=True)
class ReportOperator(_Record):
    """One report `operators[]` entry; `knobs` are sorted by name."""

    id: str = field(metadata=_required(_string))
    index: int | None = field(default=None, metadata=_optional(_nullable(_integer)))
    node_id: str | None = field(default=None, metadata=_optional(_nullable(_string)))
    op_type: str | None = field(default=None, metadata=_optional(_nullable(_string)))
    entry: str | None = field(default=None, metadata=_optional(_nullable(_string)))
    macs: int | None = field(default=None, metadata=_optional(_nullable(_integer)))
    knobs: tuple[ReportKnob, ...] = field(default=(), metadata=_optional(_report_knobs, dump=_dump_report_knobs))
    constants: tuple[ConstantFact, ...] = field(default=(), metadata=_optional(_array(_record(ConstantFact))))


@dataclass(frozen=True, kw_only=True)
class ReportSpan(_Record):
    """A span of the stream pool (`stream_pool.layout[]`, `stream_pool.pieces[]`): unit, offset in the pool, bytes."""

    unit: int = field(metadata=_required(_integer))
    offset: int = field(metadata=_required(_integer))
    bytes: int = field(metadata=_required(_integer))


@dataclass(frozen=True, kw_only=True)
class ReportStreamPool(_Record):
    """`stream_pool`: the pool's memory, bytes and alignment, each unit's span and the pieces of the units."""

    memory: str = field(metadata=_required(_string))
    bytes: int = field(metadata=_required(_integer))
    alignment: int = field(metadata=_required(_integer))
    layout: tuple[ReportSpan, ...] = field(default=(), metadata=_optional(_array(_record(ReportSpan))))
    pieces: tuple[ReportSpan, ...] = field(default=(), metadata=_optional(_array(_record(ReportSpan))))


@dataclass(frozen=True, kw_only=True)
class ReportKernelCall(_Record):
    """One CORE function the generated source calls, and the operators calling it."""

    symbol: str = field(metadata=_required(_string))
    operator_ids: tuple[str, ...] = field(metadata=_required(_array(_string)))


@dataclass(frozen=True, kw_only=True)
class KernelCalls(_Record):
    """`kernel_calls`: the calls, sorted by symbol, and the operators without call coverage."""

    calls: tuple[ReportKernelCall, ...] = field(metadata=_required(_array(_record(ReportKernelCall))))
    unrecorded_operator_ids: tuple[str, ...] = field(default=(), metadata=_optional(_array(_string)))


@dataclass(frozen=True, kw_only=True)
class Hint(_Record):
    """One hint the results print: its kind, message, the operators it names and free-form facts."""

    kind: HintKind | str = field(metadata=_required(_member(HintKind)))
    message: str = field(metadata=_required(_string))
    operator_ids: tuple[str, ...] = field(default=(), metadata=_optional(_array(_string)))
    facts: dict[str, Any] = field(default_factory=dict, metadata=_optional(_free_object))


@dataclass(frozen=True, kw_only=True)
class Fp16Overflow(_Record):
    """One `fp16_overflow[]` entry: a packed FP16 layer fed from a model input, and its overflow threshold."""

    operator: str = field(metadata=_required(_string))
    entry: str = field(metadata=_required(_string))
    model_input: str = field(metadata=_required(_string))
    path: tuple[str, ...] = field(metadata=_required(_array(_string)))
    threshold: int | float = field(metadata=_required(_number))
    channel: int = field(metadata=_required(_integer))
    block: int = field(metadata=_required(_integer))
    weight_sum: int | float = field(metadata=_required(_number))
    bias: int | float = field(metadata=_required(_number))


@dataclass(frozen=True, kw_only=True)
class OptimizationReport(_Record):
    """`<prefix>_report.json` (see the module docstring for the reading rules). Its content may change between
    releases, so every field but `schema_version` is optional; `kernel_calls` absent reads as None, which
    differs from an empty, covered call list."""

    schema_version: int = field(metadata=_required(_integer))
    generator: PlanGenerator | None = field(default=None, metadata=_optional(_nullable(_record(PlanGenerator))))
    model: PlanModel | None = field(default=None, metadata=_optional(_nullable(_record(PlanModel))))
    module_prefix: str | None = field(default=None, metadata=_optional(_nullable(_string)))
    platform: PlanPlatform | None = field(default=None, metadata=_optional(_nullable(_record(PlanPlatform))))
    operators: tuple[ReportOperator, ...] = field(default=(), metadata=_optional(_array(_record(ReportOperator))))
    stream_pool: ReportStreamPool | None = field(default=None, metadata=_optional(_nullable(_record(ReportStreamPool))))
    kernel_calls: KernelCalls | None = field(default=None, metadata=_optional(_nullable(_record(KernelCalls))))
    hints: tuple[Hint, ...] = field(default=(), metadata=_optional(_array(_record(Hint))))
    folded_variables: tuple[Any, ...] = field(default=(), metadata=_optional(_array(_json)))
    fp16_overflow: tuple[Fp16Overflow, ...] = field(default=(), metadata=_optional(_array(_record(Fp16Overflow))))
    origin: str | None = field(default=None, compare=False)

    @classmethod
    def from_json(cls, document: Any, source: str = "<report document>") -> OptimizationReport:
        """Read a report document; `source` names it in errors. Raises PlanReadError."""
        reader = _Reader(source, None, "optimization report")
        return cls.read_json(_check_version(document, reader), reader, "", origin=source)


def load_report(path: str | os.PathLike[str]) -> OptimizationReport:
    """Read the report file at `path` (named in errors as given). Raises PlanReadError."""
    source = os.fspath(path)
    document = _read_json_file(path, _Reader(source, None, "optimization report"))
    return OptimizationReport.from_json(document, source)


# ---------------------------------------------------------------------------------------------------------------------
# The JSON Schemas


def load_json_schema(file_name: str) -> dict[str, Any]:
    """The schema `schemas/<file_name>` as shipped with the package (PLAN_SCHEMA_FILE, REPORT_SCHEMA_FILE)."""
    from heliabuild.schema_files import load_schema_file

    return load_schema_file(file_name)


def _validate(document: Any, file_name: str, source: str) -> None:
    from heliabuild.schema_files import first_error

    error = first_error(document, file_name)
    if error is not None:
        where = "/".join(str(part) for part in error.absolute_path) or "(top level)"
        raise SchemaError(f"{source}: {where}: {error.message} (schema {file_name})")


def validate_plan_document(document: Any, source: str = "<plan document>") -> None:
    """Raise SchemaError naming `source` and the first failing field unless `document` validates against
    `schemas/plan-schema.json` (what heliabuild writes)."""
    _validate(document, PLAN_SCHEMA_FILE, source)


def validate_report_document(document: Any, source: str = "<report document>") -> None:
    """Raise SchemaError naming `source` and the first failing field unless `document` validates against
    `schemas/report-schema.json` (what heliabuild writes)."""
    _validate(document, REPORT_SCHEMA_FILE, source)


__all__ = [
    "APPLIED",
    "KNOB_VALUES",
    "PLAN_SCHEMA_FILE",
    "REPORT_SCHEMA_FILE",
    "SCHEMA_VERSION",
    "AccumulationValue",
    "ConstantFact",
    "Engine",
    "FixedChoice",
    "Fp16Overflow",
    "Goal",
    "Hint",
    "HintKind",
    "IdSource",
    "KernelCalls",
    "KernelChoice",
    "KernelValue",
    "KnobAlternative",
    "KnobChoice",
    "KnobName",
    "KnobRule",
    "KnobSource",
    "OptimizationPlan",
    "OptimizationReport",
    "PlanGenerator",
    "PlanModel",
    "PlanOperator",
    "PlanOptimization",
    "PlanPlatform",
    "PlanTensor",
    "ReportKernelCall",
    "ReportKnob",
    "ReportOperator",
    "ReportSpan",
    "ReportStreamPool",
    "Requantization",
    "Residency",
    "ResolvedBy",
    "ScheduleSource",
    "SetBy",
    "SourceKind",
    "ValidationContext",
    "dump_schedule",
    "known_member",
    "load_json_schema",
    "load_plan",
    "load_report",
    "read_schedule",
    "validate_plan_document",
    "validate_report_document",
]
