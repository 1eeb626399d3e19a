"""What a heliabuild SCons stage prints, and how a failing stage reports itself.

Every stage action prints one progress line, `heliabuild: <stage> <first
target>`, through a COMSTR-style construction variable. A stage that fails on
bad input (a HeliaError) prints one line, `heliabuild: error: <message>`
(plus ` (hint: ...)` when the error has one), as the `heliabuild` command
does, removes whatever may be left of its targets and returns exit status 2,
so SCons stops with no Python traceback. A warning of a tool a stage ran
(Vela's) is one line, `heliabuild: warning: <stage> <first target>: <text>`,
printed once per SCons run however many targets raise it. A configuration
mistake found while the SConscripts are read (a builder called with the wrong
sources or variables) raises SCons's UserError instead, whose message names
the SConscript line that made the call. Each line first erases the terminal's status line, if one is drawn
(heliabuild.progress), so that it starts at the left margin.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from types import FrameType, TracebackType

import SCons
from SCons.Errors import UserError
from SCons.Node import Node

from heliabuild.colour import coloured
from heliabuild.errors import HeliaError
from heliabuild.progress import clear_status
from heliabuild.scons import interrupt
from heliabuild.scons.interrupt import EXIT_INTERRUPTED

EXIT_BAD_INPUT = 2
"""The status a stage action returns for a HeliaError, as the CLI exits for bad input."""


def stage_comstr(stage: str) -> str:
    """The default progress line of `stage`: `heliabuild: <stage> $TARGET`."""
    return f"heliabuild: {stage} $TARGET"


def error_line(error: HeliaError) -> str:
    """The one line that reports `error`: `heliabuild: error: <message>[ (hint: <hint>)]`."""
    hint = f" (hint: {error.hint})" if error.hint else ""
    return f"heliabuild: error: {error.message}{hint}"


def stage_failed(error: HeliaError, targets: Sequence[Node]) -> int:
    """Report `error` (see error_line) on stderr, remove any file of `targets`, return EXIT_BAD_INPUT.

    The library writes atomically (all outputs of a stage or none), and SCons
    removes a target before rebuilding it unless it is Precious; removing the
    targets here keeps the guarantee even then, so a failed stage never leaves
    a stale-but-plausible file for a later stage to pick up.
    """
    for target in targets:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(target.get_abspath())
    return report_failure(error)


def report_failure(error: HeliaError) -> int:
    """Report `error` (see error_line) on stderr and return EXIT_BAD_INPUT, removing nothing: for a stage
    whose library call already removed what it may (a result bundle's files, and only when they verify).
    After Ctrl-C (heliabuild.scons.interrupt) nothing is printed: the stage failed because it was ended."""
    if interrupt.requested():
        return EXIT_INTERRUPTED
    clear_status()
    print(coloured(error_line(error), sys.stderr), file=sys.stderr, flush=True)
    return EXIT_BAD_INPUT


_warned: set[str] = set()
_warned_lock = threading.Lock()


def stage_warnings(stage: str, target: Node, warnings: Sequence[str]) -> None:
    """Print each of `warnings` on stderr as `heliabuild: warning: <stage> <target>: <text>`.

    A warning already printed in this SCons run (by any target, in any
    thread with `-j`) is not printed again: Vela's warnings about its own
    defaults are the same for every model. A leading `Warning: ` is dropped.
    """
    for warning in warnings:
        text = warning.removeprefix("Warning: ").strip()
        with _warned_lock:
            if text in _warned:
                continue
            _warned.add(text)
        clear_status()
        line = f"heliabuild: warning: {stage} {node_path(target)}: {text}"
        print(coloured(line, sys.stderr), file=sys.stderr, flush=True)


def node_path(node: Node) -> str:
    """The path of `node` relative to the top-level SConstruct folder, as a user wrote or sees it.

    A source file in a variant dir that is not duplicated is named by its
    real place in the source tree; anything built is named by its build path.
    """
    shown = node if node.is_derived() else node.srcnode()
    return shown.get_internal_path()


_NOT_USER_CODE = (Path(SCons.__file__).parent, Path(__file__).parent)


def _calling_sconscript_frame() -> FrameType | None:
    """The innermost frame outside SCons and this wiring (the SConscript's call), if any."""
    frame = sys._getframe(1)
    while frame is not None:
        path = Path(frame.f_code.co_filename)
        if not any(path.is_relative_to(folder) for folder in _NOT_USER_CODE):
            return frame
        frame = frame.f_back
    return None


def configuration_error(builder: str, target: Node | Sequence[Node] | str, problem: str) -> UserError:
    """A UserError for a builder call that cannot work, pointing at the SConscript line that made the call.

    Its message is `heliabuild: <builder> <target>: <problem> (called at <SConscript>:<line>)`;
    `target` is the node(s) of the call, or a name (such as a pipeline's). SCons follows its
    `scons: *** <message>` line with the file and line of the innermost frame of the error's traceback
    outside SCons; the error therefore carries a traceback that ends in the calling SConscript's frame, so
    that line names the user's file, not heliabuild's wiring (raising it adds the frames it passes through
    above that end).
    """
    if isinstance(target, str):
        names = target
    else:
        targets = [target] if isinstance(target, Node) else list(target)
        names = ", ".join(node_path(node) for node in targets)
    frame = _calling_sconscript_frame()
    if frame is None:
        return UserError(f"heliabuild: {builder} {names}: {problem}")
    called = f" (called at {frame.f_code.co_filename}:{frame.f_lineno})"
    error = UserError(f"heliabuild: {builder} {names}: {problem}{called}")
    return error.with_traceback(TracebackType(None, frame, frame.f_lasti, frame.f_lineno))
