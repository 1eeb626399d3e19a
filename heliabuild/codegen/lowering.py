"""Lowering: each operator of a model to one call of heliabuild's own C kernels (docs/firmware.md, "Kernels").

`lower_model` admits a model only when every operator has a kernel here, with the types, shapes and options
that kernel supports; otherwise it raises one CodegenError listing every refused operator by its stable id and
the reason. The quantized parameters (multipliers, shifts, activation bounds, padding) are derived in Python by
`heliabuild.kernels.int8`, the same derivation the kernels' bit-exactness tests use against LiteRT. The INT32
comparisons, SELECT_V2 and float DIV, NEG and SQUARED_DIFFERENCE are admitted by their operator contracts
(`heliabuild.kernels.operators.admit`, on the Cortex-M55 target) and lowered to `c/ops_contracts.c`.

A `KernelCall` names the check function (run once, in `<prefix>_model_init`) and the run function (which trusts
that check, in `<prefix>_model_run`): `KernelCall.of(op, "helia_<op>", ...)` gives `helia_<op>_check` and
`helia_<op>_run`, the convention of every kernel (c/helia_ops.h). It also names the argument struct (or None
for a positional call) and its fields; a field is an int, a float, a `TensorRef` (resolved to an address by the
layout), an `IntArray` (a small constant table, such as per-channel multipliers or weight sums), `InlineInts`
(an array member of the struct) or a `ScratchRef` (a scratch buffer planned in the arena); None is a null
pointer.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from heliabuild.aot.facts import FENCE_OPERATOR, OperatorFacts, TensorFacts, model_facts
from heliabuild.codegen.refusals import ModuleRefusal, summary, supported_hint
from heliabuild.errors import HeliaError
from heliabuild.fence.contract import ELEMENT_BYTES, TYPE_NAMES
from heliabuild.kernels import contracts_native, int8, int8_math, int8_spatial, int16
from heliabuild.kernels import operators as contracts
from heliabuild.kernels.operators.admission import CORTEX_M55, TensorSpec, activation_name
from heliabuild.model.io import Model
from heliabuild.model.opcodes import operator_type

MAX_RANK = 6
ACTIVATIONS = ("NONE", "RELU", "RELU6", "RELU_N1_TO_1")


class CodegenError(HeliaError):
    """A model or plan the module generator cannot honour; the message names the operator or unit."""


class ModelRefusedError(CodegenError):
    """Operators without a kernel or in a form no kernel takes: `refusals` lists each one, the message groups
    them by type (heliabuild.codegen.refusals.summary)."""

    def __init__(self, message: str, refusals: Sequence[ModuleRefusal], hint: str | None = None) -> None:
        super().__init__(message, hint=hint)
        self.refusals = tuple(refusals)


@dataclass(frozen=True)
class TensorRef:
    """The address of model tensor `index` (an activation, a constant, or a constant's pool copy)."""

    index: int


@dataclass(frozen=True)
class IntArray:
    """A constant table emitted beside the call: its C element type and values."""

    ctype: str
    values: tuple[int, ...]


@dataclass(frozen=True)
class InlineInts:
    """The values of an array member of the argument struct (e.g. broadcast extents), written in place."""

    values: tuple[int, ...]


@dataclass(frozen=True)
class TensorTable:
    """A constant table of tensor addresses emitted beside the call (CONCATENATION's inputs)."""

    tensors: tuple[int, ...]


@dataclass(frozen=True)
class ScratchRef:
    """A kernel's scratch buffer of `bytes` bytes, planned in the arena, live during its operator only (CONV_2D's
    im2col row); NULL where the arena is not heliabuild's to plan (an NPU model's offline allocation)."""

    bytes: int


@dataclass(frozen=True)
class ByteValue:
    """One element's bytes emitted beside the call, passed by address (PAD's fill value)."""

    ctype: str
    value: int


Field = int | float | TensorRef | IntArray | InlineInts | TensorTable | ByteValue | ScratchRef | None


@dataclass(frozen=True)
class KernelCall:
    """One operator's kernel call. `args_type` None means `run(field values...)` in field order; `fence` marks an
    ETHOS_U_STREAM_SPLIT copy (emitted with tensor descriptors); `reads` and `writes` are tensor indices."""

    op_index: int
    op_id: str
    op_type: str
    check: str
    run: str
    args_type: str | None
    fields: tuple[tuple[str, Field], ...]
    reads: tuple[int, ...]
    writes: tuple[int, ...]
    fence: bool = False

    @property
    def scratch_bytes(self) -> int:
        """The bytes of the call's scratch buffer (0 without one)."""
        return sum(field.bytes for _, field in self.fields if isinstance(field, ScratchRef))

    @classmethod
    def of(
        cls,
        op: OperatorFacts,
        kernel: str,
        args_type: str | None,
        *,
        fields: tuple[tuple[str, Field], ...],
        reads: tuple[int, ...],
        writes: tuple[int, ...],
        check: str | None = None,
        run: str | None = None,
        fence: bool = False,
    ) -> KernelCall:
        """The call of `kernel` for `op`: its `<kernel>_check` runs once in model_init and its `<kernel>_run` (which
        trusts that check) in model_run, unless `check` or `run` names another function. A `kernel` already
        naming its run entry (`helia_<op>_run`) is that entry."""
        base = kernel.removesuffix("_run")
        return cls(
            op.index,
            op.id,
            op.op_type,
            check or f"{base}_check",
            run or f"{base}_run",
            args_type,
            fields,
            reads,
            writes,
            fence,
        )


class _Refusal(Exception):
    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def _quant(tensor: TensorFacts, what: str) -> int8.Quant:
    q = tensor.quantization
    if q is None or not q.scales:
        raise _Refusal(f"{what} {tensor.name!r} has no quantization")
    if q.per_axis:
        raise _Refusal(f"{what} {tensor.name!r} is quantized per channel; the kernel needs one scale")
    return int8.Quant(q.scales[0], q.zero_points[0] if q.zero_points else 0)


def _need(condition: bool, reason: str) -> None:
    if not condition:
        raise _Refusal(reason)


def _dtype(tensor: TensorFacts | None, dtype: str, what: str) -> TensorFacts:
    _need(tensor is not None, f"{what} is missing")
    assert tensor is not None
    _need(tensor.dtype == dtype, f"{what} {tensor.name!r} is {tensor.dtype}, expected {dtype}")
    _need(tensor.static, f"{what} {tensor.name!r} has a dynamic shape {list(tensor.shape)}")
    return tensor


def _activation(op: OperatorFacts) -> str:
    activation = op.fused_activation or "NONE"
    _need(activation in ACTIVATIONS, f"fused activation {activation} has no int8 kernel")
    return activation


def _constant(tensor: TensorFacts | None, what: str) -> TensorFacts:
    _need(tensor is not None and tensor.is_constant, f"{what} must be a constant")
    assert tensor is not None
    return tensor


def _filter_scales(weights: TensorFacts, channels: int, axis: int) -> list[float]:
    q = weights.quantization
    _need(q is not None and bool(q.scales), f"weights {weights.name!r} have no quantization")
    assert q is not None
    _need(all(z == 0 for z in q.zero_points), f"weights {weights.name!r} are not symmetric (zero point 0)")
    if len(q.scales) == 1:
        return [q.scales[0]] * channels
    _need(
        q.axis == axis and len(q.scales) == channels, f"weights {weights.name!r}: per-channel scales on axis {q.axis}"
    )
    return list(q.scales)


def _bias(op: OperatorFacts, channels: int) -> TensorRef | None:
    bias = op.input(2)
    if bias is None:
        return None
    _dtype(_constant(bias, "bias"), "int32", "bias")
    _need(bias.element_count == channels, f"bias {bias.name!r} has {bias.element_count} values for {channels} channels")
    return TensorRef(bias.index)


def _multiplier_fields(multipliers: np.ndarray, shifts: np.ndarray, per_channel: bool) -> tuple[tuple[str, Field], ...]:
    values_m = tuple(int(v) for v in multipliers) if per_channel else (int(multipliers[0]),)
    values_s = tuple(int(v) for v in shifts) if per_channel else (int(shifts[0]),)
    return (
        ("multipliers", IntArray("int32_t", values_m)),
        ("shifts", IntArray("int32_t", values_s)),
        ("quant_count", len(values_m)),
    )


def _weight_sums(model: Model, weights: TensorFacts, depthwise: bool) -> IntArray:
    """The per-output-channel weight sums the Helium bodies fold the input zero point out with (emitted as a
    constant table from the same bytes as the filter)."""
    data = model.buffer_data(weights.buffer)
    _need(data is not None, f"weights {weights.name!r} have no data")
    assert data is not None
    filter_values = np.frombuffer(data.tobytes(), dtype=np.int8).reshape(weights.shape)
    return IntArray("int32_t", tuple(int(v) for v in int8.weight_sums(filter_values, depthwise)))


def _conv_fields(
    params: int8.ConvParams, data: TensorFacts, weights: TensorFacts, bias: TensorRef | None, output: TensorFacts
) -> tuple[tuple[str, Field], ...]:
    """helia_conv_s8_args of CONV_2D, DEPTHWISE_CONV_2D and TRANSPOSE_CONV."""
    n, h, w, c = params.input_shape
    _, oh, ow, oc = params.output_shape
    per_channel = len(set(zip(params.multipliers.tolist(), params.shifts.tolist(), strict=True))) > 1
    return (
        ("input", TensorRef(data.index)),
        ("filter", TensorRef(weights.index)),
        ("bias", bias),
        *_multiplier_fields(params.multipliers, params.shifts, per_channel),
        ("output", TensorRef(output.index)),
        ("batches", n),
        ("input_h", h),
        ("input_w", w),
        ("input_c", c),
        ("filter_h", weights.shape[1]),
        ("filter_w", weights.shape[2]),
        ("output_h", oh),
        ("output_w", ow),
        ("output_c", oc),
        ("stride_h", params.stride[0]),
        ("stride_w", params.stride[1]),
        ("dilation_h", params.dilation[0]),
        ("dilation_w", params.dilation[1]),
        ("pad_top", params.pad[0]),
        ("pad_left", params.pad[1]),
        ("depth_multiplier", params.depth_multiplier),
        ("input_zero_point", params.input_zero_point),
        ("output_zero_point", params.output_zero_point),
        ("act_min", params.act_min),
        ("act_max", params.act_max),
    )


def _conv(op: OperatorFacts, model: Model, depthwise: bool) -> KernelCall:
    data = _dtype(op.input(0), "int8", "input")
    weights = _dtype(_constant(op.input(1), "weights"), "int8", "weights")
    output = _dtype(op.output, "int8", "output")
    _need(len(data.shape) == 4 and len(weights.shape) == 4, "input and weights must be rank 4 (NHWC)")
    channels = weights.shape[3] if depthwise else weights.shape[0]
    scales = _filter_scales(weights, channels, 3 if depthwise else 0)
    if not depthwise:
        _need(weights.shape[3] == data.shape[3], "grouped convolution (filter depth below input depth) has no kernel")
    params = int8.conv_params(
        data.shape,
        weights.shape,
        _quant(data, "input"),
        scales,
        _quant(output, "output"),
        stride=op.stride or (1, 1),
        dilation=op.dilation or (1, 1),
        padding=op.padding or "VALID",
        activation=_activation(op),
        depthwise=depthwise,
    )
    _need(tuple(params.output_shape) == tuple(output.shape), f"output shape {list(output.shape)} does not match")
    if depthwise:
        _need(
            op.depth_multiplier in (None, 0, params.depth_multiplier)
            and channels == data.shape[3] * params.depth_multiplier,
            "depth multiplier does not match the weights",
        )
    kind = "depthwise_conv2d" if depthwise else "conv2d"
    scratch = int8.conv_scratch_bytes(params)
    return KernelCall.of(
        op,
        f"helia_{kind}_s8",
        "helia_conv_s8_args",
        fields=(
            *_conv_fields(params, data, weights, _bias(op, params.output_shape[3]), output),
            ("weight_sums", _weight_sums(model, weights, depthwise)),
            ("scratch", ScratchRef(scratch) if scratch else None),
            ("scratch_bytes", scratch),
        ),
        reads=tuple(t.index for t in op.inputs if t is not None),
        writes=(output.index,),
    )


def _fully_connected(op: OperatorFacts, model: Model) -> KernelCall:
    data = _dtype(op.input(0), "int8", "input")
    weights = _dtype(_constant(op.input(1), "weights"), "int8", "weights")
    output = _dtype(op.output, "int8", "output")
    _need(len(weights.shape) == 2, "weights must be rank 2 [output_depth, depth]")
    scales = _filter_scales(weights, weights.shape[0], 0)
    params = int8.fully_connected_params(
        data.element_count, weights.shape, _quant(data, "input"), scales, _quant(output, "output"), _activation(op)
    )
    _need(
        output.element_count == params.batches * params.output_depth,
        f"output {output.name!r} has {output.element_count} elements, expected {params.batches * params.output_depth}",
    )
    per_channel = len(set(zip(params.multipliers.tolist(), params.shifts.tolist(), strict=True))) > 1
    return KernelCall.of(
        op,
        "helia_fully_connected_s8",
        "helia_fully_connected_s8_args",
        fields=(
            ("input", TensorRef(data.index)),
            ("filter", TensorRef(weights.index)),
            ("bias", _bias(op, params.output_depth)),
            *_multiplier_fields(params.multipliers, params.shifts, per_channel),
            ("output", TensorRef(output.index)),
            ("batches", params.batches),
            ("depth", params.depth),
            ("output_depth", params.output_depth),
            ("input_zero_point", params.input_zero_point),
            ("output_zero_point", params.output_zero_point),
            ("act_min", params.act_min),
            ("act_max", params.act_max),
            ("weight_sums", _weight_sums(model, weights, False)),
        ),
        reads=tuple(t.index for t in op.inputs if t is not None),
        writes=(output.index,),
    )


def _pool(op: OperatorFacts) -> KernelCall:
    data = _dtype(op.input(0), "int8", "input")
    output = _dtype(op.output, "int8", "output")
    _need(len(data.shape) == 4, "input must be rank 4 (NHWC)")
    quant = _quant(output, "output")
    _need(_quant(data, "input") == quant, "input and output quantization differ; the pooling kernels need them equal")
    _need(op.filter_size is not None, "pooling options are missing")
    assert op.filter_size is not None
    params = int8.pool_params(
        data.shape,
        op.filter_size,
        quant,
        stride=op.stride or (1, 1),
        padding=op.padding or "VALID",
        activation=_activation(op),
    )
    _need(tuple(params.output_shape) == tuple(output.shape), f"output shape {list(output.shape)} does not match")
    kind = "average_pool2d" if op.op_type == "AVERAGE_POOL_2D" else "max_pool2d"
    n, h, w, c = params.input_shape
    return KernelCall.of(
        op,
        f"helia_{kind}_s8",
        "helia_pool_s8_args",
        fields=(
            ("input", TensorRef(data.index)),
            ("output", TensorRef(output.index)),
            ("batches", n),
            ("input_h", h),
            ("input_w", w),
            ("channels", c),
            ("output_h", params.output_shape[1]),
            ("output_w", params.output_shape[2]),
            ("filter_h", params.filter[0]),
            ("filter_w", params.filter[1]),
            ("stride_h", params.stride[0]),
            ("stride_w", params.stride[1]),
            ("pad_top", params.pad[0]),
            ("pad_left", params.pad[1]),
            ("act_min", params.act_min),
            ("act_max", params.act_max),
        ),
        reads=(data.index,),
        writes=(output.index,),
    )


def _broadcast_dims(shape: Sequence[int], rank: int) -> tuple[int, ...]:
    return (1,) * (rank - len(shape)) + tuple(int(d) for d in shape)


def _binary(op: OperatorFacts) -> KernelCall:
    first = _dtype(op.input(0), "int8", "input 0")
    second = _dtype(op.input(1), "int8", "input 1")
    output = _dtype(op.output, "int8", "output")
    rank = max(len(first.shape), len(second.shape), len(output.shape), 1)
    _need(rank <= MAX_RANK, f"rank {rank} is above the kernels' {MAX_RANK}")
    dims = [_broadcast_dims(t.shape, rank) for t in (first, second, output)]
    for axis in range(rank):
        expected = max(dims[0][axis], dims[1][axis])
        _need(
            dims[0][axis] in (1, expected) and dims[1][axis] in (1, expected) and dims[2][axis] == expected,
            f"shapes {list(first.shape)} and {list(second.shape)} do not broadcast to {list(output.shape)}",
        )
    derive = int8.add_params if op.op_type == "ADD" else int8.mul_params
    params = derive(_quant(first, "input 0"), _quant(second, "input 1"), _quant(output, "output"), _activation(op))
    kind = op.op_type.lower()
    return KernelCall.of(
        op,
        f"helia_{kind}_s8",
        "helia_binary_s8_args",
        fields=(
            ("input1", TensorRef(first.index)),
            ("input2", TensorRef(second.index)),
            ("output", TensorRef(output.index)),
            ("rank", rank),
            ("input1_dims", InlineInts(dims[0])),
            ("input2_dims", InlineInts(dims[1])),
            ("output_dims", InlineInts(dims[2])),
            ("input1_zero_point", params.input1_zero_point),
            ("input2_zero_point", params.input2_zero_point),
            ("output_zero_point", params.output_zero_point),
            ("left_shift", params.left_shift),
            ("input1_multiplier", params.input1_multiplier),
            ("input1_shift", params.input1_shift),
            ("input2_multiplier", params.input2_multiplier),
            ("input2_shift", params.input2_shift),
            ("output_multiplier", params.output_multiplier),
            ("output_shift", params.output_shift),
            ("act_min", params.act_min),
            ("act_max", params.act_max),
        ),
        reads=(first.index, second.index),
        writes=(output.index,),
    )


def _byte_size(tensor: TensorFacts) -> int:
    return tensor.element_count * _ELEMENT_BYTES[tensor.dtype]


_ELEMENT_BYTES = {TYPE_NAMES[code].lower(): size for code, size in ELEMENT_BYTES.items()}
"""Bytes per element by dtype name, for the dtypes a fence carries (heliabuild.fence.contract)."""


def _reshape(op: OperatorFacts) -> KernelCall:
    data, output = op.input(0), op.output
    _need(data is not None and output is not None, "RESHAPE needs an input and an output")
    assert data is not None and output is not None
    _need(data.dtype == output.dtype and data.dtype in _ELEMENT_BYTES, f"RESHAPE of {data.dtype} has no kernel")
    _need(data.static and output.static, "RESHAPE with a dynamic shape has no kernel")
    _need(_byte_size(data) == _byte_size(output), "RESHAPE input and output sizes differ")
    return KernelCall.of(
        op,
        "helia_reshape",
        None,
        fields=(
            ("input", TensorRef(data.index)),
            ("input_bytes", _byte_size(data)),
            ("output", TensorRef(output.index)),
            ("output_bytes", _byte_size(output)),
        ),
        reads=(data.index,),
        writes=(output.index,),
    )


def _softmax(op: OperatorFacts) -> KernelCall:
    data = _dtype(op.input(0), "int8", "input")
    output = _dtype(op.output, "int8", "output")
    out = _quant(output, "output")
    _need(
        math.isclose(out.scale, 1.0 / 256.0, rel_tol=1e-6) and out.zero_point == -128,
        f"output quantization (scale {out.scale}, zero point {out.zero_point}) is not 1/256, -128",
    )
    params = int8.softmax_params(_quant(data, "input").scale, float(op.option("beta", 1.0)))
    depth = data.shape[-1] if data.shape else 1
    return KernelCall.of(
        op,
        "helia_softmax_s8",
        "helia_softmax_s8_args",
        fields=(
            ("input", TensorRef(data.index)),
            ("output", TensorRef(output.index)),
            ("rows", data.element_count // max(depth, 1)),
            ("depth", depth),
            ("input_multiplier", params.input_multiplier),
            ("input_left_shift", params.input_left_shift),
            ("diff_min", params.diff_min),
        ),
        reads=(data.index,),
        writes=(output.index,),
    )


def _paddings(op: OperatorFacts, model: Model, rank: int) -> list[tuple[int, int]]:
    pads = _constant(op.input(1), "paddings")
    _need(pads.dtype in ("int32", "int64") and pads.shape == (rank, 2), f"paddings must be a [{rank}, 2] constant")
    data = model.buffer_data(pads.buffer)
    assert data is not None
    values = np.frombuffer(data.tobytes(), dtype="<i4" if pads.dtype == "int32" else "<i8").reshape(rank, 2)
    return [(int(before), int(after)) for before, after in values]


def _pad(op: OperatorFacts, model: Model) -> KernelCall:
    data = _dtype(op.input(0), "int8", "input")
    output = _dtype(op.output, "int8", "output")
    quant = _quant(output, "output")
    _need(_quant(data, "input") == quant, "input and output quantization differ; PAD keeps the quantization")
    rank = len(data.shape)
    _need(1 <= rank <= MAX_RANK, f"rank {rank} is outside the kernel's 1..{MAX_RANK}")
    paddings = _paddings(op, model, rank)
    _need(all(b >= 0 and a >= 0 for b, a in paddings), f"negative paddings {paddings}")
    expected = tuple(d + b + a for d, (b, a) in zip(data.shape, paddings, strict=True))
    _need(expected == tuple(output.shape), f"output shape {list(output.shape)} is not the padded {list(expected)}")
    return KernelCall.of(
        op,
        "helia_pad",
        "helia_pad_args",
        fields=(
            ("input", TensorRef(data.index)),
            ("output", TensorRef(output.index)),
            ("element_size", 1),
            ("rank", rank),
            ("input_dims", InlineInts(tuple(data.shape))),
            ("before", InlineInts(tuple(b for b, _ in paddings))),
            ("after", InlineInts(tuple(a for _, a in paddings))),
            ("pad_value", ByteValue("int8_t", quant.zero_point)),
        ),
        reads=(data.index,),
        writes=(output.index,),
    )


def _concatenation(op: OperatorFacts) -> KernelCall:
    inputs = [_dtype(t, "int8", f"input {k}") for k, t in enumerate(op.inputs)]
    output = _dtype(op.output, "int8", "output")
    _need(bool(inputs), "CONCATENATION needs an input")
    quant = _quant(output, "output")
    for k, tensor in enumerate(inputs):
        _need(_quant(tensor, f"input {k}") == quant, f"input {k} is quantized unlike the output; no kernel rescales")
    _need(_activation(op) == "NONE", "CONCATENATION with a fused activation has no kernel")
    rank = len(output.shape)
    axis = int(op.option("axis", 0))
    axis = axis + rank if axis < 0 else axis
    _need(0 <= axis < rank, f"axis {op.option('axis', 0)} is outside rank {rank}")
    for k, tensor in enumerate(inputs):
        same = all(tensor.shape[a] == output.shape[a] for a in range(rank) if a != axis) and len(tensor.shape) == rank
        _need(same, f"input {k} shape {list(tensor.shape)} does not concatenate into {list(output.shape)}")
    _need(sum(t.shape[axis] for t in inputs) == output.shape[axis], "the inputs' extents do not add up to the output's")
    outer = 1
    for extent in output.shape[:axis]:
        outer *= extent
    inner = 1
    for extent in output.shape[axis + 1 :]:
        inner *= extent
    return KernelCall.of(
        op,
        "helia_concatenation",
        "helia_concat_args",
        fields=(
            ("inputs", TensorTable(tuple(t.index for t in inputs))),
            ("axis_extents", IntArray("int32_t", tuple(t.shape[axis] for t in inputs))),
            ("output", TensorRef(output.index)),
            ("element_size", 1),
            ("input_count", len(inputs)),
            ("outer", outer),
            ("inner", inner),
        ),
        reads=tuple(t.index for t in inputs),
        writes=(output.index,),
    )


_CONVERSIONS = {
    "QUANTIZE": ("float32", "int8", "output", "helia_quantize_f32_s8"),
    "DEQUANTIZE": ("int8", "float32", "input", "helia_dequantize_s8_f32"),
}
"""QUANTIZE and DEQUANTIZE: (input dtype, output dtype, the quantized side, the kernel)."""


def _conversion(op: OperatorFacts) -> KernelCall:
    source, target, quantized, kernel = _CONVERSIONS[op.op_type]
    data = _dtype(op.input(0), source, "input")
    output = _dtype(op.output, target, "output")
    quant = _quant(output if quantized == "output" else data, quantized)
    _need(data.shape == output.shape, f"{op.op_type} input and output shapes differ")
    return KernelCall.of(
        op,
        kernel,
        None,
        fields=(
            ("input", TensorRef(data.index)),
            ("output", TensorRef(output.index)),
            ("count", data.element_count),
            ("scale", quant.scale),
            ("zero_point", quant.zero_point),
        ),
        reads=(data.index,),
        writes=(output.index,),
    )


# ---- LUT and arithmetic-heavy int8 kernels (heliabuild.kernels.int8_math, c/ops_lut.c, c/ops_arith.c)


def _element_wise_s8(op: OperatorFacts, derive: Callable[[int8.Quant, int8.Quant], object]) -> KernelCall:
    """An int8 element-wise operator as one `helia_<op>_s8` call: input, output, count, then the fields of
    `derive(input quant, output quant)` (a table, or a params dataclass whose fields the struct has)."""
    data = _dtype(op.input(0), "int8", "input")
    output = _dtype(op.output, "int8", "output")
    _need(tuple(data.shape) == tuple(output.shape), f"{op.op_type} input and output shapes differ")
    derived = derive(_quant(data, "input"), _quant(output, "output"))
    if isinstance(derived, np.ndarray):
        kernel, extra = "lookup", (("table", IntArray("int8_t", tuple(int(v) for v in derived))),)
    else:
        kernel, extra = op.op_type.lower(), tuple(vars(derived).items())
    fields: tuple[tuple[str, Field], ...] = (
        ("input", TensorRef(data.index)),
        ("output", TensorRef(output.index)),
        ("count", data.element_count),
        *extra,
    )
    return KernelCall.of(
        op,
        f"helia_{kernel}_s8_run",
        f"helia_{kernel}_s8_args",
        check=f"helia_{kernel}_s8_check",
        fields=fields,
        reads=(data.index,),
        writes=(output.index,),
    )


_ELEMENT_WISE_S8: dict[str, Callable[[int8.Quant, int8.Quant], object]] = {
    **{name: (lambda a, b, name=name: int8_math.lookup_table(name, a, b)) for name in int8_math.LOOKUP_OPERATORS},
    "HARD_SWISH": int8_math.hard_swish_params,
    "RSQRT": int8_math.rsqrt_params,
}
"""int8 element-wise operator -> the derivation of its kernel's table or parameters."""


def _squared_difference(op: OperatorFacts, model: Model) -> KernelCall:
    """int8 operands: the broadcasting int8 kernel; float operands: the operator contract's."""
    first = op.input(0)
    if first is None or first.dtype != "int8":
        return _contract_binary(op, model)
    # ADD's and MUL's lowering checks the operands and gives the broadcast fields; its multipliers are replaced.
    call = _binary(op)
    _need(op.fused_activation in (None, "NONE"), "SQUARED_DIFFERENCE has no fused activation")
    params = int8_math.squared_difference_params(
        _quant(first, "input 0"), _quant(_dtype(op.input(1), "int8", "input 1"), "input 1"), _quant(op.output, "output")
    )
    fields = dict(call.fields)
    fields.update(
        left_shift=params.left_shift,
        input1_multiplier=params.input1_multiplier,
        input1_shift=params.input1_shift,
        input2_multiplier=params.input2_multiplier,
        input2_shift=params.input2_shift,
        output_multiplier=params.output_multiplier,
        output_shift=params.output_shift,
    )
    return KernelCall.of(
        op,
        "helia_squared_difference_s8_run",
        "helia_binary_s8_args",
        check="helia_squared_difference_s8_check",
        fields=tuple(fields.items()),
        reads=call.reads,
        writes=call.writes,
    )


def _add_or_mul(op: OperatorFacts) -> KernelCall:
    """int8 ADD and MUL, or their int16 16x8 forms (zero points 0; ADD with pot_scale_int16 false)."""
    first = op.input(0)
    if first is None or first.dtype != "int16":
        return _binary(op)
    second = _dtype(op.input(1), "int16", "input 1")
    output = _dtype(op.output, "int16", "output")
    _need(
        op.op_type == "MUL" or not op.option("pot_scale_int16", True),
        "int16 ADD with power-of-two scales (pot_scale_int16) has no kernel; the general-scale form has",
    )
    # The int8 lowering's broadcast fields, at int16.
    rank = max(len(first.shape), len(second.shape), len(output.shape), 1)
    _need(rank <= MAX_RANK, f"rank {rank} is above the kernels' {MAX_RANK}")
    dims = [_broadcast_dims(t.shape, rank) for t in (first, second, output)]
    expected = tuple(max(a, b) for a, b in zip(dims[0], dims[1], strict=True))
    _need(
        all(d in (1, e) for d, e in zip(dims[0] + dims[1], expected + expected, strict=True)) and dims[2] == expected,
        f"shapes {list(first.shape)} and {list(second.shape)} do not broadcast to {list(output.shape)}",
    )
    derive = int16.add_s16_params if op.op_type == "ADD" else int16.mul_s16_params
    params = derive(_quant(first, "input 0"), _quant(second, "input 1"), _quant(output, "output"), _activation(op))
    kind = op.op_type.lower()
    return KernelCall.of(
        op,
        f"helia_{kind}_s16_run",
        "helia_binary_s16_args",
        check=f"helia_{kind}_s16_check",
        fields=(
            ("input1", TensorRef(first.index)),
            ("input2", TensorRef(second.index)),
            ("output", TensorRef(output.index)),
            ("rank", rank),
            ("input1_dims", InlineInts(dims[0])),
            ("input2_dims", InlineInts(dims[1])),
            ("output_dims", InlineInts(dims[2])),
            *((name, getattr(params, name)) for name, _ in int16.BinaryS16Args._fields_[7:]),
        ),
        reads=(first.index, second.index),
        writes=(output.index,),
    )


def _l2_normalization(op: OperatorFacts) -> KernelCall:
    data = _dtype(op.input(0), "int8", "input")
    output = _dtype(op.output, "int8", "output")
    _need(tuple(data.shape) == tuple(output.shape), "L2_NORMALIZATION input and output shapes differ")
    _need(_activation(op) == "NONE", "L2_NORMALIZATION with a fused activation has no kernel")
    required = int8_math.L2_NORMALIZATION_OUTPUT
    _need(
        _quant(output, "output") == required,
        f"output quantization is not LiteRT's ({required.scale}, {required.zero_point})",
    )
    depth = data.shape[-1] if data.shape else 1
    return KernelCall.of(
        op,
        "helia_l2_normalization_s8_run",
        "helia_l2_normalization_s8_args",
        check="helia_l2_normalization_s8_check",
        fields=(
            ("input", TensorRef(data.index)),
            ("output", TensorRef(output.index)),
            ("rows", data.element_count // max(depth, 1)),
            ("depth", depth),
            ("input_zero_point", _quant(data, "input").zero_point),
        ),
        reads=(data.index,),
        writes=(output.index,),
    )


def _log_softmax(op: OperatorFacts) -> KernelCall:
    data = _dtype(op.input(0), "int8", "input")
    output = _dtype(op.output, "int8", "output")
    _need(tuple(data.shape) == tuple(output.shape), "LOG_SOFTMAX input and output shapes differ")
    required = int8_math.LOG_SOFTMAX_OUTPUT
    _need(
        _quant(output, "output") == required,
        f"output quantization is not LiteRT's ({required.scale}, {required.zero_point})",
    )
    params = int8_math.log_softmax_params(_quant(data, "input").scale)
    depth = data.shape[-1] if data.shape else 1
    return KernelCall.of(
        op,
        "helia_log_softmax_s8_run",
        "helia_log_softmax_s8_args",
        check="helia_log_softmax_s8_check",
        fields=(
            ("input", TensorRef(data.index)),
            ("output", TensorRef(output.index)),
            ("rows", data.element_count // max(depth, 1)),
            ("depth", depth),
            *vars(params).items(),
        ),
        reads=(data.index,),
        writes=(output.index,),
    )


def _batch_matmul(op: OperatorFacts) -> KernelCall:
    lhs = _dtype(op.input(0), "int8", "lhs")
    rhs = _dtype(op.input(1), "int8", "rhs")
    output = _dtype(op.output, "int8", "output")
    params = int8_spatial.batch_matmul_params(
        lhs.shape, rhs.shape, _quant(lhs, "lhs"), _quant(rhs, "rhs"), _quant(output, "output"),
        adj_lhs=bool(op.option("adj_x", False)), adj_rhs=bool(op.option("adj_y", False)),
    )  # fmt: skip
    _need(tuple(params.output_shape) == tuple(output.shape), f"output shape {list(output.shape)} does not match")
    fields = {
        name: InlineInts(value) if isinstance(value, tuple) else value
        for name, value in vars(params).items()
        if name != "output_shape"
    }
    return KernelCall.of(
        op,
        "helia_batch_matmul_s8_run",
        "helia_batch_matmul_s8_args",
        check="helia_batch_matmul_s8_check",
        fields=(
            ("lhs", TensorRef(lhs.index)),
            ("rhs", TensorRef(rhs.index)),
            ("output", TensorRef(output.index)),
            *fields.items(),
        ),
        reads=(lhs.index, rhs.index),
        writes=(output.index,),
    )


def _transpose_conv(op: OperatorFacts) -> KernelCall:
    data = _dtype(op.input(2), "int8", "input")
    weights = _dtype(_constant(op.input(1), "weights"), "int8", "weights")
    output = _dtype(op.output, "int8", "output")
    _need(len(data.shape) == 4 and len(weights.shape) == 4, "input and weights must be rank 4 (NHWC)")
    channels = weights.shape[0]
    params = int8_spatial.transpose_conv_params(
        data.shape, weights.shape, output.shape, _quant(data, "input"), _filter_scales(weights, channels, 0),
        _quant(output, "output"), stride=op.stride or (1, 1), padding=op.padding or "VALID",
        activation=_activation(op),
    )  # fmt: skip
    bias = op.input(3)
    if bias is not None:
        _dtype(_constant(bias, "bias"), "int32", "bias")
        _need(bias.element_count == channels, f"bias {bias.name!r} has {bias.element_count} values")
    return KernelCall.of(
        op,
        "helia_transpose_conv_s8_run",
        "helia_conv_s8_args",
        check="helia_transpose_conv_s8_check",
        fields=_conv_fields(params, data, weights, None if bias is None else TensorRef(bias.index), output),
        reads=tuple(t.index for t in (data, weights, bias) if t is not None),
        writes=(output.index,),
    )


def _resize(op: OperatorFacts) -> KernelCall:
    data = _dtype(op.input(0), "int8", "input")
    output = _dtype(op.output, "int8", "output")
    _need(len(data.shape) == 4 and len(output.shape) == 4, "input and output must be rank 4 (NHWC)")
    _need(
        _quant(data, "input") == _quant(output, "output"),
        "input and output quantization differ; the resize kernels need them equal",
    )
    n, h, w, c = data.shape
    _, oh, ow, oc = output.shape
    _need(output.shape[0] == n and oc == c, f"output shape {list(output.shape)} does not resize {list(data.shape)}")
    align, half = bool(op.option("align_corners", False)), bool(op.option("half_pixel_centers", False))
    nearest = op.op_type == "RESIZE_NEAREST_NEIGHBOR"
    maps: tuple[tuple[str, Field], ...] = (("row_map", None), ("column_map", None))
    if nearest:
        rows = int8_spatial.nearest_neighbor_map(h, oh, align_corners=align, half_pixel_centers=half)
        columns = int8_spatial.nearest_neighbor_map(w, ow, align_corners=align, half_pixel_centers=half)
        maps = (("row_map", IntArray("int32_t", rows)), ("column_map", IntArray("int32_t", columns)))
    kernel = "helia_resize_nearest_s8" if nearest else "helia_resize_bilinear_s8"
    return KernelCall.of(
        op,
        f"{kernel}_run",
        "helia_resize_s8_args",
        check=f"{kernel}_check",
        fields=(
            ("input", TensorRef(data.index)),
            ("output", TensorRef(output.index)),
            *maps,
            ("batches", n),
            ("input_h", h),
            ("input_w", w),
            ("channels", c),
            ("output_h", oh),
            ("output_w", ow),
            ("align_corners", int(align)),
            ("half_pixel_centers", int(half)),
        ),
        reads=(data.index,),
        writes=(output.index,),
    )


# ---- the operator contracts (heliabuild.kernels.operators): INT32 comparisons, SELECT_V2, float DIV, NEG and
# SQUARED_DIFFERENCE, lowered to c/ops_contracts.c. Admission is the contracts' own `admit` on the M55 target.

CONTRACT_TARGET = CORTEX_M55
"""The capabilities the generated firmware has (qemu-m55: Cortex-M55, FP16 admitted)."""

_FLOAT_SUFFIX = {"float32": "f32", "float16": "f16"}


def _spec(tensor: TensorFacts) -> TensorSpec:
    q = tensor.quantization
    return TensorSpec(tensor.dtype, tuple(int(d) for d in tensor.shape), quantized=q is not None and bool(q.scales))


def _admitted(op: OperatorFacts, model: Model, arity: int) -> tuple[list[TensorFacts], TensorFacts, str]:
    """The operator's inputs, output and activation once its contract admits them (else a _Refusal naming the
    contract's rule)."""
    inputs = [t for t in op.inputs if t is not None]
    _need(len(inputs) == len(op.inputs) == arity and len(op.outputs) == 1, f"{op.op_type} needs {arity} inputs")
    for tensor in inputs:
        if tensor.is_constant and tensor.dtype == "float32":
            # The emitter writes float32 constants as decimal literals, which have no NaN or infinity.
            data = model.buffer_data(tensor.buffer)
            values = np.frombuffer(data.tobytes(), "<f4") if data is not None else np.zeros(0, np.float32)
            _need(bool(np.isfinite(values).all()), f"constant {tensor.name!r} holds a NaN or an infinity")
    activation = op.fused_activation or "NONE"
    refusal = contracts.admit(
        op.op_type, [_spec(t) for t in inputs], [_spec(op.outputs[0])], activation=activation, target=CONTRACT_TARGET
    )
    if refusal is not None:
        raise _Refusal(str(refusal))
    # The comparison contract admits zero extents (an empty output); the kernels take extents >= 1.
    empty = next((t for t in (*inputs, *op.outputs) if 0 in t.shape), None)
    _need(empty is None, f"tensor {empty.name if empty else ''!r} is empty; the kernels take extents >= 1")
    return inputs, op.outputs[0], activation


def _dims_fields(
    names: Sequence[str], tensors: Sequence[TensorFacts], output: TensorFacts, max_rank: int
) -> tuple[tuple[str, Field], ...]:
    try:
        rank, dims = contracts_native.kernel_dims([t.shape for t in tensors], output.shape, max_rank)
    except contracts_native.ContractKernelError as error:
        raise _Refusal(error.message) from None
    return (("rank", rank), *((f"{name}_dims", InlineInts(d)) for name, d in zip(names, dims, strict=True)))


def _contract_binary(op: OperatorFacts, model: Model) -> KernelCall:
    (first, second), output, activation = _admitted(op, model, 2)
    if op.op_type in contracts_native.COMPARISONS:
        run = contracts_native.COMPARISONS[op.op_type]
    else:
        run = f"helia_{op.op_type.lower()}_{_FLOAT_SUFFIX[first.dtype]}"
    return KernelCall.of(
        op,
        run,
        "helia_broadcast_args",
        fields=(
            ("input1", TensorRef(first.index)),
            ("input2", TensorRef(second.index)),
            ("output", TensorRef(output.index)),
            *_dims_fields(("input1", "input2", "output"), (first, second), output, MAX_RANK),
            ("activation", contracts_native.ACTIVATION_CODES[activation_name(activation)]),
        ),
        reads=(first.index, second.index),
        writes=(output.index,),
    )


def _select_v2(op: OperatorFacts, model: Model) -> KernelCall:
    (condition, x, y), output, _ = _admitted(op, model, 3)
    return KernelCall.of(
        op,
        "helia_select_v2_s32",
        "helia_select_v2_s32_args",
        fields=(
            ("condition", TensorRef(condition.index)),
            ("x", TensorRef(x.index)),
            ("y", TensorRef(y.index)),
            ("output", TensorRef(output.index)),
            *_dims_fields(
                ("condition", "x", "y", "output"), (condition, x, y), output, contracts_native.SELECT_MAX_RANK
            ),
        ),
        reads=(condition.index, x.index, y.index),
        writes=(output.index,),
    )


def _neg(op: OperatorFacts, model: Model) -> KernelCall:
    (data,), output, _ = _admitted(op, model, 1)
    run = f"helia_neg_{_FLOAT_SUFFIX[data.dtype]}"
    return KernelCall.of(
        op,
        run,
        None,
        fields=(("input", TensorRef(data.index)), ("output", TensorRef(output.index)), ("count", data.element_count)),
        reads=(data.index,),
        writes=(output.index,),
    )


def _fence(op: OperatorFacts) -> KernelCall:
    inputs = [t for t in op.inputs if t is not None]
    _need(len(inputs) == len(op.outputs) >= 1, "the fence needs matching nonempty input and output lists")
    for source, destination in zip(inputs, op.outputs, strict=True):
        _need(source.dtype in _ELEMENT_BYTES, f"fence pair {source.name!r}: dtype {source.dtype}")
        _need(source.static and destination.static, f"fence pair {source.name!r} has a dynamic shape")
    return KernelCall.of(
        op,
        "helia_stream_split",
        None,
        check="helia_stream_split_prepare",
        fields=(),
        reads=tuple(t.index for t in inputs),
        writes=tuple(t.index for t in op.outputs),
        fence=True,
    )


_LOWERINGS: dict[str, Callable[[OperatorFacts, Model], KernelCall]] = {
    "CONV_2D": lambda op, model: _conv(op, model, depthwise=False),
    "DEPTHWISE_CONV_2D": lambda op, model: _conv(op, model, depthwise=True),
    "FULLY_CONNECTED": _fully_connected,
    "AVERAGE_POOL_2D": lambda op, _: _pool(op),
    "MAX_POOL_2D": lambda op, _: _pool(op),
    "ADD": lambda op, _: _add_or_mul(op),
    "MUL": lambda op, _: _add_or_mul(op),
    "RESHAPE": lambda op, _: _reshape(op),
    "SOFTMAX": lambda op, _: _softmax(op),
    "PAD": _pad,
    "CONCATENATION": lambda op, _: _concatenation(op),
    "QUANTIZE": lambda op, _: _conversion(op),
    "DEQUANTIZE": lambda op, _: _conversion(op),
    **dict.fromkeys((*contracts.comparisons.OPERATORS, "DIV", "SQUARED_DIFFERENCE"), _contract_binary),
    "SELECT_V2": _select_v2,
    "NEG": _neg,
    **dict.fromkeys(_ELEMENT_WISE_S8, lambda op, _: _element_wise_s8(op, _ELEMENT_WISE_S8[op.op_type])),
    "SQUARED_DIFFERENCE": _squared_difference,
    "L2_NORMALIZATION": lambda op, _: _l2_normalization(op),
    "LOG_SOFTMAX": lambda op, _: _log_softmax(op),
    "BATCH_MATMUL": lambda op, _: _batch_matmul(op),
    "TRANSPOSE_CONV": lambda op, _: _transpose_conv(op),
    **dict.fromkeys(("RESIZE_NEAREST_NEIGHBOR", "RESIZE_BILINEAR"), lambda op, _: _resize(op)),
    FENCE_OPERATOR: lambda op, _: _fence(op),
}
"""Operator type -> lowering; every other type is refused at admission (unless lower_model's `extra` has it)."""

_INT8 = "int8"
FORMS: dict[str, str] = {
    **dict.fromkeys(("CONV_2D", "DEPTHWISE_CONV_2D", "FULLY_CONNECTED", "AVERAGE_POOL_2D", "MAX_POOL_2D"), _INT8),
    **dict.fromkeys(("ADD", "MUL"), "int8 and int16 (16x8)"),
    **dict.fromkeys(("SOFTMAX", "PAD", "CONCATENATION"), _INT8),
    "RESHAPE": "any dtype",
    "QUANTIZE": "float32 to int8",
    "DEQUANTIZE": "int8 to float32",
    **dict.fromkeys(contracts.comparisons.OPERATORS, "int32"),
    "SELECT_V2": "int32 values",
    **dict.fromkeys(("DIV", "NEG"), "float32 and float16"),
    "SQUARED_DIFFERENCE": "int8, float32 and float16",
    **dict.fromkeys((*_ELEMENT_WISE_S8, "L2_NORMALIZATION", "LOG_SOFTMAX", "BATCH_MATMUL", "TRANSPOSE_CONV"), _INT8),
    **dict.fromkeys(("RESIZE_NEAREST_NEIGHBOR", "RESIZE_BILINEAR"), _INT8),
    FENCE_OPERATOR: "fences",
}
"""The forms each type of _LOWERINGS admits, as the refusal hint lists them (a test keeps the keys equal)."""


Lowering = Callable[[OperatorFacts, Model], KernelCall]

STATE_OPERATORS = ("CALL_ONCE", "VAR_HANDLE", "READ_VARIABLE", "ASSIGN_VARIABLE")
"""The operators of resource variables and their one-time initialization."""
CARRIED_STATE = ("UNIDIRECTIONAL_SEQUENCE_LSTM", "SVDF")
"""The operator types whose kernels carry their variable tensors across invokes (heliabuild.codegen.lowering_state;
heliabuild.codegen.layout places those tensors in the carried state region)."""


def _state_operators(model: Model) -> list[str]:
    """Each state operator type the model's subgraphs use with its count, e.g. ['CALL_ONCE x1', ...]."""
    counts: dict[str, int] = {}
    for graph in model.subgraphs:
        for op in graph.operators or []:
            name = operator_type(model.operator_codes[op.opcodeIndex])
            if name in STATE_OPERATORS:
                counts[name] = counts.get(name, 0) + 1
    return [f"{name} x{counts[name]}" for name in STATE_OPERATORS if name in counts]


def lower_model(
    model: Model,
    source: str = "model",
    *,
    extra: Mapping[str, Lowering] | None = None,
    extra_forms: Mapping[str, str] | None = None,
) -> list[KernelCall]:
    """One KernelCall per operator of subgraph 0, in execution order; ModelRefusedError grouping every refused
    operator (heliabuild.codegen.refusals), its hint listing the forms admitted. `extra` admits further
    operator types (a target's own: heliabuild.codegen.npu for an Ethos-U), `extra_forms` states their forms."""
    state = _state_operators(model)
    if state:
        raise CodegenError(
            f"{source}: the model holds state ({', '.join(state)}): the generated module keeps no resource "
            "variables between invokes, so the acquisition lifecycle's carry could not hold them; stateful models "
            "are not supported yet",
            hint='docs/firmware.md, "Admission"',
        )
    if len(model.subgraphs) != 1:
        raise CodegenError(f"{source}: {len(model.subgraphs)} subgraphs; the module generator runs one")
    facts = model_facts(model)
    if not facts:
        raise CodegenError(f"{source}: the model has no operator to generate code for")
    table = {**_LOWERINGS, **(extra or {})}
    calls: list[KernelCall] = []
    refused: list[ModuleRefusal] = []
    for op in facts:
        lowering = table.get(op.op_type)
        if lowering is None:
            refused.append(ModuleRefusal(op.index, op.id, op.op_type, f"no heliabuild kernel for {op.op_type}", True))
            continue
        variable = next((t for t in (*op.inputs, *op.outputs) if t is not None and t.is_variable), None)
        if variable is not None and op.op_type not in CARRIED_STATE:
            reason = (
                f"variable tensor {variable.name!r} (state): only the {' and '.join(CARRIED_STATE)} kernels carry "
                "variable tensors"
            )
            refused.append(ModuleRefusal(op.index, op.id, op.op_type, reason))
            continue
        try:
            calls.append(lowering(op, model))
        except (_Refusal, int8.Int8KernelError) as refusal:
            reason = refusal.reason if isinstance(refusal, _Refusal) else refusal.message
            refused.append(ModuleRefusal(op.index, op.id, op.op_type, reason))
    if refused:
        forms = {**FORMS, **(extra_forms or {})}
        raise ModelRefusedError(
            f"{source}: the module generator {summary(refused, len(facts))}", refused, hint=supported_hint(forms)
        )
    return calls
