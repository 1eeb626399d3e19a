"""AOT operator contracts: every admission rule admitted and refused with its message, and the numpy
references' own promises (sign-bit NEG, the DIV clamp, FP16 rounding) checked against exact arithmetic.
Parity with LiteRT is in test_kernels_operators_litert.py."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from heliabuild.errors import HeliaError, KernelError
from heliabuild.kernels.operators import (
    CORTEX_M4,
    CORTEX_M55,
    RULES,
    AdmissionError,
    TensorSpec,
    admit,
    comparisons,
    div,
    neg,
    require,
    select,
    squared_difference,
)

INT32_MAX = 2**31 - 1


def T(dtype: str, *shape: int, quantized: bool = False) -> TensorSpec:
    return TensorSpec(dtype, tuple(shape), quantized)


# (operator, inputs, outputs, activation, target) that each route admits.
ADMITTED = {
    "comparison-broadcast-rank4": ("GREATER", [T("int32", 2, 3, 4, 5), T("int32", 3, 1, 5)], [T("bool", 2, 3, 4, 5)]),
    "comparison-scalars": ("EQUAL", [T("int32"), T("int32")], [T("bool")]),
    "comparison-scalar-vector": ("LESS_EQUAL", [T("int32"), T("int32", 4)], [T("bool", 4)]),
    "comparison-zero-extent": ("NOT_EQUAL", [T("int32", 0, 3), T("int32", 1, 3)], [T("bool", 0, 3)]),
    "comparison-count-at-limit": (
        "LESS",
        [T("int32", INT32_MAX // 4), T("int32")],
        [T("bool", INT32_MAX // 4)],
    ),
    "select-broadcast": (
        "SELECT_V2",
        [T("bool", 2, 1, 3), T("int32", 1, 4, 3), T("int32")],
        [T("int32", 2, 4, 3)],
    ),
    "select-rank8": (
        "SELECT_V2",
        [T("bool", 2, 1, 1, 1, 1, 1, 1, 3), T("int32", 1, 2, 1, 1, 1, 1, 2, 1), T("int32", 3)],
        [T("int32", 2, 2, 1, 1, 1, 1, 2, 3)],
    ),
    "select-bytes-at-limit": (
        "SELECT_V2",
        [T("bool", INT32_MAX // 4), T("int32", INT32_MAX // 4), T("int32")],
        [T("int32", INT32_MAX // 4)],
    ),
    "div-flat-rank5": ("DIV", [T("float32", 2, 3, 4, 5, 6)] * 2, [T("float32", 2, 3, 4, 5, 6)]),
    "div-broadcast-rank4": ("DIV", [T("float32", 1, 8, 8, 16), T("float32", 1, 1, 1, 16)], [T("float32", 1, 8, 8, 16)]),
    "div-scalar-numerator": ("DIV", [T("float32"), T("float32", 2, 3)], [T("float32", 2, 3)]),
    "div-fp16-m55": ("DIV", [T("float16", 4), T("float16", 4)], [T("float16", 4)], "RELU6", CORTEX_M55),
    "div-relu-code": ("DIV", [T("float32", 4)] * 2, [T("float32", 4)], 1),
    "div-relu-n1": ("DIV", [T("float32", 4)] * 2, [T("float32", 4)], "RELU_N1_TO_1"),
    "div-bytes-at-limit": ("DIV", [T("float16", 2**30 - 1)] * 2, [T("float16", 2**30 - 1)], "NONE", CORTEX_M55),
    "neg-scalar": ("NEG", [T("float32")], [T("float32")]),
    "neg-rank7": ("NEG", [T("float32", 1, 2, 1, 2, 1, 2, 3)], [T("float32", 1, 2, 1, 2, 1, 2, 3)]),
    "neg-fp16-m55": ("NEG", [T("float16", 3, 3)], [T("float16", 3, 3)], "NONE", CORTEX_M55),
    "sqd-equal": ("SQUARED_DIFFERENCE", [T("float32", 2, 3)] * 2, [T("float32", 2, 3)]),
    "sqd-scalars": ("SQUARED_DIFFERENCE", [T("float32")] * 2, [T("float32")]),
    "sqd-leading-ones": (
        "SQUARED_DIFFERENCE",
        [T("float32", 1, 1, 8, 16), T("float32", 8, 16)],
        [T("float32", 1, 1, 8, 16)],
    ),
    "sqd-scalar-vs-ones": ("SQUARED_DIFFERENCE", [T("float32"), T("float32", 1, 1)], [T("float32", 1, 1)]),
    "sqd-rank6-identical": (
        "SQUARED_DIFFERENCE",
        [T("float32", 2, 1, 3, 1, 2, 2)] * 2,
        [T("float32", 2, 1, 3, 1, 2, 2)],
    ),
    "sqd-fp16-m55": ("SQUARED_DIFFERENCE", [T("float16", 5)] * 2, [T("float16", 5)], "NONE", CORTEX_M55),
}

# id -> (operator, inputs, outputs, activation, target, rule, fragments of the message)
REFUSED = {
    "comparison-arity": ("EQUAL", [T("int32")], [T("bool")], "comparison.arity", ["1 inputs and 1 outputs"]),
    "comparison-int8": (
        "GREATER",
        [T("int8", 4, quantized=True), T("int8", 4, quantized=True)],
        [T("bool", 4)],
        "comparison.int32",
        ["input x is int8, expected int32", "quantized route"],
    ),
    "comparison-float": ("LESS", [T("int32", 4), T("float32", 4)], [T("bool", 4)], "comparison.int32", ["input y"]),
    "comparison-quantized": (
        "EQUAL",
        [T("int32", 4), T("int32", 4, quantized=True)],
        [T("bool", 4)],
        "comparison.unquantized",
        ["input y is quantized"],
    ),
    "comparison-dynamic": (
        "EQUAL",
        [T("int32", -1, 4), T("int32", 4)],
        [T("bool", -1, 4)],
        "comparison.static-shape",
        ["[-1, 4]"],
    ),
    "comparison-rank5": (
        "EQUAL",
        [T("int32", 1, 2, 3, 4, 5), T("int32")],
        [T("bool", 1, 2, 3, 4, 5)],
        "comparison.rank",
        ["x has rank 5", "scalar through rank 4"],
    ),
    "comparison-broadcast": (
        "EQUAL",
        [T("int32", 2, 3), T("int32", 4, 3)],
        [T("bool", 4, 3)],
        "comparison.broadcast",
        ["[2, 3] and [4, 3] do not broadcast"],
    ),
    "comparison-count": (
        "GREATER_EQUAL",
        [T("int32", INT32_MAX // 4 + 1), T("int32")],
        [T("bool", INT32_MAX // 4 + 1)],
        "comparison.output-count",
        ["536870912 elements", "INT32_MAX / 4 (536870911)"],
    ),
    "comparison-int-output": (
        "EQUAL",
        [T("int32", 4)] * 2,
        [T("int32", 4)],
        "comparison.bool-output",
        ["output is int32"],
    ),
    "comparison-output-shape": (
        "EQUAL",
        [T("int32"), T("int32")],
        [T("bool", 1)],
        "comparison.output-shape",
        ["[1] is not the broadcast shape scalar"],
    ),
    "select-arity": ("SELECT_V2", [T("bool", 2), T("int32", 2)], [T("int32", 2)], "select_v2.arity", ["2 inputs"]),
    "select-condition": (
        "SELECT_V2",
        [T("int32", 2), T("int32", 2), T("int32", 2)],
        [T("int32", 2)],
        "select_v2.condition-bool",
        ["condition is int32, expected bool"],
    ),
    "select-float": (
        "SELECT_V2",
        [T("bool", 2), T("float32", 2), T("int32", 2)],
        [T("int32", 2)],
        "select_v2.int32",
        ["x is float32, expected int32"],
    ),
    "select-float-output": (
        "SELECT_V2",
        [T("bool", 2), T("int32", 2), T("int32", 2)],
        [T("float32", 2)],
        "select_v2.int32",
        ["output is float32"],
    ),
    "select-rank9": (
        "SELECT_V2",
        [T("bool", *[1] * 9), T("int32"), T("int32")],
        [T("int32", *[1] * 9)],
        "select_v2.rank",
        ["condition has rank 9, expected at most 8"],
    ),
    "select-zero-dim": (
        "SELECT_V2",
        [T("bool", 2, 0), T("int32", 2, 0), T("int32")],
        [T("int32", 2, 0)],
        "select_v2.positive-dims",
        ["condition shape [2, 0]", "not a positive static value"],
    ),
    "select-broadcast": (
        "SELECT_V2",
        [T("bool", 2), T("int32", 3), T("int32")],
        [T("int32", 3)],
        "select_v2.broadcast",
        ["[2], [3], scalar do not broadcast"],
    ),
    "select-output-shape": (
        "SELECT_V2",
        [T("bool", 2, 1), T("int32", 3), T("int32")],
        [T("int32", 3)],
        "select_v2.output-shape",
        ["not the broadcast shape [2, 3]"],
    ),
    "select-bytes": (
        "SELECT_V2",
        [T("bool", INT32_MAX // 4 + 1), T("int32"), T("int32")],
        [T("int32", INT32_MAX // 4 + 1)],
        "select_v2.byte-count",
        ["output int32 [536870912] holds 2147483648 bytes", "INT32_MAX"],
    ),
    "div-arity": ("DIV", [T("float32", 2)], [T("float32", 2)], "div.arity", ["1 inputs"]),
    "div-int32": (
        "DIV",
        [T("int32", 2)] * 2,
        [T("int32", 2)],
        "div.integer",
        ["int32 operands", "integer DIV is not supported"],
    ),
    "div-int8": ("DIV", [T("int8", 2, quantized=True)] * 2, [T("int8", 2)], "div.integer", ["int8 operands"]),
    "div-float64": ("DIV", [T("float64", 2)] * 2, [T("float64", 2)], "div.dtype", ["dtype float64, expected float32"]),
    "div-bfloat16": ("DIV", [T("bfloat16", 2)] * 2, [T("bfloat16", 2)], "div.dtype", ["bfloat16"]),
    "div-mixed": (
        "DIV",
        [T("float32", 2), T("float16", 2)],
        [T("float32", 2)],
        "div.same-dtype",
        ["float32, float16, float32 differ"],
    ),
    "div-fp16-output": ("DIV", [T("float32", 2)] * 2, [T("float16", 2)], "div.same-dtype", ["share one dtype"]),
    "div-fp16-m4": (
        "DIV",
        [T("float16", 2)] * 2,
        [T("float16", 2)],
        "div.fp16-target",
        ["float16 on target cortex-m4", "M55-class"],
    ),
    "div-zero-extent": (
        "DIV",
        [T("float32", 0, 2)] * 2,
        [T("float32", 0, 2)],
        "div.static-extents",
        ["numerator shape [0, 2]"],
    ),
    "div-dynamic": (
        "DIV",
        [T("float32", 2), T("float32", -1)],
        [T("float32", 2)],
        "div.static-extents",
        ["denominator"],
    ),
    "div-rank5-broadcast": (
        "DIV",
        [T("float32", 1, 2, 3, 4, 5), T("float32", 5)],
        [T("float32", 1, 2, 3, 4, 5)],
        "div.layout",
        ["differ at rank 5", "scalar through rank 4"],
    ),
    "div-no-broadcast": (
        "DIV",
        [T("float32", 2, 3), T("float32", 3, 2)],
        [T("float32", 2, 3)],
        "div.layout",
        ["[2, 3] and [3, 2] do not broadcast"],
    ),
    "div-output-shape": (
        "DIV",
        [T("float32", 2, 3), T("float32")],
        [T("float32", 3, 2)],
        "div.output-shape",
        ["[3, 2]"],
    ),
    "div-bytes": (
        "DIV",
        [T("float32", 2**29)] * 2,
        [T("float32", 2**29)],
        "div.byte-count",
        ["numerator float32 [536870912] holds 2147483648 bytes"],
    ),
    "div-tanh": ("DIV", [T("float32", 2)] * 2, [T("float32", 2)], "div.activation", ["fused activation TANH"], "TANH"),
    "div-sign-bit-code": ("DIV", [T("float32", 2)] * 2, [T("float32", 2)], "div.activation", ["SIGN_BIT"], 5),
    "neg-arity": ("NEG", [T("float32", 2)] * 2, [T("float32", 2)], "neg.arity", ["2 inputs"]),
    "neg-int32": ("NEG", [T("int32", 2)], [T("int32", 2)], "neg.integer", ["integer NEG is not supported"]),
    "neg-float64": ("NEG", [T("float64", 2)], [T("float64", 2)], "neg.dtype", ["float64"]),
    "neg-mixed": ("NEG", [T("float16", 2)], [T("float32", 2)], "neg.same-dtype", ["differ"]),
    "neg-fp16-m4": ("NEG", [T("float16", 2)], [T("float16", 2)], "neg.fp16-target", ["cortex-m4"]),
    "neg-zero": ("NEG", [T("float32", 3, 0)], [T("float32", 3, 0)], "neg.static-extents", ["[3, 0]"]),
    "neg-shape": (
        "NEG",
        [T("float32", 1, 6)],
        [T("float32", 6)],
        "neg.same-shape",
        ["[6] differs from input shape [1, 6]"],
    ),
    "neg-bytes": ("NEG", [T("float32", 2**29)], [T("float32", 2**29)], "neg.byte-count", ["2147483648 bytes"]),
    "sqd-arity": ("SQUARED_DIFFERENCE", [T("float32")], [T("float32")], "squared_difference.arity", ["1 inputs"]),
    "sqd-int32": (
        "SQUARED_DIFFERENCE",
        [T("int32", 2)] * 2,
        [T("int32", 2)],
        "squared_difference.dtype",
        ["dtype int32", "integer route"],
    ),
    "sqd-mixed": (
        "SQUARED_DIFFERENCE",
        [T("float32"), T("float16")],
        [T("float32")],
        "squared_difference.same-dtype",
        ["differ"],
    ),
    "sqd-fp16-m4": (
        "SQUARED_DIFFERENCE",
        [T("float16")] * 2,
        [T("float16")],
        "squared_difference.fp16-target",
        ["FP16"],
    ),
    "sqd-zero": (
        "SQUARED_DIFFERENCE",
        [T("float32", 0)] * 2,
        [T("float32", 0)],
        "squared_difference.static-extents",
        ["[0]"],
    ),
    "sqd-broadcast": (
        "SQUARED_DIFFERENCE",
        [T("float32", 1, 8, 8, 16), T("float32", 1, 1, 1, 16)],
        [T("float32", 1, 8, 8, 16)],
        "squared_difference.layout",
        ["float broadcasting is rejected"],
    ),
    "sqd-scalar-broadcast": (
        "SQUARED_DIFFERENCE",
        [T("float32"), T("float32", 4)],
        [T("float32", 4)],
        "squared_difference.layout",
        ["scalar and [4]"],
    ),
    "sqd-rank5-ones": (
        "SQUARED_DIFFERENCE",
        [T("float32", 1, 2, 3, 4, 5), T("float32", 2, 3, 4, 5)],
        [T("float32", 1, 2, 3, 4, 5)],
        "squared_difference.layout",
        ["above rank 4 the shapes must be identical"],
    ),
    "sqd-output-shape": (
        "SQUARED_DIFFERENCE",
        [T("float32", 1, 4), T("float32", 4)],
        [T("float32", 4)],
        "squared_difference.output-shape",
        ["[4] is not the operands' shape [1, 4]"],
    ),
    "sqd-bytes": (
        "SQUARED_DIFFERENCE",
        [T("float32", 2**29)] * 2,
        [T("float32", 2**29)],
        "squared_difference.byte-count",
        ["2147483648 bytes"],
    ),
    "unknown-operator": ("ADD", [T("float32")] * 2, [T("float32")], "operator.unsupported", ["no operator contract"]),
    "activation-on-neg": (
        "NEG",
        [T("float32")],
        [T("float32")],
        "operator.activation",
        ["fused activation RELU"],
        "RELU",
    ),
}


@pytest.mark.parametrize("case", ADMITTED, ids=str)
def test_admitted(case: str) -> None:
    operator, inputs, outputs, *rest = ADMITTED[case]
    activation = rest[0] if rest else "NONE"
    target = rest[1] if len(rest) > 1 else CORTEX_M4
    assert admit(operator, inputs, outputs, activation=activation, target=target) is None
    require(admit(operator.lower(), inputs, outputs, activation=activation, target=target))


@pytest.mark.parametrize("case", REFUSED, ids=str)
def test_refused_with_the_rule_and_a_message(case: str) -> None:
    operator, inputs, outputs, rule, fragments, *rest = REFUSED[case]
    activation = rest[0] if rest else "NONE"
    refusal = admit(operator, inputs, outputs, activation=activation, target=CORTEX_M4)
    assert refusal is not None, case
    assert refusal.rule == rule, refusal
    assert refusal.message.startswith(f"{operator}: ")
    for fragment in fragments:
        assert fragment in refusal.message, (fragment, refusal.message)
    with pytest.raises(AdmissionError) as caught:
        require(refusal)
    assert isinstance(caught.value, KernelError) and isinstance(caught.value, HeliaError)
    assert caught.value.refusal is refusal and f"[{rule}]" in str(caught.value)


def test_a_comparison_route_refuses_other_operators() -> None:
    refusal = comparisons.admit("MAXIMUM", [T("int32")] * 2, [T("bool")])
    assert refusal is not None and refusal.rule == "comparison.operator"
    assert refusal.message == "MAXIMUM: not a comparison; expected one of " + ", ".join(comparisons.OPERATORS)


def test_every_rule_is_refused_by_some_case() -> None:
    refused_rules = {case[3] for case in REFUSED.values()} | {"comparison.operator"}
    assert refused_rules == set(RULES) | {"operator.unsupported", "operator.activation"}


@pytest.mark.parametrize("operator", list(comparisons.OPERATORS))
def test_every_comparison_is_admitted_on_int32(operator: str) -> None:
    assert comparisons.admit(operator, [T("int32", 2, 1), T("int32", 3)], [T("bool", 2, 3)]) is None


def test_fp16_routes_follow_the_target_capability() -> None:
    for module, inputs in (
        (div, [T("float16", 4)] * 2),
        (neg, [T("float16", 4)]),
        (squared_difference, [T("float16", 4)] * 2),
    ):
        assert module.admit(inputs, [T("float16", 4)], target=CORTEX_M55) is None
        refusal = module.admit(inputs, [T("float16", 4)], target=CORTEX_M4)
        assert refusal is not None and refusal.rule.endswith(".fp16-target")
        assert module.admit([T("float32", 4)] * len(inputs), [T("float32", 4)], target=CORTEX_M4) is None


def test_tensor_spec_of_an_array() -> None:
    assert TensorSpec.of(np.zeros((2, 3), np.float16)) == T("float16", 2, 3)
    assert T("int32", 2, 3).byte_count == 24 and T("bool").element_count == 1


# --- references: their own promises, against exact arithmetic --------------------------------------

FORMATS = {np.float16: (11, -14, 65504.0), np.float32: (24, -126, float(np.finfo(np.float32).max))}


def round_exact(value: Fraction, dtype: type) -> float:
    """`value` rounded to nearest-even in `dtype` (significand bits, minimum exponent, largest finite value)
    from exact rational arithmetic: independent of numpy's and the CPU's float arithmetic."""
    bits, min_exponent, largest = FORMATS[dtype]
    if value == 0:
        return 0.0
    magnitude = abs(value)
    exponent = magnitude.numerator.bit_length() - magnitude.denominator.bit_length()
    if Fraction(2) ** exponent > magnitude:
        exponent -= 1
    quantum = Fraction(2) ** (max(exponent, min_exponent) - (bits - 1))
    scaled = magnitude / quantum
    whole = scaled.numerator // scaled.denominator
    remainder = scaled - whole
    if remainder > Fraction(1, 2) or (remainder == Fraction(1, 2) and whole % 2 == 1):
        whole += 1
    result = whole * quantum
    rounded = float("inf") if result > largest else float(result)
    return rounded if value > 0 else -rounded


def _finite_sample(dtype: type, count: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    width = np.uint16 if dtype == np.float16 else np.uint32
    bits = rng.integers(0, np.iinfo(width).max, count, dtype=np.uint64, endpoint=True).astype(width)
    values = bits.view(dtype)
    return values[np.isfinite(values)]


@pytest.mark.parametrize("dtype", [np.float16, np.float32], ids=["fp16", "fp32"])
def test_squared_difference_rounds_the_difference_then_the_square(dtype: type) -> None:
    x = _finite_sample(dtype, 1500, 1)
    y = _finite_sample(dtype, 1500, 2)
    x, y = x[: min(len(x), len(y))], y[: min(len(x), len(y))].copy()
    y[:300] = np.nextafter(x[:300], dtype(np.inf))  # neighbours: tiny (often subnormal) differences
    result = squared_difference.reference(x, y)
    assert result.dtype == dtype
    for a, b, got in zip(x.tolist(), y.tolist(), result.tolist(), strict=True):
        difference = round_exact(Fraction(a) - Fraction(b), dtype)
        expected = float("inf") if np.isinf(difference) else round_exact(Fraction(difference) ** 2, dtype)
        assert got == expected, (a, b, got, expected)


def test_fp16_squared_difference_is_not_a_single_rounding() -> None:
    """The contract's two roundings differ from rounding the exact square once; the reference keeps them."""
    x = _finite_sample(np.float16, 4000, 3)
    y = _finite_sample(np.float16, 4000, 4)[: len(x)]
    x = x[: len(y)]
    with np.errstate(over="ignore"):
        once = ((x.astype(np.float64) - y.astype(np.float64)) ** 2).astype(np.float16)
    assert np.any(squared_difference.reference(x, y) != once)


def test_fp16_div_quotient_is_correctly_rounded_before_the_clamp() -> None:
    x = _finite_sample(np.float16, 3000, 5)
    y = _finite_sample(np.float16, 3000, 6)[: len(x)]
    x = x[: len(y)]
    keep = y != 0
    x, y = x[keep], y[keep]
    result = div.reference(x, y, "NONE")
    for a, b, got in zip(x.tolist(), y.tolist(), result.tolist(), strict=True):
        quotient = round_exact(Fraction(a) / Fraction(b), np.float16)
        expected = max(-65504.0, min(65504.0, quotient))
        assert got == expected or (got == 0 and expected == 0), (a, b, got, expected)


def test_div_unbounded_ends_are_finite_dtype_limits() -> None:
    for dtype, limit in ((np.float32, float(np.finfo(np.float32).max)), (np.float16, 65504.0)):
        x = np.array([1, -1, 0, 3, 1e4, -2], dtype)
        y = np.array([0, 0, 0, np.inf, 1e-4, 0], dtype)
        none = div.reference(x, y, "NONE").astype(np.float64)
        assert none[0] == limit and none[1] == -limit and np.isnan(none[2]) and none[3] == 0
        assert none[5] == -limit
        relu = div.reference(x, y, "RELU").astype(np.float64)
        assert relu[0] == limit and relu[1] == 0 and np.isnan(relu[2])
    assert div.activation_bounds("RELU6", "float16") == (0.0, 6.0)
    assert div.activation_bounds("RELU_N1_TO_1", "float32") == (-1.0, 1.0)
    assert div.activation_bounds(0, "float32") == (-div.FLT_MAX, div.FLT_MAX)


def test_div_nan_propagates_through_every_clamp_with_its_payload() -> None:
    payload = np.array([0x7FC12345, 0xFFC00001], np.uint32).view(np.float32)
    for activation in div.ACTIVATIONS:
        result = div.reference(payload, np.ones(2, np.float32), activation)
        assert np.all(np.isnan(result))
        assert np.array_equal(div.clamp(payload, 0.0, 6.0).view(np.uint32), payload.view(np.uint32))


@pytest.mark.parametrize(
    ("dtype", "activation", "sign"),
    [
        (np.float16, "RELU", 0),
        (np.float16, "RELU6", 0),
        (np.float16, "RELU_N1_TO_1", 1),
        (np.float16, "NONE", 1),
        (np.float32, "RELU", 1),
        (np.float32, "RELU6", 1),
    ],
)
def test_div_signed_zero_under_the_clamp(dtype: type, activation: str, sign: int) -> None:
    """FP16 RELU/RELU6 turn -0 into +0 (heliaCORE's FP16 clamp); elsewhere -0 keeps its sign."""
    result = div.reference(np.array([-0.0, 0.0], dtype), np.array([1.0, -1.0], dtype), activation)
    assert result.dtype == dtype
    assert list(np.signbit(result).astype(int)) == [sign, sign]


def test_neg_toggles_only_the_sign_bit_of_every_fp16_pattern() -> None:
    every = np.arange(2**16, dtype=np.uint32).astype(np.uint16)
    assert np.array_equal(neg.reference(every.view(np.float16)).view(np.uint16), every ^ np.uint16(0x8000))


def test_neg_fp32_keeps_subnormals_nan_payloads_and_swaps_zeros() -> None:
    bits = np.array([0, 0x80000000, 1, 0x807FFFFF, 0x7FA00001, 0xFFC12345, 0x7F800000, 0x3F800000], np.uint32)
    result = neg.reference(bits.view(np.float32)).view(np.uint32)
    assert list(result) == [int(b) ^ 0x80000000 for b in bits]
    scalar = neg.reference(np.array(2.5, np.float32))
    assert scalar.shape == () and float(scalar) == -2.5


def test_comparisons_use_full_32_bit_width() -> None:
    """2**24 and 2**24 + 1 are one float32: a float comparison would call them equal."""
    x = np.array([2**24, INT32_MAX, -(2**31), -1], np.int32)
    y = np.array([2**24 + 1, INT32_MAX - 1, -(2**31) + 1, -1], np.int32)
    for operator, function in comparisons.OPERATORS.items():
        expected = [function(int(a), int(b)) for a, b in zip(x, y, strict=True)]
        assert comparisons.reference(operator, x, y).tolist() == expected


def test_select_copies_values_exactly_through_rank_8() -> None:
    rng = np.random.default_rng(9)
    condition = rng.integers(0, 2, (2, 1, 2, 1, 1, 2, 1, 3)).astype(bool)
    x = rng.integers(-(2**31), 2**31, (1, 2, 1, 1, 2, 1, 1, 3), dtype=np.int64).astype(np.int32)
    y = np.array(-(2**31), np.int32)
    result = select.reference(condition, x, y)
    assert result.shape == (2, 2, 2, 1, 2, 2, 1, 3) and result.dtype == np.int32
    full_x = np.broadcast_to(x, result.shape)
    assert np.array_equal(result, np.where(np.broadcast_to(condition, result.shape), full_x, -(2**31)))


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: comparisons.reference("EQUAL", np.zeros(2, np.int64), np.zeros(2, np.int32)), "expected int32"),
        (lambda: comparisons.reference("ADD", np.zeros(2, np.int32), np.zeros(2, np.int32)), "unknown operator"),
        (lambda: select.reference(np.zeros(2, np.int32), np.zeros(2, np.int32), np.zeros(2, np.int32)), "bool"),
        (lambda: div.reference(np.zeros(2, np.int32), np.ones(2, np.int32)), "expected float32 or float16"),
        (lambda: div.reference(np.zeros(2, np.float32), np.ones(2, np.float16)), "expected float32 or float16"),
        (lambda: div.reference(np.zeros(2, np.float32), np.ones(2, np.float32), "TANH"), "TANH"),
        (lambda: neg.reference(np.zeros(2, np.int32)), "expected float32 or float16"),
        (lambda: squared_difference.reference(np.zeros(2, np.float64), np.zeros(2, np.float64)), "float64"),
    ],
)
def test_references_refuse_dtypes_outside_their_route(call, message: str) -> None:
    with pytest.raises(KernelError, match=message):
        call()
