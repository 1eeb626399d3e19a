"""heliabuild.runner.segments and the litert backend: fenced models cut into segments run bit-identically."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from ai_edge_litert import schema_py_generated as schema

from heliabuild.errors import RunnerError
from heliabuild.fence import rewrite_model_with_fences
from heliabuild.fence.contract import new_fence_opcode
from heliabuild.model import load_model, serialize
from heliabuild.model.graph import Graph, indices
from heliabuild.runner.litert import LiteRTInstance, run_reference
from heliabuild.runner.segments import call_once_present, cut_segments
from heliabuild.synth import chain_network, residual_network
from heliabuild.synth.stateful import counter_model


def _random_inputs(instance: LiteRTInstance, seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    values = []
    for info in instance.input_infos():
        if info.dtype == schema.TensorType.INT8:
            values.append(rng.integers(-128, 128, size=info.shape).astype(np.int8))
        else:
            values.append(rng.standard_normal(info.shape).astype(np.float32))
    return values


def _check_bit_identical(source: bytes, cuts: list[int], seed: int = 0) -> LiteRTInstance:
    fenced = rewrite_model_with_fences(source, cuts)
    instance = LiteRTInstance(bytes(fenced.fenced_bytes))
    assert len(instance.cut.segments) == len(cuts) + 1
    assert instance.cut.boundary_after_ops == tuple(sorted(cuts))
    for round_ in range(2):
        values = _random_inputs(instance, seed + round_)
        instance.fill_inputs(values)
        instance.invoke()
        outputs = instance.outputs()
        reference = run_reference(source, values)[0]
        assert len(outputs) == len(reference)
        for got, want in zip(outputs, reference, strict=True):
            assert got.dtype == want.dtype and got.shape == want.shape
            assert got.tobytes() == want.tobytes()
    return instance


CHAIN_CUTS = [[], [0], [3], [1, 2], [2, 5], list(range(8))]
# Residual ADDs at 3, 7, 11: cuts inside a block carry the skip tensor through several fences.
RESIDUAL_CUTS = [[], [1], [2], [1, 2], [0, 3, 9], [5, 6, 10], list(range(15))]


@pytest.mark.parametrize("cuts", CHAIN_CUTS, ids=str)
def test_synth_chain_segments_bit_identical(cuts: list[int]) -> None:
    _check_bit_identical(bytes(serialize(chain_network(0))), cuts)


@pytest.mark.parametrize("cuts", RESIDUAL_CUTS, ids=str)
def test_synth_residual_segments_bit_identical(cuts: list[int]) -> None:
    instance = _check_bit_identical(bytes(serialize(residual_network(0))), cuts)
    assert len(instance.interpreters) == len(cuts) + 1


def test_outputs_are_not_trivial() -> None:
    source = bytes(serialize(residual_network(0)))
    instance = _check_bit_identical(source, [2, 6])
    first = instance.outputs()
    instance.fill_inputs(_random_inputs(instance, 99))
    instance.invoke()
    assert any(a.tobytes() != b.tobytes() for a, b in zip(first, instance.outputs(), strict=True))


def test_shared_chain_model_bit_identical(chain_file: Path) -> None:
    count = len(load_model(chain_file).subgraphs[0].operators)
    _check_bit_identical(chain_file.read_bytes(), [1, count // 2, count - 2])


def test_shared_residual_model_bit_identical(residual_file: Path) -> None:
    # Inside residual blocks (before the ADDs at 3, 7, 11) and at block ends.
    _check_bit_identical(residual_file.read_bytes(), [1, 2, 5, 7, 10])


def test_segment_models_keep_quantization_and_drop_unused() -> None:
    source = residual_network(0)
    fenced = rewrite_model_with_fences(bytes(serialize(source)), [2, 6])
    cut = cut_segments(bytes(fenced.fenced_bytes))
    total_ops = 0
    for segment in cut.segments:
        model = load_model(segment.model_bytes)
        subgraph = model.subgraphs[0]
        total_ops += len(subgraph.operators)
        used = {t for op in subgraph.operators for t in indices(op.inputs) + indices(op.outputs) if t >= 0}
        used |= set(indices(subgraph.inputs)) | set(indices(subgraph.outputs))
        assert used == set(range(len(subgraph.tensors)))
        assert all(code.customCode is None for code in model.operator_codes)
        for tensor in subgraph.tensors:
            if tensor.type == schema.TensorType.INT8:
                assert tensor.quantization is not None and tensor.quantization.scale is not None
    assert total_ops == len(source.subgraphs[0].operators)


def test_unfenced_model_is_one_segment() -> None:
    cut = cut_segments(bytes(serialize(chain_network(0))))
    assert len(cut.segments) == 1 and cut.fences == ()


def test_call_once_model_runs_whole_and_keeps_state() -> None:
    model = counter_model(0)
    assert call_once_present(model)
    assert not call_once_present(chain_network(0))
    instance = LiteRTInstance(bytes(serialize(model)))
    assert len(instance.cut.segments) == 1
    zeros = [np.zeros((1, 4), np.float32)]
    results = []
    for _ in range(3):
        instance.fill_inputs(zeros)
        instance.invoke()
        results.append(instance.outputs()[0])
    assert np.array_equal(results[1] - results[0], np.ones((1, 4), np.float32))
    assert np.array_equal(results[2] - results[1], np.ones((1, 4), np.float32))
    reference = run_reference(model, zeros, invokes=3)
    assert all(r[0].tobytes() == g.tobytes() for r, g in zip(reference, results, strict=True))


def _fence_by_hand(model, after_op: int, carried: list[int]):
    """Insert a fence after `after_op` carrying only `carried`, leaving other crossing tensors unfenced."""
    subgraph = model.subgraphs[0]
    model.operator_codes.append(new_fence_opcode())
    replacement = {}
    for tensor in carried:
        model.buffers.append(schema.BufferT())
        copy = schema.TensorT()
        source = subgraph.tensors[tensor]
        copy.shape, copy.type, copy.name = list(source.shape), source.type, f"{source.name}/stream_split"
        copy.buffer = len(model.buffers) - 1
        subgraph.tensors.append(copy)
        replacement[tensor] = len(subgraph.tensors) - 1
    for op in subgraph.operators[after_op + 1 :]:
        op.inputs = [replacement.get(t, t) for t in indices(op.inputs)]
    subgraph.outputs = [replacement.get(t, t) for t in indices(subgraph.outputs)]
    fence = schema.OperatorT()
    fence.opcodeIndex = len(model.operator_codes) - 1
    fence.inputs, fence.outputs = list(replacement), list(replacement.values())
    subgraph.operators.insert(after_op + 1, fence)
    return bytes(serialize(model))


def _tensor(model, name: str) -> int:
    return next(i for i, t in enumerate(model.subgraphs[0].tensors) if t.name in (name, name.encode()))


def test_resource_tensor_crossing_a_fence_is_refused() -> None:
    # Ops: CALL_ONCE 0, VAR_HANDLE 1, READ_VARIABLE 2, ADD 3, ASSIGN_VARIABLE 4, ADD 5, ADD 6.
    # A cut after op 3 leaves the resource handle read by ASSIGN_VARIABLE in the next segment.
    model = counter_model(0)
    data = _fence_by_hand(model, 3, [_tensor(model, "count_next")])
    with pytest.raises(RunnerError, match=r"resource tensor crossing a fence"):
        cut_segments(data)


def test_resource_variable_in_two_segments_is_refused() -> None:
    # Give the second segment its own VAR_HANDLE of the same variable: still one variable split in two.
    model = counter_model(0)
    subgraph = model.subgraphs[0]
    handle2 = len(subgraph.tensors)
    resource = schema.TensorT()
    resource.name, resource.type, resource.shape = "counter_handle_2", schema.TensorType.RESOURCE, []
    model.buffers.append(schema.BufferT())
    resource.buffer = len(model.buffers) - 1
    subgraph.tensors.append(resource)
    var_handle = subgraph.operators[1]
    second = schema.OperatorT()
    second.opcodeIndex, second.inputs, second.outputs = var_handle.opcodeIndex, [], [handle2]
    second.builtinOptionsType, second.builtinOptions = var_handle.builtinOptionsType, var_handle.builtinOptions
    subgraph.operators.insert(4, second)
    assign = subgraph.operators[5]
    assign.inputs = [handle2, indices(assign.inputs)[1]]
    data = _fence_by_hand(model, 3, [_tensor(model, "count_next")])
    with pytest.raises(RunnerError, match=r"resource variable 'counter' is used in segments 0, 1"):
        cut_segments(data)


def test_tensor_crossing_without_fence_pair_is_refused() -> None:
    model = residual_network(0)
    subgraph = model.subgraphs[0]
    crossing = Graph.of(subgraph).live_after(subgraph, 1)
    assert len(crossing) == 2  # inside a residual block: the block's output and the skip tensor
    data = _fence_by_hand(model, 1, crossing[:1])
    with pytest.raises(RunnerError, match=r"read in segment 1 without passing through a fence pair"):
        cut_segments(data)


def test_fence_without_pairs_is_refused() -> None:
    data = _fence_by_hand(chain_network(0), 2, [])
    with pytest.raises(RunnerError, match=r"fence 0 \(operator 3\) has 0 inputs and 0 outputs"):
        cut_segments(data)
