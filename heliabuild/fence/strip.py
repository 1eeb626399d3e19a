"""Removing fences: the inverse of the rewrite."""

from __future__ import annotations

from heliabuild.errors import FenceError
from heliabuild.fence.binding import primary_subgraph
from heliabuild.fence.contract import CUSTOM_CODE, REGENERATE_HINT, is_fence_name, is_legacy_name
from heliabuild.model.graph import indices
from heliabuild.model.io import Model, copy_model, load_model


def strip_fences(model: str | bytes | Model) -> Model:
    """A copy of `model` without its ETHOS_U_STREAM_SPLIT operators.

    Every reader of a fence output reads the paired input again (through
    chains of fences), graph outputs and signature defs are rewired back, and
    the fence outputs, their buffers and the then unused fence opcode are
    removed, so stripping a fenced model gives a model that computes exactly
    what its source computed (the source itself, for a source with no fences, of any number of subgraphs).
    """
    loaded = load_model(model)
    result = copy_model(loaded) if loaded is model else loaded
    codes = result.operator_codes
    for index, opcode in enumerate(codes):
        if is_legacy_name(opcode):
            raise FenceError(
                f"{result.name}: operator code {index} is the legacy STREAM_SPLIT custom op, not {CUSTOM_CODE}",
                hint=REGENERATE_HINT,
            )
    fence_codes = {i for i, opcode in enumerate(codes) if is_fence_name(opcode)}
    if not fence_codes:
        return result  # nothing to strip, whatever its subgraphs (a CALL_ONCE model's initialization)
    subgraph = primary_subgraph(result)

    original_of: dict[int, int] = {}
    kept = []
    for op in subgraph.operators or []:
        if op.opcodeIndex not in fence_codes:
            kept.append(op)
            continue
        for source, copy in zip(indices(op.inputs), indices(op.outputs), strict=False):
            original_of[copy] = original_of.get(source, source)
    subgraph.operators = kept
    for op in kept:
        op.inputs = [original_of.get(t, t) for t in indices(op.inputs)]
    subgraph.outputs = [original_of.get(t, t) for t in indices(subgraph.outputs)]
    for signature in result.root.signatureDefs or []:
        if signature.subgraphIndex == 0:
            for entry in (signature.inputs or []) + (signature.outputs or []):
                entry.tensorIndex = original_of.get(entry.tensorIndex, entry.tensorIndex)

    _drop_tensors(result, set(original_of))
    _drop_unused_opcodes(result, fence_codes)
    if original_of or fence_codes:
        result.source_sha256 = None  # edited: its hash is that of its serialized bytes now
    return result


def _drop_tensors(model: Model, dropped: set[int]) -> None:
    subgraph = model.subgraphs[0]
    tensors = subgraph.tensors or []
    renumber: dict[int, int] = {-1: -1}
    kept = []
    for index, tensor in enumerate(tensors):
        if index not in dropped:
            renumber[index] = len(kept)
            kept.append(tensor)
    dropped_buffers = {tensors[i].buffer for i in dropped} - {t.buffer for t in kept} - {0}
    dropped_buffers -= {m.buffer for m in model.root.metadata or []}
    subgraph.tensors = kept
    for op in subgraph.operators or []:
        op.inputs = [renumber[t] for t in indices(op.inputs)]
        op.outputs = [renumber[t] for t in indices(op.outputs)]
        if op.intermediates is not None:
            op.intermediates = [renumber[t] for t in indices(op.intermediates)]
    subgraph.inputs = [renumber[t] for t in indices(subgraph.inputs)]
    subgraph.outputs = [renumber[t] for t in indices(subgraph.outputs)]
    for signature in model.root.signatureDefs or []:
        if signature.subgraphIndex == 0:
            for entry in (signature.inputs or []) + (signature.outputs or []):
                entry.tensorIndex = renumber[entry.tensorIndex]
    if dropped_buffers:
        buffer_renumber: dict[int, int] = {}
        buffers = []
        for index, buffer in enumerate(model.buffers):
            if index not in dropped_buffers:
                buffer_renumber[index] = len(buffers)
                buffers.append(buffer)
        model.root.buffers = buffers
        for tensor in kept:
            tensor.buffer = buffer_renumber[tensor.buffer]
        for metadata in model.root.metadata or []:
            metadata.buffer = buffer_renumber[metadata.buffer]


def _drop_unused_opcodes(model: Model, candidates: set[int]) -> None:
    used = {op.opcodeIndex for subgraph in model.subgraphs for op in subgraph.operators or []}
    unused = candidates - used
    if not unused:
        return
    renumber: dict[int, int] = {}
    codes = []
    for index, opcode in enumerate(model.operator_codes):
        if index not in unused:
            renumber[index] = len(codes)
            codes.append(opcode)
    model.root.operatorCodes = codes
    for subgraph in model.subgraphs:
        for op in subgraph.operators or []:
            op.opcodeIndex = renumber[op.opcodeIndex]
