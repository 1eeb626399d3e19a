"""The transfer schedule's validator and its derived fields (docs/aot-plan.md, "The transfer schedule").

- `validate` lists every rejection of the document's "The transfer schedule" (one `ScheduleViolation` per
  finding, with a rule id from heliabuild.aot.schedule.RULES); `check` raises `ScheduleError` for the same
  findings.
- `derive` checks an input schedule and returns it with its derived fields: units in issue order, re-numbered,
  with `bytes`, `source_memory`, `source_offset`, `wait_before` and `last_reader`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from heliabuild.aot.schedule import (
    ENGINES,
    MAX_UNITS,
    SOURCES,
    EngineTable,
    OperatorOrder,
    Schedule,
    ScheduleConstant,
    SchedulePool,
    ScheduleViolation,
    Unit,
    align_up,
    offered_engines,
    span_layout,
)
from heliabuild.errors import ScheduleError


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
        for j in range(i + 1, len(spans)):  # indices, not a slice: copying the rest for each span is quadratic
            other_start, _, other_position, (other_low, other_high) = spans[j]
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
