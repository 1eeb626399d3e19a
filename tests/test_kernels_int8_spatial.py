"""int8 BATCH_MATMUL, TRANSPOSE_CONV, RESIZE_NEAREST_NEIGHBOR and RESIZE_BILINEAR C kernels, byte for byte against
LiteRT's reference kernels (BUILTIN_REF) on single-operator models, and their refusals."""

from __future__ import annotations

import ctypes
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from helpers.int8_math_models import batch_matmul_model, resize_model, transpose_conv_model
from helpers.int8_models import run_reference
from hypothesis import given, settings
from hypothesis import strategies as st
from test_kernels_int8_elementwise import quants

from heliabuild.kernels.int8 import _I8, _I32, Int8KernelError, Quant
from heliabuild.kernels.int8_spatial import (
    BatchMatmulArgs,
    Int8SpatialKernels,
    ResizeArgs,
    batch_matmul_params,
    nearest_neighbor_map,
    transpose_conv_params,
)
from heliabuild.kernels.native import Status, load_host_library

SEED = st.integers(0, 2**32 - 1)


@pytest.fixture(scope="module")
def kernels(host_kernel_library: Path) -> Int8SpatialKernels:
    return Int8SpatialKernels(load_host_library(host_kernel_library))


@st.composite
def matmul_shapes(draw: st.DrawFn) -> tuple[tuple[int, ...], tuple[int, ...], bool, bool]:
    """lhs and rhs shapes of rank 2..5 whose batch axes broadcast (some extents 1, some leading axes dropped)."""
    batch = tuple(draw(st.lists(st.integers(1, 3), max_size=3)))
    rows, depth, cols = (draw(st.integers(1, 8)) for _ in range(3))
    adj_x, adj_y = draw(st.booleans()), draw(st.booleans())

    def operand() -> tuple[int, ...]:
        extents = tuple(1 if draw(st.booleans()) else d for d in batch)
        return extents[draw(st.integers(0, len(extents))) :]

    lhs = (*operand(), *((depth, rows) if adj_x else (rows, depth)))
    rhs = (*operand(), *((cols, depth) if adj_y else (depth, cols)))
    return lhs, rhs, adj_x, adj_y


@settings(max_examples=200)
@given(
    shapes=matmul_shapes(),
    lhs_quant=quants(),
    rhs_quant=quants(),
    output_quant=quants(1e-2, 4.0),
    constant_rhs=st.booleans(),
    seed=SEED,
)
def test_batch_matmul_is_bit_exact_with_broadcast_batches_and_adjoints(
    kernels: Int8SpatialKernels,
    shapes: tuple[tuple[int, ...], tuple[int, ...], bool, bool],
    lhs_quant: Quant,
    rhs_quant: Quant,
    output_quant: Quant,
    constant_rhs: bool,
    seed: int,
) -> None:
    lhs_shape, rhs_shape, adj_x, adj_y = shapes
    rng = np.random.default_rng(seed)
    a = rng.integers(-128, 128, lhs_shape, dtype=np.int8)
    b = rng.integers(-128, 128, rhs_shape, dtype=np.int8)
    params = batch_matmul_params(lhs_shape, rhs_shape, lhs_quant, rhs_quant, output_quant, adj_lhs=adj_x, adj_rhs=adj_y)
    model = batch_matmul_model(
        lhs_shape, rhs_shape, params.output_shape, lhs_quant, rhs_quant, output_quant, adj_x=adj_x, adj_y=adj_y,
        rhs=b if constant_rhs else None,
    )  # fmt: skip
    expected = run_reference(model, [a] if constant_rhs else [a, b])
    assert kernels.batch_matmul(params, a, b).tobytes() == expected.tobytes()


@settings(max_examples=200)
@given(
    kernel=st.tuples(st.integers(1, 4), st.integers(1, 4)),
    stride=st.tuples(st.integers(1, 3), st.integers(1, 3)),
    padding=st.sampled_from(["SAME", "VALID"]),
    extents=st.tuples(st.integers(1, 3), st.integers(1, 5), st.integers(1, 5), st.integers(1, 5), st.integers(1, 5)),
    per_channel=st.booleans(),
    with_bias=st.booleans(),
    activation=st.sampled_from(["NONE", "RELU", "RELU6", "RELU_N1_TO_1"]),
    input_quant=quants(),
    output_quant=quants(1e-3, 2.0),
    seed=SEED,
)
def test_transpose_conv_is_bit_exact(
    kernels: Int8SpatialKernels,
    kernel: tuple[int, int],
    stride: tuple[int, int],
    padding: str,
    extents: tuple[int, int, int, int, int],
    per_channel: bool,
    with_bias: bool,
    activation: str,
    input_quant: Quant,
    output_quant: Quant,
    seed: int,
) -> None:
    (kh, kw), (n, h, w, c, oc) = kernel, extents
    rng = np.random.default_rng(seed)
    output_hw = [
        size * s if padding == "SAME" else (size - 1) * s + k for size, s, k in zip((h, w), stride, kernel, strict=True)
    ]
    output_shape = (n, *output_hw, oc)
    weights = rng.integers(-127, 128, (oc, kh, kw, c), dtype=np.int8)
    scales = (0.05 * rng.uniform(0.25, 1.0, size=oc if per_channel else 1)).astype(np.float32)
    bias = rng.integers(-(2**16), 2**16, oc, dtype=np.int32) if with_bias else None
    x = rng.integers(-128, 128, (n, h, w, c), dtype=np.int8)
    params = transpose_conv_params(
        x.shape, weights.shape, output_shape, input_quant, scales, output_quant, stride=stride, padding=padding,
        activation=activation,
    )  # fmt: skip
    model = transpose_conv_model(
        x.shape, weights, scales, bias, input_quant, output_quant, output_shape, stride=stride, padding=padding,
        activation=activation,
    )  # fmt: skip
    expected = run_reference(model, [x])
    assert kernels.transpose_conv(params, x, weights, bias).tobytes() == expected.tobytes()


@pytest.mark.parametrize("kind", ["nearest", "bilinear"])
@settings(max_examples=150)
@given(
    input_shape=st.tuples(st.integers(1, 2), st.integers(1, 7), st.integers(1, 7), st.integers(1, 4)),
    output_hw=st.tuples(st.integers(1, 15), st.integers(1, 15)),
    corners=st.sampled_from([(False, False), (True, False), (False, True)]),
    quant=quants(),
    seed=SEED,
)
def test_resize_is_bit_exact_under_every_corner_convention(
    kernels: Int8SpatialKernels,
    kind: str,
    input_shape: tuple[int, int, int, int],
    output_hw: tuple[int, int],
    corners: tuple[bool, bool],
    quant: Quant,
    seed: int,
) -> None:
    align_corners, half_pixel_centers = corners
    x = np.random.default_rng(seed).integers(-128, 128, input_shape, dtype=np.int8)
    model = resize_model(
        kind, input_shape, output_hw, quant, align_corners=align_corners, half_pixel_centers=half_pixel_centers
    )
    expected = run_reference(model, [x])
    found = kernels.resize(kind, x, output_hw, align_corners=align_corners, half_pixel_centers=half_pixel_centers)
    assert found.tobytes() == expected.tobytes()


def test_nearest_neighbor_maps_stay_inside_the_input() -> None:
    for size in range(1, 9):
        for out in range(1, 20):
            for align, half in [(False, False), (True, False), (False, True)]:
                indices = nearest_neighbor_map(size, out, align_corners=align, half_pixel_centers=half)
                assert len(indices) == out and all(0 <= i < size for i in indices)


def test_parameters_that_do_not_agree_are_refused_by_name() -> None:
    q = Quant(0.1, 0)
    with pytest.raises(Int8KernelError, match="depths 4 \\(lhs\\) and 5 \\(rhs\\) differ"):
        batch_matmul_params((3, 4), (5, 2), q, q, q)
    with pytest.raises(Int8KernelError, match="do not broadcast"):
        batch_matmul_params((2, 3, 4), (3, 4, 2), q, q, q)
    with pytest.raises(Int8KernelError, match=r"rank 6 is outside 2\.\.5"):
        batch_matmul_params((1, 1, 1, 1, 3, 4), (4, 2), q, q, q)
    with pytest.raises(Int8KernelError, match="SAME convolution of the 8x8 output gives 4x4, not the 3x3 input"):
        transpose_conv_params((1, 3, 3, 2), (4, 3, 3, 2), (1, 8, 8, 4), q, [0.1], q, stride=(2, 2), padding="SAME")


def test_refusals_name_the_status_and_write_nothing(kernels: Int8SpatialKernels) -> None:
    a = np.zeros(64, np.int8)
    out = np.full(64, 9, np.int8)
    rows = np.array([0, 1, 7], np.int32)
    p = batch_matmul_params((4, 4), (4, 4), Quant(0.1, 0), Quant(0.1, 0), Quant(0.2, 0))

    def matmul(**change: object) -> BatchMatmulArgs:
        values = {
            "lhs": ctypes.cast(a.ctypes.data, _I8), "rhs": ctypes.cast(a.ctypes.data, _I8),
            "output": ctypes.cast(out.ctypes.data, _I8), "lhs_batch": (1, 1, 1), "rhs_batch": (1, 1, 1),
            "output_batch": (1, 1, 1), "rows": 4, "cols": 4, "depth": 4, "adj_lhs": 0, "adj_rhs": 0,
            "lhs_zero_point": 0, "rhs_zero_point": 0, "output_zero_point": 0, "multiplier": p.multiplier,
            "shift": p.shift, "act_min": -128, "act_max": 127,
        }  # fmt: skip
        values.update(change)
        args = BatchMatmulArgs()
        for name, value in values.items():
            if isinstance(value, tuple):
                getattr(args, name)[:] = value
            else:
                setattr(args, name, value)
        return args

    def resize(**change: object) -> ResizeArgs:
        values = {
            "input": ctypes.cast(a.ctypes.data, _I8), "output": ctypes.cast(out.ctypes.data, _I8),
            "row_map": ctypes.cast(rows.ctypes.data, _I32), "column_map": ctypes.cast(rows.ctypes.data, _I32),
            "batches": 1, "input_h": 2, "input_w": 8, "channels": 2, "output_h": 3, "output_w": 3,
            "align_corners": 0, "half_pixel_centers": 0,
        }  # fmt: skip
        values.update(change)
        return ResizeArgs(**values)

    cases = [
        ("helia_batch_matmul_s8", matmul(rhs=ctypes.cast(None, _I8)), Status.NULL_POINTER),
        ("helia_batch_matmul_s8", matmul(rows=0), Status.BAD_SHAPE),
        ("helia_batch_matmul_s8", matmul(lhs_batch=(2, 1, 1), rhs_batch=(3, 1, 1), output_batch=(3, 1, 1)),
         Status.SHAPE_MISMATCH),
        ("helia_batch_matmul_s8", matmul(depth=40000, rows=1, cols=1), Status.SIZE_OVERFLOW),
        ("helia_batch_matmul_s8", matmul(adj_lhs=2), Status.BAD_PARAMETER),
        ("helia_batch_matmul_s8", matmul(output=ctypes.cast(a.ctypes.data + 8, _I8)), Status.PARTIAL_OVERLAP),
        ("helia_resize_nearest_s8", resize(row_map=ctypes.cast(None, _I32)), Status.NULL_POINTER),
        ("helia_resize_nearest_s8", resize(), Status.BAD_PARAMETER),  # row 7 of a 2-row input
        ("helia_resize_bilinear_s8", resize(half_pixel_centers=2), Status.BAD_PARAMETER),
        ("helia_resize_bilinear_s8", resize(output_w=2**21), Status.SIZE_OVERFLOW),
        ("helia_resize_bilinear_s8", resize(output=ctypes.cast(a.ctypes.data, _I8)), Status.PARTIAL_OVERLAP),
    ]  # fmt: skip
    for name, args, status in cases:
        before = out.copy()
        assert Status(getattr(kernels.library, name)(ctypes.byref(args))) == status, (name, status)
        assert Status(getattr(kernels.library, f"{name}_check")(ctypes.byref(args))) == status, (name, status)
        assert out.tobytes() == before.tobytes(), name


def test_transpose_conv_refuses_what_it_cannot_accumulate(kernels: Int8SpatialKernels) -> None:
    q = Quant(0.1, 0)
    params = transpose_conv_params((1, 2, 2, 3), (2, 2, 2, 3), (1, 4, 4, 2), q, [0.1], q, stride=(2, 2), padding="SAME")
    x, w = np.zeros((1, 2, 2, 3), np.int8), np.ones((2, 2, 2, 3), np.int8)
    assert kernels.transpose_conv(params, x, w, None).shape == (1, 4, 4, 2)

    for change, status in [
        ({"dilation": (2, 1)}, Status.BAD_PARAMETER),
        ({"pad": (-1, 0)}, Status.BAD_PARAMETER),
        ({"input_zero_point": 200}, Status.BAD_PARAMETER),
        ({"shifts": np.array([31], np.int32)}, Status.BAD_PARAMETER),
    ]:
        with pytest.raises(Int8KernelError) as refused:
            kernels.transpose_conv(replace(params, **change), x, w, None)
        assert refused.value.status == status


def test_batch_matmul_rounds_the_scale_product_to_float32_as_litert_does(kernels: Int8SpatialKernels) -> None:
    """With these scales the product in double gives multiplier 1557427823 and 94 for an accumulator of 4169;
    rounded to float32 first (TFLite's GetQuantizedConvolutionMultipler) it is 1557427880 and 95, LiteRT's."""
    lhs_q, rhs_q, out_q = Quant(0.08468860387802124, 0), Quant(0.4939323961734772, 0), Quant(1.8457139730453491, -54)
    a, b = np.array([[127, 105]], np.int8), np.array([[32], [1]], np.int8)  # 127 * 32 + 105 = 4169
    params = batch_matmul_params(a.shape, b.shape, lhs_q, rhs_q, out_q)
    assert (params.multiplier, params.shift) == (1557427880, -5)
    expected = run_reference(batch_matmul_model(a.shape, b.shape, (1, 1), lhs_q, rhs_q, out_q), [a, b])
    assert expected.tolist() == [[41]] == kernels.batch_matmul(params, a, b).tolist()
