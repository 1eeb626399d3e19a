"""The LUT, arithmetic-heavy, spatial and int16 kernels on the target: seeded random cases of each (LOGISTIC,
TANH, EXP, HARD_SWISH, RSQRT, SQUARED_DIFFERENCE, L2_NORMALIZATION, LOG_SOFTMAX, BATCH_MATMUL, TRANSPOSE_CONV,
both RESIZEs, int16 ADD and MUL; CASES_PER_OPERATOR each), their outputs taken from LiteRT's reference kernels,
replayed by one Cortex-M55 firmware on QEMU mps3-an547 (the firmware library built once per session); every
output must match LiteRT byte for byte there too (tests/test_kernels_int8_m55.py's replay)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import ClassVar

import numpy as np
from conftest import FirmwareLibrary
from helpers.int8_math_models import (
    batch_matmul_model,
    binary_s16_model,
    resize_model,
    squared_difference_model,
    transpose_conv_model,
    unary_model,
)
from helpers.int8_models import run_reference
from test_kernels_int8_m55 import STRUCT_TYPES, Emitter, replay_on_cortex_m55

from heliabuild.kernels import int8_math, int8_spatial, int16
from heliabuild.kernels.int8 import Quant
from heliabuild.kernels.native import load_host_library


class MathEmitter(Emitter):
    C_TYPES: ClassVar[dict[str, str]] = {**Emitter.C_TYPES, "int16": "int16_t"}
    STRUCT_NAMES: ClassVar[dict[type, str]] = {
        **STRUCT_TYPES,
        int8_math.LookupArgs: "helia_lookup_s8_args",
        int8_math.HardSwishArgs: "helia_hard_swish_s8_args",
        int8_math.RsqrtArgs: "helia_rsqrt_s8_args",
        int8_math.L2NormalizationArgs: "helia_l2_normalization_s8_args",
        int8_math.LogSoftmaxArgs: "helia_log_softmax_s8_args",
        int8_spatial.BatchMatmulArgs: "helia_batch_matmul_s8_args",
        int8_spatial.ResizeArgs: "helia_resize_s8_args",
        int16.BinaryS16Args: "helia_binary_s16_args",
    }


class Kernels(int8_math.Int8MathKernels, int8_spatial.Int8SpatialKernels, int16.Int16Kernels):
    """The three families' bindings on one library, so one firmware replays every case."""

    _SIGNATURES: ClassVar[dict[str, tuple[list[object], object]]] = {
        **int8_math.Int8MathKernels._SIGNATURES,
        **int8_spatial.Int8SpatialKernels._SIGNATURES,
        **int16.Int16Kernels._SIGNATURES,
    }


def _quant(rng: np.random.Generator, low: float = 1e-3, high: float = 0.5) -> Quant:
    return Quant(float(rng.uniform(low, high)), int(rng.integers(-128, 128)))


def _codes(rng: np.random.Generator, low: int = -128) -> np.ndarray:
    shape = tuple(int(v) for v in rng.integers(1, 6, size=int(rng.integers(1, 4))))
    return rng.integers(low, 128, size=shape, dtype=np.int8)


Case = Callable[[Kernels, np.random.Generator], np.ndarray]


def _lookup(operator: str, output: Quant | None) -> Case:
    def case(k: Kernels, rng: np.random.Generator) -> np.ndarray:
        x, iq = np.arange(-128, 128, dtype=np.int8), _quant(rng, 1e-3, 2.0)
        oq = output or _quant(rng, 1e-3, 4.0)
        expected = run_reference(unary_model(operator, x.shape, iq, oq), [x])
        k.lookup(int8_math.lookup_table(operator, iq, oq), x)
        return expected

    return case


def case_hard_swish(k: Kernels, rng: np.random.Generator) -> np.ndarray:
    x, iq = _codes(rng), _quant(rng)
    oq = Quant(float(rng.uniform(iq.scale / 100, 0.5)), int(rng.integers(-128, 128)))
    expected = run_reference(unary_model("HARD_SWISH", x.shape, iq, oq), [x])
    k.hard_swish(int8_math.hard_swish_params(iq, oq), x)
    return expected


def case_rsqrt(k: Kernels, rng: np.random.Generator) -> np.ndarray:
    iq, oq = _quant(rng), _quant(rng)
    x = _codes(rng, iq.zero_point)
    expected = run_reference(unary_model("RSQRT", x.shape, iq, oq), [x])
    k.rsqrt(int8_math.rsqrt_params(iq, oq), x)
    return expected


def case_squared_difference(k: Kernels, rng: np.random.Generator) -> np.ndarray:
    a = _codes(rng)
    b = rng.integers(-128, 128, size=tuple(1 if rng.integers(3) == 0 else d for d in a.shape), dtype=np.int8)
    q1, q2, qo = _quant(rng), _quant(rng), _quant(rng, 0.05, 2.0)
    expected = run_reference(squared_difference_model(a.shape, b.shape, q1, q2, qo), [a, b])
    k.binary("squared_difference", int8_math.squared_difference_params(q1, q2, qo), a, b)
    return expected


def case_l2_normalization(k: Kernels, rng: np.random.Generator) -> np.ndarray:
    x, iq = _codes(rng), _quant(rng, 1e-3, 2.0)
    expected = run_reference(unary_model("L2_NORMALIZATION", x.shape, iq, int8_math.L2_NORMALIZATION_OUTPUT), [x])
    k.l2_normalization(iq.zero_point, x)
    return expected


def case_log_softmax(k: Kernels, rng: np.random.Generator) -> np.ndarray:
    x, iq = _codes(rng), _quant(rng, 1e-3, 2.0)
    expected = run_reference(unary_model("LOG_SOFTMAX", x.shape, iq, int8_math.LOG_SOFTMAX_OUTPUT), [x])
    k.log_softmax(int8_math.log_softmax_params(iq.scale), x)
    return expected


def _batch_matmul(k: Kernels, rng: np.random.Generator, high: int) -> np.ndarray:
    batch = tuple(int(v) for v in rng.integers(1, 3, size=int(rng.integers(0, 3))))
    rows, depth, cols = (int(v) for v in rng.integers(1, high, size=3))
    adj_x, adj_y = bool(rng.integers(2)), bool(rng.integers(2))
    lhs_shape = (*batch, *((depth, rows) if adj_x else (rows, depth)))
    rhs_shape = (*tuple(1 if rng.integers(2) else d for d in batch), *((cols, depth) if adj_y else (depth, cols)))
    a, b = rng.integers(-128, 128, lhs_shape, dtype=np.int8), rng.integers(-128, 128, rhs_shape, dtype=np.int8)
    lq, rq, oq = _quant(rng), _quant(rng), _quant(rng, 0.01, 4.0)
    params = int8_spatial.batch_matmul_params(lhs_shape, rhs_shape, lq, rq, oq, adj_lhs=adj_x, adj_rhs=adj_y)
    model = batch_matmul_model(lhs_shape, rhs_shape, params.output_shape, lq, rq, oq, adj_x=adj_x, adj_y=adj_y)
    expected = run_reference(model, [a, b])
    k.batch_matmul(params, a, b)
    return expected


def case_batch_matmul(k: Kernels, rng: np.random.Generator) -> np.ndarray:
    return _batch_matmul(k, rng, 9)


def case_batch_matmul_wide(k: Kernels, rng: np.random.Generator) -> np.ndarray:
    """Up to 24 columns and depth: the MVE body's whole four-column vectors and their tails."""
    return _batch_matmul(k, rng, 25)


def _transpose_conv(k: Kernels, rng: np.random.Generator, channels: int) -> np.ndarray:
    kernel = tuple(int(v) for v in rng.integers(1, 4, size=2))
    stride = tuple(int(v) for v in rng.integers(1, 3, size=2))
    padding = str(rng.choice(["SAME", "VALID"]))
    n, h, w, oc = (int(v) for v in rng.integers(1, 5, size=4))
    c = channels
    hw = [
        size * s if padding == "SAME" else (size - 1) * s + kk
        for size, s, kk in zip((h, w), stride, kernel, strict=True)
    ]
    output_shape = (n, *hw, oc)
    weights = rng.integers(-127, 128, (oc, *kernel, c), dtype=np.int8)
    scales = (0.05 * rng.uniform(0.25, 1.0, size=oc)).astype(np.float32)
    bias = rng.integers(-5000, 5000, oc, dtype=np.int32)
    x = rng.integers(-128, 128, (n, h, w, c), dtype=np.int8)
    iq, oq, act = _quant(rng), _quant(rng, 1e-3, 2.0), str(rng.choice(["NONE", "RELU"]))
    params = int8_spatial.transpose_conv_params(
        x.shape, weights.shape, output_shape, iq, scales, oq, stride=stride, padding=padding, activation=act
    )
    model = transpose_conv_model(
        x.shape, weights, scales, bias, iq, oq, output_shape, stride=stride, padding=padding, activation=act
    )
    expected = run_reference(model, [x])
    k.transpose_conv(params, x, weights, bias)
    return expected


def case_transpose_conv(k: Kernels, rng: np.random.Generator) -> np.ndarray:
    return _transpose_conv(k, rng, int(rng.integers(1, 5)))


def case_transpose_conv_wide(k: Kernels, rng: np.random.Generator) -> np.ndarray:
    """Up to 40 input channels: the MVE dot product's whole 16-byte vectors and their tails."""
    return _transpose_conv(k, rng, int(rng.integers(5, 41)))


def _resize(kind: str) -> Case:
    def case(k: Kernels, rng: np.random.Generator) -> np.ndarray:
        x = rng.integers(-128, 128, tuple(int(v) for v in rng.integers(1, [3, 7, 7, 4])), dtype=np.int8)
        output_hw = (int(rng.integers(1, 13)), int(rng.integers(1, 13)))
        align, half = [(False, False), (True, False), (False, True)][int(rng.integers(3))]
        model = resize_model(kind, x.shape, output_hw, _quant(rng), align_corners=align, half_pixel_centers=half)
        expected = run_reference(model, [x])
        k.resize(kind, x, output_hw, align_corners=align, half_pixel_centers=half)
        return expected

    return case


def _binary_s16(kind: str) -> Case:
    def case(k: Kernels, rng: np.random.Generator) -> np.ndarray:
        shape = tuple(int(v) for v in rng.integers(1, 5, size=int(rng.integers(1, 4))))
        other = tuple(1 if rng.integers(3) == 0 else d for d in shape)[int(rng.integers(len(shape))) :]
        a = rng.integers(-32768, 32768, shape, dtype=np.int16)
        b = rng.integers(-32768, 32768, other, dtype=np.int16)
        q1, q2 = Quant(float(rng.uniform(1e-5, 1e-2)), 0), Quant(float(rng.uniform(1e-5, 1e-2)), 0)
        qo = Quant(float(rng.uniform(max(q1.scale, q2.scale) / 2**13, 2e-2)), 0)
        act = str(rng.choice(["NONE", "RELU", "RELU6", "RELU_N1_TO_1"]))
        params = (int16.add_s16_params if kind == "add" else int16.mul_s16_params)(q1, q2, qo, act)
        expected = run_reference(binary_s16_model(kind, a.shape, b.shape, q1, q2, qo, act), [a, b])
        k.binary_s16(kind, params, a, b)
        return expected

    return case


CASES: dict[str, Case] = {
    "logistic": _lookup("LOGISTIC", int8_math.LOGISTIC_OUTPUT),
    "tanh": _lookup("TANH", int8_math.TANH_OUTPUT),
    "exp": _lookup("EXP", None),
    "hard_swish": case_hard_swish,
    "rsqrt": case_rsqrt,
    "squared_difference": case_squared_difference,
    "l2_normalization": case_l2_normalization,
    "log_softmax": case_log_softmax,
    "batch_matmul": case_batch_matmul,
    "batch_matmul_wide": case_batch_matmul_wide,
    "transpose_conv": case_transpose_conv,
    "transpose_conv_wide": case_transpose_conv_wide,
    "resize_nearest": _resize("nearest"),
    "resize_bilinear": _resize("bilinear"),
    "add_s16": _binary_s16("add"),
    "mul_s16": _binary_s16("mul"),
}


def test_every_math_kernel_is_bit_exact_on_the_cortex_m55(
    tmp_path: Path, host_kernel_library: Path, firmware_build: FirmwareLibrary
) -> None:
    """From the MVE library (the Helium bodies) and from the +nomve one (the portable bodies)."""
    kernels = Kernels(load_host_library(host_kernel_library))
    replay_on_cortex_m55(kernels, CASES, MathEmitter(), tmp_path, firmware_build.path, 20261202, mve=firmware_build.mve)
