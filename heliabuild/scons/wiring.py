"""The heliabuild SCons tool: `generate(env)` and `exists(env)`.

`heliabuild.scons.tool` (a callable, for `Environment(tools=['default', heliabuild.scons.tool])`) and
site_scons/site_tools/helia.py (for `env.Tool('helia')`) both delegate here; either adds the
heliabuild builders and their construction variables to an environment.
"""

from __future__ import annotations

import atexit
import os
import sys
from typing import Any

from SCons.Environment import Base as Environment
from SCons.Errors import UserError

from heliabuild.locks import LockError, acquire, release
from heliabuild.scons import (
    aot,
    collector,
    executor,
    fence,
    firmware,
    module,
    pipeline,
    plan,
    remote_cache,
    runner,
    summary,
    sweep_table,
    synth,
    vela,
)

BUILDERS = {
    aot.BUILDER_NAME: aot.aot_builder,
    firmware.MODULE_BUILDER_NAME: firmware.module_builder,
    fence.BUILDER_NAME: fence.fence_builder,
    plan.BUILDER_NAME: plan.plan_builder,
    runner.RUNNER_BUILDER_NAME: runner.runner_builder,
    runner.RUN_BUILDER_NAME: runner.run_builder,
    sweep_table.TABLE_BUILDER_NAME: sweep_table.table_builder,
    synth.BUILDER_NAME: synth.synth_builder,
    vela.BUILDER_NAME: vela.vela_builder,
}
"""Builder name -> factory of every builder the tool adds."""

SWEEP_METHOD_NAME = "HeliaSweep"
"""heliabuild.scons.sweep.METHOD_NAME, restated so that loading the tool does not import the sweep (a test
checks they agree)."""


def helia_sweep(env: Environment, *args: Any, **kwargs: Any) -> Any:
    """env.HeliaSweep: heliabuild.scons.sweep.helia_sweep, its module imported when a SConscript first calls
    it (a project without sweeps never reads the grid and sharing modules)."""
    from heliabuild.scons.sweep import helia_sweep as sweep

    return sweep(env, *args, **kwargs)


METHODS = {
    pipeline.METHOD_NAME: pipeline.helia_pipeline,
    module.METHOD_NAME: module.helia_module,
    SWEEP_METHOD_NAME: helia_sweep,
}
"""Method name -> function of every pseudo-builder the tool adds (env.AddMethod)."""

BUILD_LOCK = ".sconsign.heliabuild.lock"
"""The project's build lock file, in the top folder (lock_the_build)."""

_held: list[int] = []
"""The descriptor of the build lock once this process holds it."""

MAX_DRIFT = -1
"""The `max_drift` the tool sets: never take a file's content signature from its modification time."""


def generate(env: Environment) -> None:
    """Add the heliabuild builders and pseudo-builders to `env`, and set defaults for their construction variables.

    Variables already set in `env` are kept (env.SetDefault). The decider is
    not changed: heliabuild relies on SCons's default `content` decider, and
    a build that switches to a timestamp decider gives up its guarantees.
    So that the content decider holds for every file, the SCons option
    `max_drift` is set to -1 (see disable_max_drift). Two builds of one
    project never run at once (see lock_the_build). The build ends with the summary table of its
    pipelines (heliabuild.scons.summary). Python's cyclic garbage collector is off while SCons reads and
    decides, and on while a heliabuild stage runs (heliabuild.scons.collector). The option
    `--helia-cache-url` (or HELIA_CACHE_URL) adds a remote build cache to the CacheDir
    (heliabuild.scons.remote_cache).
    """
    disable_max_drift()
    collector.pause()
    remote_cache.configure(env)
    executor.add_options()
    executor.check_choice()
    lock_the_build(env)
    summary.install()
    for stage in (aot, fence, firmware, module, plan, runner, sweep_table, synth, vela):
        env.SetDefault(**stage.DEFAULTS)
    env.Append(BUILDERS={name: factory() for name, factory in BUILDERS.items()})
    for name, function in METHODS.items():
        env.AddMethod(function, name)


def disable_max_drift() -> None:
    """Set the SCons option `max_drift` to -1 unless the command line or an SConscript set another value.

    With SCons's default (two days), a file whose modification time is older
    than that and equal to the one recorded keeps its recorded content
    signature without being read, so an edit that keeps the old mtime
    (`cp -p`, `tar`, `rsync -t`) is missed. With -1 every file's signature
    comes from its content. A value the user set (`--max-drift=N`, or
    `SetOption('max_drift', N)` before the tool is loaded) is kept, except
    SCons's own default, which cannot be told apart from not setting it.
    """
    from SCons.Node.FS import default_max_drift
    from SCons.Script import GetOption, SetOption

    if GetOption("max_drift") == default_max_drift:
        SetOption("max_drift", MAX_DRIFT)


def lock_the_build(env: Environment) -> None:
    """Hold the project's build lock, `BUILD_LOCK` in the top folder (beside SCons's database), until this
    SCons process ends; while another `scons` holds it, say so on stderr and wait.

    Two builds at once would remove each other's targets (SCons removes a
    target before rebuilding it) and overwrite each other's database. The
    second build therefore waits and then builds what is still out of date,
    usually nothing. Help (`-h`) and dry runs (`-n`) write nothing and take
    no lock. A lock file that cannot be created is a UserError naming it.
    """
    from SCons.Script import GetOption

    if _held or GetOption("help") or GetOption("no_exec"):
        return
    top = env.Dir("#").get_abspath()
    path = os.path.join(top, BUILD_LOCK)

    def waiting() -> None:
        print(f"heliabuild: waiting for the other scons building {top} to finish ({path})", file=sys.stderr, flush=True)

    try:
        descriptor = acquire(path, on_wait=waiting)
    except LockError as error:
        raise UserError(f"heliabuild: {error.message}") from None
    _held.append(descriptor)
    atexit.register(release, descriptor, path)


def exists(env: Environment) -> bool:
    """True: the tool needs only the heliabuild package, which is imported by now."""
    return True
