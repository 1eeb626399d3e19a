"""The transfer schedule's planner and the facts the report repeats (docs/aot-plan.md, "The transfer schedule").

- `plan_schedule` chooses units, pool offsets and issue points; what it writes always passes
  heliabuild.aot.schedule_check.validate.
- `pool_layout`, `pieces`, `tensor_placements` and `schedule_warnings` are the facts the report, `tensors[]`
  and the conversion's warnings repeat.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Sequence

from heliabuild.aot.schedule import (
    MAX_UNITS,
    EngineTable,
    OperatorOrder,
    Piece,
    PoolSpan,
    Schedule,
    ScheduleConstant,
    SchedulePool,
    Unit,
    align_up,
    offered_engines,
    span_layout,
)
from heliabuild.aot.schedule_check import (
    _Constants,
    derive,
)


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
