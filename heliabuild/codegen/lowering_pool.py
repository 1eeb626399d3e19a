"""Lowering of the windowed spatial kernels: AVERAGE_POOL_2D, MAX_POOL_2D, RESIZE_NEAREST_NEIGHBOR and
RESIZE_BILINEAR (int8, input and output quantized alike)."""

from __future__ import annotations

from heliabuild.aot.facts import OperatorFacts
from heliabuild.codegen.calls import Field, IntArray, KernelCall, TensorRef
from heliabuild.codegen.operands import _activation, _dtype, _need, _quant
from heliabuild.kernels import int8, int8_spatial


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
