"""Launching FVP jobs: one bounded, timed-out subprocess per job, several at once.

`run_job(command, wall_timeout_s)` runs one argument vector through heliabuild.subprocesses.run_bounded (its
own session, no standard input, killed with its whole session when it outlives `wall_timeout_s` or writes more
than `max_output` bytes); a job that cannot start is an FvpError. `run_jobs(commands, ...)` runs them on a
thread pool of at most `workers` threads (default: the CPU count, at most 8) and returns the runs in the order
given. The FVP's own `--timelimit` stops a job first; the host's bound is that limit plus a grace period.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

from heliabuild.errors import FvpError
from heliabuild.subprocesses import BoundedRun, run_bounded

DEFAULT_MAX_OUTPUT = 16 << 20
GRACE_S = 30.0
"""How much longer than its `--timelimit` the host lets a job run before killing it."""


def run_job(command: list[str], wall_timeout_s: float, max_output: int = DEFAULT_MAX_OUTPUT) -> BoundedRun:
    """Run one job (module docstring)."""
    try:
        return run_bounded(command, timeout_s=wall_timeout_s, max_output=max_output)
    except OSError as error:
        raise FvpError(f"{os.path.basename(command[0])}: the FVP could not be started: {error.strerror}") from None


def run_jobs(commands: Sequence[list[str]], wall_timeout_s: float, workers: int | None = None) -> list[BoundedRun]:
    """Run every job in parallel (module docstring); the first FvpError of a job that cannot start is raised
    after every job has ended."""
    count = max(1, min(workers or min(os.cpu_count() or 1, 8), len(commands) or 1))
    with ThreadPoolExecutor(max_workers=count, thread_name_prefix="heliabuild-fvp") as pool:
        futures = [pool.submit(run_job, command, wall_timeout_s) for command in commands]
        return [future.result() for future in futures]
