"""plan_fences over random synthetic networks and random budgets, on real Vela estimates.

Vela runs once per (seed, accelerator) and the rows are cached; hypothesis then draws budgets.
"""

from __future__ import annotations

import tempfile
from functools import cache
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from heliabuild.fence import fence_model, verify_fenced_model
from heliabuild.model import load_model, model_sha256, serialize
from heliabuild.model.graph import indices, tensor_name
from heliabuild.planning import plan_fences
from heliabuild.synth import int8_network
from heliabuild.vela import PerLayerRow, attribute_rows, compile, read_per_layer

pytestmark = pytest.mark.slow

ACCELERATORS = ("ethos-u55-128", "ethos-u85-256")
SEEDS = 12  # distinct networks; each costs one Vela run per accelerator
PROPERTY = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@cache
def network(seed: int) -> bytes:
    return bytes(serialize(int8_network(seed)))


@cache
def estimate(seed: int, accelerator: str) -> tuple[PerLayerRow, ...]:
    with tempfile.TemporaryDirectory(prefix="heliabuild-plan-property-") as folder:
        model = Path(folder) / f"net{seed}.tflite"
        model.write_bytes(network(seed))
        result = compile(model, Path(folder) / "out", accelerator=accelerator)
        return tuple(read_per_layer(result.per_layer_csv))


def operator_cycles(data: bytes, rows: tuple[PerLayerRow, ...]) -> list[int]:
    model = load_model(data)
    cycles = [0] * len(model.subgraphs[0].operators)
    for row, where in zip(rows, attribute_rows(model, rows), strict=True):
        assert where.operator is not None, row
        cycles[where.operator] += row.op_cycles
    return cycles


@st.composite
def planned(draw) -> tuple[int, str, int]:
    seed = draw(st.integers(0, SEEDS - 1))
    accelerator = draw(st.sampled_from(ACCELERATORS))
    total = sum(row.op_cycles for row in estimate(seed, accelerator))
    budget = draw(st.integers(1, max(1, total + total // 5)))
    return seed, accelerator, budget


@PROPERTY
@given(case=planned())
def test_random_plan_respects_the_budget_and_fences_cleanly(case: tuple[int, str, int]) -> None:
    seed, accelerator, budget = case
    data = network(seed)
    rows = estimate(seed, accelerator)
    cycles = operator_cycles(data, rows)

    plan = plan_fences(data, list(rows), budget)
    assert plan.coverage is not None and plan.coverage.fraction == 1.0
    assert plan.model_sha256 == model_sha256(data)
    assert plan.budget_cycles == budget

    starts = [0, *[a + 1 for a in plan.after_ops]]
    ends = [*plan.after_ops, len(cycles) - 1]
    for start, end in zip(starts, ends, strict=True):
        assert start <= end
        total = sum(cycles[start : end + 1])
        alone = start == end and cycles[start] > budget
        assert total <= budget or alone, (start, end, total, budget)
    if sum(cycles) <= budget:
        assert plan.fences == ()

    subgraph = load_model(data).subgraphs[0]
    for number, fence in enumerate(plan.fences):
        outputs = indices(subgraph.operators[fence.after_op].outputs)
        assert fence.output_tensor_name == tensor_name(subgraph.tensors[outputs[0]])
        assert fence.segment_index == number

    result = fence_model(data, plan)
    assert result.boundary_after_ops == plan.after_ops
    assert verify_fenced_model(result.fenced_bytes, sidecar=result.boundaries, source=data) == []


def test_networks_are_fully_attributed_on_both_accelerators() -> None:
    """The premise of the property: every random network's estimate is attributed in full."""
    for seed in range(SEEDS):
        for accelerator in ACCELERATORS:
            rows = estimate(seed, accelerator)
            assert rows
            cycles = operator_cycles(network(seed), rows)
            assert sum(cycles) == sum(row.op_cycles for row in rows)
