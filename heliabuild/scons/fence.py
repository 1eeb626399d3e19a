"""The HeliaFence builder: a fenced model and its sidecar from a model and fences or a fence plan.

    env.HeliaFence('build/x_fenced.tflite', 'x.tflite', HELIA_FENCES=[3, 6])
    env.HeliaFence('build/x_fenced.tflite', ['x.tflite', 'fence_plan.json'])

Contract (docs/scons.md, "HeliaFence"):

- Sources: the unfenced model, then optionally a fence plan (`.json`). The fences come from exactly one of
  the plan (applied with heliabuild.fence.fence_model, which checks the plan is bound to the model) or
  HELIA_FENCES (positions, heliabuild.fence.rewrite_model_with_fences); both or neither is a configuration
  error while the SConscripts are read.
- Targets: the fenced model (default `<stem>_fenced.tflite` beside the model) and its sidecar
  `<fenced stem>.fenced_boundaries.json`, both or neither; HELIA_FENCES is in the varlist.
- Prints `$HELIA_FENCECOMSTR`; a HeliaError is one `heliabuild: error:` line and leaves neither target.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from SCons.Builder import Builder
from SCons.Environment import Base as Environment
from SCons.Node import Node

from heliabuild.errors import HeliaError
from heliabuild.fence.names import sidecar_path_for
from heliabuild.scons.leftovers import remove_leftovers
from heliabuild.scons.messages import configuration_error, node_path, stage_comstr, stage_failed
from heliabuild.scons.progress import stage_action
from heliabuild.scons.signatures import add_stage_dependencies

BUILDER_NAME = "HeliaFence"
FENCES = "HELIA_FENCES"
COMSTR = "HELIA_FENCECOMSTR"
FENCE_PLAN_SUFFIX = ".json"
MODEL_SUFFIX = ".tflite"
TARGET_SUFFIX = "_fenced.tflite"

DEFAULTS: dict[str, object] = {
    FENCES: [],
    COMSTR: stage_comstr("fence"),
}
"""Construction variables the tool sets with env.SetDefault."""


def fence_positions(env: Environment, target: Node) -> list[int] | None:
    """The value of HELIA_FENCES as a list, or None when it is unset or empty.

    Raises UserError when it is not a list or tuple: a string such as "3,6"
    is refused rather than split, so what is built is what was written. The
    positions themselves are checked by the library when the action runs.
    """
    value = env.get(FENCES)
    if value is None:
        return None
    if isinstance(value, str | bytes) or not isinstance(value, list | tuple):
        raise configuration_error(
            BUILDER_NAME, target, f"{FENCES} is {value!r}; expected a list of original operator indices, e.g. [3, 6]"
        )
    return list(value) or None


def _model_and_plan(target: Node, source: Sequence[Node]) -> tuple[Node, Node | None]:
    """Split the sources into the model and the optional plan; UserError for any other shape."""
    names = [node_path(node) for node in source]
    if not names:
        raise configuration_error(BUILDER_NAME, target, "no source: give the unfenced model as the first source")
    if names[0].endswith(FENCE_PLAN_SUFFIX):
        raise configuration_error(
            BUILDER_NAME, target, f"the first source is {names[0]}; the model must come first, then the plan"
        )
    if len(names) > 2 or (len(names) == 2 and not names[1].endswith(FENCE_PLAN_SUFFIX)):
        raise configuration_error(
            BUILDER_NAME,
            target,
            f"sources are {names}; expected the model, optionally followed by one fence-plan {FENCE_PLAN_SUFFIX} file",
        )
    return source[0], source[1] if len(source) == 2 else None


def fence_emitter(target: list[Node], source: list[Node], env: Environment) -> tuple[list[Node], list[Node]]:
    """Check the call, add the sidecar target and the tool-version dependencies.

    Returns `([fenced model, sidecar], sources)`. Raises UserError for a call
    with more than one target, badly shaped sources, or fences given both
    ways or not at all.
    """
    if len(target) != 1:
        raise configuration_error(BUILDER_NAME, target, "give one target, the fenced model; the sidecar is added")
    fenced = target[0]
    _, plan = _model_and_plan(fenced, source)
    fences = fence_positions(env, fenced)
    if plan is not None and fences is not None:
        raise configuration_error(
            BUILDER_NAME,
            fenced,
            f"fences are given twice, as {FENCES}={fences!r} and by the plan {node_path(plan)}; give one or the other",
        )
    if plan is None and fences is None:
        raise configuration_error(
            BUILDER_NAME,
            fenced,
            f"no fences: set {FENCES} (e.g. {FENCES}=[3, 6]) or give a fence-plan {FENCE_PLAN_SUFFIX} as second source",
        )
    sidecar = fenced.dir.File(sidecar_path_for(fenced.name).name)
    targets = [fenced, sidecar]
    add_stage_dependencies(env, targets, options=(FENCES,))
    return targets, list(source)


def fence_action(target: list[Node], source: list[Node], env: Environment) -> int:
    """Fence `source[0]` into `target[0]` and write the sidecar `target[1]`, both or neither.

    Uses the plan `source[1]` when there is one, HELIA_FENCES otherwise.
    Returns 0, or EXIT_BAD_INPUT after printing one `heliabuild: error:`
    line for a HeliaError.
    """
    # Imported here, not at module level: reading the SConscripts must not pay for numpy and the schema.
    from heliabuild.fence import fence_model, load_plan, rewrite_model_with_fences

    remove_leftovers(target)
    model = str(source[0])
    plan = str(source[1]) if len(source) > 1 else None
    try:
        if plan is not None:
            result = fence_model(model, load_plan(plan))
        else:
            result = rewrite_model_with_fences(model, list(env.get(FENCES) or []))
        sidecar = result.save(str(target[0]))
    except HeliaError as error:  # a binding error names the plan file itself
        return stage_failed(error, target)
    if os.path.abspath(sidecar) != target[1].get_abspath():
        raise RuntimeError(f"{BUILDER_NAME}: the sidecar was written to {sidecar}, but the target is {target[1]}")
    return 0


def fence_builder() -> Builder:
    """A new HeliaFence builder (see the module docstring for its contract)."""
    return Builder(
        action=stage_action(fence_action, COMSTR, [FENCES]),
        emitter=fence_emitter,
        suffix=TARGET_SUFFIX,
        src_suffix=MODEL_SUFFIX,
    )
