"""What the AOT plan stage knows of each operator, read once from the model.

`OperatorFacts` is a frozen summary of one operator of subgraph 0: its type,
position and stable id (`heliabuild.model.ids`), its input and output tensors
(name, dtype, shape, whether constant, quantization), the builtin options the
knob and kernel-entry tables look at (stride, padding, dilation, fused
activation, depth multiplier, keep_num_dims, pool filter) and the weight
shape. `model_facts(model)` builds them for every operator in execution order.

Constants: a constant is an operator input whose buffer holds data. Tensors
that share a buffer share one storage root: the first of them in first-reader
order (operators in execution order, each operator's inputs in order).
`storage_roots(model)` lists the roots in that order (the order of the plan's
`tensors[]`) and `constants_read(model, op_index)` the roots an operator reads.
`unstageable_reasons(model)` says, per root, why the model itself keeps a
constant out of a stream pool; the reasons are the phrases the report's
`constants[].reason` and the conversion's warnings print, checked in this
order (the plan adds `pinned`, from the constant's residency):

- `read at init`: some reader takes it as a parameter input that the layer
  consumes when it is set up, not while it runs (a RESHAPE shape, PAD
  paddings, a TRANSPOSE permutation, SLICE/STRIDED_SLICE bounds, a reduction's
  axes, TRANSPOSE_CONV's output shape; `INIT_PARAMETER_INPUTS`), so there is
  no run-time read a stream unit could precede;
- `a model output`: a graph output lies on the root's buffer, so its bytes
  are exposed to the application and must stay where they are stored;
- `shares storage through an alias`: more than one tensor (of any subgraph)
  lies on the root's buffer, so a staged copy would not be seen through the
  others;
- `fixed in place`: some reader is an `ethos-u` operator, whose command
  stream addresses its constants (the stream itself and the weights Vela
  packed) by their place in the constant region.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from ai_edge_litert import schema_py_generated as schema

from heliabuild.model.graph import indices, tensor_name
from heliabuild.model.ids import stable_operator_ids
from heliabuild.model.io import Model
from heliabuild.model.opcodes import custom_code, operator_type

NPU_OPERATOR = "ethos-u"
FENCE_OPERATOR = "ETHOS_U_STREAM_SPLIT"

DTYPE_NAMES: dict[int, str] = {
    value: name.lower() for name, value in vars(schema.TensorType).items() if not name.startswith("_")
}
"""TFLite TensorType code -> lower-case dtype name (`int8`, `float16`, ...), as admission's TensorSpec spells them."""

_PADDING_NAMES = {value: name for name, value in vars(schema.Padding).items() if not name.startswith("_")}
_ACTIVATION_NAMES = {
    value: name for name, value in vars(schema.ActivationFunctionType).items() if not name.startswith("_")
}

WEIGHT_INPUT: dict[str, int] = {
    "CONV_2D": 1,
    "DEPTHWISE_CONV_2D": 1,
    "FULLY_CONNECTED": 1,
    "TRANSPOSE_CONV": 1,
    "CONV_3D": 1,
}
"""The input position of the weights of the operators that have them."""

DATA_INPUT: dict[str, int] = {"TRANSPOSE_CONV": 2}
"""The input position of the data operand where it is not 0."""

BIAS_INPUT: dict[str, int] = {"CONV_2D": 2, "DEPTHWISE_CONV_2D": 2, "FULLY_CONNECTED": 2, "TRANSPOSE_CONV": 3}

INIT_PARAMETER_INPUTS: dict[str, tuple[int, ...]] = {
    "RESHAPE": (1,),
    "PAD": (1,),
    "PADV2": (1,),
    "MIRROR_PAD": (1,),
    "TRANSPOSE": (1,),
    "SLICE": (1, 2),
    "STRIDED_SLICE": (1, 2, 3),
    "EXPAND_DIMS": (1,),
    "MEAN": (1,),
    "SUM": (1,),
    "REDUCE_MAX": (1,),
    "REDUCE_MIN": (1,),
    "REDUCE_PROD": (1,),
    "REDUCE_ANY": (1,),
    "REDUCE_ALL": (1,),
    "ARG_MAX": (1,),
    "ARG_MIN": (1,),
    "RESIZE_BILINEAR": (1,),
    "RESIZE_NEAREST_NEIGHBOR": (1,),
    "TILE": (1,),
    "BROADCAST_TO": (1,),
    "SPLIT": (0,),
    "SPLIT_V": (1, 2),
    "TRANSPOSE_CONV": (0,),
    "REVERSE_V2": (1,),
    "CUMSUM": (1,),
}
"""Per operator type, the input positions that are set-up parameters (shapes, axes, bounds), not run-time data."""

REASON_READ_AT_INIT = "read at init"
REASON_PINNED = "pinned"
REASON_MODEL_OUTPUT = "a model output"
REASON_ALIAS = "shares storage through an alias"
REASON_FIXED_IN_PLACE = "fixed in place"


@dataclass(frozen=True)
class Quantization:
    """A tensor's affine quantization: one scale and zero point per tensor, or one per index of `axis`."""

    scales: tuple[float, ...]
    zero_points: tuple[int, ...]
    axis: int

    @property
    def per_axis(self) -> bool:
        return len(self.scales) > 1

    def to_json(self) -> dict[str, Any]:
        return {"scales": list(self.scales), "zero_points": list(self.zero_points), "axis": self.axis}


@dataclass(frozen=True)
class TensorFacts:
    """One tensor as the plan stage sees it. `dtype` is the lower-case TFLite type name; `shape` the
    static shape (an unknown extent is -1); `is_constant` is true when its buffer holds data;
    `quantization` is None for a tensor without scales."""

    index: int
    name: str
    dtype: str
    shape: tuple[int, ...]
    buffer: int
    is_constant: bool
    is_variable: bool
    quantization: Quantization | None

    @property
    def element_count(self) -> int:
        return math.prod(self.shape)

    @property
    def static(self) -> bool:
        return all(d >= 0 for d in self.shape)


@dataclass(frozen=True)
class OperatorFacts:
    """One operator: see the module docstring.

    `inputs` keeps optional inputs that are absent (-1) as None, so positions
    match the TFLite operator's. The option fields are None where the
    operator's options do not have them; `options` holds every scalar or list
    field of the builtin options by snake_case name (enums by their name), as
    sorted (name, value) pairs.
    """

    index: int
    id: str
    id_source: str
    node_id: str
    op_type: str
    custom_code: str | None
    inputs: tuple[TensorFacts | None, ...]
    outputs: tuple[TensorFacts, ...]
    options: tuple[tuple[str, Any], ...]
    stride: tuple[int, int] | None
    padding: str | None
    dilation: tuple[int, int] | None
    fused_activation: str | None
    depth_multiplier: int | None
    keep_num_dims: bool | None
    filter_size: tuple[int, int] | None
    weight_shape: tuple[int, ...] | None

    def option(self, name: str, default: Any = None) -> Any:
        for key, value in self.options:
            if key == name:
                return value
        return default

    def input(self, position: int) -> TensorFacts | None:
        return self.inputs[position] if 0 <= position < len(self.inputs) else None

    @property
    def data_input(self) -> TensorFacts | None:
        """The operand the layer computes on (input 0; TRANSPOSE_CONV's input 2)."""
        return self.input(DATA_INPUT.get(self.op_type, 0))

    @property
    def output(self) -> TensorFacts | None:
        return self.outputs[0] if self.outputs else None

    @property
    def weights(self) -> TensorFacts | None:
        position = WEIGHT_INPUT.get(self.op_type)
        return None if position is None else self.input(position)

    @property
    def bias(self) -> TensorFacts | None:
        position = BIAS_INPUT.get(self.op_type)
        return None if position is None else self.input(position)

    @property
    def dtype(self) -> str | None:
        """The layer's data type: its data operand's dtype (its first output's when it has no input)."""
        data = self.data_input
        if data is not None:
            return data.dtype
        return self.outputs[0].dtype if self.outputs else None

    @property
    def kernel_hw(self) -> tuple[int, int] | None:
        """The (height, width) of the filter window: the weights' for convolutions, the options' for pooling."""
        if self.op_type in ("CONV_2D", "DEPTHWISE_CONV_2D", "TRANSPOSE_CONV") and self.weight_shape is not None:
            if len(self.weight_shape) == 4:
                return int(self.weight_shape[1]), int(self.weight_shape[2])
            return None
        return self.filter_size

    @cached_property
    def pads(self) -> tuple[int, int] | None:
        """The (top, left) padding CMSIS-NN receives: TFLite's `ComputePaddingHeightWidth` for SAME (the
        smaller half of the total), 0 for VALID; None where the shapes or options are missing."""
        data, out, window = self.data_input, self.output, self.kernel_hw
        if self.padding is None or self.stride is None or data is None or out is None or window is None:
            return None
        if self.op_type == "TRANSPOSE_CONV" or len(data.shape) != 4 or len(out.shape) != 4:
            return None
        if self.padding == "VALID":
            return 0, 0
        dilation = self.dilation or (1, 1)
        result = []
        for axis in (0, 1):
            size, out_size = data.shape[1 + axis], out.shape[1 + axis]
            effective = (window[axis] - 1) * dilation[axis] + 1
            total = max((out_size - 1) * self.stride[axis] + effective - size, 0)
            result.append(total // 2)
        return result[0], result[1]

    @property
    def groups(self) -> int | None:
        """CONV_2D's group count (input channels / filter input channels), else None."""
        data, weights = self.data_input, self.weight_shape
        if self.op_type != "CONV_2D" or data is None or weights is None or len(weights) != 4 or not data.shape:
            return None
        if weights[3] <= 0 or data.shape[-1] <= 0 or data.shape[-1] % weights[3]:
            return None
        return data.shape[-1] // weights[3]


def _text(value: str | bytes | None) -> str | None:
    if value is None:
        return None
    return value.decode("utf-8", errors="replace") if isinstance(value, bytes) else value


def _quantization(params: schema.QuantizationParametersT | None) -> Quantization | None:
    if params is None or params.scale is None or len(params.scale) == 0:
        return None
    scales = tuple(float(s) for s in params.scale)
    zeros = tuple(int(z) for z in params.zeroPoint) if params.zeroPoint is not None else ()
    if not zeros:
        zeros = (0,) * len(scales)
    return Quantization(scales=scales, zero_points=zeros, axis=int(params.quantizedDimension))


def tensor_facts(model: Model, index: int, subgraph: int = 0) -> TensorFacts:
    """The facts of tensor `index` of `subgraph`."""
    tensor = (model.subgraphs[subgraph].tensors or [])[index]
    return TensorFacts(
        index=index,
        name=tensor_name(tensor),
        dtype=DTYPE_NAMES.get(int(tensor.type), f"type_{int(tensor.type)}"),
        shape=tuple(indices(tensor.shape)),
        buffer=int(tensor.buffer),
        is_constant=model.buffer_data(int(tensor.buffer)) is not None,
        is_variable=bool(tensor.isVariable),
        quantization=_quantization(tensor.quantization),
    )


def _snake(name: str) -> str:
    out = []
    for char in name:
        if char.isupper():
            out.append("_" + char.lower())
        else:
            out.append(char)
    return "".join(out).lstrip("_")


def _option_value(name: str, value: Any) -> Any:
    if name == "padding" and isinstance(value, int):
        return _PADDING_NAMES.get(value, value)
    if name == "fusedActivationFunction" and isinstance(value, int):
        return _ACTIVATION_NAMES.get(value, value)
    if isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    try:
        return tuple(int(v) for v in value)
    except (TypeError, ValueError):
        return None


def _options(op: schema.OperatorT) -> tuple[tuple[str, Any], ...]:
    options = op.builtinOptions
    if options is None:
        return ()
    pairs = []
    for name, value in vars(options).items():
        if name.startswith("_") or value is None:
            continue
        converted = _option_value(name, value)
        if converted is not None:
            pairs.append((_snake(name), converted))
    return tuple(sorted(pairs))


def operator_facts(model: Model, index: int, *, ids: Sequence[Any] | None = None, subgraph: int = 0) -> OperatorFacts:
    """The facts of operator `index` of `subgraph`; `ids` (from stable_operator_ids) avoids recomputing the ids."""
    graph = model.subgraphs[subgraph]
    op = (graph.operators or [])[index]
    opcode = model.operator_codes[op.opcodeIndex]
    ids = stable_operator_ids(model, subgraph) if ids is None else ids
    own = ids[index]
    inputs = tuple(None if t < 0 else tensor_facts(model, t, subgraph) for t in indices(op.inputs))
    outputs = tuple(tensor_facts(model, t, subgraph) for t in indices(op.outputs) if t >= 0)
    options = _options(op)
    found = dict(options)
    op_type = operator_type(opcode)

    def pair(h: str, w: str) -> tuple[int, int] | None:
        if h in found and w in found:
            return int(found[h]), int(found[w])
        return None

    weight_position = WEIGHT_INPUT.get(op_type)
    weights = inputs[weight_position] if weight_position is not None and weight_position < len(inputs) else None
    return OperatorFacts(
        index=index,
        id=own.id,
        id_source=own.id_source,
        node_id=own.node_id,
        op_type=op_type,
        custom_code=custom_code(opcode),
        inputs=inputs,
        outputs=outputs,
        options=options,
        stride=pair("stride_h", "stride_w"),
        padding=found.get("padding") if isinstance(found.get("padding"), str) else None,
        dilation=pair("dilation_h_factor", "dilation_w_factor"),
        fused_activation=found.get("fused_activation_function"),
        depth_multiplier=int(found["depth_multiplier"]) if "depth_multiplier" in found else None,
        keep_num_dims=bool(found["keep_num_dims"]) if "keep_num_dims" in found else None,
        filter_size=pair("filter_height", "filter_width"),
        weight_shape=weights.shape if weights is not None else None,
    )


def model_facts(model: Model, subgraph: int = 0) -> list[OperatorFacts]:
    """The facts of every operator of `subgraph`, in execution order."""
    ids = stable_operator_ids(model, subgraph)
    count = len(model.subgraphs[subgraph].operators or [])
    return [operator_facts(model, index, ids=ids, subgraph=subgraph) for index in range(count)]


@dataclass(frozen=True)
class StorageRoot:
    """A constant's storage: the root tensor (the first tensor on the buffer in first-reader order), every
    constant tensor read from the buffer (`tensors`, root first, then in first-reader order), its readers
    (operator indices, execution order) and its size in bytes."""

    tensor: int
    name: str
    buffer: int
    bytes: int
    tensors: tuple[int, ...]
    readers: tuple[int, ...]

    @property
    def aliased(self) -> bool:
        return len(self.tensors) > 1


@dataclass(frozen=True)
class ConstantRead:
    """A constant an operator reads, by storage root: `tensor` the input the operator names (the first one
    on the root when it names several), `root` the storage root's tensor."""

    tensor: int
    name: str
    root: int
    root_name: str
    bytes: int


def storage_roots(model: Model, subgraph: int = 0) -> list[StorageRoot]:
    """Every constant storage root the operators read, in first-reader order."""
    graph = model.subgraphs[subgraph]
    tensors = graph.tensors or []
    # Per constant buffer, in first-reader order: its tensors and its readers, each in first-use order.
    members: dict[int, dict[int, None]] = {}
    readers: dict[int, dict[int, None]] = {}
    for op_index, op in enumerate(graph.operators or []):
        for t in indices(op.inputs):
            if t < 0:
                continue
            buffer = int(tensors[t].buffer)
            if model.buffer_data(buffer) is None:
                continue
            members.setdefault(buffer, {})[t] = None
            readers.setdefault(buffer, {})[op_index] = None
    roots = []
    for buffer, tensor_set in members.items():
        data = model.buffer_data(buffer)
        root = next(iter(tensor_set))
        roots.append(
            StorageRoot(
                tensor=root,
                name=tensor_name(tensors[root]),
                buffer=buffer,
                bytes=0 if data is None else int(data.size),
                tensors=tuple(tensor_set),
                readers=tuple(readers[buffer]),
            )
        )
    return roots


def constants_by_operator(model: Model, subgraph: int = 0) -> list[list[ConstantRead]]:
    """For every operator, the constants it reads by storage root (each root once, in input order)."""
    graph = model.subgraphs[subgraph]
    tensors = graph.tensors or []
    root_of: dict[int, StorageRoot] = {root.buffer: root for root in storage_roots(model, subgraph)}
    result: list[list[ConstantRead]] = []
    for op in graph.operators or []:
        reads: list[ConstantRead] = []
        seen: set[int] = set()
        for t in indices(op.inputs):
            if t < 0:
                continue
            root = root_of.get(int(tensors[t].buffer))
            if root is None or root.buffer in seen:
                continue
            seen.add(root.buffer)
            reads.append(
                ConstantRead(
                    tensor=t, name=tensor_name(tensors[t]), root=root.tensor, root_name=root.name, bytes=root.bytes
                )
            )
        result.append(reads)
    return result


def constants_read(model: Model, op_index: int, subgraph: int = 0) -> list[ConstantRead]:
    """The constants operator `op_index` reads, by storage root, in its input order."""
    return constants_by_operator(model, subgraph)[op_index]


def unstageable_reasons(model: Model, subgraph: int = 0) -> dict[int, str | None]:
    """Per storage root (by root tensor index), the model's reason it cannot be staged, or None (module
    docstring; `pinned` comes from the plan)."""
    graph = model.subgraphs[subgraph]
    operators = graph.operators or []
    tensors = graph.tensors or []
    output_buffers = {int(tensors[t].buffer) for t in indices(graph.outputs)}
    on_buffer: dict[int, int] = {}
    for each in model.subgraphs:
        for tensor in each.tensors or []:
            on_buffer[int(tensor.buffer)] = on_buffer.get(int(tensor.buffer), 0) + 1
    types = [operator_type(model.operator_codes[op.opcodeIndex]) for op in operators]
    reasons: dict[int, str | None] = {}
    for root in storage_roots(model, subgraph):
        reason: str | None = None
        at_init = False
        fixed = False
        members = set(root.tensors)
        for op_index in root.readers:
            op_inputs = indices(operators[op_index].inputs)
            parameters = INIT_PARAMETER_INPUTS.get(types[op_index], ())
            if any(p < len(op_inputs) and op_inputs[p] in members for p in parameters):
                at_init = True
            if types[op_index] == NPU_OPERATOR:
                fixed = True
        if at_init:
            reason = REASON_READ_AT_INIT
        elif root.buffer in output_buffers:
            reason = REASON_MODEL_OUTPUT
        elif on_buffer.get(root.buffer, 0) > 1:
            reason = REASON_ALIAS
        elif fixed:
            reason = REASON_FIXED_IN_PLACE
        reasons[root.tensor] = reason
    return reasons
