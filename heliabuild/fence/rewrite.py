"""The fence rewrite: insert ETHOS_U_STREAM_SPLIT identity operators into a model.

The rewrite follows the contract's wire-format table. For each fence after
original operator `after_op` it inserts, immediately after that operator, one
custom operator whose N inputs are every tensor crossing the cut and whose N
outputs are new tensors paired with them by index; every later reader of a
crossing tensor, the graph outputs and the signature defs that name one are
rewired to the new tensor. Fences are applied in descending order, so the
original indices stay valid while the model is rewritten.

Output names: the first output, the sidecar's join key, is
`<intercepted tensor name>/stream_split`; each further output of the same
fence is `<tensor name>/stream_split@<after_op>`. A name that would repeat
one already in the graph gets `#1`, `#2`, ... appended.
"""

from __future__ import annotations

import copy
import os
from bisect import bisect_right
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from ai_edge_litert import schema_py_generated as schema

from heliabuild.errors import FenceError
from heliabuild.fence.binding import check_plan_binding, primary_subgraph
from heliabuild.fence.contract import (
    CONTRACT_VERSION,
    CUSTOM_CODE,
    FENCE_NAME_SUFFIX,
    check_crossing_tensor,
    check_unfenced,
    fence_opcode_index,
    new_fence_opcode,
)
from heliabuild.fence.names import sidecar_path_for
from heliabuild.fence.plan import FenceConfig, FencePlan
from heliabuild.fence.sidecar import FenceBoundaries, Segment, TensorPair
from heliabuild.files import json_text, sha256_bytes, write_all_or_nothing
from heliabuild.model.graph import Graph, indices, tensor_name
from heliabuild.model.io import Model, copy_model, load_model, model_sha256, serialize

ModelInput = str | os.PathLike[str] | bytes | bytearray | memoryview | Model


@dataclass(frozen=True)
class RewriteResult:
    """A fenced model, its bytes, and the identity its sidecar records."""

    model: Model
    fenced_bytes: bytes | bytearray
    boundaries: FenceBoundaries

    @property
    def source_model(self) -> str:
        return self.boundaries.source_model

    @property
    def source_sha256(self) -> str:
        return self.boundaries.source_sha256

    @property
    def subgraph(self) -> int:
        return self.boundaries.subgraph

    @property
    def num_segments(self) -> int:
        return self.boundaries.num_segments

    @property
    def boundary_after_ops(self) -> list[int]:
        return list(self.boundaries.boundary_after_ops)

    @property
    def segments(self) -> list[Segment]:
        return list(self.boundaries.segments)

    @property
    def contract_version(self) -> int:
        return self.boundaries.contract_version

    @property
    def custom_code(self) -> str:
        return self.boundaries.custom_code

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Write the fenced model to `path` and its sidecar beside it, both or neither.

        Returns the sidecar's path.
        """
        sidecar = sidecar_path_for(path)
        write_all_or_nothing(
            {Path(path): self.fenced_bytes, sidecar: json_text(self.boundaries.to_json()).encode("utf-8")}
        )
        return sidecar


def rewrite_model_with_fences(model: ModelInput, config_or_after_ops: FenceConfig | Iterable[int]) -> RewriteResult:
    """Fence `model` at the given original operator positions (the unbound path).

    Raises FenceError for a model that already has fences (its operators would not be the original
    operators the positions count) and for positions the contract does not admit.

    The caller asserts the positions apply to this model; use `fence_model`
    with a FencePlan to have them checked against the model first.
    """
    if isinstance(config_or_after_ops, FencePlan):
        raise FenceError(
            "rewrite_model_with_fences takes positions, not a FencePlan: use fence_model(model, plan) to have "
            "the plan checked against the model, or fence_config_for(plan) to drop its binding deliberately"
        )
    after_ops = (
        config_or_after_ops.after_ops if isinstance(config_or_after_ops, FenceConfig) else tuple(config_or_after_ops)
    )
    source = load_model(model)
    _check_unfenced(source)
    working = copy_model(source) if source is model else source
    return _rewrite(working, model_sha256(source), after_ops)


def fence_model(model: ModelInput, plan: FencePlan) -> RewriteResult:
    """Fence `model` as `plan` says, after checking the plan is bound to it.

    Raises FenceError, as `rewrite_model_with_fences` does, for a model that already has fences.
    """
    source = load_model(model)
    _check_unfenced(source)
    check_plan_binding(source, plan)
    working = copy_model(source) if source is model else source
    return _rewrite(working, model_sha256(source), tuple(plan.after_ops))


def _check_unfenced(model: Model) -> None:
    check_unfenced(
        model,
        primary_subgraph(model),
        "fence the unfenced model",
        hint="Strip the fences first (heliabuild unfence, heliabuild.fence.strip_fences) or fence the original.",
    )


def _rewrite(model: Model, source_sha256: str, requested: Sequence[int]) -> RewriteResult:
    subgraph = primary_subgraph(model)
    after_ops = _checked_positions(model, subgraph, requested)
    opcode_index = fence_opcode_index(model)
    if after_ops and opcode_index is None:
        model.operator_codes.append(new_fence_opcode())
        opcode_index = len(model.operator_codes) - 1

    names = {tensor_name(t) for t in subgraph.tensors or []}
    graph = Graph.of(subgraph)
    crossing = graph.live_after_each(subgraph, after_ops)
    originals = list(subgraph.operators or [])
    fences: dict[int, schema.OperatorT] = {}
    intercepted_first: dict[int, str] = {}
    later: int | None = None
    for after_op in sorted(after_ops, reverse=True):
        cut = _Cut(
            after_op=after_op,
            crossing=crossing[after_op],
            until=len(originals) if later is None else later,
            later_fence=None if later is None else fences[later],
        )
        fences[after_op], intercepted_first[after_op] = _fence(
            model, subgraph, graph, originals, cut, opcode_index, names
        )
        later = after_op
    if after_ops:
        operators: list[schema.OperatorT] = []
        for position, op in enumerate(originals):
            operators.append(op)
            if position in fences:
                operators.append(fences[position])
        subgraph.operators = operators

    fenced = serialize(model)
    # The result describes its own bytes, not the source's it was loaded from.
    model.source_sha256 = sha256_bytes(fenced)
    boundaries = FenceBoundaries(
        source_model=_display_name(model.name),
        source_sha256=source_sha256,
        subgraph=0,
        num_segments=len(after_ops) + 1,
        boundary_after_ops=tuple(after_ops),
        segments=_segments(subgraph, after_ops, intercepted_first),
        fenced_sha256=model.source_sha256,
        contract_version=CONTRACT_VERSION,
        custom_code=CUSTOM_CODE,
    )
    return RewriteResult(model=model, fenced_bytes=fenced, boundaries=boundaries)


def _display_name(name: str) -> str:
    """The source's file name without its folder: artifacts carry no absolute path."""
    return name if name.startswith("<") else Path(name).name


def _checked_positions(model: Model, subgraph: schema.SubGraphT, requested: Sequence[int]) -> list[int]:
    count = len(subgraph.operators or [])
    seen: set[int] = set()
    for value in requested:
        if isinstance(value, bool) or not isinstance(value, int | np.integer):
            raise FenceError(f"{model.name}: fence position {value!r} is not an operator index")
        if int(value) in seen:
            raise FenceError(f"{model.name}: after_op {int(value)} is requested twice; each cut is fenced once")
        if not 0 <= value < count - 1:
            raise FenceError(
                f"{model.name}: after_op {int(value)} is out of range: the model has {count} operators, "
                f"so a fence must follow one of operators 0..{count - 2} and precede another"
            )
        seen.add(int(value))
    return sorted(seen)


@dataclass(frozen=True)
class _Cut:
    """A fence to build after original operator `after_op`, carrying `crossing` (original tensor indices).

    `until` is the next cut after it (the operator count for the last cut), whose fence `later_fence` is
    built already (None for the last cut).
    """

    after_op: int
    crossing: list[int]
    until: int
    later_fence: schema.OperatorT | None


def _fence(
    model: Model,
    subgraph: schema.SubGraphT,
    graph: Graph,
    originals: list[schema.OperatorT],
    cut: _Cut,
    opcode_index: int,
    names: set[str],
) -> tuple[schema.OperatorT, str]:
    """Build the fence of `cut` and rewire its readers; return it and the first intercepted tensor's name.

    Cuts are fenced from the last to the first, so a crossing tensor's readers up to the next cut
    (`originals`, indexed by original position) read it still and are rewired here, while its readers
    after that cut read the next fence's output already and that fence reads it instead.
    """
    after_op, crossing = cut.after_op, cut.crossing
    if not crossing:
        raise FenceError(
            f"{model.name}: no tensor crosses the cut after operator {after_op}: nothing it produced or "
            "produced before it is read later or returned, so a fence there would carry nothing"
        )
    tensors = subgraph.tensors
    for index in crossing:
        check_crossing_tensor(model, index, tensors[index], after_op)

    outputs: list[int] = []
    for position, index in enumerate(crossing):
        base = tensor_name(tensors[index]) + FENCE_NAME_SUFFIX
        wanted = base if position == 0 else f"{base}@{after_op}"
        outputs.append(_append_copy(model, subgraph, tensors[index], _unique(wanted, names)))
    replacement = dict(zip(crossing, outputs, strict=True))

    readers: set[int] = set()
    for tensor in crossing:
        consumers = graph.consumers.get(tensor, ())
        readers.update(consumers[bisect_right(consumers, after_op) : bisect_right(consumers, cut.until)])
    rewired = [originals[reader] for reader in sorted(readers)]
    if cut.later_fence is not None and any(t in replacement for t in indices(cut.later_fence.inputs)):
        rewired.append(cut.later_fence)
    for op in rewired:
        op.inputs = np.array([replacement.get(t, t) for t in indices(op.inputs)], dtype=np.int32)
    subgraph.outputs = np.array([replacement.get(t, t) for t in indices(subgraph.outputs)], dtype=np.int32)
    for signature in model.root.signatureDefs or []:
        if signature.subgraphIndex == 0:
            for entry in signature.outputs or []:
                entry.tensorIndex = replacement.get(entry.tensorIndex, entry.tensorIndex)

    fence = schema.OperatorT()
    fence.opcodeIndex = opcode_index
    fence.inputs = np.array(crossing, dtype=np.int32)
    fence.outputs = np.array(outputs, dtype=np.int32)
    fence.builtinOptionsType = schema.BuiltinOptions.NONE
    return fence, tensor_name(tensors[crossing[0]])


def _append_copy(model: Model, subgraph: schema.SubGraphT, source: schema.TensorT, name: str) -> int:
    """Append a tensor with the source's shape, type and quantization and a new empty buffer."""
    model.buffers.append(schema.BufferT())
    tensor = schema.TensorT()
    tensor.shape = None if source.shape is None else np.array(source.shape, dtype=np.int32)
    tensor.shapeSignature = None if source.shapeSignature is None else np.array(source.shapeSignature, dtype=np.int32)
    tensor.hasRank = source.hasRank
    tensor.type = source.type
    tensor.quantization = copy.deepcopy(source.quantization)
    tensor.isVariable = False
    tensor.buffer = len(model.buffers) - 1
    tensor.name = name
    subgraph.tensors.append(tensor)
    return len(subgraph.tensors) - 1


def _unique(wanted: str, names: set[str]) -> str:
    candidate, suffix = wanted, 0
    while candidate in names:
        suffix += 1
        candidate = f"{wanted}#{suffix}"
    names.add(candidate)
    return candidate


def _segments(
    subgraph: schema.SubGraphT, after_ops: list[int], intercepted_first: dict[int, str]
) -> tuple[Segment, ...]:
    tensors = subgraph.tensors
    segments: list[Segment] = []
    start = 0
    for number, after_op in enumerate(after_ops):
        fence = subgraph.operators[after_op + number + 1]
        pairs = tuple(
            TensorPair(input=tensor_name(tensors[i]), output=tensor_name(tensors[o]))
            for i, o in zip(indices(fence.inputs), indices(fence.outputs), strict=True)
        )
        segments.append(
            Segment(
                index=number,
                op_range_start=start,
                op_range_end=after_op,
                tensor_pairs=pairs,
                end_tensor_name=intercepted_first[after_op],
                fence_tensor_name=pairs[0].output,
            )
        )
        start = after_op + 1
    original_count = len(subgraph.operators) - len(after_ops)
    segments.append(
        Segment(
            index=len(after_ops),
            op_range_start=start,
            op_range_end=original_count - 1,
            tensor_pairs=(),
            end_tensor_name=None,
            fence_tensor_name=None,
        )
    )
    return tuple(segments)
