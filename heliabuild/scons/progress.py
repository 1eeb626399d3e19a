"""The `[k/n]` counter and elapsed time of heliabuild's SCons stage lines (docs/scons.md, "Progress lines").

Every heliabuild stage action is a StageAction (stage_action), and the firmware's compiles and links are
StageCommandActions or StageActions too. When SCons runs one, its line gets a counter, `heliabuild: [k/n]
<stage> <first target>`, and when it ends without error a second line says how long it took: `...: done in
1.23 s`. k is the stage's place among the stage actions this run started. n is the number of stage actions
under this run's targets that will run: those whose targets SCons would rebuild now, or that are fed by one
that will (predicted once, when the first one starts, from the build information SCons stored: as SCons
decides, without scanning), less those SCons has since found up to date or retrieved from a CacheDir, plus
those that started. A full build and a change end at `[n/n]`; a stage whose rebuilt output came out
byte-identical makes n shrink when SCons finds the stages after it up to date.
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
from SCons.Action import CommandAction, FunctionAction
from SCons.Node import Node
from SCons.Util import hash_signature

from heliabuild.progress import CLEAR, clear_status
from heliabuild.scons.collector import stage_running
from heliabuild.scons.interrupt import EXIT_INTERRUPTED, StageInterrupted, interruptible
from heliabuild.scons.interrupt import requested as interrupted
from heliabuild.scons.messages import stage_running_on

PREFIX = "heliabuild: "

_lock = threading.Lock()
_started: list[int] = [0]
"""How many stage actions this SCons process has started."""
_started_targets: set[int] = set()
"""The ids of the first targets of the stage actions this SCons process has started."""
_stages: list[list[Node]] = []
"""Once read: the first target of every stage action under this run's targets that will run (_will_run)."""
_current = threading.local()
"""The counter of the stage action running in this thread: `number` (k) and `total` (n)."""


def stage_action(function: Callable[..., int], comstr: str, varlist: Sequence[str] = ()) -> StageAction:
    """The action of a heliabuild stage: `function`, printing `$<comstr>` with the counter (module docstring).
    Its signature is `function`'s and `varlist`'s, as for SCons's `Action(function, cmdstr=..., varlist=...)`."""
    return StageAction(function, {"cmdstr": f"${comstr}", "varlist": tuple(varlist)})


def stage_command_action(command: str, comstr: str) -> StageCommandAction:
    """The action of the command line `command` (e.g. `$CCCOM`), printing `$<comstr>` with the counter. Its
    signature is the command's, as for SCons's `Action(command, cmdstr=...)`."""
    return StageCommandAction(command, cmdstr=f"${comstr}")


def with_counter(line: str, number: int, total: int) -> str:
    """`line` with `[number/total] ` after its `heliabuild: ` prefix (or before it, for a line without one)."""
    counter = f"[{number}/{total}] "
    if line.startswith(PREFIX):
        return PREFIX + counter + line.removeprefix(PREFIX)
    return counter + line


def elapsed_text(seconds: float) -> str:
    """How long a stage took, as its `done` line says it: `done in 1.23 s`."""
    return f"done in {seconds:.2f} s"


class _Counted:
    """An action whose progress line carries the `[k/n]` counter and which says when it is done."""

    def strfunction(self, target: Any, source: Any, env: Any, executor: Any = None) -> str | None:
        line = super().strfunction(target, source, env, executor)
        number = getattr(_current, "number", None)
        if not line or number is None:
            return line
        return with_counter(line, number, _current.total)

    def print_cmd_line(self, s: str, target: Any, source: Any, env: Any) -> None:
        clear_status()
        super().print_cmd_line(s, target, source, env)

    def __call__(
        self,
        target: Any,
        source: Any,
        env: Any,
        exitstatfunc: Any = SCons.Action._null,
        presub: Any = SCons.Action._null,
        show: Any = SCons.Action._null,
        execute: Any = SCons.Action._null,
        chdir: Any = SCons.Action._null,
        executor: Any = None,
    ) -> Any:
        # SCons passes these by keyword (an Executor) or by position (a builder's choice of actions by suffix)
        kwargs = {"exitstatfunc": exitstatfunc, "presub": presub, "show": show, "execute": execute, "chdir": chdir}
        kwargs["executor"] = executor
        shown = SCons.Action.print_actions if show is SCons.Action._null else show
        executed = SCons.Action.execute_actions if execute is SCons.Action._null else execute
        targets = executor.get_all_targets() if executor else target
        _current.number, _current.total = _start(targets[0])
        started = time.monotonic()
        try:
            try:
                with stage_running(), stage_running_on(targets), interruptible():
                    status = super().__call__(target, source, env, **kwargs)
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
                    # one write per line: print() writes the end of line apart, and at -j2 another job's
                    # line could land between the two
                    stream.write(f"{erase}{line}: {ending}\n")
                    stream.flush()
            return status
        finally:
            _current.number = None


class StageAction(_Counted, FunctionAction):
    """A FunctionAction with the counter (_Counted)."""


class StageCommandAction(_Counted, CommandAction):
    """A CommandAction with the counter (_Counted)."""


def _interrupted(targets: Sequence[Node]) -> int:
    """Remove the files of `targets` an interrupted stage may have left, except Precious ones (a result
    bundle's, which the run stage handles: heliabuild.scons.runner.run_action); EXIT_INTERRUPTED. Each such file
    was written by this action: SCons removes a derived target that is not Precious before its action runs
    (SCons.Node.FS.File.prepare)."""
    for node in targets:
        if not node.precious:
            with contextlib.suppress(FileNotFoundError, IsADirectoryError):
                os.unlink(node.get_abspath())
    return EXIT_INTERRUPTED


def _start(first_target: Node) -> tuple[int, int]:
    """Count the stage action of `first_target` as started; its (k, n)."""
    with _lock:
        if not _stages:
            memo: dict[int, bool] = {}
            _stages.append([node for node in _stage_targets(_requested_nodes()) if _will_run(node, memo)])
        _started[0] += 1
        _started_targets.add(id(first_target))
        remaining = {
            id(node)
            for node in _stages[0]
            if node.get_state() != SCons.Node.up_to_date and not getattr(node, "cached", False)
        }
        return _started[0], max(_started[0], len(remaining | _started_targets))


def _will_run(node: Node, memo: dict[int, bool]) -> bool:
    """Whether SCons will build `node` in this run, as far as can be told before it decides: it has a builder
    and SCons has not found it up to date, and a target of its action is missing, or the action's signature,
    or a dependency SCons recorded (sources, explicit dependencies, the implicit ones of its last build), is
    not what it was, or a dependency is built by an action that will run (whose output may change)."""
    known = memo.get(id(node))
    if known is not None:
        return known
    memo[id(node)] = True  # the graph has no cycles; a node met again while deciding counts as running
    try:
        verdict = node.has_builder() and isinstance(node, SCons.Node.FS.File) and _out_of_date(node, memo)
    except Exception:  # build information of a shape this reading does not know: count it, as may still run
        verdict = True
    memo[id(node)] = verdict
    return verdict


def _out_of_date(node: Node, memo: dict[int, bool]) -> bool:
    if node.get_state() == SCons.Node.up_to_date or getattr(node, "cached", False):
        return False
    executor = node.get_executor()
    if not all(target.exists() for target in executor.get_all_targets()):
        return True
    built = node.get_stored_info().binfo
    if getattr(built, "bactsig", None) != hash_signature(executor.get_contents()):
        return True
    explicit = [*node.sources, *node.depends]
    recorded = [*getattr(built, "bsourcesigs", []), *getattr(built, "bdependsigs", [])]
    if len(explicit) != len(recorded):
        return True
    implicit = [
        (name if isinstance(name, Node) else info.str_to_node(name), info)
        for name, info in zip(getattr(built, "bimplicit", []), getattr(built, "bimplicitsigs", []), strict=False)
    ]
    return any(
        (child.has_builder() and _will_run(child, memo))
        or SCons.Node._decider_map[child.changed_since_last_build](child, node, info, node)
        for child, info in [*zip(explicit, recorded, strict=True), *implicit]
    )


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
            if executor is not None and any(_counts(action) for action in executor.get_action_list()):
                executors.setdefault(id(executor), executor.get_all_targets()[0])
        for children in (node.sources, node.depends, node.implicit):
            pending.extend(children or ())
        if isinstance(node, SCons.Node.FS.Dir):
            pending.extend(entry for name, entry in list(node.entries.items()) if name not in (".", ".."))
    return list(executors.values())


def _counts(action: object) -> bool:
    """Whether `action` is a counted one: a _Counted action, or a builder's choice of actions by source suffix
    (SCons's Object builder) that holds one."""
    if isinstance(action, _Counted):
        return True
    choices = getattr(action, "generator", None)
    return isinstance(choices, dict) and any(isinstance(choice, _Counted) for choice in choices.values())
