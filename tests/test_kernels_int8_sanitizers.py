"""The int8 C kernels under AddressSanitizer and UBSan: no access outside the buffers, no undefined behaviour.

The kernels promise defined C throughout (no signed overflow, no negative or oversized shifts) and stay
inside their buffers. They are built with `-fsanitize=address,undefined -fno-sanitize-recover=all` and
driven in a subprocess (the sanitizer runtime must be preloaded into Python) over the random cases of every
operator from test_kernels_int8_m55 (numpy buffers of exactly the tensors' sizes, so a byte past one is a
heap-buffer-overflow report), with each output compared to the regular host build's, and over the
fixed-point primitives at the int32 extremes.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from helpers.sanitizers import ROOT, SanitizedBuilds, run_driver

DRIVER = """
import ctypes, sys
import numpy as np
sys.path.insert(0, {tests!r})
import test_kernels_int8_m55 as cases
from heliabuild.kernels.fixed_point import mbqm_double, mbqm_single
from heliabuild.kernels.int8 import Int8Kernels

cases.run_reference = lambda model, inputs: None  # LiteRT is not under test here
sanitized = Int8Kernels(ctypes.CDLL({library!r}))
regular = Int8Kernels(ctypes.CDLL({regular!r}))
outputs = {{}}
sanitized.recorder = lambda call: outputs.__setitem__("sanitized", call.arrays[-1])
regular.recorder = lambda call: outputs.__setitem__("regular", call.arrays[-1])
count = 0
for seed in range(3):
    for name, case in cases.CASES.items():
        for number in range(25):
            case(sanitized, np.random.default_rng([seed, number]))
            case(regular, np.random.default_rng([seed, number]))
            assert outputs["sanitized"].tobytes() == outputs["regular"].tobytes(), (name, seed, number)
            count += 1
rng = np.random.default_rng(7)
edges = [-(2**31), -(2**31) + 1, -1, 0, 1, 2**31 - 1]
xs = edges + [int(v) for v in rng.integers(-(2**31), 2**31, size=3000)]
for x in xs:
    for multiplier in (0, 2**30, 2**31 - 1, int(rng.integers(2**30, 2**31))):
        for shift in (-31, -30, -1, 0, 1, 29, 30, int(rng.integers(-31, 31))):
            assert sanitized.mbqm("single", x, multiplier, shift) == mbqm_single(x, multiplier, shift)
            assert sanitized.mbqm("double", x, multiplier, shift) == mbqm_double(x, multiplier, shift)
print("sanitized cases:", count)
"""


def run_sanitized(tmp_path: Path, driver_text: str, builds: SanitizedBuilds) -> subprocess.CompletedProcess[str]:
    """Run `driver_text` (a format string of {tests}, {library}, {regular}) in a Python with ASan and UBSan
    preloaded, against the kernels built sanitized and as usual (`builds`)."""
    text = driver_text.format(tests=str(ROOT / "tests"), library=str(builds.library), regular=str(builds.regular))
    run = run_driver(tmp_path, text)
    assert run.returncode == 0, (run.stdout + run.stderr)[-4000:]
    return run


def test_int8_kernels_are_clean_under_asan_and_ubsan(tmp_path: Path, sanitized_builds: SanitizedBuilds) -> None:
    run = run_sanitized(tmp_path, DRIVER, sanitized_builds)
    from test_kernels_int8_m55 import CASES

    assert f"sanitized cases: {3 * 25 * len(CASES)}" in run.stdout  # 75 per operator case
