"""The built-in planner: plans of real Vela outputs and synthetic models, replay, refusals.

Models: the Vela outputs (ethos-u55-128, real Vela) of the two shared models
and of heliabuild.synth's chain and residual networks, unfenced and fenced,
planned for `corstone300_ethos_u55`; and the synthetic networks themselves
(int8 CPU operators, constants that can stream) planned for `apollo510_evb`
with and without a stream pool. Every plan and report validates against
schemas/plan-schema.json and report-schema.json, and replaying a written plan
gives byte-identical files.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from ai_edge_litert import schema_py_generated as schema
from helpers.paths import KWS, RESNET, SHARED_MODELS, shared_models_present
from helpers.skips import require

from heliabuild.aot.admission import PlanRefusedError, operator_refusals
from heliabuild.aot.config import AotConfig, ConfigError
from heliabuild.aot.facts import storage_roots
from heliabuild.aot.planner import PlanInputError, constant_ids, make_plan, plan_model
from heliabuild.aot.platforms import Memory, Platform, Transfer, get_platform
from heliabuild.aot.records import validate_plan_document, validate_report_document
from heliabuild.errors import PlanMismatchError, ScheduleError
from heliabuild.fence import rewrite_model_with_fences
from heliabuild.files import json_text
from heliabuild.model import load_model, model_sha256, save_model, stable_operator_ids
from heliabuild.synth import GraphBuilder, chain_network, large_model, residual_network, single_op_model
from heliabuild.vela import compile as vela_compile

CORSTONE = "corstone300_ethos_u55"
APOLLO = "apollo510_evb"
STREAM_ALL = AotConfig(
    tensors=[{"pattern": "*", "residency": "stream"}], stream_pool={"memory": "DTCM", "bytes": 65536}
)
SMALL_POOL = AotConfig(tensors=[{"pattern": "*", "residency": "stream"}], stream_pool={"memory": "DTCM", "bytes": 8192})

# Fences after these original operators (each between NPU operators, so Vela compiles N+1 command streams).
FENCES = {"kws": [3, 7], "resnet": [3, 11], "chain": [3, 6], "residual": [3, 11]}

M4 = Platform(
    name="test_cortex_m4",
    cpu="cortex-m4",
    capabilities=("DSP", "MCU"),
    memories=(Memory("FLASH", 1 << 20, 4096), Memory("SRAM", 1 << 18, 4096)),
    constant_memory="FLASH",
    alignment=8,
    transfers=(Transfer("FLASH", "SRAM", ("cpu",)),),
)
"""A target without FP16 (and without NPU), built in Python."""


def _source(name: str, folder: Path) -> Path:
    if name in ("kws", "resnet"):
        return SHARED_MODELS / (KWS if name == "kws" else RESNET)
    path = folder / f"synth_{name}.tflite"
    save_model(chain_network(0) if name == "chain" else residual_network(0), path)
    return path


@pytest.fixture(scope="session")
def vela_models(tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, bool], tuple[Path, Path]]:
    """(model name, fenced) -> (Vela's compiled model, its per-layer CSV), for every model available."""
    folder = tmp_path_factory.mktemp("aot_vela")
    names = ["chain", "residual"] + (["kws", "resnet"] if shared_models_present() else [])
    compiled: dict[tuple[str, bool], tuple[Path, Path]] = {}
    for name in names:
        source = _source(name, folder)
        fenced_path = folder / "fenced" / f"{name}_fenced.tflite"
        rewrite_model_with_fences(source, FENCES[name]).save(fenced_path)
        for fenced, model in ((False, source), (True, fenced_path)):
            result = vela_compile(model, folder / name / ("fenced" if fenced else "plain"))
            compiled[(name, fenced)] = (result.model, result.per_layer_csv)
    return compiled


VELA_CASES = [
    pytest.param(name, fenced, id=f"{name}-{'fenced' if fenced else 'unfenced'}")
    for name in ("kws", "resnet", "chain", "residual")
    for fenced in (False, True)
]


def _vela_case(vela_models, name: str, fenced: bool) -> tuple[Path, Path]:
    require((name, fenced) in vela_models, f"real models not available: {SHARED_MODELS} is absent")
    return vela_models[(name, fenced)]


def replayed(tmp_path: Path, model, platform, config: AotConfig, plan: dict, per_layer=None) -> tuple[str, str]:
    """The plan and report text of the conversion reading `plan` back as its input plan."""
    path = tmp_path / "input_plan.json"
    path.write_text(json_text(plan), encoding="utf-8")
    prefix = plan["module_prefix"]
    again = make_plan(model, platform, config.with_plan(path), module_prefix=prefix, vela_per_layer=per_layer)
    return json_text(again.plan), json_text(again.report)


def check_documents(model_path: Path | object, plan: dict, report: dict) -> None:
    validate_plan_document(plan, "plan")
    validate_report_document(report, "report")
    model = load_model(model_path)
    ids = stable_operator_ids(model)
    assert [op["id"] for op in plan["operators"]] == [i.id for i in ids]
    assert [(op["index"], op["node_id"], op["op_type"]) for op in plan["operators"]] == [
        (i.index, i.node_id, i.op_type) for i in ids
    ]
    assert [t["id"] for t in plan["tensors"]] == constant_ids([(r.name, r.tensor) for r in storage_roots(model)])
    assert plan["model"]["sha256"] == model_sha256(model)
    assert [op["id"] for op in report["operators"]] == [i.id for i in ids]


# --- Vela outputs ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("pool", [False, True], ids=["no-pool", "pool"])
@pytest.mark.parametrize(("name", "fenced"), VELA_CASES)
def test_vela_outputs_plan_validate_and_replay_byte_identical(vela_models, tmp_path, name, fenced, pool) -> None:
    model_path, per_layer = _vela_case(vela_models, name, fenced)
    config = STREAM_ALL if pool else AotConfig()
    result = make_plan(model_path, CORSTONE, config, module_prefix="net", vela_per_layer=per_layer)
    plan, report = result.plan, result.report
    check_documents(model_path, plan, report)

    streams = [op for op in plan["operators"] if op["op_type"] == "ethos-u"]
    fences = [op for op in plan["operators"] if op["op_type"] == "ETHOS_U_STREAM_SPLIT"]
    assert len(streams) == len(FENCES[name]) + 1 if fenced else len(streams) == 1
    assert len(fences) == (len(FENCES[name]) if fenced else 0)
    for op in streams + fences:  # no table: no knobs, null kernel fields, no fixed choice
        assert op["knobs"] == {} and op["fixed"] == {}
        assert set(op["kernel"].values()) == {None}
    # The command streams and the fence call no CORE function: recorded as no calls, not as unrecorded.
    assert report["kernel_calls"] == {"calls": [], "unrecorded_operator_ids": []}
    assert all(isinstance(op["macs"], int) for op in report["operators"])  # ethos-u MACs from the per-layer CSV

    # Vela's constants (command streams, weights) are addressed in place: nothing streams, the pool is recorded.
    assert plan["schedule"]["source"] == "none" and plan["schedule"]["units"] == []
    assert ("pool" in plan["schedule"]) is pool
    assert {t["residency"] for t in plan["tensors"]} == {"direct"}
    assert {t["memory"] for t in plan["tensors"]} == {"DDR"}
    if pool:
        assert all("cannot be staged" in warning for warning in result.warnings)
        assert report["stream_pool"]["layout"] == [] and report["stream_pool"]["pieces"] == []
    else:
        assert result.warnings == ()
        assert report["stream_pool"] is None

    replay = replayed(tmp_path, model_path, CORSTONE, config, plan, per_layer)
    assert replay == (json_text(plan), json_text(report))


def test_a_fenced_vela_output_on_a_platform_without_npu_lists_every_ethos_u_operator(vela_models) -> None:
    model_path, _ = vela_models[("chain", True)]
    ids = [i.id for i in stable_operator_ids(load_model(model_path)) if i.op_type == "ethos-u"]
    assert len(ids) == 3
    with pytest.raises(PlanRefusedError) as caught:
        plan_model(model_path, APOLLO, module_prefix="kws")
    refusals = caught.value.refusals
    assert [r.id for r in refusals] == ids and {r.rule for r in refusals} == {"platform.npu"}
    assert all(i in caught.value.message for i in ids)
    assert "ETHOS_U_STREAM_SPLIT" not in caught.value.message  # the fences themselves are admitted
    assert "NPU" in caught.value.hint


# --- synthetic networks on the CPU, with constants that stream -----------------------------------------------------


@pytest.fixture(scope="module")
def cpu_models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("aot_cpu")
    models = {}
    for name in ("chain", "residual"):
        source = _source(name, folder)
        fenced = folder / f"{name}_fenced.tflite"
        rewrite_model_with_fences(source, FENCES[name]).save(fenced)
        models[name] = source
        models[f"{name}-fenced"] = fenced
    return models


@pytest.mark.parametrize("config", [AotConfig(), STREAM_ALL, SMALL_POOL], ids=["no-pool", "pool", "small-pool"])
@pytest.mark.parametrize("name", ["chain", "chain-fenced", "residual", "residual-fenced"])
def test_cpu_models_plan_with_a_schedule_and_replay_byte_identical(cpu_models, tmp_path, name, config) -> None:
    model_path = cpu_models[name]
    result = make_plan(model_path, APOLLO, config, module_prefix="net")
    plan, report = result.plan, result.report
    check_documents(model_path, plan, report)
    schedule = plan["schedule"]
    streamed = [t for t in plan["tensors"] if t["residency"] == "stream"]
    if config.stream_pool is None:
        assert schedule == {"source": "none", "units": []} and streamed == []
    else:
        assert schedule["source"] == "plan" and schedule["units"]
        assert schedule["pool"] == {"memory": "DTCM", "bytes": config.stream_pool.bytes, "alignment": 16}
        named = [name for unit in schedule["units"] for name in unit["tensors"]]
        assert sorted(named) == sorted(t["id"] for t in streamed)
        for unit in schedule["units"]:
            assert unit["engine"] == "cpu" and unit["source_memory"] == "MRAM"
            assert unit["pool_offset"] % 16 == 0 and unit["pool_offset"] + unit["bytes"] <= config.stream_pool.bytes
            assert isinstance(unit["wait_before"], int) and isinstance(unit["last_reader"], int)
        for tensor in streamed:
            assert tensor["requested"] == "stream" and tensor["unit"] is not None and tensor["pool_offset"] is not None
        layout = report["stream_pool"]["layout"]
        assert [span["unit"] for span in layout] == [unit["id"] for unit in schedule["units"]]
        pieces = report["stream_pool"]["pieces"]
        assert sum(p["bytes"] for p in pieces) == sum(u["bytes"] for u in schedule["units"])
        assert all(p["offset"] // 4096 == (p["offset"] + p["bytes"] - 1) // 4096 for p in pieces)  # DMA boundary
    fences = [op for op in plan["operators"] if op["op_type"] == "ETHOS_U_STREAM_SPLIT"]
    assert all(op["knobs"] == {} and set(op["kernel"].values()) == {None} for op in fences)
    assert all(op["id"] not in report["kernel_calls"]["unrecorded_operator_ids"] for op in fences)
    assert replayed(tmp_path, model_path, APOLLO, config, plan) == (json_text(plan), json_text(report))


def test_a_plan_reads_back_after_only_its_schedule_is_edited(cpu_models, tmp_path) -> None:
    model_path = cpu_models["chain"]
    plan = make_plan(model_path, APOLLO, STREAM_ALL, module_prefix="net").plan
    units = plan["schedule"]["units"]
    assert len(units) >= 2
    edited = json.loads(json_text(plan))
    dropped = edited["schedule"]["units"].pop()  # stream one unit fewer ...
    for unit in edited["schedule"]["units"]:  # ... and state only the input fields of the others
        for derived in ("bytes", "source_memory", "source_offset", "wait_before", "last_reader"):
            unit.pop(derived)
    path = tmp_path / "edited_plan.json"
    path.write_text(json_text(edited), encoding="utf-8")
    result = make_plan(model_path, APOLLO, STREAM_ALL.with_plan(path), module_prefix="net")
    assert result.plan["schedule"]["units"] == units[:-1]
    direct = {t["id"]: t for t in result.plan["tensors"]}
    for name in dropped["tensors"]:
        assert direct[name]["residency"] == "direct" and direct[name]["unit"] is None
        assert any(name in warning and "no schedule unit names it" in warning for warning in result.warnings)
    validate_plan_document(result.plan)


def test_an_input_schedule_that_breaks_a_rule_is_rejected_naming_the_unit(cpu_models, tmp_path) -> None:
    model_path = cpu_models["chain"]
    plan = make_plan(model_path, APOLLO, STREAM_ALL, module_prefix="net").plan
    for change, fragment in (
        (lambda u: u[0].update(pool_offset=8), "unit 0"),
        (lambda u: u[0].update(engine="dma"), "dma"),
        (lambda u: u[1].update(tensors=u[0]["tensors"]), "is in unit 0 and unit 1"),
        (lambda u: u[0].update(wait_before=3), "unit 0 states wait_before 3"),
    ):
        edited = json.loads(json_text(plan))
        change(edited["schedule"]["units"])
        path = tmp_path / "edited_plan.json"
        path.write_text(json_text(edited), encoding="utf-8")
        with pytest.raises(ScheduleError) as caught:
            make_plan(model_path, APOLLO, STREAM_ALL.with_plan(path), module_prefix="net")
        assert fragment in str(caught.value) or fragment in " ".join(map(str, caught.value.violations))


def test_an_input_plan_bound_to_another_model_is_rejected_naming_both_hashes(cpu_models, tmp_path) -> None:
    chain, residual = cpu_models["chain"], cpu_models["residual"]
    path = tmp_path / "chain_plan.json"
    path.write_text(json_text(plan_model(chain, APOLLO, module_prefix="net")[0]), encoding="utf-8")
    with pytest.raises(PlanMismatchError) as caught:
        plan_model(residual, APOLLO, AotConfig(plan=path), module_prefix="net")
    assert model_sha256(chain) in caught.value.message and model_sha256(residual) in caught.value.message
    with pytest.raises(PlanMismatchError, match=r"platform\.name"):
        plan_model(chain, CORSTONE, AotConfig(plan=path), module_prefix="net")


# --- knobs, rules and residency -------------------------------------------------------------------------------------


def _knob(plan: dict, op_type: str, knob: str = "kernel") -> list[dict]:
    return [op["knobs"][knob] for op in plan["operators"] if op["op_type"] == op_type]


def test_operator_rules_win_in_order_and_are_recorded_as_the_source_rule(cpu_models) -> None:
    model_path = cpu_models["chain"]
    ids = stable_operator_ids(load_model(model_path))
    conv = [i for i in ids if i.op_type == "CONV_2D"]
    config = AotConfig(
        goal="latency",
        knobs={"kernel": "specialized"},
        operators=[
            {"type": "conv_2d", "knobs": {"kernel": "generic"}},
            {"id": conv[1].id, "knobs": {"kernel": "specialized"}},
            {"index": conv[2].index, "knobs": {"kernel": "auto"}},
            {"id": "0:no-such-operator", "knobs": {"kernel": "generic"}},
        ],
    )
    result = make_plan(model_path, APOLLO, config, module_prefix="net")
    by_id = {op["id"]: op for op in result.plan["operators"]}
    first = by_id[conv[0].id]["knobs"]["kernel"]
    assert first["requested"] == "generic" and first["value"] == "generic" and first["resolved_by"] == "explicit"
    assert first["source"] == {"kind": "operator", "rule": {"position": 0, "type": "conv_2d", "id": None}}
    second = by_id[conv[1].id]["knobs"]["kernel"]
    assert second["source"]["rule"] == {"position": 1, "type": None, "id": conv[1].id}
    third = by_id[conv[2].id]["knobs"]["kernel"]
    assert third["requested"] == "auto" and third["resolved_by"] == "auto_table"
    assert third["source"] == {"kind": "operator", "rule": {"position": 2, "type": None, "id": None}}
    depthwise = _knob(result.plan, "DEPTHWISE_CONV_2D")
    assert depthwise and all(k["source"] == {"kind": "model", "rule": None} for k in depthwise)
    assert any("operators.3" in warning and "matches no operator" in warning for warning in result.warnings)
    # A rule by node id selects the same operator as its stable id.
    node_rule = AotConfig(operators=[{"id": conv[1].node_id, "knobs": {"kernel": "generic"}}])
    chosen = make_plan(model_path, APOLLO, node_rule, module_prefix="net").plan["operators"][conv[1].index]
    assert chosen["knobs"]["kernel"]["value"] == "generic"


def test_the_auto_table_follows_the_goal(cpu_models) -> None:
    model_path = cpu_models["chain"]
    for goal, value in (("size", "generic"), ("balanced", "specialized"), ("latency", "specialized")):
        plan = plan_model(model_path, APOLLO, AotConfig(goal=goal), module_prefix="net")[0]
        assert plan["optimization"] == {"goal": goal, "allow_approximate": False, "knobs": {}}
        knobs = _knob(plan, "CONV_2D")
        assert knobs and {(k["value"], k["requested"], k["resolved_by"]) for k in knobs} == {
            (value, "auto", "auto_table")
        }
        assert all(k["source"] == {"kind": "default", "rule": None} for k in knobs)


def test_knob_configuration_errors_name_the_rule(cpu_models) -> None:
    model_path = cpu_models["chain"]
    for config, fragment in (
        (AotConfig(operators=[{"type": "CONV_2D", "knobs": {"speed": "max"}}]), "operators.0: unknown knob 'speed'"),
        (AotConfig(knobs={"kernel": "fastest"}), "optimization.knobs: knob kernel value 'fastest'"),
        (AotConfig(knobs={"accumulation": "fast"}), "approximate"),
        (AotConfig(stream_pool={"memory": "L2", "bytes": 1024}), "memory 'L2' is not a memory of apollo510_evb"),
        (AotConfig(stream_pool={"memory": "DTCM", "bytes": 1 << 20}), "do not fit DTCM"),
        (AotConfig(tensors=[{"pattern": "*", "residency": "pin"}]), "no rule gives its destination_memory"),
    ):
        with pytest.raises(ConfigError, match=fragment):
            plan_model(model_path, APOLLO, config, module_prefix="net")
    allowed = AotConfig(allow_approximate=True, knobs={"accumulation": "fast"})
    plan_model(model_path, APOLLO, allowed, module_prefix="net")  # int8 layers: the knob applies nowhere


def test_residency_rules_merge_and_pin_records_the_destination(cpu_models, tmp_path) -> None:
    model_path = cpu_models["chain"]
    plan = plan_model(model_path, APOLLO, AotConfig(), module_prefix="net")[0]
    first, second = plan["tensors"][0]["id"], plan["tensors"][1]["id"]
    config = AotConfig(
        tensors=[
            {"pattern": "*", "residency": "stream"},
            {"id": first, "residency": "pin", "destination_memory": "dtcm"},
            {"id": second, "memory": "psram"},
        ],
        stream_pool={"memory": "DTCM", "bytes": 65536},
    )
    result = make_plan(model_path, APOLLO, config, module_prefix="net")
    tensors = {t["id"]: t for t in result.plan["tensors"]}
    assert tensors[first]["requested"] == "pin" and tensors[first]["residency"] == "pin"
    assert tensors[first]["destination_memory"] == "DTCM" and tensors[first]["unit"] is None
    assert tensors[second]["memory"] == "PSRAM" and tensors[second]["requested"] == "stream"
    pinned = [c for op in result.report["operators"] for c in op["constants"] if c["id"] == first]
    assert pinned and all(c["reason"] == "pinned" and not c["stageable"] for c in pinned)
    # PSRAM -> DTCM offers cpu: the constant stored in PSRAM streams from there, in a unit of its own memory.
    unit = next(u for u in result.plan["schedule"]["units"] if second in u["tensors"])
    assert unit["source_memory"] == "PSRAM"
    assert replayed(tmp_path, model_path, APOLLO, config, result.plan) == (
        json_text(result.plan),
        json_text(result.report),
    )


def test_constant_ids_number_repeats_and_name_unnamed_tensors() -> None:
    assert constant_ids([("w", 1), ("w", 2), ("", 7), ("w", 9), ("w#1", 10)]) == ["w", "w#1", "#7", "w#2", "w#1#1"]


# --- refusals --------------------------------------------------------------------------------------------------------


def _integer_div() -> object:
    builder = GraphBuilder()
    x = builder.activation("x", (1, 4), "int32")
    y = builder.constant("y", np.full((1, 4), 3, dtype=np.int32))
    out = builder.activation("quotient", (1, 4), "int32")
    builder.operator(schema.BuiltinOperator.DIV, [x, y], [out], schema.DivOptionsT())
    return builder.finish([x], [out], description="integer DIV", name="<integer div>")


def test_integer_div_and_neg_are_refused_by_their_contracts() -> None:
    with pytest.raises(PlanRefusedError) as caught:
        plan_model(_integer_div(), APOLLO, module_prefix="net")
    assert [(r.id, r.rule) for r in caught.value.refusals] == [("0:quotient", "div.integer")]
    assert "0:quotient" in caught.value.message and "integer DIV is not supported" in caught.value.message
    refusals = operator_refusals(single_op_model("neg", "int32", [(1, 4)]), get_platform(APOLLO))
    assert [(r.id, r.rule) for r in refusals] == [("0:neg", "neg.integer")]


def test_fp16_is_refused_on_a_platform_without_fp16(tmp_path) -> None:
    div16 = single_op_model("div", "float16", [(1, 8), (1, 8)])
    plan, _ = plan_model(div16, APOLLO, module_prefix="net")  # M55 with FP16: admitted, planned without a table
    assert plan["operators"][0]["knobs"] == {} and plan["operators"][0]["kernel"]["entry"] is None
    with pytest.raises(PlanRefusedError) as caught:
        plan_model(div16, M4, module_prefix="net")
    assert [(r.id, r.rule) for r in caught.value.refusals] == [("0:div", "div.fp16-target")]
    assert "test_cortex_m4" in caught.value.message and "FP16" in caught.value.hint
    # FP32 runs anywhere; the same platform read from a platforms file refuses FP16 the same way.
    plan_model(single_op_model("div", "float32", [(1, 8), (1, 8)]), M4, module_prefix="net")
    from heliabuild.aot.platforms import load_platforms, platforms_document

    table = tmp_path / "platforms.json"
    table.write_text(json.dumps(platforms_document([M4])), encoding="utf-8")
    loaded = get_platform("test_cortex_m4", load_platforms(table))
    assert loaded == M4
    with pytest.raises(PlanRefusedError):
        plan_model(single_op_model("neg", "float16", [(2, 3)]), loaded, module_prefix="net")


def test_every_refused_operator_is_listed_in_one_error() -> None:
    builder = GraphBuilder()
    x = builder.activation("x", (1, 4), "int32")
    q = builder.activation("q", (1, 4), "int32")
    n = builder.activation("n", (1, 4), "int32")
    c = builder.activation("c", (1, 4), "bool")
    builder.operator(schema.BuiltinOperator.DIV, [x, x], [q], schema.DivOptionsT())
    builder.operator(schema.BuiltinOperator.NEG, [q], [n], schema.NegOptionsT())
    builder.operator(schema.BuiltinOperator.EQUAL, [n, x], [c], schema.EqualOptionsT())  # INT32: admitted
    model = builder.finish([x], [c], description="refusals", name="<refusals>")
    with pytest.raises(PlanRefusedError) as caught:
        plan_model(model, APOLLO, module_prefix="net")
    assert [(r.id, r.rule) for r in caught.value.refusals] == [("0:q", "div.integer"), ("0:n", "neg.integer")]
    assert "2 operators cannot be planned" in caught.value.message


def _fenced_chain(tmp_path: Path) -> Path:
    path = tmp_path / "chain_fenced.tflite"
    rewrite_model_with_fences(chain_network(0), [3]).save(path)
    return path


def _fence_pair(model) -> tuple[schema.TensorT, schema.TensorT]:
    graph = model.subgraphs[0]
    fence = next(op for op in graph.operators if model.operator_codes[op.opcodeIndex].customCode)
    return graph.tensors[fence.inputs[0]], graph.tensors[fence.outputs[0]]


@pytest.mark.parametrize(
    ("tamper", "rule"),
    [
        (lambda m, given, made: setattr(made, "shape", np.array([1, 1, 1, 1], dtype=np.int32)), "fence.same-shape"),
        (lambda m, given, made: setattr(made, "type", schema.TensorType.INT16), "fence.same-dtype"),
        (lambda m, given, made: setattr(made.quantization, "zeroPoint", np.array([5])), "fence.same-quantization"),
        (lambda m, given, made: setattr(given, "type", schema.TensorType.INT4), "fence.dtype"),
        (lambda m, given, made: setattr(m.operator_codes[-1], "version", 2), "fence.opcode-version"),
    ],
    ids=["shape", "dtype", "quantization", "int4", "version"],
)
def test_fences_are_checked_against_contract_version_1(tmp_path, tamper, rule) -> None:
    model = load_model(_fenced_chain(tmp_path))
    plan_model(model, APOLLO, module_prefix="net")  # as written, the fence is admitted
    given, made = _fence_pair(model)
    tamper(model, given, made)
    refusals = operator_refusals(model, get_platform(APOLLO))
    assert [r.rule for r in refusals] == [rule]
    assert refusals[0].op_type == "ETHOS_U_STREAM_SPLIT" and refusals[0].id.endswith("/stream_split")


def test_a_fence_on_a_model_output_needs_per_tensor_quantization(tmp_path) -> None:
    model = load_model(_fenced_chain(tmp_path))
    given, made = _fence_pair(model)
    graph = model.subgraphs[0]
    graph.outputs = [*list(graph.outputs), list(graph.tensors).index(made)]
    for tensor in (given, made):
        tensor.quantization.scale = np.array([0.5, 0.25], dtype=np.float32)
        tensor.quantization.zeroPoint = np.array([0, 0])
        tensor.quantization.quantizedDimension = 3
    assert [r.rule for r in operator_refusals(model, get_platform(APOLLO))] == ["fence.per-tensor-io"]


def test_a_constant_a_command_stream_addresses_in_place_is_not_pinned(vela_models) -> None:
    model_path, _ = vela_models[("chain", False)]
    config = AotConfig(tensors=[{"pattern": "*", "residency": "pin", "destination_memory": "SRAM"}])
    result = make_plan(model_path, CORSTONE, config, module_prefix="net")
    assert {(t["requested"], t["residency"], t["destination_memory"]) for t in result.plan["tensors"]} == {
        ("pin", "direct", None)
    }
    assert len(result.warnings) == len(result.plan["tensors"])
    assert all("addresses it in place; it stays direct" in warning for warning in result.warnings)


def test_constants_that_do_not_fit_their_memory_are_refused() -> None:
    model = large_model(0)  # about 50 MB of weights; apollo510_evb stores constants in its 4 MB MRAM by default
    with pytest.raises(PlanInputError, match=r"placed in MRAM need \d+ bytes, but apollo510_evb's MRAM holds 4128768"):
        plan_model(model, APOLLO, AotConfig(), module_prefix="big")
    in_psram = AotConfig(tensors=[{"pattern": "*", "memory": "PSRAM"}])
    plan = plan_model(model, APOLLO, in_psram, module_prefix="big")[0]
    assert {tensor["memory"] for tensor in plan["tensors"]} == {"PSRAM"}


def test_the_shared_models_are_among_the_cases() -> None:
    """The cases above include the real models only where they are present: without them this test is the
    skip (a failure under CI) that says so."""
    require(shared_models_present(), f"real models not available: {SHARED_MODELS} is absent")
