"""schemas/plan-schema.json and schemas/report-schema.json: hand-written documents in the shape heliabuild writes
validate, and every field, knob value and enum member outside that shape is rejected.

The document builders here (`plan_document`, `report_document`, `planner_input`) are shared with the other
test_aot_records* and test_aot_replay* modules.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from typing import Any

import jsonschema
import pytest

from heliabuild.aot.records import (
    PLAN_SCHEMA_FILE,
    REPORT_SCHEMA_FILE,
    load_json_schema,
    validate_plan_document,
    validate_report_document,
)
from heliabuild.errors import SchemaError

SHA = "0123456789abcdef" * 4
OTHER_SHA = "fedcba9876543210" * 4


def knob(value: str, requested: str = "auto", *, approximate: bool | None = None, rule: Any = None) -> dict[str, Any]:
    """A knob choice as heliabuild writes it; `rule` (a position) makes the source an `operators` rule."""
    if rule is None:
        source: dict[str, Any] = {"kind": "default", "rule": None}
    else:
        source = {"kind": "operator", "rule": {"position": rule, "type": "CONV_2D", "id": None}}
    return {
        "value": value,
        "requested": requested,
        "resolved_by": "auto_table" if requested == "auto" else "explicit",
        "approximate": approximate,
        "source": source,
    }


def plan_document() -> dict[str, Any]:
    """A heliabuild plan: three operators (knobs, fixed choices), a direct, a pinned and two streamed constants, a
    schedule with a pool and two units carrying their derived fields."""
    return copy.deepcopy(
        {
            "schema_version": 1,
            "generator": {"helia_aot": None, "cmsis_nn_required": None, "heliabuild": "0.1.0"},
            "model": {"file": "kws_fenced_vela.tflite", "sha256": SHA, "subgraph": 0},
            "module_prefix": "kws",
            "platform": {
                "name": "apollo510_evb",
                "cpu": "cortex-m55",
                "capabilities": ["DSP", "FP16", "MCU", "MVE"],
                "supports_fp16": True,
            },
            "optimization": {"goal": "balanced", "allow_approximate": False, "knobs": {}},
            "operators": [
                {
                    "id": "0:conv2d_1/Relu",
                    "id_source": "output_name",
                    "index": 0,
                    "node_id": "0/0",
                    "op_type": "CONV_2D",
                    "knobs": {"kernel": knob("specialized")},
                    "kernel": {
                        "entry": "arm_convolve_s8",
                        "provider": "heliabuild.cmsis_nn.conv/1",
                        "candidates": ["arm_convolve_1x1_s8_fast", "arm_convolve_s8"],
                        "requantization": "general",
                        "local_scratch_bytes": None,
                    },
                    "fixed": {},
                },
                {
                    "id": "0:DEPTHWISE_CONV_2D@1",
                    "id_source": "op_type_position",
                    "index": 1,
                    "node_id": "0/1",
                    "op_type": "DEPTHWISE_CONV_2D",
                    "knobs": {
                        "kernel": knob("generic", "generic", rule=0),
                        "accumulation": knob("fast", "fast", approximate=True),
                    },
                    "kernel": {
                        "entry": "arm_depthwise_conv_f16",
                        "provider": None,
                        "candidates": None,
                        "requantization": None,
                        "local_scratch_bytes": 256,
                    },
                    "fixed": {"weight_layout": {"value": "packed", "set_by": "heuristic"}},
                },
                {
                    "id": "0:hard_swish",
                    "id_source": "output_name",
                    "index": 2,
                    "node_id": "0/2",
                    "op_type": "HARD_SWISH",
                    "knobs": {},
                    "kernel": {
                        "entry": None,
                        "provider": None,
                        "candidates": None,
                        "requantization": None,
                        "local_scratch_bytes": None,
                    },
                    "fixed": {
                        "use_lut": {"value": True, "set_by": "default"},
                        "compat_variant": {"value": False, "set_by": "attribute"},
                    },
                },
            ],
            "tensors": [
                {
                    "id": "conv2d_1/weights",
                    "storage_id": None,
                    "requested": "stream",
                    "residency": "stream",
                    "memory": "MRAM",
                    "destination_memory": None,
                    "bytes": 1152,
                    "alignment": 16,
                    "unit": 0,
                    "pool_offset": 0,
                },
                {
                    "id": "conv2d_1/bias",
                    "storage_id": None,
                    "requested": None,
                    "residency": "direct",
                    "memory": "MRAM",
                    "destination_memory": None,
                    "bytes": 64,
                    "alignment": 16,
                    "unit": None,
                    "pool_offset": None,
                },
                {
                    "id": "dw/weights",
                    "storage_id": "dw/weights_packed",
                    "requested": "pin",
                    "residency": "pin",
                    "memory": "MRAM",
                    "destination_memory": "DTCM",
                    "bytes": 300,
                    "alignment": 16,
                    "unit": None,
                    "pool_offset": None,
                },
                {
                    "id": "dw/bias",
                    "storage_id": None,
                    "requested": "stream",
                    "residency": "stream",
                    "memory": "MRAM",
                    "destination_memory": None,
                    "bytes": 40,
                    "alignment": 16,
                    "unit": 1,
                    "pool_offset": 1152,
                },
            ],
            "schedule": {
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
                    },
                    {
                        "id": 1,
                        "tensors": ["dw/bias"],
                        "pool_offset": 1152,
                        "issue_after": "0:conv2d_1/Relu",
                        "engine": "cpu",
                        "bytes": 40,
                        "source_memory": "MRAM",
                        "source_offset": 1520,
                        "wait_before": 1,
                        "last_reader": 1,
                    },
                ],
            },
        }
    )


def planner_input() -> dict[str, Any]:
    """The heliabuild plan with its schedule as a planner writes it: input fields only."""
    document = plan_document()
    for unit in document["schedule"]["units"]:
        for derived in ("bytes", "source_memory", "source_offset", "wait_before", "last_reader"):
            del unit[derived]
    return document


def unscheduled_plan() -> dict[str, Any]:
    """The heliabuild plan of a conversion where nothing streams (no pool configured)."""
    document = plan_document()
    for tensor in document["tensors"]:
        if tensor["residency"] == "stream":
            tensor.update(residency="direct", unit=None, pool_offset=None)
    document["schedule"] = {"source": "none", "units": []}
    return document


def report_document() -> dict[str, Any]:
    """A heliabuild report matching `plan_document`."""
    plan = plan_document()
    return copy.deepcopy(
        {
            "schema_version": 1,
            "generator": plan["generator"],
            "model": plan["model"],
            "module_prefix": "kws",
            "platform": plan["platform"],
            "operators": [
                {
                    "id": "0:conv2d_1/Relu",
                    "index": 0,
                    "node_id": "0/0",
                    "op_type": "CONV_2D",
                    "entry": "arm_convolve_s8",
                    "macs": 320000,
                    "knobs": {
                        "kernel": [
                            {"value": "specialized", "applies": True, "reason": None},
                            {"value": "generic", "applies": True, "reason": None},
                        ]
                    },
                    "constants": [
                        {"id": "conv2d_1/weights", "bytes": 1152, "stageable": True, "reason": None},
                        {"id": "conv2d_1/bias", "bytes": 64, "stageable": False, "reason": "read at init"},
                    ],
                },
                {
                    "id": "0:DEPTHWISE_CONV_2D@1",
                    "index": 1,
                    "node_id": "0/1",
                    "op_type": "DEPTHWISE_CONV_2D",
                    "entry": "arm_depthwise_conv_f16",
                    "macs": 0,
                    "knobs": {
                        "accumulation": [
                            {"value": "precise", "applies": True, "reason": None},
                            {"value": "fast", "applies": False, "reason": "allow_approximate is false"},
                        ]
                    },
                    "constants": [],
                },
                {
                    "id": "0:hard_swish",
                    "index": 2,
                    "node_id": "0/2",
                    "op_type": "HARD_SWISH",
                    "entry": None,
                    "macs": None,
                    "knobs": {},
                    "constants": [],
                },
            ],
            "stream_pool": {
                "memory": "DTCM",
                "bytes": 65536,
                "alignment": 16,
                "layout": [{"unit": 0, "offset": 0, "bytes": 1152}, {"unit": 1, "offset": 1152, "bytes": 40}],
                "pieces": [{"unit": 0, "offset": 0, "bytes": 1152}, {"unit": 1, "offset": 1152, "bytes": 40}],
            },
            "kernel_calls": {
                "calls": [{"symbol": "arm_convolve_s8", "operator_ids": ["0:conv2d_1/Relu"]}],
                "unrecorded_operator_ids": ["0:hard_swish"],
            },
            "hints": [
                {
                    "kind": "knob",
                    "message": "1 operator runs kernel: generic where specialized applies.",
                    "operator_ids": ["0:DEPTHWISE_CONV_2D@1"],
                    "facts": {"knob": "kernel", "value": "specialized", "nested": {"anything": [1, 2.5, None]}},
                },
                {
                    "kind": "placement",
                    "message": "Constants in MRAM fit in the free DTCM.",
                    "operator_ids": [],
                    "facts": {},
                },
            ],
            "folded_variables": [],
            "fp16_overflow": [
                {
                    "operator": "0:DEPTHWISE_CONV_2D@1",
                    "entry": "arm_convolve_1x1_f16",
                    "model_input": "input_1",
                    "path": ["RESHAPE", "PAD"],
                    "threshold": 12.5,
                    "channel": 3,
                    "block": 0,
                    "weight_sum": 5200.25,
                    "bias": -0.5,
                }
            ],
        }
    )


def test_schemas_are_draft_2020_12_schemas() -> None:
    for name in (PLAN_SCHEMA_FILE, REPORT_SCHEMA_FILE):
        schema = load_json_schema(name)
        jsonschema.Draft202012Validator.check_schema(schema)
        assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
        assert schema["properties"]["schema_version"] == {"const": 1}


def _objects_without_closed_properties(node: Any, path: str) -> list[str]:
    """Paths of every object schema (one with `properties`) that does not forbid other fields, except `facts`."""
    found: list[str] = []
    if isinstance(node, dict):
        if "properties" in node and node.get("type") == "object" and node.get("additionalProperties") is not False:
            found.append(path)
        for key, value in node.items():
            found.extend(_objects_without_closed_properties(value, f"{path}/{key}"))
    elif isinstance(node, list):
        for position, value in enumerate(node):
            found.extend(_objects_without_closed_properties(value, f"{path}/{position}"))
    return found


@pytest.mark.parametrize("name", [PLAN_SCHEMA_FILE, REPORT_SCHEMA_FILE])
def test_every_object_forbids_other_fields_except_hint_facts(name: str) -> None:
    schema = load_json_schema(name)
    assert _objects_without_closed_properties(schema, "") == []
    if name == REPORT_SCHEMA_FILE:
        assert schema["$defs"]["hint"]["properties"]["facts"] == {
            "type": "object",
            "description": schema["$defs"]["hint"]["properties"]["facts"]["description"],
        }


@pytest.mark.parametrize(
    "build", [plan_document, planner_input, unscheduled_plan], ids=["written", "planner-input", "nothing-streams"]
)
def test_plans_heliabuild_writes_validate(build: Callable[[], dict[str, Any]]) -> None:
    validate_plan_document(build(), "kws_plan.json")
    validate_plan_document(json.loads(json.dumps(build())), "kws_plan.json")


def test_report_heliabuild_writes_validates() -> None:
    validate_report_document(report_document(), "kws_report.json")
    document = report_document()
    document.update(stream_pool=None, kernel_calls=None, hints=[], fp16_overflow=[])
    validate_report_document(document, "kws_report.json")


def _set(path: str, value: Any) -> Callable[[dict[str, Any]], None]:
    """An edit setting the field at dotted `path` (list positions as numbers) to `value`."""

    def edit(document: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        node: Any = document
        for part in parents:
            node = node[int(part)] if isinstance(node, list) else node[part]
        if isinstance(node, list):
            node[int(last)] = value
        else:
            node[last] = value

    return edit


def _delete(path: str) -> Callable[[dict[str, Any]], None]:
    def edit(document: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        node: Any = document
        for part in parents:
            node = node[int(part)] if isinstance(node, list) else node[part]
        del node[last]

    return edit


INVALID_PLANS: dict[str, Callable[[dict[str, Any]], None]] = {
    "schema_version-2": _set("schema_version", 2),
    "unknown-top-level": _set("annotation", "mine"),
    "unknown-generator": _set("generator.vendor", "x"),
    "generator-heliabuild-missing": _delete("generator.heliabuild"),
    "model-sha-uppercase": _set("model.sha256", SHA.upper()),
    "model-subgraph-negative": _set("model.subgraph", -1),
    "module-prefix-not-identifier": _set("module_prefix", "kws-model"),
    "platform-core": _set("platform.core", "cortex-m55"),
    "platform-capability-unknown": _set("platform.capabilities", ["DSP", "HELIUM"]),
    "goal-unknown": _set("optimization.goal", "speed"),
    "optimization-knobs-not-empty": _set("optimization.knobs", {"kernel": "generic"}),
    "operator-unknown-field": _set("operators.0.notes", "x"),
    "id_source-unknown": _set("operators.0.id_source", "name"),
    "knob-unknown": _set("operators.0.knobs.tiling", knob("specialized")),
    "knob-value-auto": _set("operators.0.knobs.kernel.value", "auto"),
    "knob-kernel-value-unknown": _set("operators.0.knobs.kernel.value", "fast"),
    "knob-kernel-requested-unknown": _set("operators.0.knobs.kernel.requested", "precise"),
    "knob-accumulation-value-unknown": _set("operators.1.knobs.accumulation.value", "generic"),
    "knob-kernel-approximate": _set("operators.0.knobs.kernel.approximate", False),
    "knob-accumulation-approximate-null": _set("operators.1.knobs.accumulation.approximate", None),
    "knob-unknown-field": _set("operators.0.knobs.kernel.why", "x"),
    "resolved_by-unknown": _set("operators.0.knobs.kernel.resolved_by", "guess"),
    "source-kind-unknown": _set("operators.0.knobs.kernel.source.kind", "config"),
    "source-operator-without-rule": _set("operators.1.knobs.kernel.source.rule", None),
    "source-default-with-rule": _set("operators.0.knobs.kernel.source.rule", {"position": 0, "type": None, "id": None}),
    "rule-unknown-field": _set("operators.1.knobs.kernel.source.rule.line", 3),
    "kernel-unknown-field": _set("operators.0.kernel.symbol", "x"),
    "kernel-provider-missing": _delete("operators.0.kernel.provider"),
    "requantization-unknown": _set("operators.0.kernel.requantization", "lshift"),
    "local-scratch-negative": _set("operators.0.kernel.local_scratch_bytes", -4),
    "fixed-unknown-choice": _set("operators.2.fixed.tiling", {"value": "x", "set_by": "default"}),
    "fixed-use_lut-string": _set("operators.2.fixed.use_lut.value", "yes"),
    "fixed-weight_layout-boolean": _set("operators.1.fixed.weight_layout.value", True),
    "fixed-set_by-unknown": _set("operators.2.fixed.use_lut.set_by", "user"),
    "fixed-unknown-field": _set("operators.2.fixed.use_lut.note", "x"),
    "tensor-unknown-field": _set("tensors.0.reader", "x"),
    "tensor-requested-unknown": _set("tensors.0.requested", "copy"),
    "tensor-residency-unknown": _set("tensors.1.residency", "flash"),
    "tensor-residency-null": _set("tensors.1.residency", None),
    "tensor-stream-without-unit": _set("tensors.0.unit", None),
    "tensor-direct-with-pool-offset": _set("tensors.1.pool_offset", 0),
    "tensor-pin-without-destination": _set("tensors.2.destination_memory", None),
    "tensor-direct-with-destination": _set("tensors.1.destination_memory", "DTCM"),
    "tensor-alignment-zero": _set("tensors.0.alignment", 0),
    "tensor-memory-name": _set("tensors.0.memory", "MRAM bank"),
    "schedule-unknown-field": _set("schedule.planner", "mine"),
    "schedule-source-unknown": _set("schedule.source", "search"),
    "schedule-none-with-units": _set("schedule.source", "none"),
    "schedule-plan-without-units": _set("schedule.units", []),
    "pool-unknown-field": _set("schedule.pool.base", 0),
    "unit-unknown-field": _set("schedule.units.0.pool", "DTCM"),
    "unit-engine-unknown": _set("schedule.units.0.engine", "npu"),
    "unit-without-tensors": _set("schedule.units.0.tensors", []),
    "unit-issue_after-missing": _delete("schedule.units.0.issue_after"),
    "unit-wait_before-string": _set("schedule.units.0.wait_before", "0:conv2d_1/Relu"),
}


@pytest.mark.parametrize("edit", INVALID_PLANS.values(), ids=INVALID_PLANS.keys())
def test_each_invalid_plan_field_is_rejected(edit: Callable[[dict[str, Any]], None]) -> None:
    document = plan_document()
    edit(document)
    with pytest.raises(SchemaError) as caught:
        validate_plan_document(document, "kws_plan.json")
    assert caught.value.message.startswith("kws_plan.json: ")
    assert caught.value.message.endswith("(schema plan-schema.json)")


def test_too_many_units_are_rejected() -> None:
    document = planner_input()
    unit = document["schedule"]["units"][0]
    document["schedule"]["units"] = [unit] * 65536
    validator = jsonschema.Draft202012Validator(load_json_schema(PLAN_SCHEMA_FILE))
    first = next(validator.iter_errors(document))  # lazily: maxItems is checked before the items
    assert (list(first.absolute_path), first.validator) == (["schedule", "units"], "maxItems")


INVALID_REPORTS: dict[str, Callable[[dict[str, Any]], None]] = {
    "schema_version-2": _set("schema_version", 2),
    "unknown-top-level": _set("measurements", {}),
    "kernel_calls-missing": _delete("kernel_calls"),
    "operator-unknown-field": _set("operators.0.share", 0.5),
    "macs-negative": _set("operators.0.macs", -1),
    "knob-unknown": _set("operators.0.knobs.tiling", []),
    "alternative-auto": _set("operators.0.knobs.kernel.0.value", "auto"),
    "alternative-unknown-field": _set("operators.0.knobs.kernel.0.cost", 3),
    "alternative-applies-missing": _delete("operators.0.knobs.kernel.0.applies"),
    "constant-unknown-field": _set("operators.0.constants.0.memory", "MRAM"),
    "constant-stageable-string": _set("operators.0.constants.0.stageable", "yes"),
    "stream_pool-unknown-field": _set("stream_pool.base", 0),
    "layout-pool_offset": _set("stream_pool.layout.0", {"unit": 0, "pool_offset": 0, "bytes": 1152}),
    "piece-source_offset": _set("stream_pool.pieces.0.source_offset", 0),
    "call-unknown-field": _set("kernel_calls.calls.0.count", 1),
    "kernel_calls-unknown-field": _set("kernel_calls.complete", True),
    "hint-kind-unknown": _set("hints.0.kind", "speed"),
    "hint-unknown-field": _set("hints.0.severity", "info"),
    "hint-facts-not-object": _set("hints.0.facts", []),
    "fp16-unknown-field": _set("fp16_overflow.0.margin", 0.02),
    "fp16-channel-missing": _delete("fp16_overflow.0.channel"),
    "fp16-path-not-types": _set("fp16_overflow.0.path", "RESHAPE"),
    "folded-variable-not-name": _set("folded_variables", [3]),
}


@pytest.mark.parametrize("edit", INVALID_REPORTS.values(), ids=INVALID_REPORTS.keys())
def test_each_invalid_report_field_is_rejected(edit: Callable[[dict[str, Any]], None]) -> None:
    document = report_document()
    edit(document)
    with pytest.raises(SchemaError) as caught:
        validate_report_document(document, "kws_report.json")
    assert caught.value.message.startswith("kws_report.json: ")


def test_hint_facts_are_free_form() -> None:
    document = report_document()
    document["hints"][0]["facts"] = {"any": {"field": ["at", "all"]}, "knob": "accumulation", "count": 3}
    validate_report_document(document, "kws_report.json")


def test_schema_error_names_the_field() -> None:
    document = plan_document()
    document["operators"][1]["knobs"]["kernel"]["value"] = "auto"
    with pytest.raises(SchemaError) as caught:
        validate_plan_document(document, "kws_plan.json")
    assert "operators/1/knobs/kernel" in caught.value.message
