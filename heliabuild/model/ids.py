"""Stable operator ids, as heliaAOT plans and reports define them.

Each operator's id is `"<subgraph>:<first output tensor name>"`; an operator
whose first output has no name falls back to `"<subgraph>:<op_type>@<position>"`.
A base id that repeats keeps its first use bare and gets `#1`, `#2`, ... on
later uses, in operator order. An id that would still select another operator
(one spelled twice after suffixing, or equal to another operator's node id) is
replaced by the operator's node id. `id_source` says which rule applied.
"""

from __future__ import annotations

from dataclasses import dataclass

from heliabuild.model.graph import indices, tensor_name
from heliabuild.model.io import Model
from heliabuild.model.opcodes import operator_type

ID_FROM_OUTPUT_NAME = "output_name"
ID_FROM_POSITION = "op_type_position"
ID_FROM_NODE_ID = "node_id"


@dataclass(frozen=True)
class OperatorId:
    """The stable id of the operator at `index` in its subgraph."""

    id: str
    id_source: str
    index: int
    node_id: str
    op_type: str

    def to_json(self) -> dict[str, object]:
        return {
            "id": self.id,
            "id_source": self.id_source,
            "index": self.index,
            "node_id": self.node_id,
            "op_type": self.op_type,
        }


def node_id(subgraph: int, index: int) -> str:
    """heliabuild's node id: opaque, unique, never containing a colon."""
    return f"{subgraph}/{index}"


def split_operator_id(value: str) -> tuple[int, str]:
    """Split a stable id on its first colon only: tensor names may contain colons."""
    subgraph, sep, rest = value.partition(":")
    if not sep or not subgraph.isdigit():
        raise ValueError(f"{value!r} is not a stable operator id '<subgraph>:<name>'")
    return int(subgraph), rest


def stable_operator_ids(model: Model, subgraph: int = 0) -> list[OperatorId]:
    """The id of each operator of `subgraph`, in operator order (module docstring)."""
    return _assign(model, subgraph)[0]


def operator_id_warnings(model: Model, subgraph: int = 0) -> list[str]:
    """One sentence for each stable id that would also select another operator, naming the operators it
    would select and the node ids the plan uses instead (the conversion's warnings)."""
    return _assign(model, subgraph)[1]


def _and(items: list[str]) -> str:
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} and {items[-1]}"


def _assign(model: Model, subgraph: int) -> tuple[list[OperatorId], list[str]]:
    """The ids of `subgraph`'s operators and the warnings for the ids that fell back to node ids."""
    graph = model.subgraphs[subgraph]
    tensors = graph.tensors or []
    bases: list[tuple[str, str, str]] = []
    for position, op in enumerate(graph.operators or []):
        op_type = operator_type(model.operator_codes[op.opcodeIndex])
        outputs = indices(op.outputs)
        name = tensor_name(tensors[outputs[0]]) if outputs and outputs[0] >= 0 else ""
        if name:
            bases.append((f"{subgraph}:{name}", ID_FROM_OUTPUT_NAME, op_type))
        else:
            bases.append((f"{subgraph}:{op_type}@{position}", ID_FROM_POSITION, op_type))

    repeats: dict[str, int] = {}
    suffixed: list[str] = []
    for base, _, _ in bases:
        count = repeats.get(base, 0)
        repeats[base] = count + 1
        suffixed.append(base if count == 0 else f"{base}#{count}")

    spelled: dict[str, list[int]] = {}
    for position, value in enumerate(suffixed):
        spelled.setdefault(value, []).append(position)
    node_owner = {node_id(subgraph, position): position for position in range(len(bases))}

    result: list[OperatorId] = []
    for position, ((_, source, op_type), value) in enumerate(zip(bases, suffixed, strict=True)):
        own_node = node_id(subgraph, position)
        if len(spelled[value]) > 1 or value in node_owner:
            value, source = own_node, ID_FROM_NODE_ID
        result.append(OperatorId(id=value, id_source=source, index=position, node_id=own_node, op_type=op_type))

    warnings: list[str] = []
    for value, positions in spelled.items():
        selected = sorted({*positions, *([node_owner[value]] if value in node_owner else [])})
        if len(selected) > 1:
            operators = _and([f"{p} ({bases[p][2]})" for p in selected])
            fallbacks = _and([node_id(subgraph, p) for p in positions])
            warnings.append(
                f"{model.name}: stable id {value!r} would select operators {operators}, so the plan names "
                f"{'it' if len(positions) == 1 else 'them'} by node id ({fallbacks})"
            )
    return result, warnings
