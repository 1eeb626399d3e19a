"""Where every byte of a generated module lives (docs/firmware.md, "Layout").

- Activations (every non-constant tensor an operator reads or writes, the model's inputs and outputs, the
  fences' outputs) and the kernels' scratch buffers (CONV_2D's im2col row, live during its operator only)
  share one arena, placed by `heliabuild.codegen.arena` from their live ranges.
- Variable tensors (an LSTM's or SVDF's state) live outside the arena, in the carried state region: each at
  its own aligned offset, reset once by model_init to LiteRT's reset value (an int8 tensor's zero point, 0
  otherwise) and never again, so the state carries across warmups and measured invokes (the acquisition
  lifecycle's `carry`).
- Constants follow the plan's `tensors[]`, one entry per storage root in first-reader order: `direct` stays
  where it is stored (the target's constant memory), `pin` is copied at init into its `destination_memory`,
  `stream` is read from the stream pool, where its schedule unit copies it after the unit's `issue_after`
  operator. A unit is laid out as one span, the same on both sides of the copy, so it is copied in one go.

`plan_layout` checks that the plan belongs to the model (its `model.sha256`, its operators by position and
type, its constants by id) and that everything fits the target's memories; each failure is one CodegenError
naming the plan, the operator, the constant or the unit.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from heliabuild.aot.facts import storage_roots
from heliabuild.aot.planner import constant_ids
from heliabuild.aot.records import OptimizationPlan
from heliabuild.codegen.arena import ArenaError, Buffer, Placement, fixed_arena, plan_arena
from heliabuild.codegen.calls import KernelCall
from heliabuild.codegen.lowering import CodegenError
from heliabuild.codegen.variables import RESOURCE, resource_variables
from heliabuild.fence.contract import ELEMENT_BYTES
from heliabuild.model.graph import indices, tensor_name
from heliabuild.model.io import Model, offline_allocation

ARENA_ALIGNMENT = 16


def scratch_buffer(op_index: int) -> str:
    """The arena buffer name of operator `op_index`'s scratch (tensor buffers are named by their index)."""
    return f"scratch{op_index}"


@dataclass(frozen=True)
class ConstantPlacement:
    """One storage root: its buffer, the tensors on it, its residency and, for `stream`, its pool offset and
    unit; for `pin`, the memory its copy lives in."""

    id: str
    buffer: int
    tensors: tuple[int, ...]
    bytes: int
    alignment: int
    residency: str
    destination_memory: str | None
    unit: int | None
    pool_offset: int | None


@dataclass(frozen=True)
class UnitPlacement:
    """One schedule unit: the constants it copies (by `tensors[]` position), its pool offset and span size, and
    the operator after which it is issued (None: at the start of every run)."""

    id: int
    constants: tuple[int, ...]
    pool_offset: int
    bytes: int
    issue_after: int | None


@dataclass(frozen=True)
class StatePlacement:
    """One variable tensor, or one handle tensor of a resource variable, in the carried state region: its offset
    and bytes, the byte model_init fills it with (LiteRT's reset value: the zero point's byte for int8, 0
    otherwise) and, for a resource variable, its name and the value its CALL_ONCE assigns (copied by model_init
    after the fill). Handles naming one resource variable share its offset."""

    tensor: int
    name: str
    offset: int
    bytes: int
    reset_byte: int
    variable: str | None = None
    initial: bytes | None = None

    def to_json(self) -> dict[str, object]:
        return {
            "tensor": self.tensor,
            "name": self.name,
            "offset": self.offset,
            "bytes": self.bytes,
            "reset_byte": self.reset_byte,
            "resource_variable": self.variable,
            "initialized_by": "call_once" if self.initial is not None else "reset",
        }


@dataclass(frozen=True)
class Layout:
    """Everything the emitter needs besides the calls."""

    arena: Placement
    activation_bytes: dict[int, int]
    constants: tuple[ConstantPlacement, ...]
    constant_of_tensor: dict[int, int]
    units: tuple[UnitPlacement, ...]
    pool_bytes: int
    pool_alignment: int
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]
    fences: int
    scratch: dict[int, int] = field(default_factory=dict)
    """Operator index -> the bytes of its scratch buffer in the arena (offset: arena.offsets[scratch_buffer(op)])."""
    state: tuple[StatePlacement, ...] = ()
    """The variable tensors, outside the arena, in the carried state region (module docstring)."""

    @property
    def state_bytes(self) -> int:
        """The carried state region's size (0 without variable tensors)."""
        return max((_aligned(p.offset + p.bytes) for p in self.state), default=0)

    def state_offset(self, tensor: int) -> int | None:
        """Where variable tensor `tensor` lives in the carried state region, or None for any other tensor."""
        return next((p.offset for p in self.state if p.tensor == tensor), None)

    def to_json(self) -> dict[str, object]:
        def tensors(indices: Sequence[int]) -> list[dict[str, int]]:
            return [
                {"tensor": t, "bytes": self.activation_bytes[t], "offset": self.arena.offsets[str(t)]} for t in indices
            ]

        return {
            "fences": self.fences,
            "inputs": tensors(self.inputs),
            "outputs": tensors(self.outputs),
            "arena": self.arena.to_json(),
            "constants": [
                {
                    "id": c.id,
                    "bytes": c.bytes,
                    "residency": c.residency,
                    "destination_memory": c.destination_memory,
                    "unit": c.unit,
                    "pool_offset": c.pool_offset,
                }
                for c in self.constants
            ],
            "scratch": [
                {"operator": op, "bytes": size, "offset": self.arena.offsets[scratch_buffer(op)]}
                for op, size in sorted(self.scratch.items())
            ],
            "state": {
                "bytes": self.state_bytes,
                "tensors": [p.to_json() for p in self.state],
            },
            "stream_pool": {"bytes": self.pool_bytes, "alignment": self.pool_alignment},
            "units": [
                {"id": u.id, "bytes": u.bytes, "pool_offset": u.pool_offset, "issue_after": u.issue_after}
                for u in self.units
            ],
        }


def _aligned(value: int) -> int:
    return -(-value // ARENA_ALIGNMENT) * ARENA_ALIGNMENT


def _state(model: Model, calls: Sequence[KernelCall]) -> tuple[StatePlacement, ...]:
    """The variable tensors and resource handles the calls read or write, in index order, each variable at the
    next aligned offset (handles of one resource variable at its offset)."""
    tensors = model.subgraphs[0].tensors
    touched = sorted({t for call in calls for t in (*call.reads, *call.writes)})
    handles = [t for t in touched if int(tensors[t].type) == RESOURCE]
    resources = resource_variables(model, model.name) if handles else {}
    placements = []
    offset = 0
    resource_offsets: dict[str, int] = {}
    for t in touched:
        tensor = tensors[t]
        if tensor.isVariable:
            size = _tensor_bytes(model, t)
            zero_points = tensor.quantization.zeroPoint if tensor.quantization is not None else None
            reset = int(zero_points[0]) & 0xFF if int(tensor.type) == 9 and zero_points is not None else 0
            placements.append(StatePlacement(t, tensor_name(tensor), offset, size, reset))
        elif t in resources:
            variable = resources[t]
            at = resource_offsets.setdefault(variable.name, offset)
            placements.append(
                StatePlacement(t, tensor_name(tensor), at, variable.bytes, 0, variable.name, variable.initial)
            )
            if at != offset:
                continue
            size = variable.bytes
        else:
            continue
        offset = _aligned(offset + size)
    return tuple(placements)


def _tensor_bytes(model: Model, index: int) -> int:
    tensor = model.subgraphs[0].tensors[index]
    size = ELEMENT_BYTES.get(int(tensor.type))
    if size is None:
        raise CodegenError(f"tensor {index}: dtype code {tensor.type} is not supported by the module generator")
    count = 1
    for extent in indices(tensor.shape):
        count *= extent
    return count * size


def _is_constant(model: Model, index: int) -> bool:
    return model.buffer_data(int(model.subgraphs[0].tensors[index].buffer)) is not None


def _check_plan(model: Model, plan: OptimizationPlan, model_sha256: str, calls: Sequence[KernelCall]) -> None:
    origin = plan.origin or "the AOT plan"
    if plan.model.sha256 != model_sha256:
        raise CodegenError(
            f"{origin}: model.sha256 {plan.model.sha256} is not the model's sha256 {model_sha256}; "
            "the plan was made from another model",
            hint="make the plan of this model (heliabuild aot-plan)",
        )
    if len(plan.operators) != len(calls):
        raise CodegenError(f"{origin}: {len(plan.operators)} operators, the model has {len(calls)}")
    for entry, call in zip(plan.operators, calls, strict=True):
        if entry.index != call.op_index or entry.op_type != call.op_type:
            raise CodegenError(
                f"{origin}: operators[{call.op_index}] is {entry.op_type} at index {entry.index}, "
                f"the model's is {call.op_type} ({call.op_id})"
            )


def _constants(model: Model, plan: OptimizationPlan) -> list[ConstantPlacement]:
    origin = plan.origin or "the AOT plan"
    roots = storage_roots(model)
    ids = constant_ids([(root.name, root.tensor) for root in roots])
    if len(plan.tensors) != len(roots):
        raise CodegenError(f"{origin}: tensors[] lists {len(plan.tensors)} constants, the model has {len(roots)}")
    placements = []
    for position, (entry, root, expected) in enumerate(zip(plan.tensors, roots, ids, strict=True)):
        if entry.id != expected or entry.bytes != root.bytes:
            raise CodegenError(
                f"{origin}: tensors[{position}] is {entry.id!r} ({entry.bytes} bytes), the model's constant there is "
                f"{expected!r} ({root.bytes} bytes)"
            )
        residency = str(entry.residency)
        if residency not in ("direct", "pin", "stream"):
            raise CodegenError(f"{origin}: tensors[{position}] ({entry.id}): residency {residency!r} is not known")
        if residency == "stream" and (entry.unit is None or entry.pool_offset is None):
            raise CodegenError(f"{origin}: tensors[{position}] ({entry.id}) streams but names no unit or pool offset")
        placements.append(
            ConstantPlacement(
                id=entry.id,
                buffer=root.buffer,
                tensors=root.tensors,
                bytes=root.bytes,
                alignment=entry.alignment,
                residency=residency,
                destination_memory=entry.destination_memory,
                unit=entry.unit if residency == "stream" else None,
                pool_offset=entry.pool_offset if residency == "stream" else None,
            )
        )
    return placements


def _units(
    plan: OptimizationPlan, constants: Sequence[ConstantPlacement], calls: Sequence[KernelCall]
) -> list[UnitPlacement]:
    origin = plan.origin or "the AOT plan"
    schedule = plan.schedule
    if schedule is None or not schedule.units:
        return []
    position_of = {call.op_id: call.op_index for call in calls}
    by_name = {entry.name: position for position, entry in enumerate(plan.tensors)}
    units = []
    for unit in schedule.units:
        if unit.engine != "cpu":
            raise CodegenError(
                f"{origin}: schedule unit {unit.id}: engine {unit.engine!r}; the module copies cpu units only"
            )
        members = []
        for name in unit.tensors:
            position = by_name.get(name)
            if position is None or constants[position].unit != unit.id:
                raise CodegenError(f"{origin}: schedule unit {unit.id}: constant {name!r} is not streamed by this unit")
            members.append(position)
        issue_after = None
        if unit.issue_after is not None:
            issue_after = position_of.get(unit.issue_after)
            if issue_after is None:
                raise CodegenError(
                    f"{origin}: schedule unit {unit.id}: issue_after {unit.issue_after!r} names no operator"
                )
        first_reader = min(
            (
                call.op_index
                for call in calls
                for position in members
                if set(call.reads) & set(constants[position].tensors)
            ),
            default=None,
        )
        if first_reader is None or (issue_after is not None and issue_after >= first_reader):
            raise CodegenError(f"{origin}: schedule unit {unit.id} is not issued before its first reader")
        end = max(constants[p].pool_offset + constants[p].bytes for p in members)  # type: ignore[operator]
        units.append(
            UnitPlacement(
                id=unit.id,
                constants=tuple(members),
                pool_offset=unit.pool_offset,
                bytes=end - unit.pool_offset,
                issue_after=issue_after,
            )
        )
    return units


def offline_offsets(model: Model) -> dict[int, int] | None:
    """Vela's arena offset of each tensor of subgraph 0 that has one (heliabuild.model.io.offline_allocation), or
    None when the model has no OfflineMemoryAllocation."""
    found = offline_allocation(model)
    if found is None:
        return None
    values = found[1]
    if len(values) < 3 or values[2] != len(values) - 3:
        raise CodegenError(f"{model.name}: OfflineMemoryAllocation holds {len(values)} values, not one per tensor")
    return {index: offset for index, offset in enumerate(values[3:]) if offset >= 0}


def _offline_arena(model: Model, buffers: Sequence[Buffer]) -> Placement:
    offsets = offline_offsets(model)
    if offsets is None:
        raise CodegenError(
            f"{model.name}: no OfflineMemoryAllocation metadata; a model with ethos-u operators is Vela's output, "
            "which places the tensors its command streams address"
        )
    try:
        return fixed_arena(buffers, {str(t): o for t, o in offsets.items()}, ARENA_ALIGNMENT)
    except ArenaError as error:
        raise CodegenError(f"{model.name}: OfflineMemoryAllocation: {error.message}") from None


def plan_layout(
    model: Model, plan: OptimizationPlan, model_sha256: str, calls: Sequence[KernelCall], *, offline: bool = False
) -> Layout:
    """The layout of the module for `model` and its `plan` (module docstring). With `offline` (Vela's output
    run on an NPU) the arena follows the model's OfflineMemoryAllocation, which the command streams address."""
    _check_plan(model, plan, model_sha256, calls)
    constants = _constants(model, plan)
    units = _units(plan, constants, calls)
    constant_of_tensor = {t: k for k, c in enumerate(constants) for t in c.tensors}
    state = _state(model, calls)
    carried = {p.tensor for p in state}
    graph = model.subgraphs[0]
    inputs, outputs = tuple(indices(graph.inputs)), tuple(indices(graph.outputs))
    last = len(calls) - 1
    first_use: dict[int, int] = {t: 0 for t in inputs}
    last_use: dict[int, int] = {t: last for t in outputs}
    for call in calls:
        for t in call.writes:
            if t in carried:
                continue
            first_use.setdefault(t, call.op_index)
            last_use[t] = max(last_use.get(t, call.op_index), call.op_index)
        for t in call.reads:
            if t in constant_of_tensor or _is_constant(model, t) or t in carried:
                continue
            first_use.setdefault(t, 0)
            last_use[t] = max(last_use.get(t, call.op_index), call.op_index)
    for t in (*inputs, *outputs):
        if t in constant_of_tensor:
            raise CodegenError(f"tensor {t}: a model input or output that is a constant is not supported")
    sizes = {t: _tensor_bytes(model, t) for t in first_use}
    buffers = [Buffer(str(t), sizes[t], first_use[t], last_use[t]) for t in sorted(first_use)]
    # Vela's offline allocation places no heliabuild scratch: those kernels then run without (their portable body).
    scratch = {} if offline else {call.op_index: call.scratch_bytes for call in calls if call.scratch_bytes}
    buffers += [Buffer(scratch_buffer(op), size, op, op) for op, size in scratch.items()]
    pool = plan.schedule.pool if plan.schedule is not None else None
    return Layout(
        arena=_offline_arena(model, buffers) if offline else plan_arena(buffers, ARENA_ALIGNMENT),
        activation_bytes=sizes,
        constants=tuple(constants),
        constant_of_tensor=constant_of_tensor,
        units=tuple(units),
        pool_bytes=pool.bytes if pool is not None and units else 0,
        pool_alignment=pool.alignment if pool is not None else ARENA_ALIGNMENT,
        inputs=inputs,
        outputs=outputs,
        fences=sum(1 for call in calls if call.fence),
        scratch=scratch,
        state=state,
    )
