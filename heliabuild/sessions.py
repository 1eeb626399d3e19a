"""The sessions of subprocesses (QEMU, the Arm FVPs, Vela) this process is running, so an interrupt ends them at once.

heliabuild.subprocesses.run_bounded starts each simulator in a session of its own (and heliabuild.vela.run
each Vela subprocess), so the terminal's Ctrl-C never reaches it; a caller that is interrupted on another
thread (an SCons build: heliabuild.scons.interrupt) calls end_all, which kills every such session still
running, and every one started after it (a job an FVP run's thread pool had queued). The thread waiting on it
then sees its streams close and returns, as after a timeout.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager

_lock = threading.Lock()
_running: set[int] = set()
"""The process ids (each its own session's leader) of the sessions started and not yet reaped."""
_ended: list[bool] = []
"""Holds True once end_all ran: a session started later is killed at once."""


@contextmanager
def running(pid: int) -> Iterator[None]:
    """Count the session led by `pid` as running for the block (its wait included); after end_all, kill it."""
    with _lock:
        _running.add(pid)
        if _ended:
            _kill(pid)
    try:
        yield
    finally:
        with _lock:
            _running.discard(pid)


def end_all() -> int:
    """Kill every running session (SIGKILL to its process group), and from now on every session as soon as it
    starts (for a process that is being interrupted); how many were running."""
    with _lock:
        _ended.append(True)
        pids = sorted(_running)
        for pid in pids:
            _kill(pid)
    return len(pids)


def _kill(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)
