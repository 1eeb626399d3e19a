"""Timing and memory helpers the benchmarks share (run each benchmark as `python bench/<name>.py`)."""

from __future__ import annotations

import gc
import time
import tracemalloc
from collections.abc import Callable


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
