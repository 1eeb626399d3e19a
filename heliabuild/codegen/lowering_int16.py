"""Lowering of the TFLite converter's int16 (16x8) forms beyond ADD and MUL: FULLY_CONNECTED, CONV_2D and
DEPTHWISE_CONV_2D (int16 activations with zero point 0, int8 symmetric weights, int64 bias) to
`c/ops_int16_conv.c`, and LOGISTIC, TANH and SOFTMAX (int16, output scale 2^-15) to `c/ops_int16_lut.c`, their
tables emitted beside the call, and the boundary QUANTIZE float32 -> int16 and DEQUANTIZE int16 -> float32 to
`c/ops_int16_convert.c`. The parameters are heliabuild.kernels.int16's, the derivation its bit-exactness
tests use against LiteRT.

`INT16_LOWERINGS` replaces the base table's entry of each of these types by one that takes the int16 form
here and hands every other form to the base lowering (QUANTIZE's int8 form to heliabuild.codegen.lowering_data's);
`INT16_FORMS` states the forms. Both are joined to the base table by heliabuild.codegen.module.kernel_tables.
"""

from __future__ import annotations

import numpy as np

from heliabuild.aot.facts import OperatorFacts, TensorFacts
from heliabuild.codegen.calls import Field, IntArray, KernelCall, Lowering, TensorRef
from heliabuild.codegen.lowering import _LOWERINGS
from heliabuild.codegen.lowering_conv import _filter_scales, _multiplier_fields, conv_geometry_fields
from heliabuild.codegen.lowering_data import DATA_FORMS, DATA_LOWERINGS
from heliabuild.codegen.lowering_shape import conversion_call
from heliabuild.codegen.operands import _activation, _constant, _dtype, _need, _quant
from heliabuild.kernels import int16
from heliabuild.model.io import Model

_INT16 = "int16"


def _bias_s16(op: OperatorFacts, channels: int) -> TensorRef | None:
    bias = op.input(2)
    if bias is None:
        return None
    _dtype(_constant(bias, "bias"), "int64", "bias")
    _need(bias.element_count == channels, f"bias {bias.name!r} has {bias.element_count} values for {channels} channels")
    return TensorRef(bias.index)


def _weighted_operands(op: OperatorFacts) -> tuple[TensorFacts, TensorFacts, TensorFacts]:
    data = _dtype(op.input(0), _INT16, "input")
    weights = _dtype(_constant(op.input(1), "weights"), "int8", "weights")
    output = _dtype(op.output, _INT16, "output")
    return data, weights, output


def _per_channel(multipliers: np.ndarray, shifts: np.ndarray) -> bool:
    return len(set(zip(multipliers.tolist(), shifts.tolist(), strict=True))) > 1


def _fully_connected_s16(op: OperatorFacts) -> KernelCall:
    data, weights, output = _weighted_operands(op)
    _need(len(weights.shape) == 2, "weights must be rank 2 [output_depth, depth]")
    scales = _filter_scales(weights, weights.shape[0], 0)
    params = int16.fully_connected_s16_params(
        data.element_count, weights.shape, _quant(data, "input"), scales, _quant(output, "output"), _activation(op)
    )
    _need(
        output.element_count == params.batches * params.output_depth,
        f"output {output.name!r} has {output.element_count} elements, expected {params.batches * params.output_depth}",
    )
    return KernelCall.of(
        op,
        "helia_fully_connected_s16",
        "helia_fully_connected_s16_args",
        fields=(
            ("input", TensorRef(data.index)),
            ("filter", TensorRef(weights.index)),
            ("bias", _bias_s16(op, params.output_depth)),
            *_multiplier_fields(params.multipliers, params.shifts, _per_channel(params.multipliers, params.shifts)),
            ("output", TensorRef(output.index)),
            ("batches", params.batches),
            ("depth", params.depth),
            ("output_depth", params.output_depth),
            ("act_min", params.act_min),
            ("act_max", params.act_max),
        ),
        reads=tuple(t.index for t in op.inputs if t is not None),
        writes=(output.index,),
    )


def _conv_s16(op: OperatorFacts, depthwise: bool) -> KernelCall:
    data, weights, output = _weighted_operands(op)
    _need(len(data.shape) == 4 and len(weights.shape) == 4, "input and weights must be rank 4 (NHWC)")
    channels = weights.shape[3] if depthwise else weights.shape[0]
    if not depthwise:
        _need(weights.shape[3] == data.shape[3], "grouped convolution (filter depth below input depth) has no kernel")
    params = int16.conv_s16_params(
        data.shape, weights.shape, _quant(data, "input"), _filter_scales(weights, channels, 3 if depthwise else 0),
        _quant(output, "output"), stride=op.stride or (1, 1), dilation=op.dilation or (1, 1),
        padding=op.padding or "VALID", activation=_activation(op), depthwise=depthwise,
    )  # fmt: skip
    _need(tuple(params.output_shape) == tuple(output.shape), f"output shape {list(output.shape)} does not match")
    if depthwise:
        _need(
            op.depth_multiplier in (None, 0, params.depth_multiplier)
            and channels == data.shape[3] * params.depth_multiplier,
            "depth multiplier does not match the weights",
        )
    fields: tuple[tuple[str, Field], ...] = (
        ("input", TensorRef(data.index)),
        ("filter", TensorRef(weights.index)),
        ("bias", _bias_s16(op, params.output_shape[3])),
        *_multiplier_fields(params.multipliers, params.shifts, _per_channel(params.multipliers, params.shifts)),
        ("output", TensorRef(output.index)),
        *conv_geometry_fields(params, weights),
        ("act_min", params.act_min),
        ("act_max", params.act_max),
        ("depth_multiplier", params.depth_multiplier),
    )
    return KernelCall.of(
        op,
        "helia_depthwise_conv2d_s16" if depthwise else "helia_conv2d_s16",
        "helia_conv_s16_args",
        fields=fields,
        reads=tuple(t.index for t in op.inputs if t is not None),
        writes=(output.index,),
    )


def _unary_operands(op: OperatorFacts) -> tuple[TensorFacts, TensorFacts]:
    data = _dtype(op.input(0), _INT16, "input")
    output = _dtype(op.output, _INT16, "output")
    _need(tuple(data.shape) == tuple(output.shape), f"{op.op_type} input and output shapes differ")
    return data, output


def _sigmoid_s16(op: OperatorFacts) -> KernelCall:
    data, output = _unary_operands(op)
    params = int16.sigmoid_s16_params(op.op_type, _quant(data, "input"), _quant(output, "output"))
    return KernelCall.of(
        op,
        f"helia_{op.op_type.lower()}_s16",
        "helia_sigmoid_s16_args",
        fields=(
            ("input", TensorRef(data.index)),
            ("output", TensorRef(output.index)),
            ("count", data.element_count),
            ("table", IntArray("uint16_t", tuple(int(v) for v in int16.sigmoid_table()))),
            ("input_multiplier", params.input_multiplier),
            ("input_left_shift", params.input_left_shift),
        ),
        reads=(data.index,),
        writes=(output.index,),
    )


def _softmax_s16(op: OperatorFacts) -> KernelCall:
    data, output = _unary_operands(op)
    params = int16.softmax_s16_params(_quant(data, "input"), _quant(output, "output"), float(op.option("beta", 1.0)))
    depth = data.shape[-1] if data.shape else 1
    exp_table, reciprocal_table = int16.softmax_tables()
    return KernelCall.of(
        op,
        "helia_softmax_s16",
        "helia_softmax_s16_args",
        fields=(
            ("input", TensorRef(data.index)),
            ("output", TensorRef(output.index)),
            ("rows", data.element_count // max(depth, 1)),
            ("depth", depth),
            ("input_multiplier", params.input_multiplier),
            ("input_shift", params.input_shift),
            ("exp_table", IntArray("int16_t", tuple(int(v) for v in exp_table))),
            ("reciprocal_table", IntArray("int16_t", tuple(int(v) for v in reciprocal_table))),
        ),
        reads=(data.index,),
        writes=(output.index,),
    )


def _conversion_s16(op: OperatorFacts) -> KernelCall:
    """QUANTIZE float32 -> int16 or DEQUANTIZE int16 -> float32, zero point 0 (LiteRT refuses any other for an
    int16 DEQUANTIZE; the 16x8 form has none)."""
    quantize = op.op_type == "QUANTIZE"
    data = _dtype(op.input(0), "float32" if quantize else _INT16, "input")
    output = _dtype(op.output, _INT16 if quantize else "float32", "output")
    quant = _quant(output, "output") if quantize else _quant(data, "input")
    _need(quant.zero_point == 0, f"int16 zero point {quant.zero_point} is not 0 (the 16x8 form)")
    kernel = "helia_quantize_f32_s16" if quantize else "helia_dequantize_s16_f32"
    return conversion_call(op, kernel, data, output, quant)


def _int16_or_base(op_type: str, lower_int16: Lowering, base: Lowering | None = None, side: str = "input") -> Lowering:
    """The int16 form (its first input, or with `side` 'output' its output, int16) to `lower_int16`, every other
    form to `base` (default: the base table's lowering of `op_type`)."""
    other = base or _LOWERINGS[op_type]

    def lower(op: OperatorFacts, model: Model) -> KernelCall:
        tensor = op.input(0) if side == "input" else op.output
        return (lower_int16 if tensor is not None and tensor.dtype == _INT16 else other)(op, model)

    return lower


INT16_LOWERINGS: dict[str, Lowering] = {
    "FULLY_CONNECTED": _int16_or_base("FULLY_CONNECTED", lambda op, _: _fully_connected_s16(op)),
    "CONV_2D": _int16_or_base("CONV_2D", lambda op, _: _conv_s16(op, depthwise=False)),
    "DEPTHWISE_CONV_2D": _int16_or_base("DEPTHWISE_CONV_2D", lambda op, _: _conv_s16(op, depthwise=True)),
    **{name: _int16_or_base(name, lambda op, _: _sigmoid_s16(op)) for name in ("LOGISTIC", "TANH")},
    "SOFTMAX": _int16_or_base("SOFTMAX", lambda op, _: _softmax_s16(op)),
    "QUANTIZE": _int16_or_base(
        "QUANTIZE", lambda op, _: _conversion_s16(op), base=DATA_LOWERINGS["QUANTIZE"], side="output"
    ),
    "DEQUANTIZE": _int16_or_base("DEQUANTIZE", lambda op, _: _conversion_s16(op)),
}
INT16_FORMS: dict[str, str] = {
    **{name: "int8 and int16 (16x8)" for name in INT16_LOWERINGS if name not in ("QUANTIZE", "DEQUANTIZE")},
    "QUANTIZE": f"{DATA_FORMS['QUANTIZE']}, float32 to int16",
    "DEQUANTIZE": "int8 or int16 to float32",
}
"""The forms of INT16_LOWERINGS' types, base forms included (a test keeps the keys equal)."""
