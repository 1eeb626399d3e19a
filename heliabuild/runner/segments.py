"""Cutting a fenced model into per-segment sub-models at its fences (the host backend's view).

A fenced model's primary subgraph is a sequence of original operators split by ETHOS_U_STREAM_SPLIT
operators. `cut_segments(model)` turns each run of original operators into a standalone model LiteRT can
run: the same operators, tensors (quantization included) and the other subgraphs (CALL_ONCE init, control
flow bodies), with

- inputs: the tensors its operators read that are produced outside it (graph inputs, fence outputs),
  in order of first reading;
- outputs: the tensors its operators produce that a fence, a later operator or the graph reads, in order
  of production;

and unused tensors, buffers and operator codes dropped (the fence's opcode among them). The fences
themselves are returned as tensor pairs, which the backend executes with heliabuild's stream-split copy.
An unfenced model is one segment: the whole model.

`cut_segments(model, compiled=True)` cuts Vela's compiled model the same way, at the fences Vela keeps as CPU
operators between its `ethos-u` operators (the fvp backend runs one sub-model per command stream). There, a
tensor no operator produces, neither a constant nor a graph input, and read only by `ethos-u` operators is
Vela's scratch area: it stays inside each segment that reads it instead of becoming a sub-model input. Vela's
`OfflineMemoryAllocation` metadata (one arena offset per tensor of subgraph 0) is rewritten for the tensors
each sub-model keeps, in their new order.

Refused (RunnerError): a resource, variant or variable tensor crossing a fence, a resource variable used
in more than one segment (each segment's interpreter would hold its own copy), any other tensor crossing
a fence without a fence pair, a fence output read in more than one later segment, and an empty segment.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass

import numpy as np
from ai_edge_litert import schema_py_generated as schema

from heliabuild.errors import RunnerError
from heliabuild.fence.contract import ELEMENT_BYTES, is_fence_name, type_name
from heliabuild.model.graph import indices, tensor_name
from heliabuild.model.io import Model, load_model, offline_allocation, serialize
from heliabuild.model.opcodes import effective_builtin_code

_OP = schema.BuiltinOperator
_STATE_TYPES = {schema.TensorType.RESOURCE, schema.TensorType.VARIANT}
ETHOS_U_OPERATOR = "ethos-u"
"""The custom code of Vela's NPU operator: one command stream."""


@dataclass(frozen=True)
class TensorInfo:
    """A tensor of the fenced model's primary subgraph, as the host needs it."""

    index: int
    name: str
    dtype: int
    shape: tuple[int, ...]

    @property
    def byte_length(self) -> int:
        count = 1
        for extent in self.shape:
            count *= extent
        return count * ELEMENT_BYTES.get(self.dtype, 0)


@dataclass(frozen=True)
class SegmentModel:
    """Segment `index`: original operators `op_range_start`..`op_range_end` as a standalone model.

    `inputs`/`outputs` are fenced-model tensor indices in the order of the sub-model's graph inputs and
    outputs."""

    index: int
    op_range_start: int
    op_range_end: int
    model_bytes: bytes
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]


@dataclass(frozen=True)
class FenceStep:
    """The fence after segment `index`: (input, output) tensor index pairs of the fenced model."""

    index: int
    pairs: tuple[tuple[int, int], ...]


@dataclass(frozen=True)
class SegmentedModel:
    """A fenced model cut for the host backend."""

    segments: tuple[SegmentModel, ...]
    fences: tuple[FenceStep, ...]
    graph_inputs: tuple[int, ...]
    graph_outputs: tuple[int, ...]
    tensors: dict[int, TensorInfo]
    call_once_present: bool

    @property
    def boundary_after_ops(self) -> tuple[int, ...]:
        return tuple(segment.op_range_end for segment in self.segments[:-1])


def call_once_present(model: Model) -> bool:
    """Whether any operator of any subgraph is CALL_ONCE (the runner model's observed fact)."""
    codes = model.operator_codes
    return any(
        effective_builtin_code(codes[op.opcodeIndex]) == _OP.CALL_ONCE
        for subgraph in model.subgraphs
        for op in subgraph.operators or []
    )


def _info(subgraph: schema.SubGraphT, index: int) -> TensorInfo:
    tensor = subgraph.tensors[index]
    shape = tuple(int(d) for d in indices(tensor.shape))
    return TensorInfo(index=index, name=tensor_name(tensor), dtype=int(tensor.type), shape=shape)


def _called_subgraphs(model: Model, ops: list[schema.OperatorT]) -> set[int]:
    """Subgraphs reachable from `ops` through options naming a subgraph (CALL_ONCE, IF, WHILE, ...)."""
    reached: set[int] = set()
    pending = list(ops)
    while pending:
        op = pending.pop()
        options = op.builtinOptions
        if options is None:
            continue
        for field, value in vars(options).items():
            names_subgraph = "subgraph" in field.lower() and isinstance(value, int) and not isinstance(value, bool)
            if names_subgraph and 0 < value < len(model.subgraphs) and value not in reached:
                reached.add(value)
                pending.extend(model.subgraphs[value].operators or [])
    return reached


def _variable_names(model: Model, ops: list[schema.OperatorT]) -> set[tuple[str, str]]:
    codes = model.operator_codes
    names: set[tuple[str, str]] = set()
    for op in ops:
        if effective_builtin_code(codes[op.opcodeIndex]) == _OP.VAR_HANDLE and op.builtinOptions is not None:
            container = op.builtinOptions.container or ""
            shared = op.builtinOptions.sharedName or ""
            names.add(
                tuple(v.decode("utf-8", "replace") if isinstance(v, bytes) else v for v in (container, shared))  # type: ignore[arg-type]
            )
    return names


def cut_segments(source: Model | str | bytes, *, compiled: bool = False) -> SegmentedModel:
    """Cut `source` (a fenced or unfenced model; with `compiled`, Vela's compilation of one) into per-segment
    sub-models and fence steps (module docstring)."""
    model = load_model(source)
    name = model.name
    subgraph = model.subgraphs[0]
    tensors = subgraph.tensors or []
    codes = model.operator_codes
    operators = subgraph.operators or []

    groups: list[list[int]] = [[]]
    fence_ops: list[int] = []
    for position, op in enumerate(operators):
        if is_fence_name(codes[op.opcodeIndex]):
            fence_ops.append(position)
            groups.append([])
        else:
            groups[-1].append(position)
    for number, group in enumerate(groups):
        if not group:
            raise RunnerError(
                f"{name}: segment {number} holds no operator (a fence starts or ends the graph, or two fences "
                "are adjacent); the host backend runs only nonempty segments"
            )

    segment_of: dict[int, int] = {op: s for s, group in enumerate(groups) for op in group}
    fence_of: dict[int, int] = {op: k for k, op in enumerate(fence_ops)}
    producer: dict[int, int] = {}
    for position, op in enumerate(operators):
        for tensor in indices(op.outputs):
            if tensor >= 0:
                producer.setdefault(tensor, position)
    graph_inputs = tuple(indices(subgraph.inputs))
    graph_outputs = tuple(indices(subgraph.outputs))
    graph_input_set, graph_output_set = set(graph_inputs), set(graph_outputs)

    def constant(tensor: int) -> bool:
        return model.buffer_data(tensors[tensor].buffer) is not None

    def describe(tensor: int) -> str:
        return f"tensor {tensor} ({tensor_name(tensors[tensor])!r})"

    npu_only: set[int] = set()  # tensors every reader of which is an ethos-u operator (Vela's scratch)
    if compiled:
        readers: dict[int, set[bool]] = {}
        for op in operators:
            npu = _custom_code(codes[op.opcodeIndex]) == ETHOS_U_OPERATOR
            for tensor in indices(op.inputs):
                if tensor >= 0:
                    readers.setdefault(tensor, set()).add(npu)
        npu_only = {tensor for tensor, kinds in readers.items() if kinds == {True}}

    # Every reader of a tensor, by segment (fence inputs count as readers of the fence).
    readers_by_segment: dict[int, set[int]] = {}
    fence_readers: dict[int, set[int]] = {}
    for position, op in enumerate(operators):
        for tensor in indices(op.inputs):
            if tensor < 0:
                continue
            if position in fence_of:
                fence_readers.setdefault(tensor, set()).add(fence_of[position])
            else:
                readers_by_segment.setdefault(tensor, set()).add(segment_of[position])

    # Refuse state that would be split between interpreters.
    variables_in: dict[tuple[str, str], list[int]] = {}
    for number, group in enumerate(groups):
        ops = [operators[p] for p in group]
        reach = ops + [op for s in sorted(_called_subgraphs(model, ops)) for op in model.subgraphs[s].operators or []]
        for variable in _variable_names(model, reach):
            variables_in.setdefault(variable, []).append(number)
    for (container, shared), used in sorted(variables_in.items()):
        if len(used) > 1:
            raise RunnerError(
                f"{name}: resource variable {shared!r}{f' (container {container!r})' if container else ''} is used "
                f"in segments {', '.join(map(str, used))}; a resource variable cannot cross a fence, since each "
                "segment runs in its own interpreter",
                hint="place the fences so that every operator using the variable lies in one segment",
            )
    for tensor, segments in sorted(readers_by_segment.items()):
        info = tensors[tensor]
        if int(info.type) in _STATE_TYPES or info.isVariable:
            origin = {segment_of[producer[tensor]]} if tensor in producer and producer[tensor] in segment_of else set()
            if (
                len(segments | origin) > 1
                or tensor in fence_readers
                or (tensor in producer and producer[tensor] in fence_of)
            ):
                kind = "variable" if info.isVariable else type_name(int(info.type)).lower()
                raise RunnerError(
                    f"{name}: {describe(tensor)} is a {kind} tensor crossing a fence (read in segments "
                    f"{', '.join(map(str, sorted(segments | origin)))}); resource and variable tensors cannot "
                    "cross a fence",
                    hint="place the fences so that the producer and every reader of the tensor lie in one segment",
                )

    fences: list[FenceStep] = []
    for k, position in enumerate(fence_ops):
        op = operators[position]
        pairs = tuple(zip(indices(op.inputs), indices(op.outputs), strict=False))
        if len(indices(op.inputs)) != len(indices(op.outputs)) or not pairs:
            raise RunnerError(
                f"{name}: fence {k} (operator {position}) has {len(indices(op.inputs))} inputs and "
                f"{len(indices(op.outputs))} outputs; expected equally many, at least one"
            )
        for source_tensor, _ in pairs:
            dtype = int(tensors[source_tensor].type)
            if dtype not in ELEMENT_BYTES:
                raise RunnerError(
                    f"{name}: fence {k} carries {describe(source_tensor)} of dtype {type_name(dtype)}, which the "
                    "stream-split contract does not carry"
                )
        fences.append(FenceStep(index=k, pairs=pairs))

    segments: list[SegmentModel] = []
    start = 0
    for number, group in enumerate(groups):
        ops = [operators[p] for p in group]
        produced = list(dict.fromkeys(t for op in ops for t in indices(op.outputs) if t >= 0))
        produced_set = set(produced)
        first_reads: dict[int, None] = {}
        for op in ops:
            for tensor in indices(op.inputs):
                if tensor < 0 or tensor in produced_set or tensor in first_reads:
                    continue
                if constant(tensor) or tensors[tensor].isVariable:
                    continue
                if tensor in npu_only and tensor not in producer and tensor not in graph_input_set:
                    continue  # Vela's scratch area: inside the segment, not an input
                first_reads[tensor] = None
        reads = list(first_reads)
        for tensor in reads:
            origin = producer.get(tensor)
            if origin is None:
                if tensor not in graph_input_set:
                    raise RunnerError(
                        f"{name}: segment {number} reads {describe(tensor)}, which no operator produces and which "
                        "is neither a constant nor a graph input"
                    )
            elif origin in fence_of:
                later = readers_by_segment.get(tensor, set())
                if len(later) > 1:
                    raise RunnerError(
                        f"{name}: {describe(tensor)}, an output of fence {fence_of[origin]}, is read in segments "
                        f"{', '.join(map(str, sorted(later)))}; the host backend needs each fence output read by "
                        "one segment",
                        hint="regenerate the fenced model with heliabuild fence",
                    )
            else:
                raise RunnerError(
                    f"{name}: {describe(tensor)} produced in segment {segment_of[origin]} is read in segment "
                    f"{number} without passing through a fence pair",
                    hint="regenerate the fenced model with heliabuild fence",
                )
        outputs = [
            t
            for t in produced
            if t in fence_readers or t in graph_output_set or any(s != number for s in readers_by_segment.get(t, set()))
        ]
        if not outputs:
            raise RunnerError(
                f"{name}: segment {number} produces nothing a fence, a later segment or the graph reads; "
                "LiteRT cannot run a model without outputs"
            )
        end = start + len(group) - 1
        model_bytes = _segment_model(model, group, reads, outputs)
        segments.append(
            SegmentModel(
                index=number,
                op_range_start=start,
                op_range_end=end,
                model_bytes=model_bytes,
                inputs=tuple(reads),
                outputs=tuple(outputs),
            )
        )
        start = end + 1

    interesting = set(graph_inputs) | set(graph_outputs)
    for segment in segments:
        interesting.update(segment.inputs, segment.outputs)
    for fence in fences:
        for pair in fence.pairs:
            interesting.update(pair)
    return SegmentedModel(
        segments=tuple(segments),
        fences=tuple(fences),
        graph_inputs=graph_inputs,
        graph_outputs=graph_outputs,
        tensors={t: _info(subgraph, t) for t in sorted(interesting)},
        call_once_present=call_once_present(model),
    )


def _segment_model(model: Model, group: list[int], inputs: list[int], outputs: list[int]) -> bytes:
    """The bytes of a standalone model: operators `group` of subgraph 0 with `inputs`/`outputs`.

    `model` is left as it is. Only what the segment renumbers is copied (its operators and tensors, the
    other subgraphs' operator and tensor tables, the metadata and the buffers it keeps); payloads, options
    and operator codes are shared, so a segment costs time in its own size plus that of the other
    subgraphs, not in the size of the whole model.
    """
    source = model.subgraphs[0]
    operators = [copy.copy(source.operators[p]) for p in group]
    used: set[int] = set(inputs) | set(outputs)
    for op in operators:
        for field in (op.inputs, op.outputs, op.intermediates):
            used.update(t for t in indices(field) if t >= 0)
    kept = sorted(used)
    renumber = {old: new for new, old in enumerate(kept)}
    renumber[-1] = -1
    subgraph = copy.copy(source)
    subgraph.tensors = [copy.copy(source.tensors[t]) for t in kept]
    for op in operators:
        op.inputs = [renumber[t] for t in indices(op.inputs)]
        op.outputs = [renumber[t] for t in indices(op.outputs)]
        if op.intermediates is not None:
            op.intermediates = [renumber[t] for t in indices(op.intermediates)]
    subgraph.operators = operators
    subgraph.inputs = [renumber[t] for t in inputs]
    subgraph.outputs = [renumber[t] for t in outputs]
    root = copy.copy(model.root)
    root.subgraphs = [subgraph, *(_table_copy(other) for other in model.subgraphs[1:])]
    root.metadata = None if root.metadata is None else [copy.copy(m) for m in root.metadata]
    # Signature defs name tensors of the whole model; the segment has none of its own.
    root.signatureDefs = [s for s in root.signatureDefs or [] if s.subgraphIndex != 0] or None
    working = Model(root=root, name=model.name)
    _drop_unused_buffers(working)
    _drop_unused_opcodes(working)
    _renumber_offline_allocation(working, kept)
    return bytes(serialize(working))


def _custom_code(code: schema.OperatorCodeT) -> str | None:
    custom = code.customCode
    return custom.decode("utf-8", "replace") if isinstance(custom, bytes) else custom


def _renumber_offline_allocation(model: Model, kept: list[int]) -> None:
    """Rewrite Vela's OfflineMemoryAllocation metadata of `model` (a segment keeping tensors `kept` of the
    whole model's subgraph 0, in that order) so that it names the segment's tensors; RunnerError when the
    metadata does not describe the whole model's tensors."""
    found = offline_allocation(model)
    if found is not None:
        metadata, values = found
        if len(values) < 3 or values[2] != len(values) - 3 or any(t >= values[2] for t in kept):
            raise RunnerError(
                f"{model.name}: OfflineMemoryAllocation metadata holds {len(values)} values, not a header and one "
                "offset per tensor of subgraph 0"
            )
        rewritten = [values[0], values[1], len(kept), *(values[3 + t] for t in kept)]
        buffer = schema.BufferT()
        buffer.data = np.asarray(rewritten, dtype="<i4").view(np.uint8)
        model.root.buffers[metadata.buffer] = buffer


def _table_copy(subgraph: schema.SubGraphT) -> schema.SubGraphT:
    """A copy of `subgraph` whose tensors and operators may be renumbered without touching the original's."""
    result = copy.copy(subgraph)
    result.tensors = None if subgraph.tensors is None else [copy.copy(t) for t in subgraph.tensors]
    result.operators = None if subgraph.operators is None else [copy.copy(op) for op in subgraph.operators]
    return result


def _drop_unused_buffers(model: Model) -> None:
    """Keep the buffers a tensor or metadata entry names (and the sentinel 0), as copies, renumbered."""
    buffers = model.buffers
    used = {0} | {t.buffer for s in model.subgraphs for t in s.tensors or []}
    used |= {m.buffer for m in model.root.metadata or []}
    kept_indices = [index for index in sorted(used) if index < len(buffers)]
    renumber = {old: new for new, old in enumerate(kept_indices)}
    model.root.buffers = [copy.copy(buffers[index]) for index in kept_indices]
    for subgraph in model.subgraphs:
        for tensor in subgraph.tensors or []:
            tensor.buffer = renumber[tensor.buffer]
    for metadata in model.root.metadata or []:
        metadata.buffer = renumber[metadata.buffer]


def _drop_unused_opcodes(model: Model) -> None:
    used = sorted({op.opcodeIndex for s in model.subgraphs for op in s.operators or []})
    renumber = {old: new for new, old in enumerate(used)}
    model.root.operatorCodes = [model.operator_codes[i] for i in used]
    for subgraph in model.subgraphs:
        for op in subgraph.operators or []:
            op.opcodeIndex = renumber[op.opcodeIndex]
