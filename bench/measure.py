"""Timing and memory helpers the benchmarks share (run each benchmark as `python bench/<name>.py`)."""

from __future__ import annotations

import gc
import os
import statistics
import subprocess
import tempfile
import time
import tracemalloc
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass


def timed(action: Callable[[], object]) -> float:
    """Seconds one call of `action` takes, after a garbage collection."""
    gc.collect()
    start = time.perf_counter()
    action()
    return time.perf_counter() - start


def peak_bytes(action: Callable[[], object]) -> int:
    """The peak of Python-traced allocations (numpy buffers included) during one call of `action`."""
    gc.collect()
    tracemalloc.start()
    try:
        action()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@dataclass(frozen=True)
class ProcessCost:
    """What one process (and every child it waited for) used, from os.wait4: CPU seconds (user + system)
    and the largest resident set of any of them, in KiB (Linux's ru_maxrss); its exit status and output."""

    cpu_s: float
    max_rss_kib: int
    returncode: int
    output: str


def process_cost(
    command: Sequence[str], cwd: str | os.PathLike[str], env: Mapping[str, str] | None = None
) -> ProcessCost:
    """Run `command` to its end and return its ProcessCost (stdout and stderr together as `output`).

    CPU time, not wall time, is the figure: the machine is shared, and another job's load stretches wall
    time but not the CPU time this process tree spends.
    """
    with tempfile.TemporaryFile() as output:
        process = subprocess.Popen(list(command), cwd=cwd, env=env, stdout=output, stderr=subprocess.STDOUT)
        _, status, usage = os.wait4(process.pid, 0)
        process.returncode = os.waitstatus_to_exitcode(status)
        output.seek(0)
        text = output.read().decode("utf-8", "replace")
    return ProcessCost(usage.ru_utime + usage.ru_stime, usage.ru_maxrss, process.returncode, text)


@dataclass(frozen=True)
class Ratios:
    """min, median and max of per-pair ratios, and the medians of each side."""

    low: float
    median: float
    high: float
    numerator: float
    denominator: float

    def __str__(self) -> str:
        return f"min {self.low:5.2f}x  median {self.median:5.2f}x  max {self.high:5.2f}x"


def ratios(pairs: Sequence[tuple[float, float]]) -> Ratios:
    """The Ratios of `pairs` of (measured, baseline) figures, one pair per interleaved round."""
    each = [measured / baseline for measured, baseline in pairs]
    return Ratios(
        min(each),
        statistics.median(each),
        max(each),
        statistics.median(m for m, _ in pairs),
        statistics.median(b for _, b in pairs),
    )
