"""Properties of the transfer schedule over random constants, pools and schedules.

`oracle_rules` is an independent checker written straight from the
document's sentences (../shared/spec/aot-plans-and-reports.md, "The transfer
schedule") and the decisions docs/aot-plan.md records, by brute force: spans
are laid out byte by byte and two units conflict when they hold one pool byte
at one operator position. `validate` must find exactly the rules it finds.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import replace

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from heliabuild.aot.schedule import Schedule, ScheduleConstant, SchedulePool, Unit
from heliabuild.aot.schedule_check import derive, validate
from heliabuild.aot.schedule_plan import pieces, plan_schedule

PROPERTY = settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
REASONS = ["read at init", "pinned", "model output", "shares storage through an alias", "fixed in place"]
MEMORIES = ["MRAM", "mram", "PSRAM", "SRAM"]


# ---------------------------------------------------------------------------------------------------------------------
# The independent checker


def oracle_span(members: list[ScheduleConstant]) -> tuple[int, int]:
    """(bytes, alignment) of a span: walk byte by byte to each constant's alignment, then over its bytes."""
    cursor = 0
    for constant in members:
        while cursor % constant.alignment:
            cursor += 1
        cursor += constant.bytes
    return cursor, max((constant.alignment for constant in members), default=1)


def oracle_known(unit: Unit, constants: list[ScheduleConstant]) -> list[ScheduleConstant]:
    """The constants a unit names that exist, each once, in the order first named."""
    by_name = {(c.storage_id if c.storage_id is not None else c.id): c for c in constants}
    known: list[ScheduleConstant] = []
    for name in unit.tensors:
        if name in by_name and by_name[name] not in known:
            known.append(by_name[name])
    return known


def oracle_derived(unit: Unit, constants: list[ScheduleConstant], operators: list[str]) -> dict[str, object]:
    """The derived fields the document defines for `unit` (empty when it names no constant)."""
    known = oracle_known(unit, constants)
    if not known:
        return {}
    derived: dict[str, object] = {
        "bytes": oracle_span(known)[0],
        "wait_before": operators[min(min(c.readers) for c in known)],
        "last_reader": operators[max(max(c.readers) for c in known)],
    }
    if len({c.memory.lower() for c in known}) == 1:
        derived["source_memory"] = known[0].memory
    return derived


def offered(engines: dict[tuple[str, str], set[str]], source: str, destination: str) -> set[str]:
    """The engines offered from `source` to `destination`, memory names in any case."""
    found: set[str] = set()
    for (from_memory, to_memory), names in engines.items():
        if from_memory.lower() == source.lower() and to_memory.lower() == destination.lower():
            found |= names
    return found


def oracle_findings(
    schedule: Schedule,
    constants: list[ScheduleConstant],
    operators: list[str],
    pool: SchedulePool | None,
    engines: dict[tuple[str, str], set[str]],
) -> set[tuple[str, int | None]]:
    """(rule id, the stated id of the unit it names, or None for the schedule) of every rejection of `schedule`.

    A rejection about two units names the later one (for a constant in two
    units or a repeated id) or the earlier one (for an overlap).
    """
    found: set[tuple[str, int | None]] = set()
    units = list(schedule.units)
    if schedule.source == "plan":
        if not units:
            found.add(("source", None))  # `plan` with at least one unit
    elif schedule.source == "none":
        if units:
            found.add(("source", None))  # `none` with no units
    else:
        found.add(("source", None))
    if len(units) > 65535:
        return found | {("unit-count", None)}
    if schedule.pool is not None and (
        pool is None
        or (schedule.pool.memory.lower(), schedule.pool.bytes, schedule.pool.alignment)
        != (pool.memory.lower(), pool.bytes, pool.alignment)
    ):
        found.add(("derived", None))  # the pool is derived, and stated differently
    if units and pool is None:
        found.add(("no-pool", None))

    names = [(c.storage_id if c.storage_id is not None else c.id) for c in constants]
    live_cells: list[set[tuple[int, int]]] = []
    for list_position, unit in enumerate(units):
        uid = unit.id
        if any(earlier.id == uid for earlier in units[:list_position]):
            found.add(("unit-id", uid))
        if not unit.tensors:
            found.add(("empty-unit", uid))
        if any(name not in names for name in unit.tensors):
            found.add(("unknown-tensor", uid))
        counts = Counter(name for name in unit.tensors if name in names)
        if any(count > 1 for count in counts.values()):
            found.add(("duplicate-tensor", uid))  # named twice
        if any(name in earlier.tensors for name in counts for earlier in units[:list_position]):
            found.add(("duplicate-tensor", uid))  # in two units
        first_namings = list(dict.fromkeys(name for name in unit.tensors if name in names))
        if [names.index(n) for n in first_namings] != sorted(names.index(n) for n in first_namings):
            found.add(("tensor-order", uid))
        known = oracle_known(unit, constants)
        if any(not c.permitted for c in known):
            found.add(("not-permitted", uid))
        if any(c.stageable_reason is not None for c in known):
            found.add(("not-stageable", uid))
        memories = {c.memory.lower() for c in known}
        if len(memories) > 1:
            found.add(("two-memories", uid))
        unknown_engine = unit.engine not in ("cpu", "dma")
        one_memory = pool is not None and len(memories) == 1
        if unknown_engine or (one_memory and unit.engine not in offered(engines, known[0].memory, pool.memory)):
            found.add(("engine", uid))
        if unit.engine == "dma":
            found.add(("dma", uid))
        if unit.issue_after is None:
            issue: int | None = -1  # the start of the run
        else:
            issue = operators.index(unit.issue_after) if unit.issue_after in operators else None
        if issue is None:
            found.add(("issue-after", uid))
        cells: set[tuple[int, int]] = set()
        if known:
            size, alignment = oracle_span(known)
            first = min(min(c.readers) for c in known)
            last = max(max(c.readers) for c in known)
            if issue is not None and issue >= first:
                found.add(("issue-order", uid))
            if pool is not None and not (unit.pool_offset >= 0 and unit.pool_offset + size <= pool.bytes):
                found.add(("pool-fit", uid))
            if unit.pool_offset % alignment != 0:
                found.add(("alignment", uid))
            for field, value in oracle_derived(unit, constants, operators).items():
                stated = getattr(unit, field)
                if stated is None:
                    continue
                if field in ("wait_before", "last_reader") and type(stated) is int:
                    value = operators.index(str(value))  # a plan may state the operator by its position
                if field == "source_memory":
                    if stated.lower() != str(value).lower():
                        found.add(("derived", uid))
                elif stated != value:
                    found.add(("derived", uid))
            if issue is not None:
                # live from its issue point to the end of its last reader's run: positions issue+1 .. last
                cells = {
                    (position, byte)
                    for position in range(issue + 1, last + 1)
                    for byte in range(unit.pool_offset, unit.pool_offset + size)
                }
        live_cells.append(cells)
    for i in range(len(units)):
        for j in range(i + 1, len(units)):
            if live_cells[i] & live_cells[j]:
                found.add(("overlap", units[i].id))
    return found


def oracle_rules(*case) -> set[str]:
    """The rule ids the document's rejections give."""
    return {rule for rule, _ in oracle_findings(*case)}


# ---------------------------------------------------------------------------------------------------------------------
# Strategies


@st.composite
def conversions(draw: st.DrawFn) -> tuple[list[ScheduleConstant], list[str], SchedulePool | None, dict]:
    """Random constants (in tensors[] order), operators, pool and engine table."""
    operators = [f"0:op{i}" for i in range(draw(st.integers(1, 6)))]
    constants = []
    for i in range(draw(st.integers(1, 9))):
        readers = draw(st.sets(st.integers(0, len(operators) - 1), min_size=1, max_size=3))
        constants.append(
            ScheduleConstant(
                id=f"t{i}",
                storage_id=draw(st.sampled_from([None, None, None, f"s{i}"])),
                bytes=draw(st.integers(0, 48)),
                alignment=draw(st.sampled_from([1, 2, 4, 8, 16])),
                memory=draw(st.sampled_from(["MRAM", "MRAM", "MRAM", "mram", "PSRAM", "SRAM"])),
                permitted=draw(st.sampled_from([True] * 5 + [False])),
                stageable_reason=draw(st.sampled_from([None] * 15 + REASONS)),
                readers=tuple(sorted(readers)),
            )
        )
    pool_bytes = st.integers(0, 160) | st.sampled_from([32, 64, 96])
    pool = draw(
        st.sampled_from([None, *["DTCM"] * 4, "dtcm"]).flatmap(
            lambda memory: (
                st.none() if memory is None else st.builds(SchedulePool, st.just(memory), pool_bytes, st.just(16))
            )
        )
    )
    engines = {
        ("MRAM", "DTCM"): draw(st.sampled_from([{"cpu"}, {"cpu"}, {"cpu"}, set(), {"cpu", "dma"}])),
        ("PSRAM", "dtcm"): draw(st.sampled_from([{"cpu", "dma"}, {"cpu"}, {"dma"}])),
    }
    return constants, operators, pool, engines


def names_of(constants: list[ScheduleConstant]) -> list[str]:
    return [c.storage_id if c.storage_id is not None else c.id for c in constants]


@st.composite
def random_schedules(draw: st.DrawFn):
    """A conversion and a random schedule for it: random units, offsets, issue points, engines, stated fields.

    Each unit starts plausible (distinct constants in tensors[] order, issued before its first reader, on
    `cpu`, at a multiple of 16, derived fields absent or right), then each field goes wrong at the schedule's
    noise rate.
    """
    constants, operators, pool, engines = draw(conversions())
    names = names_of(constants)
    wrong_names = ["zz", *(c.id for c in constants if c.storage_id is not None)]
    noise = draw(st.sampled_from([0, 5, 15, 40]))

    def noisy() -> bool:
        return draw(st.integers(0, 99)) < noise

    unused = list(range(len(constants)))
    units = []
    for number in range(draw(st.integers(0, 5))):
        if unused and not noisy():
            chosen = sorted(draw(st.sets(st.sampled_from(unused), min_size=1, max_size=2)))
            unused = [i for i in unused if i not in chosen]
            tensors = [names[i] for i in chosen]
        else:
            tensors = draw(st.lists(st.sampled_from(names) | st.sampled_from(wrong_names), max_size=3))
        if noisy():
            tensors = draw(st.permutations(tensors))
        first = min((min(constants[names.index(n)].readers) for n in tensors if n in names), default=0)
        if noisy():
            issue_after = draw(st.none() | st.sampled_from(operators) | st.just("0:nope"))
        else:
            issue_after = draw(st.sampled_from([None, *operators[:first]]))
        capacity = pool.bytes if pool is not None else 160
        aligned = st.sampled_from(range(0, capacity + 1, 16))
        offset = draw(st.integers(-8, capacity + 8) if noisy() else aligned)
        unit = Unit(
            id=draw(st.integers(0, 6)) if noisy() else number,
            tensors=tuple(tensors),
            pool_offset=offset,
            issue_after=issue_after,
            engine=draw(st.sampled_from(["dma", "sdma"])) if noisy() else "cpu",
        )
        derived = oracle_derived(unit, constants, operators)
        stated = {}
        for field in ("bytes", "source_memory", "wait_before", "last_reader", "source_offset"):
            if noisy():
                stated[field] = draw(
                    {
                        "bytes": st.integers(0, 64),
                        "source_offset": st.integers(0, 64),
                        "source_memory": st.sampled_from(["MRAM", "mram", "PSRAM", "SRAM"]),
                    }.get(field, st.sampled_from([*operators, "0:nope", 0, 1, 2, 5]))
                )
            elif field in derived and draw(st.booleans()):
                stated[field] = derived[field]
                if field in ("wait_before", "last_reader") and draw(st.booleans()):
                    stated[field] = operators.index(str(derived[field]))  # the position form
        units.append(replace(unit, **stated))
    source = "plan" if units else "none"
    if noisy():
        source = draw(st.sampled_from(["plan", "none", "auto"]))
    stated_pool = (
        draw(st.sampled_from([None, pool, SchedulePool("DTCM", 999, 16)]))
        if noisy()
        else draw(st.sampled_from([None, pool]))
    )
    return Schedule(source, stated_pool, tuple(units)), constants, operators, pool, engines


@st.composite
def mutated_plans(draw: st.DrawFn):
    """A schedule the planner wrote, with at most one field of one unit changed (mostly valid schedules)."""
    constants, operators, pool, engines = draw(conversions())
    schedule = plan_schedule(constants, operators, pool, engines)
    if schedule.units and draw(st.booleans()):
        position = draw(st.integers(0, len(schedule.units) - 1))
        field = draw(
            st.sampled_from(
                ["pool_offset", "issue_after", "engine", "bytes", "tensors", "id", "wait_before", "last_reader"]
            )
        )
        unit = schedule.units[position]
        value = {
            "pool_offset": draw(st.integers(-8, 170)),
            "issue_after": draw(st.none() | st.sampled_from(operators)),
            "engine": draw(st.sampled_from(["cpu", "dma"])),
            "bytes": draw(st.integers(0, 64)),
            "wait_before": draw(st.sampled_from([*operators, *range(len(operators))])),
            "last_reader": draw(st.sampled_from([*operators, *range(len(operators))])),
            "tensors": tuple(draw(st.lists(st.sampled_from(names_of(constants)), min_size=1, max_size=2))),
            "id": draw(st.integers(0, len(schedule.units))),
        }[field]
        units = list(schedule.units)
        units[position] = replace(unit, **{field: value})
        schedule = replace(schedule, units=tuple(units))
    return schedule, constants, operators, pool, engines


# ---------------------------------------------------------------------------------------------------------------------
# Properties


@PROPERTY
@given(conversions())
def test_the_validator_accepts_every_schedule_the_planner_writes(conversion: tuple) -> None:
    constants, operators, pool, engines = conversion
    schedule = plan_schedule(constants, operators, pool, engines)
    assert validate(schedule, constants, operators, pool, engines) == []
    assert oracle_rules(schedule, constants, operators, pool, engines) == set()
    assert schedule == plan_schedule(constants, operators, pool, engines)  # deterministic
    assert schedule.pool == pool and (schedule.source == "plan") == bool(schedule.units)
    assert [u.id for u in schedule.units] == list(range(len(schedule.units)))
    by_name = dict(zip(names_of(constants), constants, strict=True))
    streamed = {name for u in schedule.units for name in u.tensors}
    for name in streamed:
        assert by_name[name].permitted and by_name[name].stageable_reason is None
    for u in schedule.units:
        assert u.engine == "cpu"
        first = min(min(by_name[n].readers) for n in u.tensors)
        assert u.issue_after == (None if first == 0 else operators[first - 1])


@PROPERTY
@given(conversions())
def test_the_planner_leaves_out_only_constants_that_fit_nowhere(conversion: tuple) -> None:
    """First fit: a candidate left direct has no aligned offset free of every unit live with it."""
    constants, operators, pool, engines = conversion
    schedule = plan_schedule(constants, operators, pool, engines)
    if pool is None:
        return
    by_name = dict(zip(names_of(constants), constants, strict=True))
    streamed = {name for u in schedule.units for name in u.tensors}
    taken = []  # (positions, bytes) a unit holds
    for u in schedule.units:
        first = -1 if u.issue_after is None else operators.index(u.issue_after)
        last = operators.index(u.last_reader)
        taken.append((set(range(first + 1, last + 1)), set(range(u.pool_offset, u.pool_offset + u.bytes))))
    for name, constant in by_name.items():
        candidate = (
            constant.permitted
            and constant.stageable_reason is None
            and constant.bytes > 0
            and constant.memory.lower() != pool.memory.lower()
            and "cpu" in offered(engines, constant.memory, pool.memory)
        )
        if not candidate or name in streamed:
            continue
        live = set(range(constant.readers[0], constant.readers[-1] + 1))
        for offset in range(0, pool.bytes - constant.bytes + 1, constant.alignment):
            held = set(range(offset, offset + constant.bytes))
            assert any(live & positions and held & pool_bytes for positions, pool_bytes in taken), (name, offset)


@PROPERTY
@given(random_schedules())
def test_the_validator_agrees_with_an_independent_checker_on_random_schedules(case: tuple) -> None:
    schedule, constants, operators, pool, engines = case
    found = validate(schedule, constants, operators, pool, engines)
    expected = oracle_findings(schedule, constants, operators, pool, engines)
    assert {v.rule for v in found} == {rule for rule, _ in expected}, found
    assert {(v.rule, v.unit) for v in found} == expected, found
    assert all(v.message for v in found)


@PROPERTY
@given(mutated_plans())
def test_the_validator_agrees_with_an_independent_checker_on_edited_plans(case: tuple) -> None:
    schedule, constants, operators, pool, engines = case
    found = validate(schedule, constants, operators, pool, engines)
    assert {(v.rule, v.unit) for v in found} == oracle_findings(schedule, constants, operators, pool, engines), found


@PROPERTY
@given(mutated_plans())
def test_derive_yields_a_valid_fixed_point_in_issue_order(case: tuple) -> None:
    schedule, constants, operators, pool, engines = case
    if validate(schedule, constants, operators, pool, engines):
        return
    derived = derive(schedule, constants, operators, pool, engines)
    assert validate(derived, constants, operators, pool, engines) == []
    assert derive(derived, constants, operators, pool, engines) == derived
    assert [u.id for u in derived.units] == list(range(len(derived.units)))
    issue = [-1 if u.issue_after is None else operators.index(u.issue_after) for u in derived.units]
    assert issue == sorted(issue)
    for u in derived.units:
        expected = oracle_derived(u, constants, operators)
        assert expected == {field: getattr(u, field) for field in expected}


@PROPERTY
@given(mutated_plans(), st.sampled_from([None, 1, 16, 32, 48, 4096]))
def test_pieces_cover_each_unit_without_crossing_a_boundary(case: tuple, boundary: int | None) -> None:
    schedule, constants, operators, pool, engines = case
    if validate(schedule, constants, operators, pool, engines):
        return
    derived = derive(schedule, constants, operators, pool, engines)
    split = pieces(derived, boundary)
    for u in derived.units:
        own = [p for p in split if p.unit == u.id]
        assert sum(p.bytes for p in own) == u.bytes
        cursor = u.pool_offset
        for p in own:
            assert p.pool_offset == cursor and p.bytes > 0
            assert p.source_offset - u.source_offset == p.pool_offset - u.pool_offset
            if boundary:
                assert p.pool_offset // boundary == (p.pool_offset + p.bytes - 1) // boundary
            cursor += p.bytes
