"""Lowering of the kernels that move bytes: RESHAPE, PAD, CONCATENATION, the float QUANTIZE and DEQUANTIZE
conversions and the ETHOS_U_STREAM_SPLIT fence copy."""

from __future__ import annotations

import numpy as np

from heliabuild.aot.facts import OperatorFacts, TensorFacts
from heliabuild.codegen.calls import ByteValue, InlineInts, IntArray, KernelCall, TensorRef, TensorTable
from heliabuild.codegen.operands import MAX_RANK, _activation, _constant, _dtype, _need, _quant
from heliabuild.fence.contract import ELEMENT_BYTES, TYPE_NAMES
from heliabuild.kernels.int8 import Quant
from heliabuild.model.io import Model


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
    return conversion_call(op, kernel, data, output, _quant(output if quantized == "output" else data, quantized))


def conversion_call(op: OperatorFacts, kernel: str, data: TensorFacts, output: TensorFacts, quant: Quant) -> KernelCall:
    """The call of a QUANTIZE or DEQUANTIZE `kernel` (int8 or int16) over the whole tensor `data` into `output`,
    of the same shape, with the quantized side's `quant`."""
    _need(tuple(data.shape) == tuple(output.shape), f"{op.op_type} input and output shapes differ")
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
