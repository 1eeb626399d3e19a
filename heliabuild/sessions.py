"""The sessions of subprocesses (QEMU, the Arm FVPs, Vela) this process is running, so an interrupt ends them at once.

`start(command, ...)` starts a program in a session of its own (so the terminal's Ctrl-C never reaches it)
and counts it as running until `release(process)`; heliabuild.subprocesses.run_bounded starts every
simulator so, and heliabuild.vela.run every Vela subprocess. A caller that is interrupted on another thread
(an SCons build: heliabuild.scons.interrupt) calls `end_all`, which kills every such session still running,
and every one started after it (a job an FVP run's thread pool had queued). The thread waiting on it then
sees its streams close and returns, as after a timeout.

No session outlives an interrupt, even one that lands while its session is being started: the interrupter
delivers its exception through `interrupt_thread`, which holds it back while that thread is inside `start`
(between the fork and the moment the session is counted, where an exception would lose the process). `start`
then kills and reaps the session it started and raises the exception itself.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
from collections.abc import Callable
from typing import Any

_lock = threading.RLock()
"""Reentrant: a signal handler runs on the main thread between any two of its instructions, and may call in
while that thread holds the lock."""
_running: set[int] = set()
"""The process ids (each its own session's leader) of the sessions started and not yet released."""
_ended: list[type[BaseException]] = []
"""Holds the exception `end_all` was given once it ran: a session started later is refused with it."""
_starting: dict[int, list[type[BaseException]]] = {}
"""The threads inside `start`, each with the exceptions delivered to it meanwhile (held back until its
session is counted)."""


def start(command: list[str], **options: Any) -> subprocess.Popen[Any]:
    """Start `command` with subprocess.Popen's `options` in a session of its own, counted as running until
    `release(process)`. After `end_all`, raises the exception it was given instead of starting anything. An
    exception delivered to this thread by `interrupt_thread` while it starts the session kills and reaps that
    session, then is raised here."""
    thread = threading.get_ident()
    with _lock:
        if _ended:
            raise _ended[0]
        _starting[thread] = []
    process: subprocess.Popen[Any] | None = None
    try:
        process = subprocess.Popen(command, start_new_session=True, **options)
    finally:
        with _lock:
            if process is not None:
                _running.add(process.pid)
                if _ended:
                    _kill(process.pid)
            delivered = _starting.pop(thread)
    if delivered:
        if process is not None:
            _kill(process.pid)
            process.wait()
            release(process)
        raise delivered[0]
    return process


def release(process: subprocess.Popen[Any]) -> None:
    """Stop counting `process`'s session as running (once it has been reaped)."""
    with _lock:
        _running.discard(process.pid)


def interrupt_thread(thread: int, exception: type[BaseException], deliver: Callable[[], None]) -> None:
    """Deliver `exception` to the thread `thread` by calling `deliver` now, unless that thread is inside
    `start`: then `start` raises it once the session it started is killed and reaped."""
    with _lock:
        if thread in _starting:
            _starting[thread].append(exception)
            return
        deliver()


def end_all(exception: type[BaseException] = KeyboardInterrupt) -> int:
    """Kill every running session (SIGKILL to its process group), and from now on refuse to start one
    (`start` raises `exception`), for a process that is being interrupted; how many were running."""
    with _lock:
        _ended.append(exception)
        pids = sorted(_running)
        for pid in pids:
            _kill(pid)
    return len(pids)


def kill(process: subprocess.Popen[Any]) -> None:
    """Kill `process`'s whole session (its process group); call it before `process` is reaped."""
    _kill(process.pid)


def _kill(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)
