"""heliabuild.aot.records: typed plans and reports read by the document's rules, and the APPLIED context."""

from __future__ import annotations

import json
import os
import string
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_aot_records_schemas import plan_document, planner_input, report_document, unscheduled_plan

from heliabuild.aot.records import (
    APPLIED,
    APPLIED_UNKNOWN_HINT,
    AccumulationValue,
    Engine,
    Goal,
    HintKind,
    KernelChoice,
    KernelValue,
    KnobName,
    OptimizationPlan,
    OptimizationReport,
    PlanOperator,
    Residency,
    ResolvedBy,
    ScheduleSource,
    SetBy,
    load_plan,
    load_report,
    validate_plan_document,
)
from heliabuild.aot.schedule import Schedule, SchedulePool, Unit
from heliabuild.errors import HeliaError, PlanReadError

EXACT_HINT = (
    "The field comes from a later heliaAOT release or a planner written for one: convert with that release, "
    "or remove the field."
)


def write(folder: Path, document: Any, name: str = "kws_plan.json") -> Path:
    path = folder / name
    path.write_text(json.dumps(document, sort_keys=True, indent=2) + "\n", encoding="utf-8")
    return path


# ---------------------------------------------------------------------------------------------------------------------
# Typed records


def test_plan_reads_as_typed_records() -> None:
    plan = OptimizationPlan.from_json(plan_document(), "kws_plan.json")
    assert plan.origin == "kws_plan.json" and plan.context is None
    assert plan.optimization.goal is Goal.BALANCED
    conv, depthwise, hard_swish = plan.operators
    assert isinstance(conv, PlanOperator)
    kernel = conv.knob("kernel")
    assert kernel is not None and kernel.name is KnobName.KERNEL
    assert kernel.value is KernelValue.SPECIALIZED and kernel.requested is KernelValue.AUTO
    assert kernel.resolved_by is ResolvedBy.AUTO_TABLE and kernel.approximate is None
    accumulation = depthwise.knob("accumulation")
    assert accumulation is not None and accumulation.value is AccumulationValue.FAST and accumulation.approximate
    assert [choice.name for choice in depthwise.knobs] == ["accumulation", "kernel"]  # sorted by name
    rule = depthwise.knobs[1].source.rule
    assert rule is not None and (rule.position, rule.type, rule.id) == (0, "CONV_2D", None)
    assert conv.kernel.candidates == ("arm_convolve_1x1_s8_fast", "arm_convolve_s8")
    assert hard_swish.kernel == KernelChoice() and hard_swish.knob("kernel") is None
    use_lut = hard_swish.fixed_choice("use_lut")
    assert use_lut is not None and use_lut.value is True and use_lut.set_by is SetBy.DEFAULT
    assert [tensor.residency for tensor in plan.tensors] == ["stream", "direct", "pin", "stream"]
    assert plan.tensors[2].name == "dw/weights_packed" and plan.tensors[2].key == ("dw/weights", "dw/weights_packed")
    schedule = plan.schedule
    assert isinstance(schedule, Schedule) and schedule.source is ScheduleSource.PLAN
    assert schedule.pool == SchedulePool(memory="DTCM", bytes=65536, alignment=16)
    assert schedule.units[1] == Unit(
        id=1,
        tensors=("dw/bias",),
        pool_offset=1152,
        issue_after="0:conv2d_1/Relu",
        engine="cpu",
        bytes=40,
        source_memory="MRAM",
        source_offset=1520,
        wait_before=1,
        last_reader=1,
    )


@pytest.mark.parametrize("build", [plan_document, planner_input, unscheduled_plan])
def test_plan_round_trip_is_exact(build) -> None:
    document = build()
    plan = OptimizationPlan.from_json(document, "kws_plan.json")
    assert plan.to_json() == document
    text = json.dumps(plan.to_json(), sort_keys=True)
    assert text == json.dumps(document, sort_keys=True)  # enum members are written as plain strings


def test_planner_input_units_state_no_derived_fields() -> None:
    plan = OptimizationPlan.from_json(planner_input(), "input.json", APPLIED)
    assert plan.schedule is not None
    unit = plan.schedule.units[0]
    assert (unit.bytes, unit.source_memory, unit.source_offset, unit.wait_before, unit.last_reader) == (None,) * 5


def test_report_reads_and_round_trips() -> None:
    document = report_document()
    report = OptimizationReport.from_json(document, "kws_report.json")
    assert report.to_json() == document
    conv = report.operators[0]
    assert conv.macs == 320000 and conv.knobs[0].name is KnobName.KERNEL
    assert [item.value for item in conv.knobs[0].alternatives] == [KernelValue.SPECIALIZED, KernelValue.GENERIC]
    assert conv.constants[1].stageable is False and conv.constants[1].reason == "read at init"
    assert report.stream_pool is not None and report.stream_pool.layout[1].offset == 1152
    assert report.kernel_calls is not None and report.kernel_calls.unrecorded_operator_ids == ("0:hard_swish",)
    assert report.hints[0].kind is HintKind.KNOB and report.hints[0].facts["nested"] == {"anything": [1, 2.5, None]}
    assert report.fp16_overflow[0].path == ("RESHAPE", "PAD") and report.fp16_overflow[0].bias == -0.5


def test_report_without_kernel_calls_reads_as_none_and_stays_absent(tmp_path: Path) -> None:
    document = report_document()
    del document["kernel_calls"]
    report = load_report(write(tmp_path, document, "old_report.json"))
    assert report.kernel_calls is None
    assert report.to_json() == document
    document["kernel_calls"] = None
    assert OptimizationReport.from_json(document).to_json() == document


def test_load_plan_reads_a_file_and_names_it_as_given(tmp_path: Path) -> None:
    path = write(tmp_path, plan_document())
    assert load_plan(path) == OptimizationPlan.from_json(plan_document())
    assert load_plan(path).origin == str(path)


# ---------------------------------------------------------------------------------------------------------------------
# The reading rules of "Schema versions"


def test_unknown_fields_are_ignored() -> None:
    document = plan_document()
    document["annotations"] = {"by": "a tool"}
    document["operators"][0]["notes"] = "hot"
    document["operators"][0]["knobs"]["kernel"]["why"] = "because"
    document["operators"][0]["kernel"]["symbol_size"] = 12
    document["tensors"][0]["reader_count"] = 1
    document["platform"]["vendor"] = "Ambiq"
    document["schedule"]["planner"] = "mine"
    document["schedule"]["pool"]["base"] = 0
    document["schedule"]["units"][0]["pool"] = "DTCM"
    plan = OptimizationPlan.from_json(document, "annotated.json")
    assert plan == OptimizationPlan.from_json(plan_document())
    assert plan.to_json() == plan_document()


def test_unknown_knob_is_kept_as_the_string_written() -> None:
    document = plan_document()
    document["operators"][0]["knobs"]["tiling"] = {
        "value": "rows",
        "requested": "auto",
        "resolved_by": "auto_table",
        "approximate": None,
        "source": {"kind": "default", "rule": None},
    }
    plan = OptimizationPlan.from_json(document)
    tiling = plan.operators[0].knob("tiling")
    assert tiling is not None
    assert type(tiling.name) is str and tiling.name == "tiling"
    assert type(tiling.value) is str and tiling.value == "rows"
    assert tiling.requested == "auto" and type(tiling.requested) is str  # the knob is unknown, so is its enum
    assert plan.to_json() == document


def test_unknown_knob_value_is_kept_as_the_string_written() -> None:
    document = plan_document()
    document["operators"][0]["knobs"]["kernel"]["value"] = "tuned"
    document["operators"][0]["knobs"]["kernel"]["requested"] = "tuned"
    kernel = OptimizationPlan.from_json(document).operators[0].knob(KnobName.KERNEL)
    assert kernel is not None and type(kernel.value) is str and kernel.value == "tuned"
    assert OptimizationPlan.from_json(document).to_json() == document


@pytest.mark.parametrize(
    ("path", "member"),
    [
        (("optimization", "goal"), "energy"),
        (("operators", 0, "id_source"), "alias"),
        (("operators", 0, "knobs", "kernel", "resolved_by"), "auto_model"),
        (("operators", 0, "knobs", "kernel", "source", "kind"), "profile"),
        (("operators", 0, "kernel", "requantization"), "lshift"),
        (("operators", 2, "fixed", "use_lut", "set_by"), "profile"),
        (("tensors", 1, "requested"), "copy"),
        (("tensors", 1, "residency"), "flash"),
        (("schedule", "source"), "search"),
        (("schedule", "units", 0, "engine"), "npu"),
    ],
    ids=lambda value: ".".join(map(str, value)) if isinstance(value, tuple) else value,
)
def test_unknown_enum_member_is_kept_as_the_string_written(path: tuple[Any, ...], member: str) -> None:
    document = plan_document()
    node: Any = document
    for part in path[:-1]:
        node = node[part]
    node[path[-1]] = member
    plan = OptimizationPlan.from_json(document, context=APPLIED)  # an unknown member is no unknown field
    node = plan
    for part in path:
        if isinstance(part, int):
            node = node[part]
        elif isinstance(node, tuple):  # a named tuple of knobs or fixed choices
            node = next(item for item in node if item.name == part)
        else:
            node = getattr(node, part)
    assert type(node) is str and node == member
    assert plan.to_json() == document


def test_unknown_report_members_are_kept() -> None:
    document = report_document()
    document["hints"][0]["kind"] = "memory"
    document["operators"][0]["knobs"]["kernel"][0]["value"] = "tuned"
    document["operators"][0]["knobs"]["tiling"] = [{"value": "rows", "applies": False, "reason": "no"}]
    report = OptimizationReport.from_json(document)
    assert type(report.hints[0].kind) is str and report.hints[0].kind == "memory"
    assert type(report.operators[0].knobs[0].alternatives[0].value) is str
    assert report.operators[0].knobs[1].name == "tiling"
    assert report.to_json() == document


@pytest.mark.parametrize("version", [2, 0, "1", True, None])
def test_another_schema_version_is_rejected_naming_the_file_and_both_versions(tmp_path: Path, version: Any) -> None:
    document = plan_document()
    document["schema_version"] = version
    path = write(tmp_path, document)
    with pytest.raises(PlanReadError) as caught:
        load_plan(path)
    shown = json.dumps(version)
    assert caught.value.message == (
        f"{path} is not an optimization plan this release reads: schema_version: the file has schema_version "
        f"{shown}; this release reads schema_version 1."
    )
    assert caught.value.hint is not None and "release that wrote it" in caught.value.hint


def test_report_of_another_schema_version_is_rejected() -> None:
    document = report_document()
    document["schema_version"] = 2
    with pytest.raises(PlanReadError, match=r"^new_report\.json is not an optimization report .* schema_version 2;"):
        OptimizationReport.from_json(document, "new_report.json")


def test_missing_schema_version_is_rejected() -> None:
    document = plan_document()
    del document["schema_version"]
    with pytest.raises(PlanReadError, match="missing field 'schema_version'"):
        OptimizationPlan.from_json(document, "kws_plan.json")


def test_core_reads_as_cpu() -> None:
    document = plan_document()
    document["platform"]["core"] = document["platform"].pop("cpu")
    plan = OptimizationPlan.from_json(document, "old_plan.json")
    assert plan.platform.cpu == "cortex-m55"
    assert plan.to_json() == plan_document()  # written back as cpu
    report = report_document()
    report["platform"]["core"] = report["platform"].pop("cpu")
    assert OptimizationReport.from_json(report).platform.cpu == "cortex-m55"  # type: ignore[union-attr]


def test_cpu_wins_over_core() -> None:
    document = plan_document()
    document["platform"]["core"] = "cortex-m4"
    assert OptimizationPlan.from_json(document).platform.cpu == "cortex-m55"


def test_older_plan_without_optional_fields_round_trips_absent() -> None:
    """Plans of older releases lack kernel.provider, candidates and local_scratch_bytes, tensors and schedule."""
    document = plan_document()
    for operator in document["operators"]:
        for key in ("provider", "candidates", "local_scratch_bytes"):
            del operator["kernel"][key]
    del document["generator"]["heliabuild"]
    del document["tensors"]
    del document["schedule"]
    plan = OptimizationPlan.from_json(document, "old_plan.json")
    assert plan.operators[0].kernel.provider is None and plan.tensors == () and plan.schedule is None
    assert plan.generator.heliabuild is None
    assert plan.to_json() == document


def test_a_changed_record_writes_its_new_value_even_if_the_file_left_the_field_out() -> None:
    from dataclasses import replace

    document = plan_document()
    del document["operators"][0]["kernel"]["provider"]
    operator = OptimizationPlan.from_json(document).operators[0]
    changed = replace(operator.kernel, provider="p/2")
    assert changed.to_json()["provider"] == "p/2"


WRONG_TYPES: dict[str, tuple[Callable[[dict[str, Any]], object], str]] = {
    "knob-value": (
        lambda d: d["operators"][0]["knobs"]["kernel"].update(value=3),
        "operators.0.knobs.kernel.value: expected a string, found 3.",
    ),
    "index": (lambda d: d["operators"][1].update(index="1"), 'operators.1.index: expected an integer, found "1".'),
    "bytes-bool": (lambda d: d["tensors"][0].update(bytes=True), "tensors.0.bytes: expected an integer, found true."),
    "node_id-missing": (lambda d: d["operators"][0].pop("node_id"), "operators.0: missing field 'node_id'."),
    "operators-object": (lambda d: d.update(operators={}), "operators: expected an array, found {}."),
    "engine-missing": (
        lambda d: d["schedule"]["units"][0].pop("engine"),
        "schedule.units.0: missing field 'engine'.",
    ),
    "tensor-name": (
        lambda d: d["schedule"]["units"][0].update(tensors=["a", 1]),
        "schedule.units.0.tensors.1: expected a string, found 1.",
    ),
    "pool": (lambda d: d["schedule"].update(pool=[]), "schedule.pool: expected an object, found []."),
}


@pytest.mark.parametrize(("edit", "message"), WRONG_TYPES.values(), ids=WRONG_TYPES.keys())
def test_a_known_field_of_the_wrong_type_is_rejected_naming_it(edit, message: str) -> None:
    document = plan_document()
    edit(document)
    with pytest.raises(PlanReadError) as caught:
        OptimizationPlan.from_json(document, "kws_plan.json")
    assert caught.value.message == f"kws_plan.json is not an optimization plan this release reads: {message}"
    assert isinstance(caught.value, HeliaError)


def test_unreadable_files_are_read_errors(tmp_path: Path) -> None:
    with pytest.raises(PlanReadError, match=r"missing\.json is not an optimization plan .*: cannot read the file"):
        load_plan(tmp_path / "missing.json")
    broken = tmp_path / "broken.json"
    broken.write_text("{", encoding="utf-8")
    with pytest.raises(PlanReadError, match=r"the file is not valid JSON: .*line 1"):
        load_plan(broken)
    with pytest.raises(PlanReadError, match="expected a JSON object, found"):
        OptimizationPlan.from_json([], "list.json")
    with pytest.raises(PlanReadError, match=r"^optimization\.plan .*missing\.json is not"):
        load_plan(tmp_path / "missing.json", APPLIED)


# ---------------------------------------------------------------------------------------------------------------------
# APPLIED: the schedule of a plan read as input is read strictly


@pytest.mark.parametrize(
    ("place", "where", "name"),
    [
        (lambda d: d["schedule"], "schedule", "deadline"),
        (lambda d: d["schedule"]["pool"], "schedule.pool", "base"),
        (lambda d: d["schedule"]["units"][0], "schedule.units.0", "pool"),
        (lambda d: d["schedule"]["units"][1], "schedule.units.1", "pool"),
    ],
    ids=["schedule", "pool", "unit-0", "unit-1"],
)
def test_applied_rejects_an_unknown_field_under_schedule(tmp_path: Path, place, where: str, name: str) -> None:
    document = planner_input()
    place(document)[name] = "DTCM"
    path = write(tmp_path, document)
    given_path = os.path.relpath(path)  # named as given, not resolved
    with pytest.raises(PlanReadError) as caught:
        load_plan(given_path, APPLIED)
    assert caught.value.message == (
        f"optimization.plan {given_path} is not an optimization plan this release reads: {where}: unknown field(s) "
        f"['{name}'] under schedule, which this release would have to apply."
    )
    assert caught.value.hint == EXACT_HINT == APPLIED_UNKNOWN_HINT
    OptimizationPlan.from_json(document, given_path)  # without APPLIED the field is ignored


def test_applied_lists_every_unknown_field_of_the_object_sorted() -> None:
    document = plan_document()
    document["schedule"]["units"][0].update(priority=1, channel=2)
    with pytest.raises(PlanReadError) as caught:
        OptimizationPlan.from_json(document, "plans/kws_plan.json", APPLIED)
    assert caught.value.message == (
        "optimization.plan plans/kws_plan.json is not an optimization plan this release reads: schedule.units.0: "
        "unknown field(s) ['channel', 'priority'] under schedule, which this release would have to apply."
    )


def test_the_documents_example_message() -> None:
    document = plan_document()
    document["schedule"]["units"][0]["pool"] = {"memory": "DTCM"}
    with pytest.raises(PlanReadError) as caught:
        OptimizationPlan.from_json(document, "<path>", APPLIED)
    assert caught.value.message == (
        "optimization.plan <path> is not an optimization plan this release reads: schedule.units.0: unknown "
        "field(s) ['pool'] under schedule, which this release would have to apply."
    )
    assert caught.value.hint == EXACT_HINT


def test_applied_accepts_unknown_fields_outside_schedule() -> None:
    document = plan_document()
    document["annotations"] = {"by": "a tool"}
    document["generator"]["tool"] = "x"
    document["operators"][1]["notes"] = "hot"
    document["operators"][1]["knobs"]["kernel"]["source"]["note"] = "x"
    document["tensors"][0]["hot"] = True
    document["optimization"]["budget"] = 3
    plan = OptimizationPlan.from_json(document, "annotated.json", APPLIED)
    assert plan.context is APPLIED
    assert plan == OptimizationPlan.from_json(plan_document())


def test_applied_accepts_every_known_schedule_field() -> None:
    plan = OptimizationPlan.from_json(plan_document(), "kws_plan.json", APPLIED)
    assert plan.to_json() == plan_document()


# ---------------------------------------------------------------------------------------------------------------------
# Property: to_json(from_json(document)) == document for every valid plan heliabuild could write

NAMES = st.text(alphabet=string.ascii_letters + string.digits + "_/:.", min_size=1, max_size=10)
MEMORIES = st.sampled_from(["MRAM", "DTCM", "SRAM", "PSRAM", "DDR"])
COUNTS = st.integers(min_value=0, max_value=1 << 20)


@st.composite
def knob_choices(draw: st.DrawFn, values: tuple[str, ...], approximate: bool) -> dict[str, Any]:
    value = draw(st.sampled_from(values))
    requested = draw(st.sampled_from(("auto", value)))
    if draw(st.booleans()):
        source: dict[str, Any] = {
            "kind": "operator",
            "rule": {
                "position": draw(st.integers(0, 9)),
                "type": draw(st.none() | st.just("CONV_2D")),
                "id": draw(st.none() | NAMES),
            },
        }
    else:
        source = {"kind": draw(st.sampled_from(("model", "default"))), "rule": None}
    return {
        "value": value,
        "requested": requested,
        "resolved_by": "auto_table" if requested == "auto" else "explicit",
        "approximate": (value == "fast") if approximate else None,
        "source": source,
    }


SET_BY = st.sampled_from(("attribute", "default", "heuristic", "knob", "placement"))
OPERATORS = st.fixed_dictionaries(
    {
        "id": NAMES,
        "id_source": st.sampled_from(("output_name", "op_type_position", "node_id")),
        "node_id": NAMES,
        "op_type": st.sampled_from(("CONV_2D", "DEPTHWISE_CONV_2D", "FULLY_CONNECTED", "RSQRT", "ADD")),
        "knobs": st.fixed_dictionaries(
            {},
            optional={
                "kernel": knob_choices(("specialized", "generic"), False),
                "accumulation": knob_choices(("precise", "fast"), True),
            },
        ),
        "kernel": st.fixed_dictionaries(
            {
                "entry": st.none() | NAMES,
                "provider": st.none() | NAMES,
                "candidates": st.none() | st.lists(NAMES, max_size=3),
                "requantization": st.sampled_from((None, "rshift_only", "general")),
                "local_scratch_bytes": st.none() | COUNTS,
            }
        ),
        "fixed": st.fixed_dictionaries(
            {},
            optional={
                "lut_mode": st.fixed_dictionaries({"value": NAMES, "set_by": SET_BY}),
                "use_lut": st.fixed_dictionaries({"value": st.booleans(), "set_by": SET_BY}),
                "compat_variant": st.fixed_dictionaries({"value": st.booleans(), "set_by": SET_BY}),
                "weight_layout": st.fixed_dictionaries({"value": NAMES, "set_by": SET_BY}),
            },
        ),
    }
)


@st.composite
def tensors(draw: st.DrawFn) -> dict[str, Any]:
    residency = draw(st.sampled_from(("direct", "pin", "stream")))
    streamed = residency == "stream"
    return {
        "id": draw(NAMES),
        "storage_id": draw(st.none() | NAMES),
        "requested": draw(st.sampled_from((None, "direct", "pin", "stream"))),
        "residency": residency,
        "memory": draw(st.none() | MEMORIES),
        "destination_memory": draw(MEMORIES) if residency == "pin" else None,
        "bytes": draw(COUNTS),
        "alignment": draw(st.sampled_from((1, 4, 16, 32))),
        "unit": draw(st.integers(0, 9)) if streamed else None,
        "pool_offset": draw(COUNTS) if streamed else None,
    }


@st.composite
def units(draw: st.DrawFn, position: int) -> dict[str, Any]:
    unit = {
        "id": position,
        "tensors": draw(st.lists(NAMES, min_size=1, max_size=3)),
        "pool_offset": draw(COUNTS),
        "issue_after": draw(st.none() | NAMES),
        "engine": draw(st.sampled_from(("cpu", "dma"))),
    }
    if draw(st.booleans()):  # derived fields stated
        unit.update(
            bytes=draw(COUNTS),
            source_memory=draw(MEMORIES),
            source_offset=draw(COUNTS),
            wait_before=draw(st.integers(0, 9)),
            last_reader=draw(st.integers(0, 9)),
        )
    return unit


@st.composite
def schedules(draw: st.DrawFn) -> dict[str, Any]:
    count = draw(st.integers(0, 3))
    schedule: dict[str, Any] = {
        "source": "plan" if count else "none",
        "units": [draw(units(position)) for position in range(count)],
    }
    if count or draw(st.booleans()):
        schedule["pool"] = {
            "memory": draw(MEMORIES),
            "bytes": draw(COUNTS),
            "alignment": draw(st.sampled_from((1, 16, 32))),
        }
    return schedule


@st.composite
def plans(draw: st.DrawFn) -> dict[str, Any]:
    capabilities = sorted(draw(st.sets(st.sampled_from(("DSP", "FP16", "MCU", "MVE", "NPU")))))
    operators = draw(st.lists(OPERATORS, max_size=4))
    for position, operator in enumerate(operators):
        operator["index"] = position
    return {
        "schema_version": 1,
        "generator": {
            "helia_aot": draw(st.none() | st.just("1.4.0")),
            "cmsis_nn_required": draw(st.none() | st.just("7.1.0")),
            "heliabuild": "0.1.0",
        },
        "model": {
            "file": draw(NAMES),
            "sha256": draw(st.none() | st.text(alphabet="0123456789abcdef", min_size=64, max_size=64)),
            "subgraph": draw(st.integers(0, 3)),
        },
        "module_prefix": draw(st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,8}", fullmatch=True)),
        "platform": {
            "name": draw(st.sampled_from(("apollo510_evb", "corstone300_ethos_u55"))),
            "cpu": "cortex-m55",
            "capabilities": capabilities,
            "supports_fp16": "FP16" in capabilities,
        },
        "optimization": {
            "goal": draw(st.sampled_from(("latency", "balanced", "size", "accuracy"))),
            "allow_approximate": draw(st.booleans()),
            "knobs": {},
        },
        "operators": operators,
        "tensors": draw(st.lists(tensors(), max_size=4)),
        "schedule": draw(schedules()),
    }


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(plans())
def test_round_trip_of_generated_valid_plans_is_exact(document: dict[str, Any]) -> None:
    validate_plan_document(document, "generated.json")
    plan = OptimizationPlan.from_json(document, "generated.json", APPLIED)
    assert plan.to_json() == document
    assert json.dumps(plan.to_json(), sort_keys=True) == json.dumps(document, sort_keys=True)
    assert OptimizationPlan.from_json(plan.to_json()) == plan


def test_enum_members_are_plain_strings_in_written_json() -> None:
    plan = OptimizationPlan.from_json(plan_document())
    written = plan.to_json()
    assert type(written["optimization"]["goal"]) is str
    assert type(written["schedule"]["units"][0]["engine"]) is str
    assert type(written["operators"][0]["knobs"]["kernel"]["value"]) is str
    assert Residency.STREAM == "stream" and Engine.CPU == "cpu"
