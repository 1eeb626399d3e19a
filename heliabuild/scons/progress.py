"""The `[k/n]` counter and elapsed time of heliabuild's SCons stage lines.

Every heliabuild stage builder's action is a StageAction (stage_action). When SCons runs one, its progress
line gets a counter, `heliabuild: [k/n] <stage> <first target>`, and when the stage ends without error a
second line says how long it took: `heliabuild: [k/n] <stage> <first target>: done in 1.23 s`.

- n is the number of heliabuild stage actions under the targets of this SCons run (the command line's, or
  the default ones) that ran or may still run: the stage actions of that dependency graph (read once, when
  the first stage runs), less those SCons has since found up to date or retrieved from a CacheDir. On a full
  build it stays fixed and the last stage says `[n/n]`; on a partial rebuild it shrinks as SCons finds
  stages up to date, so it never counts a stage that will not run among those still to come.
- k is this stage's place among the stage actions this run has started (1, 2, ...), in the order SCons
  started them (with `-j`, two stages may end in another order).

A stage SCons finds up to date prints nothing. With `-n` the lines are printed with their counter (nothing
runs, so no `done` line); with `-s` nothing is. The stages are heliabuild's own actions (synth, vela,
plan-fences, fence, aot-plan, firmware generation, runner, run); the firmware's compile and link lines
(SCons's C actions) keep their plain `heliabuild: firmware-cc ...` form and are not counted.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import SCons.Action
import SCons.Node
import SCons.Node.FS
from SCons.Action import FunctionAction
from SCons.Node import Node

from heliabuild.progress import CLEAR, clear_status
from heliabuild.scons.collector import stage_running
from heliabuild.scons.interrupt import EXIT_INTERRUPTED, StageInterrupted, interruptible
from heliabuild.scons.interrupt import requested as interrupted

PREFIX = "heliabuild: "

_lock = threading.Lock()
_started: list[int] = [0]
"""How many stage actions this SCons process has started."""
_stages: list[list[Node]] = []
"""Once read: the first target of every stage action under this run's targets."""
_current = threading.local()
"""The counter of the stage action running in this thread: `number` (k) and `total` (n)."""


def stage_action(function: Callable[..., int], comstr: str, varlist: Sequence[str] = ()) -> StageAction:
    """The action of a heliabuild stage: `function`, printing `$<comstr>` with the counter (module docstring).
    Its signature is `function`'s and `varlist`'s, as for SCons's `Action(function, cmdstr=..., varlist=...)`."""
    return StageAction(function, {"cmdstr": f"${comstr}", "varlist": tuple(varlist)})


def with_counter(line: str, number: int, total: int) -> str:
    """`line` with `[number/total] ` after its `heliabuild: ` prefix (or before it, for a line without one)."""
    counter = f"[{number}/{total}] "
    if line.startswith(PREFIX):
        return PREFIX + counter + line.removeprefix(PREFIX)
    return counter + line


def elapsed_text(seconds: float) -> str:
    """How long a stage took, as its `done` line says it: `done in 1.23 s`."""
    return f"done in {seconds:.2f} s"


class StageAction(FunctionAction):
    """A FunctionAction whose progress line carries the `[k/n]` counter and which says when it is done."""

    def strfunction(self, target: Any, source: Any, env: Any, executor: Any = None) -> str | None:
        line = super().strfunction(target, source, env, executor)
        number = getattr(_current, "number", None)
        if not line or number is None:
            return line
        return with_counter(line, number, _current.total)

    def print_cmd_line(self, s: str, target: Any, source: Any, env: Any) -> None:
        clear_status()
        super().print_cmd_line(s, target, source, env)

    def __call__(self, target: Any, source: Any, env: Any, *args: Any, **kwargs: Any) -> Any:
        show = kwargs.get("show", SCons.Action._null)
        execute = kwargs.get("execute", SCons.Action._null)
        shown = SCons.Action.print_actions if show is SCons.Action._null else show
        executed = SCons.Action.execute_actions if execute is SCons.Action._null else execute
        executor = kwargs.get("executor")
        _current.number, _current.total = _start()
        started = time.monotonic()
        targets = executor.get_all_targets() if executor else target
        try:
            try:
                with stage_running(), interruptible():
                    status = super().__call__(target, source, env, *args, **kwargs)
            except StageInterrupted:
                status = EXIT_INTERRUPTED
            if status and interrupted():  # ended by Ctrl-C, whatever error that made
                status = _interrupted(targets)
            if shown and executed and (not status or status == EXIT_INTERRUPTED):
                sources = executor.get_all_sources() if executor else source
                line = self.strfunction(targets, sources, env, executor)
                if line:
                    clear_status()
                    ending = "interrupted" if status else elapsed_text(time.monotonic() - started)
                    stream = sys.stderr if status else sys.stdout
                    # after Ctrl-C a terminal has echoed ^C where the cursor was: start the line afresh
                    erase = CLEAR if status and stream.isatty() else ""
                    print(f"{erase}{line}: {ending}", file=stream, flush=True)
            return status
        finally:
            _current.number = None


def _interrupted(targets: Sequence[Node]) -> int:
    """Remove the files of `targets` an interrupted stage may have left, except Precious ones (a result
    bundle's, which the run stage handles: heliabuild.scons.runner.run_action); EXIT_INTERRUPTED."""
    for node in targets:
        if not node.precious:
            with contextlib.suppress(FileNotFoundError, IsADirectoryError):
                os.unlink(node.get_abspath())
    return EXIT_INTERRUPTED


def _start() -> tuple[int, int]:
    """Count a stage action as started; its (k, n)."""
    with _lock:
        if not _stages:
            _stages.append(list(_stage_targets(_requested_nodes())))
        _started[0] += 1
        number = _started[0]
        remaining = [
            node
            for node in _stages[0]
            if node.get_state() != SCons.Node.up_to_date and not getattr(node, "cached", False)
        ]
        return number, max(number, len(remaining))


def _requested_nodes() -> list[Node]:
    """The nodes of this run's targets: the command line's or the default ones, else the top folder, found as
    SCons finds them (an alias first, then a file system entry)."""
    from SCons.Script import BUILD_TARGETS

    fs = SCons.Node.FS.get_default_fs()
    nodes: list[Node] = []
    for target in list(BUILD_TARGETS) or [fs.Dir(".")]:
        if isinstance(target, Node):
            nodes.append(target)
            continue
        found = None
        for lookup in SCons.Node.arg2nodes_lookups:
            found = lookup(target, curdir=os.getcwd())
            if found is not None:
                break
        nodes.append(found if found is not None else fs.Entry(target))
    return nodes


def _stage_targets(roots: Iterable[Node]) -> list[Node]:
    """The first target of every StageAction under `roots`, each once, read from the nodes' sources, explicit
    dependencies, scanned dependencies and (for a folder) entries, without scanning anything."""
    seen: set[int] = set()
    executors: dict[int, Node] = {}
    pending = list(roots)
    while pending:
        node = pending.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if node.has_builder():
            executor = node.get_executor()
            if executor is not None and any(isinstance(action, StageAction) for action in executor.get_action_list()):
                executors.setdefault(id(executor), executor.get_all_targets()[0])
        for children in (node.sources, node.depends, node.implicit):
            pending.extend(children or ())
        if isinstance(node, SCons.Node.FS.Dir):
            pending.extend(entry for name, entry in list(node.entries.items()) if name not in (".", ".."))
    return list(executors.values())
