"""The data-movement operators (STRIDED_SLICE, SLICE, TRANSPOSE, GATHER, MIRROR_PAD, SPACE_TO_DEPTH,
DEPTH_TO_SPACE as index copies; SPLIT, SPLIT_V and UNPACK as splits; PACK as a concatenation): every int8
output byte against LiteRT's reference kernels over shapes, strides, masks, indices, paddings and blocks, and
the kernels' refusals, which write nothing."""

from __future__ import annotations

import ctypes
from pathlib import Path

import numpy as np
import pytest
from ai_edge_litert import schema_py_generated as schema
from helpers.data_models import OP, data_model, options_of
from helpers.int8_models import run_all
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from heliabuild.kernels import data_movement as dm
from heliabuild.kernels.int8 import Int8Kernels, Quant
from heliabuild.kernels.native import Status, load_host_library

QUANT = Quant(0.05, -3)
SEED = st.integers(0, 2**32 - 1)
SHAPES = st.lists(st.integers(1, 5), min_size=1, max_size=4).map(tuple)


@pytest.fixture(scope="module")
def library(host_kernel_library: Path) -> ctypes.CDLL:
    return load_host_library(host_kernel_library)


@pytest.fixture(scope="module")
def kernels(library: ctypes.CDLL) -> dm.DataKernels:
    return dm.DataKernels(library)


def _codes(shape: tuple[int, ...], seed: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(-128, 128, size=shape, dtype=np.int8)


def _same(found: np.ndarray, expected: np.ndarray) -> None:
    assert found.shape == expected.shape and found.tobytes() == expected.tobytes()


@settings(max_examples=200, deadline=None)
@given(shape=SHAPES, data=st.data(), seed=SEED)
def test_transpose_is_bit_exact(
    kernels: dm.DataKernels, shape: tuple[int, ...], data: st.DataObject, seed: int
) -> None:
    perm = data.draw(st.permutations(range(len(shape))))
    copy = dm.transpose(shape, perm)
    x = _codes(shape, seed)
    model = data_model(OP.TRANSPOSE, [shape], [copy.output_shape], QUANT, constants=[(1, np.array(perm, np.int32))],
                       options=schema.TransposeOptionsT(), version=2)  # fmt: skip
    _same(kernels.index_copy(copy, x), run_all(model, [x])[0])


@st.composite
def strided_slices(draw: st.DrawFn) -> tuple[tuple[int, ...], list[int], list[int], list[int], int, int, int]:
    shape = draw(SHAPES)
    rank = len(shape)
    sliced = draw(st.integers(1, rank))
    begin = [draw(st.integers(-d - 2, d + 2)) for d in shape[:sliced]]
    end = [draw(st.integers(-d - 2, d + 2)) for d in shape[:sliced]]
    strides = [draw(st.sampled_from([-3, -2, -1, 1, 2, 3])) for _ in range(sliced)]
    masks = [draw(st.integers(0, 2**sliced - 1)) for _ in range(3)]
    return shape, begin, end, strides, *masks


@settings(max_examples=300, deadline=None)
@given(case=strided_slices(), seed=SEED)
def test_strided_slice_is_bit_exact(kernels: dm.DataKernels, case: tuple, seed: int) -> None:  # type: ignore[type-arg]
    shape, begin, end, strides, begin_mask, end_mask, shrink = case
    try:
        copy = dm.strided_slice(shape, begin, end, strides, begin_mask, end_mask, shrink)
    except dm.DataMovementError:
        assume(False)
        return
    x = _codes(shape, seed)
    options = options_of(schema.StridedSliceOptionsT, beginMask=begin_mask, endMask=end_mask, shrinkAxisMask=shrink)
    constants = [(1, np.array(begin, np.int32)), (2, np.array(end, np.int32)), (3, np.array(strides, np.int32))]
    model = data_model(OP.STRIDED_SLICE, [shape], [copy.output_shape], QUANT, constants=constants, options=options,
                       version=2)  # fmt: skip
    _same(kernels.index_copy(copy, x), run_all(model, [x])[0])


@settings(max_examples=200, deadline=None)
@given(shape=SHAPES, data=st.data(), seed=SEED)
def test_slice_is_bit_exact(kernels: dm.DataKernels, shape: tuple[int, ...], data: st.DataObject, seed: int) -> None:
    begin = [data.draw(st.integers(0, d - 1)) for d in shape]
    size = [data.draw(st.sampled_from([-1, *range(1, d - b + 1)])) for d, b in zip(shape, begin, strict=True)]
    copy = dm.slice_(shape, begin, size)
    x = _codes(shape, seed)
    constants = [(1, np.array(begin, np.int32)), (2, np.array(size, np.int32))]
    model = data_model(OP.SLICE, [shape], [copy.output_shape], QUANT, constants=constants,
                       options=schema.SliceOptionsT(), version=2)  # fmt: skip
    _same(kernels.index_copy(copy, x), run_all(model, [x])[0])


@settings(max_examples=200, deadline=None)
@given(shape=SHAPES, data=st.data(), seed=SEED)
def test_gather_is_bit_exact(kernels: dm.DataKernels, shape: tuple[int, ...], data: st.DataObject, seed: int) -> None:
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    index_shape = tuple(data.draw(st.lists(st.integers(1, 3), max_size=2)))
    indices = np.random.default_rng(seed).integers(0, shape[axis], size=index_shape, dtype=np.int32)
    copy = dm.gather(shape, indices, axis)
    x = _codes(shape, seed)
    options = options_of(schema.GatherOptionsT, axis=axis)
    model = data_model(OP.GATHER, [shape], [copy.output_shape], QUANT, constants=[(1, indices)], options=options,
                       version=2)  # fmt: skip
    _same(kernels.index_copy(copy, x), run_all(model, [x])[0])


@settings(max_examples=200, deadline=None)
@given(shape=SHAPES, mode=st.sampled_from(dm.MIRROR_MODES), data=st.data(), seed=SEED)
def test_mirror_pad_is_bit_exact(
    kernels: dm.DataKernels, shape: tuple[int, ...], mode: str, data: st.DataObject, seed: int
) -> None:
    limit = [d - 1 if mode == "REFLECT" else d for d in shape]
    paddings = [(data.draw(st.integers(0, m)), data.draw(st.integers(0, m))) for m in limit]
    copy = dm.mirror_pad(shape, paddings, mode)
    x = _codes(shape, seed)
    options = options_of(schema.MirrorPadOptionsT, mode=getattr(schema.MirrorPadMode, mode))
    model = data_model(OP.MIRROR_PAD, [shape], [copy.output_shape], QUANT,
                       constants=[(1, np.array(paddings, np.int32).reshape(len(shape), 2))], options=options,
                       version=2)  # fmt: skip
    _same(kernels.index_copy(copy, x), run_all(model, [x])[0])


@pytest.mark.parametrize("kind", ["space_to_depth", "depth_to_space"])
@settings(max_examples=100, deadline=None)
@given(block=st.integers(1, 3), n=st.integers(1, 2), h=st.integers(1, 3), w=st.integers(1, 3), c=st.integers(1, 4),
       seed=SEED)  # fmt: skip
def test_space_and_depth_moves_are_bit_exact(
    kernels: dm.DataKernels, kind: str, block: int, n: int, h: int, w: int, c: int, seed: int
) -> None:
    if kind == "space_to_depth":
        shape, copy = (n, h * block, w * block, c), dm.space_to_depth((n, h * block, w * block, c), block)
        code, options = OP.SPACE_TO_DEPTH, options_of(schema.SpaceToDepthOptionsT, blockSize=block)
    else:
        shape, copy = (n, h, w, c * block * block), dm.depth_to_space((n, h, w, c * block * block), block)
        code, options = OP.DEPTH_TO_SPACE, options_of(schema.DepthToSpaceOptionsT, blockSize=block)
    x = _codes(shape, seed)
    model = data_model(
        code, [shape], [copy.output_shape], QUANT, options=options, version=2 if kind == "space_to_depth" else 1
    )
    _same(kernels.index_copy(copy, x), run_all(model, [x])[0])


@pytest.mark.parametrize("kind", ["SPLIT", "SPLIT_V", "UNPACK"])
@settings(max_examples=150, deadline=None)
@given(shape=SHAPES, data=st.data(), seed=SEED)
def test_splits_are_bit_exact(
    kernels: dm.DataKernels, kind: str, shape: tuple[int, ...], data: st.DataObject, seed: int
) -> None:
    rank = len(shape)
    axis = data.draw(st.integers(-rank, rank - 1))
    dim = shape[axis]
    x = _codes(shape, seed)
    if kind == "UNPACK":
        extents = [1] * dim
        outputs = [tuple(s for a, s in enumerate(shape) if a != axis % rank)] * dim
        options = options_of(schema.UnpackOptionsT, num=dim, axis=axis)
        model = data_model(OP.UNPACK, [shape], outputs, QUANT, options=options, version=2)
    elif kind == "SPLIT":
        count = data.draw(st.sampled_from([k for k in range(1, dim + 1) if dim % k == 0]))
        extents = [dim // count] * count
        outputs = [tuple(e if a == axis % rank else s for a, s in enumerate(shape)) for e in extents]
        options = options_of(schema.SplitOptionsT, numSplits=count)
        model = data_model(OP.SPLIT, [shape], outputs, QUANT, constants=[(0, np.array(axis, np.int32))],
                           options=options, version=2)  # fmt: skip
    else:
        cuts = sorted(data.draw(st.lists(st.integers(1, dim - 1), max_size=3, unique=True))) if dim > 1 else []
        extents = [b - a for a, b in zip([0, *cuts], [*cuts, dim], strict=True)]
        sizes = list(extents)
        if data.draw(st.booleans()):
            sizes[data.draw(st.integers(0, len(sizes) - 1))] = -1
        outputs = [tuple(e if a == axis % rank else s for a, s in enumerate(shape)) for e in extents]
        options = options_of(schema.SplitVOptionsT, numSplits=len(extents))
        constants = [(1, np.array(sizes, np.int32)), (2, np.array(axis, np.int32))]
        model = data_model(OP.SPLIT_V, [shape], outputs, QUANT, constants=constants, options=options, version=2)
    found = kernels.split(x, axis, extents, keep_axis=kind != "UNPACK")
    expected = run_all(model, [x])
    assert len(found) == len(expected)
    for got, want in zip(found, expected, strict=True):
        _same(got, want)


@settings(max_examples=150, deadline=None)
@given(shape=SHAPES, count=st.integers(1, 4), data=st.data(), seed=SEED)
def test_pack_is_a_concatenation_of_unit_extents(
    library: ctypes.CDLL, shape: tuple[int, ...], count: int, data: st.DataObject, seed: int
) -> None:
    axis = data.draw(st.integers(-len(shape) - 1, len(shape)))
    inputs = [_codes(shape, seed + k) for k in range(count)]
    position = axis % (len(shape) + 1)
    out_shape = (*shape[:position], count, *shape[position:])
    options = options_of(schema.PackOptionsT, valuesCount=count, axis=axis)
    model = data_model(OP.PACK, [shape] * count, [out_shape], QUANT, options=options, version=2)
    expanded = [x.reshape(*shape[:position], 1, *shape[position:]) for x in inputs]
    _same(Int8Kernels(library).concatenation(expanded, position), run_all(model, inputs)[0])


def test_index_copy_refusals_write_nothing(kernels: dm.DataKernels) -> None:
    x = np.arange(24, dtype=np.int8).reshape(2, 3, 4)
    copy = dm.transpose(x.shape, [2, 0, 1])
    out = np.full(24, 9, np.int8)
    maps = np.array(copy.flat_maps, np.int32)

    def args(**changes: object) -> dm.IndexCopyArgs:
        fields: dict[str, object] = {
            "input": x.ctypes.data, "output": out.ctypes.data, "element_size": 1, "input_count": 24, "rank": 3,
            "output_dims": dm._padded(copy.dims), "input_strides": dm._padded(copy.strides),
            "maps": maps.ctypes.data_as(ctypes.POINTER(ctypes.c_int32)), **changes,
        }  # fmt: skip
        return dm.IndexCopyArgs(**fields)

    function = kernels.library.helia_index_copy
    for bad, status in (
        (args(input=None), Status.NULL_POINTER),
        (args(rank=0), Status.BAD_SHAPE),
        (args(element_size=3), Status.BAD_PARAMETER),
        (args(input_count=23), Status.SHAPE_MISMATCH),
        (args(input_strides=dm._padded((1, 12, 5))), Status.SHAPE_MISMATCH),
        (args(input_strides=dm._padded((1, -12, 4))), Status.BAD_PARAMETER),
        (args(output=x.ctypes.data + 4), Status.PARTIAL_OVERLAP),
    ):
        assert function(ctypes.byref(bad)) == status
        assert out.tolist() == [9] * 24 and x.reshape(-1).tolist() == list(range(24))
    assert function(ctypes.byref(args())) == Status.OK
    assert out.tolist() == x.transpose(2, 0, 1).reshape(-1).tolist()


def test_split_refuses_overlapping_outputs_writing_nothing(kernels: dm.DataKernels) -> None:
    x = np.arange(12, dtype=np.int8)
    target = np.full(16, 9, np.int8)
    pointers = (ctypes.c_void_p * 2)(target.ctypes.data, target.ctypes.data + 4)
    extents = np.array([6, 6], np.int32)
    args = dm.SplitArgs(
        x.ctypes.data, ctypes.cast(pointers, ctypes.POINTER(ctypes.c_void_p)),
        extents.ctypes.data_as(ctypes.POINTER(ctypes.c_int32)), 1, 2, 1, 1,
    )  # fmt: skip
    assert kernels.library.helia_split(ctypes.byref(args)) == Status.CROSS_PAIR_OVERLAP
    assert target.tolist() == [9] * 16


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: dm.strided_slice((4,), [0], [4], [0]), "a stride of 0"),
        (lambda: dm.strided_slice((4,), [2], [2], [1]), "is empty"),
        (lambda: dm.gather((4, 2), np.array([4]), 0), "outside \\[0, 4\\)"),
        (lambda: dm.mirror_pad((3,), [(3, 0)], "REFLECT"), "REFLECT allows 2"),
        (lambda: dm.transpose((2, 3), [0, 0]), "not a permutation"),
        (lambda: dm.space_to_depth((1, 3, 4, 1), 2), "does not divide"),
        (lambda: dm.slice_((4,), [2], [3]), "takes \\[2, 5\\) of 4"),
    ],
)
def test_arguments_tflite_refuses_are_refused(call: object, message: str) -> None:
    with pytest.raises(dm.DataMovementError, match=message):
        call()  # type: ignore[operator]


@pytest.mark.parametrize("kind", dm.ARG_KINDS)
@settings(max_examples=150, deadline=None)
@given(shape=SHAPES, data=st.data(), index_dtype=st.sampled_from(["int32", "int64"]), seed=SEED)
def test_arg_max_and_min_are_bit_exact(
    kernels: dm.DataKernels, kind: str, shape: tuple[int, ...], data: st.DataObject, index_dtype: str, seed: int
) -> None:
    """Codes drawn from a few values, so ties occur: the first index wins, as in LiteRT."""
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    x = np.random.default_rng(seed).integers(-2, 2, size=shape, dtype=np.int8) * 60
    out_shape = tuple(d for a, d in enumerate(shape) if a != axis % len(shape))
    code = OP.ARG_MAX if kind == "max" else OP.ARG_MIN
    options_type = schema.ArgMaxOptionsT if kind == "max" else schema.ArgMinOptionsT
    options = options_of(options_type, outputType=getattr(schema.TensorType, index_dtype.upper()))
    from heliabuild.synth.builder import GraphBuilder
    from heliabuild.synth.quant import quantization_parameters

    builder = GraphBuilder()
    xi = builder.activation("x", shape, "int8", quantization_parameters([0.1], [0]))
    yi = builder.activation("y", out_shape, index_dtype)
    builder.operator(code, [xi, builder.constant("axis", np.array([axis], np.int32))], [yi], options, version=2)
    model = builder.finish([xi], [yi], description="arg", name="arg", dynamic_batch=False)
    _same(kernels.arg(kind, x, axis, index_dtype), run_all(model, [x])[0])


@settings(max_examples=100, deadline=None)
@given(shape=SHAPES, data=st.data(), seed=SEED)
def test_padv2_is_pad_filled_with_its_constant(
    library: ctypes.CDLL, shape: tuple[int, ...], data: st.DataObject, seed: int
) -> None:
    paddings = [(data.draw(st.integers(0, 2)), data.draw(st.integers(0, 2))) for _ in shape]
    value = data.draw(st.integers(-128, 127))
    x = _codes(shape, seed)
    out_shape = tuple(d + b + a for d, (b, a) in zip(shape, paddings, strict=True))
    pads = np.array(paddings, np.int32).reshape(len(shape), 2)
    constants = [(1, pads), (2, np.array(value, np.int8))]
    model = data_model(OP.PADV2, [shape], [out_shape], QUANT, constants=constants, options=schema.PadV2OptionsT(),
                       version=2)  # fmt: skip
    _same(Int8Kernels(library).pad(x, paddings, value), run_all(model, [x])[0])


@pytest.mark.parametrize("kind", ["SQUEEZE", "EXPAND_DIMS"])
@settings(max_examples=60, deadline=None)
@given(shape=SHAPES, data=st.data(), seed=SEED)
def test_squeeze_and_expand_dims_are_the_reshape_copy(
    library: ctypes.CDLL, kind: str, shape: tuple[int, ...], data: st.DataObject, seed: int
) -> None:
    from helpers.int8_models import reshape_like_model

    if kind == "SQUEEZE":
        wide = tuple(int(d) for d in data.draw(st.permutations([*shape, 1, 1])))
        out_shape = list(wide)
        for _ in range(len(wide) - len(shape)):
            out_shape.remove(1)
        model, source = reshape_like_model(kind, wide, tuple(out_shape), QUANT), wide
    else:
        axis = data.draw(st.integers(0, len(shape)))
        out_shape = [*shape[:axis], 1, *shape[axis:]]
        model, source = reshape_like_model(kind, shape, tuple(out_shape), QUANT), shape
    x = _codes(source, seed)
    expected = run_all(model, [x])[0]
    _same(Int8Kernels(library).reshape(x, expected.shape), expected)
