"""The LUT, arithmetic-heavy and spatial int8 C kernels under AddressSanitizer and UBSan, as
tests/test_kernels_int8_sanitizers.py does it for the others: built with `-fsanitize=address,undefined
-fno-sanitize-recover=all` and driven in a subprocess over the random cases of test_kernels_int8_math_m55 (numpy
buffers of exactly the tensors' sizes), each output compared with the regular host build's, plus the extremes:
every int8 code through RSQRT and HARD_SWISH at the widest shifts, and L2_NORMALIZATION rows whose sum of squares
approaches INT32_MAX."""

from __future__ import annotations

from pathlib import Path

from helpers.sanitizers import SanitizedBuilds
from test_kernels_int8_math_m55 import CASES
from test_kernels_int8_sanitizers import run_sanitized

DRIVER = """
import ctypes, sys
import numpy as np
sys.path.insert(0, {tests!r})
import test_kernels_int8_math_m55 as cases
from heliabuild.kernels.int8_math import HardSwishParams, RsqrtParams

cases.run_reference = lambda model, inputs: None  # LiteRT is not under test here
sanitized = cases.Kernels(ctypes.CDLL({library!r}))
regular = cases.Kernels(ctypes.CDLL({regular!r}))
outputs = {{}}
sanitized.recorder = lambda call: outputs.__setitem__("sanitized", call.arrays[-1])
regular.recorder = lambda call: outputs.__setitem__("regular", call.arrays[-1])


def same(call, name):
    call(sanitized)
    call(regular)
    assert outputs["sanitized"].tobytes() == outputs["regular"].tobytes(), name


count = 0
for seed in range(3):
    for name, case in cases.CASES.items():
        for number in range(25):
            same(lambda k: case(k, np.random.default_rng([seed, number])), (name, seed, number))
            count += 1
codes = np.arange(-128, 128, dtype=np.int8)
for zero_point in (-128, 0, 127):
    for multiplier, shift in ((2**30, -11), (2**31 - 1, 30), (2**30, 0)):
        same(lambda k: k.rsqrt(RsqrtParams(zero_point, zero_point, multiplier, shift), codes), "rsqrt")
    for reluish_shift in (-31, -16, 0, 1, 30):
        for output_shift in (-31, -16, -1, 0):
            params = HardSwishParams(zero_point, -zero_point - 1, 32767, reluish_shift, 32767, output_shift)
            same(lambda k: k.hard_swish(params, codes), "hard_swish")
wide = np.full((2, 33025), 127, np.int8)
wide[1, ::2] = -128
same(lambda k: k.l2_normalization(-1, wide), "l2_normalization")
print("sanitized cases:", count)
"""


def test_math_kernels_are_clean_under_asan_and_ubsan(tmp_path: Path, sanitized_builds: SanitizedBuilds) -> None:
    run = run_sanitized(tmp_path, DRIVER, sanitized_builds)
    assert f"sanitized cases: {3 * 25 * len(CASES)}" in run.stdout
