"""The transfer schedule: units, derived fields, the validator and the planner (docs/aot-plan.md).

Pure, model-independent logic over three facts the planner knows of a
conversion: its operators in execution order (`OperatorOrder`), its constants
in `tensors[]` order (`ScheduleConstant`) and the configured stream pool
(`SchedulePool`, or None), plus the engines the platform offers between two
memories (`EngineTable`).

This module holds the records (`Schedule`, `Unit`, `SchedulePool`, ...), the rule ids and the layout
arithmetic; heliabuild.aot.schedule_check holds `validate`, `check` and `derive` (the validator and the
derived fields), heliabuild.aot.schedule_plan `plan_schedule` and the facts the report repeats
(`pool_layout`, `pieces`, `tensor_placements`, `schedule_warnings`).

`wait_before` and `last_reader` are kept as operator ids; `to_json(operators)`
writes them as positions, the plan's form, and a stated value is compared in
the form stated (docs/aot-plan.md, "Schedule decisions").

`Schedule.to_json` is the one writer of the plan's `schedule` section;
`heliabuild.aot.records` is its one reader (`read_schedule`, and
`OptimizationPlan` under the document's reading rules and contexts).

Memory names compare in any case (the document compares them so in
`tensors[]`); a derived `source_memory` keeps the spelling of the unit's first
constant.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

MAX_UNITS = 65535
"""The most units a schedule may hold."""


ENGINES = ("cpu", "dma")
"""The engines a unit may name; this release emits `cpu` units only."""


SOURCES = ("plan", "none")
"""The values of `schedule.source`."""


EngineTable = Mapping[tuple[str, str], Collection[str]]
"""The engines the platform offers, keyed by (source memory, pool memory); a pair that is absent offers none."""


UNKNOWN_FIELD_HINT = (
    "The field comes from a later heliaAOT release or a planner written for one: "
    "convert with that release, or remove the field."
)


# Rule ids of the validator, each with the rejection it stands for.
RULES: dict[str, str] = {
    "source": "`source` is `plan` with no units, `none` with units, or neither",
    "unit-count": "the schedule holds more than 65535 units",
    "unit-id": "two units have the same id",
    "no-pool": "units stream but no memory.stream_pool is configured",
    "empty-unit": "a unit names no constant",
    "unknown-tensor": "a unit names no constant of tensors[] (or a constant by its id when it has a storage_id)",
    "duplicate-tensor": "a constant is named twice in a unit or is in two units",
    "tensor-order": "a unit does not list its tensors in tensors[] order",
    "not-permitted": "a unit streams a constant whose rules do not permit stream",
    "not-stageable": "a unit streams a constant that cannot be staged",
    "two-memories": "a unit's constants are stored in two memories",
    "engine": "a unit's engine is not offered by the platform from its source memory to the pool memory",
    "dma": "a unit uses engine dma: this release emits cpu units only",
    "issue-after": "a unit's issue_after names no operator",
    "issue-order": "a unit is not issued before its first reader",
    "pool-fit": "a unit does not fit the pool",
    "alignment": "a unit does not start at a multiple of its span alignment",
    "overlap": "two units live at once overlap in pool bytes",
    "derived": "a derived field is stated differently from its derived value",
}


@dataclass(frozen=True)
class SchedulePool:
    """The configured stream pool: its `memory`, size in `bytes` and base `alignment` (`schedule.pool`)."""

    memory: str
    bytes: int
    alignment: int

    def to_json(self) -> dict[str, Any]:
        return {"memory": self.memory, "bytes": self.bytes, "alignment": self.alignment}

    def same_as(self, other: SchedulePool | None) -> bool:
        """True when `other` is the same pool (memory names in any case)."""
        return (
            other is not None
            and self.memory.casefold() == other.memory.casefold()
            and self.bytes == other.bytes
            and self.alignment == other.alignment
        )


@dataclass(frozen=True)
class ScheduleConstant:
    """What the planner knows of one `tensors[]` entry, in `tensors[]` order.

    `storage_id` is the storage tensor's id of a repacked constant (else None);
    a unit names the constant by `name` (its storage_id when it has one, else
    its id). `memory` is where its bytes are stored, `permitted` whether its
    merged rules permit `stream`, `stageable_reason` None when it can be staged
    into a pool and otherwise the report's reason ("read at init", "pinned",
    "model output", "shares storage through an alias", "fixed in place").
    `readers` are the positions of the operators reading it, ascending and at
    least one (tensors[] lists only constants the operators read).
    """

    id: str
    storage_id: str | None
    bytes: int
    alignment: int
    memory: str
    permitted: bool
    stageable_reason: str | None
    readers: tuple[int, ...]

    def __post_init__(self) -> None:
        readers = tuple(self.readers)
        object.__setattr__(self, "readers", readers)
        if not readers or list(readers) != sorted(set(readers)) or readers[0] < 0:
            raise ValueError(f"constant {self.name!r}: readers {readers!r} must be distinct ascending positions, >= 1")
        if self.bytes < 0 or self.alignment < 1:
            raise ValueError(f"constant {self.name!r}: bytes {self.bytes} and alignment {self.alignment} out of range")

    @property
    def name(self) -> str:
        """The name a unit gives the constant: its storage_id when it has one, else its id."""
        return self.id if self.storage_id is None else self.storage_id

    @property
    def stageable(self) -> bool:
        return self.stageable_reason is None

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "storage_id": self.storage_id,
            "bytes": self.bytes,
            "alignment": self.alignment,
            "memory": self.memory,
            "permitted": self.permitted,
            "stageable_reason": self.stageable_reason,
            "readers": list(self.readers),
        }

    @classmethod
    def from_json(cls, document: Mapping[str, Any]) -> ScheduleConstant:
        return cls(
            id=document["id"],
            storage_id=document.get("storage_id"),
            bytes=document["bytes"],
            alignment=document["alignment"],
            memory=document["memory"],
            permitted=document["permitted"],
            stageable_reason=document.get("stageable_reason"),
            readers=tuple(document["readers"]),
        )


_UNIT_DERIVED_FIELDS = ("bytes", "source_memory", "source_offset", "wait_before", "last_reader")


@dataclass(frozen=True)
class Unit:
    """One transfer unit (`schedule.units[]`).

    Input fields: `id`, `tensors` (constant names, in tensors[] order),
    `pool_offset`, `issue_after` (an operator id, None for the start of the
    run) and `engine`. Derived fields (None when not stated): `bytes` (the
    span size), `source_memory`, `source_offset` (ignored when stated),
    `wait_before` and `last_reader` (the first and last operator, by
    position, reading a constant of the unit). `derive` states those two as
    operator ids; a unit read from a plan may state them as operator
    positions (the form docs/aot-plan.md writes), which validate compares as
    positions.
    """

    id: int
    tensors: tuple[str, ...]
    pool_offset: int
    issue_after: str | None
    engine: str = "cpu"
    bytes: int | None = None
    source_memory: str | None = None
    source_offset: int | None = None
    wait_before: str | int | None = None
    last_reader: str | int | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "tensors", tuple(self.tensors))

    def inputs(self) -> Unit:
        """The unit with its derived fields unstated."""
        return Unit(self.id, self.tensors, self.pool_offset, self.issue_after, self.engine)

    def to_json(self, operators: OperatorOrder | None = None) -> dict[str, Any]:
        """The unit as a plan writes it: its input fields, and the derived fields it states.

        With `operators`, `wait_before` and `last_reader` stated as ids are
        written as operator positions, as docs/aot-plan.md shows them.
        """
        document: dict[str, Any] = {
            "id": self.id,
            "tensors": list(self.tensors),
            "pool_offset": self.pool_offset,
            "issue_after": self.issue_after,
            "engine": str(self.engine),
        }
        for name in _UNIT_DERIVED_FIELDS:
            value = getattr(self, name)
            if operators is not None and name in ("wait_before", "last_reader") and isinstance(value, str):
                value = operators.position(value)
            if value is not None:
                document[name] = value
        return document


@dataclass(frozen=True)
class Schedule:
    """The `schedule` section: `source` (`plan` or `none`), the configured `pool` and the units."""

    source: str
    pool: SchedulePool | None
    units: tuple[Unit, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "units", tuple(self.units))

    @classmethod
    def none(cls, pool: SchedulePool | None = None) -> Schedule:
        """The schedule of a conversion where nothing streams."""
        return cls(source="none", pool=pool, units=())

    def to_json(self, operators: OperatorOrder | None = None) -> dict[str, Any]:
        """The section as the plan writes it; `pool` is present only when a pool is configured.

        With `operators`, units write `wait_before` and `last_reader` as operator positions (`Unit.to_json`).
        """
        units = [unit.to_json(operators) for unit in self.units]
        document: dict[str, Any] = {"source": str(self.source), "units": units}
        if self.pool is not None:
            document["pool"] = self.pool.to_json()
        return document


@dataclass(frozen=True)
class OperatorOrder:
    """The operators' ids in execution order, mapping ids to positions and back."""

    ids: tuple[str, ...]
    _positions: dict[str, int] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        ids = tuple(self.ids)
        object.__setattr__(self, "ids", ids)
        positions = {operator_id: position for position, operator_id in enumerate(ids)}
        if len(positions) != len(ids):
            raise ValueError(f"operator ids are not distinct: {sorted({i for i in ids if ids.count(i) > 1})}")
        object.__setattr__(self, "_positions", positions)

    @classmethod
    def of(cls, operators: OperatorOrder | Iterable[str]) -> OperatorOrder:
        """`operators` as an OperatorOrder (an iterable of ids is taken in execution order)."""
        return operators if isinstance(operators, OperatorOrder) else cls(tuple(operators))

    def position(self, operator_id: str | None) -> int | None:
        """The position of `operator_id`, None when it names no operator."""
        return None if operator_id is None else self._positions.get(operator_id)

    def id_at(self, position: int) -> str:
        return self.ids[position]

    def __len__(self) -> int:
        return len(self.ids)


@dataclass(frozen=True)
class ScheduleViolation:
    """One rejection: its `rule` id (a key of RULES), the message, and the unit (its stated id) or tensor named."""

    rule: str
    message: str
    unit: int | None = None
    tensor: str | None = None

    def __str__(self) -> str:
        return self.message


@dataclass(frozen=True)
class PoolSpan:
    """One unit's span in the pool, for the report's `stream_pool.layout`."""

    unit: int
    pool_offset: int
    bytes: int

    def to_json(self) -> dict[str, Any]:
        """The report's span: `{unit, offset, bytes}`."""
        return {"unit": self.unit, "offset": self.pool_offset, "bytes": self.bytes}


@dataclass(frozen=True)
class Piece:
    """One piece of a unit split at the pool memory's DMA boundaries, for the report's `stream_pool.pieces`."""

    unit: int
    pool_offset: int
    source_offset: int
    bytes: int

    def to_json(self) -> dict[str, Any]:
        """The report's span: `{unit, offset, bytes}` (the source offset is not reported)."""
        return {"unit": self.unit, "offset": self.pool_offset, "bytes": self.bytes}


def align_up(value: int, alignment: int) -> int:
    """The next multiple of `alignment` (>= 1) at or after `value`."""
    return -(-value // alignment) * alignment


def span_layout(constants: Sequence[ScheduleConstant]) -> tuple[list[int], int, int]:
    """(offset of each constant in the span, span bytes, span alignment) of a unit of `constants`, in order.

    Constant k starts at the next multiple of its alignment from the end of
    constant k-1; the span's bytes are the end of the last one and its
    alignment is the largest alignment among them (1 for no constant).
    """
    offsets: list[int] = []
    end = 0
    alignment = 1
    for constant in constants:
        start = align_up(end, constant.alignment)
        offsets.append(start)
        end = start + constant.bytes
        alignment = max(alignment, constant.alignment)
    return offsets, end, alignment


def offered_engines(engines: EngineTable, source_memory: str, pool_memory: str) -> frozenset[str]:
    """The engines `engines` offers from `source_memory` to `pool_memory` (memory names in any case)."""
    wanted = (source_memory.casefold(), pool_memory.casefold())
    offered: set[str] = set()
    for (source, destination), names in engines.items():
        if (source.casefold(), destination.casefold()) == wanted:
            offered.update(names)
    return frozenset(offered)


__all__ = [
    "ENGINES",
    "MAX_UNITS",
    "RULES",
    "SOURCES",
    "UNKNOWN_FIELD_HINT",
    "EngineTable",
    "OperatorOrder",
    "Piece",
    "PoolSpan",
    "Schedule",
    "ScheduleConstant",
    "SchedulePool",
    "ScheduleViolation",
    "Unit",
    "align_up",
    "offered_engines",
    "span_layout",
]
