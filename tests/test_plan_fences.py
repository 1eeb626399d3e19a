"""plan_fences: cost-based fence plans from Vela's per-layer estimate.

The policy on hand-made estimates first (no Vela), then on real per-layer CSVs of the
shared models and their synthetic stand-ins for Ethos-U55-128 and Ethos-U85-256.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest
from helpers.tflite import OP, Net, chain_model

from heliabuild.errors import FenceBindingError, FenceError
from heliabuild.fence import (
    FencePlan,
    fence_model,
    load_plan,
    rewrite_model_with_fences,
    sidecar_path_for,
    verify_fenced_model,
)
from heliabuild.files import write_json
from heliabuild.model import Model, load_model, model_sha256, save_model
from heliabuild.model.graph import Graph, indices, tensor_name
from heliabuild.model.opcodes import operator_type
from heliabuild.planning import DEFAULT_MIN_COVERAGE, plan_fences
from heliabuild.schema_files import validate
from heliabuild.synth import chain_network
from heliabuild.vela import PerLayerRow, attribute_rows, compile, read_per_layer

ACCELERATORS = ("ethos-u55-128", "ethos-u85-256")
MODELS = ("kws", "resnet", "synth-chain", "synth-residual")


def hand_rows(model: Model, costs: list[int]) -> list[PerLayerRow]:
    """One row per operator, named after its output, costing `costs[i]` cycles."""
    subgraph = model.subgraphs[0]
    rows = []
    for index, (op, cost) in enumerate(zip(subgraph.operators, costs, strict=True)):
        name = tensor_name(subgraph.tensors[indices(op.outputs)[0]])
        kind = operator_type(model.operator_codes[op.opcodeIndex]).title()
        rows.append(PerLayerRow(index, kind, kind, "NPU", cost, cost, 0, 0, 0, 0, 10 * cost, name))
    return rows


def segments_of(after_ops: list[int], count: int) -> list[range]:
    starts = [0, *[a + 1 for a in after_ops]]
    ends = [*after_ops, count - 1]
    return [range(start, end + 1) for start, end in zip(starts, ends, strict=True)]


def operator_cycles(model: Model, rows: list[PerLayerRow]) -> list[int]:
    cycles = [0] * len(model.subgraphs[0].operators)
    for row, where in zip(rows, attribute_rows(model, rows), strict=True):
        if where.operator is not None:
            cycles[where.operator] += row.op_cycles
    return cycles


def assert_budget_rule(plan: FencePlan, cycles: list[int], budget: int) -> None:
    """Every segment fits the budget, unless it is one operator that alone exceeds it;
    and the plan is greedy: each fence closes a segment the next operator would overflow,
    or follows an isolated operator."""
    segments = segments_of(plan.after_ops, len(cycles))
    for segment in segments:
        total = sum(cycles[i] for i in segment)
        assert total <= budget or (len(segment) == 1 and cycles[segment[0]] > budget), (segment, total, budget)
    for segment in segments[:-1]:
        total = sum(cycles[i] for i in segment)
        isolated = len(segment) == 1 and cycles[segment[0]] > budget
        assert isolated or total + cycles[segment[-1] + 1] > budget, (segment, budget)


def assert_bound_to(plan: FencePlan, model: Model, budget: int) -> None:
    subgraph = model.subgraphs[0]
    assert plan.model_sha256 == model_sha256(model)
    assert plan.operator_count == len(subgraph.operators)
    assert plan.subgraph == 0
    assert plan.budget_cycles == budget
    for number, fence in enumerate(plan.fences):
        op = subgraph.operators[fence.after_op]
        assert fence.segment_index == number
        assert fence.output_tensor_name == tensor_name(subgraph.tensors[indices(op.outputs)[0]])
        assert fence.opcode == operator_type(model.operator_codes[op.opcodeIndex])
    assert plan.after_ops == sorted(set(plan.after_ops))


# ---------------------------------------------------------------- the policy on hand-made estimates


@pytest.mark.parametrize(
    ("costs", "budget", "after_ops"),
    [
        ([20, 20, 20, 20], 50, [1]),  # greedy: fill a segment, close it before it overflows
        ([20, 20, 20, 20], 40, [1]),  # a segment may reach the budget exactly
        ([20, 20, 20, 20], 39, [0, 1, 2]),
        ([10, 100, 10, 10], 50, [0, 1]),  # an operator over the budget is isolated, not split
        ([100, 10, 10, 10], 50, [0]),  # ... also the first
        ([10, 10, 10, 100], 50, [2]),  # ... and the last (no fence after the last operator)
        ([100, 100, 100, 100], 50, [0, 1, 2]),
        ([0, 0, 60, 0], 50, [1, 2]),  # operators without cycles ride along
        ([20, 20, 20, 20], 80, []),  # the whole model fits: no fences
        ([20, 20, 20, 20], 10**9, []),
    ],
)
def test_greedy_policy(costs: list[int], budget: int, after_ops: list[int]) -> None:
    model = chain_model(4)
    plan = plan_fences(model, hand_rows(model, costs), budget)
    assert plan.after_ops == after_ops
    assert_budget_rule(plan, costs, budget)
    assert_bound_to(plan, model, budget)
    assert plan.coverage is not None and plan.coverage.fraction == 1.0
    assert plan.coverage.total_cycles == sum(costs)


def dangling_model() -> Model:
    """ADD0's output is read by nobody, so no tensor crosses a cut after operator 0."""
    net = Net()
    source = net.tensor("input")
    constant = net.tensor("c", data=bytes(12))
    a, b, out = net.tensor("a"), net.tensor("b"), net.tensor("out")
    net.op(OP.ADD, [source, constant], [a])
    net.op(OP.ADD, [source, constant], [b])
    net.op(OP.ADD, [b, constant], [out])
    return net.model([source], [out])


def test_a_cut_no_tensor_crosses_is_skipped() -> None:
    model = dangling_model()
    subgraph = model.subgraphs[0]
    assert Graph.of(subgraph).live_after(subgraph, 0) == []
    plan = plan_fences(model, hand_rows(model, [40, 40, 40]), 50)
    # the cut after 0 would carry nothing, so the first segment goes on past the budget
    assert plan.after_ops == [1]
    assert [sum([40, 40, 40][i] for i in s) for s in segments_of(plan.after_ops, 3)] == [80, 40]
    fence_model(model, plan)  # the cut it did make is a valid fence


def test_rows_and_csv_path_give_the_same_plan(tmp_path: Path) -> None:
    model = chain_model(4)
    rows = hand_rows(model, [30, 5, 30, 5])
    header = "Original Operator,NNG Operator,Target,Op Cycles,NPU,SRAM AC,DRAM AC,OnFlash AC,OffFlash AC,MAC Count,Name"
    lines = [header] + [f"Add,Add,NPU,{r.op_cycles},{r.op_cycles},0,0,0,0,{r.mac_count},{r.name}" for r in rows]
    csv_path = tmp_path / "m_per-layer.csv"
    csv_path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert plan_fences(model, csv_path, 40) == plan_fences(model, str(csv_path), 40) == plan_fences(model, rows, 40)
    path = tmp_path / "m.tflite"
    save_model(model, path)
    assert plan_fences(path, csv_path, 40) == plan_fences(model, rows, 40)


# ---------------------------------------------------------------- what plan_fences refuses


@pytest.mark.parametrize("budget", [0, -100, 1.5, 100.0, True, "100", None])
def test_budget_must_be_a_positive_int(budget) -> None:
    model = chain_model(4)
    with pytest.raises(FenceError, match=r"budget_cycles is .*; expected a positive number of cycles"):
        plan_fences(model, hand_rows(model, [1, 2, 3, 4]), budget)


@pytest.mark.parametrize("min_coverage", [-0.01, 1.01, 2, float("nan"), "0.5", None, True])
def test_min_coverage_must_be_a_fraction(min_coverage: float) -> None:
    model = chain_model(4)
    with pytest.raises(FenceError, match=r"min_coverage is .*; expected a fraction from 0 to 1"):
        plan_fences(model, hand_rows(model, [1, 2, 3, 4]), 5, min_coverage=min_coverage)


def test_no_rows(tmp_path: Path) -> None:
    model = chain_model(4)
    with pytest.raises(FenceError, match="has no rows; there is nothing to budget"):
        plan_fences(model, [], 100)
    header_only = tmp_path / "empty_per-layer.csv"
    header_only.write_text(
        "Original Operator,NNG Operator,Target,Op Cycles,NPU,SRAM AC,DRAM AC,OnFlash AC,OffFlash AC,MAC Count,Name\n",
        encoding="utf-8",
    )
    with pytest.raises(FenceError, match=f"^{header_only}: .*no rows"):
        plan_fences(model, header_only, 100)
    # ... and even with min_coverage 0: no rows is no estimate at all
    with pytest.raises(FenceError, match="no rows"):
        plan_fences(model, [], 100, min_coverage=0.0)


def test_a_model_that_already_has_fences() -> None:
    fenced = load_model(bytes(rewrite_model_with_fences(chain_model(4), [1]).fenced_bytes))
    with pytest.raises(FenceError, match="already has fences") as caught:
        plan_fences(fenced, hand_rows(chain_model(4), [1, 2, 3, 4]), 5)
    assert caught.value.hint and "unfenced" in caught.value.hint


def test_partial_coverage_is_refused_by_default_and_recorded_when_allowed(tmp_path: Path) -> None:
    model = chain_model(4)
    rows = hand_rows(model, [30, 30, 30, 10])
    rows[3] = dataclasses.replace(rows[3], name="renamed_by_hand")
    assert DEFAULT_MIN_COVERAGE == 1.0
    with pytest.raises(FenceError) as caught:
        plan_fences(model, rows, 50)
    message = caught.value.message
    assert "only 90.00% of 100 estimated cycles" in message and "below min_coverage 100.00%" in message
    assert "row 3 'renamed_by_hand' (10 cycles)" in message
    assert caught.value.hint and "lower min_coverage knowingly" in caught.value.hint
    with pytest.raises(FenceError, match=r"below min_coverage 95\.00%"):
        plan_fences(model, rows, 50, min_coverage=0.95)

    plan = plan_fences(model, rows, 50, min_coverage=0.9)
    assert plan.after_ops == [0, 1]  # the unmatched cycles count for no operator
    assert plan.coverage is not None
    assert plan.coverage.fraction == pytest.approx(0.9)
    assert (plan.coverage.total_cycles, plan.coverage.matched_cycles) == (100, 90)
    assert [(r.index, r.name, r.op_cycles) for r in plan.coverage.unmatched_rows] == [(3, "renamed_by_hand", 10)]
    document = plan.to_json()
    validate(document, "fence-plan", "plan")
    assert document["coverage"]["fraction"] == pytest.approx(0.9)
    path = tmp_path / "plan.json"
    write_json(path, document)
    assert load_plan(path) == plan


def test_many_unmatched_rows_are_summarised() -> None:
    model = chain_model(4)
    rows = [dataclasses.replace(row, name=f"elsewhere_{row.index}") for row in hand_rows(model, [5] * 4)] * 2
    rows = [dataclasses.replace(row, index=number) for number, row in enumerate(rows)]
    with pytest.raises(FenceError, match=r"only 0\.00% .* and 3 more"):
        plan_fences(model, rows, 10)


# ---------------------------------------------------------------- FencePlan JSON


def test_cost_plan_json_round_trips_and_validates(tmp_path: Path) -> None:
    model = chain_network(0)
    count = len(model.subgraphs[0].operators)
    plan = plan_fences(model, hand_rows(model, [100 * (i + 1) for i in range(count)]), 1000)
    assert plan.fences and plan.budget_cycles == 1000 and plan.coverage is not None
    document = plan.to_json()
    validate(document, "fence-plan", "plan")
    assert set(document) == {
        "contract_version",
        "model_sha256",
        "subgraph",
        "operator_count",
        "fences",
        "budget_cycles",
        "coverage",
    }
    assert FencePlan.from_json(json.loads(json.dumps(document))) == plan
    path = tmp_path / "fence_plan.json"
    write_json(path, document)
    assert load_plan(path) == plan
    assert path.read_text(encoding="utf-8").endswith("}\n")


# ---------------------------------------------------------------- real Vela estimates


@dataclass(frozen=True)
class Estimate:
    key: str
    accelerator: str
    model: Path
    per_layer: Path
    rows: list[PerLayerRow]
    cycles: list[int]

    @property
    def total(self) -> int:
        return sum(row.op_cycles for row in self.rows)


@pytest.fixture(scope="session")
def estimates_root(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    return tmp_path_factory.mktemp("plan_fences"), {}


def get_estimate(request: pytest.FixtureRequest, root: tuple[Path, dict], key: str, accelerator: str) -> Estimate:
    folder, cache = root
    if (key, accelerator) not in cache:
        if key in ("kws", "resnet"):
            original = request.getfixturevalue(f"{key}_path")
        else:
            original = request.getfixturevalue("synth_models") / f"{key.replace('-', '_')}.tflite"
        model = folder / key / original.name
        model.parent.mkdir(exist_ok=True)
        if not model.exists():
            shutil.copyfile(original, model)
        result = compile(model, folder / key / accelerator, accelerator=accelerator)
        rows = read_per_layer(result.per_layer_csv)
        loaded = load_model(model)
        cache[key, accelerator] = Estimate(
            key, accelerator, model, result.per_layer_csv, rows, operator_cycles(loaded, rows)
        )
    return cache[key, accelerator]


@pytest.fixture(params=[(key, acc) for key in MODELS for acc in ACCELERATORS], ids=lambda p: f"{p[0]}-{p[1][6:]}")
def estimate(request: pytest.FixtureRequest, estimates_root) -> Estimate:
    return get_estimate(request, estimates_root, *request.param)


def budgets(estimate: Estimate) -> list[int]:
    largest = max(estimate.cycles)
    return sorted({1, largest - 1, largest, estimate.total // 10, estimate.total // 4, estimate.total // 2})


@pytest.mark.slow
def test_real_estimates_are_fully_attributed(estimate: Estimate) -> None:
    plan = plan_fences(estimate.model, estimate.per_layer, estimate.total // 3)
    assert plan.coverage is not None
    assert plan.coverage.fraction == 1.0
    assert plan.coverage.unmatched_rows == ()
    assert plan.coverage.total_cycles == estimate.total == sum(estimate.cycles)


@pytest.mark.slow
def test_real_plans_respect_the_budget_and_bind_to_their_model(estimate: Estimate) -> None:
    model = load_model(estimate.model)
    source_bytes = estimate.model.read_bytes()
    for budget in budgets(estimate):
        plan = plan_fences(estimate.model, estimate.per_layer, budget)
        assert_budget_rule(plan, estimate.cycles, budget)
        assert_bound_to(plan, model, budget)
        assert plan.fences, budget
        result = fence_model(estimate.model, plan)
        assert result.boundary_after_ops == plan.after_ops
        assert verify_fenced_model(result.fenced_bytes, sidecar=result.boundaries, source=source_bytes) == []
        assert result.source_sha256 == plan.model_sha256


@pytest.mark.slow
def test_one_segment_per_operator_at_the_smallest_budget(estimate: Estimate) -> None:
    plan = plan_fences(estimate.model, estimate.per_layer, 1)
    count = len(estimate.cycles)
    # every operator with cycles is alone; zero-cycle operators (a RESHAPE Vela removed) join a neighbour
    for segment in segments_of(plan.after_ops, count):
        assert sum(estimate.cycles[i] > 0 for i in segment) <= 1
    assert len(plan.fences) >= sum(c > 0 for c in estimate.cycles) - 1


@pytest.mark.slow
def test_budget_covering_the_whole_model_needs_no_fences(estimate: Estimate) -> None:
    for budget in (estimate.total, estimate.total + 1, 10 * estimate.total):
        plan = plan_fences(estimate.model, estimate.per_layer, budget)
        assert plan.fences == ()
        validate(plan.to_json(), "fence-plan", "plan")
        assert fence_model(estimate.model, plan).num_segments == 1


@pytest.mark.slow
@pytest.mark.parametrize("accelerator", ACCELERATORS)
def test_plan_is_rejected_for_another_model(request, estimates_root, accelerator: str) -> None:
    resnet = get_estimate(request, estimates_root, "resnet", accelerator)
    twin = get_estimate(request, estimates_root, "synth-residual", accelerator)  # same topology, other weights
    plan = plan_fences(resnet.model, resnet.per_layer, resnet.total // 4)
    with pytest.raises(FenceBindingError, match="model_sha256"):
        fence_model(twin.model, plan)
    kws = get_estimate(request, estimates_root, "kws", accelerator)
    with pytest.raises(FenceBindingError):
        fence_model(kws.model, plan)
    # without the hash, the names still tell the models apart
    unhashed = dataclasses.replace(plan, model_sha256=None)
    with pytest.raises(FenceBindingError, match="output_tensor_name"):
        fence_model(twin.model, unhashed)


@pytest.mark.slow
@pytest.mark.parametrize("accelerator", ACCELERATORS)
def test_csv_of_another_model_is_refused(request, estimates_root, accelerator: str) -> None:
    resnet = get_estimate(request, estimates_root, "resnet", accelerator)
    kws = get_estimate(request, estimates_root, "kws", accelerator)
    with pytest.raises(FenceError) as caught:
        plan_fences(resnet.model, kws.per_layer, 10_000)
    message = caught.value.message
    assert message.startswith(f"{kws.per_layer}: only 0.00% of {kws.total} estimated cycles")
    assert "unmatched: row 0 " in message
    # the same topology with other tensor names is no better; min_coverage 0 lets it through, and the
    # plan records that nothing was attributed: it has no fences, and its budget bounds nothing
    twin = get_estimate(request, estimates_root, "synth-residual", accelerator)
    blind = plan_fences(twin.model, resnet.per_layer, 10_000, min_coverage=0.0)
    assert blind.coverage is not None
    assert blind.coverage.fraction == 0.0 and len(blind.coverage.unmatched_rows) == len(resnet.rows)
    assert blind.fences == ()


@pytest.mark.slow
def test_rows_edited_to_unknown_names(request, estimates_root) -> None:
    """The residual ADDs' rows renamed: they are followed by convolutions, so no rule claims them.

    (A renamed row followed by a row of its own type would be taken by the preceding_copy rule.)"""
    resnet = get_estimate(request, estimates_root, "resnet", "ethos-u55-128")
    rows = list(resnet.rows)
    edited = [row.index for row in rows if row.original_operator == "Add"]
    assert len(edited) == 6  # three ADDs, each an Add and a fused Relu row
    for index in edited:
        rows[index] = dataclasses.replace(rows[index], name=f"unknown/{index}")
    lost = sum(resnet.rows[i].op_cycles for i in edited)
    with pytest.raises(FenceError, match=r"below min_coverage 100\.00%"):
        plan_fences(resnet.model, rows, resnet.total // 4)
    fraction = 1 - lost / resnet.total
    assert 0.5 < fraction < 1
    plan = plan_fences(resnet.model, rows, resnet.total // 4, min_coverage=round(fraction - 0.005, 3))
    assert plan.coverage is not None
    assert plan.coverage.fraction == pytest.approx(fraction)
    assert [r.index for r in plan.coverage.unmatched_rows] == edited
    validate(plan.to_json(), "fence-plan", "plan")


@pytest.mark.slow
@pytest.mark.parametrize("accelerator", ACCELERATORS)
def test_side_loop_plan_fence_compile(request, estimates_root, tmp_path: Path, accelerator: str) -> None:
    """model -> vela (unfenced) -> plan-fences -> fence -> vela: the fenced compile has the planned segments."""
    resnet = get_estimate(request, estimates_root, "resnet", accelerator)
    plan = plan_fences(resnet.model, resnet.per_layer, resnet.total // 3)
    fenced = tmp_path / "resnet_fenced.tflite"
    fence_model(resnet.model, plan).save(fenced)
    assert sidecar_path_for(fenced).is_file()
    compiled = compile(fenced, tmp_path / "vela", accelerator=accelerator)
    report = compiled.report
    assert list(report.boundary_after_ops) == plan.after_ops
    assert report.streams_match_segments
    assert report.coverage.fraction == 1.0
    assert report.source_sha256 == plan.model_sha256
    # fencing changes Vela's schedule, so the fenced estimate is close to, not equal to, the plan's
    planned = [sum(resnet.cycles[i] for i in s) for s in segments_of(plan.after_ops, len(resnet.cycles))]
    assert len(planned) == len(report.segments)
