"""The int8 C kernels on the target: random cases of every operator, their outputs taken from LiteRT's
reference kernels, replayed by one Cortex-M55 firmware on QEMU mps3-an547 (arm-none-eabi-gcc, the
firmware's flags); every output must match LiteRT byte for byte there too, from the library built with MVE
(the Helium bodies) and from the one built `+nomve` (the portable bodies).

The host bindings record each call (heliabuild.kernels.int8.HostKernelCall); the test turns the calls into
static C initializers, links them with the firmware library (heliabuild's kernels and the semihosting
harness) and reads the firmware's verdict from its console.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable
from pathlib import Path
from typing import ClassVar

import numpy as np
from conftest import FirmwareLibrary, require_firmware_tools
from helpers.int8_models import (
    binary_model,
    concatenation_model,
    conv_model,
    dequantize_model,
    fully_connected_model,
    pad_model,
    pool_model,
    quantize_model,
    reshape_model,
    run_reference,
    softmax_model,
)

from heliabuild.kernels import int8
from heliabuild.kernels.int8 import HostKernelCall, Int8Kernels, Quant
from heliabuild.kernels.native import load_host_library

CASES_PER_OPERATOR = 20
ACTIVATIONS = ("NONE", "RELU", "RELU6", "RELU_N1_TO_1")
STRUCT_TYPES = {
    int8.FullyConnectedArgs: "helia_fully_connected_s8_args",
    int8.ConvArgs: "helia_conv_s8_args",
    int8.PoolArgs: "helia_pool_s8_args",
    int8.BinaryArgs: "helia_binary_s8_args",
    int8.PadArgs: "helia_pad_args",
    int8.ConcatArgs: "helia_concat_args",
    int8.SoftmaxArgs: "helia_softmax_s8_args",
}


def _quant(rng: np.random.Generator, low: float = 1e-3, high: float = 0.5) -> Quant:
    return Quant(float(rng.uniform(low, high)), int(rng.integers(-128, 128)))


def _codes(rng: np.random.Generator, shape: tuple[int, ...], low: int = -128) -> np.ndarray:
    return rng.integers(low, 128, size=shape, dtype=np.int8)


def _activation(rng: np.random.Generator) -> str:
    return str(rng.choice(ACTIVATIONS))


def _extent(rng: np.random.Generator, small: int, large: int) -> int:
    """Below `small` half the time (the scalar tails), else up to `large` (whole MVE vectors and their tails)."""
    return int(rng.integers(1, small)) if rng.integers(2) else int(rng.integers(small, large))


def _fully_connected(
    k: Int8Kernels, rng: np.random.Generator, depth: int, units: int, per_tensor_small: bool = False
) -> np.ndarray:
    """`per_tensor_small`: one scale, a bias and a multiplier below 1/2 (shift -1 or below), KWS's and ResNet-8's
    last layer: the MVE body's held-vector passes."""
    batches = int(rng.integers(1, 4))
    x, w = _codes(rng, (batches, depth)), _codes(rng, (units, depth), -127)
    per_channel = not per_tensor_small and rng.integers(2)
    scales = (0.05 * rng.uniform(0.25, 1.0, size=units if per_channel else 1)).astype(np.float32)
    with_bias = per_tensor_small or rng.integers(2)
    bias = rng.integers(-5000, 5000, size=units, dtype=np.int32) if with_bias else None
    iq, act = _quant(rng), _activation(rng)
    oq = _quant(rng, 0.1, 2.0) if per_tensor_small else _quant(rng, 1e-3, 2.0)
    expected = run_reference(fully_connected_model(x.shape, w, scales, bias, iq, oq, act), [x])
    params = int8.fully_connected_params(x.size, w.shape, iq, scales, oq, act)
    k.fully_connected(params, x, w, bias, sums=bool(rng.integers(4)))
    return expected


def case_fully_connected(k: Int8Kernels, rng: np.random.Generator) -> np.ndarray:
    return _fully_connected(k, rng, _extent(rng, 16, 80), _extent(rng, 5, 24))


def case_fully_connected_held(k: Int8Kernels, rng: np.random.Generator) -> np.ndarray:
    """A depth of whole 16-byte chunks up to 64: the MVE body that holds the input vector in registers."""
    return _fully_connected(k, rng, 16 * int(rng.integers(1, 5)), int(rng.integers(1, 25)))


def case_fully_connected_held_passes(k: Int8Kernels, rng: np.random.Generator) -> np.ndarray:
    """The held-vector passes: up to 64 rows each, so up to 80 rows take two, and every tail of four."""
    return _fully_connected(k, rng, 16 * int(rng.integers(1, 5)), _extent(rng, 12, 81), per_tensor_small=True)


def _conv(k: Int8Kernels, rng: np.random.Generator, depthwise: bool) -> np.ndarray:
    kh, kw = (int(v) for v in rng.integers(1, 4, size=2))
    stride = tuple(int(v) for v in rng.integers(1, 3, size=2))
    dilation = tuple(int(v) for v in rng.integers(1, 3, size=2))
    padding = str(rng.choice(["SAME", "VALID"]))
    h = int(rng.integers((kh - 1) * dilation[0] + 1, 9))
    w_ = int(rng.integers((kw - 1) * dilation[1] + 1, 9))
    channels = _extent(rng, 5, 40)
    out_c = channels * int(rng.integers(1, 3)) if depthwise else _extent(rng, 6, 24)
    x = _codes(rng, (1, h, w_, channels))
    w = _codes(rng, (1, kh, kw, out_c) if depthwise else (out_c, kh, kw, channels), -127)
    scales = (0.05 * rng.uniform(0.25, 1.0, size=out_c)).astype(np.float32)
    bias = rng.integers(-5000, 5000, size=out_c, dtype=np.int32)
    iq, oq, act = _quant(rng), _quant(rng, 1e-3, 2.0), _activation(rng)
    params = int8.conv_params(
        x.shape, w.shape, iq, scales, oq, stride=stride, dilation=dilation, padding=padding, activation=act,
        depthwise=depthwise,
    )  # fmt: skip
    model = conv_model(
        x.shape, w, scales, bias, iq, oq, params.output_shape, stride=stride, dilation=dilation, padding=padding,
        activation=act, depthwise=depthwise,
    )  # fmt: skip
    expected = run_reference(model, [x])
    k.conv(params, x, w, bias, sums=bool(rng.integers(4)), scratch=bool(rng.integers(4)))
    return expected


def case_conv2d(k: Int8Kernels, rng: np.random.Generator) -> np.ndarray:
    return _conv(k, rng, False)


def _pointwise(k: Int8Kernels, rng: np.random.Generator, channels: int, out_c: int) -> np.ndarray:
    stride = (int(rng.integers(1, 3)),) * 2
    x = _codes(rng, (1, int(rng.integers(1, 6)), int(rng.integers(1, 6)), channels))
    w = _codes(rng, (out_c, 1, 1, channels), -127)
    scales = (0.05 * rng.uniform(0.25, 1.0, size=out_c if rng.integers(2) else 1)).astype(np.float32)
    bias = rng.integers(-5000, 5000, size=out_c, dtype=np.int32)
    iq, oq, act = _quant(rng), _quant(rng, 1e-3, 2.0), _activation(rng)
    params = int8.conv_params(x.shape, w.shape, iq, scales, oq, stride=stride, padding="VALID", activation=act)
    model = conv_model(
        x.shape, w, scales, bias, iq, oq, params.output_shape, stride=stride, dilation=(1, 1), padding="VALID",
        activation=act, depthwise=False,
    )  # fmt: skip
    expected = run_reference(model, [x])
    k.conv(params, x, w, bias, pointwise=True, sums=bool(rng.integers(4)))
    return expected


def case_conv2d_1x1(k: Int8Kernels, rng: np.random.Generator) -> np.ndarray:
    """The pointwise convolution the MVE body reads in place (no padding, stride 1 or 2)."""
    return _pointwise(k, rng, _extent(rng, 16, 70), _extent(rng, 5, 24))


def case_conv2d_1x1_held(k: Int8Kernels, rng: np.random.Generator) -> np.ndarray:
    """Whole 16-byte chunks up to 64 and channels in fours, up to two groups of 64: the held-vector body."""
    return _pointwise(k, rng, 16 * int(rng.integers(1, 5)), 4 * int(rng.integers(1, 21)))


def case_depthwise_conv2d(k: Int8Kernels, rng: np.random.Generator) -> np.ndarray:
    return _conv(k, rng, True)


def _depthwise(
    k: Int8Kernels, x: np.ndarray, w: np.ndarray, scales: np.ndarray, bias: np.ndarray, quants: tuple[Quant, Quant],
    act: str, stride: tuple[int, int], padding: str,
) -> np.ndarray:  # fmt: skip
    """LiteRT's output of a depthwise layer (depth multiplier 1, dilation 1), after calling the host kernel."""
    iq, oq = quants
    params = int8.conv_params(
        x.shape, w.shape, iq, scales, oq, stride=stride, padding=padding, activation=act, depthwise=True
    )
    model = conv_model(
        x.shape, w, scales, bias, iq, oq, params.output_shape, stride=stride, dilation=(1, 1), padding=padding,
        activation=act, depthwise=True,
    )  # fmt: skip
    expected = run_reference(model, [x])
    k.conv(params, x, w, bias)
    return expected


def case_depthwise_conv2d_wide(k: Int8Kernels, rng: np.random.Generator) -> np.ndarray:
    """More channels than the MVE body holds in one pass (64), a small window: every pass and its tail."""
    channels = int(rng.integers(60, 140))
    x = _codes(rng, (1, int(rng.integers(1, 5)), int(rng.integers(1, 5)), channels))
    w = _codes(rng, (1, 3, 3, channels), -127)
    scales = (0.05 * rng.uniform(0.25, 1.0, size=channels)).astype(np.float32)
    bias = rng.integers(-5000, 5000, size=channels, dtype=np.int32)
    quants = _quant(rng), _quant(rng, 1e-3, 2.0)
    return _depthwise(k, x, w, scales, bias, quants, _activation(rng), (1, 1), "SAME")


def case_depthwise_conv2d_3x3(k: Int8Kernels, rng: np.random.Generator) -> np.ndarray:
    """KWS's depthwise layer and its kin: 3x3, 16, 32 or 64 channels, stride_h 1, multipliers below 1/2 (the MVE
    body's 3x3 planes along the rows, padded rows and columns; below four rows, the general body)."""
    channels = int(rng.choice([16, 32, 64]))
    stride = (1, int(rng.integers(1, 3)))
    padding = str(rng.choice(["SAME", "VALID"]))
    low = 3 if padding == "VALID" else 1
    x = _codes(rng, (int(rng.integers(1, 3)), int(rng.integers(low, 8)), int(rng.integers(low, 7)), channels))
    w = _codes(rng, (1, 3, 3, channels), -127)
    scales = (0.05 * rng.uniform(0.25, 1.0, size=channels if rng.integers(4) else 1)).astype(np.float32)
    bias = rng.integers(-5000, 5000, size=channels, dtype=np.int32)
    quants = _quant(rng), _quant(rng, 0.1, 2.0)
    return _depthwise(k, x, w, scales, bias, quants, _activation(rng), stride, padding)


def case_depthwise_conv2d_plane(k: Int8Kernels, rng: np.random.Generator) -> np.ndarray:
    """3x3 with a stride-1 axis, one channel's plane at a time (the MVE body's plane path): tall and wide
    planes (either axis the vector one), more than one tile along each (28 outputs along the vector axis, eight
    columns of input across it; a last tile of fewer than four starts earlier), stride 2 across, every channel
    count, and scales from 1/64 to 4 (the shift below 0 and at 0 or above)."""
    tall = bool(rng.integers(2))
    # A quarter of the cases end a 28-output tile with 1 to 3 more outputs: the last tile starts earlier.
    long_side = int(rng.choice([29, 30, 31, 57, 58, 59])) if rng.integers(4) == 0 else int(rng.integers(1, 70))
    short_side = int(rng.integers(1, 24))
    height, width = (long_side, short_side) if tall else (short_side, long_side)
    channels = max(1, min(_extent(rng, 5, 40), 2000 // (height * width)))  # the firmware holds every case
    across = int(rng.integers(1, 3))
    stride = (1, across) if tall else (across, 1)
    padding = str(rng.choice(["SAME", "VALID"]))
    if padding == "VALID":
        height, width = height + 2, width + 2
    x = _codes(rng, (1 if height * width * channels > 1500 else 2, height, width, channels))
    w = _codes(rng, (1, 3, 3, channels), -127)
    scales = (rng.uniform(0.001, 0.05, size=channels if rng.integers(2) else 1)).astype(np.float32)
    bias = rng.integers(-5000, 5000, size=channels, dtype=np.int32)
    iq = _quant(rng, 0.01, 0.5)
    oq = Quant(float(iq.scale * scales.max() * rng.uniform(0.25, 64.0)), int(rng.integers(-128, 128)))
    return _depthwise(k, x, w, scales, bias, (iq, oq), _activation(rng), stride, padding)


def _binary(k: Int8Kernels, rng: np.random.Generator, kind: str) -> np.ndarray:
    shape = tuple(int(v) for v in rng.integers(1, 5, size=int(rng.integers(1, 5))))
    other = tuple(1 if rng.integers(3) == 0 else d for d in shape)[int(rng.integers(len(shape))) :]
    a, b = _codes(rng, shape), _codes(rng, other)
    q1, q2, qo, act = _quant(rng), _quant(rng), _quant(rng, 1e-3, 1.0), _activation(rng)
    params = (int8.add_params if kind == "add" else int8.mul_params)(q1, q2, qo, act)
    expected = run_reference(binary_model(kind, a.shape, b.shape, q1, q2, qo, act), [a, b])
    k.binary(kind, params, a, b)
    return expected


def case_add(k: Int8Kernels, rng: np.random.Generator) -> np.ndarray:
    return _binary(k, rng, "add")


def _same_extents(k: Int8Kernels, rng: np.random.Generator, kind: str) -> np.ndarray:
    """Inputs of the output's extents: the four-lane body (whole vectors and a tail)."""
    shape = (int(rng.integers(1, 4)), _extent(rng, 5, 40))
    a, b = _codes(rng, shape), _codes(rng, shape)
    q1, q2, qo, act = _quant(rng), _quant(rng), _quant(rng, 1e-3, 1.0), _activation(rng)
    params = (int8.add_params if kind == "add" else int8.mul_params)(q1, q2, qo, act)
    expected = run_reference(binary_model(kind, a.shape, b.shape, q1, q2, qo, act), [a, b])
    k.binary(kind, params, a, b)
    return expected


def _broadcast_rows(k: Int8Kernels, rng: np.random.Generator, kind: str) -> np.ndarray:
    """Broadcasting over long innermost rows (channels up to 40): the MVE body's rows, each input advancing
    along a row or repeating one element, either input broadcast."""
    shape = (int(rng.integers(1, 4)), int(rng.integers(1, 5)), _extent(rng, 5, 40))
    other = tuple(1 if rng.integers(2) else d for d in shape)[int(rng.integers(3)) :]
    a, b = _codes(rng, shape), _codes(rng, other)
    if rng.integers(2):
        a, b = b, a
    q1, q2, qo, act = _quant(rng), _quant(rng), _quant(rng, 1e-3, 1.0), _activation(rng)
    params = (int8.add_params if kind == "add" else int8.mul_params)(q1, q2, qo, act)
    expected = run_reference(binary_model(kind, a.shape, b.shape, q1, q2, qo, act), [a, b])
    k.binary(kind, params, a, b)
    return expected


def case_add_broadcast_rows(k: Int8Kernels, rng: np.random.Generator) -> np.ndarray:
    return _broadcast_rows(k, rng, "add")


def case_mul_broadcast_rows(k: Int8Kernels, rng: np.random.Generator) -> np.ndarray:
    return _broadcast_rows(k, rng, "mul")


def case_add_same_extents(k: Int8Kernels, rng: np.random.Generator) -> np.ndarray:
    return _same_extents(k, rng, "add")


def case_mul_same_extents(k: Int8Kernels, rng: np.random.Generator) -> np.ndarray:
    return _same_extents(k, rng, "mul")


def case_mul(k: Int8Kernels, rng: np.random.Generator) -> np.ndarray:
    return _binary(k, rng, "mul")


def _pool_case(
    k: Int8Kernels, rng: np.random.Generator, kind: str, x: np.ndarray, filter_size: tuple[int, int],
    stride: tuple[int, int], padding: str,
) -> np.ndarray:  # fmt: skip
    quant, act = _quant(rng), _activation(rng)
    params = int8.pool_params(x.shape, filter_size, quant, stride=stride, padding=padding, activation=act)
    model = pool_model(
        kind, x.shape, params.output_shape, quant, filter_size=filter_size, stride=stride, padding=padding,
        activation=act,
    )  # fmt: skip
    expected = run_reference(model, [x])
    k.pool(kind, params, x)
    return expected


def _pool(k: Int8Kernels, rng: np.random.Generator, kind: str) -> np.ndarray:
    fh, fw = (int(v) for v in rng.integers(1, 4, size=2))
    stride = (int(rng.integers(1, 3)), int(rng.integers(1, 3)))
    padding = str(rng.choice(["SAME", "VALID"]))
    x = _codes(rng, (1, int(rng.integers(fh, 9)), int(rng.integers(fw, 9)), int(rng.integers(1, 5))))
    return _pool_case(k, rng, kind, x, (fh, fw), stride, padding)


def case_average_pool2d(k: Int8Kernels, rng: np.random.Generator) -> np.ndarray:
    return _pool(k, rng, "average")


def case_max_pool2d(k: Int8Kernels, rng: np.random.Generator) -> np.ndarray:
    return _pool(k, rng, "max")


def _global_pool(k: Int8Kernels, rng: np.random.Generator, kind: str) -> np.ndarray:
    """A window over the whole input (KWS's last pool), up to 20 x 20 values: the MVE bodies' whole vectors and
    tails, windows of 256 values and fewer (AVERAGE's int16 sums, sometimes all -128) and of more."""
    h, w = int(rng.integers(1, 21)), int(rng.integers(1, 21))
    if rng.integers(4) == 0:
        h, w = 16, 16
    x = _codes(rng, (1, h, w, _extent(rng, 5, 40)))
    if rng.integers(4) == 0:
        x[...] = -128
    return _pool_case(k, rng, kind, x, (h, w), (1, 1), "VALID")


def case_average_pool2d_global(k: Int8Kernels, rng: np.random.Generator) -> np.ndarray:
    return _global_pool(k, rng, "average")


def case_max_pool2d_global(k: Int8Kernels, rng: np.random.Generator) -> np.ndarray:
    return _global_pool(k, rng, "max")


def case_reshape(k: Int8Kernels, rng: np.random.Generator) -> np.ndarray:
    shape = tuple(int(v) for v in rng.integers(1, 5, size=3))
    x, quant = _codes(rng, shape), _quant(rng)
    target = (shape[0] * shape[1], shape[2])
    expected = run_reference(reshape_model(shape, target, quant), [x])
    k.reshape(x, target)
    return expected


def case_pad(k: Int8Kernels, rng: np.random.Generator) -> np.ndarray:
    shape = tuple(int(v) for v in rng.integers(1, 4, size=int(rng.integers(1, 5))))
    paddings = [(int(a), int(b)) for a, b in rng.integers(0, 3, size=(len(shape), 2))]
    x, quant = _codes(rng, shape), _quant(rng)
    expected = run_reference(pad_model(shape, paddings, quant), [x])
    k.pad(x, paddings, quant.zero_point)
    return expected


def case_concatenation(k: Int8Kernels, rng: np.random.Generator) -> np.ndarray:
    rank = int(rng.integers(1, 5))
    base = [int(v) for v in rng.integers(1, 4, size=rank)]
    axis = int(rng.integers(-rank, rank))
    shapes = []
    for _ in range(int(rng.integers(1, 4))):
        shape = list(base)
        shape[axis] = int(rng.integers(1, 4))
        shapes.append(tuple(shape))
    arrays, quant = [_codes(rng, s) for s in shapes], _quant(rng)
    expected = run_reference(concatenation_model(shapes, axis, [quant] * len(shapes), quant), arrays)
    k.concatenation(arrays, axis)
    return expected


def case_quantize(k: Int8Kernels, rng: np.random.Generator) -> np.ndarray:
    quant = _quant(rng, 1e-3, 1.0)
    x = (rng.standard_normal(int(rng.integers(1, 40))) * 100 * quant.scale).astype(np.float32)
    x[::3] = (np.round(x[::3] / quant.scale) + 0.5).astype(np.float32) * np.float32(quant.scale)
    expected = run_reference(quantize_model(x.shape, quant), [x])
    k.quantize(x, quant)
    return expected


def case_dequantize(k: Int8Kernels, rng: np.random.Generator) -> np.ndarray:
    quant = _quant(rng, 1e-6, 10.0)
    x = _codes(rng, (int(rng.integers(1, 40)),))
    expected = run_reference(dequantize_model(x.shape, quant), [x])
    k.dequantize(x, quant)
    return expected


def case_softmax(k: Int8Kernels, rng: np.random.Generator) -> np.ndarray:
    quant, beta = _quant(rng, 1e-3, 1.0), float(rng.choice([0.5, 1.0, 2.0]))
    x = _codes(rng, (int(rng.integers(1, 4)), int(rng.integers(1, 30))))
    expected = run_reference(softmax_model(x.shape, quant, beta), [x])
    k.softmax(int8.softmax_params(quant.scale, beta), x)
    return expected


CASES: dict[str, Callable[[Int8Kernels, np.random.Generator], np.ndarray]] = {
    name.removeprefix("case_"): value for name, value in globals().items() if name.startswith("case_")
}


# ---- C emission -----------------------------------------------------------------------------------


def _c_number(value: object) -> str:
    if isinstance(value, float):
        return f"{float(np.float32(value)).hex()}f"
    number = int(value)  # type: ignore[call-overload]
    return "(-2147483647 - 1)" if number == -(2**31) else str(number)


def _address(value: object) -> int | None:
    if value is None or isinstance(value, int):
        return value
    return ctypes.cast(value, ctypes.c_void_p).value


class Emitter:
    """Static C arrays and calls replaying recorded KernelCalls."""

    C_TYPES: ClassVar[dict[str, str]] = {"int8": "int8_t", "int32": "int32_t", "float32": "float"}
    STRUCT_NAMES: ClassVar[dict[type, str]] = STRUCT_TYPES
    """The C type of each ctypes argument struct (another kernel family's test extends it)."""

    def __init__(self) -> None:
        self.declarations: list[str] = []
        self.calls: list[str] = []

    def _array(self, name: str, array: np.ndarray, writable: bool) -> None:
        ctype = self.C_TYPES[array.dtype.name]
        if writable:
            self.declarations.append(f"static {ctype} {name}[{array.size}];")
            return
        values = ", ".join(_c_number(float(v) if array.dtype.kind == "f" else int(v)) for v in array.reshape(-1))
        self.declarations.append(f"static const {ctype} {name}[{array.size}] = {{{values}}};")

    def add(self, index: int, operator: str, call: HostKernelCall, expected: np.ndarray) -> None:
        names: dict[int, str] = {}
        for position, array in enumerate(call.arrays):
            if array is None:
                continue
            name = f"c{index}_{position}"
            if isinstance(array, np.ndarray):
                names[array.ctypes.data] = name
                self._array(name, array, writable=position >= len(call.arrays) - call.written)
            else:  # a ctypes table of pointers (CONCATENATION's inputs)
                names[ctypes.addressof(array)] = name
                entries = ", ".join(names[address] for address in array)
                self.declarations.append(f"static const void *const {name}[{len(array)}] = {{{entries}}};")
        output = call.arrays[-1]
        assert isinstance(output, np.ndarray)
        self._array(f"e{index}", np.ascontiguousarray(expected, output.dtype), writable=False)
        arguments = []
        for argument in call.arguments:
            if isinstance(argument, ctypes.Structure):
                self.declarations.append(
                    f"static const {self.STRUCT_NAMES[type(argument)]} a{index} = {self._struct(argument, names)};"
                )
                arguments.append(f"&a{index}")
            else:
                arguments.append(self._scalar(argument, names))
        self.calls.append(
            f'    check({index}, "{operator}", {call.function}({", ".join(arguments)}), '
            f"c{index}_{len(call.arrays) - 1}, e{index}, sizeof e{index});"
        )

    @staticmethod
    def _scalar(argument: object, names: dict[int, str]) -> str:
        if isinstance(argument, ctypes.c_float):
            return _c_number(float(argument.value))
        if isinstance(argument, int) and argument in names:
            return names[argument]
        if isinstance(argument, (int, float)):
            return _c_number(argument)
        address = _address(argument)
        return names[address] if address else "NULL"

    @staticmethod
    def _struct(value: ctypes.Structure, names: dict[int, str]) -> str:
        parts = []
        for field, ctype in value._fields_:  # type: ignore[misc]
            item = getattr(value, field)
            if ctype is ctypes.c_void_p or issubclass(ctype, ctypes._Pointer):
                address = _address(item)
                parts.append(f".{field} = {names[address] if address else 'NULL'}")
            elif issubclass(ctype, ctypes.Array):
                parts.append(f".{field} = {{{', '.join(_c_number(v) for v in item)}}}")
            else:
                parts.append(f".{field} = {_c_number(item)}")
        return "{" + ", ".join(parts) + "}"

    def source(self) -> str:
        return "\n".join(
            [
                "/* Generated by tests/test_kernels_int8_m55.py: int8 kernel calls and LiteRT's outputs. */",
                "#include <stddef.h>",
                "#include <stdint.h>",
                "#include <string.h>",
                '#include "helia_ops.h"',
                '#include "semihosting.h"',
                "",
                *self.declarations,
                "",
                "static int failures;",
                "",
                "static void write_int(int value)",
                "{",
                "    char text[12];",
                "    int i = 11;",
                "    unsigned magnitude = value < 0 ? 0u - (unsigned)value : (unsigned)value;",
                "    text[i] = '\\0';",
                "    do {",
                "        text[--i] = (char)('0' + magnitude % 10u);",
                "        magnitude /= 10u;",
                "    } while (magnitude != 0u);",
                "    if (value < 0) {",
                "        text[--i] = '-';",
                "    }",
                "    helia_semihost_write(text + i);",
                "}",
                "",
                "static void check(int index, const char *op, helia_status status, const void *out,",
                "                  const void *expected, size_t bytes)",
                "{",
                "    if (status != HELIA_STATUS_OK || memcmp(out, expected, bytes) != 0) {",
                '        helia_semihost_write("FAIL ");',
                "        write_int(index);",
                '        helia_semihost_write(" ");',
                "        helia_semihost_write(op);",
                '        helia_semihost_write(" status ");',
                "        write_int((int)status);",
                '        helia_semihost_write("\\n");',
                "        ++failures;",
                "    }",
                "}",
                "",
                "int main(void)",
                "{",
                *self.calls,
                '    helia_semihost_write(failures ? "helia-int8 FAILED " : "helia-int8 OK ");',
                f"    write_int({len(self.calls)} - failures);",
                f'    helia_semihost_write("/{len(self.calls)}\\n");',
                "    return failures;",
                "}",
                "",
            ]
        )


def replay_on_cortex_m55(
    kernels: Int8Kernels,
    cases: dict[str, Callable[..., np.ndarray]],
    emitter: Emitter,
    folder: Path,
    library: Path,
    seed: int,
    mve: bool = True,
) -> None:
    """Run CASES_PER_OPERATOR seeded cases of every operator on the host (each must equal LiteRT), replay the
    recorded calls in one firmware on QEMU and require every output to match there too."""
    require_firmware_tools()
    from heliabuild.firmware.build import link_firmware
    from heliabuild.firmware.qemu import run_on_qemu

    recorded: list[HostKernelCall] = []
    kernels.recorder = recorded.append
    rng = np.random.default_rng(seed)
    for operator, case in cases.items():
        for _ in range(CASES_PER_OPERATOR):
            recorded.clear()
            expected = case(kernels, rng)
            (call,) = recorded
            host = call.arrays[-1]
            assert isinstance(host, np.ndarray) and host.tobytes() == expected.tobytes(), operator
            emitter.add(len(emitter.calls), operator, call, expected)
    source = folder / "int8_cases.c"
    source.write_text(emitter.source())
    elf = link_firmware(library, [source], [], folder / "int8_cases.elf", mve=mve)
    run = run_on_qemu(elf, timeout_s=120)
    total = len(cases) * CASES_PER_OPERATOR
    assert run.console.strip().splitlines()[-1] == f"helia-int8 OK {total}/{total}", run.console[-2000:]
    assert run.exit_status == 0


def test_every_operator_is_bit_exact_on_the_cortex_m55(
    tmp_path: Path, host_kernel_library: Path, firmware_build: FirmwareLibrary
) -> None:
    """From the MVE library (the Helium bodies) and from the +nomve one (the portable bodies)."""
    kernels = Int8Kernels(load_host_library(host_kernel_library))
    replay_on_cortex_m55(kernels, CASES, Emitter(), tmp_path, firmware_build.path, 20261201, mve=firmware_build.mve)
