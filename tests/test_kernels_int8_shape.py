"""AVERAGE_POOL_2D, MAX_POOL_2D, RESHAPE, PAD and CONCATENATION int8 C kernels, byte for byte against
LiteRT's reference kernels."""

from __future__ import annotations

import ctypes
from pathlib import Path

import numpy as np
import pytest
from helpers.int8_models import concatenation_model, pad_model, pool_model, reshape_model, run_reference
from hypothesis import given, settings
from hypothesis import strategies as st

from heliabuild.kernels.int8 import _I8, Int8KernelError, Int8Kernels, PoolArgs, Quant, _pointer, pool_params
from heliabuild.kernels.native import Status, load_host_library

ACTIVATION = st.sampled_from(["NONE", "RELU", "RELU6", "RELU_N1_TO_1"])
SEED = st.integers(0, 2**32 - 1)


@pytest.fixture(scope="module")
def kernels(host_kernel_library: Path) -> Int8Kernels:
    return Int8Kernels(load_host_library(host_kernel_library))


@st.composite
def quants(draw: st.DrawFn) -> Quant:
    return Quant(draw(st.floats(1e-3, 0.5)), draw(st.integers(-128, 127)))


@st.composite
def pool_cases(draw: st.DrawFn) -> dict:
    fh, fw = draw(st.integers(1, 4)), draw(st.integers(1, 4))
    padding = draw(st.sampled_from(["SAME", "VALID"]))
    low = 1 if padding == "SAME" else None
    h = draw(st.integers(low or fh, (low or fh) + 7))
    w = draw(st.integers(low or fw, (low or fw) + 7))
    return {
        "input_shape": (draw(st.integers(1, 2)), h, w, draw(st.integers(1, 5))),
        "filter_size": (fh, fw),
        "stride": (draw(st.integers(1, 3)), draw(st.integers(1, 3))),
        "padding": padding,
    }


@pytest.mark.parametrize("kind", ["average", "max"])
@settings(max_examples=200)
@given(case=pool_cases(), quant=quants(), activation=ACTIVATION, seed=SEED)
def test_pools_are_bit_exact(
    kernels: Int8Kernels, kind: str, case: dict, quant: Quant, activation: str, seed: int
) -> None:
    x = np.random.default_rng(seed).integers(-128, 128, size=case["input_shape"], dtype=np.int8)
    params = pool_params(
        x.shape, case["filter_size"], quant, stride=case["stride"], padding=case["padding"], activation=activation
    )
    model = pool_model(
        kind, x.shape, params.output_shape, quant, filter_size=case["filter_size"], stride=case["stride"],
        padding=case["padding"], activation=activation,
    )  # fmt: skip
    expected = run_reference(model, [x])
    assert kernels.pool(kind, params, x).tobytes() == expected.tobytes()


def test_average_pool_rounds_half_away_from_zero(kernels: Int8Kernels) -> None:
    x = np.array([1, 2, -1, -2, 3, 4, -3, -4], np.int8).reshape(1, 4, 2, 1)  # window sums 3, -3, 7, -7 over 2
    params = pool_params(x.shape, (1, 2), Quant(0.1, 0), stride=(1, 2))
    out = kernels.pool("average", params, x)
    assert out.reshape(-1).tolist() == [2, -2, 4, -4]
    model = pool_model("average", x.shape, params.output_shape, Quant(0.1, 0), filter_size=(1, 2), stride=(1, 2),
                       padding="VALID", activation="NONE")  # fmt: skip
    assert out.tobytes() == run_reference(model, [x]).tobytes()


def test_an_average_window_covering_only_padding_is_refused(kernels: Int8Kernels) -> None:
    x = np.zeros((1, 2, 2, 1), np.int8)
    out = np.full((1, 1, 1, 1), 9, np.int8)
    # A 1x1 window at padding offset 1: it covers no input element.
    args = PoolArgs(_pointer(x, _I8), _pointer(out, _I8), 1, 2, 2, 1, 1, 1, 1, 1, 1, 1, 1, 0, -128, 127)
    assert kernels.library.helia_average_pool2d_s8(ctypes.byref(args)) == Status.BAD_PARAMETER
    assert kernels.library.helia_max_pool2d_s8(ctypes.byref(args)) == Status.OK  # MAX gives the clamp floor
    assert out.reshape(-1).tolist() == [-128]
    args.stride_w = 0
    assert kernels.library.helia_max_pool2d_s8(ctypes.byref(args)) == Status.BAD_PARAMETER


@settings(max_examples=100)
@given(shape=st.lists(st.integers(1, 5), min_size=1, max_size=4).map(tuple), quant=quants(), seed=SEED)
def test_reshape_is_bit_exact(kernels: Int8Kernels, shape: tuple[int, ...], quant: Quant, seed: int) -> None:
    rng = np.random.default_rng(seed)
    x = rng.integers(-128, 128, size=shape, dtype=np.int8)
    target = (int(np.prod(shape)),) if len(shape) > 1 else (1, *shape)
    target = tuple(rng.permutation(np.array(shape))) if rng.integers(2) else target
    expected = run_reference(reshape_model(shape, target, quant), [x])
    got = kernels.reshape(x, target)
    assert got.shape == expected.shape and got.tobytes() == expected.tobytes()


def test_reshape_refuses_a_different_byte_count(kernels: Int8Kernels) -> None:
    with pytest.raises(Int8KernelError) as caught:
        kernels.reshape(np.zeros(6, np.int8), (7,))
    assert caught.value.status == Status.BYTE_LENGTH_MISMATCH


@settings(max_examples=200)
@given(
    shape=st.lists(st.integers(1, 4), min_size=1, max_size=4).map(tuple),
    pads=st.lists(st.tuples(st.integers(0, 3), st.integers(0, 3)), min_size=4, max_size=4),
    quant=quants(),
    seed=SEED,
)
def test_pad_is_bit_exact(kernels: Int8Kernels, shape: tuple[int, ...], pads: list, quant: Quant, seed: int) -> None:
    x = np.random.default_rng(seed).integers(-128, 128, size=shape, dtype=np.int8)
    paddings = pads[: len(shape)]
    expected = run_reference(pad_model(shape, paddings, quant), [x])
    # int8 PAD without constant_values fills with the output zero point.
    assert kernels.pad(x, paddings, quant.zero_point).tobytes() == expected.tobytes()


def test_pad_refuses_negative_paddings_and_writes_nothing(kernels: Int8Kernels) -> None:
    with pytest.raises(Int8KernelError) as caught:
        kernels.pad(np.zeros((2, 2), np.int8), [(0, 1), (-1, 0)], 0)
    assert caught.value.status == Status.BAD_PARAMETER


@settings(max_examples=200)
@given(
    rank=st.integers(1, 4),
    count=st.integers(1, 4),
    quant=quants(),
    data=st.data(),
    seed=SEED,
)
def test_concatenation_is_bit_exact(kernels: Int8Kernels, rank: int, count: int, quant: Quant, data, seed: int) -> None:
    rng = np.random.default_rng(seed)
    base = [data.draw(st.integers(1, 4)) for _ in range(rank)]
    axis = data.draw(st.integers(-rank, rank - 1))
    shapes = []
    for _ in range(count):
        shape = list(base)
        shape[axis] = data.draw(st.integers(1, 4))
        shapes.append(tuple(shape))
    arrays = [rng.integers(-128, 128, size=s, dtype=np.int8) for s in shapes]
    expected = run_reference(concatenation_model(shapes, axis, [quant] * count, quant), arrays)
    assert kernels.concatenation(arrays, axis).tobytes() == expected.tobytes()


def test_litert_refuses_int8_concatenation_with_different_quantization() -> None:
    """The kernel is a byte concatenation because LiteRT admits only inputs quantized like the output."""
    shapes = [(1, 2), (1, 3)]
    model = concatenation_model(shapes, 1, [Quant(0.1, 0), Quant(0.2, 0)], Quant(0.1, 0))
    with pytest.raises(RuntimeError, match=r"params\.scale != output->params\.scale"):
        run_reference(model, [np.zeros(s, np.int8) for s in shapes])


def test_shape_kernels_refuse_bad_counts_and_element_sizes(kernels: Int8Kernels) -> None:
    from heliabuild.kernels.int8 import _DIMS, ConcatArgs, PadArgs

    x = np.arange(6, dtype=np.int8)
    out = np.full(12, 9, np.int8)
    value = np.zeros(1, np.int8)
    pad = PadArgs(x.ctypes.data, out.ctypes.data, 0, 1, _DIMS(6), _DIMS(3), _DIMS(3), value.ctypes.data)
    assert kernels.library.helia_pad(ctypes.byref(pad)) == Status.UNSUPPORTED_DTYPE
    pad.element_size, pad.rank = 1, 0
    assert kernels.library.helia_pad(ctypes.byref(pad)) == Status.BAD_SHAPE
    pad.rank, pad.pad_value = 1, None
    assert kernels.library.helia_pad(ctypes.byref(pad)) == Status.NULL_POINTER
    pointers = (ctypes.c_void_p * 1)(x.ctypes.data)
    extents = np.array([6], np.int32)
    concat = ConcatArgs(
        ctypes.cast(pointers, ctypes.POINTER(ctypes.c_void_p)), _pointer(extents, ctypes.POINTER(ctypes.c_int32)),
        out.ctypes.data, 1, 0, 1, 1,
    )  # fmt: skip
    assert kernels.library.helia_concatenation(ctypes.byref(concat)) == Status.PAIR_COUNT
    concat.input_count, concat.output = 1, x.ctypes.data + 2
    assert kernels.library.helia_concatenation(ctypes.byref(concat)) == Status.PARTIAL_OVERLAP
    assert (out == 9).all() and x.tolist() == list(range(6))
    concat.output = out.ctypes.data
    assert kernels.library.helia_concatenation(ctypes.byref(concat)) == Status.OK
    assert out[:6].tolist() == list(range(6))
