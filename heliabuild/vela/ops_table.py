"""The operator table of a model (`heliabuild ops MODEL [--vela-per-layer CSV]`).

One row per operator of the model's first subgraph, in execution order: the original index (the one `fence
--after-ops` and fence plans use; None for an ETHOS_U_STREAM_SPLIT fence), the stable id (heliabuild.model.ids; the
last column of the terminal table), the type, and each output's shape and dtype. Given Vela's per-layer CSV of the
model, each row also has the sum of Vela's estimated `Op Cycles` of the CSV rows attributed to the operator
(heliabuild.vela.attribution) and where they run: `NPU`, `CPU`, `NPU+CPU`, or None when no row is attributed to it
(then the cycles are None too). The CSV must be bound to the model (heliabuild.vela.binding.per_layer_binding_mismatch)
and every one of its rows attributed to an operator: a row that belongs to none means a CSV of another model (the
binding checks the names of the rows Vela left on the CPU, and a model all on the NPU has none), so a table never
shows part of Vela's cycles as the whole. Vela's compiled model (holding `ethos-u` operators) with a CSV is refused:
the CSV names the operators of the model Vela compiled.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from ai_edge_litert import schema_py_generated as schema

from heliabuild.errors import HeliaError, VelaError
from heliabuild.fence.contract import is_fence_name
from heliabuild.files import json_text
from heliabuild.model.graph import indices
from heliabuild.model.ids import stable_operator_ids
from heliabuild.model.io import Model, load_model
from heliabuild.tables import text_table
from heliabuild.units import count_text
from heliabuild.vela.names import ESTIMATE

FORMATS = ("text", "json")
_DTYPES = {code: name.lower() for name, code in vars(schema.TensorType).items() if not name.startswith("_")}
_PLACEMENT_ORDER = ("NPU", "CPU")


@dataclass(frozen=True)
class OutputTensor:
    """An output tensor: its shape (None for an unknown rank) and its dtype name (`int8`, `float32`)."""

    shape: tuple[int, ...] | None
    dtype: str

    def to_json(self) -> dict[str, Any]:
        return {"shape": None if self.shape is None else list(self.shape), "dtype": self.dtype}

    def text(self) -> str:
        shape = "?" if self.shape is None else "x".join(str(d) for d in self.shape) or "scalar"
        return f"{shape} {self.dtype}"


@dataclass(frozen=True)
class OperatorRow:
    """One operator: `position` in the subgraph, `index` its original index (None for a fence), its
    stable id and type, its outputs, and (with a per-layer CSV) Vela's estimated cycles and placement."""

    position: int
    index: int | None
    id: str
    type: str
    outputs: tuple[OutputTensor, ...]
    estimated_cycles: int | None
    placement: str | None

    def to_json(self) -> dict[str, Any]:
        return {
            "position": self.position,
            "index": self.index,
            "id": self.id,
            "type": self.type,
            "outputs": [output.to_json() for output in self.outputs],
            "estimated_cycles": self.estimated_cycles,
            "placement": self.placement,
        }


def operator_table(
    model_path: str | os.PathLike[str] | Model, per_layer: str | os.PathLike[str] | None = None
) -> list[OperatorRow]:
    """The rows of the model's table (module docstring). A per-layer CSV of another model is refused with
    VelaError naming the first row that does not match."""
    model = load_model(model_path)
    graph = model.subgraphs[0]
    fence_flags = [is_fence_name(model.operator_codes[op.opcodeIndex]) for op in graph.operators or []]
    originals = [position for position, is_fence in enumerate(fence_flags) if not is_fence]
    fence_positions = [position for position, is_fence in enumerate(fence_flags) if is_fence]
    original_index = {position: index for index, position in enumerate(originals)}
    cycles: dict[int, int] = {}
    targets: dict[int, set[str]] = {}
    if per_layer is not None:
        from heliabuild.vela.attribution import attribute_rows
        from heliabuild.vela.binding import per_layer_binding_mismatch
        from heliabuild.vela.per_layer import read_per_layer
        from heliabuild.vela.streams import command_streams

        if command_streams(model).count > 0:
            raise VelaError(
                f"{model.name}: Vela's compiled model (it holds ethos-u operators): its per-layer CSV names the "
                "operators of the model Vela compiled, not these",
                hint="give the model Vela compiled with --vela-per-layer, or this model without it",
            )
        mismatch = per_layer_binding_mismatch(model, per_layer)
        if mismatch is not None:
            raise VelaError(mismatch, hint="pass the per-layer CSV Vela wrote with this model")
        rows = read_per_layer(per_layer)
        attributions = attribute_rows(model, rows)
        unmatched = [row for row, where in zip(rows, attributions, strict=True) if not where.matched]
        if unmatched:
            first = unmatched[0]
            raise VelaError(
                f"{per_layer}: not Vela's per-layer CSV of {model.name}: row {first.index + 1} ({first.target} "
                f"{first.nng_operator} {first.name!r}) belongs to no operator of the model "
                f"({len(unmatched)} of {len(rows)} rows do not)",
                hint="pass the per-layer CSV Vela wrote with this model",
            )
        for row, where in zip(rows, attributions, strict=True):
            if where.operator is not None:
                position = originals[where.operator]
            else:
                assert where.fence is not None  # every row is matched: an operator's or a fence's
                position = fence_positions[where.fence]
            cycles[position] = cycles.get(position, 0) + row.op_cycles
            targets.setdefault(position, set()).add(row.target)
    tensors = graph.tensors or []
    table: list[OperatorRow] = []
    for operator_id, op in zip(stable_operator_ids(model), graph.operators or [], strict=True):
        position = operator_id.index
        placement = targets.get(position)
        table.append(
            OperatorRow(
                position=position,
                index=original_index.get(position),
                id=operator_id.id,
                type=operator_id.op_type,
                outputs=tuple(_tensor_info(tensors[t]) for t in indices(op.outputs) if t >= 0),
                estimated_cycles=cycles.get(position),
                placement=None if placement is None else "+".join(sorted(placement, key=_placement_key)),
            )
        )
    return table


def _placement_key(target: str) -> tuple[int, str]:
    """NPU before CPU, then any other target Vela names, alphabetically."""
    order = _PLACEMENT_ORDER.index(target) if target in _PLACEMENT_ORDER else len(_PLACEMENT_ORDER)
    return order, target


def _tensor_info(tensor: schema.TensorT) -> OutputTensor:
    shape = None if tensor.shape is None else tuple(int(d) for d in indices(tensor.shape))
    return OutputTensor(shape=shape, dtype=_DTYPES.get(tensor.type, f"type{tensor.type}"))


def format_table(rows: list[OperatorRow], fmt: str = "text") -> str:
    """`rows` as the terminal table (`text`: one line per operator, `-` for a figure not known) or as
    canonical JSON (`json`: `{"operators": [...]}`); HeliaError for another format."""
    if fmt not in FORMATS:
        raise HeliaError(f"ops --format: found {fmt!r}, expected one of {', '.join(FORMATS)}")
    if fmt == "json":
        return json_text({"operators": [row.to_json() for row in rows]})
    # The stable id last: a real model's ids run to hundreds of characters (TFLite names an operator by
    # every tensor name fused into it), which would push every other column off the screen.
    header = ["index", "type", "outputs", ESTIMATE, "placement", "id"]
    cells = [
        [
            "-" if row.index is None else str(row.index),
            row.type,
            ", ".join(output.text() for output in row.outputs) or "-",
            count_text(row.estimated_cycles),
            row.placement or "-",
            row.id,
        ]
        for row in rows
    ]
    return "\n".join(text_table(header, cells, right={3})) + "\n"
