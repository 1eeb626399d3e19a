"""Stripping fences restores the source; verification finds every kind of tampering."""

from __future__ import annotations

import dataclasses
import hashlib
import json
from pathlib import Path

import pytest
from ai_edge_litert import schema_py_generated as schema
from helpers.tflite import OP, Net, chain_model, fence_positions, op_types, opcode

from heliabuild.errors import FenceError, SchemaError
from heliabuild.fence import (
    FenceVerificationError,
    load_sidecar,
    rewrite_model_with_fences,
    sidecar_path_for,
    strip_fences,
    verify_fenced_model,
)
from heliabuild.files import json_text
from heliabuild.model import load_model, model_sha256, save_model, serialize
from heliabuild.model.compare import differences
from heliabuild.model.graph import indices
from heliabuild.synth import chain_network, int8_network, residual_network


@pytest.fixture
def fenced_resnet(tmp_path: Path, residual_file: Path) -> tuple[Path, Path]:
    """ResNet fenced after 2, 5 and 9 (two live tensors each), saved with its sidecar."""
    out = tmp_path / "resnet_fenced.tflite"
    sidecar = rewrite_model_with_fences(residual_file, [2, 5, 9]).save(out)
    return out, sidecar


def edit_model(path: Path, edit, name: str = "edited.tflite") -> Path:
    model = load_model(path)
    edit(model)
    target = path.with_name(name)
    save_model(model, target)
    return target


def edit_sidecar(path: Path, edit) -> Path:
    document = json.loads(path.read_text(encoding="utf-8"))
    edit(document)
    target = path.with_name("edited.fenced_boundaries.json")
    target.write_text(json_text(document), encoding="utf-8")
    return target


# ---------------------------------------------------------------- strip


def test_strip_of_fenced_shared_model_is_the_source(shared_model_path: Path) -> None:
    expected = bytes(serialize(load_model(shared_model_path)))
    count = len(load_model(shared_model_path).subgraphs[0].operators)
    for after_ops in ([0], [2, 5, 9], list(range(count - 1))):
        fenced = rewrite_model_with_fences(shared_model_path, after_ops)
        assert bytes(serialize(strip_fences(fenced.model))) == expected
        assert bytes(serialize(strip_fences(bytes(fenced.fenced_bytes)))) == expected


@pytest.mark.parametrize(
    ("build", "after_ops"),
    [
        (lambda: chain_network(0), [0, 3, 7]),
        (lambda: residual_network(1), [1, 2, 5, 6, 9, 14]),
        (lambda: int8_network(4), [0, 1]),
        (lambda: int8_network(11, depth=5, residual=True), [2, 4]),
    ],
)
def test_strip_of_fenced_synthetic_model_is_the_source(build, after_ops: list[int]) -> None:
    model = build()
    expected = bytes(serialize(model))
    fenced = rewrite_model_with_fences(model, after_ops)
    assert bytes(serialize(strip_fences(fenced.fenced_bytes))) == expected


def test_strip_from_a_file_and_of_an_unfenced_model(tmp_path: Path, fenced_resnet, residual_file: Path) -> None:
    out, _ = fenced_resnet
    stripped = strip_fences(out)
    assert FENCE_FREE(stripped)
    assert bytes(serialize(stripped)) == bytes(serialize(load_model(residual_file)))
    unfenced = load_model(residual_file)
    assert bytes(serialize(strip_fences(unfenced))) == bytes(serialize(unfenced))


def FENCE_FREE(model) -> bool:
    return "ETHOS_U_STREAM_SPLIT" not in op_types(model) and all(c.customCode is None for c in model.operator_codes)


def test_strip_does_not_mutate_its_argument(residual_file: Path) -> None:
    fenced = rewrite_model_with_fences(residual_file, [2, 9]).model
    before = bytes(serialize(fenced))
    strip_fences(fenced)
    assert bytes(serialize(fenced)) == before


def test_strip_restores_intercepted_graph_outputs_and_signature_defs() -> None:
    from test_fence_rewrite import intercepted_graph_output_model

    model = intercepted_graph_output_model()
    fenced = rewrite_model_with_fences(model, [0])
    stripped = strip_fences(fenced.fenced_bytes)
    assert bytes(serialize(stripped)) == bytes(serialize(model))


def test_model_sha256_of_results_describes_their_own_bytes(residual_file: Path) -> None:
    result = rewrite_model_with_fences(residual_file, [2, 5])
    assert model_sha256(result.model) == result.boundaries.fenced_sha256
    stripped = strip_fences(result.model)
    assert model_sha256(stripped) == hashlib.sha256(bytes(serialize(stripped))).hexdigest()


def test_strip_refuses_legacy_fences() -> None:
    model = chain_model(3)
    model.operator_codes.append(opcode(32, 32, "STREAM_SPLIT"))
    with pytest.raises(FenceError) as caught:
        strip_fences(model)
    assert caught.value.hint and caught.value.hint.startswith("Regenerate")


# ---------------------------------------------------------------- verify: good outputs


def assert_good_output_verifies(tmp_path: Path, source: Path, after_ops: list[int]) -> None:
    out = tmp_path / "fenced.tflite"
    result = rewrite_model_with_fences(source, after_ops)
    sidecar = result.save(out)
    assert verify_fenced_model(out) == []
    assert verify_fenced_model(out, sidecar=sidecar) == []
    assert verify_fenced_model(out, sidecar=sidecar, source=source) == []
    assert verify_fenced_model(out.read_bytes(), sidecar=load_sidecar(sidecar), source=source) == []


def test_good_fenced_residual_model_verifies(tmp_path: Path, residual_file: Path) -> None:
    assert_good_output_verifies(tmp_path, residual_file, [1, 2, 5, 9])
    assert_good_output_verifies(tmp_path, residual_file, list(range(15)))


def test_good_fenced_chain_model_verifies(tmp_path: Path, chain_file: Path) -> None:
    assert_good_output_verifies(tmp_path, chain_file, [0, 3, 7])


def test_rewrite_result_verifies_in_memory(residual_file: Path) -> None:
    result = rewrite_model_with_fences(residual_file, [2, 5, 9])
    assert verify_fenced_model(result.model, sidecar=result.boundaries, source=residual_file) == []


def test_unfenced_model_verifies_against_itself(residual_file: Path) -> None:
    assert verify_fenced_model(residual_file, source=residual_file) == []


# ---------------------------------------------------------------- verify: tampering


def one_violation_mentioning(violations: list[str], *fragments: str) -> None:
    assert violations, "tampering went unnoticed"
    assert any(all(f in v for f in fragments) for v in violations), violations


def test_sidecar_from_another_model(tmp_path: Path, fenced_resnet, chain_file: Path) -> None:
    out, _ = fenced_resnet
    other = rewrite_model_with_fences(chain_file, [2, 5, 7]).save(tmp_path / "kws_fenced.tflite")
    one_violation_mentioning(verify_fenced_model(out, sidecar=other), "fenced_sha256")
    one_violation_mentioning(
        verify_fenced_model(out, sidecar=other, source=chain_file), "without its fences the model is not"
    )


def test_edited_boundary_after_ops(fenced_resnet) -> None:
    out, sidecar = fenced_resnet
    edited = edit_sidecar(sidecar, lambda d: d.update(boundary_after_ops=[2, 6, 9]))
    one_violation_mentioning(verify_fenced_model(out, sidecar=edited), "boundary_after_ops", "[2, 6, 9]")


def test_edited_num_segments(fenced_resnet) -> None:
    out, sidecar = fenced_resnet
    edited = edit_sidecar(sidecar, lambda d: d.update(num_segments=3))
    one_violation_mentioning(verify_fenced_model(out, sidecar=edited), "num_segments")


def test_edited_tensor_pairs(fenced_resnet) -> None:
    out, sidecar = fenced_resnet

    def swap(document: dict) -> None:
        pairs = document["segments"][1]["tensor_pairs"]
        pairs[0], pairs[1] = pairs[1], pairs[0]

    one_violation_mentioning(verify_fenced_model(out, sidecar=edit_sidecar(sidecar, swap)), "segment 1 tensor_pairs")
    renamed = edit_sidecar(sidecar, lambda d: d["segments"][0]["tensor_pairs"][0].update(output="renamed"))
    one_violation_mentioning(verify_fenced_model(out, sidecar=renamed), "segment 0 tensor_pairs", "renamed")


def test_edited_op_range(fenced_resnet) -> None:
    out, sidecar = fenced_resnet
    edited = edit_sidecar(sidecar, lambda d: d["segments"][2].update(op_range_start=5))
    one_violation_mentioning(verify_fenced_model(out, sidecar=edited), "segment 2")


def test_edited_end_tensor_name(fenced_resnet, residual_file: Path) -> None:
    out, sidecar = fenced_resnet
    edited = edit_sidecar(sidecar, lambda d: d["segments"][1].update(end_tensor_name="something"))
    one_violation_mentioning(verify_fenced_model(out, sidecar=edited, source=residual_file), "end_tensor_name")
    one_violation_mentioning(verify_fenced_model(out, sidecar=edited), "segment 1 end_tensor_name", "'something'")


def test_sidecar_for_another_subgraph(fenced_resnet) -> None:
    out, sidecar = fenced_resnet
    boundaries = dataclasses.replace(load_sidecar(sidecar), subgraph=1)
    one_violation_mentioning(verify_fenced_model(out, sidecar=boundaries), "subgraph is 1")
    with pytest.raises(SchemaError, match="subgraph"):
        verify_fenced_model(out, sidecar=edit_sidecar(sidecar, lambda d: d.update(subgraph=1)))


def test_cut_after_a_dead_output_carries_the_earlier_tensor_through_both_fences(tmp_path: Path) -> None:
    net = Net()
    x, c, a, b, y = (net.tensor(n) for n in ("x", "c", "a", "b", "y"))
    net.op(OP.ADD, [x, c], [a])
    net.op(OP.ADD, [a, c], [b])  # b is never read: after op 1 only `a` crosses
    net.op(OP.ADD, [a, c], [y])
    source = tmp_path / "dead.tflite"
    save_model(net.model([x], [y]), source)
    out = tmp_path / "fenced.tflite"
    result = rewrite_model_with_fences(source, [0, 1])
    sidecar = result.save(out)
    assert [s.end_tensor_name for s in result.segments[:2]] == ["a", "a"]
    assert verify_fenced_model(out, sidecar=sidecar, source=source) == []
    assert bytes(serialize(strip_fences(out))) == bytes(serialize(load_model(source)))


def test_wrong_fenced_sha256(fenced_resnet) -> None:
    out, sidecar = fenced_resnet
    edited = edit_sidecar(sidecar, lambda d: d.update(fenced_sha256="f" * 64))
    one_violation_mentioning(verify_fenced_model(out, sidecar=edited), "fenced_sha256", "f" * 64)


def fence_ops(model) -> list[schema.OperatorT]:
    return [model.subgraphs[0].operators[p] for p in fence_positions(model)]


def test_changed_fence_output_quantization(fenced_resnet) -> None:
    out, _ = fenced_resnet

    def edit(model) -> None:
        copy = indices(fence_ops(model)[1].outputs)[1]
        model.subgraphs[0].tensors[copy].quantization.scale[0] *= 2

    one_violation_mentioning(verify_fenced_model(edit_model(out, edit)), "pair 1", "quantization")


def test_changed_fence_output_shape_and_type(fenced_resnet) -> None:
    out, _ = fenced_resnet

    def edit(model) -> None:
        copy = model.subgraphs[0].tensors[indices(fence_ops(model)[0].outputs)[0]]
        copy.shape = copy.shape[::-1].copy()
        copy.type = schema.TensorType.UINT8

    violations = verify_fenced_model(edit_model(out, edit))
    one_violation_mentioning(violations, "shape")
    one_violation_mentioning(violations, "dtype")


def test_bypassing_tensor(fenced_resnet) -> None:
    out, _ = fenced_resnet

    def edit(model) -> None:
        fence = fence_ops(model)[0]
        original, copy = indices(fence.inputs)[1], indices(fence.outputs)[1]
        for op in model.subgraphs[0].operators[fence_positions(model)[0] + 1 :]:
            if copy in indices(op.inputs):
                op.inputs = [original if t == copy else t for t in indices(op.inputs)]
                break

    one_violation_mentioning(verify_fenced_model(edit_model(out, edit)), "bypass")


def test_dropped_pair_is_a_bypass(fenced_resnet) -> None:
    out, _ = fenced_resnet

    def edit(model) -> None:
        fence = fence_ops(model)[0]
        original, copy = indices(fence.inputs)[1], indices(fence.outputs)[1]
        fence.inputs, fence.outputs = indices(fence.inputs)[:1], indices(fence.outputs)[:1]
        for op in model.subgraphs[0].operators:
            op.inputs = [original if t == copy else t for t in indices(op.inputs)]

    one_violation_mentioning(verify_fenced_model(edit_model(out, edit)), "bypass")


def test_fence_with_builtin_options(fenced_resnet) -> None:
    out, _ = fenced_resnet

    def edit(model) -> None:
        fence = fence_ops(model)[2]
        fence.builtinOptionsType = schema.BuiltinOptions.AddOptions
        fence.builtinOptions = schema.AddOptionsT()

    one_violation_mentioning(verify_fenced_model(edit_model(out, edit)), "builtin options")


def test_fence_with_custom_options(fenced_resnet) -> None:
    out, _ = fenced_resnet
    one_violation_mentioning(
        verify_fenced_model(edit_model(out, lambda m: setattr(fence_ops(m)[0], "customOptions", [1, 2]))),
        "custom options",
    )


def test_fence_output_sharing_a_buffer(fenced_resnet) -> None:
    out, _ = fenced_resnet

    def edit(model) -> None:
        tensors = model.subgraphs[0].tensors
        fence = fence_ops(model)[0]
        tensors[indices(fence.outputs)[0]].buffer = tensors[indices(fence.inputs)[0]].buffer

    one_violation_mentioning(verify_fenced_model(edit_model(out, edit)), "new empty buffer")


def test_fence_output_on_the_sentinel_buffer(fenced_resnet) -> None:
    out, _ = fenced_resnet

    def edit(model) -> None:
        fence = fence_ops(model)[0]
        model.subgraphs[0].tensors[indices(fence.outputs)[0]].buffer = 0

    one_violation_mentioning(verify_fenced_model(edit_model(out, edit)), "new empty buffer")


def test_fence_opcode_with_the_wrong_version(fenced_resnet) -> None:
    out, _ = fenced_resnet
    edited = edit_model(out, lambda m: setattr(m.operator_codes[-1], "version", 2))
    one_violation_mentioning(verify_fenced_model(edited), "version 2")


def test_source_that_is_a_different_model(tmp_path: Path, fenced_resnet, chain_file: Path, residual_file: Path) -> None:
    out, sidecar = fenced_resnet
    violations = verify_fenced_model(out, sidecar=sidecar, source=chain_file)
    one_violation_mentioning(violations, "source_sha256")
    one_violation_mentioning(violations, "without its fences the model is not")
    # Without the sidecar the structural comparison still catches it.
    one_violation_mentioning(verify_fenced_model(out, source=chain_file), "without its fences the model is not")
    # A source with the same graph but other weights is a different model too.
    other = load_model(residual_file)
    weights = other.subgraphs[0].tensors[indices(other.subgraphs[0].operators[4].inputs)[1]]
    other.buffers[weights.buffer].data = other.buffers[weights.buffer].data.copy()
    other.buffers[weights.buffer].data[3] ^= 0x10
    other_path = tmp_path / "other.tflite"
    save_model(other, other_path)
    one_violation_mentioning(verify_fenced_model(out, source=other_path), "without its fences the model is not")


def test_missing_sidecar_file_is_an_error(fenced_resnet) -> None:
    out, _ = fenced_resnet
    with pytest.raises(FenceError, match="cannot read the sidecar"):
        verify_fenced_model(out, sidecar=out.with_name("missing.json"))


def test_sidecar_path_convention(fenced_resnet) -> None:
    out, sidecar = fenced_resnet
    assert sidecar_path_for(out) == sidecar


def test_fence_that_intercepts_the_wrong_tensor_first(tmp_path: Path) -> None:
    # A cut inside a residual block whose pairs are in the other order: the
    # first pair must be the output of the operator before the fence.
    model = residual_network(0)
    result = rewrite_model_with_fences(model, [2])
    fenced = load_model(bytes(result.fenced_bytes))
    fence = fence_ops(fenced)[0]
    fence.inputs = indices(fence.inputs)[::-1]
    fence.outputs = indices(fence.outputs)[::-1]
    one_violation_mentioning(verify_fenced_model(fenced), "first pair")


def test_verify_unknown_op_between_is_not_flagged() -> None:
    # Unrelated custom operators are not fences and are left alone.
    model = chain_model(3)
    model.operator_codes.append(opcode(OP.CUSTOM, custom="ethos-u"))
    assert verify_fenced_model(model) == []
    assert differences(strip_fences(model).root, model.root) == []


def test_strict_verification_raises_the_violations(fenced_resnet) -> None:
    out, _ = fenced_resnet
    edited = edit_model(out, lambda m: setattr(m.operator_codes[-1], "version", 2))
    found = verify_fenced_model(edited)
    with pytest.raises(FenceVerificationError) as raised:
        verify_fenced_model(edited, strict=True)
    assert raised.value.violations == found
    assert found[0] in raised.value.message
    assert verify_fenced_model(out, strict=True) == []
