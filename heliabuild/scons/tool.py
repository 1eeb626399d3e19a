"""The heliabuild SCons tool: `generate(env)` and `exists(env)`.

site_scons/site_tools/heliabuild.py delegates here, so `env.Tool('heliabuild')`
(or `Environment(tools=['heliabuild'])`) adds the heliabuild builders and
their construction variables to an environment.
"""

from __future__ import annotations

from SCons.Environment import Base as Environment

from heliabuild.scons import aot, fence, pipeline, plan, runner, synth, vela

BUILDERS = {
    aot.BUILDER_NAME: aot.aot_builder,
    fence.BUILDER_NAME: fence.fence_builder,
    plan.BUILDER_NAME: plan.plan_builder,
    runner.RUNNER_BUILDER_NAME: runner.runner_builder,
    runner.RUN_BUILDER_NAME: runner.run_builder,
    synth.BUILDER_NAME: synth.synth_builder,
    vela.BUILDER_NAME: vela.vela_builder,
}
"""Builder name -> factory of every builder the tool adds."""

METHODS = {
    pipeline.METHOD_NAME: pipeline.helia_pipeline,
}
"""Method name -> function of every pseudo-builder the tool adds (env.AddMethod)."""


def generate(env: Environment) -> None:
    """Add the heliabuild builders and pseudo-builders to `env`, and set defaults for their construction variables.

    Variables already set in `env` are kept (env.SetDefault). The decider is
    not changed: heliabuild relies on SCons's default `content` decider, and
    a build that switches to a timestamp decider gives up its guarantees.
    """
    for module in (aot, fence, plan, runner, synth, vela):
        env.SetDefault(**module.DEFAULTS)
    env.Append(BUILDERS={name: factory() for name, factory in BUILDERS.items()})
    for name, function in METHODS.items():
        env.AddMethod(function, name)


def exists(env: Environment) -> bool:
    """True: the tool needs only the heliabuild package, which is imported by now."""
    return True
