"""Python's cyclic garbage collector during an SCons build that loaded the tool.

SCons's graph (nodes, executors, their build information) lives until SCons exits, and so does most of what
SCons allocates while it reads the SConscripts and decides what to build. The cyclic collector can free none
of it, yet each of its full collections walks all of it again: at 1,000 pipelines, 1.2 s of a 7.2 s no-op
build (bench/README.md). So:

- from the first heliabuild target (pause, by heliabuild.scons.process) until SCons has decided, the
  collector is off: reference counting still frees every object that is not part of a cycle, at once;
- when SCons starts deciding (freeze_the_graph, from the integrity decider's first call), everything alive
  then is frozen (gc.freeze): no later collection walks it;
- while a heliabuild stage runs inside SCons (stage_running, around every StageAction), the collector is on,
  as in any Python program: the stages load models, run Vela and LiteRT, and their cyclic garbage is freed as
  usual. When the last running stage ends, one collection frees what they left, what survives is frozen
  (modules imported, caches: they live on), and the collector is off again while SCons walks on.

A build whose process had the collector off already (or whose SConstruct turns it on again after its first
heliabuild target) is left as it is: only a collector the tool turned off is turned on and off by it.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

_lock = threading.Lock()
_state = {"paused": False, "frozen": False, "running": 0}
"""paused: the tool turned the collector off (pause); frozen: freeze_the_graph ran; running: stages running."""


def pause() -> None:
    """Turn the collector off for the SConscripts and SCons's deciding, if it is on (module docstring)."""
    with _lock:
        if gc.isenabled() and not _state["paused"]:
            gc.disable()
            _state["paused"] = True


def freeze_the_graph() -> None:
    """Freeze every object alive now (the graph, read from the SConscripts), once per process: no collection
    walks it again. What SCons drops of it later stays until SCons exits."""
    with _lock:
        if not _state["frozen"]:
            _state["frozen"] = True
            gc.freeze()


def is_frozen() -> bool:
    """Whether freeze_the_graph ran in this process."""
    return _state["frozen"]


@contextmanager
def stage_running() -> Iterator[None]:
    """The collector is on while the block (a stage) runs, when the tool turned it off; when the last running
    stage ends it collects once, freezes what survives and is off again (module docstring)."""
    with _lock:
        _state["running"] += 1
        if _state["paused"] and _state["running"] == 1:
            if gc.isenabled():  # the SConstruct turned it on again: leave it to the SConstruct
                _state["paused"] = False
            else:
                gc.enable()
    try:
        yield
    finally:
        with _lock:
            _state["running"] -= 1
            if _state["paused"] and _state["running"] == 0:
                if gc.isenabled():
                    gc.collect()
                    gc.freeze()
                    gc.disable()
                else:  # something the stage ran turned it off: leave it so
                    _state["paused"] = False
