"""heliabuild.aot.report: MACs, knob alternatives, constants, stream pool, kernel calls, hints and fp16_overflow."""

from __future__ import annotations

import copy
import json

import numpy as np
import pytest
from test_aot_facts import npu_model
from test_aot_facts_builders import float_conv_layer, reload, reshape
from test_aot_fp16_overflow import reshape_conv, two_channel_weights

from heliabuild.aot import report as R
from heliabuild.aot.facts import REASON_FIXED_IN_PLACE, REASON_PINNED, REASON_READ_AT_INIT, model_facts
from heliabuild.aot.planner import make_plan
from heliabuild.aot.platforms import Memory, Platform, get_platform
from heliabuild.aot.records import OptimizationReport, validate_report_document
from heliabuild.model import load_model
from heliabuild.synth import GraphBuilder, chain_network
from heliabuild.vela.per_layer import PerLayerRow

APOLLO = "apollo510_evb"
CORSTONE = "corstone300_ethos_u55"


def report_of(model, platform=APOLLO, config=None, **kwargs):
    result = make_plan(model, platform, config, module_prefix="m", **kwargs)
    validate_report_document(result.report)
    return result.plan, result.report


def by_index(report):
    return {op["index"]: op for op in report["operators"]}


# --- MACs ----------------------------------------------------------------------------------------------------------

KWS_MACS = {
    0: 25 * 5 * 64 * 10 * 4 * 1,  # CONV_2D 10x4 on one input channel, stride 2: Vela's per-layer 320000
    1: 25 * 5 * 64 * 3 * 3,  # DEPTHWISE 3x3: 72000
    2: 25 * 5 * 64 * 1 * 1 * 64,  # CONV_2D 1x1: 512000
    11: 1 * 12 * 64,  # FULLY_CONNECTED: 768
}
RESNET_MACS = {
    0: 32 * 32 * 16 * 3 * 3 * 3,
    1: 32 * 32 * 16 * 3 * 3 * 16,
    2: 32 * 32 * 16 * 3 * 3 * 16,
    4: 16 * 16 * 32 * 3 * 3 * 16,
    5: 16 * 16 * 32 * 3 * 3 * 32,
    6: 16 * 16 * 32 * 1 * 1 * 16,
    8: 8 * 8 * 64 * 3 * 3 * 32,
    9: 8 * 8 * 64 * 3 * 3 * 64,
    10: 8 * 8 * 64 * 1 * 1 * 32,
    14: 1 * 10 * 64,
}


def test_kws_macs(kws_path):
    _, report = report_of(load_model(kws_path))
    ops = by_index(report)
    for index, macs in KWS_MACS.items():
        assert ops[index]["macs"] == macs
    assert [ops[i]["macs"] for i in (3, 5, 7)] == [72000] * 3
    assert [ops[i]["macs"] for i in (4, 6, 8)] == [512000] * 3
    assert [ops[i]["macs"] for i in (9, 10, 12)] == [0, 0, 0]  # pooling, reshape, softmax


def test_resnet_macs(resnet_path):
    _, report = report_of(load_model(resnet_path))
    ops = by_index(report)
    for index, macs in RESNET_MACS.items():
        assert ops[index]["macs"] == macs, index
    assert all(ops[i]["macs"] == 0 for i in ops if i not in RESNET_MACS)


def test_npu_macs_from_vela_rows():
    model = npu_model()
    rows = [
        {"target": "NPU", "mac_count": 100},
        {"Target": "NPU", "MAC Count": "20"},
        {"target": "CPU", "mac_count": 0},
    ]
    plan, _ = report_of(model, CORSTONE)
    report = R.build_report(model, plan, platform=get_platform(CORSTONE), vela_rows=rows)
    assert report["operators"][0]["macs"] == 120
    assert R.build_report(model, plan, platform=CORSTONE)["operators"][0]["macs"] is None
    two_runs = [*rows, {"target": "NPU", "mac_count": 5}]
    assert R.build_report(model, plan, vela_rows=two_runs)["operators"][0]["macs"] is None
    row = PerLayerRow(0, "Conv2D", "Conv2D", "NPU", 1, 1, 0, 0, 0, 0, 7, "x")
    assert R.npu_macs(model_facts(model), [row]) == {0: 7}


def test_other_macs():
    facts = model_facts(reshape_conv(*two_channel_weights()))
    assert [R.operator_macs(f) for f in facts] == [0, 2 * 2 * 2 * 40]
    b = GraphBuilder()
    x = b.activation("x", (1, -1, 4, 8), np.float32)
    y, _ = float_conv_layer(b, x, (1, 4, 4, 8), np.ones((2, 1, 1, 8)), None, dtype=np.float32)
    b.tensors[y].shape = [1, -1, 4, 2]
    (conv,) = model_facts(reload(b.finish([x], [y], "dynamic", "m")))
    assert R.operator_macs(conv) is None


# --- operators, knobs and constants --------------------------------------------------------------------------------


def test_operator_entries_knobs_and_constants(kws_path):
    plan, report = report_of(load_model(kws_path))
    ops = by_index(report)
    for planned, reported in zip(plan["operators"], report["operators"], strict=True):
        assert reported["id"] == planned["id"] and reported["entry"] == planned["kernel"]["entry"]
        assert reported["node_id"] == planned["node_id"] and reported["op_type"] == planned["op_type"]
    assert ops[0]["knobs"]["kernel"][0]["value"] == "specialized" and not ops[0]["knobs"]["kernel"][0]["applies"]
    assert ops[2]["knobs"] == {
        "kernel": [
            {"value": "specialized", "applies": True, "reason": None},
            {"value": "generic", "applies": True, "reason": None},
        ]
    }
    assert ops[9]["knobs"] == {}
    assert [c["id"] for c in ops[0]["constants"]] == [t["id"] for t in plan["tensors"][:2]]
    assert all(c["stageable"] and c["reason"] is None for c in ops[0]["constants"])
    (shape,) = ops[10]["constants"]
    assert shape == {"id": "functional_1/flatten/Const", "bytes": 8, "stageable": False, "reason": REASON_READ_AT_INIT}


def test_pinned_constants_are_not_stageable():
    config = {"memory": {"tensors": [{"pattern": "*kernel*", "residency": "pin", "destination_memory": "DTCM"}]}}
    plan, report = report_of(chain_network(0), config=config)
    pinned = {t["id"] for t in plan["tensors"] if t["residency"] == "pin"}
    assert pinned
    seen = [c for op in report["operators"] for c in op["constants"] if c["id"] in pinned]
    assert seen and all(not c["stageable"] and c["reason"] == REASON_PINNED for c in seen)
    # Without the planner's records, the report reads the pin from the plan's residency.
    alone = R.build_report(chain_network(0), plan, platform=APOLLO)
    assert alone["operators"] == report["operators"]


def test_npu_constants_are_fixed_in_place_and_call_nothing():
    _, report = report_of(npu_model(), CORSTONE)
    (op,) = report["operators"]
    assert [c["reason"] for c in op["constants"]] == [REASON_FIXED_IN_PLACE] * 2
    assert report["kernel_calls"] == {"calls": [], "unrecorded_operator_ids": []}
    assert [h["kind"] for h in report["hints"]] == []  # fixed-in-place constants cannot move


# --- kernel calls --------------------------------------------------------------------------------------------------


def test_kernel_calls_are_sorted_and_attributed(kws_path):
    plan, report = report_of(load_model(kws_path), config={"optimization": {"goal": "size"}})
    ids = [op["id"] for op in plan["operators"]]
    calls = report["kernel_calls"]["calls"]
    assert [c["symbol"] for c in calls] == sorted(c["symbol"] for c in calls)
    table = {c["symbol"]: c["operator_ids"] for c in calls}
    assert table == {
        "arm_avgpool_s8": [ids[9]],
        "arm_convolve_s8": [ids[0], ids[2], ids[4], ids[6], ids[8]],
        "arm_depthwise_conv_s8": [ids[1], ids[3], ids[5], ids[7]],
        "arm_fully_connected_s8": [ids[11]],
        "arm_softmax_s8": [ids[12]],
    }
    assert report["kernel_calls"]["unrecorded_operator_ids"] == [ids[10]]  # RESHAPE
    for operator_ids in table.values():
        assert operator_ids == sorted(operator_ids, key=ids.index)


def test_kernel_calls_follow_the_plan_entries(resnet_path):
    plan, report = report_of(load_model(resnet_path))
    table = {c["symbol"]: c["operator_ids"] for c in report["kernel_calls"]["calls"]}
    for op in plan["operators"]:
        if op["kernel"]["entry"] is not None:
            assert op["id"] in table[op["kernel"]["entry"]]
    assert len(table["arm_elementwise_add_s8"]) == 3


# --- hints ---------------------------------------------------------------------------------------------------------


def knob_hint(report, knob):
    found = [h for h in report["hints"] if h["kind"] == "knob" and h["facts"]["knob"] == knob]
    return found[0] if found else None


def test_kernel_hint_lists_generic_layers_where_specialized_applies(kws_path):
    model = load_model(kws_path)
    plan, report = report_of(model, config={"optimization": {"goal": "size"}})
    ids = [op["id"] for op in plan["operators"]]
    hint = knob_hint(report, "kernel")
    # conv 0 (10x4) and the fully connected layer have no specialized entry that applies.
    assert hint["operator_ids"] == [ids[i] for i in (1, 2, 3, 4, 5, 6, 7, 8)]
    assert hint["facts"] == {
        "knob": "kernel",
        "value": "specialized",
        "approximate": False,
        "current_values": {"generic": 8},
    }
    _, latency = report_of(model, config={"optimization": {"goal": "latency"}})
    assert knob_hint(latency, "kernel") is None
    pinned = {"optimization": {"goal": "size"}, "operators": [{"id": ids[2], "knobs": {"kernel": "generic"}}]}
    _, report = report_of(model, config=pinned)
    assert ids[2] not in knob_hint(report, "kernel")["operator_ids"]
    explicit = {"optimization": {"knobs": {"kernel": "generic"}}}
    _, report = report_of(model, config=explicit)
    assert len(knob_hint(report, "kernel")["operator_ids"]) == 8  # a model-level setting is not a pin


def _fp16_model():
    b = GraphBuilder()
    x = b.activation("x", (1, 4, 40), np.float16)
    y = reshape(b, x, (1, 2, 2, 40), "reshaped")
    out, shape = float_conv_layer(b, y, (1, 2, 2, 40), *two_channel_weights(), name="first")
    out2, _ = float_conv_layer(b, out, shape, np.ones((3, 1, 1, 2)), np.zeros(3), name="second")
    return reload(b.finish([x], [out2], "fp16", "fp16.tflite"))


def test_accumulation_hint_and_fp16_overflow():
    model = _fp16_model()
    plan, report = report_of(model)
    ids = [op["id"] for op in plan["operators"]]
    hint = knob_hint(report, "accumulation")
    assert hint["operator_ids"] == [ids[1], ids[2]]
    assert hint["facts"]["value"] == "fast" and hint["facts"]["approximate"] is True
    assert "allow_approximate: true" in hint["message"]
    (item,) = report["fp16_overflow"]
    assert item["operator"] == ids[1] and item["entry"] == "arm_convolve_1x1_f16" and item["path"] == ["RESHAPE"]
    assert item["threshold"] == 2039.00390625 and (item["channel"], item["block"]) == (1, 1)
    fast = {"optimization": {"goal": "latency", "allow_approximate": True}}
    _, report = report_of(model, config=fast)
    assert knob_hint(report, "accumulation") is None
    generic = {"operators": [{"id": ids[1], "knobs": {"kernel": "generic"}}]}
    _, report = report_of(model, config=generic)
    assert report["fp16_overflow"] == []


def test_placement_hint(kws_path):
    model = load_model(kws_path)
    plan, report = report_of(model)
    (hint,) = [h for h in report["hints"] if h["kind"] == "placement"]
    total = sum(-(-t["bytes"] // t["alignment"]) * t["alignment"] for t in plan["tensors"])
    assert hint["facts"]["memory"] == "MRAM" and hint["facts"]["bytes"] == total
    assert hint["facts"]["destination_free_bytes"] == get_platform(APOLLO).memory("DTCM").bytes
    assert hint["operator_ids"] == [op["id"] for op in plan["operators"] if op["index"] not in (9, 12)]
    # A pool that leaves too little DTCM, two source memories, or warm constants: no hint.
    big_pool = {"memory": {"stream_pool": {"memory": "DTCM", "bytes": 500000}}}
    two = {"memory": {"tensors": [{"pattern": "*dense*", "memory": "PSRAM"}]}}
    for config in (big_pool, two):
        _, report = report_of(model, config=config)
        assert [h for h in report["hints"] if h["kind"] == "placement"] == []
    apollo = get_platform(APOLLO)
    warm = Platform(
        "warm", apollo.cpu, apollo.capabilities, apollo.memories, "SRAM", apollo.alignment, apollo.transfers
    )
    _, report = report_of(model, warm)
    assert [h for h in report["hints"] if h["kind"] == "placement"] == []
    no_dtcm = Platform("flat", apollo.cpu, apollo.capabilities, (Memory("MRAM", 1 << 22, 4096),), "MRAM")
    _, report = report_of(model, no_dtcm)
    assert report["hints"] == []


# --- stream pool ---------------------------------------------------------------------------------------------------


def test_stream_pool_layout_and_pieces(kws_path):
    config = {
        "memory": {
            "tensors": [{"pattern": "*", "residency": "stream"}],
            "stream_pool": {"memory": "DTCM", "bytes": 65536},
        }
    }
    plan, report = report_of(load_model(kws_path), config=config)
    pool = report["stream_pool"]
    assert (pool["memory"], pool["bytes"], pool["alignment"]) == ("DTCM", 65536, 16)
    units = plan["schedule"]["units"]
    assert pool["layout"] == [{"unit": u["id"], "offset": u["pool_offset"], "bytes": u["bytes"]} for u in units]
    for unit in units:
        parts = [p for p in pool["pieces"] if p["unit"] == unit["id"]]
        assert sum(p["bytes"] for p in parts) == unit["bytes"]
        assert parts[0]["offset"] == unit["pool_offset"]
        for part in parts:
            assert part["offset"] // 4096 == (part["offset"] + part["bytes"] - 1) // 4096  # never crosses
    assert any(len([p for p in pool["pieces"] if p["unit"] == u["id"]]) > 1 for u in units)
    coarse = R.build_report(load_model(kws_path), plan, platform=APOLLO, dma_boundary=1 << 20)
    assert len(coarse["stream_pool"]["pieces"]) == len(units)
    _, none = report_of(load_model(kws_path))
    assert none["stream_pool"] is None


# --- the whole document --------------------------------------------------------------------------------------------


def test_report_document(shared_model_path):
    model = load_model(shared_model_path)
    plan, report = report_of(model)
    assert report["schema_version"] == 1 and report["folded_variables"] == []
    for key in ("generator", "model", "module_prefix", "platform"):
        assert report[key] == plan[key]
    again = R.build_report(model, copy.deepcopy(plan), platform=get_platform(APOLLO))
    assert json.dumps(again, sort_keys=True) == json.dumps(report, sort_keys=True)
    typed = OptimizationReport.from_json(json.loads(json.dumps(report)))
    assert len(typed.operators) == len(plan["operators"])


def test_build_report_without_a_platform_uses_the_plan(kws_path):
    model = load_model(kws_path)
    config = {
        "memory": {
            "tensors": [{"pattern": "*", "residency": "stream"}],
            "stream_pool": {"memory": "DTCM", "bytes": 65536},
        }
    }
    plan, report = report_of(model, config=config)
    alone = R.build_report(model, plan)
    validate_report_document(alone)
    assert alone["operators"] == report["operators"]
    assert len(alone["stream_pool"]["pieces"]) == len(plan["schedule"]["units"])  # unsplit without a boundary
    assert [h for h in alone["hints"] if h["kind"] == "placement"] == []


def test_a_plan_for_another_model_is_refused(kws_path, resnet_path):
    plan, _ = report_of(load_model(kws_path))
    with pytest.raises(ValueError, match="operators"):
        R.build_report(load_model(resnet_path), plan, platform=APOLLO)
