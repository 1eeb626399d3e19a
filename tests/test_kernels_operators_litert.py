"""The operator references against LiteRT, on single-operator models from heliabuild.synth.

The oracle is LiteRT's built-in kernels without delegates: `BUILTIN_REF` (the
reference kernels the contract calls "LiteRT's FP32 reference") and
`BUILTIN_WITHOUT_DEFAULT_DELEGATES` (the optimized built-ins). The XNNPACK
delegate is not an oracle here: it flushes subnormals and does not saturate
infinite quotients at the finite float limits.

Bitwise parity where the contract promises it: INT32 comparisons, SELECT_V2,
FP32 NEG (NaN payloads included) and FP32 DIV (NaN payloads aside, which are
unspecified); FP32 SQUARED_DIFFERENCE is held to the same standard. FP16 DIV
is checked against the document's reference: widen the inputs to FP32, run
LiteRT's FP32 DIV, round the output to half.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import numpy as np
import pytest
from ai_edge_litert.interpreter import Interpreter, OpResolverType

from heliabuild.kernels.operators import comparisons, div, neg, select, squared_difference
from heliabuild.model import serialize
from heliabuild.synth import single_op_model

RESOLVERS = {
    "ref": OpResolverType.BUILTIN_REF,
    "builtin": OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES,
}
INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1
INT32_EDGES = np.array(
    [INT32_MIN, INT32_MIN + 1, -(2**24) - 1, -2, -1, 0, 1, 2, 2**24, 2**24 + 1, INT32_MAX - 1, INT32_MAX], np.int32
)
FLOAT32_EDGE_BITS = np.array(
    [
        0x00000000,  # +0
        0x80000000,  # -0
        0x7F800000,  # +inf
        0xFF800000,  # -inf
        0x7FC00000,  # quiet NaN
        0xFFC12345,  # negative quiet NaN with a payload
        0x7FA00001,  # signalling NaN
        0x00000001,  # smallest subnormal
        0x80000001,
        0x007FFFFF,  # largest subnormal
        0x807FFFFF,
        0x00800000,  # smallest normal
        0x7F7FFFFF,  # FLT_MAX
        0xFF7FFFFF,
        0x3F800000,  # 1
        0xBF800000,  # -1
        0x3F7FFFFF,  # 1 - ulp
        0xBF800001,  # -(1 + ulp)
        0x40C00000,  # 6
        0x40C00001,  # 6 + ulp
        0x34000000,  # 2**-23
        0x4B000000,  # 2**23
        0x5F000000,  # 2**63
        0x1F000000,  # 2**-65
        0x3EAAAAAB,  # 1/3
    ],
    np.uint32,
)
FLOAT32_EDGES = FLOAT32_EDGE_BITS.view(np.float32)


def litert(op: str, dtype: str, arrays: Sequence[np.ndarray], activation: str = "NONE", resolver: str = "ref"):
    """Run the single-operator model of `op` on `arrays` in LiteRT and return its output."""
    model = single_op_model(op, dtype, [a.shape for a in arrays], activation)
    interpreter = Interpreter(model_content=bytes(serialize(model)), experimental_op_resolver_type=RESOLVERS[resolver])
    interpreter.allocate_tensors()
    for detail, array in zip(interpreter.get_input_details(), arrays, strict=True):
        interpreter.set_tensor(detail["index"], np.asarray(array, order="C"))
    interpreter.invoke()
    return interpreter.get_tensor(interpreter.get_output_details()[0]["index"])


def random_float32(count: int, seed: int) -> np.ndarray:
    """Random bit patterns (every class of value) and random normals of varied scale."""
    rng = np.random.default_rng(seed)
    bits = rng.integers(0, 2**32, count, dtype=np.uint64).astype(np.uint32).view(np.float32)
    scaled = (rng.standard_normal(count) * 10.0 ** rng.integers(-40, 39, count)).astype(np.float32)
    return np.concatenate([bits, scaled])


def random_int32(count: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    wide = rng.integers(INT32_MIN, INT32_MAX, count, dtype=np.int64, endpoint=True).astype(np.int32)
    return np.where(rng.random(count) < 0.3, rng.choice(INT32_EDGES, count), wide).astype(np.int32)


def edge_pairs_float32() -> tuple[np.ndarray, np.ndarray]:
    """Every (edge, edge) pair, plus random values; both as flat float32 arrays of equal length."""
    pairs = np.array(list(itertools.product(FLOAT32_EDGE_BITS, repeat=2)), np.uint32)
    x = np.concatenate([pairs[:, 0].view(np.float32), random_float32(2000, 1)])
    y = np.concatenate([pairs[:, 1].view(np.float32), random_float32(2000, 2)])
    return x, y


def assert_bitwise(actual: np.ndarray, expected: np.ndarray, nan_payloads: bool) -> None:
    """Equal shapes and dtypes, every element's bits equal; with nan_payloads=False a NaN only needs a NaN."""
    assert actual.shape == expected.shape and actual.dtype == expected.dtype
    width = {1: np.uint8, 2: np.uint16, 4: np.uint32}[actual.dtype.itemsize]
    same = np.asarray(actual).view(width) == np.asarray(expected).view(width)
    if not nan_payloads:
        same |= np.isnan(actual) & np.isnan(expected)
    bad = np.flatnonzero(~same)
    assert bad.size == 0, (
        f"{bad.size} elements differ, first at {bad[:5]}: {actual.flat[bad[0]]!r} vs {expected.flat[bad[0]]!r}"
    )


BROADCAST_SHAPES = [
    ((), ()),
    ((), (5,)),
    ((7,), ()),
    ((2, 3), (3,)),
    ((2, 1, 4), (3, 1)),
    ((2, 3, 4, 5), (3, 1, 5)),
    ((1, 1, 1, 7), (2, 3, 5, 1)),
    ((4, 1, 3, 1), (1, 2, 1, 6)),
]


# --- INT32 comparisons and SELECT_V2 ---------------------------------------------------------------


@pytest.mark.parametrize("resolver", RESOLVERS)
@pytest.mark.parametrize("operator", list(comparisons.OPERATORS))
def test_int32_comparisons_match_litert_bitwise(operator: str, resolver: str) -> None:
    for index, (x_shape, y_shape) in enumerate(BROADCAST_SHAPES):
        x = random_int32(int(np.prod(x_shape)), index).reshape(x_shape)
        y = random_int32(int(np.prod(y_shape)), 100 + index).reshape(y_shape)
        if x.size > 1 and y.size > 1:  # some equal elements, so EQUAL and the *_EQUAL forms see both answers
            y.flat[::3] = x.flat[: len(y.flat[::3])]
        expected = litert(operator.lower(), "int32", [x, y], resolver=resolver)
        assert_bitwise(comparisons.reference(operator, x, y), expected.astype(np.bool_), nan_payloads=True)
    # Every pair of edge values, elementwise.
    x, y = (np.array(side, np.int32) for side in zip(*itertools.product(INT32_EDGES, repeat=2), strict=True))
    expected = litert(operator.lower(), "int32", [x, y], resolver=resolver)
    assert np.array_equal(comparisons.reference(operator, x, y), expected)


@pytest.mark.parametrize("resolver", RESOLVERS)
@pytest.mark.parametrize(
    "shapes",
    [
        ((), (), ()),
        ((4,), (), (4,)),
        ((2, 1, 3), (1, 4, 3), ()),
        ((1, 8, 8, 16), (1, 8, 8, 16), (1, 1, 1, 16)),
        ((2, 1, 2, 1, 3), (1, 2, 1, 2, 3), (3,)),
        ((2, 1, 2, 1, 2, 3), (2, 2, 1, 2, 1, 1), (1, 1, 1, 1, 2, 3)),
    ],
    ids=lambda shapes: "-".join("x".join(map(str, s)) or "scalar" for s in shapes),
)
def test_select_v2_matches_litert_bitwise(shapes: tuple[tuple[int, ...], ...], resolver: str) -> None:
    rng = np.random.default_rng(len(shapes[0]))
    condition = rng.integers(0, 2, shapes[0]).astype(np.bool_)
    x = random_int32(int(np.prod(shapes[1])), 1).reshape(shapes[1])
    y = random_int32(int(np.prod(shapes[2])), 2).reshape(shapes[2])
    expected = litert("select_v2", "int32", [condition, x, y], resolver=resolver)
    assert_bitwise(select.reference(condition, x, y), expected, nan_payloads=True)


# --- FP32 NEG, DIV, SQUARED_DIFFERENCE -------------------------------------------------------------


@pytest.mark.parametrize("resolver", RESOLVERS)
@pytest.mark.parametrize("shape", [(), (1,), (3, 5), (2, 3, 4, 5)], ids=str)
def test_fp32_neg_matches_litert_bitwise_with_nan_payloads(shape: tuple[int, ...], resolver: str) -> None:
    values = np.concatenate([FLOAT32_EDGES, random_float32(2000, 3)])
    count = int(np.prod(shape))
    # One element: every edge value on its own; more: the edge values and random ones, reshaped.
    chunks = [v.reshape(shape) for v in FLOAT32_EDGES] if count == 1 else [np.resize(values, count).reshape(shape)]
    for chunk in [*chunks, values]:
        assert_bitwise(neg.reference(chunk), litert("neg", "float32", [chunk], resolver=resolver), nan_payloads=True)


@pytest.mark.parametrize("resolver", RESOLVERS)
@pytest.mark.parametrize("activation", div.ACTIVATIONS)
def test_fp32_div_matches_litert_bitwise(activation: str, resolver: str) -> None:
    x, y = edge_pairs_float32()
    expected = litert("div", "float32", [x, y], activation, resolver=resolver)
    assert_bitwise(div.reference(x, y, activation), expected, nan_payloads=False)


@pytest.mark.parametrize("resolver", RESOLVERS)
@pytest.mark.parametrize("shapes", BROADCAST_SHAPES, ids=lambda s: f"{list(s[0])}/{list(s[1])}")
def test_fp32_div_broadcasting_keeps_operand_order(shapes: tuple[tuple[int, ...], ...], resolver: str) -> None:
    x = random_float32(int(np.prod(shapes[0])), 5)[: int(np.prod(shapes[0]))].reshape(shapes[0])
    y = random_float32(int(np.prod(shapes[1])), 6)[: int(np.prod(shapes[1]))].reshape(shapes[1])
    for numerator, denominator in ((x, y), (y, x)):
        expected = litert("div", "float32", [numerator, denominator], resolver=resolver)
        assert_bitwise(div.reference(numerator, denominator), expected, nan_payloads=False)


@pytest.mark.parametrize("resolver", RESOLVERS)
@pytest.mark.parametrize(
    "shapes", [((4096,), (4096,)), ((1, 1, 4, 8), (4, 8)), ((), (1, 1)), ((2, 1, 3, 1, 2, 2),) * 2]
)
def test_fp32_squared_difference_matches_litert_bitwise(shapes: tuple[tuple[int, ...], ...], resolver: str) -> None:
    if shapes[0] == (4096,):
        x, y = edge_pairs_float32()
    else:
        x = random_float32(int(np.prod(shapes[0])), 7)[: int(np.prod(shapes[0]))].reshape(shapes[0])
        y = random_float32(int(np.prod(shapes[1])), 8)[: int(np.prod(shapes[1]))].reshape(shapes[1])
    expected = litert("squared_difference", "float32", [x, y], resolver=resolver)
    assert_bitwise(squared_difference.reference(x, y), expected, nan_payloads=False)


# --- FP16 DIV: the document's widen-to-FP32-and-round reference ------------------------------------


def fp16_operands() -> tuple[np.ndarray, np.ndarray]:
    """Every half bit pattern as numerator against a set of denominators, and every pattern as denominator
    against a set of numerators (special values, subnormals, the limits, values near the clamp bounds)."""
    every = np.arange(2**16, dtype=np.uint32).astype(np.uint16).view(np.float16)
    chosen = np.array(
        [
            0.0,
            -0.0,
            np.inf,
            -np.inf,
            np.nan,
            1.0,
            -1.0,
            3.0,
            -7.0,
            0.1,
            6.0,
            65504.0,
            -65504.0,
            2.0**-24,
            2.0**-14,
            1e-3,
            0.5,
            300.0,
            1.0009765625,
        ],
        np.float16,
    )
    numerators = np.concatenate([np.tile(every, len(chosen)), np.repeat(chosen, len(every))])
    denominators = np.concatenate([np.repeat(chosen, len(every)), np.tile(every, len(chosen))])
    return numerators, denominators


@pytest.mark.parametrize("activation", div.ACTIVATIONS)
def test_fp16_div_matches_the_widened_fp32_reference(activation: str) -> None:
    x, y = fp16_operands()
    # The document's reference, from its rule: widen to FP32, LiteRT's FP32 DIV, round the output to half.
    with np.errstate(over="ignore"):
        reference = litert("div", "float32", [x.astype(np.float32), y.astype(np.float32)], activation).astype(
            np.float16
        )
    kernel = div.reference(x, y, activation)
    assert kernel.dtype == np.float16

    nan = np.isnan(reference)
    assert np.array_equal(np.isnan(kernel), nan), "NaN propagates through the clamp"
    overflow = np.isinf(reference)
    # A finite FP32 quotient beyond 65504 rounds to an infinite half in the reference; the route's clamp
    # saturates at the finite half limit instead (unbounded ends are finite dtype limits).
    assert np.array_equal(kernel[overflow], np.where(reference[overflow] > 0, 65504.0, -65504.0).astype(np.float16))
    assert (overflow.sum() > 0) == (activation in ("NONE", "RELU"))

    finite = ~nan & ~overflow
    kernel_bits, reference_bits = kernel.view(np.uint16), reference.view(np.uint16)
    differs = finite & (kernel_bits != reference_bits)
    if activation in ("RELU", "RELU6"):
        # The documented difference: heliaCORE's FP16 clamp turns -0 into +0, LiteRT's FP32 reference keeps it.
        assert np.all(reference_bits[differs] == 0x8000) and np.all(kernel_bits[differs] == 0x0000)
        assert differs.sum() > 0
    else:
        assert differs.sum() == 0, f"first differing index {np.flatnonzero(differs)[:5]}"


def test_fp16_neg_matches_litert_on_widened_values() -> None:
    every = np.arange(2**16, dtype=np.uint32).astype(np.uint16).view(np.float16)
    widened = litert("neg", "float32", [every.astype(np.float32)]).astype(np.float16)
    kernel = neg.reference(every)
    numbers = ~np.isnan(every)
    assert np.array_equal(kernel.view(np.uint16)[numbers], widened.view(np.uint16)[numbers])
    assert np.array_equal(np.isnan(kernel), np.isnan(every))
