"""The C Detess stays inside its declared spans: run under AddressSanitizer and UBSan with exact-size buffers.

Guard bytes in the other tests catch stray writes; reads outside a span need a
sanitizer. The kernel is built with `-fsanitize=address,undefined` and driven
in a subprocess (the sanitizer runtime must be preloaded into Python) over the
seeded cases, the copy-path matrix and larger random requests, each with
malloc'd buffers of exactly the plan's sizes, so one byte read past a tiled or
linear span is a heap-buffer-overflow report and a failure.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from helpers.skips import require, require_tool

ROOT = Path(__file__).resolve().parents[1]
SOURCE = ROOT / "heliabuild" / "kernels" / "c" / "detess.c"

DRIVER = """
import ctypes, random, sys
import numpy as np
sys.path.insert(0, {tests!r})
from helpers.detess_goldens import linear_golden, random_case, tiled_golden
from test_kernels_detess_execute import FAST_PATHS, deterministic_cases
from heliabuild.kernels.detess import DType, check_inference
from heliabuild.kernels.detess.c_kernel import CDetess

kernel = CDetess(ctypes.CDLL({library!r}))
cases = [c for d in (DType.INT8, DType.BF16) for r in range(1, 7) for c in deterministic_cases(d, r, 20)]
rng = random.Random(9)
cases += FAST_PATHS + [random_case(rng, d, r, 20000) for d in (DType.INT8, DType.BF16) for r in range(1, 7)
                       for _ in range(8)]
for number, case in enumerate(cases):
    values = case.values(np.random.default_rng(number))
    plan = check_inference(case.request())
    golden = tiled_golden(values, case.axes, case.tile, case.padding, random.Random(number))
    source = np.empty(len(golden), np.uint8)  # exactly the plan's bytes, malloc'd: a redzone follows
    source[:] = np.frombuffer(golden, np.uint8)
    assert source.size == 0 or source.ctypes.data % 16 == 0
    target = np.full(plan.output_bytes, 0x5A, np.uint8)
    assert kernel.execute(kernel.check_inference(case.request()), [source], [target]) is None, case
    expected = linear_golden(values, case.view_strides, plan.output_bytes, bytes([0x5A]) * plan.output_bytes)
    assert target.tobytes() == expected, case
print("sanitized cases:", len(cases))
"""


def _runtime(name: str) -> str | None:
    found = subprocess.run(["gcc", f"-print-file-name={name}"], capture_output=True, text=True, check=False)
    path = found.stdout.strip()
    return path if found.returncode == 0 and os.path.isabs(path) and os.path.exists(path) else None


def test_no_access_outside_declared_spans(tmp_path: Path) -> None:
    require(sys.platform == "linux", "gcc's sanitizers are tested on Linux")
    require_tool("gcc", "gcc")
    asan, ubsan = _runtime("libasan.so"), _runtime("libubsan.so")
    require(asan is not None and ubsan is not None, "gcc has no libasan/libubsan here (Debian: libasan8 libubsan1)")
    library = tmp_path / "libdetess_sanitized.so"
    flags = ["-std=c99", "-O1", "-g", "-fno-omit-frame-pointer", "-fsanitize=address,undefined"]
    flags += ["-fno-sanitize-recover=all", "-Wall", "-Wextra", "-Werror", "-pedantic", "-fPIC", "-shared"]
    subprocess.run(["gcc", *flags, str(SOURCE), "-o", str(library)], check=True)
    driver = tmp_path / "driver.py"
    driver.write_text(DRIVER.format(tests=str(ROOT / "tests"), library=str(library)), encoding="utf-8")
    environment = dict(os.environ, LD_PRELOAD=f"{asan}:{ubsan}", PYTHONMALLOC="malloc", ASAN_OPTIONS="detect_leaks=0")
    run = subprocess.run(
        [sys.executable, str(driver)], capture_output=True, text=True, env=environment, cwd=ROOT, check=False
    )
    assert run.returncode == 0, (run.stdout + run.stderr)[-4000:]
    assert "sanitized cases:" in run.stdout
