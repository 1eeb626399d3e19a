"""The int16 (16x8) FULLY_CONNECTED, CONV_2D, DEPTHWISE_CONV_2D, LOGISTIC, TANH and SOFTMAX kernels on the
target: seeded random cases of each (CASES_PER_OPERATOR), their outputs taken from LiteRT's reference kernels,
replayed by one Cortex-M55 firmware on QEMU mps3-an547 (tests/test_kernels_int8_m55.py's replay); every output
must match LiteRT byte for byte there too."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import ClassVar

import numpy as np
from helpers.int8_models import run_reference
from helpers.int16_models import conv_s16_model, fully_connected_s16_model, softmax_s16_model, unary_s16_model
from test_kernels_int8_m55 import STRUCT_TYPES, Emitter, replay_on_cortex_m55

from heliabuild.kernels import int16
from heliabuild.kernels.int8 import Quant
from heliabuild.kernels.native import load_host_library

ACTIVATIONS = ("NONE", "RELU", "RELU6", "RELU_N1_TO_1")


class Int16Emitter(Emitter):
    C_TYPES: ClassVar[dict[str, str]] = {
        **Emitter.C_TYPES,
        "int16": "int16_t",
        "uint16": "uint16_t",
        "int64": "int64_t",
    }
    STRUCT_NAMES: ClassVar[dict[type, str]] = {
        **STRUCT_TYPES,
        int16.FullyConnectedS16Args: "helia_fully_connected_s16_args",
        int16.ConvS16Args: "helia_conv_s16_args",
        int16.SigmoidS16Args: "helia_sigmoid_s16_args",
        int16.SoftmaxS16Args: "helia_softmax_s16_args",
    }


Case = Callable[[int16.Int16Kernels, np.random.Generator], np.ndarray]


def _scales(rng: np.random.Generator, count: int) -> np.ndarray:
    return rng.uniform(1e-3, 1e-1, count if rng.integers(2) else 1).astype(np.float32)


def case_fully_connected(k: int16.Int16Kernels, rng: np.random.Generator) -> np.ndarray:
    batches, depth, output_depth = int(rng.integers(1, 4)), int(rng.integers(1, 200)), int(rng.integers(1, 10))
    filter = rng.integers(-127, 128, (output_depth, depth), dtype=np.int8)
    scales = _scales(rng, output_depth)
    bias = rng.integers(-(2**34), 2**34, output_depth, dtype=np.int64) if rng.integers(2) else None
    qi, qo = Quant(float(rng.uniform(1e-5, 1e-3)), 0), Quant(float(rng.uniform(1e-2, 1.0)), 0)
    activation = str(rng.choice(ACTIVATIONS))
    x = rng.integers(-32768, 32768, (batches, depth), dtype=np.int16)
    params = int16.fully_connected_s16_params(x.size, filter.shape, qi, scales, qo, activation)
    expected = run_reference(fully_connected_s16_model(x.shape, filter, scales, bias, qi, qo, activation), [x])
    k.fully_connected_s16(params, x, filter, bias)
    return expected


def _conv(depthwise: bool) -> Case:
    def case(k: int16.Int16Kernels, rng: np.random.Generator) -> np.ndarray:
        n, h, w, c, oc = (int(v) for v in rng.integers(1, [3, 8, 8, 5, 5]))
        kernel = (int(rng.integers(1, h + 1)), int(rng.integers(1, w + 1)))
        stride = (int(rng.integers(1, 3)), int(rng.integers(1, 3)))
        padding = str(rng.choice(["SAME", "VALID"]))
        if depthwise:
            oc *= c
        filter = rng.integers(-127, 128, (1, *kernel, oc) if depthwise else (oc, *kernel, c), dtype=np.int8)
        scales = _scales(rng, oc)
        bias = rng.integers(-(2**38), 2**38, oc, dtype=np.int64)
        qi, qo = Quant(float(rng.uniform(1e-5, 1e-3)), 0), Quant(float(rng.uniform(1e-2, 1.0)), 0)
        activation = str(rng.choice(ACTIVATIONS))
        x = rng.integers(-32768, 32768, (n, h, w, c), dtype=np.int16)
        params = int16.conv_s16_params(
            x.shape, filter.shape, qi, scales, qo, stride=stride, padding=padding, activation=activation,
            depthwise=depthwise,
        )  # fmt: skip
        model = conv_s16_model(
            x.shape, filter, scales, bias, qi, qo, params.output_shape, stride=stride, dilation=(1, 1),
            padding=padding, activation=activation, depthwise=depthwise,
        )  # fmt: skip
        expected = run_reference(model, [x])
        k.conv_s16(params, x, filter, bias)
        return expected

    return case


def _sigmoid(operator: str) -> Case:
    def case(k: int16.Int16Kernels, rng: np.random.Generator) -> np.ndarray:
        x = rng.integers(-32768, 32768, int(rng.integers(1, 600)), dtype=np.int16)
        quant = Quant(float(rng.choice([2.0**-12, 2.0**-11, rng.uniform(1e-5, 0.05)])), 0)
        expected = run_reference(unary_s16_model(operator, x.shape, quant), [x])
        k.sigmoid_s16(operator, int16.sigmoid_s16_params(operator, quant, int16.SIGMOID_OUTPUT), x)
        return expected

    return case


def case_softmax(k: int16.Int16Kernels, rng: np.random.Generator) -> np.ndarray:
    shape = (int(rng.integers(1, 4)), int(rng.integers(1, 100)))
    x = (rng.integers(-32768, 32768, shape) // int(rng.choice([1, 16, 256]))).astype(np.int16)
    quant, beta = Quant(float(rng.uniform(1e-5, 2e-3)), 0), float(rng.choice([1.0, 0.5]))
    expected = run_reference(softmax_s16_model(x.shape, quant, beta), [x])
    k.softmax_s16(int16.softmax_s16_params(quant, int16.SIGMOID_OUTPUT, beta), x)
    return expected


CASES: dict[str, Case] = {
    "fully_connected_s16": case_fully_connected,
    "conv2d_s16": _conv(depthwise=False),
    "depthwise_conv2d_s16": _conv(depthwise=True),
    "logistic_s16": _sigmoid("LOGISTIC"),
    "tanh_s16": _sigmoid("TANH"),
    "softmax_s16": case_softmax,
}


def test_every_int16_kernel_is_bit_exact_on_the_cortex_m55(
    tmp_path: Path, host_kernel_library: Path, firmware_library: Path
) -> None:
    kernels = int16.Int16Kernels(load_host_library(host_kernel_library))
    replay_on_cortex_m55(kernels, CASES, Int16Emitter(), tmp_path, firmware_library, 20261216)
