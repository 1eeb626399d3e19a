"""heliabuild.aot.replay: a plan read as input is compared with the conversion by the document's rules."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from test_aot_records_schemas import OTHER_SHA, SHA, plan_document, planner_input

from heliabuild.aot.records import APPLIED, OptimizationPlan
from heliabuild.aot.replay import MISMATCH_HINT, compare_plan, read_input_plan, replay_schedule
from heliabuild.aot.schedule import Schedule, SchedulePool, Unit
from heliabuild.errors import PlanMismatchError, PlanReadError

Edit = Callable[[dict[str, Any]], object]
PREFIX = "optimization.plan plans/kws_plan.json does not describe this conversion: "


def compare(plan_edit: Edit | None = None, conversion_edit: Edit | None = None) -> None:
    """Compare the heliabuild plan, edited by `plan_edit`, with the conversion's plan, edited by `conversion_edit`."""
    plan, conversion = plan_document(), plan_document()
    if plan_edit is not None:
        plan_edit(plan)
    if conversion_edit is not None:
        conversion_edit(conversion)
    compare_plan(OptimizationPlan.from_json(plan, "plans/kws_plan.json", APPLIED), conversion)


def mismatch(plan_edit: Edit | None = None, conversion_edit: Edit | None = None) -> PlanMismatchError:
    with pytest.raises(PlanMismatchError) as caught:
        compare(plan_edit, conversion_edit)
    assert caught.value.message.startswith(PREFIX)
    assert caught.value.hint == MISMATCH_HINT
    return caught.value


def tensor(document: dict[str, Any], position: int) -> dict[str, Any]:
    return document["tensors"][position]


def test_the_plan_that_describes_the_conversion_passes() -> None:
    compare()
    compare_plan(plan_document(), plan_document())  # documents are accepted too


def test_a_plan_read_from_a_file_is_named_as_given(tmp_path: Path) -> None:
    path = tmp_path / "kws_plan.json"
    document = plan_document()
    document["model"]["sha256"] = OTHER_SHA
    path.write_text(json.dumps(document), encoding="utf-8")
    plan = read_input_plan(path)
    assert plan.context is APPLIED
    with pytest.raises(PlanMismatchError) as caught:
        compare_plan(plan, plan_document())
    assert caught.value.message.startswith(f"optimization.plan {path} does not describe this conversion: ")


# ---------------------------------------------------------------------------------------------------------------------
# model and platform


def test_model_sha256_must_match() -> None:
    error = mismatch(lambda d: d["model"].update(sha256=OTHER_SHA))
    assert error.message == PREFIX + f'model.sha256 is "{OTHER_SHA}" in the plan but "{SHA}" in the conversion.'
    assert (error.field, error.plan_value, error.conversion_value) == ("model.sha256", OTHER_SHA, SHA)


def test_a_plan_whose_sha256_is_null_is_rejected() -> None:
    error = mismatch(lambda d: d["model"].update(sha256=None))
    assert error.message == (
        PREFIX + f'model.sha256 is null in the plan, so the plan names no model (the conversion\'s model has "{SHA}").'
    )
    assert (error.field, error.plan_value, error.conversion_value) == ("model.sha256", None, SHA)


def test_model_subgraph_must_match() -> None:
    error = mismatch(lambda d: d["model"].update(subgraph=1))
    assert error.message == PREFIX + "model.subgraph is 1 in the plan but 0 in the conversion."


def test_platform_name_must_match() -> None:
    error = mismatch(lambda d: d["platform"].update(name="corstone300_ethos_u55"))
    assert error.message == (
        PREFIX + 'platform.name is "corstone300_ethos_u55" in the plan but "apollo510_evb" in the conversion.'
    )


# ---------------------------------------------------------------------------------------------------------------------
# operators, by position


def test_operator_node_id_must_match() -> None:
    error = mismatch(lambda d: d["operators"][1].update(node_id="0/7"))
    assert error.message == PREFIX + 'operators.1.node_id is "0/7" in the plan but "0/1" in the conversion.'
    assert error.field == "operators.1.node_id"


def test_operator_op_type_must_match() -> None:
    error = mismatch(lambda d: d["operators"][2].update(op_type="RELU"))
    assert error.message == PREFIX + 'operators.2.op_type is "RELU" in the plan but "HARD_SWISH" in the conversion.'


def test_operators_are_compared_by_position() -> None:
    error = mismatch(lambda d: d["operators"].reverse())
    assert error.field == "operators.0.node_id"


def test_operator_count_must_match() -> None:
    error = mismatch(lambda d: d["operators"].pop())
    assert error.message == PREFIX + "the plan lists 2 operators but the conversion has 3."
    assert (error.field, error.plan_value, error.conversion_value) == ("operators", 2, 3)


def test_knob_value_must_match() -> None:
    error = mismatch(lambda d: d["operators"][0]["knobs"]["kernel"].update(value="generic"))
    assert error.message == (
        PREFIX + 'operators.0.knobs.kernel.value is "generic" in the plan but "specialized" in the conversion.'
    )
    assert (error.plan_value, error.conversion_value) == ("generic", "specialized")


def test_an_unknown_knob_value_is_compared_as_written() -> None:
    error = mismatch(lambda d: d["operators"][1]["knobs"]["accumulation"].update(value="tuned"))
    assert error.field == "operators.1.knobs.accumulation.value"


def test_knobs_are_compared_in_name_order() -> None:
    def both(document: dict[str, Any]) -> None:
        document["operators"][1]["knobs"]["kernel"]["value"] = "specialized"
        document["operators"][1]["knobs"]["accumulation"]["value"] = "precise"

    assert mismatch(both).field == "operators.1.knobs.accumulation.value"


def test_a_knob_only_one_side_names_is_not_compared() -> None:
    compare(lambda d: d["operators"][0]["knobs"].update(tiling=dict(d["operators"][0]["knobs"]["kernel"])))
    compare(lambda d: d["operators"][1]["knobs"].pop("accumulation"))
    compare(conversion_edit=lambda d: d["operators"][1]["knobs"].pop("kernel"))


def test_fixed_choice_value_must_match() -> None:
    error = mismatch(lambda d: d["operators"][2]["fixed"]["use_lut"].update(value=False))
    assert error.message == PREFIX + "operators.2.fixed.use_lut.value is false in the plan but true in the conversion."


def test_a_fixed_choice_only_one_side_names_is_not_compared() -> None:
    compare(lambda d: d["operators"][2]["fixed"].pop("use_lut"))
    compare(conversion_edit=lambda d: d["operators"][0]["fixed"].update(lut_mode={"value": "x", "set_by": "default"}))


def test_fixed_values_compare_as_json_so_true_is_not_one() -> None:
    error = mismatch(lambda d: d["operators"][2]["fixed"]["use_lut"].update(value=1))
    assert (error.plan_value, error.conversion_value) == (1, True)


def test_only_the_value_of_a_knob_or_fixed_choice_is_compared() -> None:
    def edit(document: dict[str, Any]) -> None:
        choice = document["operators"][0]["knobs"]["kernel"]
        choice.update(requested="specialized", resolved_by="explicit")
        choice["source"] = {"kind": "operator", "rule": {"position": 4, "type": None, "id": "0:conv2d_1/Relu"}}
        document["operators"][2]["fixed"]["use_lut"]["set_by"] = "attribute"

    compare(edit)


# ---------------------------------------------------------------------------------------------------------------------
# tensors, by (id, storage_id)


def test_tensors_are_compared_by_key_not_position() -> None:
    compare(lambda d: d["tensors"].reverse())


def test_tensors_are_not_compared_when_the_plan_lists_none() -> None:
    compare(lambda d: d.update(tensors=[]))
    compare(lambda d: d.pop("tensors"))


def test_an_entry_listed_twice_is_rejected() -> None:
    error = mismatch(lambda d: d["tensors"].append(dict(d["tensors"][1])))
    assert error.message == (
        PREFIX + "tensors.4 lists constant 'conv2d_1/bias' a second time in the plan (first at tensors.1)."
    )
    assert error.field == "tensors.4"


def test_an_entry_listed_twice_is_rejected_before_other_differences() -> None:
    def edit(document: dict[str, Any]) -> None:
        document["tensors"][0]["bytes"] = 1
        document["tensors"].append(dict(document["tensors"][2]))

    assert mismatch(edit).field == "tensors.4"


def test_a_constant_only_in_the_plan_is_rejected() -> None:
    error = mismatch(conversion_edit=lambda d: d["tensors"].pop(1))
    assert error.message == (
        PREFIX + "tensors.1 is constant 'conv2d_1/bias' in the plan, which is not a constant of the conversion."
    )
    assert (error.field, error.plan_value, error.conversion_value) == ("tensors.1", ["conv2d_1/bias", None], None)


def test_a_constant_only_in_the_conversion_is_rejected() -> None:
    error = mismatch(lambda d: d["tensors"].pop(2))
    assert error.message == (
        PREFIX + "the conversion's constant 'dw/weights' (storage_id 'dw/weights_packed') is not in the plan's tensors."
    )
    assert (error.field, error.plan_value, error.conversion_value) == (
        "tensors",
        None,
        ["dw/weights", "dw/weights_packed"],
    )


def test_storage_id_is_part_of_the_key() -> None:
    error = mismatch(lambda d: tensor(d, 2).update(storage_id="dw/other"))
    assert error.field == "tensors.2"
    assert "constant 'dw/weights' (storage_id 'dw/other')" in error.message


def test_requested_must_match() -> None:
    error = mismatch(lambda d: tensor(d, 2).update(requested="direct"))
    assert error.message == PREFIX + 'tensors.2.requested is "direct" in the plan but "pin" in the conversion.'


def test_a_null_requested_is_a_value() -> None:
    error = mismatch(lambda d: tensor(d, 0).update(requested=None))
    assert error.message == PREFIX + 'tensors.0.requested is null in the plan but "stream" in the conversion.'
    error = mismatch(lambda d: tensor(d, 1).update(requested="direct"))
    assert (error.field, error.plan_value, error.conversion_value) == ("tensors.1.requested", "direct", None)


def test_residency_must_match() -> None:
    error = mismatch(lambda d: tensor(d, 1).update(residency="pin", destination_memory="DTCM"))
    assert error.message == PREFIX + 'tensors.1.residency is "pin" in the plan but "direct" in the conversion.'


def test_direct_and_stream_both_match_where_the_rules_permit_stream() -> None:
    # the plan streams what the conversion left direct, and the other way round: the schedule decides
    compare(lambda d: tensor(d, 0).update(residency="direct", unit=None, pool_offset=None))
    compare(conversion_edit=lambda d: tensor(d, 3).update(residency="direct", unit=None, pool_offset=None))


def test_direct_and_stream_differ_where_the_rules_do_not_permit_stream() -> None:
    error = mismatch(lambda d: tensor(d, 1).update(residency="stream", unit=0, pool_offset=0))
    assert error.field == "tensors.1.residency"
    error = mismatch(
        lambda d: tensor(d, 0).update(requested="direct", residency="stream"),
        lambda d: tensor(d, 0).update(requested="direct", residency="direct"),
    )
    assert error.field == "tensors.0.residency"


def test_pin_never_matches_stream_even_where_stream_is_permitted() -> None:
    error = mismatch(lambda d: tensor(d, 0).update(residency="pin", destination_memory="DTCM"))
    assert error.field == "tensors.0.residency"


def test_memory_must_match_in_any_letter_case() -> None:
    compare(lambda d: tensor(d, 0).update(memory="mram"))
    compare(conversion_edit=lambda d: tensor(d, 0).update(memory="Mram"))
    error = mismatch(lambda d: tensor(d, 1).update(memory="psram"))
    assert error.message == PREFIX + 'tensors.1.memory is "psram" in the plan but "MRAM" in the conversion.'


def test_a_null_memory_in_the_plan_is_not_compared() -> None:
    compare(lambda d: tensor(d, 0).update(memory=None))


def test_a_null_memory_in_the_conversion_is_compared() -> None:
    error = mismatch(conversion_edit=lambda d: tensor(d, 0).update(memory=None))
    assert error.message == PREFIX + 'tensors.0.memory is "MRAM" in the plan but null in the conversion.'


def test_destination_memory_must_match_in_any_letter_case() -> None:
    compare(lambda d: tensor(d, 2).update(destination_memory="dtcm"))
    error = mismatch(lambda d: tensor(d, 2).update(destination_memory="SRAM"))
    assert error.message == (
        PREFIX + 'tensors.2.destination_memory is "SRAM" in the plan but "DTCM" in the conversion.'
    )


def test_a_null_destination_memory_is_a_value() -> None:
    error = mismatch(lambda d: tensor(d, 2).update(destination_memory=None))
    assert error.message == PREFIX + 'tensors.2.destination_memory is null in the plan but "DTCM" in the conversion.'
    error = mismatch(lambda d: tensor(d, 1).update(destination_memory="DTCM"))
    assert (error.plan_value, error.conversion_value) == ("DTCM", None)


def test_bytes_must_match() -> None:
    error = mismatch(lambda d: tensor(d, 3).update(bytes=48))
    assert error.message == PREFIX + "tensors.3.bytes is 48 in the plan but 40 in the conversion."


def test_alignment_must_match() -> None:
    error = mismatch(lambda d: tensor(d, 3).update(alignment=32))
    assert error.message == PREFIX + "tensors.3.alignment is 32 in the plan but 16 in the conversion."


def test_the_first_differing_field_is_named() -> None:
    def edit(document: dict[str, Any]) -> None:
        document["tensors"][3]["alignment"] = 32
        document["tensors"][2]["bytes"] = 1
        document["operators"][2]["op_type"] = "RELU"

    assert mismatch(edit).field == "operators.2.op_type"
    assert mismatch(lambda d: edit(d) or d["operators"][2].update(op_type="HARD_SWISH")).field == "tensors.2.bytes"


# ---------------------------------------------------------------------------------------------------------------------
# what is not compared


def test_fields_the_document_does_not_compare_are_ignored() -> None:
    def edit(document: dict[str, Any]) -> None:
        document["generator"] = {"helia_aot": "1.4.0", "cmsis_nn_required": "7.1.0"}
        document["module_prefix"] = "other"
        document["optimization"] = {"goal": "size", "allow_approximate": True, "knobs": {"x": 1}}
        document["model"]["file"] = "renamed.tflite"
        document["platform"].update(cpu="cortex-m4", capabilities=["DSP"], supports_fp16=False)
        for position, operator in enumerate(document["operators"]):
            operator.update(id=f"0:renamed_{position}", id_source="node_id", index=position + 10)
            operator["kernel"] = {"entry": "arm_other", "provider": "p", "candidates": [], "requantization": "lshift"}
            operator["annotation"] = "a tool's note"
        document["tensors"][0].update(unit=7, pool_offset=4096)
        document["tensors"][1]["note"] = "hot"
        document["annotations"] = {"by": "a tool"}
        document["schedule"] = {"source": "none", "units": []}

    compare(edit)


def test_a_plan_written_by_heliabuild_reads_back_after_only_its_schedule_is_edited() -> None:
    def edit(document: dict[str, Any]) -> None:
        document["schedule"]["units"][1].update(pool_offset=2048, issue_after=None)
        for unit in document["schedule"]["units"]:
            del unit["source_offset"]

    compare(edit)


# ---------------------------------------------------------------------------------------------------------------------
# replay_schedule


def test_replay_schedule_hands_over_the_plans_schedule(tmp_path: Path) -> None:
    path = tmp_path / "input.json"
    path.write_text(json.dumps(planner_input()), encoding="utf-8")
    schedule = replay_schedule(read_input_plan(path))
    assert schedule == Schedule(
        source="plan",
        pool=SchedulePool(memory="DTCM", bytes=65536, alignment=16),
        units=(
            Unit(id=0, tensors=("conv2d_1/weights",), pool_offset=0, issue_after=None, engine="cpu"),
            Unit(id=1, tensors=("dw/bias",), pool_offset=1152, issue_after="0:conv2d_1/Relu", engine="cpu"),
        ),
    )


def test_replay_schedule_keeps_the_derived_fields_the_plan_states() -> None:
    schedule = replay_schedule(OptimizationPlan.from_json(plan_document(), "kws_plan.json", APPLIED))
    assert schedule is not None
    assert [(u.bytes, u.source_memory, u.source_offset, u.wait_before, u.last_reader) for u in schedule.units] == [
        (1152, "MRAM", 0, 0, 0),
        (40, "MRAM", 1520, 1, 1),
    ]


def test_replay_schedule_of_a_plan_without_schedule_is_none() -> None:
    document = plan_document()
    del document["schedule"]
    assert replay_schedule(OptimizationPlan.from_json(document, "old.json", APPLIED)) is None


def test_replay_schedule_needs_a_plan_read_under_applied() -> None:
    with pytest.raises(ValueError, match="not read under APPLIED"):
        replay_schedule(OptimizationPlan.from_json(plan_document(), "kws_plan.json"))


def test_read_input_plan_rejects_an_unknown_schedule_field(tmp_path: Path) -> None:
    document = planner_input()
    document["schedule"]["units"][0]["pool"] = "DTCM"
    path = tmp_path / "input.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    with pytest.raises(PlanReadError, match=r"schedule\.units\.0: unknown field\(s\) \['pool'\] under schedule"):
        read_input_plan(path)
