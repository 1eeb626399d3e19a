"""Issue 22 part A's kernels (ops_unary.c, ops_binary.c, ops_data.c) under AddressSanitizer and UBSan: the
random cases of tests/test_codegen_data_ops.py (buffers of exactly the tensors' sizes) through a sanitized
build and the regular host build, byte for byte alike, with no report. Splits, whose outputs are several, are
driven here directly."""

from __future__ import annotations

from pathlib import Path

from helpers.sanitizers import SanitizedBuilds
from test_codegen_data_ops import REPLAYED
from test_kernels_int8_sanitizers import run_sanitized

DRIVER = """
import ctypes, sys
import numpy as np
sys.path.insert(0, {tests!r})
import test_codegen_data_ops as cases
from heliabuild.kernels.data_movement import DataKernels
from heliabuild.kernels.int8 import Int8Kernels

# LiteRT is not under test here: the cases' references are stubbed out.
cases.run_reference = lambda model, inputs: None
cases.run_all = lambda model, inputs: [None]
sanitized = Int8Kernels(ctypes.CDLL({library!r}))
regular = Int8Kernels(ctypes.CDLL({regular!r}))
outputs = {{}}
sanitized.recorder = lambda call: outputs.__setitem__("sanitized", call.arrays[-1])
regular.recorder = lambda call: outputs.__setitem__("regular", call.arrays[-1])
count = 0
for kind, case in cases.REPLAYED.items():
    for number in range(40):
        case(sanitized, np.random.default_rng([number, 1]), kind)
        case(regular, np.random.default_rng([number, 1]), kind)
        assert outputs["sanitized"].tobytes() == outputs["regular"].tobytes(), (kind, number)
        count += 1
rng = np.random.default_rng(3)
split = DataKernels(sanitized.library)
for number in range(100):
    shape = tuple(int(v) for v in rng.integers(1, 5, size=int(rng.integers(1, 5))))
    x = rng.integers(-128, 128, size=shape, dtype=np.int8)
    axis = int(rng.integers(len(shape)))
    cuts = sorted(set(int(v) for v in rng.integers(1, shape[axis] + 1, size=2)) - {{shape[axis]}})
    extents = [b - a for a, b in zip([0, *cuts], [*cuts, shape[axis]])]
    parts = split.split(x, axis, extents)
    assert np.concatenate(parts, axis=axis).tobytes() == x.tobytes()
    count += 1
print("sanitized cases:", count)
"""


def test_part_a_kernels_are_clean_under_asan_and_ubsan(tmp_path: Path, sanitized_builds: SanitizedBuilds) -> None:
    run = run_sanitized(tmp_path, DRIVER, sanitized_builds)
    assert f"sanitized cases: {len(REPLAYED) * 40 + 100}" in run.stdout
