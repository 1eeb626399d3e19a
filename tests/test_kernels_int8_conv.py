"""FULLY_CONNECTED, CONV_2D and DEPTHWISE_CONV_2D int8 C kernels, byte for byte against LiteRT's reference kernels.

Every property builds a single-operator model with drawn shapes, strides,
dilations, padding, fused activation, per-channel (or per-tensor) weight
scales, activation scales and zero points, runs it in LiteRT with
`OpResolverType.BUILTIN_REF`, and requires the C kernel (parameters derived
by heliabuild.kernels.int8, as the firmware generator derives them) to give
the same bytes.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from helpers.int8_models import conv_model, fully_connected_model, run_reference
from hypothesis import given, settings
from hypothesis import strategies as st

from heliabuild.kernels.int8 import Int8KernelError, Int8Kernels, Quant, conv_params, fully_connected_params
from heliabuild.kernels.native import Status, load_host_library

ACTIVATION = st.sampled_from(["NONE", "RELU", "RELU6", "RELU_N1_TO_1"])
SEED = st.integers(0, 2**32 - 1)


@pytest.fixture(scope="module")
def kernels(host_kernel_library: Path) -> Int8Kernels:
    return Int8Kernels(load_host_library(host_kernel_library))


@st.composite
def quants(draw: st.DrawFn, low: float = 1e-3, high: float = 0.5) -> Quant:
    return Quant(draw(st.floats(low, high)), draw(st.integers(-128, 127)))


def _data(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    return rng.integers(-128, 128, size=shape, dtype=np.int8)


def _weights(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    # TFLite's int8 spec: symmetric weights in [-127, 127]; -128 is still accepted by the kernels.
    return rng.integers(-127, 128, size=shape, dtype=np.int8)


def _bias(rng: np.random.Generator, count: int, with_bias: bool, magnitude: int) -> np.ndarray | None:
    return rng.integers(-magnitude, magnitude + 1, size=count, dtype=np.int32) if with_bias else None


@settings(max_examples=300)
@given(
    batches=st.integers(1, 3),
    depth=st.integers(1, 40),
    units=st.integers(1, 12),
    per_channel=st.booleans(),
    with_bias=st.booleans(),
    bias_magnitude=st.sampled_from([100, 5000, 2**20]),
    input_quant=quants(),
    output_quant=quants(1e-3, 2.0),
    weight_scale=st.floats(1e-3, 0.1),
    activation=ACTIVATION,
    seed=SEED,
)
def test_fully_connected_is_bit_exact(
    kernels: Int8Kernels,
    batches: int,
    depth: int,
    units: int,
    per_channel: bool,
    with_bias: bool,
    bias_magnitude: int,
    input_quant: Quant,
    output_quant: Quant,
    weight_scale: float,
    activation: str,
    seed: int,
) -> None:
    rng = np.random.default_rng(seed)
    # TFLite flattens any input to [-1, depth]: a rank-4 input of batches x 1 x depth/k x k is drawn too.
    shapes = [(batches, depth), (batches, 1, depth)] + [(batches, 1, depth // k, k) for k in (2, 3) if depth % k == 0]
    x = _data(rng, shapes[int(rng.integers(len(shapes)))])
    w = _weights(rng, (units, depth))
    scales = (weight_scale * rng.uniform(0.25, 1.0, size=units if per_channel else 1)).astype(np.float32)
    bias = _bias(rng, units, with_bias, bias_magnitude)
    model = fully_connected_model(x.shape, w, scales, bias, input_quant, output_quant, activation)
    expected = run_reference(model, [x])
    params = fully_connected_params(x.size, w.shape, input_quant, scales, output_quant, activation)
    assert expected.shape == (batches, units)
    assert kernels.fully_connected(params, x, w, bias).tobytes() == expected.tobytes()


@st.composite
def conv_cases(draw: st.DrawFn, depthwise: bool) -> dict:
    kh, kw = draw(st.integers(1, 4)), draw(st.integers(1, 4))
    stride = (draw(st.integers(1, 3)), draw(st.integers(1, 3)))
    dilation = (draw(st.integers(1, 3)), draw(st.integers(1, 3)))
    padding = draw(st.sampled_from(["SAME", "VALID"]))
    low_h, low_w = (kh - 1) * dilation[0] + 1, (kw - 1) * dilation[1] + 1
    if padding == "VALID":
        h, w = draw(st.integers(low_h, low_h + 6)), draw(st.integers(low_w, low_w + 6))
    else:
        h, w = draw(st.integers(1, 9)), draw(st.integers(1, 9))
    channels = draw(st.integers(1, 6))
    multiplier = draw(st.integers(1, 3)) if depthwise else 1
    out_c = channels * multiplier if depthwise else draw(st.integers(1, 6))
    return {
        "input_shape": (draw(st.integers(1, 2)), h, w, channels),
        "filter_shape": (1, kh, kw, out_c) if depthwise else (out_c, kh, kw, channels),
        "stride": stride,
        "dilation": dilation,
        "padding": padding,
        "out_c": out_c,
    }


def _check_conv(
    kernels: Int8Kernels,
    case: dict,
    depthwise: bool,
    per_channel: bool,
    with_bias: bool,
    input_quant: Quant,
    output_quant: Quant,
    weight_scale: float,
    activation: str,
    seed: int,
) -> None:
    rng = np.random.default_rng(seed)
    x = _data(rng, case["input_shape"])
    w = _weights(rng, case["filter_shape"])
    out_c = case["out_c"]
    scales = (weight_scale * rng.uniform(0.25, 1.0, size=out_c if per_channel else 1)).astype(np.float32)
    if not per_channel:
        scales = np.repeat(scales, out_c)  # TFLite's int8 CONV_2D wants one scale per channel in the model
    bias = _bias(rng, out_c, with_bias, int(rng.choice([100, 5000, 2**20])))
    params = conv_params(
        x.shape, w.shape, input_quant, scales, output_quant, stride=case["stride"], dilation=case["dilation"],
        padding=case["padding"], activation=activation, depthwise=depthwise,
    )  # fmt: skip
    # LiteRT's int8 CONV_2D requires a bias tensor: the model gets zeros where the C kernel gets NULL.
    model_bias = np.zeros(out_c, np.int32) if bias is None and not depthwise else bias
    model = conv_model(
        x.shape, w, scales, model_bias, input_quant, output_quant, params.output_shape, stride=case["stride"],
        dilation=case["dilation"], padding=case["padding"], activation=activation, depthwise=depthwise,
    )  # fmt: skip
    expected = run_reference(model, [x])
    assert expected.shape == params.output_shape
    assert kernels.conv(params, x, w, bias).tobytes() == expected.tobytes()


@settings(max_examples=300)
@given(
    case=conv_cases(depthwise=False),
    per_channel=st.booleans(),
    with_bias=st.booleans(),
    input_quant=quants(),
    output_quant=quants(1e-3, 2.0),
    weight_scale=st.floats(1e-3, 0.1),
    activation=ACTIVATION,
    seed=SEED,
)
def test_conv2d_is_bit_exact(kernels: Int8Kernels, case: dict, **drawn: object) -> None:
    _check_conv(kernels, case, False, **drawn)  # type: ignore[arg-type]


@settings(max_examples=300)
@given(
    case=conv_cases(depthwise=True),
    per_channel=st.booleans(),
    with_bias=st.booleans(),
    input_quant=quants(),
    output_quant=quants(1e-3, 2.0),
    weight_scale=st.floats(1e-3, 0.1),
    activation=ACTIVATION,
    seed=SEED,
)
def test_depthwise_conv2d_is_bit_exact(kernels: Int8Kernels, case: dict, **drawn: object) -> None:
    _check_conv(kernels, case, True, **drawn)  # type: ignore[arg-type]


def _conv_request(depthwise: bool = False) -> tuple:
    rng = np.random.default_rng(0)
    x = _data(rng, (1, 5, 5, 3))
    w = _weights(rng, (1, 3, 3, 3) if depthwise else (4, 3, 3, 3))
    params = conv_params(x.shape, w.shape, Quant(0.05, 3), [0.01] * w.shape[0 if not depthwise else 3],
                         Quant(0.1, -5), depthwise=depthwise)  # fmt: skip
    return x, w, params


@pytest.mark.parametrize(
    ("change", "status"),
    [
        ({"stride": (0, 1)}, Status.BAD_PARAMETER),
        ({"dilation": (1, 0)}, Status.BAD_PARAMETER),
        ({"pad": (-1, 0)}, Status.BAD_PARAMETER),
        ({"input_zero_point": 128}, Status.BAD_PARAMETER),
        ({"act_min": 10, "act_max": 9}, Status.BAD_PARAMETER),
        ({"multipliers": np.full(4, 2**29, np.int32)}, Status.BAD_PARAMETER),
        ({"shifts": np.full(4, 31, np.int32)}, Status.BAD_PARAMETER),
        ({"multipliers": np.full(3, 2**30, np.int32), "shifts": np.zeros(3, np.int32)}, Status.BAD_PARAMETER),
        ({"output_shape": (1, 0, 5, 4)}, Status.BAD_SHAPE),
    ],
)
def test_conv_arguments_are_checked_before_any_output_byte(kernels: Int8Kernels, change: dict, status: Status) -> None:
    from dataclasses import replace

    x, w, params = _conv_request()
    with pytest.raises(Int8KernelError) as caught:
        kernels.conv(replace(params, **change), x, w, None)
    assert caught.value.status == status


def test_refused_requests_write_nothing_and_overlap_is_refused(kernels: Int8Kernels) -> None:
    import ctypes

    from heliabuild.kernels.int8 import _I8, _I32, ConvArgs, _pointer

    x, w, params = _conv_request(depthwise=True)
    out = np.full(params.output_shape, 77, np.int8)
    m, s = params.multipliers, params.shifts
    args = ConvArgs(
        _pointer(x, _I8), _pointer(w, _I8), _pointer(None, _I32), _pointer(m, _I32), _pointer(s, _I32),
        _pointer(out, _I8), 1, 5, 5, 3, 3, 3, 5, 5, 3, 1, 1, 1, 1, 1, 1, 1, 3, 3, -5, -128, 127,
    )  # fmt: skip
    library = kernels.library
    assert library.helia_depthwise_conv2d_s8(ctypes.byref(args)) == Status.OK
    good = out.copy()
    out[:] = 77
    args.depth_multiplier = 2  # output_c != input_c * depth_multiplier
    assert library.helia_depthwise_conv2d_s8(ctypes.byref(args)) == Status.SHAPE_MISMATCH
    assert (out == 77).all()
    args.depth_multiplier = 1
    args.output = ctypes.cast(x.ctypes.data + 10, _I8)  # the output overlaps the input
    assert library.helia_depthwise_conv2d_s8(ctypes.byref(args)) == Status.PARTIAL_OVERLAP
    args.output = _pointer(out, _I8)
    args.filter = ctypes.cast(None, _I8)
    assert library.helia_depthwise_conv2d_s8(ctypes.byref(args)) == Status.NULL_POINTER
    assert (out == 77).all() and not (good == 77).all()
    assert library.helia_depthwise_conv2d_s8(None) == Status.NULL_POINTER


def test_the_scratch_row_weight_sums_and_1x1_entry_are_checked(kernels: Int8Kernels) -> None:
    """The arguments the Helium bodies add: a scratch row shorter than one im2col row (BAD_PARAMETER) or
    overlapping the input or output, weight sums overlapping the output (PARTIAL_OVERLAP), and the 1x1 entry
    given a 3x3 convolution (BAD_PARAMETER); each refusal writes no output byte, and the run entry after a
    passed check gives the combined entry's bytes."""
    import ctypes

    from heliabuild.kernels.int8 import _I8, _I32, ConvArgs, _pointer, conv_scratch_bytes, weight_sums

    x, w, params = _conv_request()
    sums = weight_sums(w)
    row = np.zeros(conv_scratch_bytes(params), np.int8)
    out = np.full(params.output_shape, 77, np.int8)
    m, s = params.multipliers, params.shifts
    args = ConvArgs(
        _pointer(x, _I8), _pointer(w, _I8), _pointer(None, _I32), _pointer(m, _I32), _pointer(s, _I32),
        _pointer(out, _I8), 1, 5, 5, 3, 3, 3, 5, 5, 4, 1, 1, 1, 1, 1, 1, 1, 4, 3, -5, -128, 127,
        _pointer(sums, _I32), _pointer(row, _I8), row.size,
    )  # fmt: skip
    library = kernels.library
    for name in ("helia_conv2d_s8_check", "helia_conv2d_s8_run", "helia_conv2d_1x1_s8"):
        getattr(library, name).argtypes = [ctypes.POINTER(ConvArgs)]
    assert row.size == 3 * 3 * 3
    args.scratch_bytes = row.size - 1
    assert library.helia_conv2d_s8(ctypes.byref(args)) == Status.BAD_PARAMETER
    args.scratch_bytes = row.size
    args.scratch = ctypes.cast(x.ctypes.data + 4, _I8)  # the row overlaps the input
    assert library.helia_conv2d_s8(ctypes.byref(args)) == Status.PARTIAL_OVERLAP
    args.scratch = ctypes.cast(out.ctypes.data, _I8)  # ... or the output
    assert library.helia_conv2d_s8(ctypes.byref(args)) == Status.PARTIAL_OVERLAP
    args.scratch = _pointer(row, _I8)
    args.weight_sums = ctypes.cast(out.ctypes.data, _I32)  # the sums overlap the output
    assert library.helia_conv2d_s8(ctypes.byref(args)) == Status.PARTIAL_OVERLAP
    args.weight_sums = _pointer(sums, _I32)
    assert library.helia_conv2d_1x1_s8(ctypes.byref(args)) == Status.BAD_PARAMETER
    assert (out == 77).all()
    assert library.helia_conv2d_s8(ctypes.byref(args)) == Status.OK
    combined = out.copy()
    out[:] = 77
    assert library.helia_conv2d_s8_check(ctypes.byref(args)) == Status.OK
    assert library.helia_conv2d_s8_run(ctypes.byref(args)) == Status.OK
    assert out.tobytes() == combined.tobytes() == kernels.conv(params, x, w, None).tobytes()
