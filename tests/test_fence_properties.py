"""Properties of the fence rewrite over random networks and random fence sets."""

from __future__ import annotations

from functools import cache

import numpy as np
from helpers.tflite import fence_positions, random_inputs, run_litert
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from heliabuild.fence import rewrite_model_with_fences, strip_fences, verify_fenced_model
from heliabuild.model import Graph, load_model, serialize
from heliabuild.model.compare import differences
from heliabuild.model.graph import indices
from heliabuild.synth import int8_network

PROPERTY = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@cache
def network(seed: int) -> bytes:
    return bytes(serialize(int8_network(seed)))


@st.composite
def fenced_cases(draw) -> tuple[int, bytes, list[int]]:
    """A random network and a random non-empty set of fence positions in it."""
    seed = draw(st.integers(0, 200))
    data = network(seed)
    count = len(load_model(data).subgraphs[0].operators)
    after_ops = draw(st.lists(st.integers(0, count - 2), min_size=1, max_size=count - 1, unique=True))
    return seed, data, after_ops


@PROPERTY
@given(case=fenced_cases())
def test_fenced_random_network_verifies(case) -> None:
    _, data, after_ops = case
    result = rewrite_model_with_fences(data, after_ops)
    assert result.boundary_after_ops == sorted(after_ops)
    assert result.num_segments == len(after_ops) + 1
    assert verify_fenced_model(result.fenced_bytes, sidecar=result.boundaries, source=data) == []
    fenced = load_model(bytes(result.fenced_bytes))
    assert fence_positions(fenced) == [a + n + 1 for n, a in enumerate(sorted(after_ops))]


@PROPERTY
@given(case=fenced_cases(), input_seed=st.integers(0, 2**32 - 1))
def test_strip_of_fenced_network_computes_bit_identical_outputs(case, input_seed: int) -> None:
    _, data, after_ops = case
    stripped = bytes(serialize(strip_fences(rewrite_model_with_fences(data, after_ops).fenced_bytes)))
    assert stripped == bytes(serialize(load_model(data)))
    inputs = random_inputs(data, input_seed)
    expected = run_litert(data, inputs)
    actual = run_litert(stripped, inputs)
    assert len(actual) == len(expected)
    for a, b in zip(actual, expected, strict=True):
        assert a.dtype == b.dtype and a.shape == b.shape
        assert np.array_equal(a, b)


@PROPERTY
@given(case=fenced_cases())
def test_each_fence_output_matches_its_input(case) -> None:
    _, data, after_ops = case
    source = load_model(data)
    source_graph = source.subgraphs[0]
    graph = Graph.of(source_graph)
    fenced = load_model(bytes(rewrite_model_with_fences(data, after_ops).fenced_bytes))
    tensors = fenced.subgraphs[0].tensors
    for number, position in enumerate(fence_positions(fenced)):
        fence = fenced.subgraphs[0].operators[position]
        inputs, outputs = indices(fence.inputs), indices(fence.outputs)
        after_op = sorted(after_ops)[number]
        assert len(inputs) == len(outputs) == len(graph.live_after(source_graph, after_op))
        for given_index, copy_index in zip(inputs, outputs, strict=True):
            given, copy = tensors[given_index], tensors[copy_index]
            assert list(copy.shape) == list(given.shape)
            assert copy.type == given.type
            assert differences(given.quantization, copy.quantization, "quantization") == []
            assert copy.isVariable is False
            assert fenced.buffer_data(copy.buffer) is None
