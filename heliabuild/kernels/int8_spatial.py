"""heliabuild's int8 BATCH_MATMUL, TRANSPOSE_CONV and RESIZE kernels: parameters (as LiteRT derives them) and bindings.

The C kernels (`c/ops_matmul.c`, `c/ops_resize.c`) take integers only. This module derives them the way
LiteRT's reference kernels do (docs/kernels.md, "Matrix, transpose-convolution and resize kernels"):

- `batch_matmul_params`: the output multiplier of float32(scale_lhs * scale_rhs) / scale_out (the product
  rounded to float32, as TFLite's GetQuantizedConvolutionMultipler does), the batch axes broadcast through
  rank 5 (three batch axes);
- `transpose_conv_params`: per-channel multipliers (as CONV_2D's) and the padding of the convolution whose
  gradient this is (TFLite computes it from the output extents);
- `nearest_neighbor_map`: the input row or column of every output one, in float32 as LiteRT computes it.

`Int8SpatialKernels(load_host_library(build_dir))` runs the host build on numpy arrays (an
`heliabuild.kernels.int8.Int8Kernels`: refusals raise `Int8KernelError`, `recorder` sees each call).
"""

from __future__ import annotations

import ctypes
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from heliabuild.kernels.fixed_point import quantize_multiplier
from heliabuild.kernels.int8 import (
    _I8,
    _I32,
    ConvArgs,
    ConvParams,
    Int8KernelError,
    Int8Kernels,
    Quant,
    _c_array,
    _pointer,
    activation_range,
    output_size,
    padding_before,
)
from heliabuild.kernels.int8_params import _multipliers, _per_channel

BATCH_AXES = 3
MAX_MATMUL_RANK = 5


@dataclass(frozen=True)
class BatchMatmulParams:
    """helia_batch_matmul_s8_args without the pointers."""

    lhs_batch: tuple[int, int, int]
    rhs_batch: tuple[int, int, int]
    output_batch: tuple[int, int, int]
    rows: int
    cols: int
    depth: int
    adj_lhs: int
    adj_rhs: int
    lhs_zero_point: int
    rhs_zero_point: int
    output_zero_point: int
    multiplier: int
    shift: int
    act_min: int
    act_max: int
    output_shape: tuple[int, ...]


def _batch(shape: Sequence[int]) -> tuple[int, int, int]:
    extents = tuple(int(d) for d in shape[:-2])
    return (1,) * (BATCH_AXES - len(extents)) + extents  # type: ignore[return-value]


def batch_matmul_params(
    lhs_shape: Sequence[int],
    rhs_shape: Sequence[int],
    lhs: Quant,
    rhs: Quant,
    output: Quant,
    *,
    adj_lhs: bool = False,
    adj_rhs: bool = False,
) -> BatchMatmulParams:
    """TFLite's int8 BATCH_MATMUL: ranks 2..5, batch axes broadcast, no fused activation."""
    for name, shape in (("lhs", lhs_shape), ("rhs", rhs_shape)):
        if not 2 <= len(shape) <= MAX_MATMUL_RANK:
            raise Int8KernelError(f"int8 batch matmul: {name} rank {len(shape)} is outside 2..{MAX_MATMUL_RANK}")
    rows, depth = (lhs_shape[-1], lhs_shape[-2]) if adj_lhs else (lhs_shape[-2], lhs_shape[-1])
    rhs_depth, cols = (rhs_shape[-1], rhs_shape[-2]) if adj_rhs else (rhs_shape[-2], rhs_shape[-1])
    if depth != rhs_depth:
        raise Int8KernelError(f"int8 batch matmul: depths {depth} (lhs) and {rhs_depth} (rhs) differ")
    lhs_batch, rhs_batch = _batch(lhs_shape), _batch(rhs_shape)
    try:
        output_batch = tuple(int(d) for d in np.broadcast_shapes(lhs_batch, rhs_batch))
    except ValueError:
        raise Int8KernelError(f"int8 batch matmul: batch axes {lhs_batch} and {rhs_batch} do not broadcast") from None
    # TFLite's GetQuantizedConvolutionMultipler: the scales' product in float32, the quotient in double.
    multiplier, shift = quantize_multiplier(float(np.float32(lhs.scale) * np.float32(rhs.scale)) / output.scale)
    return BatchMatmulParams(
        lhs_batch, rhs_batch, output_batch, int(rows), int(cols), int(depth), int(adj_lhs), int(adj_rhs),  # type: ignore[arg-type]
        lhs.zero_point, rhs.zero_point, output.zero_point, multiplier, shift, -128, 127,
        (*np.broadcast_shapes(tuple(lhs_shape[:-2]), tuple(rhs_shape[:-2])), int(rows), int(cols)),
    )  # fmt: skip


def transpose_conv_params(
    input_shape: Sequence[int],
    filter_shape: Sequence[int],
    output_shape: Sequence[int],
    input_quant: Quant,
    filter_scales: Sequence[float] | np.ndarray,
    output_quant: Quant,
    *,
    stride: tuple[int, int],
    padding: str,
    activation: str = "NONE",
) -> ConvParams:
    """TFLite's int8 TRANSPOSE_CONV (filter [out_c, kh, kw, in_c]); the padding is the one a convolution of the
    output would have (ComputePaddingHeightWidth on the output extents), which must give the input extents."""
    n, h, w, c = (int(d) for d in input_shape)
    out_c, kh, kw, in_c = (int(d) for d in filter_shape)
    _, oh, ow, _ = (int(d) for d in output_shape)
    if in_c != c or int(output_shape[3]) != out_c or int(output_shape[0]) != n:
        raise Int8KernelError(
            f"int8 transpose conv: input {list(input_shape)}, filter {list(filter_shape)} and output "
            f"{list(output_shape)} do not agree"
        )
    conv_h = output_size(oh, kh, stride[0], 1, padding)
    conv_w = output_size(ow, kw, stride[1], 1, padding)
    if (conv_h, conv_w) != (h, w):
        raise Int8KernelError(
            f"int8 transpose conv: a {padding} convolution of the {oh}x{ow} output gives {conv_h}x{conv_w}, "
            f"not the {h}x{w} input"
        )
    multipliers, shifts = _multipliers(input_quant.scale, _per_channel(filter_scales), output_quant.scale)
    low, high = activation_range(activation, output_quant)
    return ConvParams(
        (n, h, w, c), (out_c, kh, kw, in_c), (n, oh, ow, out_c), (int(stride[0]), int(stride[1])), (1, 1),
        (padding_before(oh, kh, stride[0], 1, h), padding_before(ow, kw, stride[1], 1, w)), False, 1,
        multipliers, shifts, input_quant.zero_point, output_quant.zero_point, low, high,
    )  # fmt: skip


def nearest_neighbor_map(
    input_size: int, output_size: int, *, align_corners: bool, half_pixel_centers: bool
) -> tuple[int, ...]:
    """The input index of every output index, as LiteRT computes it: scale = in / out (or (in - 1) / (out - 1)
    with align_corners) in float32; index = (value + 0.5 if half_pixel_centers) * scale in float32, rounded
    half away from zero with align_corners and floored otherwise, at most in - 1 (and at least 0)."""
    f32 = np.float32
    if align_corners and output_size > 1:
        scale = f32(input_size - 1) / f32(output_size - 1)
    else:
        scale = f32(input_size) / f32(output_size)
    offset = f32(0.5) if half_pixel_centers else f32(0.0)
    indices = []
    for value in range(output_size):
        position = float((f32(value) + offset) * scale)
        index = math.floor(position + 0.5) if align_corners else math.floor(position)
        index = min(index, input_size - 1)
        indices.append(max(index, 0) if half_pixel_centers else index)
    return tuple(indices)


# ---- ctypes -------------------------------------------------------------------------------------

_BATCH = ctypes.c_int32 * BATCH_AXES


class BatchMatmulArgs(ctypes.Structure):
    _fields_ = [
        ("lhs", _I8), ("rhs", _I8), ("output", _I8),
        ("lhs_batch", _BATCH), ("rhs_batch", _BATCH), ("output_batch", _BATCH),
        *[(name, ctypes.c_int32) for name in ("rows", "cols", "depth", "adj_lhs", "adj_rhs", "lhs_zero_point",
                                              "rhs_zero_point", "output_zero_point", "multiplier", "shift",
                                              "act_min", "act_max")],
    ]  # fmt: skip


class ResizeArgs(ctypes.Structure):
    _fields_ = [
        ("input", _I8), ("output", _I8), ("row_map", _I32), ("column_map", _I32),
        *[(name, ctypes.c_int32) for name in ("batches", "input_h", "input_w", "channels", "output_h", "output_w",
                                              "align_corners", "half_pixel_centers")],
    ]  # fmt: skip


class Int8SpatialKernels(Int8Kernels):
    """Int8Kernels plus BATCH_MATMUL, TRANSPOSE_CONV and the RESIZE kernels; each returns a new output array."""

    _SIGNATURES: ClassVar[dict[str, tuple[list[object], object]]] = {
        **Int8Kernels._SIGNATURES,
        "helia_batch_matmul_s8": ([ctypes.POINTER(BatchMatmulArgs)], ctypes.c_int),
        "helia_transpose_conv_s8": ([ctypes.POINTER(ConvArgs)], ctypes.c_int),
        "helia_resize_nearest_s8": ([ctypes.POINTER(ResizeArgs)], ctypes.c_int),
        "helia_resize_bilinear_s8": ([ctypes.POINTER(ResizeArgs)], ctypes.c_int),
    }

    def batch_matmul(self, params: BatchMatmulParams, lhs: np.ndarray, rhs: np.ndarray) -> np.ndarray:
        a, b = _c_array(lhs, "int8"), _c_array(rhs, "int8")
        out = np.zeros(params.output_shape, np.int8)
        args = BatchMatmulArgs(
            _pointer(a, _I8), _pointer(b, _I8), _pointer(out, _I8), _BATCH(*params.lhs_batch),
            _BATCH(*params.rhs_batch), _BATCH(*params.output_batch), params.rows, params.cols, params.depth,
            params.adj_lhs, params.adj_rhs, params.lhs_zero_point, params.rhs_zero_point, params.output_zero_point,
            params.multiplier, params.shift, params.act_min, params.act_max,
        )  # fmt: skip
        self._call("helia_batch_matmul_s8", args, arrays=(a, b, out))
        return out

    def transpose_conv(
        self, params: ConvParams, input: np.ndarray, filter: np.ndarray, bias: np.ndarray | None
    ) -> np.ndarray:
        """The input [n, h, w, in_c], the filter [out_c, kh, kw, in_c]; params from transpose_conv_params."""
        return self.conv(params, input, filter, bias, kernel="helia_transpose_conv_s8")

    def resize(
        self,
        kind: str,
        input: np.ndarray,
        output_hw: tuple[int, int],
        *,
        align_corners: bool = False,
        half_pixel_centers: bool = False,
    ) -> np.ndarray:
        """`kind` 'nearest' or 'bilinear'; NHWC."""
        x = _c_array(input, "int8")
        n, h, w, c = x.shape
        oh, ow = output_hw
        out = np.zeros((n, oh, ow, c), np.int8)
        rows = columns = None
        if kind == "nearest":
            rows = _c_array(
                nearest_neighbor_map(h, oh, align_corners=align_corners, half_pixel_centers=half_pixel_centers), "int32"
            )
            columns = _c_array(
                nearest_neighbor_map(w, ow, align_corners=align_corners, half_pixel_centers=half_pixel_centers), "int32"
            )
        args = ResizeArgs(
            _pointer(x, _I8), _pointer(out, _I8), _pointer(rows, _I32), _pointer(columns, _I32), n, h, w, c, oh, ow,
            int(align_corners), int(half_pixel_centers),
        )  # fmt: skip
        self._call(f"helia_resize_{kind}_s8", args, arrays=(x, rows, columns, out))
        return out
