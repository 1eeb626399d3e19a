"""Verification of a fenced model against contract version 1.

`verify_fenced_model` returns every violation it finds as one sentence each;
an empty list means the model (and the sidecar and source, when given)
satisfies every rule of the contract that heliabuild's rewrite follows.
"""

from __future__ import annotations

import os
from pathlib import Path

from ai_edge_litert import schema_py_generated as schema

from heliabuild.errors import FenceError, FenceVerificationError, HeliaError
from heliabuild.fence.contract import (
    CONTRACT_VERSION,
    CUSTOM_CODE,
    ELEMENT_BYTES,
    fence_opcode_index,
    is_fence_name,
    type_name,
)
from heliabuild.fence.sidecar import FenceBoundaries, load_sidecar
from heliabuild.fence.strip import strip_fences
from heliabuild.model.compare import differences
from heliabuild.model.graph import Graph, indices, tensor_name
from heliabuild.model.io import Model, load_model, model_sha256

SidecarInput = str | os.PathLike[str] | FenceBoundaries | None


def verify_fenced_model(
    model: str | os.PathLike[str] | bytes | Model,
    sidecar: SidecarInput = None,
    source: str | os.PathLike[str] | bytes | Model | None = None,
    *,
    strict: bool = False,
) -> list[str]:
    """Check a fenced model, and optionally its sidecar and source; return the violations.

    With `strict=True` a nonempty list is raised instead, as a
    FenceVerificationError whose `violations` holds it. A model or sidecar
    that cannot be read at all raises HeliaError either way.
    """
    violations = _violations(model, sidecar, source)
    if strict and violations:
        raise FenceVerificationError(violations)
    return violations


def _violations(
    model: str | os.PathLike[str] | bytes | Model,
    sidecar: SidecarInput,
    source: str | os.PathLike[str] | bytes | Model | None,
) -> list[str]:
    fenced = load_model(model)
    violations: list[str] = []
    if len(fenced.subgraphs) != 1:
        return [f"{fenced.name}: the model has {len(fenced.subgraphs)} subgraphs; fenced models have one"]
    try:
        fence_opcode_index(fenced)
    except FenceError as error:
        violations.append(error.message)
    subgraph = fenced.subgraphs[0]
    positions = _fence_positions(fenced, subgraph)
    graph = Graph.of(subgraph)
    buffer_users: dict[int, int] = {}
    for tensor in subgraph.tensors or []:
        buffer_users[tensor.buffer] = buffer_users.get(tensor.buffer, 0) + 1
    before = graph.live_after_each(subgraph, [p - 1 for p in positions if p > 0])
    for position in positions:
        bypass = _bypassing(graph, position, before.get(position - 1, []))
        violations.extend(_check_fence(fenced, subgraph, graph, position, buffer_users, bypass))

    boundaries = _read_sidecar(sidecar)
    if boundaries is not None:
        violations.extend(_check_sidecar(fenced, subgraph, positions, boundaries))
    if source is not None:
        violations.extend(_check_source(fenced, positions, boundaries, load_model(source)))
    return violations


def _fence_positions(model: Model, subgraph: schema.SubGraphT) -> list[int]:
    codes = model.operator_codes
    return [p for p, op in enumerate(subgraph.operators or []) if is_fence_name(codes[op.opcodeIndex])]


def _check_fence(
    model: Model,
    subgraph: schema.SubGraphT,
    graph: Graph,
    position: int,
    buffer_users: dict[int, int],
    bypass: list[int],
) -> list[str]:
    """The violations of the fence at `position`; `buffer_users` counts the tensors of each buffer and
    `bypass` lists the tensors crossing the fence without passing through it (`_bypassing`)."""
    op = subgraph.operators[position]
    tensors = subgraph.tensors
    where = f"{model.name}: fence at operator {position}"
    found: list[str] = []
    if op.builtinOptionsType != schema.BuiltinOptions.NONE or op.builtinOptions is not None:
        found.append(f"{where} has builtin options (type {op.builtinOptionsType}); expected NONE")
    if op.customOptions is not None or op.largeCustomOptionsSize:
        found.append(f"{where} has custom options; the contract's fence has none")
    inputs, outputs = indices(op.inputs), indices(op.outputs)
    if not inputs or len(inputs) != len(outputs):
        return [*found, f"{where} has {len(inputs)} inputs and {len(outputs)} outputs; expected N >= 1 of each"]
    if -1 in inputs or -1 in outputs:
        return [*found, f"{where} has an omitted (-1) tensor; every pair needs both tensors"]

    graph_outputs = set(graph.graph_outputs)
    for pair, (source, copy) in enumerate(zip(inputs, outputs, strict=True)):
        given, made = tensors[source], tensors[copy]
        label = f"{where} pair {pair} ({tensor_name(given)!r} -> {tensor_name(made)!r})"
        if given.type not in ELEMENT_BYTES:
            found.append(f"{label} carries dtype {type_name(given.type)}, outside contract version 1")
        if given.sparsity is not None or given.isVariable:
            found.append(f"{label} carries a sparse or variable tensor, outside the contract")
        if made.type != given.type:
            found.append(f"{label}: output dtype {type_name(made.type)} differs from input {type_name(given.type)}")
        if indices(made.shape) != indices(given.shape):
            found.append(f"{label}: output shape {indices(made.shape)} differs from input {indices(given.shape)}")
        if differences(given.quantization, made.quantization, "quantization"):
            found.append(f"{label}: output quantization is not a copy of the input's")
        if made.isVariable:
            found.append(f"{label}: output is a variable tensor; expected isVariable = false")
        if made.buffer == 0 or model.buffer_data(made.buffer) is not None or buffer_users[made.buffer] > 1:
            found.append(f"{label}: output must have a new empty buffer, found buffer {made.buffer}")
        producer = graph.producer.get(source)
        if producer is None or producer >= position:
            found.append(f"{label}: input is not produced by an operator before the fence (constant or graph input)")
        if graph.producer.get(copy) != position:
            found.append(f"{label}: output is written by another operator")
        if copy not in graph_outputs and not any(r > position for r in graph.consumers.get(copy, ())):
            found.append(f"{label}: output is neither read later nor a graph output")
    if bypass:
        names = ", ".join(repr(tensor_name(tensors[t])) for t in bypass)
        found.append(f"{where} does not carry every tensor crossing it: {names} bypass it")
    previous = subgraph.operators[position - 1] if position > 0 else None
    if previous is not None:
        intercepted = [t for t in indices(previous.outputs) if t in inputs]
        if intercepted and inputs[0] != intercepted[0]:
            found.append(f"{where}: the first pair must be the intercepted output of the operator before it")
    return found


def _bypassing(graph: Graph, position: int, live_before: list[int]) -> list[int]:
    """Tensors written before the fence at `position` and read after it (or returned) without passing
    through it, from `live_before`, the tensors crossing the cut before the fence (`Graph.live_after`)."""
    graph_outputs = set(graph.graph_outputs)
    return sorted(t for t in live_before if t in graph_outputs or graph.consumers[t][-1] > position)


def _read_sidecar(sidecar: SidecarInput) -> FenceBoundaries | None:
    if sidecar is None or isinstance(sidecar, FenceBoundaries):
        return sidecar
    return load_sidecar(Path(sidecar))


def _check_sidecar(
    model: Model, subgraph: schema.SubGraphT, positions: list[int], sidecar: FenceBoundaries
) -> list[str]:
    where = f"{model.name}: sidecar"
    found: list[str] = []
    if sidecar.contract_version != CONTRACT_VERSION or sidecar.custom_code != CUSTOM_CODE:
        found.append(f"{where} is for contract {sidecar.contract_version} / {sidecar.custom_code!r}")
    if sidecar.subgraph != 0:
        found.append(f"{where} subgraph is {sidecar.subgraph}; fences are cut into subgraph 0 only")
    actual_sha = model_sha256(model)
    if sidecar.fenced_sha256 != actual_sha:
        found.append(f"{where} fenced_sha256 is {sidecar.fenced_sha256}, but the model's is {actual_sha}")
    after_ops = list(sidecar.boundary_after_ops)
    if sidecar.num_segments != len(positions) + 1 or len(sidecar.segments) != sidecar.num_segments:
        found.append(
            f"{where} num_segments is {sidecar.num_segments} with {len(sidecar.segments)} segments, "
            f"but the model has {len(positions)} fences"
        )
        return found
    actual_after = [position - number - 1 for number, position in enumerate(positions)]
    if after_ops != actual_after:
        found.append(
            f"{where} boundary_after_ops is {after_ops}, but the fences follow original operators {actual_after}"
        )
        return found
    tensors = subgraph.tensors
    original_count = len(subgraph.operators) - len(positions)
    carried = _originals(model, positions)
    start = 0
    for number, segment in enumerate(sidecar.segments):
        label = f"{where} segment {number}"
        end = after_ops[number] if number < len(after_ops) else original_count - 1
        if (segment.index, segment.op_range_start, segment.op_range_end) != (number, start, end):
            found.append(
                f"{label} covers operators {segment.op_range_start}..{segment.op_range_end} (index "
                f"{segment.index}); expected {start}..{end} (index {number})"
            )
        start = end + 1
        if number == len(positions):
            if segment.tensor_pairs or segment.end_tensor_name is not None or segment.fence_tensor_name is not None:
                found.append(f"{label} is the last segment and must have no pairs and null names")
            continue
        fence = subgraph.operators[positions[number]]
        actual_pairs = [
            (tensor_name(tensors[i]), tensor_name(tensors[o]))
            for i, o in zip(indices(fence.inputs), indices(fence.outputs), strict=False)
        ]
        recorded = [(pair.input, pair.output) for pair in segment.tensor_pairs]
        if recorded != actual_pairs:
            found.append(f"{label} tensor_pairs {recorded} differ from the fence's {actual_pairs}")
        elif segment.fence_tensor_name != actual_pairs[0][1]:
            found.append(
                f"{label} fence_tensor_name {segment.fence_tensor_name!r} "
                f"is not the first output {actual_pairs[0][1]!r}"
            )
        if actual_pairs:
            # The first intercepted tensor, followed back through earlier fences to the source's name.
            intercepted = tensor_name(tensors[carried[positions[number]][0]])
            if segment.end_tensor_name != intercepted:
                found.append(
                    f"{label} end_tensor_name {segment.end_tensor_name!r} "
                    f"is not the first intercepted tensor {intercepted!r}"
                )
    return found


def _check_source(fenced: Model, positions: list[int], sidecar: FenceBoundaries | None, source: Model) -> list[str]:
    found: list[str] = []
    if sidecar is not None:
        source_sha = model_sha256(source)
        if sidecar.source_sha256 != source_sha:
            found.append(
                f"{fenced.name}: sidecar source_sha256 is {sidecar.source_sha256}, but {source.name} has {source_sha}"
            )
    try:
        stripped = strip_fences(fenced)
    except HeliaError as error:
        return [*found, error.message]
    reference = strip_fences(source)
    gaps = differences(reference.root, stripped.root, "model", limit=5)
    if gaps:
        found.append(f"{fenced.name}: without its fences the model is not {source.name}: " + "; ".join(gaps))
        return found
    source_graph = source.subgraphs[0]
    after_ops = [position - number - 1 for number, position in enumerate(positions)]
    crossing = Graph.of(source_graph).live_after_each(source_graph, [a for a in after_ops if a >= 0])
    originals = _originals(fenced, positions)
    for number, (position, after_op) in enumerate(zip(positions, after_ops, strict=True)):
        expected = crossing.get(after_op, [])  # nothing crosses before the first operator
        carried = originals[position]
        if sorted(carried) != sorted(expected):
            found.append(
                f"{fenced.name}: fence after operator {after_op} carries source tensors {carried}, "
                f"but the tensors crossing that cut are {expected}"
            )
        elif sidecar is not None and number < len(sidecar.segments) and expected:
            expected_name = tensor_name(source_graph.tensors[expected[0]])
            if sidecar.segments[number].end_tensor_name != expected_name:
                found.append(
                    f"{fenced.name}: sidecar segment {number} end_tensor_name is "
                    f"{sidecar.segments[number].end_tensor_name!r}; the first intercepted tensor is {expected_name!r}"
                )
    return found


def _originals(fenced: Model, positions: list[int]) -> dict[int, list[int]]:
    """The source tensor indices each fence (by position) carries, following chains of earlier fences.

    Fence outputs are appended after the source's tensors, so a source index
    is any index the chain ends at. One pass over the fences, in order.
    """
    operators = fenced.subgraphs[0].operators
    origin: dict[int, int] = {}
    carried: dict[int, list[int]] = {}
    for position in positions:
        fence = operators[position]
        carried[position] = [origin.get(t, t) for t in indices(fence.inputs)]
        for given, copy in zip(indices(fence.inputs), indices(fence.outputs), strict=False):
            origin[copy] = origin.get(given, given)
    return carried
