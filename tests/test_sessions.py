"""heliabuild.sessions: no subprocess session outlives an interrupt, including one that lands while the
session is being started (between the fork and the moment it is counted), on the main thread by a real
signal handler and on another thread by delivery; after end_all nothing new starts; run_bounded's session
is ended by end_all from another thread. Real subprocesses (sleep) throughout."""

from __future__ import annotations

import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from heliabuild import sessions
from heliabuild.subprocesses import run_bounded

SLEEP = ["sleep", "60"]


class Interrupted(KeyboardInterrupt):
    """What the interrupter delivers in these tests (heliabuild.scons.interrupt delivers StageInterrupted)."""


def _raise_interrupted() -> None:
    raise Interrupted


@pytest.fixture(autouse=True)
def fresh_sessions(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Each test starts with no session ended, running or starting, whatever an earlier test did."""
    monkeypatch.setattr(sessions, "_ended", [])
    monkeypatch.setattr(sessions, "_running", set())
    monkeypatch.setattr(sessions, "_starting", {})
    yield


def started_then(monkeypatch: pytest.MonkeyPatch, interrupt: Any) -> list[subprocess.Popen[Any]]:
    """Make the next Popen call `interrupt()` right after the child exists, before `start` has counted it
    (the window an interrupt used to lose a QEMU in); the children it started, to look at afterwards."""
    real_popen = subprocess.Popen
    children: list[subprocess.Popen[Any]] = []

    def popen_then_interrupt(*arguments: Any, **options: Any) -> subprocess.Popen[Any]:
        child = real_popen(*arguments, **options)
        children.append(child)
        interrupt()
        return child

    monkeypatch.setattr(sessions.subprocess, "Popen", popen_then_interrupt)
    return children


def test_an_interrupt_delivered_while_a_session_starts_kills_and_reaps_it(monkeypatch: pytest.MonkeyPatch) -> None:
    thread = threading.get_ident()
    children = started_then(monkeypatch, lambda: sessions.interrupt_thread(thread, Interrupted, _raise_interrupted))
    with pytest.raises(Interrupted):
        sessions.start(SLEEP)
    [child] = children
    assert child.returncode == -signal.SIGKILL  # killed and reaped before the exception reached the caller
    assert sessions._running == set()


def test_a_signal_handler_on_the_main_thread_while_a_session_starts_kills_and_reaps_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A real SIGUSR1 whose handler interrupts the main thread as heliabuild.scons.interrupt's does for SIGINT."""
    main = threading.get_ident()

    def handler(signum: int, frame: Any) -> None:
        sessions.end_all(Interrupted)
        sessions.interrupt_thread(main, Interrupted, _raise_interrupted)

    previous = signal.signal(signal.SIGUSR1, handler)
    try:
        children = started_then(monkeypatch, lambda: signal.raise_signal(signal.SIGUSR1))
        with pytest.raises(Interrupted):
            sessions.start(SLEEP)
    finally:
        signal.signal(signal.SIGUSR1, previous)
    [child] = children
    assert child.returncode == -signal.SIGKILL
    assert sessions._running == set()


def test_an_interrupt_outside_start_is_delivered_at_once() -> None:
    delivered: list[str] = []
    sessions.interrupt_thread(threading.get_ident(), Interrupted, lambda: delivered.append("now"))
    assert delivered == ["now"]


def test_after_end_all_no_session_starts(monkeypatch: pytest.MonkeyPatch) -> None:
    children = started_then(monkeypatch, lambda: None)
    assert sessions.end_all(Interrupted) == 0
    with pytest.raises(Interrupted):
        sessions.start(SLEEP)
    assert children == []


def test_a_session_started_while_end_all_runs_on_another_thread_is_killed(monkeypatch: pytest.MonkeyPatch) -> None:
    """A thread that is not interrupted itself (an FVP run's pool thread): its session is killed when counted."""
    children = started_then(monkeypatch, lambda: sessions.end_all(Interrupted))
    process = sessions.start(SLEEP)
    assert process.wait(timeout=10) == -signal.SIGKILL
    sessions.release(process)
    assert children == [process]


def test_end_all_ends_a_bounded_run_waiting_on_another_thread() -> None:
    ended: list[Any] = []
    waiting = threading.Thread(target=lambda: ended.append(run_bounded(SLEEP, timeout_s=120, max_output=1 << 16)))
    waiting.start()
    deadline = time.monotonic() + 10
    while not sessions._running and time.monotonic() < deadline:
        time.sleep(0.01)
    assert sessions.end_all(Interrupted) == 1
    waiting.join(timeout=10)
    assert not waiting.is_alive()
    [run] = ended
    assert run.exit_status == -signal.SIGKILL and not run.timed_out
    assert sessions._running == set()
