"""The fence rewrite against every line of the ETHOS_U_STREAM_SPLIT wire-format table."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest
from ai_edge_litert import schema_py_generated as schema
from helpers.checks import assert_not_written, assert_one_line_error
from helpers.tflite import (
    ELEMENT_BYTES,
    FENCE_CODE,
    OP,
    Net,
    T,
    chain,
    chain_model,
    fence_positions,
    names,
    op_types,
    opcode,
    quantization,
)

from heliabuild.errors import FenceError
from heliabuild.fence import (
    CONTRACT_VERSION,
    CUSTOM_CODE,
    FenceConfig,
    RewriteResult,
    load_sidecar,
    rewrite_model_with_fences,
    sidecar_path_for,
)
from heliabuild.fence.contract import byte_length
from heliabuild.files import json_text
from heliabuild.model import Graph, load_model, save_model, serialize
from heliabuild.model.compare import differences
from heliabuild.model.graph import indices, tensor_name
from heliabuild.schema_files import validate


@pytest.fixture(scope="module")
def resnet(residual_file: Path):
    return load_model(residual_file)


@pytest.fixture(scope="module")
def kws(chain_file: Path):
    return load_model(chain_file)


def output_of(model, op_index: int) -> int:
    return indices(model.subgraphs[0].operators[op_index].outputs)[0]


def name_of(model, tensor: int) -> str:
    return tensor_name(model.subgraphs[0].tensors[tensor])


def fences_of(model) -> list[schema.OperatorT]:
    return [model.subgraphs[0].operators[p] for p in fence_positions(model)]


def written(result: RewriteResult):
    """The fenced model as a reader of the written bytes sees it."""
    return load_model(bytes(result.fenced_bytes))


def save(tmp_path: Path, model, name: str = "model.tflite") -> Path:
    path = tmp_path / name
    save_model(model, path)
    return path


# ---------------------------------------------------------------- opcode and operator fields


def test_fence_opcode_fields(kws) -> None:
    before = len(kws.operator_codes)
    fenced = written(rewrite_model_with_fences(kws, [2, 5, 7]))
    assert len(fenced.operator_codes) == before + 1
    entry = fenced.operator_codes[-1]
    assert entry.customCode == b"ETHOS_U_STREAM_SPLIT"
    assert (entry.builtinCode, entry.deprecatedBuiltinCode, entry.version) == (32, 32, 1)
    assert {op.opcodeIndex for op in fences_of(fenced)} == {before}
    assert CUSTOM_CODE == "ETHOS_U_STREAM_SPLIT" and CONTRACT_VERSION == 1


def test_fence_operator_has_no_options_on_the_wire(resnet) -> None:
    result = rewrite_model_with_fences(resnet, [2, 9])
    data = bytes(result.fenced_bytes)
    raw = schema.Model.GetRootAs(data, 0).Subgraphs(0)
    for position in fence_positions(written(result)):
        op = raw.Operators(position)
        assert op.BuiltinOptionsType() == schema.BuiltinOptions.NONE
        assert op.BuiltinOptions() is None
        assert op.CustomOptionsIsNone()
        assert op.LargeCustomOptionsSize() == 0
        assert op.IntermediatesIsNone()
        assert op.BuiltinOptions2Type() == 0


def test_chain_cut_carries_one_tensor(kws) -> None:
    for after_op in range(len(kws.subgraphs[0].operators) - 1):
        fenced = written(rewrite_model_with_fences(kws, [after_op]))
        (fence,) = fences_of(fenced)
        assert indices(fence.inputs) == [output_of(kws, after_op)]
        assert len(indices(fence.outputs)) == 1
        assert names(fenced, fence.outputs) == [name_of(kws, output_of(kws, after_op)) + "/stream_split"]


def test_resnet_cut_inside_a_block_carries_two_tensors_after_op_output_first(resnet) -> None:
    result = rewrite_model_with_fences(resnet, [2])
    fenced = written(result)
    (fence,) = fences_of(fenced)
    first, skip = output_of(resnet, 2), output_of(resnet, 0)
    assert indices(fence.inputs) == [first, skip]
    assert names(fenced, fence.outputs) == [
        name_of(resnet, first) + "/stream_split",
        name_of(resnet, skip) + "/stream_split@2",
    ]
    assert [(p.input, p.output) for p in result.segments[0].tensor_pairs] == list(
        zip(names(fenced, fence.inputs), names(fenced, fence.outputs), strict=True)
    )


@pytest.mark.parametrize("after_op", [1, 2, 4, 5, 6, 8, 9, 10])
def test_every_cut_inside_a_resnet_block_carries_the_live_set(resnet, after_op: int) -> None:
    subgraph = resnet.subgraphs[0]
    live = Graph.of(subgraph).live_after(subgraph, after_op)
    assert len(live) == 2
    (fence,) = fences_of(written(rewrite_model_with_fences(resnet, [after_op])))
    assert indices(fence.inputs) == live


def test_fence_outputs_match_their_inputs(resnet) -> None:
    source_buffers = len(resnet.buffers)
    fenced = written(rewrite_model_with_fences(resnet, [2, 5, 9]))
    tensors = fenced.subgraphs[0].tensors
    users: dict[int, int] = {}
    for tensor in tensors:
        users[tensor.buffer] = users.get(tensor.buffer, 0) + 1
    made = 0
    for fence in fences_of(fenced):
        assert len(indices(fence.inputs)) == len(indices(fence.outputs)) == 2
        for given, copy in zip(indices(fence.inputs), indices(fence.outputs), strict=True):
            a, b = tensors[given], tensors[copy]
            assert list(b.shape) == list(a.shape)
            assert b.type == a.type
            assert differences(a.quantization, b.quantization, "quantization") == []
            assert list(b.quantization.scale) == list(a.quantization.scale)
            assert list(b.quantization.zeroPoint) == list(a.quantization.zeroPoint)
            assert b.isVariable is False
            assert b.sparsity is None
            assert users[b.buffer] == 1
            assert b.buffer >= source_buffers
            assert fenced.buffer_data(b.buffer) is None
            assert fenced.buffers[b.buffer].offset == 0 and fenced.buffers[b.buffer].size == 0
            made += 1
    assert len(fenced.buffers) == source_buffers + made == source_buffers + 6


def test_fence_output_quantization_is_a_deep_copy(resnet) -> None:
    result = rewrite_model_with_fences(resnet, [2])
    subgraph = result.model.subgraphs[0]
    (fence,) = fences_of(result.model)
    for given, copy in zip(indices(fence.inputs), indices(fence.outputs), strict=True):
        source_q, copy_q = subgraph.tensors[given].quantization, subgraph.tensors[copy].quantization
        assert copy_q is not source_q
        scale_before = list(source_q.scale)
        zero_before = list(source_q.zeroPoint)
        copy_q.scale[0] = 123.0
        copy_q.zeroPoint[0] = 77
        assert list(source_q.scale) == scale_before
        assert list(source_q.zeroPoint) == zero_before


def test_per_axis_quantization_is_copied_whole() -> None:
    net = chain(3)
    per_axis = quantization(scale=(0.5, 0.25, 0.125), zero_point=(1, 2, 3), axis=3)
    per_axis.min = np.array([-1.0, -2.0, -3.0], dtype=np.float32)
    per_axis.max = np.array([1.0, 2.0, 3.0], dtype=np.float32)
    net.tensors[2].quantization = per_axis  # t0, crossing the cut after op 0
    model = net.model([0], [len(net.tensors) - 1])
    fenced = written(rewrite_model_with_fences(model, [0]))
    (fence,) = fences_of(fenced)
    copy = fenced.subgraphs[0].tensors[indices(fence.outputs)[0]].quantization
    assert copy.quantizedDimension == 3
    assert list(copy.scale) == [0.5, 0.25, 0.125]
    assert list(copy.zeroPoint) == [1, 2, 3]
    assert list(copy.min) == [-1.0, -2.0, -3.0] and list(copy.max) == [1.0, 2.0, 3.0]


def test_tensor_without_quantization_gives_output_without_quantization() -> None:
    fenced = written(rewrite_model_with_fences(chain_model(3, T.FLOAT32), [1]))
    (fence,) = fences_of(fenced)
    assert fenced.subgraphs[0].tensors[indices(fence.outputs)[0]].quantization is None


# ---------------------------------------------------------------- rewiring and placement


def test_later_consumers_read_the_fence_outputs(resnet) -> None:
    fenced = written(rewrite_model_with_fences(resnet, [2]))
    operators = fenced.subgraphs[0].operators
    (fence,) = fences_of(fenced)
    replaced = dict(zip(indices(fence.inputs), indices(fence.outputs), strict=True))
    # before the fence nothing changed; after it nothing reads an intercepted tensor
    for original, op in zip(resnet.subgraphs[0].operators[:3], operators[:3], strict=True):
        assert indices(op.inputs) == indices(original.inputs)
    for op in operators[4:]:
        assert not set(indices(op.inputs)) & set(replaced)
    # the residual ADD (original op 3, now at 4) reads both fence outputs
    assert sorted(indices(operators[4].inputs)) == sorted(replaced.values())
    assert fence_positions(fenced) == [3]


def intercepted_graph_output_model():
    """x -> op0 -> a (a graph output, also read by op1) -> op1 -> y; signature names both outputs."""
    net = Net()
    x, c, a, y = net.tensor("x"), net.tensor("c", data=bytes(12)), net.tensor("a"), net.tensor("y")
    net.op(OP.ADD, [x, c], [a])
    net.op(OP.ADD, [a, c], [y])
    model = net.model([x], [a, y])
    model.root.signatureDefs[0].outputs[0].name = "first"
    model.root.signatureDefs[0].outputs[1].name = "second"
    return model


def test_intercepted_graph_output_and_signature_def_are_rewired() -> None:
    model = intercepted_graph_output_model()
    result = rewrite_model_with_fences(model, [0])
    fenced = written(result)
    subgraph = fenced.subgraphs[0]
    (fence,) = fences_of(fenced)
    (copy,) = indices(fence.outputs)
    assert names(fenced, [copy]) == ["a/stream_split"]
    assert indices(subgraph.outputs) == [copy, 3]
    signature = fenced.root.signatureDefs[0]
    assert [(e.name, e.tensorIndex) for e in signature.outputs] == [(b"first", copy), (b"second", 3)]
    assert [(e.name, e.tensorIndex) for e in signature.inputs] == [(b"in_0", 0)]
    assert indices(subgraph.operators[2].inputs) == [copy, 1]


def test_graph_output_only_tensor_crosses_the_cut() -> None:
    net = Net()
    x, c, a, b = net.tensor("x"), net.tensor("c", data=bytes(12)), net.tensor("a"), net.tensor("b")
    net.op(OP.ADD, [x, c], [a])  # a is returned, never read again
    net.op(OP.ADD, [x, c], [b])
    fenced = written(rewrite_model_with_fences(net.model([x], [a, b]), [0]))
    (fence,) = fences_of(fenced)
    assert names(fenced, fence.inputs) == ["a"]
    assert names(fenced, fenced.subgraphs[0].outputs) == ["a/stream_split", "b"]


def test_fences_are_applied_in_descending_order_at_their_positions(resnet) -> None:
    result = rewrite_model_with_fences(resnet, [9, 2, 5])
    fenced = written(result)
    original = op_types(resnet)
    types = op_types(fenced)
    assert fence_positions(fenced) == [3, 7, 12]
    assert [t for t in types if t != FENCE_CODE] == original
    assert types == [*original[:3], FENCE_CODE, *original[3:6], FENCE_CODE, *original[6:10], FENCE_CODE, *original[10:]]
    # each fence intercepts the operator just before it
    for position, after_op in zip([3, 7, 12], [2, 5, 9], strict=True):
        fence = fenced.subgraphs[0].operators[position]
        assert indices(fence.inputs)[0] == output_of(resnet, after_op)
        assert indices(fenced.subgraphs[0].operators[position - 1].outputs)[0] == output_of(resnet, after_op)
    assert result.boundary_after_ops == [2, 5, 9]


def test_a_tensor_crossing_two_fences_is_chained_through_both(resnet) -> None:
    skip = output_of(resnet, 0)  # read by op 1 and by the ADD at op 3: crosses cuts after 1 and 2
    result = rewrite_model_with_fences(resnet, [1, 2])
    fenced = written(result)
    operators = fenced.subgraphs[0].operators
    first, second = fences_of(fenced)
    assert fence_positions(fenced) == [2, 4]
    assert indices(first.inputs)[1] == skip
    hop = indices(first.outputs)[1]
    assert indices(second.inputs)[1] == hop
    final = indices(second.outputs)[1]
    assert final in indices(operators[5].inputs)  # the ADD
    assert skip not in indices(operators[5].inputs) and hop not in indices(operators[5].inputs)
    skip_name = name_of(resnet, skip)
    assert names(fenced, [hop, final]) == [f"{skip_name}/stream_split@1", f"{skip_name}/stream_split@2"]
    assert result.segments[1].tensor_pairs[1].input == f"{skip_name}/stream_split@1"
    assert result.segments[1].tensor_pairs[1].output == f"{skip_name}/stream_split@2"


def test_fence_names_are_unique_in_the_graph() -> None:
    net = chain(4)
    taken = net.tensor("t0/stream_split")  # a tensor already bearing the name a fence would use
    model = net.model([0], [len(net.tensors) - 2])
    model.subgraphs[0].tensors[taken].buffer = 0
    fenced = written(rewrite_model_with_fences(model, [0, 1, 2]))
    all_names = names(fenced, range(len(fenced.subgraphs[0].tensors)))
    assert len(all_names) == len(set(all_names))
    first, second, _ = fences_of(fenced)
    assert names(fenced, first.outputs) == ["t0/stream_split#1"]
    assert names(fenced, second.outputs) == ["t1/stream_split"]


def test_constants_and_graph_inputs_are_never_copied(resnet) -> None:
    net = Net()
    x, c, a, y = net.tensor("x"), net.tensor("c", data=bytes(12)), net.tensor("a"), net.tensor("y")
    net.op(OP.ADD, [x, c], [a])
    net.op(OP.ADD, [a, x], [y])  # reads the graph input after the cut
    net.op(OP.ADD, [y, c], [net.tensor("z")])  # and the constant
    fenced = written(rewrite_model_with_fences(net.model([x], [4]), [0, 1]))
    for fence in fences_of(fenced):
        assert not {x, c} & set(indices(fence.inputs))
    assert x in indices(fenced.subgraphs[0].operators[2].inputs)
    assert c in indices(fenced.subgraphs[0].operators[4].inputs)
    fenced = written(rewrite_model_with_fences(resnet, list(range(15))))
    produced = Graph.of(fenced.subgraphs[0]).producer
    for fence in fences_of(fenced):
        for tensor in indices(fence.inputs):
            assert tensor in produced
            assert tensor not in indices(fenced.subgraphs[0].inputs)
            assert fenced.buffer_data(fenced.subgraphs[0].tensors[tensor].buffer) is None


def test_no_fences_changes_nothing(kws) -> None:
    result = rewrite_model_with_fences(kws, [])
    assert bytes(result.fenced_bytes) == bytes(serialize(kws))
    assert result.num_segments == 1
    assert result.segments[0].op_range_end == len(kws.subgraphs[0].operators) - 1


# ---------------------------------------------------------------- existing operator codes


def model_with_codes(*entries: schema.OperatorCodeT):
    net = chain(4)
    for entry in entries:
        net.code(entry)
    return net.model([0], [len(net.tensors) - 1])


@pytest.mark.parametrize(("builtin", "deprecated"), [(32, 32), (32, 0), (0, 32)])
def test_qualifying_fence_opcode_is_reused_as_written(builtin: int, deprecated: int) -> None:
    model = model_with_codes(opcode(builtin, deprecated, FENCE_CODE, 1))
    count = len(model.operator_codes)
    fenced = written(rewrite_model_with_fences(model, [0, 2]))
    assert len(fenced.operator_codes) == count
    entry = fenced.operator_codes[count - 1]
    assert (entry.builtinCode, entry.deprecatedBuiltinCode, entry.version) == (builtin, deprecated, 1)
    assert entry.customCode == b"ETHOS_U_STREAM_SPLIT"
    assert {op.opcodeIndex for op in fences_of(fenced)} == {count - 1}


REJECTED_CODES = {
    "non-custom-builtin": [opcode(5, 32, FENCE_CODE, 1)],
    "zero-zero": [opcode(0, 0, FENCE_CODE, 1)],
    "version-2": [opcode(32, 32, FENCE_CODE, 2)],
    "lower-case": [opcode(32, 32, "ethos_u_stream_split", 1)],
    "two-entries": [opcode(32, 32, FENCE_CODE, 1), opcode(32, 0, FENCE_CODE, 1)],
}


@pytest.mark.parametrize("entries", REJECTED_CODES.values(), ids=REJECTED_CODES.keys())
def test_unusable_fence_opcode_is_rejected_before_writing(tmp_path: Path, cli, entries) -> None:
    model = model_with_codes(*entries)
    with pytest.raises(FenceError, match="operator code"):
        rewrite_model_with_fences(model, [1])
    source = save(tmp_path, model)
    out = tmp_path / "out" / "fenced.tflite"
    assert_one_line_error(cli("fence", source, "-o", out, "--after-ops", "1"), "ETHOS_U_STREAM_SPLIT")
    assert_not_written(out, sidecar_path_for(out))
    assert not out.parent.exists()


def test_legacy_stream_split_opcode_is_refused_with_a_regenerate_hint(tmp_path: Path, cli) -> None:
    model = model_with_codes(opcode(32, 32, "STREAM_SPLIT", 1))
    with pytest.raises(FenceError, match="STREAM_SPLIT") as caught:
        rewrite_model_with_fences(model, [1])
    assert caught.value.hint is not None
    assert caught.value.hint.startswith("Regenerate")
    assert "original unfenced" in caught.value.hint
    out = tmp_path / "fenced.tflite"
    line = assert_one_line_error(cli("fence", save(tmp_path, model), "-o", out, "--after-ops", "1"), "Regenerate")
    assert "STREAM_SPLIT" in line
    assert_not_written(out, sidecar_path_for(out))


def test_model_with_two_subgraphs_is_rejected(tmp_path: Path, cli) -> None:
    model = chain_model(4)
    second = chain(2).root([0], [4]).subgraphs[0]
    model.root.subgraphs.append(second)
    with pytest.raises(FenceError, match="2 subgraphs"):
        rewrite_model_with_fences(model, [1])
    out = tmp_path / "fenced.tflite"
    assert_one_line_error(cli("fence", save(tmp_path, model), "-o", out, "--after-ops", "1"), "2 subgraphs")
    assert_not_written(out, sidecar_path_for(out))


# ---------------------------------------------------------------- storage types

ACCEPTED = {
    "int8": T.INT8,
    "uint8": T.UINT8,
    "int16": T.INT16,
    "int32": T.INT32,
    "int64": T.INT64,
    "float16": T.FLOAT16,
    "float32": T.FLOAT32,
    "bool": T.BOOL,
}


@pytest.mark.parametrize("dtype", ACCEPTED.values(), ids=ACCEPTED.keys())
def test_supported_dtype_crosses_a_fence(dtype: int) -> None:
    net = chain(3, dtype, shape=(2, 3, 5))
    model = net.model([0], [len(net.tensors) - 1])
    fenced = written(rewrite_model_with_fences(model, [0]))
    (fence,) = fences_of(fenced)
    tensors = fenced.subgraphs[0].tensors
    given, copy = tensors[indices(fence.inputs)[0]], tensors[indices(fence.outputs)[0]]
    assert copy.type == given.type == dtype
    assert list(copy.shape) == [2, 3, 5]
    assert byte_length(copy) == byte_length(given) == 30 * ELEMENT_BYTES[dtype]


def test_pairs_may_differ_in_dtype_and_shape() -> None:
    net = Net()
    x = net.tensor("x", (1, 4), T.FLOAT32, quant=None)
    a = net.tensor("a", (1, 4), T.FLOAT16, quant=None)
    b = net.tensor("b", (3,), T.INT64, quant=None)
    y = net.tensor("y", (1, 4), T.FLOAT32, quant=None)
    net.op(OP.DEQUANTIZE, [x], [a])
    net.op(OP.SHAPE, [x], [b])
    net.op(OP.RESHAPE, [a, b], [y])
    fenced = written(rewrite_model_with_fences(net.model([x], [y]), [1]))
    (fence,) = fences_of(fenced)
    tensors = fenced.subgraphs[0].tensors
    pairs = [(tensors[i], tensors[o]) for i, o in zip(indices(fence.inputs), indices(fence.outputs), strict=True)]
    assert [(tensor_name(i), tensor_name(o)) for i, o in pairs] == [("b", "b/stream_split"), ("a", "a/stream_split@1")]
    assert [(o.type, list(o.shape), byte_length(o)) for _, o in pairs] == [(T.INT64, [3], 24), (T.FLOAT16, [1, 4], 8)]


REJECTED_TYPES = {
    "int4": T.INT4,
    "string": T.STRING,
    "resource": T.RESOURCE,
    "variant": T.VARIANT,
    "complex64": T.COMPLEX64,
    "float64": T.FLOAT64,
}


@pytest.mark.parametrize("dtype", REJECTED_TYPES.values(), ids=REJECTED_TYPES.keys())
def test_unsupported_dtype_crossing_is_rejected_naming_the_tensor(tmp_path: Path, cli, dtype: int) -> None:
    net = chain(3)
    net.tensors[2].type = dtype  # t0, crossing the cut after op 0
    net.tensors[2].quantization = None
    model = net.model([0], [len(net.tensors) - 1])
    with pytest.raises(FenceError, match="'t0'") as caught:
        rewrite_model_with_fences(model, [0])
    assert "dtype" in caught.value.message
    rewrite_model_with_fences(model, [1])  # the same model fences where t0 does not cross
    out = tmp_path / "fenced.tflite"
    assert_one_line_error(cli("fence", save(tmp_path, model), "-o", out, "--after-ops", "1,0"), "'t0'")
    assert_not_written(out, sidecar_path_for(out))


def test_sparse_tensor_crossing_is_rejected() -> None:
    net = chain(3)
    sparsity = schema.SparsityParametersT()
    sparsity.traversalOrder = [0, 1, 2, 3]
    dims = []
    for size in (1, 2, 2, 3):
        dim = schema.DimensionMetadataT()
        dim.denseSize = size
        dims.append(dim)
    sparsity.dimMetadata = dims
    net.tensors[4].sparsity = sparsity  # t1
    model = net.model([0], [len(net.tensors) - 1])
    with pytest.raises(FenceError, match=r"'t1'.* sparse"):
        rewrite_model_with_fences(model, [1])


def test_variable_tensor_crossing_is_rejected() -> None:
    net = chain(3)
    net.tensors[2].isVariable = True
    with pytest.raises(FenceError, match=r"'t0'.* variable"):
        rewrite_model_with_fences(net.model([0], [len(net.tensors) - 1]), [0])


# ---------------------------------------------------------------- positions


@pytest.mark.parametrize(
    ("after_ops", "message"),
    [
        ([2, 2], "twice"),
        ([1, 5, 1], "twice"),
        ([-1], "out of range"),
        ([15], "out of range"),
        ([16], "out of range"),
        ([100], "out of range"),
        (["3"], "not an operator index"),
        ([2.0], "not an operator index"),
        ([True], "not an operator index"),
        ([None], "not an operator index"),
    ],
)
def test_bad_positions_are_rejected(resnet, after_ops: list, message: str) -> None:
    with pytest.raises(FenceError, match=message):
        rewrite_model_with_fences(resnet, after_ops)


def test_numpy_integer_positions_are_accepted(resnet) -> None:
    result = rewrite_model_with_fences(resnet, np.array([5, 2]))
    assert result.boundary_after_ops == [2, 5]
    assert rewrite_model_with_fences(resnet, FenceConfig.of([2, 5])).fenced_bytes == result.fenced_bytes


def test_empty_live_set_is_rejected() -> None:
    net = Net()
    x, c, a, b = net.tensor("x"), net.tensor("c", data=bytes(12)), net.tensor("a"), net.tensor("b")
    net.op(OP.ADD, [x, c], [a])  # a is never read and not returned
    net.op(OP.ADD, [x, c], [b])
    with pytest.raises(FenceError, match="no tensor crosses the cut after operator 0"):
        rewrite_model_with_fences(net.model([x], [b]), [0])


def test_callers_model_is_not_mutated(resnet) -> None:
    before = bytes(serialize(resnet))
    reference = load_model(before)
    result = rewrite_model_with_fences(resnet, [2, 5, 9])
    assert result.model is not resnet
    assert bytes(serialize(resnet)) == before
    assert differences(reference.root, resnet.root) == []
    assert len(resnet.subgraphs[0].operators) == 16


def test_in_memory_model_is_not_mutated() -> None:
    model = intercepted_graph_output_model()
    before = bytes(serialize(model))
    rewrite_model_with_fences(model, [0])
    assert bytes(serialize(model)) == before


# ---------------------------------------------------------------- RewriteResult and the sidecar


def test_rewrite_result_fields(tmp_path: Path, residual_file: Path) -> None:
    copy = tmp_path / "deep" / "folder" / "resnet.tflite"
    copy.parent.mkdir(parents=True)
    copy.write_bytes(residual_file.read_bytes())
    source = load_model(copy)
    result = rewrite_model_with_fences(copy, [9, 2, 5])
    assert result.source_model == "resnet.tflite"
    assert result.source_sha256 == hashlib.sha256(copy.read_bytes()).hexdigest()
    assert result.subgraph == 0
    assert result.num_segments == 4
    assert result.boundary_after_ops == [2, 5, 9]
    assert result.contract_version == 1
    assert result.custom_code == "ETHOS_U_STREAM_SPLIT"
    assert result.boundaries.fenced_sha256 == hashlib.sha256(bytes(result.fenced_bytes)).hexdigest()
    assert [(s.index, s.op_range_start, s.op_range_end) for s in result.segments] == [
        (0, 0, 2),
        (1, 3, 5),
        (2, 6, 9),
        (3, 10, 15),
    ]
    fenced = written(result)
    for segment, fence, after_op in zip(result.segments, fences_of(fenced), [2, 5, 9], strict=False):
        pairs = list(zip(names(fenced, fence.inputs), names(fenced, fence.outputs), strict=True))
        assert [(p.input, p.output) for p in segment.tensor_pairs] == pairs
        intercepted = name_of(source, output_of(source, after_op))
        assert segment.end_tensor_name == intercepted
        assert segment.fence_tensor_name == intercepted + "/stream_split" == pairs[0][1]
    last = result.segments[-1]
    assert (last.tensor_pairs, last.end_tensor_name, last.fence_tensor_name) == ((), None, None)


def test_source_model_names(residual_file: Path) -> None:
    assert rewrite_model_with_fences(residual_file.read_bytes(), [3]).source_model == "<bytes>"
    assert rewrite_model_with_fences(str(residual_file), [3]).source_model == residual_file.name
    model = chain_model(3)
    result = rewrite_model_with_fences(model, [1])
    assert result.source_model == "<test>"
    assert result.source_sha256 == hashlib.sha256(bytes(serialize(model))).hexdigest()


def test_fenced_bytes_do_not_depend_on_how_the_source_was_given(residual_file: Path) -> None:
    from_path = rewrite_model_with_fences(residual_file, [2, 7])
    from_bytes = rewrite_model_with_fences(residual_file.read_bytes(), [2, 7])
    from_model = rewrite_model_with_fences(load_model(residual_file), [2, 7])
    assert bytes(from_path.fenced_bytes) == bytes(from_bytes.fenced_bytes) == bytes(from_model.fenced_bytes)
    assert from_path.source_sha256 == from_bytes.source_sha256 == from_model.source_sha256


def test_sidecar_file_is_canonical_and_validates(tmp_path: Path, residual_file: Path) -> None:
    result = rewrite_model_with_fences(residual_file, [2, 5, 9])
    out = tmp_path / "resnet_fenced.tflite"
    sidecar = result.save(out)
    assert sidecar == tmp_path / "resnet_fenced.fenced_boundaries.json"
    assert out.read_bytes() == bytes(result.fenced_bytes)
    text = sidecar.read_text(encoding="utf-8")
    document = json.loads(text)
    assert text == json.dumps(document, sort_keys=True, indent=2) + "\n"
    assert text == json_text(result.boundaries.to_json())
    validate(document, "fenced-boundaries", str(sidecar))
    assert document["source_model"] == residual_file.name
    assert document["source_sha256"] == hashlib.sha256(residual_file.read_bytes()).hexdigest()
    assert document["fenced_sha256"] == hashlib.sha256(out.read_bytes()).hexdigest()
    assert document["subgraph"] == 0
    assert document["num_segments"] == 4
    assert document["boundary_after_ops"] == [2, 5, 9]
    assert document["contract_version"] == 1
    assert document["custom_code"] == "ETHOS_U_STREAM_SPLIT"
    assert str(tmp_path) not in text
    assert document["segments"][3] == {
        "index": 3,
        "op_range_start": 10,
        "op_range_end": 15,
        "tensor_pairs": [],
        "end_tensor_name": None,
        "fence_tensor_name": None,
    }
    assert load_sidecar(sidecar) == result.boundaries
    assert sorted(p.name for p in tmp_path.iterdir()) == [sidecar.name, out.name]


def test_fencing_twice_gives_byte_identical_files(tmp_path: Path, chain_file: Path) -> None:
    first = rewrite_model_with_fences(chain_file, [1, 6]).save(tmp_path / "a" / "m.tflite")
    second = rewrite_model_with_fences(chain_file, [6, 1]).save(tmp_path / "b" / "m.tflite")
    assert first.read_bytes() == second.read_bytes()
    assert (tmp_path / "a" / "m.tflite").read_bytes() == (tmp_path / "b" / "m.tflite").read_bytes()


def test_save_writes_both_files_or_neither(tmp_path: Path) -> None:
    result = rewrite_model_with_fences(chain_model(3), [1])
    out = tmp_path / "fenced.tflite"
    sidecar_path_for(out).mkdir()  # the sidecar cannot be written over a folder
    with pytest.raises(OSError):
        result.save(out)
    assert not out.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fenced.fenced_boundaries.json"]


def test_sidecar_path_for() -> None:
    assert sidecar_path_for("out/m_fenced.tflite") == Path("out/m_fenced.fenced_boundaries.json")
    assert sidecar_path_for(Path("/x/y.z.tflite")) == Path("/x/y.z.fenced_boundaries.json")
