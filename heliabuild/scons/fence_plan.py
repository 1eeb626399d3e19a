"""The HeliaFencePlan builder: fences planned for a cycle budget from a model and Vela's estimate of it.

    env.HeliaFencePlan('x_fence_plan.json', ['x.tflite', 'unfenced/x_per-layer.csv'], HELIA_BUDGET_CYCLES=30000)

Contract (docs/scons.md, "HeliaFencePlan" and "Cost planning"):

- Sources: the unfenced `.tflite` model, then Vela's per-layer CSV of that very model.
- Target: one fence plan (default `<model stem>_fence_plan.json` beside the model), written by
  heliabuild.planning.plan_fences in a `plan-fences` job of the build's executor (heliabuild.scons.executor).
- HELIA_BUDGET_CYCLES (a positive int, required) and HELIA_MIN_COVERAGE (0 to 1, default 1.0) are in the
  varlist; HELIA_VELA_VERSION is a dependency too (attributing Vela's rows reads Vela's operator table).
- Prints `$HELIA_FENCEPLANCOMSTR`, then `heliabuild: plan-fences <target>: <n> fences, <n + 1> segments`; a
  HeliaError is one `heliabuild: error:` line and leaves no plan.
"""

from __future__ import annotations

import json
import sys

from SCons.Builder import Builder
from SCons.Environment import Base as Environment
from SCons.Node import Node

from heliabuild.errors import HeliaError
from heliabuild.progress import clear_status
from heliabuild.scons.executor import failed, run_stage
from heliabuild.scons.leftovers import remove_leftovers
from heliabuild.scons.messages import configuration_error, node_path, stage_comstr
from heliabuild.scons.progress import stage_action
from heliabuild.scons.signatures import add_stage_dependencies

BUILDER_NAME = "HeliaFencePlan"
STAGE = "plan-fences"
BUDGET_CYCLES = "HELIA_BUDGET_CYCLES"
MIN_COVERAGE = "HELIA_MIN_COVERAGE"
COMSTR = "HELIA_FENCEPLANCOMSTR"
STAGE_PREFIX = f"heliabuild: {STAGE} "
MODEL_SUFFIX = ".tflite"
CSV_SUFFIX = ".csv"
TARGET_SUFFIX = "_fence_plan.json"

DEFAULTS: dict[str, object] = {
    BUDGET_CYCLES: None,
    MIN_COVERAGE: 1.0,
    COMSTR: stage_comstr(STAGE),
}
"""Construction variables the tool sets with env.SetDefault."""


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def fence_plan_emitter(target: list[Node], source: list[Node], env: Environment) -> tuple[list[Node], list[Node]]:
    """Check the call (one target; the model, then the CSV; a budget) and add the tool-version dependencies."""
    if len(target) != 1:
        raise configuration_error(BUILDER_NAME, target, "give exactly one target, the fence plan")
    plan = target[0]
    names = [node.name for node in source]
    if len(names) != 2 or not names[0].endswith(MODEL_SUFFIX) or not names[1].endswith(CSV_SUFFIX):
        raise configuration_error(
            BUILDER_NAME,
            plan,
            f"sources are {[node_path(s) for s in source]}; expected the unfenced {MODEL_SUFFIX} model, "
            f"then Vela's per-layer {CSV_SUFFIX} of it",
        )
    budget = env.get(BUDGET_CYCLES)
    if isinstance(budget, bool) or not isinstance(budget, int) or budget <= 0:
        raise configuration_error(
            BUILDER_NAME, plan, f"{BUDGET_CYCLES} is {budget!r}; expected a positive number of cycles, e.g. 30000"
        )
    coverage = env.get(MIN_COVERAGE)
    if not _is_number(coverage) or not 0 <= coverage <= 1:
        raise configuration_error(
            BUILDER_NAME, plan, f"{MIN_COVERAGE} is {coverage!r}; expected a fraction from 0 to 1, e.g. 1.0"
        )
    add_stage_dependencies(env, target, vela=True, options=(BUDGET_CYCLES, MIN_COVERAGE))
    return target, source


def fence_plan_action(target: list[Node], source: list[Node], env: Environment) -> int:
    """Plan fences for `source[0]` from the CSV `source[1]` and write the plan to `target[0]`.

    Returns 0, or EXIT_BAD_INPUT after printing one `heliabuild: error:`
    line for a HeliaError.
    """
    # Imported here, not at module level: reading the SConscripts must not pay for numpy and the schema.
    from heliabuild.executor.stages import plan_fences_job

    remove_leftovers(target)
    try:
        job, files = plan_fences_job(
            str(source[0]), str(source[1]), str(target[0]), env[BUDGET_CYCLES], float(env[MIN_COVERAGE])
        )
        (written,) = run_stage(job, files, target).outputs.values()
    except HeliaError as error:
        return failed(error, target)
    fences = len(json.loads(written)["fences"])
    clear_status()
    sys.stdout.write(f"{STAGE_PREFIX}{node_path(target[0])}: {fences} fences, {fences + 1} segments\n")
    sys.stdout.flush()
    return 0


def fence_plan_builder() -> Builder:
    """A new HeliaFencePlan builder (see the module docstring for its contract)."""
    return Builder(
        action=stage_action(fence_plan_action, COMSTR, [BUDGET_CYCLES, MIN_COVERAGE]),
        emitter=fence_plan_emitter,
        suffix=TARGET_SUFFIX,
        src_suffix=MODEL_SUFFIX,
    )
