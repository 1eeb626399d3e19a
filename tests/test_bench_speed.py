"""bench/speed.py runs and prints every row of issue 13's table (its quick mode: two pipelines, one pair).

Speed itself is measured by running the benchmark, never asserted here: this only checks that the benchmark
works end to end (real builds, the copied pipelines checked against a real one, the baseline's graph equal to
heliabuild's, the changed-input builds rebuilding exactly one pipeline), so it does not rot.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[1] / "bench" / "speed.py"
RATIO = r"min +[0-9.]+x +median +[0-9.]+x +max +[0-9.]+x"


def test_quick_speed_bench_prints_every_row() -> None:
    run = subprocess.run([sys.executable, str(BENCH), "--quick"], capture_output=True, text=True, check=False)
    assert run.returncode == 0, run.stdout + run.stderr
    out = run.stdout
    for label in ("no-op, N=2", "one input changed, N=2", "vela, chain_a.tflite", "aot-plan / load"):
        assert re.search(rf"^ *{re.escape(label)}.*{RATIO}", out, re.MULTILINE), out
    assert re.search(r"peak memory, changed input, N=2: heliabuild \d+ MiB, plain SCons \d+ MiB", out), out
