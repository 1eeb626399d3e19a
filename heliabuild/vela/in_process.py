"""Running Vela inside this process, its output captured at the file-descriptor level.

Only for a caller that runs one thing at a time on its main thread and owns its standard streams: the
`heliabuild` command, and an SCons build running one job at a time (`-j1`) with the local executor
(heliabuild.executor.local). For the time Vela runs, the working folder is the one a subprocess would run
in, file descriptors 1 and 2 are pointed at one temporary file, and sys.stdout and sys.stderr at the
process's own streams (sys.__stdout__, sys.__stderr__), which write to those descriptors. So everything Vela
prints is captured, through Python or its native core, in the order it was printed, as a `python -m
ethosu.vela` subprocess's combined output is; what the caller printed before is flushed to its own
streams first (an SCons build's sys.stdout is SCons's flushing wrapper of sys.__stdout__), so none of it
lands in the capture. An exception out of Vela is printed into the capture and ends the run with status 1,
and the recursion limit Vela sets is put back: the caller sees what a subprocess exiting would give.
docs/scons.md ("Where Vela runs") has the evidence that Vela keeps no state between compiles that changes
what it writes (tests/test_vela_in_process.py).

`python -P .../heliabuild/vela/in_process.py ARGUMENTS` is Vela's command line, Vela imported the same
way (main); at module level it imports nothing of heliabuild, so it runs by its path wherever heliabuild came
from (only the in-process capture uses heliabuild.progress, to keep the status line on the terminal).

Vela binds sys.stdout as a default argument when first imported (its performance printer), so it is
imported inside the capture, and Vela runs here only while that binding is still the process's own stdout
(`available`); otherwise (Vela imported earlier under another sys.stdout, or no process streams) the caller
runs it as a subprocess.
"""

from __future__ import annotations

import gc
import importlib
import os
import sys
import tempfile
import traceback
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from types import ModuleType

_VELA = "ethosu.vela.vela"
_STATS = "ethosu.vela.stats_writer"


def available() -> bool:
    """Whether Vela can run in this process with all its output captured (module docstring)."""
    if sys.__stdout__ is None or sys.__stderr__ is None:
        return False
    stats = sys.modules.get(_STATS)
    if stats is None:
        return True
    return stats.print_performance_metrics.__defaults__[-1] is sys.__stdout__


def _flush() -> None:
    import ctypes  # only here: a Vela subprocess (main) never captures

    for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
        if stream is not None:
            stream.flush()
    ctypes.CDLL(None).fflush(None)  # the C library's buffers, written by Vela's native core


@contextmanager
def _captured(file: int) -> Iterator[None]:
    """Descriptors 1 and 2 write into `file`, and sys.stdout and sys.stderr are the process's own streams,
    until the block ends (however it ends); then everything is as before."""
    from heliabuild.progress import drawn_on  # here: run as a script (main), this module imports no heliabuild

    _flush()
    saved = os.dup(1), os.dup(2)
    streams = sys.stdout, sys.stderr
    try:
        # The status line (heliabuild.progress) goes on to the terminal, never into Vela's output.
        terminal = os.fdopen(saved[1], "w", encoding="utf-8", errors="replace", closefd=False)
        with terminal, drawn_on(terminal):
            try:
                os.dup2(file, 1)
                os.dup2(file, 2)
                sys.stdout, sys.stderr = sys.__stdout__, sys.__stderr__
                yield
            finally:
                _flush()
                sys.stdout, sys.stderr = streams
                os.dup2(saved[0], 1)
                os.dup2(saved[1], 2)
    finally:
        os.close(saved[0])
        os.close(saved[1])


def _imported_vela() -> ModuleType:
    """Vela's command-line module, imported with the cyclic garbage collector paused and what the import made
    frozen: the import's objects (numpy, Vela's compiler and tables) live until the process exits, so the
    collector would only walk them again and again, in each collection while Vela compiles."""
    if _VELA in sys.modules:
        return sys.modules[_VELA]
    enabled = gc.isenabled()
    gc.disable()
    try:
        module = importlib.import_module(_VELA)
    finally:
        if enabled:
            gc.enable()
    gc.freeze()
    return module


def _exit_status(code: object) -> int:
    """The exit status a process leaving with SystemExit(code) has; a message is printed as Python would."""
    if code is None or isinstance(code, int):
        return code or 0
    print(code, file=sys.stderr)
    return 1


@contextmanager
def _working_in(folder: str | os.PathLike[str]) -> Iterator[None]:
    """The working folder is `folder` until the block ends, and the recursion limit what it was before."""
    here = os.getcwd()
    limit = sys.getrecursionlimit()
    os.chdir(folder)
    try:
        yield
    finally:
        os.chdir(here)
        sys.setrecursionlimit(limit)  # Vela's main sets its own (--recursion-limit, default 1000)


def run_vela(arguments: Sequence[str], cwd: str | os.PathLike[str]) -> tuple[int, str]:
    """Vela's exit status and everything it printed, for the command line `vela ARGUMENTS` run in the folder
    `cwd` (module docstring): 1, with the traceback printed, for an exception out of Vela."""
    with tempfile.TemporaryFile() as capture:
        with _captured(capture.fileno()), _working_in(cwd):
            try:
                code = _imported_vela().main(list(arguments))
            except SystemExit as exit:  # argparse's refusal of an argument, for one
                code = _exit_status(exit.code)
            except Exception:  # what the subprocess would print before exiting with status 1
                traceback.print_exc()
                code = 1
        capture.seek(0)
        output = capture.read().decode("utf-8", errors="replace")
    return code, output


def command(arguments: Sequence[str]) -> list[str]:
    """The command line of a Vela subprocess on ARGUMENTS (main)."""
    return [sys.executable, "-P", os.path.abspath(__file__), *arguments]


def main() -> int:
    """A Vela subprocess's entry point, `python -P .../in_process.py ARGUMENTS`: Vela's own `main`
    on ARGUMENTS, its output left on this process's streams, Vela imported as _imported_vela imports it (the
    SCons stage runs Vela this way, on several threads at once; `command` gives the command line)."""
    return _imported_vela().main(sys.argv[1:])


if __name__ == "__main__":
    sys.exit(main())
