"""The LUT and arithmetic-heavy int8 kernels on the target: seeded random cases of each (LOGISTIC, TANH, EXP,
HARD_SWISH, RSQRT, SQUARED_DIFFERENCE; CASES_PER_OPERATOR each), their outputs taken from LiteRT's reference
kernels, replayed by one Cortex-M55 firmware on QEMU mps3-an547 (the firmware library built once per session);
every output must match LiteRT byte for byte there too (tests/test_kernels_int8_m55.py's replay)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import ClassVar

import numpy as np
from helpers.int8_math_models import squared_difference_model, unary_model
from helpers.int8_models import run_reference
from test_kernels_int8_m55 import STRUCT_TYPES, Emitter, replay_on_cortex_m55

from heliabuild.kernels import int8_math
from heliabuild.kernels.int8 import Quant
from heliabuild.kernels.native import load_host_library


class MathEmitter(Emitter):
    STRUCT_NAMES: ClassVar[dict[type, str]] = {
        **STRUCT_TYPES,
        int8_math.LookupArgs: "helia_lookup_s8_args",
        int8_math.HardSwishArgs: "helia_hard_swish_s8_args",
        int8_math.RsqrtArgs: "helia_rsqrt_s8_args",
    }


def _quant(rng: np.random.Generator, low: float = 1e-3, high: float = 0.5) -> Quant:
    return Quant(float(rng.uniform(low, high)), int(rng.integers(-128, 128)))


def _codes(rng: np.random.Generator, low: int = -128) -> np.ndarray:
    shape = tuple(int(v) for v in rng.integers(1, 6, size=int(rng.integers(1, 4))))
    return rng.integers(low, 128, size=shape, dtype=np.int8)


Case = Callable[[int8_math.Int8MathKernels, np.random.Generator], np.ndarray]


def _lookup(operator: str, output: Quant | None) -> Case:
    def case(k: int8_math.Int8MathKernels, rng: np.random.Generator) -> np.ndarray:
        x, iq = np.arange(-128, 128, dtype=np.int8), _quant(rng, 1e-3, 2.0)
        oq = output or _quant(rng, 1e-3, 4.0)
        expected = run_reference(unary_model(operator, x.shape, iq, oq), [x])
        k.lookup(int8_math.lookup_table(operator, iq, oq), x)
        return expected

    return case


def case_hard_swish(k: int8_math.Int8MathKernels, rng: np.random.Generator) -> np.ndarray:
    x, iq = _codes(rng), _quant(rng)
    oq = Quant(float(rng.uniform(iq.scale / 100, 0.5)), int(rng.integers(-128, 128)))
    expected = run_reference(unary_model("HARD_SWISH", x.shape, iq, oq), [x])
    k.hard_swish(int8_math.hard_swish_params(iq, oq), x)
    return expected


def case_rsqrt(k: int8_math.Int8MathKernels, rng: np.random.Generator) -> np.ndarray:
    iq, oq = _quant(rng), _quant(rng)
    x = _codes(rng, iq.zero_point)
    expected = run_reference(unary_model("RSQRT", x.shape, iq, oq), [x])
    k.rsqrt(int8_math.rsqrt_params(iq, oq), x)
    return expected


def case_squared_difference(k: int8_math.Int8MathKernels, rng: np.random.Generator) -> np.ndarray:
    a = _codes(rng)
    b = rng.integers(-128, 128, size=tuple(1 if rng.integers(3) == 0 else d for d in a.shape), dtype=np.int8)
    q1, q2, qo = _quant(rng), _quant(rng), _quant(rng, 0.05, 2.0)
    expected = run_reference(squared_difference_model(a.shape, b.shape, q1, q2, qo), [a, b])
    k.binary("squared_difference", int8_math.squared_difference_params(q1, q2, qo), a, b)
    return expected


CASES: dict[str, Case] = {
    "logistic": _lookup("LOGISTIC", int8_math.LOGISTIC_OUTPUT),
    "tanh": _lookup("TANH", int8_math.TANH_OUTPUT),
    "exp": _lookup("EXP", None),
    "hard_swish": case_hard_swish,
    "rsqrt": case_rsqrt,
    "squared_difference": case_squared_difference,
}


def test_every_math_kernel_is_bit_exact_on_the_cortex_m55(
    tmp_path: Path, host_kernel_library: Path, firmware_library: Path
) -> None:
    kernels = int8_math.Int8MathKernels(load_host_library(host_kernel_library))
    replay_on_cortex_m55(kernels, CASES, MathEmitter(), tmp_path, firmware_library, 20261202)
