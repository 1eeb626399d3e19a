"""The int16 kernels (ops_int16_conv.c, ops_int16_lut.c, ops_int16_convert.c) under AddressSanitizer and UBSan:
the seeded cases of tests/test_kernels_int16_m55.py (buffers of exactly the tensors' sizes) and the extremes
(every int16 code at the largest input multiplier, accumulators near 2^47, a 65536-wide SOFTMAX row, NaN and
infinities through QUANTIZE) through a sanitized build and the regular host build, byte for byte alike, with no
report."""

from __future__ import annotations

from pathlib import Path

from helpers.sanitizers import SanitizedBuilds
from test_kernels_int8_sanitizers import run_sanitized
from test_kernels_int16_m55 import CASES

DRIVER = """
import ctypes, sys
import numpy as np
sys.path.insert(0, {tests!r})
import test_kernels_int16_m55 as cases
from heliabuild.kernels import int16
from heliabuild.kernels.int8 import Quant

# LiteRT is not under test here: the cases' references are stubbed out.
cases.run_reference = lambda model, inputs: None
sanitized = int16.Int16Kernels(ctypes.CDLL({library!r}))
regular = int16.Int16Kernels(ctypes.CDLL({regular!r}))
outputs = {{}}
sanitized.recorder = lambda call: outputs.__setitem__("sanitized", call.arrays[-1])
regular.recorder = lambda call: outputs.__setitem__("regular", call.arrays[-1])
count = 0


def both(run):
    global count
    run(sanitized)
    run(regular)
    assert outputs["sanitized"].tobytes() == outputs["regular"].tobytes(), count
    count += 1


for kind, case in cases.CASES.items():
    for number in range(40):
        both(lambda k: case(k, np.random.default_rng([number, 16])))
codes = np.arange(-32768, 32768, dtype=np.int16)
for operator in ("LOGISTIC", "TANH"):
    for multiplier, shift in ((0xFFFF, 0), (1, 31), (3, 0), (0xFFFF, 31)):
        both(lambda k: k.sigmoid_s16(operator, int16.SigmoidS16Params(multiplier, shift), codes))
extreme = np.full((2, 4096), -32768, np.int16)
weights = np.full((3, 4096), -128, np.int8)
for bias in (None, np.array([2**62, -(2**62), 0], np.int64)):
    for scale in (1e-6, 1.0):
        params = int16.fully_connected_s16_params(extreme.size, weights.shape, Quant(scale, 0), [1.0], Quant(1.0, 0))
        both(lambda k: k.fully_connected_s16(params, extreme, weights, bias))
image = np.full((1, 5, 5, 1024), 32767, np.int16)
filters = np.full((2, 3, 3, 1024), -128, np.int8)
conv = int16.conv_s16_params(image.shape, filters.shape, Quant(1e-3, 0), [0.5], Quant(1e-3, 0))
both(lambda k: k.conv_s16(conv, image, filters, np.array([2**46, -(2**46)], np.int64)))
softmax = int16.softmax_s16_params(Quant(2e-3, 0), int16.SIGMOID_OUTPUT)
for row in (np.zeros((1, 65536), np.int16), np.tile(codes, (1, 1))):
    both(lambda k: k.softmax_s16(softmax, row))
special = np.array([np.nan, np.inf, -np.inf, 3.4e38, -3.4e38, 0.5, -0.5, 1.5e-3], np.float32)
both(lambda k: k.quantize_s16(special, Quant(1e-3, 0)))
both(lambda k: k.dequantize_s16(codes, Quant(3.0e38, 0)))
print("sanitized cases:", count)
"""


def test_int16_kernels_are_clean_under_asan_and_ubsan(tmp_path: Path, sanitized_builds: SanitizedBuilds) -> None:
    run = run_sanitized(tmp_path, DRIVER, sanitized_builds)
    assert f"sanitized cases: {len(CASES) * 40 + 8 + 4 + 1 + 2 + 2}" in run.stdout
