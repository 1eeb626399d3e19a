"""ADD, MUL, QUANTIZE and DEQUANTIZE int8 C kernels, byte for byte against LiteRT's reference kernels,
and the fixed-point helpers against their Python statement."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from helpers.int8_models import binary_model, dequantize_model, quantize_model, run_reference, softmax_model
from hypothesis import given, settings
from hypothesis import strategies as st

from heliabuild.kernels.fixed_point import mbqm_double, mbqm_single, quantize_multiplier
from heliabuild.kernels.int8 import (
    Int8KernelError,
    Int8Kernels,
    Quant,
    add_params,
    mul_params,
    softmax_params,
)
from heliabuild.kernels.native import Status, load_host_library

ACTIVATION = st.sampled_from(["NONE", "RELU", "RELU6", "RELU_N1_TO_1"])
SEED = st.integers(0, 2**32 - 1)
INT32 = st.integers(-(2**31), 2**31 - 1)


@pytest.fixture(scope="module")
def kernels(host_kernel_library: Path) -> Int8Kernels:
    return Int8Kernels(load_host_library(host_kernel_library))


@st.composite
def quants(draw: st.DrawFn, low: float = 1e-3, high: float = 0.5) -> Quant:
    return Quant(draw(st.floats(low, high)), draw(st.integers(-128, 127)))


@st.composite
def broadcast_shapes(draw: st.DrawFn) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """Two shapes of rank 1..4 that broadcast: the output's extents, some set to 1, some leading axes dropped."""
    rank = draw(st.integers(1, 4))
    output = tuple(draw(st.integers(1, 5)) for _ in range(rank))

    def operand() -> tuple[int, ...]:
        shape = tuple(1 if draw(st.booleans()) and draw(st.booleans()) else d for d in output)
        return shape[draw(st.integers(0, rank - 1)) :] if draw(st.booleans()) else shape

    return operand(), operand()


@settings(max_examples=200)
@given(x=INT32, multiplier=st.integers(2**30, 2**31 - 1) | st.just(0), shift=st.integers(-31, 30))
def test_c_fixed_point_matches_its_python_statement(kernels: Int8Kernels, x: int, multiplier: int, shift: int) -> None:
    assert kernels.mbqm("single", x, multiplier, shift) == mbqm_single(x, multiplier, shift)
    assert kernels.mbqm("double", x, multiplier, shift) == mbqm_double(x, multiplier, shift)


@settings(max_examples=200)
@given(real=st.floats(2.0**-40, 2.0**31, allow_subnormal=False))
def test_quantize_multiplier_represents_the_real_multiplier(real: float) -> None:
    multiplier, shift = quantize_multiplier(real)
    if real < 2.0**-32 and multiplier == 0:
        assert shift == 0
        return
    if shift == 30 and multiplier == 2**31 - 1 and real >= 2.0**30:
        return  # saturated, as TFLite's single-rounding build does
    assert 2**30 <= multiplier < 2**31 and -31 <= shift <= 30
    assert abs(multiplier * 2.0 ** (shift - 31) - real) <= real * 2.0**-31


@pytest.mark.parametrize("kind", ["add", "mul"])
@settings(max_examples=200)
@given(
    shapes=broadcast_shapes(),
    quant1=quants(),
    quant2=quants(),
    output_quant=quants(1e-3, 1.0),
    activation=ACTIVATION,
    seed=SEED,
)
def test_binary_operators_are_bit_exact(
    kernels: Int8Kernels,
    kind: str,
    shapes: tuple[tuple[int, ...], tuple[int, ...]],
    quant1: Quant,
    quant2: Quant,
    output_quant: Quant,
    activation: str,
    seed: int,
) -> None:
    rng = np.random.default_rng(seed)
    a = rng.integers(-128, 128, size=shapes[0], dtype=np.int8)
    b = rng.integers(-128, 128, size=shapes[1], dtype=np.int8)
    if kind == "mul":
        params = mul_params(quant1, quant2, output_quant, activation)
    else:
        # ADD's output multiplier must stay below 1: 2 * max input scale < 2^20 * output scale.
        params = add_params(quant1, quant2, output_quant, activation)
    expected = run_reference(binary_model(kind, a.shape, b.shape, quant1, quant2, output_quant, activation), [a, b])
    assert kernels.binary(kind, params, a, b).tobytes() == expected.tobytes()


def test_binary_operators_may_run_in_place_but_refuse_partial_overlap(kernels: Int8Kernels) -> None:
    import ctypes

    from heliabuild.kernels.int8 import _I8, BinaryArgs, _dims, _pointer

    rng = np.random.default_rng(1)
    a = rng.integers(-128, 128, size=(2, 8), dtype=np.int8)
    b = rng.integers(-128, 128, size=(1, 8), dtype=np.int8)
    params = add_params(Quant(0.1, 3), Quant(0.05, -7), Quant(0.2, 1), "RELU")
    expected = kernels.binary("add", params, a, b)

    def args(output: np.ndarray, offset: int = 0) -> BinaryArgs:
        return BinaryArgs(
            _pointer(a, _I8), _pointer(b, _I8), ctypes.cast(output.ctypes.data + offset, _I8), 2,
            _dims((2, 8)), _dims((1, 8)), _dims((2, 8)), params.input1_zero_point, params.input2_zero_point,
            params.output_zero_point, params.left_shift, params.input1_multiplier, params.input1_shift,
            params.input2_multiplier, params.input2_shift, params.output_multiplier, params.output_shift,
            params.act_min, params.act_max,
        )  # fmt: skip

    original = a.copy()
    assert kernels.library.helia_add_s8(ctypes.byref(args(a, 3))) == Status.PARTIAL_OVERLAP
    assert (a == original).all()
    assert kernels.library.helia_add_s8(ctypes.byref(args(b))) == Status.PARTIAL_OVERLAP  # b broadcasts
    assert kernels.library.helia_add_s8(ctypes.byref(args(a))) == Status.OK
    assert a.tobytes() == expected.tobytes()


def test_add_refuses_an_output_multiplier_above_one() -> None:
    with pytest.raises(Int8KernelError, match="output multiplier must be below 1"):
        add_params(Quant(1.0, 0), Quant(1.0, 0), Quant(1e-7, 0))


def test_binary_shapes_must_broadcast_to_the_output(kernels: Int8Kernels) -> None:
    import ctypes

    from heliabuild.kernels.int8 import _I8, BinaryArgs, _dims, _pointer

    a = np.zeros((2, 3), np.int8)
    out = np.full((2, 3), 5, np.int8)
    params = mul_params(Quant(0.1, 0), Quant(0.1, 0), Quant(0.1, 0))
    bad = BinaryArgs(
        _pointer(a, _I8), _pointer(a, _I8), _pointer(out, _I8), 2, _dims((2, 3)), _dims((3, 2)), _dims((2, 3)),
        0, 0, 0, 0, 0, 0, 0, 0, params.output_multiplier, params.output_shift, -128, 127,
    )  # fmt: skip
    assert kernels.library.helia_mul_s8(ctypes.byref(bad)) == Status.SHAPE_MISMATCH
    bad.rank = 7
    assert kernels.library.helia_mul_s8(ctypes.byref(bad)) == Status.BAD_SHAPE
    assert (out == 5).all()


@settings(max_examples=200)
@given(
    shape=st.lists(st.integers(1, 6), min_size=1, max_size=4).map(tuple),
    quant=quants(1e-3, 1.0),
    spread=st.sampled_from([1.0, 100.0, 300.0]),
    seed=SEED,
)
def test_quantize_is_bit_exact(
    kernels: Int8Kernels, shape: tuple[int, ...], quant: Quant, spread: float, seed: int
) -> None:
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal(shape) * spread * quant.scale).astype(np.float32)
    # Exact halves of the scale exercise the ties (away from zero).
    x.reshape(-1)[::3] = (np.round(x.reshape(-1)[::3] / quant.scale) + 0.5).astype(np.float32) * np.float32(quant.scale)
    expected = run_reference(quantize_model(shape, quant), [x])
    assert kernels.quantize(x, quant).tobytes() == expected.tobytes()


@settings(max_examples=200)
@given(shape=st.lists(st.integers(1, 6), min_size=1, max_size=4).map(tuple), quant=quants(1e-6, 10.0), seed=SEED)
def test_dequantize_is_bit_exact(kernels: Int8Kernels, shape: tuple[int, ...], quant: Quant, seed: int) -> None:
    x = np.random.default_rng(seed).integers(-128, 128, size=shape, dtype=np.int8)
    expected = run_reference(dequantize_model(shape, quant), [x])
    assert kernels.dequantize(x, quant).tobytes() == expected.tobytes()


def test_every_int8_code_dequantizes_and_requantizes_exactly(kernels: Int8Kernels) -> None:
    quant = Quant(0.0392157, -3)
    codes = np.arange(-128, 128, dtype=np.int8)
    real = kernels.dequantize(codes, quant)
    assert real.tobytes() == run_reference(dequantize_model(codes.shape, quant), [codes]).tobytes()
    assert kernels.quantize(real, quant).tobytes() == codes.tobytes()


@pytest.mark.parametrize("scale", [0.0, -1.0, float("nan"), float("inf")])
def test_conversions_refuse_a_scale_that_is_not_positive_and_finite(kernels: Int8Kernels, scale: float) -> None:
    for run in (kernels.quantize, kernels.dequantize):
        with pytest.raises(Int8KernelError) as caught:
            run(np.zeros(4, np.float32 if run == kernels.quantize else np.int8), Quant(scale, 0))
        assert caught.value.status == Status.BAD_PARAMETER


@settings(max_examples=200)
@given(
    rows=st.integers(1, 4),
    depth=st.integers(1, 40),
    scale=st.floats(1e-5, 1.0) | st.floats(8.0, 100.0),  # the second range caps the input multiplier
    zero_point=st.integers(-128, 127),
    beta=st.sampled_from([1.0, 0.5, 2.0]),
    spread=st.sampled_from([2, 16, 128]),
    seed=SEED,
)
def test_softmax_is_bit_exact(
    kernels: Int8Kernels, rows: int, depth: int, scale: float, zero_point: int, beta: float, spread: int, seed: int
) -> None:
    rng = np.random.default_rng(seed)
    centre = int(rng.integers(-128, 128))
    x = np.clip(rng.integers(centre - spread, centre + spread + 1, size=(rows, depth)), -128, 127).astype(np.int8)
    quant = Quant(scale, zero_point)
    expected = run_reference(softmax_model(x.shape, quant, beta), [x])
    assert kernels.softmax(softmax_params(quant.scale, beta), x).tobytes() == expected.tobytes()


def test_softmax_of_long_flat_rows_rounds_small_shares_to_zero(kernels: Int8Kernels) -> None:
    """A row whose exps sum to 512 or more: LiteRT's reference kernel aborts the process (a shift past 31);
    heliabuild rounds each share, below 1/512 of 256ths, to 0: every output is -128."""
    x = np.full((2, 600), 17, np.int8)
    out = kernels.softmax(softmax_params(0.05), x)
    assert (out == -128).all()
    x[:, :300] = 16  # the sum is still above 512 with half the row one step lower
    assert (kernels.softmax(softmax_params(0.05), x) == -128).all()
    # Up to 511 equal values the shift stays within 31 and LiteRT agrees.
    x = np.full((1, 511), 3, np.int8)
    expected = run_reference(softmax_model(x.shape, Quant(0.05, 0)), [x])
    assert kernels.softmax(softmax_params(0.05), x).tobytes() == expected.tobytes()


def test_softmax_refuses_in_place_and_bad_parameters(kernels: Int8Kernels) -> None:
    import ctypes

    from heliabuild.kernels.int8 import _I8, SoftmaxArgs, _pointer

    x = np.zeros((2, 5), np.int8)
    params = softmax_params(0.1)
    args = SoftmaxArgs(_pointer(x, _I8), _pointer(x, _I8), 2, 5, params.input_multiplier, params.input_left_shift,
                       params.diff_min)  # fmt: skip
    assert kernels.library.helia_softmax_s8(ctypes.byref(args)) == Status.PARTIAL_OVERLAP
    out = np.zeros_like(x)
    args.output = _pointer(out, _I8)
    args.input_left_shift = -1
    assert kernels.library.helia_softmax_s8(ctypes.byref(args)) == Status.BAD_PARAMETER
    args.input_left_shift, args.depth = params.input_left_shift, 4096
    assert kernels.library.helia_softmax_s8(ctypes.byref(args)) == Status.SIZE_OVERFLOW
    with pytest.raises(Int8KernelError, match="below 2"):
        softmax_params(1e-9)


def test_quantize_saturates_where_litert_is_undefined(kernels: Int8Kernels) -> None:
    """Beyond |x / scale| >= 2^31 LiteRT's int32 cast is undefined (x86 gives INT32_MIN, so 1e10 becomes
    -128); heliabuild saturates to the near bound and sends NaN to -128."""
    x = np.array([1e10, -1e10, np.inf, -np.inf, np.nan, 2.1e8, -2.1e8], np.float32)
    for zero_point in (5, -5):
        assert kernels.quantize(x, Quant(0.1, zero_point)).tolist() == [127, -128, 127, -128, -128, 127, -128]
    inside = np.array([2.1e8, -2.1e8, 12.7, -12.85], np.float32)  # |x / 0.1| < 2^31: LiteRT agrees
    expected = run_reference(quantize_model(inside.shape, Quant(0.1, 5)), [inside])
    assert kernels.quantize(inside, Quant(0.1, 5)).tobytes() == expected.tobytes()
