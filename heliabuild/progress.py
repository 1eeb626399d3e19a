"""Progress of long work on a terminal: one status line on stderr, redrawn in place.

`with activity("vela kws.tflite") as work:` (and `work.advance(done)` for counted work, `activity(label,
total=n)`) shows `heliabuild: vela kws.tflite 12 s` or `heliabuild: run: measured invoke 40/1000 3 s`
while the work runs, redrawn every STATUS_INTERVAL_S seconds and erased when it ends; several at once (SCons
with `-j`) share the one line. It is drawn only when stderr is a terminal: in a CI log (stderr a file or a
pipe) nothing is written at all, so the log holds only the ordinary lines. Whoever prints an ordinary line
while work may be running calls clear_status first, so that line does not land after a half status.
"""

from __future__ import annotations

import contextlib
import shutil
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TextIO

STATUS_INTERVAL_S = 0.25
"""How often the status line is redrawn."""
CLEAR = "\r\x1b[K"
"""Carriage return, then erase to the end of the line."""


@dataclass
class Activity:
    """One piece of work shown on the status line: its label, and for counted work how far it is."""

    label: str
    total: int | None = None
    done: int = 0
    started: float = field(default_factory=time.monotonic)

    def advance(self, done: int) -> None:
        """Say that `done` of the `total` units are done."""
        self.done = done

    def text(self, now: float) -> str:
        counted = f" {self.done}/{self.total}" if self.total is not None else ""
        return f"{self.label}{counted} {now - self.started:.0f} s"


_lock = threading.Lock()
_active: list[Activity] = []
_drawn: list[bool] = [False]
_redrawing: list[bool] = [False]
_wake = threading.Condition(_lock)
_streams: list[TextIO] = []
"""Where the status line is drawn instead of sys.stderr, innermost last (drawn_on)."""


def _stream() -> TextIO:
    return _streams[-1] if _streams else sys.stderr


@contextlib.contextmanager
def drawn_on(stream: TextIO) -> Iterator[None]:
    """Draw the status line on `stream` while the block runs: for a block that points sys.stderr elsewhere
    (heliabuild.vela.in_process captures Vela's output), so the line still reaches the terminal."""
    with _lock:
        _erase()
        _streams.append(stream)
    try:
        yield
    finally:
        with _lock:
            _erase()
            _streams.remove(stream)


def _terminal() -> bool:
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):
        return False


@contextlib.contextmanager
def activity(label: str, total: int | None = None) -> Iterator[Activity]:
    """Show `label` (and `done/total` when `total` is given) on the status line while the block runs, when
    stderr is a terminal; otherwise only hand back an Activity that writes nothing."""
    work = Activity(label, total)
    if not _terminal():
        yield work
        return
    with _lock:
        _active.append(work)
        if not _redrawing[0]:
            _redrawing[0] = True
            threading.Thread(target=_redraw, name="heliabuild-progress", daemon=True).start()
        _draw()
    try:
        yield work
    finally:
        with _lock:
            _active.remove(work)
            _erase()
            _draw()
            _wake.notify_all()


def clear_status() -> None:
    """Erase the status line, if one is drawn, so that an ordinary line can be printed; it is redrawn later."""
    with _lock:
        _erase()


def _erase() -> None:
    if _drawn[0]:
        _stream().write(CLEAR)
        _stream().flush()
        _drawn[0] = False


def _draw() -> None:
    """Draw the status line of the active work (the lock held), cut to the terminal's width."""
    if not _active:
        return
    now = time.monotonic()
    width = shutil.get_terminal_size((80, 24)).columns - 1
    line = "heliabuild: " + ", ".join(work.text(now) for work in _active)
    _stream().write(CLEAR + line[:width])
    _stream().flush()
    _drawn[0] = True


def _redraw() -> None:
    with _lock:
        while _active:
            _wake.wait(STATUS_INTERVAL_S)
            _draw()
        _redrawing[0] = False
