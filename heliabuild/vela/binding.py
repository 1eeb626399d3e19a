"""Whether Vela's outputs belong to a model, by content: neither a per-layer CSV nor a compiled model holds
the hash of the model Vela compiled, so they are bound by the names Vela keeps.

Vela keeps every tensor name the compiled model still has: the graph's inputs
and outputs, and the inputs and outputs of every operator it leaves on the CPU
(the fences included). Its per-layer CSV has one row per operation, in
execution order, `Target` `NPU` for an operation of a command stream and
`CPU` for an operator left on the CPU, named after the operation's output
tensor. Hence:

- `per_layer_mismatch(model, rows)`: the CSV of the model Vela compiled has
  a `CPU` row for each of the model's operators Vela left on the CPU, in
  order, named after that operator's output; a row that names no operator of
  the model (a fence's row in the CSV of the fenced model, given for the
  unfenced one) does not match.
- `compiled_per_layer_mismatch(compiled, rows)`: against Vela's compiled
  model, the rows are runs of `NPU` rows, one per `ethos-u` operator (one
  command stream), and `CPU` rows, one per other operator, in the compiled
  model's order; each `CPU` row is named after its operator's first output,
  and each `ethos-u` operator's outputs are named by rows of its run.
- `compilation_mismatch(model, compiled)`: the compiled model of `model`
  has the model's graph inputs and outputs, each operator it left on the CPU
  is an operator of the model of the same type and output, in order, and it
  has the model's fences. Names alone cannot tell apart two models that
  differ only in their weights: where segments.json records the compiled
  model's hash (`compiled_sha256`), that binds it exactly.

Each returns None when the binding holds, else one sentence naming the first
row (1-based, as a spreadsheet shows the data rows) or operator that does not
match; the caller names the files and raises its stage's error.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from ai_edge_litert import schema_py_generated as schema

from heliabuild.fence.contract import is_fence_name
from heliabuild.model.graph import indices, tensor_name
from heliabuild.model.io import Model
from heliabuild.model.opcodes import operator_type
from heliabuild.vela.per_layer import PerLayerRow
from heliabuild.vela.streams import NPU_OPERATOR

NPU_TARGET = "NPU"
CPU_TARGET = "CPU"
PLACEHOLDER_PREFIX = "placeholder-for-"
"""How Vela names the row of an operator with no output tensor (ASSIGN_VARIABLE): such a row names nothing."""


def _outputs(model: Model, op: schema.OperatorT) -> list[str]:
    tensors = model.subgraphs[0].tensors or []
    return [tensor_name(tensors[t]) for t in indices(op.outputs) if t >= 0]


def _type(model: Model, op: schema.OperatorT) -> str:
    return operator_type(model.operator_codes[op.opcodeIndex])


def _row(row: PerLayerRow) -> str:
    return f"row {row.index + 1} ({row.target} {row.original_operator} {row.name!r})"


def per_layer_mismatch(model: Model, rows: Sequence[PerLayerRow]) -> str | None:
    """None when every `CPU` row of `rows` names, in order, the output of an operator of `model` (the model
    Vela compiled); else the first row that does not."""
    operators = model.subgraphs[0].operators or []
    elsewhere = _other_subgraph_outputs(model)
    position = 0
    for row in rows:
        if row.target != CPU_TARGET:
            continue
        found = position
        while found < len(operators) and row.name not in _outputs(model, operators[found]):
            found += 1
        if found < len(operators):
            position = found + 1
        elif row.name not in elsewhere and not row.name.startswith(PLACEHOLDER_PREFIX):
            return f"{_row(row)} names no operator output of the model after the previous CPU row's"
    return None


def _other_subgraph_outputs(model: Model) -> set[str]:
    """The output names of the operators of every subgraph but the first: Vela writes the rows of each
    subgraph it places on the NPU (a CALL_ONCE initialization subgraph of VAR_HANDLE and ASSIGN_VARIABLE
    passthroughs, say), and a CPU row of one of those belongs to the model too."""
    names: set[str] = set()
    for graph in model.subgraphs[1:]:
        tensors = graph.tensors or []
        for op in graph.operators or []:
            names.update(tensor_name(tensors[t]) for t in indices(op.outputs) if t >= 0)
    return names


def compiled_per_layer_mismatch(compiled: Model, rows: Sequence[PerLayerRow]) -> str | None:
    """None when `rows` are the per-layer rows of the model Vela compiled into `compiled` (module
    docstring); else the first row, or operator of `compiled`, that does not match."""
    operators = compiled.subgraphs[0].operators or []
    next_row = 0
    for position, op in enumerate(operators):
        kind, outputs = _type(compiled, op), _outputs(compiled, op)
        if next_row == len(rows):
            return f"the rows end before operator {position} ({kind} writing {outputs[:1]}) of the compiled model"
        row = rows[next_row]
        if kind == NPU_OPERATOR:
            if row.target != NPU_TARGET:
                return f"{_row(row)} is not an NPU row, but operator {position} of the compiled model is {kind}"
            run_end = next_row
            while run_end < len(rows) and rows[run_end].target == NPU_TARGET:
                run_end += 1
            names = {rows[i].name for i in range(next_row, run_end)}
            missing = [name for name in outputs if name not in names]
            if missing:
                return (
                    f"rows {next_row + 1} to {run_end} (one command stream) name no tensor {missing[0]!r}, "
                    f"which operator {position} ({kind}) of the compiled model writes"
                )
            next_row = run_end
        else:
            if row.target != CPU_TARGET or row.name not in outputs[:1]:
                return (
                    f"{_row(row)} does not match operator {position} of the compiled model, "
                    f"{kind} writing {outputs[:1]}"
                )
            next_row += 1
    if next_row < len(rows):
        return f"{_row(rows[next_row])} is beyond the compiled model's last operator"
    return None


def compilation_mismatch(model: Model, compiled: Model) -> str | None:
    """None when `compiled` can be Vela's compilation of `model` (module docstring); else the first graph
    input, output or CPU operator of `compiled` that does not match."""
    ours, theirs = model.subgraphs[0], compiled.subgraphs[0]
    for what in ("inputs", "outputs"):
        expected = [tensor_name(ours.tensors[t]) for t in indices(getattr(ours, what))]
        found = [tensor_name(theirs.tensors[t]) for t in indices(getattr(theirs, what))]
        if found != expected:
            return f"the compiled model's graph {what} are {found}, but the model's are {expected}"
    operators = ours.operators or []
    position = 0
    for compiled_position, op in enumerate(theirs.operators or []):
        kind = _type(compiled, op)
        if kind == NPU_OPERATOR:
            continue
        output = _outputs(compiled, op)[:1]
        while position < len(operators) and (
            _type(model, operators[position]) != kind or _outputs(model, operators[position])[:1] != output
        ):
            position += 1
        if position == len(operators):
            return (
                f"operator {compiled_position} of the compiled model ({kind} writing {output}) is no operator of "
                "the model after the previous CPU operator"
            )
        position += 1
    expected_fences = [
        _outputs(model, op)[:1] for op in operators if is_fence_name(model.operator_codes[op.opcodeIndex])
    ]
    found_fences = [
        _outputs(compiled, op)[:1]
        for op in theirs.operators or []
        if is_fence_name(compiled.operator_codes[op.opcodeIndex])
    ]
    if found_fences != expected_fences:
        return f"the compiled model's fences write {found_fences}, but the model's fences write {expected_fences}"
    return None


def per_layer_binding_mismatch(model: Model, per_layer: str | os.PathLike[str]) -> str | None:
    """Why `per_layer` is not Vela's per-layer CSV of `model`, bound by content: of the model Vela compiled into
    `model` when it holds `ethos-u` operators, else of `model` itself; the message names the file, the model and
    the first row that does not match. None when it is."""
    from heliabuild.vela.per_layer import read_per_layer
    from heliabuild.vela.streams import command_streams

    rows = read_per_layer(per_layer)
    compiled = command_streams(model).count > 0
    mismatch = (compiled_per_layer_mismatch if compiled else per_layer_mismatch)(model, rows)
    return None if mismatch is None else f"{per_layer}: not Vela's per-layer CSV of {model.name}: {mismatch}"
