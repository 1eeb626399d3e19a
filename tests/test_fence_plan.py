"""Fence plans: JSON form, schema, and binding to the model they were cut for."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from helpers.checks import assert_not_written, assert_one_line_error

from heliabuild.errors import FenceBindingError, FenceError, SchemaError
from heliabuild.fence import (
    Fence,
    FenceConfig,
    FencePlan,
    check_plan_binding,
    fence_config_for,
    fence_model,
    load_plan,
    rewrite_model_with_fences,
    sidecar_path_for,
)
from heliabuild.files import json_text
from heliabuild.model import load_model, operator_type, save_model, tensor_name
from heliabuild.model.graph import indices
from heliabuild.schema_files import validate


def identity_fence(model, after_op: int, segment_index: int | None = None) -> Fence:
    subgraph = model.subgraphs[0]
    op = subgraph.operators[after_op]
    return Fence(
        after_op=after_op,
        output_tensor_name=tensor_name(subgraph.tensors[indices(op.outputs)[0]]),
        opcode=operator_type(model.operator_codes[op.opcodeIndex]),
        segment_index=segment_index,
    )


@pytest.fixture(scope="module")
def resnet(residual_file: Path):
    return load_model(residual_file)


@pytest.fixture(scope="module")
def bound_plan(resnet, residual_file: Path) -> FencePlan:
    """A plan cut for ResNet with full identity: sha, count and per-fence names."""
    return FencePlan(
        fences=tuple(identity_fence(resnet, op, number) for number, op in enumerate([2, 7, 11])),
        operator_count=16,
        subgraph=0,
        model_sha256=hashlib.sha256(residual_file.read_bytes()).hexdigest(),
    )


def write_plan(path: Path, plan: FencePlan | dict) -> Path:
    document = plan.to_json() if isinstance(plan, FencePlan) else plan
    path.write_text(json_text(document), encoding="utf-8")
    return path


# ---------------------------------------------------------------- JSON form


def test_plan_json_round_trip_and_schema(bound_plan: FencePlan) -> None:
    document = bound_plan.to_json()
    validate(document, "fence-plan", "plan")
    assert document["contract_version"] == 1
    assert document["operator_count"] == 16
    assert document["subgraph"] == 0
    assert document["fences"][1]["after_op"] == 7
    assert document["fences"][1]["opcode"] == "ADD"
    assert document["fences"][1]["segment_index"] == 1
    assert FencePlan.from_json(json.loads(json.dumps(document))) == bound_plan


def test_minimal_plan_round_trip() -> None:
    plan = FencePlan(fences=(Fence(3), Fence(5)), operator_count=9)
    document = plan.to_json()
    validate(document, "fence-plan", "plan")
    assert document["model_sha256"] is None
    assert document["fences"][0] == {"after_op": 3, "output_tensor_name": None, "opcode": None, "segment_index": None}
    assert FencePlan.from_json(document) == plan
    assert FencePlan.from_json({"contract_version": 1, "subgraph": 0, "operator_count": 9, "fences": [{"after_op": 3}]})
    assert Fence.from_json({"after_op": 4}) == Fence(4)


@pytest.mark.parametrize(
    ("edit", "field"),
    [
        (lambda d: d.update(contract_version=2), "contract_version"),
        (lambda d: d.update(model_sha256="abc"), "model_sha256"),
        (lambda d: d.pop("operator_count"), "operator_count"),
        (lambda d: d.update(extra=1), "(top level): unknown key 'extra' (accepts budget_cycles, contract_version,"),
        (lambda d: d["fences"][0].pop("after_op"), "fences/0"),
        (lambda d: d["fences"][0].update(after_op="3"), "fences/0/after_op"),
        (lambda d: d["fences"][0].update(segment_index=-1), "fences/0/segment_index"),
    ],
)
def test_invalid_plan_documents_are_schema_errors(edit, field: str) -> None:
    document = FencePlan(fences=(Fence(3),), operator_count=9).to_json()
    edit(document)
    with pytest.raises(SchemaError) as caught:
        FencePlan.from_json(document, "my_plan.json")
    assert caught.value.message.startswith("my_plan.json: ")
    assert field in caught.value.message
    # an unknown key is named with the keys its object accepts (heliabuild.schema_files.check_keys)
    assert "(schema fence-plan)" in caught.value.message or "unknown key" in caught.value.message


def test_load_plan_reads_and_validates(tmp_path: Path, bound_plan: FencePlan) -> None:
    assert load_plan(write_plan(tmp_path / "p.json", bound_plan)) == bound_plan
    with pytest.raises(FenceError, match="cannot read the fence plan"):
        load_plan(tmp_path / "missing.json")
    (tmp_path / "bad.json").write_text("{not json", encoding="utf-8")
    with pytest.raises(FenceError, match="the fence plan is not valid JSON"):
        load_plan(tmp_path / "bad.json")


def test_fence_config_for_keeps_positions_only(bound_plan: FencePlan) -> None:
    config = fence_config_for(bound_plan)
    assert config == FenceConfig(after_ops=(2, 7, 11))
    assert bound_plan.after_ops == [2, 7, 11]
    assert FenceConfig.of([2, 7, 11]) == config


# ---------------------------------------------------------------- binding


def test_bound_plan_applies(resnet, bound_plan: FencePlan, residual_file: Path) -> None:
    check_plan_binding(resnet, bound_plan)
    check_plan_binding(str(residual_file), bound_plan)
    result = fence_model(residual_file, bound_plan)
    assert result.boundary_after_ops == [2, 7, 11]
    assert result.fenced_bytes == rewrite_model_with_fences(residual_file, fence_config_for(bound_plan)).fenced_bytes


def with_changes(plan: FencePlan, fence: int | None = None, **changes) -> FencePlan:
    if fence is None:
        return FencePlan(**{**plan.__dict__, **changes})
    fences = list(plan.fences)
    fences[fence] = Fence(**{**fences[fence].__dict__, **changes})
    return FencePlan(**{**plan.__dict__, "fences": tuple(fences)})


def test_fence_model_does_not_mutate_the_callers_model(resnet, bound_plan: FencePlan) -> None:
    from heliabuild.model import serialize

    before = bytes(serialize(resnet))
    result = fence_model(resnet, bound_plan)
    assert result.model is not resnet
    assert bytes(serialize(resnet)) == before


def test_wrong_model_sha256_names_both_values(resnet, bound_plan: FencePlan) -> None:
    plan = with_changes(bound_plan, model_sha256="0" * 64)
    with pytest.raises(FenceBindingError) as caught:
        check_plan_binding(resnet, plan)
    message = caught.value.message
    assert "model_sha256" in message
    assert "0" * 64 in message
    assert bound_plan.model_sha256 in message
    assert caught.value.hint


def test_wrong_operator_count_names_both_values(resnet, bound_plan: FencePlan) -> None:
    plan = with_changes(bound_plan, model_sha256=None, operator_count=13)
    with pytest.raises(FenceBindingError, match=r"operator_count is 13, but the model has 16"):
        check_plan_binding(resnet, plan)


def test_subgraph_other_than_zero_is_rejected(resnet, bound_plan: FencePlan) -> None:
    with pytest.raises(FenceBindingError, match=r"subgraph is 1, but the model has 0"):
        check_plan_binding(resnet, with_changes(bound_plan, subgraph=1))


def test_output_tensor_name_mismatch_names_both_values(resnet, bound_plan: FencePlan) -> None:
    plan = with_changes(bound_plan, fence=1, output_tensor_name="model/other")
    expected = bound_plan.fences[1].output_tensor_name
    with pytest.raises(FenceBindingError) as caught:
        check_plan_binding(resnet, plan)
    message = caught.value.message
    assert "fences[1].output_tensor_name" in message
    assert "'model/other'" in message
    assert repr(expected) in message
    assert "operator 7" in message


def test_opcode_mismatch_names_both_values(resnet, bound_plan: FencePlan) -> None:
    plan = with_changes(bound_plan, fence=2, opcode="CONV_2D")
    with pytest.raises(FenceBindingError, match=r"fences\[2\]\.opcode is 'CONV_2D', but the model has 'ADD'"):
        check_plan_binding(resnet, plan)


@pytest.mark.parametrize("after_op", [16, 40])
def test_after_op_beyond_the_last_operator(resnet, bound_plan: FencePlan, after_op: int) -> None:
    plan = with_changes(bound_plan, fence=0, after_op=after_op, output_tensor_name=None, opcode=None)
    with pytest.raises(FenceBindingError) as caught:
        check_plan_binding(resnet, plan)
    message = caught.value.message
    assert "fences[0].after_op" in message
    assert str(after_op) in message
    assert "(15)" in message


def test_negative_after_op_is_a_binding_error(resnet, bound_plan: FencePlan) -> None:
    plan = with_changes(bound_plan, fence=0, after_op=-2, output_tensor_name=None, opcode=None)
    with pytest.raises(FenceBindingError, match=r"fences\[0\]\.after_op.*-2"):
        check_plan_binding(resnet, plan)


def test_after_op_on_the_last_operator_binds_but_cannot_be_fenced(resnet, bound_plan: FencePlan) -> None:
    plan = with_changes(bound_plan, fence=2, after_op=15, output_tensor_name=None, opcode=None)
    check_plan_binding(resnet, plan)
    with pytest.raises(FenceError, match="out of range"):
        fence_model(resnet, plan)


def test_plan_without_sha_is_bound_by_count_and_names_only(residual_file: Path, bound_plan: FencePlan) -> None:
    # Same operators and names, other weights: another model as far as the hash goes.
    other = load_model(residual_file)
    weights = other.subgraphs[0].tensors[indices(other.subgraphs[0].operators[0].inputs)[1]]
    other.buffers[weights.buffer].data = other.buffers[weights.buffer].data.copy()
    other.buffers[weights.buffer].data[0] ^= 1
    other.source_sha256 = None
    with pytest.raises(FenceBindingError, match="model_sha256"):
        check_plan_binding(other, bound_plan)
    unhashed = with_changes(bound_plan, model_sha256=None)
    check_plan_binding(other, unhashed)
    assert fence_model(other, unhashed).boundary_after_ops == [2, 7, 11]
    with pytest.raises(FenceBindingError, match="output_tensor_name"):
        check_plan_binding(other, with_changes(unhashed, fence=0, output_tensor_name="renamed"))


def test_plan_for_another_model_is_rejected(chain_file: Path, bound_plan: FencePlan) -> None:
    with pytest.raises(FenceBindingError):
        fence_model(chain_file, bound_plan)
    count = len(load_model(chain_file).subgraphs[0].operators)
    with pytest.raises(FenceBindingError, match=f"operator_count is 16, but the model has {count}"):
        fence_model(chain_file, with_changes(bound_plan, model_sha256=None))


def test_unbound_positions_apply_to_any_model(chain_file: Path, bound_plan: FencePlan) -> None:
    plan = FencePlan(fences=(Fence(5), Fence(2)), operator_count=16, model_sha256=bound_plan.model_sha256)
    with pytest.raises(FenceBindingError):
        fence_model(chain_file, plan)
    result = rewrite_model_with_fences(chain_file, fence_config_for(plan))
    assert result.boundary_after_ops == [2, 5]


def test_plan_bound_to_another_model_writes_nothing(
    tmp_path: Path, cli, chain_file: Path, residual_file: Path, bound_plan: FencePlan
) -> None:
    plan_path = write_plan(tmp_path / "plan.json", bound_plan)
    out = tmp_path / "out" / "kws_fenced.tflite"
    line = assert_one_line_error(cli("fence", chain_file, "-o", out, "--plan", plan_path), "model_sha256")
    assert "re-plan" in line
    assert_not_written(out, sidecar_path_for(out))

    ok = tmp_path / "ok" / "resnet_fenced.tflite"
    result = cli("fence", residual_file, "-o", ok, "--plan", plan_path)
    assert result.code == 0, result.err
    assert ok.exists() and sidecar_path_for(ok).exists()


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"fence": 0, "opcode": "SOFTMAX"}, "opcode"),
        ({"fence": 1, "output_tensor_name": "x"}, "output_tensor_name"),
        ({"operator_count": 17, "model_sha256": None}, "operator_count"),
        ({"subgraph": 2}, "subgraph"),
    ],
)
def test_each_binding_failure_writes_nothing(
    tmp_path: Path, cli, residual_file: Path, bound_plan: FencePlan, change: dict, field: str
) -> None:
    change = dict(change)
    fence = change.pop("fence", None)
    plan_path = write_plan(tmp_path / "plan.json", with_changes(bound_plan, fence, **change))
    out = tmp_path / "fenced.tflite"
    assert_one_line_error(cli("fence", residual_file, "-o", out, "--plan", plan_path), field)
    assert_not_written(out, sidecar_path_for(out))


def test_invalid_plan_file_writes_nothing(tmp_path: Path, cli, residual_file: Path) -> None:
    plan_path = write_plan(tmp_path / "plan.json", {"contract_version": 1, "subgraph": 0, "fences": []})
    out = tmp_path / "fenced.tflite"
    assert_one_line_error(cli("fence", residual_file, "-o", out, "--plan", plan_path), "plan.json", "operator_count")
    assert_not_written(out, sidecar_path_for(out))


def test_plan_with_a_model_saved_elsewhere_binds_by_file_hash(tmp_path: Path, resnet) -> None:
    # A model saved by heliabuild has its own bytes and hash; a plan cut for it binds to it.
    path = tmp_path / "resaved.tflite"
    save_model(resnet, path)
    plan = FencePlan(
        fences=(identity_fence(resnet, 3),),
        operator_count=16,
        model_sha256=hashlib.sha256(path.read_bytes()).hexdigest(),
    )
    assert fence_model(path, plan).source_sha256 == plan.model_sha256
    if path.read_bytes() != Path(resnet.name).read_bytes():  # the real ResNet: re-saving changes its bytes
        with pytest.raises(FenceBindingError):
            fence_model(resnet, plan)
