"""The transfer schedule: units, derived fields, the validator and the planner (docs/aot-plan.md).

Pure, model-independent logic over three facts the planner knows of a
conversion: its operators in execution order (`OperatorOrder`), its constants
in `tensors[]` order (`ScheduleConstant`) and the configured stream pool
(`SchedulePool`, or None), plus the engines the platform offers between two
memories (`EngineTable`).

- `validate` lists every rejection of the document's "The transfer schedule"
  (one `ScheduleViolation` per finding, with a rule id from `RULES`); `check`
  raises `ScheduleError` for the same findings.
- `derive` checks an input schedule and returns it with its derived fields:
  units in issue order, re-numbered, with `bytes`, `source_memory`,
  `source_offset`, `wait_before` and `last_reader`.
- `plan_schedule` chooses units, pool offsets and issue points; what it writes
  always passes `validate`.
- `pool_layout`, `pieces`, `tensor_placements` and `schedule_warnings` are the
  facts the report, `tensors[]` and the conversion's warnings repeat.

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

import heapq
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from heliabuild.errors import ScheduleError

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


# ---------------------------------------------------------------------------------------------------------------------
# Records


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


# ---------------------------------------------------------------------------------------------------------------------
# Layout arithmetic


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


class _Constants:
    """The constants indexed by name, checked against the operators (a bad index is the caller's fault)."""

    def __init__(self, constants: Iterable[ScheduleConstant], operators: OperatorOrder) -> None:
        self.items = tuple(constants)
        self.index: dict[str, int] = {}
        self.by_plain_id: dict[str, ScheduleConstant] = {}
        for position, constant in enumerate(self.items):
            if constant.name in self.index:
                raise ValueError(f"two constants are named {constant.name!r}")
            if constant.readers[-1] >= len(operators):
                raise ValueError(f"constant {constant.name!r} is read at {constant.readers[-1]}, past the operators")
            self.index[constant.name] = position
            if constant.storage_id is not None:
                self.by_plain_id[constant.id] = constant


class _UnitFacts:
    """What the rules derive for one unit, from the constants it names that exist (each once, in the order named).

    `defined` is False when it names no existing constant; `bytes`,
    `alignment`, `first` and `last` are then 0, 1, -1 and -1 and mean nothing.
    `memory` is the one memory of its constants (None for none or several),
    `issue` the position of issue_after (-1 for the start of the run, None for
    an id that names no operator).
    """

    def __init__(self, unit: Unit, constants: _Constants, operators: OperatorOrder) -> None:
        self.unit = unit
        self.known: list[ScheduleConstant] = []
        for name in dict.fromkeys(unit.tensors):
            position = constants.index.get(name)
            if position is not None:
                self.known.append(constants.items[position])
        self.defined = bool(self.known)
        _, self.bytes, self.alignment = span_layout(self.known)
        memories: dict[str, ScheduleConstant] = {}
        for constant in self.known:
            memories.setdefault(constant.memory.casefold(), constant)
        self.first_per_memory = list(memories.values())
        self.memory = self.known[0].memory if len(memories) == 1 else None
        self.first = min((constant.readers[0] for constant in self.known), default=-1)
        self.last = max((constant.readers[-1] for constant in self.known), default=-1)
        self.issue = -1 if unit.issue_after is None else operators.position(unit.issue_after)

    @property
    def live(self) -> tuple[int, int] | None:
        """The positions it is live at, (after issue_after, last reader) inclusive; None when unknown."""
        return None if not self.defined or self.issue is None else (self.issue + 1, self.last)


class _Findings(list[ScheduleViolation]):
    """The violations found so far, in the order found."""

    def add(self, rule: str, message: str, unit: int | None = None, tensor: str | None = None) -> None:
        self.append(ScheduleViolation(rule, message, unit, tensor))


# ---------------------------------------------------------------------------------------------------------------------
# The validator


def validate(
    schedule: Schedule,
    constants: Sequence[ScheduleConstant],
    operators: OperatorOrder | Iterable[str],
    pool: SchedulePool | None,
    engines: EngineTable,
) -> list[ScheduleViolation]:
    """Every rejection of the document for `schedule` against the conversion; [] when it is accepted.

    `constants` are the conversion's `tensors[]` in order, `operators` its
    operator ids in execution order, `pool` the configured
    `memory.stream_pool` (None when none is) and `engines` the platform's
    engine table. Each violation names the unit (by its stated id) or tensor
    and the values. The rules, by id (RULES):

    - `source`: source is `plan` with no units, `none` with units, or neither;
    - `unit-count`: more than 65535 units (then nothing else is checked);
    - `derived` on `schedule.pool`: a stated pool that differs from `pool`;
    - `no-pool`: units but no configured pool (then no unit is checked for fit
      or for its engine's offer);
    - `unit-id`: an id stated by an earlier unit;
    - `empty-unit`, `unknown-tensor` (also a constant named by its id when it
      has a storage_id), `duplicate-tensor` (named twice in a unit, or in two
      units), `tensor-order` (the unit's existing constants, first naming of
      each, are not in tensors[] order);
    - `not-permitted`, `not-stageable` (with the reason): per streamed constant;
    - `two-memories`; `engine` (not `cpu`/`dma`, or not offered from the one
      source memory to the pool memory); `dma` (refused in this release);
    - `issue-after` (names no operator); `issue-order` (issue_after's position
      is not before the first reader's);
    - `pool-fit` (`pool_offset < 0` or `pool_offset + bytes > pool.bytes`);
      `alignment` (`pool_offset` not a multiple of the span alignment);
    - `overlap`: two units whose live positions (from issue_after's + 1, -1
      for null, through the last reader's) share one and whose pool byte
      ranges `[pool_offset, pool_offset + bytes)` share a byte;
    - `derived`: a stated `bytes`, `source_memory` (in any case), `wait_before`
      or `last_reader` differing from its derived value; a stated
      `source_offset` is ignored.

    A unit's derived values come from the constants it names that exist
    (each once, in the order named); a check needing a value that is not
    defined (no existing constant, constants in two memories, an unknown
    issue_after) is skipped for that unit.
    """
    order = OperatorOrder.of(operators)
    index = _Constants(constants, order)
    found = _Findings()
    units = schedule.units

    if schedule.source not in SOURCES:
        found.add("source", f"schedule.source is {schedule.source!r}; expected 'plan' or 'none'")
    elif schedule.source == "plan" and not units:
        found.add("source", "schedule.source is 'plan' but it has no units; write 'none' when nothing streams")
    elif schedule.source == "none" and units:
        found.add("source", f"schedule.source is 'none' but it has {len(units)} unit(s); write 'plan' for them")
    if len(units) > MAX_UNITS:
        found.add("unit-count", f"the schedule holds {len(units)} units; at most {MAX_UNITS} are allowed")
        return list(found)

    if schedule.pool is not None and not schedule.pool.same_as(pool):
        configured = "no memory.stream_pool is configured" if pool is None else f"memory.stream_pool is {_pool(pool)}"
        found.add("derived", f"schedule.pool states {_pool(schedule.pool)}, but {configured}")
    if units and pool is None:
        found.add("no-pool", f"the schedule streams {len(units)} unit(s), but no memory.stream_pool is configured")

    first_with_id: dict[int, int] = {}
    owner: dict[str, int] = {}
    facts: list[_UnitFacts] = []
    for position, unit in enumerate(units):
        if unit.id in first_with_id:
            earlier = first_with_id[unit.id]
            found.add("unit-id", f"units[{position}] has id {unit.id}, like units[{earlier}]; ids must differ", unit.id)
        else:
            first_with_id[unit.id] = position
        _check_names(unit, index, owner, found)
        facts.append(_UnitFacts(unit, index, order))
        _check_unit(facts[-1], order, pool, engines, found)
    _check_overlaps(facts, found)
    return list(found)


def _check_names(unit: Unit, constants: _Constants, owner: dict[str, int], found: _Findings) -> None:
    """empty-unit, unknown-tensor, duplicate-tensor, tensor-order, not-permitted and not-stageable for one unit."""
    name = f"unit {unit.id}"
    if not unit.tensors:
        found.add("empty-unit", f"{name} names no constant", unit.id)
    seen: set[str] = set()
    positions: list[int] = []
    for tensor in unit.tensors:
        position = constants.index.get(tensor)
        if position is None:
            plain = constants.by_plain_id.get(tensor)
            if plain is None:
                message = f"{name} names {tensor!r}, which is no constant in tensors[]"
            else:
                message = f"{name} names {tensor!r} by its id; a unit names that constant by its storage_id"
                message += f" {plain.name!r}"
            found.add("unknown-tensor", message, unit.id, tensor)
            continue
        if tensor in seen:
            found.add("duplicate-tensor", f"{name} names {tensor!r} twice", unit.id, tensor)
            continue
        seen.add(tensor)
        positions.append(position)
        if tensor in owner:
            message = f"constant {tensor!r} is in unit {owner[tensor]} and unit {unit.id}; a copy streams in one unit"
            found.add("duplicate-tensor", message, unit.id, tensor)
        else:
            owner[tensor] = unit.id
        constant = constants.items[position]
        if not constant.permitted:
            message = f"{name} streams {tensor!r}, whose merged memory.tensors rules do not permit stream"
            found.add("not-permitted", message, unit.id, tensor)
        if constant.stageable_reason is not None:
            message = f"{name} streams {tensor!r}, which cannot be staged: {constant.stageable_reason}"
            found.add("not-stageable", message, unit.id, tensor)
    if positions != sorted(positions):
        stated = [constants.items[p].name for p in positions]
        expected = [constants.items[p].name for p in sorted(positions)]
        found.add("tensor-order", f"{name} lists its tensors as {stated}; expected tensors[] order {expected}", unit.id)


def _check_unit(
    facts: _UnitFacts, operators: OperatorOrder, pool: SchedulePool | None, engines: EngineTable, found: _Findings
) -> None:
    """two-memories, engine, dma, issue-after, issue-order, pool-fit, alignment and derived for one unit."""
    unit = facts.unit
    name = f"unit {unit.id}"
    if len(facts.first_per_memory) > 1:
        stored = ", ".join(f"{constant.name!r} in {constant.memory}" for constant in facts.first_per_memory)
        found.add("two-memories", f"{name}'s constants are stored in two memories: {stored}", unit.id)

    if unit.engine not in ENGINES:
        found.add("engine", f"{name} names engine {str(unit.engine)!r}; expected 'cpu' or 'dma'", unit.id)
    elif pool is not None and facts.memory is not None:
        offered = offered_engines(engines, facts.memory, pool.memory)
        if unit.engine not in offered:
            offers = ", ".join(sorted(offered)) or "no engine"
            message = f"{name} uses engine {str(unit.engine)!r}, which the platform does not offer from {facts.memory}"
            found.add("engine", f"{message} to {pool.memory} (it offers {offers})", unit.id)
    if unit.engine == "dma":
        found.add("dma", f"{name} uses engine 'dma': this release emits cpu units only", unit.id)

    if facts.issue is None:
        found.add("issue-after", f"{name} is issued after {unit.issue_after!r}, which names no operator", unit.id)
    elif facts.defined and facts.issue >= facts.first:
        message = f"{name} is issued after {unit.issue_after!r} (position {facts.issue}), not before its first reader"
        found.add("issue-order", f"{message} {operators.id_at(facts.first)!r} (position {facts.first})", unit.id)

    if not facts.defined:
        return
    end = unit.pool_offset + facts.bytes
    if pool is not None and (unit.pool_offset < 0 or end > pool.bytes):
        message = f"{name} spans pool bytes [{unit.pool_offset}, {end}), outside the pool of {pool.bytes} bytes"
        found.add("pool-fit", message, unit.id)
    if unit.pool_offset % facts.alignment:
        message = f"{name} starts at pool offset {unit.pool_offset}, not a multiple of its span alignment"
        found.add("alignment", f"{message} {facts.alignment}", unit.id)
    derived: dict[str, int | str] = {"bytes": facts.bytes}
    if facts.memory is not None:
        derived["source_memory"] = facts.memory
    for field_name, position in (("wait_before", facts.first), ("last_reader", facts.last)):
        # stated as an operator position (an int) or an operator id (a string): compared in the form stated
        stated = getattr(unit, field_name)
        as_position = isinstance(stated, int) and not isinstance(stated, bool)
        derived[field_name] = position if as_position else operators.id_at(position)
    for field_name, value in derived.items():
        stated = getattr(unit, field_name)
        if stated is None:
            continue
        same = (
            stated.casefold() == value.casefold()
            if isinstance(stated, str) and isinstance(value, str) and field_name == "source_memory"
            else stated == value
        )
        if not same:
            found.add("derived", f"{name} states {field_name} {stated!r}, but the derived value is {value!r}", unit.id)


def _check_overlaps(facts: Sequence[_UnitFacts], found: _Findings) -> None:
    """overlap: every pair of units live at a common position whose pool byte ranges share a byte, in list order."""
    spans: list[tuple[int, int, int, tuple[int, int]]] = []  # pool offset, end, list position, live positions
    for position, item in enumerate(facts):
        if item.live is not None and item.bytes > 0:
            spans.append((item.unit.pool_offset, item.unit.pool_offset + item.bytes, position, item.live))
    spans.sort()
    pairs: list[tuple[int, int]] = []
    for i, (_, end, position, (low, high)) in enumerate(spans):
        for other_start, _, other_position, (other_low, other_high) in spans[i + 1 :]:
            if other_start >= end:
                break
            if max(low, other_low) <= min(high, other_high):
                pairs.append((min(position, other_position), max(position, other_position)))
    for a, b in sorted(pairs):
        first, second = facts[a], facts[b]
        (low_a, high_a), (low_b, high_b) = first.live or (0, 0), second.live or (0, 0)
        start = max(first.unit.pool_offset, second.unit.pool_offset)
        end = min(first.unit.pool_offset + first.bytes, second.unit.pool_offset + second.bytes)
        message = f"units {first.unit.id} and {second.unit.id} are both live at operator positions"
        message += f" {max(low_a, low_b)}..{min(high_a, high_b)} and overlap in pool bytes [{start}, {end})"
        found.add("overlap", message, first.unit.id)


def _pool(pool: SchedulePool) -> str:
    return f"{{memory {pool.memory}, bytes {pool.bytes}, alignment {pool.alignment}}}"


def check(
    schedule: Schedule,
    constants: Sequence[ScheduleConstant],
    operators: OperatorOrder | Iterable[str],
    pool: SchedulePool | None,
    engines: EngineTable,
) -> None:
    """Raise ScheduleError (with every violation in `violations`) when `validate` rejects `schedule`."""
    found = validate(schedule, constants, operators, pool, engines)
    if not found:
        return
    more = len(found) - 1
    suffix = f" (and {more} more: {', '.join(v.message for v in found[1:4])}{', ...' if more > 3 else ''})"
    raise ScheduleError(
        f"the transfer schedule is rejected: {found[0].message}" + (suffix if more else ""),
        hint="Fix the schedule section of the plan, or let heliabuild plan the schedule.",
        violations=found,
    )


# ---------------------------------------------------------------------------------------------------------------------
# Derived fields


def derive(
    units: Schedule | Sequence[Unit],
    constants: Sequence[ScheduleConstant],
    operators: OperatorOrder | Iterable[str],
    pool: SchedulePool | None,
    engines: EngineTable,
) -> Schedule:
    """The schedule with its derived fields, as a conversion writes it back; raises ScheduleError if `check` does.

    `units` is the input schedule, or its units alone (source `plan` when there
    are any, else `none`). The result has `pool` = the configured pool and its
    units in issue order (by the position of `issue_after`, null first, then by
    stated id), re-numbered 0, 1, ..., each with:

    - `bytes`: the span size (`span_layout`);
    - `source_memory`: the one memory its constants are stored in;
    - `source_offset`: the span's offset in that memory's constant arena. The
      arena lays out that memory's constants in tensors[] order, each
      non-streamed constant at the next multiple of its alignment, and a unit's
      whole span, in place of its first constant, at the next multiple of the
      span alignment (a unit is one span on both sides of the transfer), so
      the constants of a unit follow each other in the arena as in the pool;
    - `wait_before`, `last_reader`: the ids of the first and last operator, by
      position, reading one of its constants.
    """
    order = OperatorOrder.of(operators)
    schedule = units if isinstance(units, Schedule) else Schedule("plan" if units else "none", pool, tuple(units))
    check(schedule, constants, order, pool, engines)
    index = _Constants(constants, order)
    facts = sorted((_UnitFacts(unit, index, order) for unit in schedule.units), key=_issue_order)
    offsets = _arena_offsets(index.items, facts)
    derived = tuple(
        Unit(
            id=number,
            tensors=item.unit.tensors,
            pool_offset=item.unit.pool_offset,
            issue_after=item.unit.issue_after,
            engine=item.unit.engine,
            bytes=item.bytes,
            source_memory=item.memory,
            source_offset=offsets[number],
            wait_before=order.id_at(item.first),
            last_reader=order.id_at(item.last),
        )
        for number, item in enumerate(facts)
    )
    return Schedule(source=schedule.source, pool=pool, units=derived)


def _issue_order(item: _UnitFacts) -> tuple[int, int]:
    """Issue order: by the position of issue_after (-1 for null), then by stated id (a checked schedule's facts)."""
    return (-1 if item.issue is None else item.issue), item.unit.id


def _arena_offsets(constants: Sequence[ScheduleConstant], facts: Sequence[_UnitFacts]) -> list[int]:
    """Each unit's span offset in its memory's constant arena, by its position in `facts` (see `derive`)."""
    unit_of = {constant.name: number for number, item in enumerate(facts) for constant in item.known}
    cursors: dict[str, int] = {}
    offsets: dict[int, int] = {}
    for constant in constants:
        memory = constant.memory.casefold()
        cursor = cursors.get(memory, 0)
        number = unit_of.get(constant.name)
        if number is None:
            cursors[memory] = align_up(cursor, constant.alignment) + constant.bytes
        elif number not in offsets:
            offsets[number] = align_up(cursor, facts[number].alignment)
            cursors[memory] = offsets[number] + facts[number].bytes
    return [offsets[number] for number in range(len(facts))]


# ---------------------------------------------------------------------------------------------------------------------
# The planner


def plan_schedule(
    constants: Sequence[ScheduleConstant],
    operators: OperatorOrder | Iterable[str],
    pool: SchedulePool | None,
    engines: EngineTable,
) -> Schedule:
    """A derived schedule streaming as many bytes as fit in `pool`; deterministic, and always passes `validate`.

    Candidates are the constants whose rules permit `stream`, that can be
    staged, that have bytes, that are stored outside the pool memory and whose
    memory offers `cpu` to the pool memory. Candidates sharing a first reader
    and a memory form one unit (their tensors[] order kept), issued after the
    operator just before that reader (null when it is operator 0), on engine
    `cpu`, live through the last reader of its constants. Units are placed
    largest first (ties: earlier first reader, then earlier tensors[] entry) at
    the lowest offset, a multiple of the span alignment, where the unit fits
    the pool and overlaps no placed unit whose live range meets its own. A unit
    that fits nowhere is split into one unit per constant, and a one-constant
    unit that fits nowhere is dropped (its constant stays `direct`); at most
    65535 units are placed. Without a pool, or with nothing placed, the result
    is `Schedule.none(pool)`.
    """
    order = OperatorOrder.of(operators)
    index = _Constants(constants, order)
    if pool is None:
        return Schedule.none(None)
    groups: dict[tuple[int, str], list[int]] = {}
    for position, constant in enumerate(index.items):
        if (
            constant.permitted
            and constant.stageable
            and constant.bytes > 0
            and constant.memory.casefold() != pool.memory.casefold()
            and "cpu" in offered_engines(engines, constant.memory, pool.memory)
        ):
            groups.setdefault((constant.readers[0], constant.memory.casefold()), []).append(position)

    def candidate(members: list[int]) -> tuple[int, int, int, list[int]]:
        _, size, _ = span_layout([index.items[m] for m in members])
        return (-size, index.items[members[0]].readers[0], members[0], members)

    queue = [candidate(members) for members in groups.values()]
    heapq.heapify(queue)
    placed: list[tuple[int, int, int, int]] = []  # pool offset, bytes, first live position, last live position
    units: list[Unit] = []
    while queue and len(units) < MAX_UNITS:
        _, first, _, members = heapq.heappop(queue)
        members_constants = [index.items[m] for m in members]
        _, size, alignment = span_layout(members_constants)
        last = max(constant.readers[-1] for constant in members_constants)
        offset = _first_fit(placed, size, alignment, first, last, pool.bytes)
        if offset is None:
            if len(members) > 1:
                for member in members:
                    heapq.heappush(queue, candidate([member]))
            continue
        placed.append((offset, size, first, last))
        units.append(
            Unit(
                id=members[0],
                tensors=tuple(constant.name for constant in members_constants),
                pool_offset=offset,
                issue_after=None if first == 0 else order.id_at(first - 1),
                engine="cpu",
            )
        )
    if not units:
        return Schedule.none(pool)
    return derive(units, index.items, order, pool, engines)


def _first_fit(
    placed: Sequence[tuple[int, int, int, int]], size: int, alignment: int, first: int, last: int, capacity: int
) -> int | None:
    """The lowest multiple of `alignment` where `size` bytes fit `capacity` beside every placed unit live with it."""
    blockers = [(offset, offset + bytes_) for offset, bytes_, low, high in placed if low <= last and first <= high]
    for start in sorted({0, *(align_up(end, alignment) for _, end in blockers)}):
        if start + size > capacity:
            return None
        if all(start + size <= low or high <= start for low, high in blockers):
            return start
    return None


# ---------------------------------------------------------------------------------------------------------------------
# Facts for the report and tensors[]


def _require_derived(schedule: Schedule) -> None:
    for unit in schedule.units:
        if unit.bytes is None or unit.source_offset is None:
            raise ValueError(f"unit {unit.id} has no derived bytes or source_offset; derive the schedule first")


def pool_layout(schedule: Schedule) -> list[PoolSpan]:
    """Each unit's span in the pool, in unit order, for a derived schedule (`derive`)."""
    _require_derived(schedule)
    return [PoolSpan(unit.id, unit.pool_offset, unit.bytes or 0) for unit in schedule.units]


def pieces(schedule: Schedule, dma_boundary: int | None) -> list[Piece]:
    """Every unit of a derived schedule split at the multiples of `dma_boundary` counted from the pool base.

    A piece never crosses a boundary; its `source_offset` advances with its
    pool offset. With no boundary (None or 0) each unit is one piece; a unit
    of 0 bytes has no piece.
    """
    _require_derived(schedule)
    if dma_boundary is not None and dma_boundary < 0:
        raise ValueError(f"dma_boundary {dma_boundary} is negative")
    result: list[Piece] = []
    for unit in schedule.units:
        assert unit.bytes is not None and unit.source_offset is not None
        start, end, shift = unit.pool_offset, unit.pool_offset + unit.bytes, unit.source_offset - unit.pool_offset
        while start < end:
            stop = min(end, (start // dma_boundary + 1) * dma_boundary) if dma_boundary else end
            result.append(Piece(unit.id, start, start + shift, stop - start))
            start = stop
    return result


def tensor_placements(schedule: Schedule, constants: Sequence[ScheduleConstant]) -> dict[str, tuple[int, int]]:
    """For each streamed constant, by name: (its unit's id, its own offset in the pool), for tensors[].unit/pool_offset.

    Constants no unit names are absent (they stay `direct`).
    """
    by_name = {constant.name: constant for constant in constants}
    result: dict[str, tuple[int, int]] = {}
    for unit in schedule.units:
        offsets, _, _ = span_layout([by_name[name] for name in unit.tensors])
        for name, offset in zip(unit.tensors, offsets, strict=True):
            result[name] = (unit.id, unit.pool_offset + offset)
    return result


def schedule_warnings(schedule: Schedule, constants: Sequence[ScheduleConstant]) -> list[str]:
    """The document's two warnings, in tensors[] order: a permitted constant no unit names that could have
    streamed (it stays `direct`), and a permitted constant that cannot be staged (with its reason)."""
    streamed = {name for unit in schedule.units for name in unit.tensors}
    warnings: list[str] = []
    for constant in constants:
        if not constant.permitted or constant.name in streamed:
            continue
        if constant.stageable_reason is None:
            warnings.append(f"constant {constant.name!r} may stream but no schedule unit names it; it stays direct")
        else:
            warnings.append(
                f"constant {constant.name!r} may stream but cannot be staged ({constant.stageable_reason}); "
                "it stays direct"
            )
    return warnings


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
    "check",
    "derive",
    "offered_engines",
    "pieces",
    "plan_schedule",
    "pool_layout",
    "schedule_warnings",
    "span_layout",
    "tensor_placements",
    "validate",
]
