"""Ctrl-C in an SCons build: the running heliabuild stages end at once (docs/scons.md, "Interruption").

SCons's own handler of SIGINT, SIGTERM and SIGHUP only stops its taskmaster: no new task starts, but a
running task runs to its end. A heliabuild stage can run for minutes (a QEMU or FVP run, in a session of its
own that the terminal's Ctrl-C never reaches; thousands of LiteRT invokes; a Vela compile), so the tool ends
the running stages itself, on top of SCons's handler:

- a stage on SCons's main thread (`-j1`) gets StageInterrupted raised by a handler chained after SCons's own
  (installed when the stage starts: only the main thread may install one);
- a stage on a worker thread (`-j2` and more) gets StageInterrupted raised in its thread asynchronously, by a
  watcher thread that learns of the signal through Python's signal wakeup file descriptor (set by
  heliabuild.scons.process.configure_build); SCons's main thread, which only waits for its workers then,
  runs SCons's handler meanwhile;
- either way every simulator and Vela session still running is killed (heliabuild.sessions), so a thread waiting on
  QEMU or an FVP returns at once.

StageInterrupted is a KeyboardInterrupt, so the library cleans up as it does for the `heliabuild` command's
Ctrl-C (temporary files, Vela's work folders, job folders, a half-written set of outputs). The stage action
(heliabuild.scons.progress.StageAction) then removes its targets that are not Precious and fails with
EXIT_INTERRUPTED; SCons, interrupted, reports `Build interrupted.`, writes its database with the stages that
completed, and the next `scons` rebuilds the interrupted stage and what depends on it.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from functools import partial
from types import FrameType
from typing import Any

from heliabuild import sessions

EXIT_INTERRUPTED = 130
"""The status an interrupted stage action returns, as the `heliabuild` command exits on Ctrl-C."""

SIGNALS = tuple(getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, name))
"""The signals SCons stops a build for (SCons.Taskmaster.Job.Jobs._setup_sig_handler)."""


class StageInterrupted(KeyboardInterrupt):
    """Raised in a running stage when the build is interrupted (module docstring)."""


_lock = threading.RLock()
"""Reentrant: the main thread's signal handler may run while that thread holds it."""
_stage_threads: set[int] = set()
"""The thread ids of the threads running a stage action now."""
_state = {"requested": False, "watching": False}


def requested() -> bool:
    """Whether this build has been interrupted: a stage failing now reports the interrupt, not its error."""
    return _state["requested"]


def watch() -> None:
    """Learn of SIGINT, SIGTERM and SIGHUP on any thread (module docstring); from the main thread, once per
    process. A wakeup descriptor someone else set is left alone (stages on worker threads then run to their
    end, as in plain SCons)."""
    if _state["watching"] or threading.current_thread() is not threading.main_thread():
        return
    reading, writing = os.pipe()
    os.set_blocking(writing, False)
    try:
        previous = signal.set_wakeup_fd(writing, warn_on_full_buffer=False)
    except ValueError:
        previous = None
    if previous != -1:
        if previous is not None:
            signal.set_wakeup_fd(previous)
        os.close(reading)
        os.close(writing)
        return
    _state["watching"] = True
    threading.Thread(target=_watch, args=(reading,), name="heliabuild-interrupt", daemon=True).start()


def _watch(reading: int) -> None:
    while True:
        try:
            received = os.read(reading, 64)
        except OSError:
            return
        if not received:
            return
        if any(number in SIGNALS for number in received):
            _interrupt(on_main_thread=False)


@contextmanager
def interruptible() -> Iterator[None]:
    """The block (one stage action) is ended by StageInterrupted when the build is interrupted."""
    identity = threading.get_ident()
    if threading.current_thread() is threading.main_thread():
        _chain_handlers()
    with _lock:
        _stage_threads.add(identity)
    try:
        yield
    finally:
        with _lock:
            _stage_threads.discard(identity)
            _set_async_exception(identity, None)  # one raised too late to end the stage is dropped


def _chain_handlers() -> None:
    """Put a handler after the current one (SCons's) of each of SIGNALS, unless one is there already."""
    for number in SIGNALS:
        current = signal.getsignal(number)
        if getattr(current, "heliabuild_chained", False) or not callable(current):
            continue

        def handler(signum: int, frame: FrameType | None, previous: Any = current) -> None:
            previous(signum, frame)
            _interrupt(on_main_thread=True)

        handler.heliabuild_chained = True  # type: ignore[attr-defined]
        signal.signal(number, handler)


def _interrupt(*, on_main_thread: bool) -> None:
    """End every running stage: kill the simulator and Vela sessions, and refuse new ones; then raise
    StageInterrupted in the worker threads running a stage (and, from the main thread's handler, in the main
    thread when it runs one). A thread that is starting a session gets it once that session is killed
    (heliabuild.sessions.interrupt_thread), so none outlives the build."""
    main = threading.main_thread().ident
    sessions.end_all(StageInterrupted)
    with _lock:  # held while delivering: a thread leaving its stage drops what was delivered too late
        _state["requested"] = True
        for identity in sorted(_stage_threads):
            if identity != main:
                deliver = partial(_set_async_exception, identity, StageInterrupted)
                sessions.interrupt_thread(identity, StageInterrupted, deliver)
        if on_main_thread and main is not None and main in _stage_threads:
            sessions.interrupt_thread(main, StageInterrupted, _raise_stage_interrupted)


def _raise_stage_interrupted() -> None:
    raise StageInterrupted


def _set_async_exception(identity: int, exception: type[BaseException] | None) -> None:
    """Raise `exception` in the thread `identity` at its next Python instruction (None: drop a pending one)."""
    with contextlib.suppress(ValueError):
        ctypes.pythonapi.PyThreadState_SetAsyncExc(
            ctypes.c_ulong(identity), ctypes.py_object(exception) if exception is not None else None
        )
