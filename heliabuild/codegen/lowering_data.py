"""Lowering of the data-movement and simple element-wise int8 operators (issue 22, part A) to their kernels.

- RELU, RELU6, RELU_N1_TO_1 and int8 -> int8 QUANTIZE: one `helia_requantize_s8` (c/ops_unary.c) call, the
  parameters from heliabuild.kernels.int8.requantize_params; a float32 QUANTIZE stays the base table's.
- SQUEEZE and EXPAND_DIMS: no kernel, the byte copy RESHAPE is (`helia_reshape`).
- SUB (int8, broadcasting through rank 6, fused activation): `helia_sub_s8` (c/ops_binary.c) with ADD's
  arguments and multipliers; MAXIMUM and MINIMUM (inputs and output quantized alike, raw codes compared):
  `helia_maximum_s8`, `helia_minimum_s8` on the same arguments.
- STRIDED_SLICE, SLICE, TRANSPOSE, GATHER, MIRROR_PAD, SPACE_TO_DEPTH, DEPTH_TO_SPACE (int8, constant
  parameters, input and output quantized alike): one `helia_index_copy` call with the index maps of
  heliabuild.kernels.data_movement; SPLIT, SPLIT_V, UNPACK: one `helia_split`; PACK: CONCATENATION's call with
  unit extents; PADV2: PAD's call with the constant value as the fill.
- LEAKY_RELU (`helia_leaky_relu_s8`, c/ops_unary.c), PRELU (constant alpha broadcasting against the input:
  `helia_prelu_s8` on ADD's arguments), ARG_MAX and ARG_MIN (int32 or int64 indices: `helia_arg_s8`).
- MEAN (int8, constant int32 axes forming one contiguous run, any keep_dims): one `helia_mean_s8` call
  (c/ops_data.c), the parameters from heliabuild.kernels.int8.mean_params.

`DATA_LOWERINGS` and `DATA_FORMS` are added to the base table by heliabuild.codegen.module.lower.
"""

from __future__ import annotations

import math
from dataclasses import fields, replace

import numpy as np

from heliabuild.aot.facts import OperatorFacts, TensorFacts
from heliabuild.codegen.calls import ByteValue, InlineInts, IntArray, KernelCall, Lowering, TensorRef, TensorTable
from heliabuild.codegen.lowering_math import _binary
from heliabuild.codegen.lowering_shape import _concatenation, _conversion, _pad, _reshape
from heliabuild.codegen.operands import _constant, _dtype, _need, _quant, _Refusal
from heliabuild.errors import DataMovementError
from heliabuild.kernels import activations, data_movement, int8
from heliabuild.model.io import Model


def _requantize(op: OperatorFacts, _model: Model) -> KernelCall:
    source = op.input(0)
    if op.op_type == "QUANTIZE" and source is not None and source.dtype != "int8":
        return _conversion(op)
    data = _dtype(source, "int8", "input")
    output = _dtype(op.output, "int8", "output")
    _need(data.shape == output.shape, f"{op.op_type} input and output shapes differ")
    activation = "NONE" if op.op_type == "QUANTIZE" else op.op_type
    params = int8.requantize_params(_quant(data, "input"), _quant(output, "output"), activation)
    return _elementwise(op, "helia_requantize_s8", data, output, params)


def _elementwise(op: OperatorFacts, run: str, data: TensorFacts, output: TensorFacts, params: object) -> KernelCall:
    """`run(&args)` on `<run>_args`: input, output, count, then the fields of `params` (a dataclass laid out
    as the struct's remaining members)."""
    values = tuple((f.name, getattr(params, f.name)) for f in fields(params))  # type: ignore[arg-type]
    return KernelCall.of(
        op,
        run,
        f"{run}_args",
        fields=(
            ("input", TensorRef(data.index)),
            ("output", TensorRef(output.index)),
            ("count", data.element_count),
            *values,
        ),
        reads=(data.index,),
        writes=(output.index,),
    )


def _reshape_like(op: OperatorFacts, _model: Model) -> KernelCall:
    data, output = op.input(0), op.output
    _need(data is not None and output is not None, f"{op.op_type} needs an input and an output")
    assert data is not None and output is not None
    _need(data.quantization == output.quantization, f"{op.op_type} input and output quantization differ")
    return _reshape(op)


def _mean(op: OperatorFacts, model: Model) -> KernelCall:
    data = _dtype(op.input(0), "int8", "input")
    output = _dtype(op.output, "int8", "output")
    axes_tensor = _dtype(_constant(op.input(1), "axes"), "int32", "axes")
    stored = model.buffer_data(axes_tensor.buffer)
    assert stored is not None
    axes = [int(a) for a in np.frombuffer(stored.tobytes(), "<i4")]
    params = int8.mean_params(
        data.shape, axes, bool(op.option("keep_dims", False)), _quant(data, "input"), _quant(output, "output")
    )
    _need(params.output_shape == tuple(output.shape), f"output shape {list(output.shape)} is not the mean's")
    return KernelCall.of(
        op,
        "helia_mean_s8",
        "helia_mean_s8_args",
        fields=(
            ("input", TensorRef(data.index)),
            ("output", TensorRef(output.index)),
            ("outer", params.outer),
            ("reduced", params.reduced),
            ("inner", params.inner),
            ("input_zero_point", params.input_zero_point),
            ("output_zero_point", params.output_zero_point),
            ("multiplier", params.multiplier),
            ("shift", params.shift),
        ),
        reads=(data.index,),
        writes=(output.index,),
    )


def _broadcast(op: OperatorFacts, _model: Model) -> KernelCall:
    """ADD's lowering (shapes, broadcasting, add_params) with the kernel of `op`'s type."""
    if op.op_type != "SUB":
        quants = [_quant(_dtype(t, "int8", what), what) for t, what in ((op.input(0), "input 0"),
                  (op.input(1), "input 1"), (op.output, "output"))]  # fmt: skip
        _need(
            quants[0] == quants[1] == quants[2], f"{op.op_type} inputs quantized unlike the output; no kernel rescales"
        )
    call = _binary(replace(op, op_type="ADD"))
    run = f"helia_{op.op_type.lower()}_s8"
    return replace(call, op_type=op.op_type, run=run, check=f"{run}_check")


def _ints(model: Model, tensor: TensorFacts | None, what: str) -> np.ndarray:
    """The values of an int32 or int64 constant operand."""
    constant = _constant(tensor, what)
    _need(constant.dtype in ("int32", "int64"), f"{what} {constant.name!r} is {constant.dtype}, expected int32")
    stored = model.buffer_data(constant.buffer)
    assert stored is not None
    values = np.frombuffer(stored.tobytes(), "<i4" if constant.dtype == "int32" else "<i8")
    return values.reshape(constant.shape).astype(np.int64)


def _alike(op: OperatorFacts, data: TensorFacts, outputs: tuple[TensorFacts, ...]) -> None:
    quant = _quant(data, "input")
    for output in outputs:
        _dtype(output, "int8", "output")
        _need(_quant(output, "output") == quant, f"{op.op_type} output quantized unlike its input; no kernel rescales")


def _index_copy_of(op: OperatorFacts, model: Model, data: TensorFacts) -> data_movement.IndexCopy:
    shape = data.shape
    if op.op_type == "STRIDED_SLICE":
        _need(
            not op.option("ellipsis_mask", 0) and not op.option("new_axis_mask", 0) and not op.option("offset", False),
            "STRIDED_SLICE with an ellipsis or new-axis mask or offset has no kernel",
        )
        begin, end, strides = (
            _ints(model, op.input(k), name) for k, name in ((1, "begin"), (2, "end"), (3, "strides"))
        )
        return data_movement.strided_slice(
            shape, begin.tolist(), end.tolist(), strides.tolist(), int(op.option("begin_mask", 0)),
            int(op.option("end_mask", 0)), int(op.option("shrink_axis_mask", 0)),
        )  # fmt: skip
    if op.op_type == "SLICE":
        begin, size = _ints(model, op.input(1), "begin"), _ints(model, op.input(2), "size")
        return data_movement.slice_(shape, begin.tolist(), size.tolist())
    if op.op_type == "TRANSPOSE":
        return data_movement.transpose(shape, _ints(model, op.input(1), "perm").tolist())
    if op.op_type == "GATHER":
        _need(int(op.option("batch_dims", 0)) == 0, "GATHER with batch_dims has no kernel")
        return data_movement.gather(shape, _ints(model, op.input(1), "indices"), int(op.option("axis", 0)))
    if op.op_type == "MIRROR_PAD":
        pads = _ints(model, op.input(1), "paddings").reshape(-1, 2)
        mode = data_movement.MIRROR_MODES[int(op.option("mode", 0))]
        return data_movement.mirror_pad(shape, [(int(b), int(a)) for b, a in pads], mode)
    block = int(op.option("block_size", 0))
    if op.op_type == "SPACE_TO_DEPTH":
        return data_movement.space_to_depth(shape, block)
    return data_movement.depth_to_space(shape, block)


def _index_copy(op: OperatorFacts, model: Model) -> KernelCall:
    data = _dtype(op.input(0), "int8", "input")
    output = _dtype(op.output, "int8", "output")
    _alike(op, data, (output,))
    try:
        copy = _index_copy_of(op, model, data)
    except DataMovementError as error:
        raise _Refusal(error.message) from None
    _need(
        copy.output_shape == tuple(output.shape), f"output shape {list(output.shape)} is not {list(copy.output_shape)}"
    )
    return KernelCall.of(
        op,
        "helia_index_copy",
        "helia_index_copy_args",
        fields=(
            ("input", TensorRef(data.index)),
            ("output", TensorRef(output.index)),
            ("element_size", 1),
            ("input_count", copy.input_count),
            ("rank", len(copy.dims)),
            ("output_dims", InlineInts(copy.dims)),
            ("input_strides", InlineInts(copy.strides)),
            ("maps", IntArray("int32_t", copy.flat_maps)),
        ),
        reads=(data.index,),
        writes=(output.index,),
    )


def _split(op: OperatorFacts, model: Model) -> KernelCall:
    position = 1 if op.op_type == "SPLIT" else 0
    data = _dtype(op.input(position), "int8", "input")
    outputs = tuple(op.outputs)
    _alike(op, data, outputs)
    rank = len(data.shape)
    if op.op_type == "UNPACK":
        axis = int(op.option("axis", 0))
    else:
        axis = int(_ints(model, op.input(0 if op.op_type == "SPLIT" else 2), "axis").reshape(-1)[0])
    axis = axis + rank if axis < 0 else axis
    _need(0 <= axis < rank, f"axis {axis} is outside rank {rank}")
    keep = op.op_type != "UNPACK"
    extents = tuple(int(t.shape[axis]) if keep else 1 for t in outputs)
    _need(sum(extents) == data.shape[axis], f"the outputs' extents {list(extents)} do not add up to {data.shape[axis]}")
    for tensor, extent in zip(outputs, extents, strict=True):
        expected = (*data.shape[:axis], *((extent,) if keep else ()), *data.shape[axis + 1 :])
        _need(
            tuple(tensor.shape) == expected,
            f"output {tensor.name!r} shape {list(tensor.shape)} is not {list(expected)}",
        )
    return KernelCall.of(
        op,
        "helia_split",
        "helia_split_args",
        fields=(
            ("input", TensorRef(data.index)),
            ("outputs", TensorTable(tuple(t.index for t in outputs))),
            ("axis_extents", IntArray("int32_t", extents)),
            ("element_size", 1),
            ("output_count", len(outputs)),
            ("outer", math.prod(data.shape[:axis])),
            ("inner", math.prod(data.shape[axis + 1 :])),
        ),
        reads=(data.index,),
        writes=tuple(t.index for t in outputs),
    )


def _pack(op: OperatorFacts, model: Model) -> KernelCall:
    """PACK of N inputs along a new axis: CONCATENATION's call, each input one unit of the axis."""
    output = _dtype(op.output, "int8", "output")
    rank = len(output.shape)
    axis = int(op.option("axis", 0))
    axis = axis + rank if axis < 0 else axis
    _need(0 <= axis < rank, f"axis {op.option('axis', 0)} is outside the output's rank {rank}")
    unit = (*output.shape[:axis], 1, *output.shape[axis + 1 :])
    inputs = tuple(replace(t, shape=unit) if t is not None else None for t in op.inputs)
    for tensor in op.inputs:
        _need(tensor is not None and tuple(tensor.shape) == (*unit[:axis], *unit[axis + 1 :]), "PACK inputs differ")
    call = _concatenation(replace(op, inputs=inputs, options=(("axis", axis),)))
    return replace(call, op_type=op.op_type)


def _padv2(op: OperatorFacts, model: Model) -> KernelCall:
    """PADV2: PAD's call with the constant operand's value as the fill (quantized as the output)."""
    fill = _dtype(_constant(op.input(2), "constant value"), "int8", "constant value")
    _need(fill.element_count == 1, "PADV2's constant value is not one element")
    output = _dtype(op.output, "int8", "output")
    _need(
        _quant(fill, "constant value") == _quant(output, "output"),
        "PADV2's constant value is quantized unlike the output",
    )
    stored = model.buffer_data(fill.buffer)
    assert stored is not None
    value = ByteValue("int8_t", int(np.frombuffer(stored.tobytes(), np.int8)[0]))
    call = _pad(op, model)
    return replace(call, fields=tuple((name, value if name == "pad_value" else f) for name, f in call.fields))


def _leaky_relu(op: OperatorFacts, _model: Model) -> KernelCall:
    data = _dtype(op.input(0), "int8", "input")
    output = _dtype(op.output, "int8", "output")
    _need(data.shape == output.shape, "LEAKY_RELU input and output shapes differ")
    params = activations.leaky_relu_params(
        _quant(data, "input"), _quant(output, "output"), float(op.option("alpha", 0.0))
    )
    return _elementwise(op, "helia_leaky_relu_s8", data, output, params)


def _prelu(op: OperatorFacts, _model: Model) -> KernelCall:
    """ADD's lowering (shapes, broadcasting) with PRELU's kernel and multipliers; the output has the input's
    shape and alpha broadcasts against it."""
    data = _dtype(op.input(0), "int8", "input")
    alpha = _dtype(_constant(op.input(1), "alpha"), "int8", "alpha")
    output = _dtype(op.output, "int8", "output")
    _need(tuple(output.shape) == tuple(data.shape), "PRELU's output shape is not its input's")
    params = activations.prelu_params(_quant(data, "input"), _quant(alpha, "alpha"), _quant(output, "output"))
    call = _binary(replace(op, op_type="MUL"))
    values = {
        "input1_zero_point": params.input1_zero_point,
        "input2_zero_point": params.input2_zero_point,
        "output_zero_point": params.output_zero_point,
        "input1_multiplier": params.input1_multiplier,
        "input1_shift": params.input1_shift,
        "output_multiplier": params.output_multiplier,
        "output_shift": params.output_shift,
        "act_min": params.act_min,
        "act_max": params.act_max,
    }
    fields = tuple((name, values.get(name, field)) for name, field in call.fields)
    return replace(call, op_type=op.op_type, run="helia_prelu_s8", check="helia_prelu_s8_check", fields=fields)


_INDEX_TYPES = {2: ("int32", 4), 4: ("int64", 8)}
"""ARG_MAX/ARG_MIN output_type (TFLite TensorType code) -> the output dtype and its bytes."""


def _arg(op: OperatorFacts, model: Model) -> KernelCall:
    data = _dtype(op.input(0), "int8", "input")
    output = op.output
    code = int(op.option("output_type", 2))
    _need(code in _INDEX_TYPES, f"{op.op_type} output type {code} is not int32 or int64")
    dtype, size = _INDEX_TYPES[code]
    _dtype(output, dtype, "output")
    rank = len(data.shape)
    axis = int(_ints(model, op.input(1), "axis").reshape(-1)[0])
    axis = axis + rank if axis < 0 else axis
    _need(0 <= axis < rank, f"axis {axis} is outside rank {rank}")
    expected = (*data.shape[:axis], *data.shape[axis + 1 :])
    _need(tuple(output.shape) == expected, f"output shape {list(output.shape)} is not {list(expected)}")
    return KernelCall.of(
        op,
        "helia_arg_s8",
        "helia_arg_s8_args",
        fields=(
            ("input", TensorRef(data.index)),
            ("output", TensorRef(output.index)),
            ("outer", math.prod(data.shape[:axis])),
            ("axis_extent", data.shape[axis]),
            ("inner", math.prod(data.shape[axis + 1 :])),
            ("kind", data_movement.ARG_KINDS.index("max" if op.op_type == "ARG_MAX" else "min")),
            ("index_bytes", size),
        ),
        reads=(data.index,),
        writes=(output.index,),
    )


INDEX_COPIES = ("STRIDED_SLICE", "SLICE", "TRANSPOSE", "GATHER", "MIRROR_PAD", "SPACE_TO_DEPTH", "DEPTH_TO_SPACE")
SPLITS = ("SPLIT", "SPLIT_V", "UNPACK")

DATA_LOWERINGS: dict[str, Lowering] = {
    **dict.fromkeys(INDEX_COPIES, _index_copy),
    **dict.fromkeys(SPLITS, _split),
    "PACK": _pack,
    "LEAKY_RELU": _leaky_relu,
    "PRELU": _prelu,
    **dict.fromkeys(("ARG_MAX", "ARG_MIN"), _arg),
    "PADV2": _padv2,
    **dict.fromkeys(("SUB", "MAXIMUM", "MINIMUM"), _broadcast),
    "MEAN": _mean,
    **dict.fromkeys(("RELU", "RELU6", "RELU_N1_TO_1", "QUANTIZE"), _requantize),
    **dict.fromkeys(("SQUEEZE", "EXPAND_DIMS"), _reshape_like),
}
DATA_FORMS: dict[str, str] = {
    **dict.fromkeys((*INDEX_COPIES, *SPLITS, "PACK", "PADV2", "LEAKY_RELU", "PRELU"), "int8"),
    **dict.fromkeys(("ARG_MAX", "ARG_MIN"), "int8 to int32 or int64"),
    **dict.fromkeys(("SUB", "MAXIMUM", "MINIMUM"), "int8"),
    "MEAN": "int8 over one run of axes",
    **dict.fromkeys(("RELU", "RELU6", "RELU_N1_TO_1"), "int8"),
    "QUANTIZE": "float32 or int8 to int8",
    **dict.fromkeys(("SQUEEZE", "EXPAND_DIMS"), "any dtype"),
}
"""The forms of DATA_LOWERINGS (a test keeps the keys equal)."""
