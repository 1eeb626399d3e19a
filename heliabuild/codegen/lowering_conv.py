"""Lowering of the convolutions and matrix products: CONV_2D, DEPTHWISE_CONV_2D, TRANSPOSE_CONV (`helia_conv_s8_args`),
FULLY_CONNECTED and BATCH_MATMUL; the multipliers and shifts from heliabuild.kernels.int8 and int8_spatial."""

from __future__ import annotations

import numpy as np

from heliabuild.aot.facts import OperatorFacts, TensorFacts
from heliabuild.codegen.calls import Field, InlineInts, IntArray, KernelCall, ScratchRef, TensorRef
from heliabuild.codegen.operands import _activation, _constant, _dtype, _need, _quant
from heliabuild.kernels import int8, int8_spatial
from heliabuild.model.io import Model


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


def conv_geometry_fields(params: int8.ConvParams, weights: TensorFacts) -> tuple[tuple[str, Field], ...]:
    """The shape, stride, dilation and padding fields a convolution's argument struct shares (int8 and 16x8):
    batches, input, filter and output extents, strides, dilations, the top and left padding."""
    n, h, w, c = params.input_shape
    _, oh, ow, oc = params.output_shape
    return (
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
    )


def _conv_fields(
    params: int8.ConvParams, data: TensorFacts, weights: TensorFacts, bias: TensorRef | None, output: TensorFacts
) -> tuple[tuple[str, Field], ...]:
    """helia_conv_s8_args of CONV_2D, DEPTHWISE_CONV_2D and TRANSPOSE_CONV."""
    per_channel = len(set(zip(params.multipliers.tolist(), params.shifts.tolist(), strict=True))) > 1
    return (
        ("input", TensorRef(data.index)),
        ("filter", TensorRef(weights.index)),
        ("bias", bias),
        *_multiplier_fields(params.multipliers, params.shifts, per_channel),
        ("output", TensorRef(output.index)),
        *conv_geometry_fields(params, weights),
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
