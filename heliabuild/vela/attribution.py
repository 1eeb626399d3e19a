"""Attributing Vela's per-layer rows to the operators of the model Vela compiled.

Vela lowers each TFLite operator into one or more NNG operations and writes
one per-layer row for each, in execution order, naming the operation's output
tensor. A row is attributed by the first rule that applies:

1. `name`: the row's name is an output tensor of an operator. Fused
   activations (a `Relu` row) carry their operator's output name too.
2. `name_prefix`: the row's name is `<T>_<suffix>` for a tensor T that an
   operator reads or writes. This is how Vela names the operations it
   decomposes an operator into: SOFTMAX becomes rows named
   `<softmax input>_softmax_<n>` (and `..._broadcasted`), then one row with
   the SOFTMAX's own output name. Among several operators touching T, the
   one whose type matches the row's `Original Operator` wins, then the one
   that reads T, then the first in execution order at or after the operator
   of the previous attributed row.
3. `preceding_copy`: a row that matches no name and is followed by an
   attributed row of the same `Original Operator` belongs to that row's
   operator. Vela for Ethos-U85 inserts such `MemoryCopy` rows, named
   `input_buffer_`, in front of an operator that reads a command stream's
   input; such a row skips rule 2 (`input_buffer_` is not `<T>_<suffix>`
   even when the model has a tensor named `input`).

Rows of ETHOS_U_STREAM_SPLIT fences (Vela leaves them on the CPU as
`Custom`/`Passthrough`) are attributed to the fence. Everything else is
unmatched and is reported by `FenceCoverage`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any

from heliabuild.fence.contract import is_fence_name
from heliabuild.fence.coverage import FenceCoverage, UnmatchedRow
from heliabuild.model.graph import indices, tensor_name
from heliabuild.model.io import Model
from heliabuild.model.opcodes import effective_builtin_code, operator_type
from heliabuild.vela.configs import packaged_operator_names
from heliabuild.vela.per_layer import PerLayerRow

RULE_NAME = "name"
RULE_NAME_PREFIX = "name_prefix"
RULE_PRECEDING_COPY = "preceding_copy"
RULE_FENCE = "fence"
# The name Vela (Ethos-U85) gives the MemoryCopy it inserts in front of an operator reading a stream's input.
VELA_COPY_NAME = "input_buffer_"


@dataclass(frozen=True)
class RowAttribution:
    """Where one per-layer row belongs.

    `operator` is the original operator index (fences not counted) or None;
    `fence` is the index of the fence (0 for the first) when the row is a
    fence's; `rule` says which rule attributed it, None when unmatched.
    """

    row: int
    operator: int | None
    fence: int | None
    rule: str | None

    @property
    def matched(self) -> bool:
        return self.rule is not None


def coverage_of(rows: Sequence[PerLayerRow], attributions: Sequence[RowAttribution]) -> FenceCoverage:
    """FenceCoverage of an attribution: every row's cycles, and the unmatched rows."""
    unmatched = [row for row, where in zip(rows, attributions, strict=True) if not where.matched]
    total = sum(row.op_cycles for row in rows)
    return FenceCoverage(
        total_cycles=total,
        matched_cycles=total - sum(row.op_cycles for row in unmatched),
        row_count=len(rows),
        unmatched_rows=tuple(
            UnmatchedRow(
                index=row.index,
                name=row.name,
                original_operator=row.original_operator,
                nng_operator=row.nng_operator,
                op_cycles=row.op_cycles,
            )
            for row in unmatched
        ),
    )


@dataclass(frozen=True)
class _Operator:
    position: int
    original: int | None  # None for a fence
    fence: int | None
    type_keys: frozenset[str]
    reads: frozenset[str]
    writes: frozenset[str]


def attribute_rows(model: Model, rows: Sequence[PerLayerRow]) -> list[RowAttribution]:
    """Attribute every row to an operator of `model`, the model Vela compiled (fenced or not)."""
    operators = _operators(model)
    by_output: dict[str, _Operator] = {}
    for op in operators:
        for name in op.writes:
            by_output.setdefault(name, op)
    touching: dict[str, list[_Operator]] = {}
    for op in operators:
        for name in op.reads | op.writes:
            touching.setdefault(name, []).append(op)

    found: list[_Operator | None] = []
    rules: list[str | None] = []
    last_position = 0
    for row in rows:
        op, rule = by_output.get(row.name), RULE_NAME
        if op is None and not _is_vela_copy(row):
            op, rule = _by_prefix(row, touching, last_position), RULE_NAME_PREFIX
        if op is None:
            rule = None
        else:
            last_position = op.position
        found.append(op)
        rules.append(rule)

    following: _Operator | None = None
    following_type = None
    for index in range(len(rows) - 1, -1, -1):
        if found[index] is not None:
            following, following_type = found[index], rows[index].original_operator
        elif following is not None and rows[index].original_operator == following_type:
            found[index], rules[index] = following, RULE_PRECEDING_COPY

    result: list[RowAttribution] = []
    for row, op, rule in zip(rows, found, rules, strict=True):
        if op is None:
            result.append(RowAttribution(row=row.index, operator=None, fence=None, rule=None))
        elif op.fence is not None:
            result.append(RowAttribution(row=row.index, operator=None, fence=op.fence, rule=RULE_FENCE))
        else:
            result.append(RowAttribution(row=row.index, operator=op.original, fence=None, rule=rule))
    return result


def _operators(model: Model) -> list[_Operator]:
    subgraph = model.subgraphs[0]
    tensors = subgraph.tensors or []
    operators: list[_Operator] = []
    fences = 0
    for position, op in enumerate(subgraph.operators or []):
        opcode = model.operator_codes[op.opcodeIndex]
        is_fence = is_fence_name(opcode)
        names = [tensor_name(tensors[t]) for t in indices(op.inputs) if t >= 0]
        outputs = [tensor_name(tensors[t]) for t in indices(op.outputs) if t >= 0]
        operators.append(
            _Operator(
                position=position,
                original=None if is_fence else position - fences,
                fence=fences if is_fence else None,
                type_keys=_type_keys(opcode),
                reads=frozenset(n for n in names if n),
                writes=frozenset(n for n in outputs if n),
            )
        )
        fences += is_fence
    return operators


def _is_vela_copy(row: PerLayerRow) -> bool:
    """A MemoryCopy Vela inserted under a fixed name: `input_buffer_` is no tensor's prefix even
    when the model has a tensor named `input`, so only the preceding_copy rule applies."""
    return row.nng_operator == "MemoryCopy" and row.name.startswith(VELA_COPY_NAME)


def _by_prefix(row: PerLayerRow, touching: dict[str, list[_Operator]], last_position: int) -> _Operator | None:
    candidates: list[tuple[str, list[_Operator]]] = []
    for cut in (m.start() for m in re.finditer("_", row.name)):
        prefix = row.name[:cut]
        if prefix in touching:
            candidates.append((prefix, touching[prefix]))
    if not candidates:
        return None
    prefix, ops = max(candidates, key=lambda item: len(item[0]))
    row_key = _normal(row.original_operator)

    def preference(op: _Operator) -> tuple[bool, bool, bool, int]:
        return (
            row_key not in op.type_keys,
            prefix not in op.reads,
            op.position < last_position,
            op.position,
        )

    return min(ops, key=preference)


def _normal(text: str) -> str:
    return re.sub(r"[^a-z0-9]", "", text.lower())


def _type_keys(opcode: Any) -> frozenset[str]:
    """Spellings of an operator's type that Vela's `Original Operator` column may use."""
    keys = {_normal(operator_type(opcode))}
    vela_name = _vela_operator_name(effective_builtin_code(opcode))
    if vela_name is not None:
        keys.add(_normal(vela_name))
        keys.add(_normal(vela_name).removesuffix("bias"))
    return frozenset(keys)


def _vela_operator_name(code: int) -> str | None:
    """Vela's name of the builtin operator `code`: from Vela's source (configs.packaged_operator_names) without
    importing its compiler, else from Vela itself."""
    names = packaged_operator_names()
    if names is not None:
        builtin = _builtin_names().get(code)
        return None if builtin is None else names.get(builtin)
    from ethosu.vela.tflite_mapping import builtin_operator_map

    entry = builtin_operator_map.get(code)
    return None if entry is None else entry[0].name


@cache
def _builtin_names() -> dict[int, str]:
    """TFLite builtin operator code -> its name in the schema (`0` -> `ADD`)."""
    from ai_edge_litert import schema_py_generated as schema

    return {
        value: name
        for name, value in vars(schema.BuiltinOperator).items()
        if not name.startswith("_") and isinstance(value, int)
    }
