"""The transfer schedule (heliabuild.aot.schedule): every rejection, derived fields, the planner, JSON (read by
heliabuild.aot.records), report facts."""

from __future__ import annotations

import pytest

from heliabuild.aot.records import APPLIED, dump_schedule, read_schedule
from heliabuild.aot.schedule import (
    MAX_UNITS,
    RULES,
    UNKNOWN_FIELD_HINT,
    OperatorOrder,
    Piece,
    PoolSpan,
    Schedule,
    ScheduleConstant,
    SchedulePool,
    ScheduleViolation,
    Unit,
    align_up,
    span_layout,
)
from heliabuild.aot.schedule_check import check, derive, validate
from heliabuild.aot.schedule_plan import pieces, plan_schedule, pool_layout, schedule_warnings, tensor_placements
from heliabuild.errors import HeliaError, PlanReadError, ScheduleError

OPS = OperatorOrder([f"0:op{i}" for i in range(6)])
POOL = SchedulePool("DTCM", 1024, 16)
ENGINES = {("MRAM", "DTCM"): {"cpu"}, ("PSRAM", "DTCM"): {"cpu", "dma"}}


def const(
    name: str,
    size: int = 64,
    readers: tuple[int, ...] = (1,),
    *,
    alignment: int = 16,
    memory: str = "MRAM",
    permitted: bool = True,
    reason: str | None = None,
    storage_id: str | None = None,
) -> ScheduleConstant:
    return ScheduleConstant(name, storage_id, size, alignment, memory, permitted, reason, readers)


def unit(uid: int, tensors: tuple[str, ...], offset: int = 0, after: str | None = "0:op0", **derived) -> Unit:
    return Unit(uid, tensors, offset, after, derived.pop("engine", "cpu"), **derived)


def plan(*units: Unit, pool: SchedulePool | None = POOL, source: str = "plan") -> Schedule:
    return Schedule(source, pool, units)


CONSTANTS = [
    const("a", 64, (1,)),
    const("b", 40, (1, 3), alignment=8),
    const("c", 100, (2,)),
    const("p", 32, (4,), memory="PSRAM"),
    const("q", 16, (5,)),
]


def violations(schedule: Schedule, constants=CONSTANTS, pool: SchedulePool | None = POOL) -> list[ScheduleViolation]:
    return validate(schedule, constants, OPS, pool, ENGINES)


def only(schedule: Schedule, rule: str, constants=CONSTANTS, pool: SchedulePool | None = POOL) -> str:
    """The one violation's message, asserting it is the only one and has `rule`."""
    found = violations(schedule, constants, pool)
    assert [v.rule for v in found] == [rule], found
    assert rule in RULES
    return found[0].message


# ---------------------------------------------------------------------------------------------------------------------
# Acceptance


def test_a_valid_schedule_is_accepted() -> None:
    schedule = plan(unit(0, ("a", "b")), unit(1, ("c",), 128, "0:op1"), unit(2, ("p",), 256, "0:op3"))
    assert violations(schedule) == []
    check(schedule, CONSTANTS, OPS, POOL, ENGINES)


def test_source_none_without_units_is_accepted_with_or_without_a_pool() -> None:
    assert violations(plan(source="none")) == []
    assert violations(plan(source="none", pool=None), pool=None) == []


# ---------------------------------------------------------------------------------------------------------------------
# Every rejection, one test each


def test_rejects_source_plan_without_units() -> None:
    message = only(plan(), "source")
    assert "'plan'" in message and "no units" in message


def test_rejects_source_none_with_units() -> None:
    message = only(plan(unit(0, ("a",)), source="none"), "source")
    assert "'none'" in message and "1 unit" in message


def test_rejects_an_unknown_source() -> None:
    assert "'auto'" in only(plan(unit(0, ("a",)), source="auto"), "source")


def test_rejects_more_than_65535_units() -> None:
    units = tuple(unit(i, ("a",)) for i in range(MAX_UNITS + 1))
    message = only(plan(*units), "unit-count")
    assert "65536 units" in message and "65535" in message


def test_accepts_exactly_65535_units() -> None:
    constants = [const(f"t{i}", 1, (0,), alignment=1) for i in range(MAX_UNITS)]
    units = tuple(unit(i, (f"t{i}",), i, None) for i in range(MAX_UNITS))
    assert (
        violations(
            plan(*units, pool=SchedulePool("DTCM", MAX_UNITS, 16)), constants, SchedulePool("DTCM", MAX_UNITS, 16)
        )
        == []
    )


def test_rejects_a_stated_pool_that_differs_from_the_configured_one() -> None:
    stated = SchedulePool("DTCM", 2048, 16)
    message = only(plan(unit(0, ("a",)), pool=stated), "derived")
    assert "schedule.pool" in message and "2048" in message and "1024" in message


def test_rejects_a_stated_pool_when_none_is_configured() -> None:
    assert violations(plan(source="none", pool=None), pool=None) == []
    message = only(plan(source="none", pool=POOL), "derived", pool=None)
    assert (
        message
        == "schedule.pool states {memory DTCM, bytes 1024, alignment 16}, but no memory.stream_pool is configured"
    )


def test_stated_pool_memory_compares_in_any_case() -> None:
    assert violations(plan(unit(0, ("a",)), pool=SchedulePool("dtcm", 1024, 16))) == []


def test_rejects_units_without_a_configured_pool() -> None:
    message = only(plan(unit(0, ("a",)), pool=None), "no-pool", pool=None)
    assert "memory.stream_pool" in message


def test_rejects_two_units_with_one_id() -> None:
    message = only(plan(unit(4, ("a",)), unit(4, ("c",), 128, "0:op1")), "unit-id")
    assert "units[1] has id 4, like units[0]" in message


def test_rejects_an_empty_unit() -> None:
    assert only(plan(unit(3, ())), "empty-unit") == "unit 3 names no constant"


def test_rejects_a_name_that_is_no_constant() -> None:
    message = only(plan(unit(0, ("a", "nope"))), "unknown-tensor")
    assert message == "unit 0 names 'nope', which is no constant in tensors[]"


def test_rejects_a_repacked_constant_named_by_its_id() -> None:
    constants = [*CONSTANTS, const("w", 32, (2,), storage_id="w_packed")]
    message = only(plan(unit(0, ("w",), 0, "0:op1")), "unknown-tensor", constants)
    assert "'w' by its id" in message and "'w_packed'" in message
    assert violations(plan(unit(0, ("w_packed",), 0, "0:op1")), constants) == []


def test_rejects_a_constant_named_twice_in_one_unit() -> None:
    found = violations(plan(unit(0, ("a", "a"))))
    assert [v.rule for v in found] == ["duplicate-tensor"]
    assert found[0].message == "unit 0 names 'a' twice" and found[0].tensor == "a"


def test_rejects_a_constant_in_two_units() -> None:
    message = only(plan(unit(0, ("a",)), unit(1, ("a",), 512)), "duplicate-tensor")
    assert message.startswith("constant 'a' is in unit 0 and unit 1")


def test_rejects_tensors_out_of_tensors_order() -> None:
    message = only(plan(unit(0, ("b", "a"), 0, None, bytes=None)), "tensor-order")
    assert "['b', 'a']" in message and "['a', 'b']" in message


def test_rejects_a_constant_whose_rules_do_not_permit_stream() -> None:
    constants = [*CONSTANTS, const("x", 16, (2,), permitted=False)]
    message = only(plan(unit(0, ("x",), 0, "0:op1")), "not-permitted", constants)
    assert message == "unit 0 streams 'x', whose merged memory.tensors rules do not permit stream"


@pytest.mark.parametrize(
    "reason", ["read at init", "pinned", "model output", "shares storage through an alias", "fixed in place"]
)
def test_rejects_a_constant_that_cannot_be_staged(reason: str) -> None:
    constants = [*CONSTANTS, const("x", 16, (2,), reason=reason)]
    message = only(plan(unit(0, ("x",), 0, "0:op1")), "not-stageable", constants)
    assert message == f"unit 0 streams 'x', which cannot be staged: {reason}"


def test_rejects_constants_stored_in_two_memories() -> None:
    constants = [const("m", 16, (2,)), const("n", 16, (2,), memory="PSRAM")]
    message = only(plan(unit(0, ("m", "n"), 0, "0:op1")), "two-memories", constants)
    assert "'m' in MRAM" in message and "'n' in PSRAM" in message


def test_memories_compare_in_any_case() -> None:
    constants = [const("m", 16, (2,)), const("n", 16, (2,), memory="mram")]
    assert violations(plan(unit(0, ("m", "n"), 0, "0:op1", source_memory="Mram")), constants) == []


def test_rejects_an_engine_the_platform_does_not_offer() -> None:
    found = violations(plan(unit(0, ("a",), engine="dma")))
    assert [v.rule for v in found] == ["engine", "dma"]
    assert "from MRAM to DTCM (it offers cpu)" in found[0].message
    pool = SchedulePool("SRAM", 1024, 16)
    message = only(plan(unit(0, ("a",)), pool=pool), "engine", pool=pool)
    assert "'cpu'" in message and "from MRAM to SRAM (it offers no engine)" in message


def test_rejects_an_unknown_engine() -> None:
    assert only(plan(unit(0, ("a",), engine="sdma")), "engine") == "unit 0 names engine 'sdma'; expected 'cpu' or 'dma'"


def test_refuses_a_dma_unit_even_where_offered() -> None:
    message = only(plan(unit(0, ("p",), 0, "0:op3", engine="dma")), "dma")
    assert message == "unit 0 uses engine 'dma': this release emits cpu units only"


def test_rejects_an_issue_after_that_names_no_operator() -> None:
    message = only(plan(unit(0, ("a",), 0, "0:op9")), "issue-after")
    assert message == "unit 0 is issued after '0:op9', which names no operator"


@pytest.mark.parametrize("after", ["0:op1", "0:op2"])
def test_rejects_a_unit_not_issued_before_its_first_reader(after: str) -> None:
    message = only(plan(unit(0, ("a",), 0, after)), "issue-order")
    assert f"issued after {after!r}" in message and "first reader '0:op1' (position 1)" in message


def test_rejects_a_unit_that_does_not_fit_the_pool() -> None:
    assert violations(plan(unit(0, ("c",), 912, "0:op1"))) == []  # 912 + 112 = 1024 fits exactly
    message = only(plan(unit(0, ("c",), 928, "0:op1")), "pool-fit")
    assert message == "unit 0 spans pool bytes [928, 1028), outside the pool of 1024 bytes"


def test_rejects_a_negative_pool_offset() -> None:
    assert "[-16, 48)" in only(plan(unit(0, ("a",), -16)), "pool-fit")


def test_rejects_a_unit_off_its_span_alignment() -> None:
    message = only(plan(unit(0, ("a", "b"), 8)), "alignment")
    assert message == "unit 0 starts at pool offset 8, not a multiple of its span alignment 16"
    assert violations(plan(unit(0, ("b",), 8, "0:op0"))) == []  # alone, b aligns to 8


def test_rejects_units_live_at_once_that_overlap_in_pool_bytes() -> None:
    # a: live (0, 1], c: live (0, 2]; bytes [0, 64) and [48, 160) share [48, 64)
    schedule = plan(unit(0, ("a",), 0), unit(1, ("c",), 48))
    found = violations(schedule)
    assert [v.rule for v in found] == ["overlap"]
    assert (
        found[0].message == "units 0 and 1 are both live at operator positions 1..1 and overlap in pool bytes [48, 64)"
    )


def test_units_whose_live_ranges_only_touch_share_bytes() -> None:
    # a is live through op1's run; c is issued after op1: (0, 1] and (1, 2] do not meet
    assert violations(plan(unit(0, ("a",), 0, "0:op0"), unit(1, ("c",), 0, "0:op1"))) == []
    # issued after op0 instead, c is live at op1 with a
    assert [v.rule for v in violations(plan(unit(0, ("a",), 0, "0:op0"), unit(1, ("c",), 0, "0:op0")))] == ["overlap"]


def test_adjacent_spans_live_at_once_do_not_overlap() -> None:
    assert violations(plan(unit(0, ("a",), 0), unit(1, ("c",), 64))) == []


@pytest.mark.parametrize(
    ("field", "stated", "derived"),
    [
        ("bytes", 100, 104),
        ("source_memory", "PSRAM", "MRAM"),
        ("wait_before", "0:op0", "0:op1"),
        ("last_reader", "0:op1", "0:op3"),
    ],
)
def test_rejects_a_derived_field_stated_differently(field: str, stated: object, derived: object) -> None:
    message = only(plan(unit(0, ("a", "b"), **{field: stated})), "derived")
    assert message == f"unit 0 states {field} {stated!r}, but the derived value is {derived!r}"


def test_accepts_derived_fields_stated_as_derived_and_ignores_a_stated_source_offset() -> None:
    stated = unit(0, ("a", "b"), bytes=104, source_memory="mram", wait_before="0:op1", last_reader="0:op3")
    assert violations(plan(stated)) == []
    assert violations(plan(Unit(0, ("a",), 0, "0:op0", "cpu", source_offset=999_999))) == []


def test_reports_every_violation_of_one_unit() -> None:
    constants = [*CONSTANTS, const("x", 8, (2,), permitted=False, reason="pinned", memory="PSRAM")]
    found = violations(plan(unit(7, ("x", "a", "zz"), 8, "0:op5", engine="dma", bytes=3)), constants)
    assert {v.rule for v in found} == {
        "unknown-tensor",
        "tensor-order",
        "not-permitted",
        "not-stageable",
        "two-memories",
        "dma",
        "issue-order",
        "alignment",
        "derived",
    }
    assert all(v.unit == 7 for v in found)


def test_check_raises_a_schedule_error_naming_the_unit() -> None:
    with pytest.raises(ScheduleError) as caught:
        check(plan(unit(2, ("a",), 8), unit(3, ("nope",))), CONSTANTS, OPS, POOL, ENGINES)
    error = caught.value
    assert isinstance(error, HeliaError)
    assert error.message.startswith("the transfer schedule is rejected: unit 2 starts at pool offset 8")
    assert "and 1 more: unit 3 names 'nope'" in error.message
    assert [v.rule for v in error.violations] == ["alignment", "unknown-tensor"]


def test_bad_conversion_facts_are_the_callers_fault() -> None:
    with pytest.raises(ValueError, match="readers"):
        const("x", 8, ())
    with pytest.raises(ValueError, match="past the operators"):
        validate(plan(source="none"), [const("x", 8, (6,))], OPS, POOL, ENGINES)
    with pytest.raises(ValueError, match="two constants"):
        validate(plan(source="none"), [const("x"), const("x")], OPS, POOL, ENGINES)
    with pytest.raises(ValueError, match="not distinct"):
        OperatorOrder(["0:a", "0:a"])


# ---------------------------------------------------------------------------------------------------------------------
# Derived fields on worked examples


def test_align_up() -> None:
    assert [align_up(v, 16) for v in (0, 1, 16, 17)] == [0, 16, 16, 32]
    assert align_up(-1, 16) == 0


def test_span_layout_pads_each_tensor_to_its_alignment() -> None:
    constants = [const("a", 10, alignment=4), const("b", 7, alignment=16), const("c", 3, alignment=1)]
    assert span_layout(constants) == ([0, 16, 23], 26, 16)
    assert span_layout([]) == ([], 0, 1)


def test_derive_computes_bytes_readers_and_source_offsets_across_two_memories() -> None:
    constants = [
        const("m0", 10, (0,), alignment=4),  # MRAM, direct: [0, 10)
        const("p0", 30, (1,), memory="PSRAM"),  # PSRAM, unit: [0, 30)
        const("m1", 20, (1,)),  # MRAM, unit with m2: span at align_up(10, 16) = 16
        const("m2", 8, (1, 4), alignment=8),  # in the span at align_up(20, 8) = 24; span bytes 32
        const("p1", 5, (2,), alignment=1, memory="PSRAM"),  # PSRAM, direct: [30, 35)
        const("p2", 16, (3,), memory="PSRAM"),  # PSRAM, unit: align_up(35, 16) = 48
    ]
    engines = {("MRAM", "DTCM"): {"cpu"}, ("PSRAM", "DTCM"): {"cpu"}}
    derived = derive(
        [unit(5, ("p2",), 0, "0:op2"), unit(1, ("m1", "m2"), 32, None), unit(9, ("p0",), 64, None)],
        constants,
        OPS,
        POOL,
        engines,
    )
    assert derived.source == "plan" and derived.pool == POOL
    assert [u.to_json() for u in derived.units] == [
        {
            "id": 0,
            "tensors": ["m1", "m2"],
            "pool_offset": 32,
            "issue_after": None,
            "engine": "cpu",
            "bytes": 32,
            "source_memory": "MRAM",
            "source_offset": 16,
            "wait_before": "0:op1",
            "last_reader": "0:op4",
        },
        {
            "id": 1,
            "tensors": ["p0"],
            "pool_offset": 64,
            "issue_after": None,
            "engine": "cpu",
            "bytes": 30,
            "source_memory": "PSRAM",
            "source_offset": 0,
            "wait_before": "0:op1",
            "last_reader": "0:op1",
        },
        {
            "id": 2,
            "tensors": ["p2"],
            "pool_offset": 0,
            "issue_after": "0:op2",
            "engine": "cpu",
            "bytes": 16,
            "source_memory": "PSRAM",
            "source_offset": 48,
            "wait_before": "0:op3",
            "last_reader": "0:op3",
        },
    ]
    assert validate(derived, constants, OPS, POOL, engines) == []
    assert derive(derived, constants, OPS, POOL, engines) == derived


def test_a_units_span_is_one_block_in_the_source_arena() -> None:
    # x and z stream in one unit with the direct y between them in tensors[]: the span [x, z] comes first, y after it
    constants = [
        const("x", 8, (1,), alignment=8),
        const("y", 16, (1,), permitted=False),
        const("z", 4, (1,), alignment=4),
    ]
    constants.append(const("w", 8, (2,), alignment=8))
    derived = derive([unit(0, ("x", "z")), unit(1, ("w",), 16, "0:op1")], constants, OPS, POOL, ENGINES)
    assert [(u.bytes, u.source_offset) for u in derived.units] == [(12, 0), (8, 32)]


def test_derive_orders_units_by_issue_point_then_id_and_renumbers() -> None:
    constants = [const(n, 16, (r,)) for n, r in (("a", 1), ("b", 3), ("c", 3), ("d", 4))]
    units = [
        unit(7, ("c",), 0, "0:op2"),
        unit(3, ("a",), 16, None),
        unit(5, ("b",), 32, "0:op2"),
        unit(9, ("d",), 48, "0:op0"),
    ]
    derived = derive(Schedule("plan", None, units), constants, OPS, POOL, ENGINES)
    assert [(u.id, u.tensors) for u in derived.units] == [(0, ("a",)), (1, ("d",)), (2, ("b",)), (3, ("c",))]


def test_derive_of_no_units_is_source_none_with_the_pool() -> None:
    assert derive([], CONSTANTS, OPS, POOL, ENGINES) == Schedule("none", POOL, ())
    assert derive([], CONSTANTS, OPS, None, ENGINES) == Schedule("none", None, ())


def test_derive_refuses_a_schedule_validate_rejects() -> None:
    with pytest.raises(ScheduleError, match="unit 0 names 'nope'"):
        derive([unit(0, ("nope",))], CONSTANTS, OPS, POOL, ENGINES)


# ---------------------------------------------------------------------------------------------------------------------
# The planner


def test_planner_without_a_pool_streams_nothing() -> None:
    assert plan_schedule(CONSTANTS, OPS, None, ENGINES) == Schedule("none", None, ())


def test_planner_with_nothing_permitted_streams_nothing() -> None:
    constants = [const("a", permitted=False), const("b", reason="pinned", readers=(2,))]
    assert plan_schedule(constants, OPS, POOL, ENGINES) == Schedule("none", POOL, ())


def test_planner_fills_a_small_pool_biggest_first() -> None:
    # all three live together at op2; 64 + 32 fit a pool of 100, the 48 does not fit beside the 64
    constants = [const("c64", 64, (0, 2)), const("c48", 48, (1, 2)), const("c32", 32, (2,))]
    schedule = plan_schedule(constants, OPS, SchedulePool("DTCM", 100, 16), ENGINES)
    assert [(u.tensors, u.pool_offset, u.issue_after) for u in schedule.units] == [
        (("c64",), 0, None),
        (("c32",), 64, "0:op1"),
    ]


def test_planner_shares_bytes_between_units_whose_live_ranges_do_not_meet() -> None:
    constants = [const("a", 64, (0,)), const("b", 64, (1, 2)), const("c", 64, (3,))]
    schedule = plan_schedule(constants, OPS, SchedulePool("DTCM", 64, 16), ENGINES)
    assert [(u.tensors, u.pool_offset, u.issue_after, u.last_reader) for u in schedule.units] == [
        (("a",), 0, None, "0:op0"),
        (("b",), 0, "0:op0", "0:op2"),
        (("c",), 0, "0:op2", "0:op3"),
    ]


def test_planner_never_streams_constants_that_may_not_or_cannot_stream() -> None:
    constants = [
        const("a", 16, (1,)),
        const("no", 16, (1,), permitted=False),
        const("init", 16, (2,), reason="read at init"),
        const("out", 16, (2,), reason="model output"),
        const("alias", 16, (3,), reason="shares storage through an alias"),
        const("fixed", 16, (3,), reason="fixed in place"),
        const("pin", 16, (4,), reason="pinned"),
        const("empty", 0, (4,)),
        const("tcm", 16, (4,), memory="dtcm"),
        const("nocpu", 16, (5,), memory="FLASH"),
    ]
    schedule = plan_schedule(constants, OPS, POOL, ENGINES)
    assert [u.tensors for u in schedule.units] == [("a",)]


def test_planner_groups_constants_sharing_a_first_reader_and_splits_a_group_that_does_not_fit() -> None:
    constants = [const("a", 32, (1,)), const("b", 32, (1, 2)), const("c", 16, (2,))]
    grouped = plan_schedule(constants, OPS, POOL, ENGINES)
    assert [(u.tensors, u.pool_offset, u.bytes) for u in grouped.units] == [(("a", "b"), 0, 64), (("c",), 64, 16)]
    split = plan_schedule(constants, OPS, SchedulePool("DTCM", 48, 16), ENGINES)
    assert [(u.tensors, u.pool_offset) for u in split.units] == [(("a",), 0), (("c",), 0)]  # b fits beside neither


def test_planner_groups_by_memory_too() -> None:
    constants = [const("a", 32, (1,)), const("p", 32, (1,), memory="PSRAM")]
    schedule = plan_schedule(constants, OPS, POOL, ENGINES)
    assert [(u.tensors, u.source_memory, u.engine) for u in schedule.units] == [
        (("a",), "MRAM", "cpu"),
        (("p",), "PSRAM", "cpu"),
    ]


def test_planner_is_deterministic_and_passes_validation() -> None:
    constants = [const(f"t{i}", 16 * (1 + i % 5), tuple(sorted({i % 6, 5})), alignment=2 ** (i % 5)) for i in range(12)]
    first = plan_schedule(constants, OPS, SchedulePool("DTCM", 160, 16), ENGINES)
    assert first == plan_schedule(constants, OPS, SchedulePool("DTCM", 160, 16), ENGINES)
    assert first.units and validate(first, constants, OPS, SchedulePool("DTCM", 160, 16), ENGINES) == []


# ---------------------------------------------------------------------------------------------------------------------
# JSON


DOC_SCHEDULE = {
    "source": "plan",
    "pool": {"memory": "DTCM", "bytes": 65536, "alignment": 16},
    "units": [
        {
            "id": 0,
            "tensors": ["conv2d_1/weights"],
            "pool_offset": 0,
            "issue_after": None,
            "engine": "cpu",
            "bytes": 1152,
            "source_memory": "MRAM",
            "source_offset": 0,
            "wait_before": 0,
            "last_reader": 0,
        }
    ],
}


def test_the_documents_example_round_trips_and_validates() -> None:
    schedule = read_schedule(DOC_SCHEDULE)
    assert schedule.to_json() == DOC_SCHEDULE
    constants = [const("conv2d_1/weights", 1152, (0,))]
    pool = SchedulePool("DTCM", 65536, 16)
    operators = OperatorOrder(["0:conv2d_1/Relu"])
    assert validate(schedule, constants, operators, pool, ENGINES) == []
    derived = derive(schedule, constants, operators, pool, ENGINES)
    assert (derived.units[0].wait_before, derived.units[0].last_reader) == ("0:conv2d_1/Relu", "0:conv2d_1/Relu")
    assert derived.to_json(operators) == DOC_SCHEDULE  # positions, as the plan writes them
    assert dump_schedule(derived, operators) == DOC_SCHEDULE and dump_schedule(None) is None  # the one writer
    assert derived.to_json()["units"][0]["wait_before"] == "0:conv2d_1/Relu"


def test_readers_stated_as_positions_compare_as_positions() -> None:
    assert violations(plan(unit(0, ("a", "b"), wait_before=1, last_reader=3))) == []
    message = only(plan(unit(0, ("a", "b"), wait_before=1, last_reader=2)), "derived")
    assert message == "unit 0 states last_reader 2, but the derived value is 3"
    assert only(plan(unit(0, ("a",), wait_before="0:op2")), "derived").endswith("the derived value is '0:op1'")


def test_input_only_units_read_with_derived_fields_unstated() -> None:
    document = {
        "source": "plan",
        "units": [{"id": 0, "tensors": ["a"], "pool_offset": 0, "issue_after": None, "engine": "cpu"}],
    }
    for context in (None, APPLIED):
        schedule = read_schedule(document, context=context)
        assert schedule.pool is None and schedule.units == (Unit(0, ("a",), 0, None, "cpu"),)
        assert schedule.to_json() == document
        assert read_schedule({"source": "none"}, context=context) == Schedule("none", None, ())
    assert "pool" not in Schedule("none", None).to_json()


@pytest.mark.parametrize(
    ("document", "where", "field"),
    [
        ({**DOC_SCHEDULE, "extra": 1}, "schedule", "extra"),
        ({**DOC_SCHEDULE, "pool": {**DOC_SCHEDULE["pool"], "banks": 2}}, "schedule.pool", "banks"),
        ({**DOC_SCHEDULE, "units": [{**DOC_SCHEDULE["units"][0], "pool": "DTCM"}]}, "schedule.units.0", "pool"),
    ],
)
def test_unknown_fields_under_schedule_are_rejected_naming_them(document: dict, where: str, field: str) -> None:
    with pytest.raises(PlanReadError) as caught:
        read_schedule(document, "<path>", APPLIED)
    assert caught.value.message == (
        f"optimization.plan <path> is not an optimization plan this release reads: {where}: unknown field(s) "
        f"['{field}'] under schedule, which this release would have to apply."
    )
    assert caught.value.hint == UNKNOWN_FIELD_HINT
    assert read_schedule(document, "<path>") == read_schedule(DOC_SCHEDULE)  # without APPLIED it is ignored


@pytest.mark.parametrize(
    ("document", "message"),
    [
        ({"units": []}, "schedule: missing field 'source'."),
        ({"source": 1}, "schedule.source: expected a string, found 1."),
        ({"source": "plan", "units": {}}, "schedule.units: expected an array, found {}."),
        ({"source": "plan", "units": [{"id": 0}]}, "schedule.units.0: missing field 'tensors'."),
        (
            {"source": "plan", "units": [{"id": 0, "tensors": ["a"], "pool_offset": 0, "engine": "cpu"}]},
            "schedule.units.0: missing field 'issue_after'.",
        ),
        (
            {
                "source": "plan",
                "units": [{"id": True, "tensors": ["a"], "pool_offset": 0, "issue_after": None, "engine": "cpu"}],
            },
            "schedule.units.0.id: expected an integer, found true.",
        ),
        (
            {"source": "plan", "units": [{"id": 0, "tensors": [1], "pool_offset": 0, "issue_after": None}]},
            "schedule.units.0.tensors.0: expected a string, found 1.",
        ),
        (
            {"source": "plan", "pool": {"memory": "DTCM", "bytes": "64", "alignment": 16}},
            'schedule.pool.bytes: expected an integer, found "64".',
        ),
        ({"source": "plan", "units": ["x"]}, 'schedule.units.0: expected an object, found "x".'),
    ],
)
def test_malformed_schedules_are_rejected_naming_the_field(document: dict, message: str) -> None:
    for context, where in ((None, "plan.json"), (APPLIED, "optimization.plan plan.json")):
        with pytest.raises(PlanReadError) as caught:
            read_schedule(document, "plan.json", context)
        assert caught.value.message == f"{where} is not an optimization plan this release reads: {message}"


def test_records_round_trip() -> None:
    constant = const("w", 8, (1, 2), storage_id="w_packed", reason="pinned")
    assert ScheduleConstant.from_json(constant.to_json()) == constant
    assert read_schedule({"source": "plan", "pool": POOL.to_json()}).pool == POOL
    assert read_schedule(DOC_SCHEDULE).units[0].to_json() == DOC_SCHEDULE["units"][0]
    assert Unit(1, ("a",), 0, None, bytes=5).inputs() == Unit(1, ("a",), 0, None)
    assert OPS.position("0:op3") == 3 and OPS.position(None) is None and OPS.id_at(2) == "0:op2" and len(OPS) == 6


# ---------------------------------------------------------------------------------------------------------------------
# Report facts


def derived_example() -> Schedule:
    constants = [const("a", 100, (1,)), const("b", 60, (2,)), const("c", 8, (3,), alignment=8)]
    return derive(
        [unit(0, ("a",), 16), unit(1, ("b",), 208, "0:op1"), unit(2, ("c",), 0, "0:op2")],
        constants,
        OPS,
        POOL,
        ENGINES,
    )


def test_pool_layout_lists_each_units_span() -> None:
    assert pool_layout(derived_example()) == [PoolSpan(0, 16, 100), PoolSpan(1, 208, 60), PoolSpan(2, 0, 8)]
    assert PoolSpan(0, 16, 100).to_json() == {"unit": 0, "offset": 16, "bytes": 100}  # the report's span


def test_pieces_split_units_at_dma_boundaries_counted_from_the_pool_base() -> None:
    schedule = derived_example()  # source offsets: a 0, b 112, c 176
    assert pieces(schedule, 64) == [
        Piece(0, 16, 0, 48),
        Piece(0, 64, 48, 52),
        Piece(1, 208, 112, 48),
        Piece(1, 256, 160, 12),
        Piece(2, 0, 176, 8),
    ]
    assert pieces(schedule, None) == [Piece(0, 16, 0, 100), Piece(1, 208, 112, 60), Piece(2, 0, 176, 8)]
    assert pieces(schedule, 4096) == pieces(schedule, 0) == pieces(schedule, None)
    assert Piece(0, 16, 0, 48).to_json() == {"unit": 0, "offset": 16, "bytes": 48}  # the report's span


def test_report_facts_need_a_derived_schedule() -> None:
    with pytest.raises(ValueError, match="derive the schedule first"):
        pool_layout(plan(unit(0, ("a",))))


def test_tensor_placements_give_each_streamed_constant_its_unit_and_pool_offset() -> None:
    derived = derive([unit(3, ("a", "b"), 32)], CONSTANTS, OPS, POOL, ENGINES)
    assert tensor_placements(derived, CONSTANTS) == {"a": (0, 32), "b": (0, 96)}


def test_schedule_warnings_name_permitted_constants_left_direct() -> None:
    constants = [const("a"), const("b", readers=(2,)), const("c", reason="read at init"), const("d", permitted=False)]
    derived = derive([unit(0, ("a",))], constants, OPS, POOL, ENGINES)
    assert schedule_warnings(derived, constants) == [
        "constant 'b' may stream but no schedule unit names it; it stays direct",
        "constant 'c' may stream but cannot be staged (read at init); it stays direct",
    ]
