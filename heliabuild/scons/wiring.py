"""The heliabuild SCons tool: `generate(env)` and `exists(env)`, as SCons's own tools have them.

`heliabuild.scons.tool` (a callable, for `Environment(tools=['default', heliabuild.scons.tool])`) and
site_scons/site_tools/helia.py (for `env.Tool('helia')`) both delegate here. `generate` touches only `env`;
every builder and pseudo-builder it adds runs heliabuild.scons.process.configure_build when it declares
targets.
"""

from __future__ import annotations

import functools
import importlib.util
from collections.abc import Callable
from typing import Any

from SCons.Builder import BuilderBase, ListEmitter
from SCons.Environment import Base as Environment
from SCons.Node import Node

from heliabuild.scons import aot, fence, fence_plan, firmware, module, pipeline, runner, sweep_table, synth, vela
from heliabuild.scons.process import configure_build

BUILDERS = {
    aot.BUILDER_NAME: aot.aot_builder,
    firmware.MODULE_BUILDER_NAME: firmware.module_builder,
    firmware.ADMISSION_BUILDER_NAME: firmware.admission_builder,
    fence.BUILDER_NAME: fence.fence_builder,
    fence_plan.BUILDER_NAME: fence_plan.fence_plan_builder,
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


def _configuring_emitter(target: list[Node], source: list[Node], env: Environment) -> tuple[list[Node], list[Node]]:
    """The first emitter of every heliabuild builder: declaring a heliabuild target configures the build."""
    configure_build(env)
    return target, source


def _configuring_builder(factory: Callable[[], BuilderBase]) -> BuilderBase:
    """A new builder of `factory` whose emitter first configures the build (_configuring_emitter)."""
    builder = factory()
    builder.emitter = ListEmitter([_configuring_emitter, *([builder.emitter] if builder.emitter else [])])
    return builder


def _configuring_method(function: Callable[..., Any]) -> Callable[..., Any]:
    """`function` (a pseudo-builder) configuring the build before it declares anything."""

    @functools.wraps(function)
    def method(env: Environment, *args: Any, **kwargs: Any) -> Any:
        configure_build(env)
        return function(env, *args, **kwargs)

    return method


def generate(env: Environment) -> None:
    """Add the heliabuild builders and pseudo-builders to `env`, and set defaults for their construction
    variables (values already in `env` are kept: env.SetDefault). Nothing else: the settings a heliabuild build
    makes beyond `env` are made when its first target is declared (heliabuild.scons.process, docs/scons.md)."""
    for stage in (aot, fence, fence_plan, firmware, module, runner, sweep_table, synth, vela):
        env.SetDefault(**stage.DEFAULTS)
    env.Append(BUILDERS={name: _configuring_builder(factory) for name, factory in BUILDERS.items()})
    for name, function in METHODS.items():
        env.AddMethod(_configuring_method(function), name)


_NEEDED_MODULES = ("ethosu.vela", "ai_edge_litert")
"""What every pipeline needs importable: Vela, and LiteRT (models are read and run with it)."""


def exists(env: Environment) -> bool:
    """Whether heliabuild can build here: Vela and LiteRT are importable (found, not imported)."""
    for name in _NEEDED_MODULES:
        try:
            if importlib.util.find_spec(name) is None:
                return False
        except (ImportError, ValueError):
            return False
    return True
