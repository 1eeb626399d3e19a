"""Graph queries, operator codes and stable operator ids."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.tflite import OP, Net, T, opcode
from hypothesis import given
from hypothesis import strategies as st

from heliabuild.model import (
    Graph,
    custom_code,
    effective_builtin_code,
    load_model,
    operator_type,
    split_operator_id,
    stable_operator_ids,
    tensor_name,
)
from heliabuild.model.graph import indices


@pytest.fixture(scope="module")
def resnet(resnet_path: Path):
    return load_model(resnet_path)


def test_producers_and_consumers_on_resnet(resnet) -> None:
    subgraph = resnet.subgraphs[0]
    graph = Graph.of(subgraph)
    assert graph.operator_count == 16
    first_output = indices(subgraph.operators[0].outputs)[0]
    assert graph.producer[first_output] == 0
    # op 0's output feeds the block's first convolution and its residual ADD
    assert graph.consumers[first_output] == (1, 3)
    add_output = indices(subgraph.operators[3].outputs)[0]
    assert graph.producer[add_output] == 3
    assert graph.consumers[add_output] == (4, 6)
    graph_input = indices(subgraph.inputs)[0]
    assert graph_input not in graph.producer
    assert graph.consumers[graph_input] == (0,)
    weights = indices(subgraph.operators[0].inputs)[1]
    assert weights not in graph.producer
    assert graph.graph_inputs == tuple(indices(subgraph.inputs))
    assert graph.graph_outputs == tuple(indices(subgraph.outputs))


def test_live_after_inside_a_residual_block_is_two_tensors_in_order(resnet) -> None:
    subgraph = resnet.subgraphs[0]
    graph = Graph.of(subgraph)
    op0_output = indices(subgraph.operators[0].outputs)[0]
    op2_output = indices(subgraph.operators[2].outputs)[0]
    assert graph.live_after(subgraph, 2) == [op2_output, op0_output]
    assert graph.live_after(subgraph, 1) == [indices(subgraph.operators[1].outputs)[0], op0_output]


@pytest.mark.parametrize("after_op", [3, 7, 11, 12, 13, 14])
def test_live_after_a_residual_add_or_in_the_head_is_one_tensor(resnet, after_op: int) -> None:
    subgraph = resnet.subgraphs[0]
    graph = Graph.of(subgraph)
    assert graph.live_after(subgraph, after_op) == [indices(subgraph.operators[after_op].outputs)[0]]


def test_live_after_on_kws_is_always_the_one_output(kws_path: Path) -> None:
    model = load_model(kws_path)
    subgraph = model.subgraphs[0]
    graph = Graph.of(subgraph)
    for after_op in range(12):
        assert graph.live_after(subgraph, after_op) == indices(subgraph.operators[after_op].outputs)


def test_live_after_counts_graph_outputs_and_not_graph_inputs_or_constants() -> None:
    net = Net()
    x = net.tensor("x")
    c = net.tensor("c", data=bytes(12))
    a = net.tensor("a")
    b = net.tensor("b")
    y = net.tensor("y")
    net.op(OP.ADD, [x, c], [a])  # a: a graph output, not read later
    net.op(OP.ADD, [x, c], [b])
    net.op(OP.ADD, [b, x], [y])  # reads the graph input and the constant again later
    model = net.model([x], [a, y])
    subgraph = model.subgraphs[0]
    graph = Graph.of(subgraph)
    assert graph.live_after(subgraph, 0) == [a]
    assert graph.live_after(subgraph, 1) == [b, a]


def test_an_operator_reading_a_tensor_twice_is_one_consumer() -> None:
    net = Net()
    x, y = net.tensor("x"), net.tensor("y")
    net.op(OP.ADD, [x, x], [y])
    assert Graph.of(net.model([x], [y]).subgraphs[0]).consumers[x] == (0,)


def _live_by_definition(graph: Graph, subgraph, after_op: int) -> list[int]:
    """Graph.live_after's contract, spelled out: the outputs of `after_op` first, then by producer."""
    crossing = [
        (0 if producer == after_op else 1, producer, position, tensor)
        for tensor, producer in graph.producer.items()
        if producer <= after_op
        and (tensor in graph.graph_outputs or any(r > after_op for r in graph.consumers.get(tensor, ())))
        for position in [indices(subgraph.operators[producer].outputs).index(tensor)]
    ]
    return [tensor for *_, tensor in sorted(crossing)]


@given(
    st.lists(
        st.tuples(st.lists(st.integers(0, 40), max_size=3), st.lists(st.integers(0, 40), min_size=1, max_size=3)),
        min_size=1,
        max_size=25,
    ),
    st.lists(st.integers(0, 40), max_size=3),
)
def test_live_after_each_matches_the_definition_at_every_cut(ops: list, outputs: list[int]) -> None:
    net = Net()
    tensors = [net.tensor(f"t{i}") for i in range(41)]
    for reads, writes in ops:
        net.op(OP.ADD, [tensors[t] for t in reads], [tensors[t] for t in writes])
    subgraph = net.model([], outputs).subgraphs[0]
    graph = Graph.of(subgraph)
    every = graph.live_after_each(subgraph, range(len(ops)))
    for after_op in range(len(ops)):
        assert every[after_op] == graph.live_after(subgraph, after_op) == _live_by_definition(graph, subgraph, after_op)


@pytest.mark.parametrize(
    ("builtin", "deprecated", "expected"),
    [
        (0, 32, 32),
        (32, 0, 32),
        (32, 32, 32),
        (150, 127, 150),
        (0, 3, 3),
        (3, 3, 3),
        (5, 32, 32),
        (0, 0, 0),
    ],
)
def test_effective_builtin_code_is_the_larger_field(builtin: int, deprecated: int, expected: int) -> None:
    assert effective_builtin_code(opcode(builtin, deprecated)) == expected


def test_operator_type_names() -> None:
    assert operator_type(opcode(3)) == "CONV_2D"
    assert operator_type(opcode(0, 3)) == "CONV_2D"
    assert operator_type(opcode(150, 127)) == "GELU"
    assert operator_type(opcode(OP.CUSTOM, custom="ethos-u")) == "ethos-u"
    assert operator_type(opcode(0, OP.CUSTOM, custom="ETHOS_U_STREAM_SPLIT")) == "ETHOS_U_STREAM_SPLIT"
    assert operator_type(opcode(OP.CUSTOM)) == "CUSTOM"
    assert operator_type(opcode(999, 127)) == "BUILTIN_999"
    assert custom_code(opcode(OP.CUSTOM, custom=b"bytes-code")) == "bytes-code"
    assert custom_code(opcode(3)) is None


def test_operator_types_of_the_shared_models(kws_path: Path, resnet) -> None:
    kws = load_model(kws_path)
    assert [operator_type(kws.operator_codes[op.opcodeIndex]) for op in kws.subgraphs[0].operators] == [
        "CONV_2D",
        *["DEPTHWISE_CONV_2D", "CONV_2D"] * 4,
        "AVERAGE_POOL_2D",
        "RESHAPE",
        "FULLY_CONNECTED",
        "SOFTMAX",
    ]
    types = [operator_type(resnet.operator_codes[op.opcodeIndex]) for op in resnet.subgraphs[0].operators]
    assert [i for i, t in enumerate(types) if t == "ADD"] == [3, 7, 11]


# ---------------------------------------------------------------- stable ids


def test_stable_ids_of_resnet_are_output_names(resnet) -> None:
    subgraph = resnet.subgraphs[0]
    ids = stable_operator_ids(resnet)
    assert len(ids) == 16
    for position, (entry, op) in enumerate(zip(ids, subgraph.operators, strict=True)):
        name = tensor_name(subgraph.tensors[indices(op.outputs)[0]])
        assert entry.id == f"0:{name}"
        assert entry.id_source == "output_name"
        assert entry.index == position
        assert entry.node_id == f"0/{position}"
        assert ":" not in entry.node_id
        assert entry.op_type == operator_type(resnet.operator_codes[op.opcodeIndex])
        assert split_operator_id(entry.id) == (0, name)
    assert ids[-1].to_json() == {
        "id": "0:Identity_int8",
        "id_source": "output_name",
        "index": 15,
        "node_id": "0/15",
        "op_type": "SOFTMAX",
    }


def named_outputs(*output_names: str | None):
    net = Net()
    x = net.tensor("input")
    for name in output_names:
        y = net.tensor(name)
        net.op(OP.ADD, [x, x], [y])
        x = y
    return net.model([0], [x])


def test_repeated_names_get_suffixes_in_operator_order() -> None:
    ids = stable_operator_ids(named_outputs("x", "y", "x", "x", "y"))
    assert [i.id for i in ids] == ["0:x", "0:y", "0:x#1", "0:x#2", "0:y#1"]
    assert {i.id_source for i in ids} == {"output_name"}


@pytest.mark.parametrize("missing", [None, ""])
def test_unnamed_output_falls_back_to_type_and_position(missing: str | None) -> None:
    ids = stable_operator_ids(named_outputs("a", missing, "c"))
    assert [i.id for i in ids] == ["0:a", "0:ADD@1", "0:c"]
    assert [i.id_source for i in ids] == ["output_name", "op_type_position", "output_name"]


def test_an_id_spelled_twice_falls_back_to_node_ids() -> None:
    # op 1 is the second `x` (suffixed to x#1), op 2's output is literally named `x#1`
    ids = stable_operator_ids(named_outputs("x", "x", "x#1", "z"))
    assert [(i.id, i.id_source) for i in ids] == [
        ("0:x", "output_name"),
        ("0/1", "node_id"),
        ("0/2", "node_id"),
        ("0:z", "output_name"),
    ]
    assert len({i.id for i in ids}) == 4


def test_stable_ids_use_the_subgraph_index() -> None:
    model = named_outputs("a", "b")
    model.root.subgraphs.append(model.subgraphs[0])
    assert [i.id for i in stable_operator_ids(model, subgraph=1)] == ["1:a", "1:b"]
    assert [i.node_id for i in stable_operator_ids(model, subgraph=1)] == ["1/0", "1/1"]


def test_custom_operator_id_falls_back_to_its_custom_code() -> None:
    net = Net()
    x, y = net.tensor("x"), net.tensor(None, dtype=T.INT8)
    net.op(OP.CUSTOM, [x], [y], custom="my_op")
    (entry,) = stable_operator_ids(net.model([x], [y]))
    assert (entry.id, entry.op_type) == ("0:my_op@0", "my_op")


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("0:StatefulPartitionedCall_1:0", (0, "StatefulPartitionedCall_1:0")),
        ("0:a", (0, "a")),
        ("12:x:y:z", (12, "x:y:z")),
        ("0:", (0, "")),
        ("0:CONV_2D@3", (0, "CONV_2D@3")),
    ],
)
def test_split_operator_id_splits_on_the_first_colon_only(value: str, expected: tuple[int, str]) -> None:
    assert split_operator_id(value) == expected


@pytest.mark.parametrize("value", ["0/3", "main:x", ":x", "x"])
def test_split_operator_id_rejects_non_ids(value: str) -> None:
    with pytest.raises(ValueError, match="not a stable operator id"):
        split_operator_id(value)
