"""The contract kernels in C (c/ops_contracts.c) against the numpy references of heliabuild.kernels.operators
and against LiteRT's reference kernels (BUILTIN_REF) on heliabuild.synth's single-operator models.

Bitwise everywhere, with two allowances the contract makes: a NaN from DIV or SQUARED_DIFFERENCE only needs
to be a NaN (payloads unspecified), and FP16 DIV against the widened FP32 LiteRT reference differs exactly
where the contract says (-0 -> +0 under RELU and RELU6; a quotient beyond 65504 saturates at 65504 where the
widened reference rounds to infinity).
"""

from __future__ import annotations

import ctypes
import re
import subprocess
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest
from ai_edge_litert.interpreter import Interpreter, OpResolverType
from helpers.sanitizers import SanitizedBuilds
from helpers.skips import require_tool
from hypothesis import given, settings
from hypothesis import strategies as st

from heliabuild.kernels.contracts_native import (
    COMPARISONS,
    ContractKernelError,
    ContractKernels,
    kernel_dims,
)
from heliabuild.kernels.native import Status, load_host_library
from heliabuild.kernels.operators import comparisons, div, neg, select, squared_difference
from heliabuild.model import serialize
from heliabuild.synth import single_op_model

INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1
INT32_EDGES = np.array(
    [INT32_MIN, INT32_MIN + 1, -(2**24) - 1, -2, -1, 0, 1, 2, 2**24, 2**24 + 1, INT32_MAX - 1, INT32_MAX], np.int32
)
FLOAT32_EDGES = np.array(
    [
        0x00000000, 0x80000000, 0x7F800000, 0xFF800000,  # +-0, +-inf
        0x7FC00000, 0xFFC12345, 0x7FA00001,  # quiet NaN, NaN with a payload, signalling NaN
        0x00000001, 0x80000001, 0x007FFFFF, 0x807FFFFF, 0x00800000,  # subnormals, smallest normal
        0x7F7FFFFF, 0xFF7FFFFF, 0x3F800000, 0xBF800000, 0x3F7FFFFF, 0xBF800001,  # FLT_MAX, +-1 and neighbours
        0x40C00000, 0x40C00001, 0x34000000, 0x4B000000, 0x5F000000, 0x1F000000, 0x3EAAAAAB,
    ],
    np.uint32,
).view(np.float32)  # fmt: skip
FLOAT16_EDGES = np.array(
    [0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 3.0, -7.0, 0.1, 6.0, 65504.0, -65504.0, 2.0**-24, 2.0**-14,
     1e-3, 0.5, 300.0, 1.0009765625, 6.00390625, 255.9],
    np.float16,
)  # fmt: skip
ACTIVATION = st.sampled_from(div.ACTIVATIONS)
SEED = st.integers(0, 2**32 - 1)


@pytest.fixture(scope="module")
def kernels(host_kernel_library: Path) -> ContractKernels:
    return ContractKernels(load_host_library(host_kernel_library))


def litert(op: str, dtype: str, arrays: Sequence[np.ndarray], activation: str = "NONE") -> np.ndarray:
    """The output of the synth single-operator model of `op` in LiteRT's reference kernels."""
    model = single_op_model(op, dtype, [a.shape for a in arrays], activation)
    interpreter = Interpreter(
        model_content=bytes(serialize(model)), experimental_op_resolver_type=OpResolverType.BUILTIN_REF
    )
    interpreter.allocate_tensors()
    for detail, array in zip(interpreter.get_input_details(), arrays, strict=True):
        interpreter.set_tensor(detail["index"], np.array(array, order="C"))
    interpreter.invoke()
    return interpreter.get_tensor(interpreter.get_output_details()[0]["index"])


def assert_bitwise(actual: np.ndarray, expected: np.ndarray, nan_payloads: bool = True) -> None:
    """Equal shapes and dtypes and every element's bits; with nan_payloads=False a NaN only needs a NaN."""
    assert actual.shape == expected.shape and actual.dtype == expected.dtype, (actual.shape, expected.shape)
    width = {1: np.uint8, 2: np.uint16, 4: np.uint32}[actual.dtype.itemsize]
    same = np.asarray(actual).view(width) == np.asarray(expected).view(width)
    if not nan_payloads:
        same |= np.isnan(actual) & np.isnan(expected)
    bad = np.flatnonzero(~same)
    assert bad.size == 0, f"{bad.size} differ, first at {bad[:5]}: {actual.flat[bad[0]]!r} vs {expected.flat[bad[0]]!r}"


def float_values(dtype: type, shape: tuple[int, ...], seed: int) -> np.ndarray:
    """Edge values (NaN, inf, -0.0, subnormals, limits), random bit patterns and random finite values."""
    rng = np.random.default_rng(seed)
    count = int(np.prod(shape))
    if dtype == np.float32:
        edges = FLOAT32_EDGES
        bits = rng.integers(0, 2**32, count, dtype=np.uint64).astype(np.uint32).view(np.float32)
        finite = (rng.standard_normal(count) * 10.0 ** rng.integers(-40, 39, count)).astype(np.float32)
    else:
        edges = FLOAT16_EDGES
        bits = rng.integers(0, 2**16, count, dtype=np.uint32).astype(np.uint16).view(np.float16)
        finite = (rng.standard_normal(count) * 10.0 ** rng.integers(-6, 5, count)).astype(np.float16)
    pick = rng.integers(0, 3, count)
    values = np.where(pick == 0, rng.choice(edges, count), np.where(pick == 1, bits, finite))
    return values.astype(dtype).reshape(shape)


def int32_values(shape: tuple[int, ...], seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    count = int(np.prod(shape))
    wide = rng.integers(INT32_MIN, INT32_MAX, count, dtype=np.int64, endpoint=True).astype(np.int32)
    small = rng.integers(-3, 4, count).astype(np.int32)  # equal values are common, so == and <= see both answers
    pick = rng.integers(0, 3, count)
    return np.where(pick == 0, rng.choice(INT32_EDGES, count), np.where(pick == 1, small, wide)).reshape(shape)


@st.composite
def broadcast_shapes(draw: st.DrawFn, operands: int = 2, max_rank: int = 6) -> list[tuple[int, ...]]:
    """Shapes (rank 0..max_rank) that broadcast: the output's extents, some set to 1, some leading axes dropped."""
    rank = draw(st.integers(0, max_rank))
    output = tuple(draw(st.integers(1, 4)) for _ in range(rank))
    shapes = []
    for _ in range(operands):
        shape = tuple(1 if draw(st.integers(0, 3)) == 0 else d for d in output)
        shapes.append(shape[draw(st.integers(0, rank)) :] if draw(st.booleans()) else shape)
    return shapes


# --- DIV --------------------------------------------------------------------------------------------


@settings(max_examples=200, deadline=None)
@given(shapes=broadcast_shapes(), activation=ACTIVATION, seed=SEED)
def test_fp32_div_matches_the_reference_and_litert(
    kernels: ContractKernels, shapes: list[tuple[int, ...]], activation: str, seed: int
) -> None:
    x, y = float_values(np.float32, shapes[0], seed), float_values(np.float32, shapes[1], seed + 1)
    if seed % 4 == 0:
        y = np.where(np.random.default_rng(seed).random(y.shape) < 0.5, np.float32(0.0), y).astype(np.float32)
    got = kernels.div(x, y, activation)
    assert_bitwise(got, div.reference(x, y, activation), nan_payloads=False)
    assert_bitwise(got, litert("div", "float32", [x, y], activation), nan_payloads=False)


def test_fp32_div_every_edge_pair_under_every_activation(kernels: ContractKernels) -> None:
    x = np.repeat(FLOAT32_EDGES, FLOAT32_EDGES.size)
    y = np.tile(FLOAT32_EDGES, FLOAT32_EDGES.size)
    for activation in div.ACTIVATIONS:
        got = kernels.div(x, y, activation)
        assert_bitwise(got, div.reference(x, y, activation), nan_payloads=False)
        assert_bitwise(got, litert("div", "float32", [x, y], activation), nan_payloads=False)
        grid, row = x.reshape(25, 25), y[:25]  # broadcasting a row of denominators over the grid
        expected = litert("div", "float32", [grid, row], activation)
        assert_bitwise(kernels.div(grid, row, activation), expected, nan_payloads=False)


def test_fp32_div_saturates_division_by_zero_and_keeps_operand_order(kernels: ContractKernels) -> None:
    numerator = np.float32(3.0).reshape(())
    denominators = np.array([0.0, -0.0, 2.0, np.inf], np.float32)
    assert kernels.div(numerator, denominators).tolist() == [3.4028234663852886e38, -3.4028234663852886e38, 1.5, 0.0]
    assert kernels.div(denominators, numerator).tolist() == [
        0.0,
        -0.0,
        float(np.float32(2) / np.float32(3)),
        3.4028234663852886e38,
    ]


@settings(max_examples=200, deadline=None)
@given(shapes=broadcast_shapes(), activation=ACTIVATION, seed=SEED)
def test_fp16_div_matches_the_reference(
    kernels: ContractKernels, shapes: list[tuple[int, ...]], activation: str, seed: int
) -> None:
    x, y = float_values(np.float16, shapes[0], seed), float_values(np.float16, shapes[1], seed + 1)
    assert_bitwise(kernels.div(x, y, activation), div.reference(x, y, activation), nan_payloads=False)


def test_fp16_div_of_every_half_matches_the_widened_litert_reference(kernels: ContractKernels) -> None:
    every = np.arange(2**16, dtype=np.uint32).astype(np.uint16).view(np.float16)
    x = np.concatenate([np.tile(every, FLOAT16_EDGES.size), np.repeat(FLOAT16_EDGES, every.size)])
    y = np.concatenate([np.repeat(FLOAT16_EDGES, every.size), np.tile(every, FLOAT16_EDGES.size)])
    for activation in div.ACTIVATIONS:
        got = kernels.div(x, y, activation)
        assert_bitwise(got, div.reference(x, y, activation), nan_payloads=False)
        with np.errstate(over="ignore"):
            widened = litert("div", "float32", [x.astype(np.float32), y.astype(np.float32)], activation)
            reference = widened.astype(np.float16)
        nan = np.isnan(reference)
        assert np.array_equal(np.isnan(got), nan)
        overflow = np.isinf(reference)
        assert np.array_equal(got[overflow], np.where(reference[overflow] > 0, 65504.0, -65504.0).astype(np.float16))
        differs = ~nan & ~overflow & (got.view(np.uint16) != reference.view(np.uint16))
        if activation in ("RELU", "RELU6"):
            assert differs.any()
            assert np.all(reference.view(np.uint16)[differs] == 0x8000) and np.all(got.view(np.uint16)[differs] == 0)
        else:
            assert not differs.any()


# --- SQUARED_DIFFERENCE -----------------------------------------------------------------------------


@settings(max_examples=200, deadline=None)
@given(shapes=broadcast_shapes(), seed=SEED)
def test_fp32_squared_difference_matches_the_reference_and_litert(
    kernels: ContractKernels, shapes: list[tuple[int, ...]], seed: int
) -> None:
    x, y = float_values(np.float32, shapes[0], seed), float_values(np.float32, shapes[1], seed + 1)
    got = kernels.squared_difference(x, y)
    assert_bitwise(got, squared_difference.reference(x, y), nan_payloads=False)
    assert_bitwise(got, litert("squared_difference", "float32", [x, y]), nan_payloads=False)


@settings(max_examples=200, deadline=None)
@given(shapes=broadcast_shapes(), seed=SEED)
def test_fp16_squared_difference_matches_the_reference(
    kernels: ContractKernels, shapes: list[tuple[int, ...]], seed: int
) -> None:
    x, y = float_values(np.float16, shapes[0], seed), float_values(np.float16, shapes[1], seed + 1)
    assert_bitwise(kernels.squared_difference(x, y), squared_difference.reference(x, y), nan_payloads=False)


def test_squared_difference_of_every_half_and_edge_floats(kernels: ContractKernels) -> None:
    every = np.arange(2**16, dtype=np.uint32).astype(np.uint16).view(np.float16)
    for other in FLOAT16_EDGES:
        y = np.full_like(every, other)
        assert_bitwise(kernels.squared_difference(every, y), squared_difference.reference(every, y), False)
    x = np.repeat(FLOAT32_EDGES, FLOAT32_EDGES.size)
    y = np.tile(FLOAT32_EDGES, FLOAT32_EDGES.size)
    got = kernels.squared_difference(x, y)
    assert_bitwise(got, squared_difference.reference(x, y), nan_payloads=False)
    assert_bitwise(got, litert("squared_difference", "float32", [x, y]), nan_payloads=False)
    tiny = np.array([1e-30, 2e-23, 3e-20], np.float32)  # squares that are subnormal: gradual underflow
    assert_bitwise(kernels.squared_difference(tiny, np.float32(0).reshape(())), tiny * tiny)


# --- NEG --------------------------------------------------------------------------------------------


@settings(max_examples=100, deadline=None)
@given(shape=broadcast_shapes(operands=1).map(lambda s: s[0]), seed=SEED, half=st.booleans())
def test_neg_toggles_the_sign_bit_like_the_reference_and_litert(
    kernels: ContractKernels, shape: tuple[int, ...], seed: int, half: bool
) -> None:
    x = float_values(np.float16 if half else np.float32, shape, seed)
    got = kernels.neg(x)
    assert_bitwise(got, neg.reference(x))  # NaN payloads included
    if not half:
        assert_bitwise(got, litert("neg", "float32", [x]))


def test_neg_of_every_half_and_the_float_edges(kernels: ContractKernels) -> None:
    every = np.arange(2**16, dtype=np.uint32).astype(np.uint16).view(np.float16)
    assert_bitwise(kernels.neg(every), neg.reference(every))
    assert_bitwise(kernels.neg(FLOAT32_EDGES), litert("neg", "float32", [FLOAT32_EDGES]))


# --- INT32 comparisons and SELECT_V2 ----------------------------------------------------------------


@settings(max_examples=300, deadline=None)
@given(operator=st.sampled_from(list(COMPARISONS)), shapes=broadcast_shapes(), seed=SEED)
def test_int32_comparisons_match_the_reference_and_litert(
    kernels: ContractKernels, operator: str, shapes: list[tuple[int, ...]], seed: int
) -> None:
    x, y = int32_values(shapes[0], seed), int32_values(shapes[1], seed + 1)
    got = kernels.comparison(operator, x, y)
    assert_bitwise(got, comparisons.reference(operator, x, y))
    assert_bitwise(got, litert(operator.lower(), "int32", [x, y]))


@pytest.mark.parametrize("operator", list(COMPARISONS))
def test_int32_comparisons_of_every_edge_pair(kernels: ContractKernels, operator: str) -> None:
    x = np.repeat(INT32_EDGES, INT32_EDGES.size)
    y = np.tile(INT32_EDGES, INT32_EDGES.size)
    got = kernels.comparison(operator, x, y)
    assert_bitwise(got, comparisons.reference(operator, x, y))
    assert_bitwise(got, litert(operator.lower(), "int32", [x, y]))
    assert set(got.view(np.uint8).tolist()) == {0, 1}


@settings(max_examples=200, deadline=None)
@given(shapes=broadcast_shapes(operands=3), seed=SEED)
def test_select_v2_matches_the_reference_and_litert(
    kernels: ContractKernels, shapes: list[tuple[int, ...]], seed: int
) -> None:
    condition = np.random.default_rng(seed).integers(0, 2, shapes[0]).astype(np.bool_)
    x, y = int32_values(shapes[1], seed), int32_values(shapes[2], seed + 1)
    got = kernels.select_v2(condition, x, y)
    assert_bitwise(got, select.reference(condition, x, y))
    assert_bitwise(got, litert("select_v2", "int32", [condition, x, y]))


@settings(max_examples=50, deadline=None)
@given(shapes=broadcast_shapes(operands=3, max_rank=8), seed=SEED)
def test_select_v2_through_rank_eight_matches_the_reference(
    kernels: ContractKernels, shapes: list[tuple[int, ...]], seed: int
) -> None:
    condition = np.random.default_rng(seed).integers(0, 2, shapes[0]).astype(np.bool_)
    x, y = int32_values(shapes[1], seed), int32_values(shapes[2], seed + 1)
    assert_bitwise(kernels.select_v2(condition, x, y), select.reference(condition, x, y))


def test_select_v2_takes_any_nonzero_condition_byte_as_true(kernels: ContractKernels) -> None:
    condition = np.array([0, 1, 2, 255], np.uint8)
    x, y = np.array([1, 2, 3, 4], np.int32), np.array([-1, -2, -3, -4], np.int32)
    out = np.zeros(4, np.int32)
    assert kernels.run("helia_select_v2_s32", kernels.select_args(condition, x, y, out)) == Status.OK
    assert out.tolist() == [-1, 2, 3, 4]


# --- layout, in place and refusals ------------------------------------------------------------------


def test_kernel_dims_flatten_unbroadcast_layouts_and_pad_the_rest() -> None:
    assert kernel_dims([(1, 1, 8, 16), (8, 16)], (1, 1, 8, 16)) == (1, [(128,)] * 3)
    assert kernel_dims([(2, 1, 2, 1, 2, 3, 2)] * 2, (2, 1, 2, 1, 2, 3, 2)) == (1, [(48,)] * 3)
    assert kernel_dims([(), (3,)], (3,)) == (1, [(1,), (3,), (3,)])
    assert kernel_dims([(2, 3), (3,)], (2, 3)) == (2, [(2, 3), (1, 3), (2, 3)])
    with pytest.raises(ContractKernelError, match="rank 7"):
        kernel_dims([(2, 1, 1, 1, 1, 1, 3), (3,)], (2, 1, 1, 1, 1, 1, 3))


def test_in_place_division_and_negation(kernels: ContractKernels) -> None:
    x = float_values(np.float32, (4, 5), 3)
    y = float_values(np.float32, (5,), 4)
    expected = div.reference(x, y, "RELU6")
    buffer = x.copy()
    assert kernels.run("helia_div_f32", kernels.broadcast_args(buffer, y, buffer, "RELU6")) == Status.OK
    assert_bitwise(buffer, expected, nan_payloads=False)
    buffer = x.copy()
    assert kernels.run("helia_neg_f32", buffer.ctypes.data, buffer.ctypes.data, buffer.size) == Status.OK
    assert_bitwise(buffer, neg.reference(x))


def _refused(kernels: ContractKernels, function: str, args: object, out: np.ndarray, status: Status) -> None:
    before = out.tobytes()
    assert kernels.run(f"{function}_check", args) == status
    assert kernels.run(function, args) == status
    assert out.tobytes() == before, "a refused call wrote to the output"


@pytest.mark.parametrize("function", ["helia_div_f32", "helia_squared_difference_f16", "helia_less_s32"])
def test_binary_refusals_write_nothing(kernels: ContractKernels, function: str) -> None:
    dtype = {"helia_div_f32": np.float32, "helia_squared_difference_f16": np.float16, "helia_less_s32": np.int32}[
        function
    ]
    out_dtype = np.bool_ if function == "helia_less_s32" else dtype
    x, y = np.ones((2, 3), dtype), np.ones((3,), dtype)
    out = np.full((2, 3), 7, out_dtype)

    def args(**changes: object):
        a = kernels.broadcast_args(x, y, out)
        for name, value in changes.items():
            if name.endswith("_dims"):
                getattr(a, name)[: len(value)] = value  # type: ignore[arg-type]
            else:
                setattr(a, name, value)
        return a

    _refused(kernels, function, args(input1=None), out, Status.NULL_POINTER)
    _refused(kernels, function, args(output=None), out, Status.NULL_POINTER)
    _refused(kernels, function, args(rank=0), out, Status.BAD_SHAPE)
    _refused(kernels, function, args(rank=7), out, Status.BAD_SHAPE)
    _refused(kernels, function, args(input2_dims=[0, 3]), out, Status.BAD_SHAPE)
    _refused(kernels, function, args(input2_dims=[1, 2]), out, Status.SHAPE_MISMATCH)
    _refused(kernels, function, args(output_dims=[2, 1]), out, Status.SHAPE_MISMATCH)
    _refused(kernels, function, args(rank=3, input1_dims=[2, 3, 1], output_dims=[2, 3, 3]), out, Status.SHAPE_MISMATCH)
    huge = [65536, 32768, 1]  # 2^31 elements: more than INT32_MAX
    _refused(kernels, function, args(rank=3, input1_dims=huge, input2_dims=huge, output_dims=huge), out,
             Status.SIZE_OVERFLOW)  # fmt: skip
    bytes_too_many = [1024, 1024, 1024]  # 2^30 elements: 2^32 bytes of 4-byte values
    if dtype != np.float16:
        _refused(kernels, function, args(rank=3, input1_dims=bytes_too_many, input2_dims=[1, 1, 1],
                 output_dims=bytes_too_many), out, Status.SIZE_OVERFLOW)  # fmt: skip
    bad_activation = 4 if function == "helia_div_f32" else 1
    _refused(kernels, function, args(activation=bad_activation), out, Status.BAD_PARAMETER)
    _refused(kernels, function, args(input2=out.ctypes.data + 1), out, Status.PARTIAL_OVERLAP)
    if function == "helia_less_s32":  # a bool output is never an int32 input's bytes
        _refused(kernels, function, args(output=x.ctypes.data), out, Status.PARTIAL_OVERLAP)


def test_select_and_neg_refusals_write_nothing(kernels: ContractKernels) -> None:
    condition = np.array([True, False, True])
    x, y = np.arange(3, dtype=np.int32), np.zeros(3, np.int32)
    out = np.full(3, 9, np.int32)

    def args(**changes: object):
        a = kernels.select_args(condition, x, y, out)
        for name, value in changes.items():
            if name.endswith("_dims"):
                getattr(a, name)[: len(value)] = value  # type: ignore[arg-type]
            else:
                setattr(a, name, value)
        return a

    _refused(kernels, "helia_select_v2_s32", args(condition=None), out, Status.NULL_POINTER)
    _refused(kernels, "helia_select_v2_s32", args(rank=9), out, Status.BAD_SHAPE)
    _refused(kernels, "helia_select_v2_s32", args(x_dims=[2]), out, Status.SHAPE_MISMATCH)
    _refused(kernels, "helia_select_v2_s32", args(output=condition.ctypes.data), out, Status.PARTIAL_OVERLAP)
    _refused(kernels, "helia_select_v2_s32", args(output=x.ctypes.data + 4), out, Status.PARTIAL_OVERLAP)
    assert kernels.run("helia_select_v2_s32", args(output=y.ctypes.data)) == Status.OK  # in place on y
    assert y.tolist() == [0, 0, 2]

    values = np.ones(4, np.float32)
    before = values.tobytes()
    for count, status in ((0, Status.BAD_SHAPE), (2**29, Status.SIZE_OVERFLOW)):
        assert kernels.run("helia_neg_f32", values.ctypes.data, values.ctypes.data + 4, count) == status
    assert kernels.run("helia_neg_f32", values.ctypes.data, values.ctypes.data + 4, 3) == Status.PARTIAL_OVERLAP
    assert kernels.run("helia_neg_f16", None, values.ctypes.data, 3) == Status.NULL_POINTER
    assert values.tobytes() == before


def test_the_bindings_refuse_mixed_float_operands(kernels: ContractKernels) -> None:
    with pytest.raises(ContractKernelError, match="float32 and float16"):
        kernels.div(np.ones(2, np.float32), np.ones(2, np.float16))
    assert isinstance(kernels.library, ctypes.CDLL)


# --- sanitizers -------------------------------------------------------------------------------------

SANITIZER_DRIVER = """
import ctypes, sys
import numpy as np
sys.path.insert(0, {tests!r})
import test_kernels_contracts_native as t
from heliabuild.kernels.contracts_native import COMPARISONS, ContractKernels

sanitized, regular = ContractKernels(ctypes.CDLL({library!r})), ContractKernels(ctypes.CDLL({regular!r}))
count = 0
for number in range(300):
    rng = np.random.default_rng(number)
    rank = int(rng.integers(0, 7))
    out = tuple(int(d) for d in rng.integers(1, 5, rank))
    shapes = [tuple(1 if rng.integers(0, 4) == 0 else d for d in out) for _ in range(3)]
    shapes = [shape[int(rng.integers(0, rank + 1)):] for shape in shapes]
    dtype = (np.float32, np.float16)[number % 2]
    x, y = t.float_values(dtype, shapes[0], number), t.float_values(dtype, shapes[1], number + 1)
    i, j = t.int32_values(shapes[0], number), t.int32_values(shapes[1], number + 1)
    condition = rng.integers(0, 2, shapes[2]).astype(np.bool_)
    activation = ("NONE", "RELU", "RELU_N1_TO_1", "RELU6")[number % 4]
    operator = list(COMPARISONS)[number % 6]
    for kernels in (sanitized, regular):
        results = [kernels.div(x, y, activation), kernels.squared_difference(x, y), kernels.neg(x),
                   kernels.comparison(operator, i, j), kernels.select_v2(condition, i, j)]
        if kernels is sanitized:
            first = results
    assert all(a.tobytes() == b.tobytes() for a, b in zip(first, results)), number
    count += 5
print("sanitized calls:", count)
"""


def test_contract_kernels_are_clean_under_asan_and_ubsan(tmp_path: Path, sanitized_builds: SanitizedBuilds) -> None:
    from test_kernels_int8_sanitizers import run_sanitized

    run = run_sanitized(tmp_path, SANITIZER_DRIVER, sanitized_builds)
    assert "sanitized calls: 1500" in run.stdout


VECTOR_FLOAT = re.compile(
    r"^\s*[0-9a-f]+:\s+(?:[0-9a-f]{4} ?)+\s+(v\S*\.b?f(?:16|32)\S*)\s+(.*\bq(?:1[0-5]|[0-9])\b.*)$"
)
"""An MVE floating-point instruction in objdump's listing: a float-typed mnemonic (`.f16`, `.f32`, `.bf16`,
`.f32.s32`, ...) with a vector register among its operands (lane arithmetic, a compare, a conversion, an
across-vector reduction into a core register)."""


def vector_float_instructions(obj: Path) -> list[str]:
    """Every MVE floating-point instruction of the Cortex-M55 object `obj`, decoded as Armv8.1-M (binutils
    otherwise shows MVE as coprocessor instructions: `ldc`, `stc`, `cdp`); an undecoded coprocessor form left
    in the listing fails, since it may hide one."""
    listing = subprocess.run(
        ["arm-none-eabi-objdump", "-d", "-marmv8.1-m.main", str(obj)], capture_output=True, text=True, check=True
    ).stdout
    undecoded = [line for line in listing.splitlines() if re.search(r"\t(cdp|ldc|stc|mcr|mrc)2?l?\b", line)]
    assert undecoded == [], undecoded
    return [f"{match[1]} {match[2].strip()}" for line in listing.splitlines() if (match := VECTOR_FLOAT.match(line))]


@pytest.fixture
def objdump() -> None:
    require_tool("arm-none-eabi-objdump", "the Arm toolchain (Debian: binutils-arm-none-eabi)")


def test_the_vector_float_check_finds_every_form_and_nothing_else(tmp_path: Path, objdump: None) -> None:
    from heliabuild.firmware.toolchain import compile_object

    compile_object(Path(__file__).parent / "helpers" / "firmware" / "vector_float.c", tmp_path / "probe.o")
    assert vector_float_instructions(tmp_path / "probe.o") == [
        "vadd.f32 q0, q1, q2",
        "vfma.f16 q0, q1, q2",
        "vmaxnmv.f32 r0, q0",
        "vcvt.f32.s32 q0, q1",
        "vcmp.f32 ge, q0, q1",
        "vrintn.f32 q0, q1",
    ]


def test_the_m55_object_uses_no_vector_floating_point(tmp_path: Path, objdump: None) -> None:
    """MVE lanes flush subnormals; the float kernels must stay on the scalar FPU (gradual underflow, as LiteRT)."""
    from heliabuild.firmware.toolchain import compile_object

    source = Path(__file__).resolve().parents[1] / "heliabuild" / "kernels" / "c" / "ops_contracts.c"
    compile_object(source, tmp_path / "ops_contracts.o")  # the firmware library's flags
    listing = subprocess.run(
        ["arm-none-eabi-objdump", "-d", "-marmv8.1-m.main", str(tmp_path / "ops_contracts.o")],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "vdiv.f32" in listing  # the scalar divide is there ...
    assert vector_float_instructions(tmp_path / "ops_contracts.o") == []  # ... and no MVE float instruction
