"""Cost-based fence planning: cut a model where Vela's estimate reaches a budget.

It uses both the fence contract (heliabuild.fence) and Vela's estimate (heliabuild.vela), so it sits above
both, in heliabuild.planning.

`plan_fences` budgets on Vela's per-layer estimate attributed to original
operators (heliabuild.vela.attribution). Walking the operators in order, it
closes a segment before an operator that would take the segment past
`budget_cycles`; an operator that alone exceeds the budget is isolated in a
segment of its own, never split. A cut no tensor crosses cannot carry a fence
and is skipped, so the segment goes on. The plan is bound to the model
(`model_sha256`, operator count, and each fence's output tensor name and
operator type) and records the budget and the coverage.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from ai_edge_litert import schema_py_generated as schema

from heliabuild.errors import FenceError
from heliabuild.fence.binding import primary_subgraph
from heliabuild.fence.contract import check_unfenced
from heliabuild.fence.plan import Fence, FencePlan
from heliabuild.model.graph import Graph, indices, tensor_name
from heliabuild.model.io import Model, load_model, model_sha256
from heliabuild.model.opcodes import operator_type
from heliabuild.vela.attribution import attribute_rows, coverage_of
from heliabuild.vela.binding import per_layer_mismatch
from heliabuild.vela.per_layer import read_per_layer

DEFAULT_MIN_COVERAGE = 1.0


def plan_fences(
    model: str | os.PathLike[str] | bytes | Model,
    per_layer: str | os.PathLike[str] | Sequence[object],
    budget_cycles: int,
    min_coverage: float = DEFAULT_MIN_COVERAGE,
) -> FencePlan:
    """A FencePlan for the unfenced `model` from Vela's per-layer CSV of that model.

    `per_layer` is the CSV's path or its rows (heliabuild.vela.PerLayerRow).
    Raises FenceError when there are no rows, when the rows are not bound to
    the model whatever `min_coverage` (heliabuild.vela.binding.per_layer_mismatch:
    a CPU row that names no operator of the model, such as a fence's row of
    the fenced model's CSV, naming that row), when the attributed share of
    the cycles is below `min_coverage` (naming the unmatched rows), for a
    budget that is not a positive integer, and for a model that already has
    fences.
    """
    loaded = load_model(model)
    subgraph = primary_subgraph(loaded)
    if isinstance(budget_cycles, bool) or not isinstance(budget_cycles, int) or budget_cycles <= 0:
        raise FenceError(f"{loaded.name}: budget_cycles is {budget_cycles!r}; expected a positive number of cycles")
    if isinstance(min_coverage, bool) or not isinstance(min_coverage, int | float) or not 0 <= min_coverage <= 1:
        raise FenceError(f"{loaded.name}: min_coverage is {min_coverage!r}; expected a fraction from 0 to 1")
    check_unfenced(
        loaded,
        subgraph,
        "plan fences on the unfenced model",
        hint="Run Vela on the unfenced model and plan from its per-layer CSV.",
    )
    rows = list(read_per_layer(per_layer) if isinstance(per_layer, str | os.PathLike) else per_layer)
    source = str(per_layer) if isinstance(per_layer, str | os.PathLike) else "the per-layer rows"
    if not rows:
        raise FenceError(f"{source}: Vela's per-layer estimate has no rows; there is nothing to budget")
    mismatch = per_layer_mismatch(loaded, rows)
    if mismatch is not None:
        raise FenceError(
            f"{source}: not Vela's per-layer estimate of {loaded.name}: {mismatch}",
            hint="Plan from the per-layer CSV of Vela run on this very (unfenced) model.",
        )
    attributions = attribute_rows(loaded, rows)
    coverage = coverage_of(rows, attributions)
    if coverage.fraction < min_coverage:
        unmatched = ", ".join(f"row {r.index} {r.name!r} ({r.op_cycles} cycles)" for r in coverage.unmatched_rows[:5])
        more = len(coverage.unmatched_rows) - 5
        raise FenceError(
            f"{source}: only {coverage.fraction:.2%} of {coverage.total_cycles} estimated cycles could be attributed "
            f"to operators of {loaded.name}, below min_coverage {min_coverage:.2%}; unmatched: {unmatched}"
            + (f" and {more} more" if more > 0 else ""),
            hint="Check that the CSV comes from Vela run on this very model, or lower min_coverage knowingly.",
        )

    count = len(subgraph.operators or [])
    cycles = [0] * count
    for row, where in zip(rows, attributions, strict=True):
        if where.operator is not None:
            cycles[where.operator] += row.op_cycles
    after_ops = _cuts(subgraph, cycles, budget_cycles)
    tensors = subgraph.tensors or []
    fences = []
    for segment_index, after_op in enumerate(after_ops):
        op = subgraph.operators[after_op]
        outputs = indices(op.outputs)
        fences.append(
            Fence(
                after_op=after_op,
                output_tensor_name=tensor_name(tensors[outputs[0]]) if outputs else None,
                opcode=operator_type(loaded.operator_codes[op.opcodeIndex]),
                segment_index=segment_index,
            )
        )
    return FencePlan(
        fences=tuple(fences),
        operator_count=count,
        subgraph=0,
        model_sha256=model_sha256(loaded),
        budget_cycles=budget_cycles,
        coverage=coverage,
    )


def _cuts(subgraph: schema.SubGraphT, cycles: list[int], budget: int) -> list[int]:
    """Positions after which to fence so no segment exceeds `budget` unless one operator alone does."""
    count = len(cycles)
    live = Graph.of(subgraph).live_after_each(subgraph, range(count - 1))  # every cut at once: linear

    def can_cut(after_op: int) -> bool:
        return 0 <= after_op < count - 1 and bool(live[after_op])

    cuts: list[int] = []
    running = members = 0
    for index, cost in enumerate(cycles):
        if members and running + cost > budget and can_cut(index - 1):
            cuts.append(index - 1)
            running = members = 0
        running += cost
        members += 1
        if cost > budget and can_cut(index):
            cuts.append(index)
            running = members = 0
    return cuts
