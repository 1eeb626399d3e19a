"""The LUT and arithmetic-heavy int8 C kernels (LOGISTIC, TANH, EXP, HARD_SWISH, RSQRT, SQUARED_DIFFERENCE), byte
for byte against LiteRT's reference kernels (BUILTIN_REF) on single-operator models, and their refusals."""

from __future__ import annotations

import ctypes
from pathlib import Path

import numpy as np
import pytest
from helpers.int8_math_models import squared_difference_model, unary_model
from helpers.int8_models import run_reference
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from test_kernels_int8_elementwise import broadcast_shapes, quants

from heliabuild.kernels import int8_math
from heliabuild.kernels.int8 import _I8, Int8KernelError, Quant, _pointer
from heliabuild.kernels.int8_math import (
    LOGISTIC_OUTPUT,
    TANH_OUTPUT,
    HardSwishArgs,
    Int8MathKernels,
    LookupArgs,
    RsqrtArgs,
    hard_swish_params,
    lookup_table,
    rsqrt_params,
    squared_difference_params,
)
from heliabuild.kernels.native import Status, load_host_library

SEED = st.integers(0, 2**32 - 1)
EVERY_CODE = np.arange(-128, 128, dtype=np.int8)


@pytest.fixture(scope="module")
def kernels(host_kernel_library: Path) -> Int8MathKernels:
    return Int8MathKernels(load_host_library(host_kernel_library))


@st.composite
def shapes(draw: st.DrawFn) -> tuple[int, ...]:
    return tuple(draw(st.lists(st.integers(1, 6), min_size=1, max_size=4)))


def _codes(seed: int, shape: tuple[int, ...], low: int = -128) -> np.ndarray:
    """Random codes of `shape`, with every code in [low, 127] present when the tensor is large enough."""
    rng = np.random.default_rng(seed)
    flat = rng.integers(low, 128, size=int(np.prod(shape)), dtype=np.int8)
    every = np.arange(low, 128, dtype=np.int8)
    flat[: min(flat.size, every.size)] = rng.permutation(every)[: flat.size]
    return flat.reshape(shape)


@pytest.mark.parametrize("operator", ["LOGISTIC", "TANH"])
@settings(max_examples=150)
@given(input_quant=quants(1e-3, 2.0))
def test_logistic_and_tanh_are_bit_exact_over_every_code(
    kernels: Int8MathKernels, operator: str, input_quant: Quant
) -> None:
    output_quant = LOGISTIC_OUTPUT if operator == "LOGISTIC" else TANH_OUTPUT
    expected = run_reference(unary_model(operator, EVERY_CODE.shape, input_quant, output_quant), [EVERY_CODE])
    table = lookup_table(operator, input_quant, output_quant)
    assert kernels.lookup(table, EVERY_CODE).tobytes() == expected.tobytes()


@settings(max_examples=150)
@given(input_quant=quants(1e-3, 2.0), output_quant=quants(1e-3, 4.0))
def test_exp_is_bit_exact_over_every_code(kernels: Int8MathKernels, input_quant: Quant, output_quant: Quant) -> None:
    expected = run_reference(unary_model("EXP", EVERY_CODE.shape, input_quant, output_quant), [EVERY_CODE])
    table = lookup_table("EXP", input_quant, output_quant)
    assert kernels.lookup(table, EVERY_CODE).tobytes() == expected.tobytes()


@pytest.mark.parametrize("operator", ["LOGISTIC", "TANH", "EXP", "HARD_SWISH"])
@settings(max_examples=40)
@given(shape=shapes(), input_quant=quants(), output_quant=quants(), seed=SEED)
def test_element_wise_kernels_are_bit_exact_at_any_shape(
    kernels: Int8MathKernels, operator: str, shape: tuple[int, ...], input_quant: Quant, output_quant: Quant, seed: int
) -> None:
    output_quant = {"LOGISTIC": LOGISTIC_OUTPUT, "TANH": TANH_OUTPUT}.get(operator, output_quant)
    assume(operator != "HARD_SWISH" or output_quant.scale > input_quant.scale / 128)
    x = _codes(seed, shape)
    expected = run_reference(unary_model(operator, shape, input_quant, output_quant), [x])
    if operator == "HARD_SWISH":
        found = kernels.hard_swish(hard_swish_params(input_quant, output_quant), x)
    else:
        found = kernels.lookup(lookup_table(operator, input_quant, output_quant), x)
    assert found.tobytes() == expected.tobytes()


@settings(max_examples=200)
@given(input_quant=quants(1e-3, 1.0), output_quant=quants(1e-3, 1.0))
def test_hard_swish_is_bit_exact_over_every_code(
    kernels: Int8MathKernels, input_quant: Quant, output_quant: Quant
) -> None:
    model = unary_model("HARD_SWISH", EVERY_CODE.shape, input_quant, output_quant)
    try:
        params = hard_swish_params(input_quant, output_quant)
    except Int8KernelError:
        # Only an output scale below input scale / 128 (a multiplier of one or more), which LiteRT refuses too.
        assert output_quant.scale <= input_quant.scale / 128
        with pytest.raises(RuntimeError):
            run_reference(model, [EVERY_CODE])
        return
    expected = run_reference(model, [EVERY_CODE])
    assert kernels.hard_swish(params, EVERY_CODE).tobytes() == expected.tobytes()


@settings(max_examples=200)
@given(input_quant=quants(1e-3, 1.0), output_quant=quants(1e-3, 1.0))
def test_rsqrt_is_bit_exact_over_every_code_it_is_defined_for(
    kernels: Int8MathKernels, input_quant: Quant, output_quant: Quant
) -> None:
    x = np.arange(input_quant.zero_point, 128, dtype=np.int8)
    expected = run_reference(unary_model("RSQRT", x.shape, input_quant, output_quant), [x])
    assert kernels.rsqrt(rsqrt_params(input_quant, output_quant), x).tobytes() == expected.tobytes()


def test_rsqrt_of_a_negative_real_is_the_largest_code_where_litert_refuses_to_invoke(kernels: Int8MathKernels) -> None:
    quant = Quant(0.05, 10)
    x = np.array([9, -128, 10, 11], np.int8)
    with pytest.raises(RuntimeError, match="Rsqrt is only defined for positive values"):
        run_reference(unary_model("RSQRT", x.shape, quant, Quant(0.1, 0)), [x])
    found = kernels.rsqrt(rsqrt_params(quant, Quant(0.1, 0)), x)
    assert found[:3].tolist() == [127, 127, 127]
    assert found[3] == run_reference(unary_model("RSQRT", (1,), quant, Quant(0.1, 0)), [x[3:]])[0]


@settings(max_examples=200)
@given(pair=broadcast_shapes(), quant1=quants(), quant2=quants(), output_quant=quants(1e-3, 2.0), seed=SEED)
def test_squared_difference_is_bit_exact_with_broadcasting(
    kernels: Int8MathKernels,
    pair: tuple[tuple[int, ...], tuple[int, ...]],
    quant1: Quant,
    quant2: Quant,
    output_quant: Quant,
    seed: int,
) -> None:
    try:
        params = squared_difference_params(quant1, quant2, output_quant)
    except Int8KernelError:
        assert (2 * max(quant1.scale, quant2.scale)) ** 2 / 2**14 >= output_quant.scale * (1 - 1e-6)
        return
    a, b = _codes(seed, pair[0]), _codes(seed + 1, pair[1])
    expected = run_reference(squared_difference_model(a.shape, b.shape, quant1, quant2, output_quant), [a, b])
    assert kernels.binary("squared_difference", params, a, b).tobytes() == expected.tobytes()


def test_lookup_tables_of_logistic_and_tanh_need_litert_output_quantization() -> None:
    with pytest.raises(Int8KernelError, match="LOGISTIC: output quantization"):
        lookup_table("LOGISTIC", Quant(0.1, 0), Quant(1 / 128, 0))
    with pytest.raises(Int8KernelError, match="TANH: output quantization"):
        lookup_table("TANH", Quant(0.1, 0), LOGISTIC_OUTPUT)
    with pytest.raises(Int8KernelError, match="not one of LOGISTIC, TANH, EXP"):
        lookup_table("GELU", Quant(0.1, 0), Quant(0.1, 0))


def test_parameters_no_kernel_represents_are_refused_by_name() -> None:
    with pytest.raises(Int8KernelError, match=r"rsqrt: .* below 2\^-12"):
        rsqrt_params(Quant(1000.0, 0), Quant(1000.0, 0))
    with pytest.raises(Int8KernelError, match="squared difference: output scale"):
        squared_difference_params(Quant(0.5, 0), Quant(0.5, 0), Quant(1e-5, 0))
    with pytest.raises(Int8KernelError, match=r"hard swish: output scale .* is not above input scale / 128"):
        hard_swish_params(Quant(0.5, 0), Quant(1e-9, 0))


def _status(kernels: Int8MathKernels, name: str, args: ctypes.Structure) -> Status:
    return Status(getattr(kernels.library, name)(ctypes.byref(args)))


def test_refusals_name_the_status_and_write_nothing(kernels: Int8MathKernels) -> None:
    x = EVERY_CODE.copy()
    out = np.full(256, 55, np.int8)
    table = lookup_table("TANH", Quant(0.05, 0), TANH_OUTPUT)
    hs = hard_swish_params(Quant(0.05, 3), Quant(0.04, -2))
    rs = rsqrt_params(Quant(0.05, 3), Quant(0.04, -2))

    def pointer(array: np.ndarray, offset: int = 0) -> object:
        return ctypes.cast(array.ctypes.data + offset, _I8)

    null = ctypes.cast(None, _I8)
    cases = [
        ("helia_lookup_s8", LookupArgs(pointer(x), pointer(out), null, 256), Status.NULL_POINTER),
        ("helia_lookup_s8", LookupArgs(pointer(x), pointer(out), _pointer(table, _I8), 0), Status.BAD_SHAPE),
        ("helia_lookup_s8", LookupArgs(pointer(x), pointer(out), pointer(out, 8), 256), Status.PARTIAL_OVERLAP),
        ("helia_lookup_s8", LookupArgs(pointer(out, 1), pointer(out), _pointer(table, _I8), 8), Status.PARTIAL_OVERLAP),
        ("helia_hard_swish_s8", HardSwishArgs(null, pointer(out), 256, 0, 0, 1, 1, 1, 0), Status.NULL_POINTER),
        ("helia_hard_swish_s8", HardSwishArgs(pointer(x), pointer(out), 256, 0, 0, 1, 1, 1, 1), Status.BAD_PARAMETER),
        ("helia_hard_swish_s8", HardSwishArgs(pointer(x), pointer(out), 256, 128, 0, 1, 1, 1, 0), Status.BAD_PARAMETER),
        (
            "helia_hard_swish_s8",
            HardSwishArgs(pointer(x), pointer(out), 256, 0, 0, 40000, 1, 1, 0),
            Status.BAD_PARAMETER,
        ),
        ("helia_rsqrt_s8", RsqrtArgs(pointer(x), pointer(out), -1, 0, 0, 2**30, 0), Status.BAD_SHAPE),
        ("helia_rsqrt_s8", RsqrtArgs(pointer(x), pointer(out), 256, 0, 0, 5, 0), Status.BAD_PARAMETER),
        ("helia_rsqrt_s8", RsqrtArgs(pointer(x), pointer(out), 256, 0, 0, 2**30, -12), Status.BAD_PARAMETER),
    ]
    for name, args, status in cases:
        before = out.copy()
        assert _status(kernels, name, args) == status, (name, status)
        assert _status(kernels, f"{name}_check", args) == status, (name, status)
        assert out.tobytes() == before.tobytes(), name
    # In place is allowed for the element-wise kernels, and gives the same bytes.
    in_place_table = LookupArgs(pointer(out), pointer(out), _pointer(table, _I8), 256)
    for name, args, expected in [
        ("helia_lookup_s8", in_place_table, kernels.lookup(table, x)),
        (
            "helia_hard_swish_s8",
            HardSwishArgs(pointer(out), pointer(out), 256, hs.input_zero_point, hs.output_zero_point,
                          hs.reluish_multiplier, hs.reluish_shift, hs.output_multiplier, hs.output_shift),
            kernels.hard_swish(hs, x),
        ),
        (
            "helia_rsqrt_s8",
            RsqrtArgs(pointer(out), pointer(out), 256, rs.input_zero_point, rs.output_zero_point, rs.multiplier,
                      rs.shift),
            kernels.rsqrt(rs, x),
        ),
    ]:  # fmt: skip
        out[:] = x
        assert _status(kernels, name, args) == Status.OK
        assert out.tobytes() == expected.tobytes(), name


def test_squared_difference_refuses_what_the_int8_arithmetic_cannot_hold(kernels: Int8MathKernels) -> None:
    params = squared_difference_params(Quant(0.1, 1), Quant(0.2, -3), Quant(0.5, 7))
    a, b = EVERY_CODE.reshape(16, 16), EVERY_CODE[:16].copy()
    kernels.binary("squared_difference", params, a, b)
    for change, status in [
        ({"left_shift": 8}, Status.BAD_PARAMETER),
        ({"output_shift": 1}, Status.BAD_PARAMETER),
        ({"input1_shift": 1}, Status.BAD_PARAMETER),
        ({"input2_zero_point": -129}, Status.BAD_PARAMETER),
    ]:
        bad = int8_math.BinaryParams(**{**params.__dict__, **change})
        with pytest.raises(Int8KernelError) as refused:
            kernels.binary("squared_difference", bad, a, b)
        assert refused.value.status == status
    with pytest.raises(ValueError, match="broadcast"):
        kernels.binary("squared_difference", params, a, EVERY_CODE[:3])


@settings(max_examples=200)
@given(
    shape=st.tuples(st.integers(1, 4), st.integers(1, 300)) | st.tuples(st.integers(1, 2), st.integers(9000, 12000)),
    input_quant=quants(1e-3, 2.0),
    seed=SEED,
    constant=st.booleans(),
)
def test_l2_normalization_is_bit_exact(
    kernels: Int8MathKernels, shape: tuple[int, int], input_quant: Quant, seed: int, constant: bool
) -> None:
    """Rows up to 300 wide, and rows whose sum of squares passes 2^29 (the inverse square root's pre-scaling);
    constant rows at the zero point have a sum of 0 or 1 (LiteRT's special case)."""
    x = _codes(seed, shape)
    if constant:
        x[:] = input_quant.zero_point
        x[0, 0] = np.int8(input_quant.zero_point + (1 if input_quant.zero_point < 127 else -1))
    model = unary_model("L2_NORMALIZATION", shape, input_quant, int8_math.L2_NORMALIZATION_OUTPUT)
    expected = run_reference(model, [x])
    assert kernels.l2_normalization(input_quant.zero_point, x).tobytes() == expected.tobytes()


@settings(max_examples=200)
@given(
    shape=st.tuples(st.integers(1, 4), st.integers(1, 80)) | st.tuples(st.just(1), st.integers(500, 4095)),
    input_quant=quants(1e-3, 2.0),
    seed=SEED,
    flat=st.booleans(),
)
def test_log_softmax_is_bit_exact(
    kernels: Int8MathKernels, shape: tuple[int, int], input_quant: Quant, seed: int, flat: bool
) -> None:
    """Random rows, and rows of nearly equal values (a large sum of exps, so a large log)."""
    x = _codes(seed, shape)
    if flat:
        x = np.clip(x // 32 + 100, -128, 127).astype(np.int8)
    expected = run_reference(unary_model("LOG_SOFTMAX", shape, input_quant, int8_math.LOG_SOFTMAX_OUTPUT), [x])
    params = int8_math.log_softmax_params(input_quant.scale)
    assert kernels.log_softmax(params, x).tobytes() == expected.tobytes()
