"""Stages that pipelines share: which construction variables a stage reads, and one builder call per inputs.

Contract (docs/sweeps.md, "Sharing"):

- SHAREABLE stages (all but the runner and the run, which are each pipeline's) may be shared: pipelines
  that give one stage the same target (HeliaPipeline's `stage_dirs=`, `unfenced_dir=` and `stem=`) share
  one builder call when its inputs are the same: the builder, its sources by path, and every construction
  variable the stage reads (`reads`), as the stage's environment resolves it.
- The same target from other inputs is a UserError naming the differing inputs; never two calls.
"""

from __future__ import annotations

from collections.abc import Mapping

from SCons.Environment import Base as Environment
from SCons.Node import Node

from heliabuild.scons import aot, firmware, fvp, runner, vela
from heliabuild.scons.messages import configuration_error, node_path
from heliabuild.scons.signatures import VELA_VERSION, readable

SHAREABLE = ("vela-unfenced", "plan-fences", "fence", "vela", "aot-plan", "firmware")
"""The stages pipelines can share, in build order."""

VARIABLE_PREFIX = "HELIA_"
_SHARED = "helia_shared_stage"
"""Attribute of a shared stage's first target: (the pipeline that made it, its inputs, its targets)."""
_RUN_VARIABLES = (runner.POLICY, runner.BACKEND, fvp.FVP_FIRMWARE, fvp.FVP_TIMELIMIT, fvp.ETHOSU_DRIVER_DIR)
_AOT_VARIABLES = (aot.PLATFORM, aot.PREFIX, aot.CONFIG, aot.INPUT_PLAN, firmware.PREFIX)
_VELA_STAGES = ("vela-unfenced", "vela")
_VELA_VARIABLES = (*vela.OPTIONS, VELA_VERSION)


def reads(stage: str, variable: str) -> bool:
    """Whether a shareable stage's outputs depend on a construction variable: for the Vela stages, the Vela
    options and version; for the others, every variable but those only later stages read (the AOT platform,
    prefix and configuration before aot-plan; the policy, backend and FVP options always). A variable that
    is not heliabuild's (no HELIA_ prefix) is the user's own, and every stage reads it."""
    if not variable.startswith(VARIABLE_PREFIX):
        return True
    if stage in _VELA_STAGES:
        return variable in _VELA_VARIABLES
    later = _RUN_VARIABLES if stage in ("aot-plan", "firmware") else _RUN_VARIABLES + _AOT_VARIABLES
    return variable not in later


def once(
    env: Environment,
    method: str,
    name: str,
    stage: str,
    builder: str,
    target: Node,
    sources: list[Node],
    variables: Mapping[str, object],
) -> list[Node]:
    """`env.<builder>(target, sources, **variables)` for pipeline `name`'s `stage`, or, when another
    pipeline already made `target` from the same inputs (module docstring), that call's targets. A
    UserError of `method` `name` for the same target from other inputs."""
    stage_env = env.Override(dict(variables))
    read = sorted(key for key in {*variables, *_VELA_VARIABLES} if reads(stage, key))
    inputs = (
        builder,
        *(node_path(source) for source in sources),
        *(f"{key}={readable(stage_env.get(key))}" for key in read),
    )
    shared = getattr(target.attributes, _SHARED, None)
    if shared is None:
        targets = getattr(env, builder)(target, sources, **variables)
        setattr(target.attributes, _SHARED, (name, inputs, tuple(targets)))
        return targets
    other, other_inputs, targets = shared
    if other_inputs != inputs:
        differences = [item for item in inputs if item not in other_inputs] or ["fewer inputs"]
        raise configuration_error(
            method,
            name,
            f"{node_path(target)} is the {stage} output of pipeline {other}, made from other inputs (here "
            f"{', '.join(differences)}); give each its own folder",
        )
    return list(targets)
