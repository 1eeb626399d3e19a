"""The report (`<prefix>_report.json`, `schemas/report-schema.json`): it explains the plan, never changes it.

`build_report(model, plan, platform=...)` reads the plan document the
planner wrote, the model it describes and the platform, and returns the
report document:

- `schema_version`, `generator`, `model`, `module_prefix` and `platform`,
  repeated from the plan;
- `operators[]`, one per plan operator: `id`, `index`, `node_id`, `op_type`,
  `entry` (the plan's `kernel.entry`, repeated), `macs`, the alternatives of
  each knob that applies (`heliabuild.aot.knobs.alternatives`) and the
  `constants` the operator reads, by storage root, with `bytes`, `stageable`
  and `reason` (`heliabuild.aot.facts`; `pinned` when the plan pins it);
- `stream_pool`: the configured pool's `memory`, `bytes` and `alignment`, each
  unit's span (`layout`) and the units split at multiples of the pool
  memory's DMA boundary counted from the pool base (`pieces`); null without a
  pool;
- `kernel_calls`: the CORE symbols each operator's generated code calls
  (`heliabuild.aot.entries.core_calls`), `calls` sorted by symbol with the
  calling operators in execution order, and `unrecorded_operator_ids`;
- `hints`, `folded_variables` and `fp16_overflow` (below).

MACs (`macs`): multiply-accumulates from the model's static shapes,

- CONV_2D: batch x out_h x out_w x out_c x kernel_h x kernel_w x in_c / groups;
- DEPTHWISE_CONV_2D: batch x out_h x out_w x out_c x kernel_h x kernel_w;
- FULLY_CONNECTED: rows x out x in, rows being the input's elements / in;
- TRANSPOSE_CONV: batch x in_h x in_w x in_c x kernel_h x kernel_w x out_c;
- BATCH_MATMUL: the output's elements x the contracted extent;
- an `ethos-u` command stream: the sum of Vela's per-layer `MAC Count` over
  the rows of its stream, when the per-layer rows are given (the k-th run of
  consecutive `NPU` rows is the k-th `ethos-u` operator; null when the runs
  and the operators do not pair up), else null;
- 0 for every other operator (none of them multiply-accumulates), null where
  a shape the formula needs is not static.

Hints (`hints`, each with a free-form `facts` object): heliabuild.aot.hints.

`folded_variables` is always []: heliaAOT lists there the variable tensors
it folds into constants; heliabuild generates no code and folds nothing.

`fp16_overflow` comes from `heliabuild.aot.fp16_overflow`, on the entries and
weight layouts the plan records; a threshold below zero (a bias larger than
the headroom) is written as 0, since no input magnitude is safe.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from typing import Any

from heliabuild.aot import knobs
from heliabuild.aot.entries import PlannedKernel, core_calls, kernel_choice
from heliabuild.aot.facts import (
    NPU_OPERATOR,
    REASON_PINNED,
    OperatorFacts,
    constants_by_operator,
    model_facts,
    storage_roots,
    unstageable_reasons,
)
from heliabuild.aot.fp16_overflow import fp16_overflow
from heliabuild.aot.hints import knob_hints, placement_hint
from heliabuild.model.io import Model

SCHEMA_VERSION = 1


def _static(*shapes: Sequence[int] | None) -> bool:
    return all(shape is not None and all(d >= 0 for d in shape) for shape in shapes)


def operator_macs(facts: OperatorFacts) -> int | None:
    """The operator's multiply-accumulates from the model's shapes (module docstring); None for `ethos-u`
    (see `npu_macs`) and where a shape the formula needs is not static."""
    op_type = facts.op_type
    data, out, weights = facts.data_input, facts.output, facts.weight_shape
    if op_type == NPU_OPERATOR:
        return None
    if op_type in ("CONV_2D", "DEPTHWISE_CONV_2D", "TRANSPOSE_CONV"):
        if data is None or out is None or weights is None or not _static(data.shape, out.shape, weights):
            return None
        if len(out.shape) != 4 or len(weights) != 4 or len(data.shape) != 4:
            return None
        if op_type == "CONV_2D":
            n, oh, ow, oc = out.shape
            return n * oh * ow * oc * weights[1] * weights[2] * weights[3]
        if op_type == "DEPTHWISE_CONV_2D":
            n, oh, ow, oc = out.shape
            return n * oh * ow * oc * weights[1] * weights[2]
        n, ih, iw, ic = data.shape
        return n * ih * iw * ic * weights[1] * weights[2] * weights[0]
    if op_type == "FULLY_CONNECTED":
        if data is None or weights is None or len(weights) != 2 or not _static(data.shape, weights):
            return None
        units, depth = weights
        if depth == 0:
            return 0
        rows = math.prod(data.shape) // depth
        return rows * units * depth
    if op_type == "BATCH_MATMUL":
        lhs = facts.input(0)
        if lhs is None or out is None or not _static(lhs.shape, out.shape) or len(lhs.shape) < 2:
            return None
        adjoint = bool(facts.option("adj_x", False))
        depth = lhs.shape[-2] if adjoint else lhs.shape[-1]
        return math.prod(out.shape) * depth
    return 0


def _row_value(row: Any, attribute: str, column: str) -> Any:
    if isinstance(row, Mapping):
        return row.get(attribute, row.get(column))
    return getattr(row, attribute)


def npu_macs(facts: Sequence[OperatorFacts], rows: Sequence[Any]) -> dict[int, int] | None:
    """Per `ethos-u` operator index, the sum of `MAC Count` over its stream's per-layer rows; None when the
    runs of consecutive `NPU` rows do not pair up with the `ethos-u` operators. Rows are PerLayerRow records
    or mappings with `target` / `mac_count` (or the CSV's `Target` / `MAC Count`)."""
    runs: list[int] = []
    inside = False
    for row in rows:
        if str(_row_value(row, "target", "Target")).upper() == "NPU":
            count = int(float(_row_value(row, "mac_count", "MAC Count") or 0))
            if inside:
                runs[-1] += count
            else:
                runs.append(count)
                inside = True
        else:
            inside = False
    streams = [f.index for f in facts if f.op_type == NPU_OPERATOR]
    if len(runs) != len(streams):
        return None
    return dict(zip(streams, runs, strict=True))


def _capabilities(plan: Mapping[str, Any], platform: Any) -> tuple[str, ...]:
    if platform is not None and hasattr(platform, "capabilities"):
        return tuple(platform.capabilities)
    return tuple(plan.get("platform", {}).get("capabilities", ()))


def _knob_values(operator: Mapping[str, Any]) -> dict[str, str]:
    return {name: choice["value"] for name, choice in (operator.get("knobs") or {}).items()}


def _report_knobs(facts: OperatorFacts, capabilities: Sequence[str]) -> dict[str, list[dict[str, Any]]]:
    result: dict[str, list[dict[str, Any]]] = {}
    for name in knobs.applicable_knobs(facts, capabilities):
        result[name] = [
            {"value": value, "applies": applies, "reason": reason}
            for value, applies, reason in knobs.alternatives(name, facts, capabilities)
        ]
    return result


def _constant_ids(plan: Mapping[str, Any], model: Model) -> dict[int, str]:
    """Root tensor index -> the plan's tensors[].id (tensors[] is in storage-root order)."""
    roots = storage_roots(model)
    tensors = plan.get("tensors") or []
    if len(tensors) == len(roots):
        return {
            root.tensor: str(entry.get("storage_id") or entry["id"]) for root, entry in zip(roots, tensors, strict=True)
        }
    return {root.tensor: root.name or f"#{root.tensor}" for root in roots}


def _constant_reasons(
    plan: Mapping[str, Any], model: Model, constants: Sequence[Any] | None, ids: Mapping[int, str]
) -> dict[int, str | None]:
    """Root tensor index -> why it cannot be staged (None when it can): the planner's ScheduleConstant reasons
    when given, else the model's reasons with `pinned` for a constant the plan pins."""
    reasons = unstageable_reasons(model)
    if constants is not None:
        by_name = {str(c.id): c.stageable_reason for c in constants}
        return {root: by_name.get(ids[root], reasons.get(root)) for root in reasons}
    residency = {str(t.get("storage_id") or t["id"]): t.get("residency") for t in plan.get("tensors") or []}
    result: dict[int, str | None] = {}
    for root, reason in reasons.items():
        if reason is None and residency.get(ids[root]) == "pin":
            reason = REASON_PINNED
        result[root] = reason
    return result


def _schedule_of(plan: Mapping[str, Any]) -> Any:
    """The plan's schedule with what the pool layout needs (the pool, and each unit's id, tensors, offsets,
    issue point, engine and bytes), read leniently: the plan is the planner's own, already derived."""
    from heliabuild.aot.schedule import Schedule, SchedulePool, Unit

    document = plan.get("schedule") or {}
    pool = document.get("pool")
    units = tuple(
        Unit(
            id=int(unit["id"]),
            tensors=tuple(unit.get("tensors") or ()),
            pool_offset=int(unit["pool_offset"]),
            issue_after=unit.get("issue_after"),
            engine=str(unit.get("engine", "cpu")),
            bytes=int(unit["bytes"]),
            source_offset=int(unit.get("source_offset") or 0),
        )
        for unit in document.get("units") or ()
    )
    return Schedule(
        source=str(document.get("source", "none")),
        pool=None if pool is None else SchedulePool(str(pool["memory"]), int(pool["bytes"]), int(pool["alignment"])),
        units=units,
    )


def _stream_pool(plan: Mapping[str, Any], schedule: Any, platform: Any, dma_boundary: int | None) -> Any:
    from heliabuild.aot.schedule_plan import pieces, pool_layout

    if schedule is None:
        schedule = _schedule_of(plan)
    pool = schedule.pool
    if pool is None:
        return None
    if dma_boundary is None and platform is not None and hasattr(platform, "dma_boundary"):
        dma_boundary = platform.dma_boundary(pool.memory)
    return {
        "memory": pool.memory,
        "bytes": pool.bytes,
        "alignment": pool.alignment,
        "layout": [
            {"unit": span.unit, "offset": span.pool_offset, "bytes": span.bytes} for span in pool_layout(schedule)
        ],
        "pieces": [
            {"unit": piece.unit, "offset": piece.pool_offset, "bytes": piece.bytes}
            for piece in pieces(schedule, dma_boundary)
        ],
    }


def kernel_calls(
    facts: Sequence[OperatorFacts], choices: Sequence[PlannedKernel], ids: Sequence[str] | None = None
) -> dict[str, Any]:
    """`kernel_calls` from each operator's kernel choice (symbols sorted; operator ids, the plan's `ids` or
    the facts' own, in execution order)."""
    calls: dict[str, dict[str, None]] = {}  # symbol -> its callers, in execution order
    unrecorded: list[str] = []
    names = [layer.id for layer in facts] if ids is None else list(ids)
    for layer, choice, name in zip(facts, choices, names, strict=True):
        symbols = core_calls(layer, choice)
        if symbols is None:
            unrecorded.append(name)
            continue
        for symbol in symbols:
            calls.setdefault(symbol, {})[name] = None
    return {
        "calls": [{"symbol": symbol, "operator_ids": list(calls[symbol])} for symbol in sorted(calls)],
        "unrecorded_operator_ids": unrecorded,
    }


def build_report(
    model: Model,
    plan: Mapping[str, Any],
    *,
    platform: Any = None,
    facts: Sequence[OperatorFacts] | None = None,
    constants: Sequence[Any] | None = None,
    schedule: Any = None,
    vela_per_layer: str | os.PathLike[str] | None = None,
    vela_rows: Sequence[Any] | None = None,
    dma_boundary: int | None = None,
) -> dict[str, Any]:
    """The report document of `plan`, the plan document the planner made of `model` (module docstring).

    `platform` is the Platform (or its name) the plan is for; without it the
    capabilities come from the plan and the stream pool's pieces are not
    split (unless `dma_boundary` is given) and no placement hint is made.
    `facts` are `model_facts(model)` when the caller has them; `constants`
    the planner's ScheduleConstant records (their `stageable_reason` is the
    report's reason), else the reasons are derived from the model and the
    plan's residencies; `schedule` the derived Schedule, else it is read
    from the plan. `vela_per_layer` (a CSV path) or `vela_rows` (parsed rows)
    give the `ethos-u` operators' MACs.
    """
    if isinstance(platform, str):
        from heliabuild.aot.platforms import get_platform

        platform = get_platform(platform)
    facts = model_facts(model) if facts is None else facts
    operators = list(plan.get("operators") or [])
    if len(operators) != len(facts):
        raise ValueError(f"the plan lists {len(operators)} operators, but {model.name} has {len(facts)}")
    capabilities = _capabilities(plan, platform)

    if vela_rows is None and vela_per_layer is not None:
        from heliabuild.vela.per_layer import read_per_layer

        vela_rows = read_per_layer(vela_per_layer)
    stream_macs = npu_macs(facts, vela_rows) if vela_rows is not None else None

    ids = _constant_ids(plan, model)
    reasons = _constant_reasons(plan, model, constants, ids)
    reads = constants_by_operator(model)

    report_operators: list[dict[str, Any]] = []
    choices: list[PlannedKernel] = []
    for layer, operator, read in zip(facts, operators, reads, strict=True):
        choice = kernel_choice(layer, _knob_values(operator), capabilities)
        entry = (operator.get("kernel") or {}).get("entry")
        if entry is not None and entry != choice.symbol:
            choice = PlannedKernel(entry, choice.provider, choice.candidates, choice.requantization, symbol=entry)
        choices.append(choice)
        macs = operator_macs(layer)
        if layer.op_type == NPU_OPERATOR and stream_macs is not None:
            macs = stream_macs.get(layer.index)
        report_operators.append(
            {
                "id": operator["id"],
                "index": layer.index,
                "node_id": operator.get("node_id", layer.node_id),
                "op_type": layer.op_type,
                "entry": entry,
                "macs": macs,
                "knobs": _report_knobs(layer, capabilities),
                "constants": [
                    {
                        "id": ids.get(c.root, c.root_name),
                        "bytes": c.bytes,
                        "stageable": reasons.get(c.root) is None,
                        "reason": reasons.get(c.root),
                    }
                    for c in read
                ],
            }
        )

    hints = knob_hints(facts, operators, capabilities)
    placement = placement_hint(plan, model, platform, ids, reasons)
    if placement is not None:
        hints.append(placement)

    overflow = fp16_overflow(
        model,
        facts,
        entries={
            layer.index: (op.get("kernel") or {}).get("entry") for layer, op in zip(facts, operators, strict=True)
        },
        weight_layouts={
            layer.index: ((op.get("fixed") or {}).get("weight_layout") or {}).get("value")
            for layer, op in zip(facts, operators, strict=True)
        },
        capabilities=capabilities,
    )
    ids_by_index = {layer.index: op["id"] for layer, op in zip(facts, operators, strict=True)}
    return {
        "schema_version": SCHEMA_VERSION,
        "generator": dict(plan["generator"]),
        "model": dict(plan["model"]),
        "module_prefix": plan["module_prefix"],
        "platform": dict(plan["platform"]),
        "operators": report_operators,
        "stream_pool": _stream_pool(plan, schedule, platform, dma_boundary),
        "kernel_calls": kernel_calls(facts, choices, [op["id"] for op in operators]),
        "hints": hints,
        "folded_variables": [],
        "fp16_overflow": [
            {
                "operator": ids_by_index[item.operator_index],
                "entry": item.entry,
                "model_input": item.model_input,
                "path": list(item.path),
                "threshold": max(item.threshold, 0.0),
                "channel": item.channel,
                "block": item.block,
                "weight_sum": item.weight_sum,
                "bias": item.bias,
            }
            for item in overflow
        ],
    }
