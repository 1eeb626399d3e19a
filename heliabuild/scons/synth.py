"""The HeliaSynth builder: a deterministic synthetic model of a kind and seed.

    env.HeliaSynth('kws_chain.tflite', HELIA_SYNTH_KIND='chain', HELIA_SYNTH_SEED=0)

Contract:

- One target and no sources. SCons reads a lone positional argument as
  the source and derives the target from it; the emitter turns that back
  into the target, so `env.HeliaSynth('x.tflite', ...)`,
  `env.HeliaSynth('x.tflite', [], ...)` and `env.HeliaSynth(target='x.tflite', ...)`
  all mean the same. The model is `heliabuild.synth.synthesize(HELIA_SYNTH_KIND,
  seed=HELIA_SYNTH_SEED)` written with `heliabuild.model.save_model`
  (atomically); the same kind and seed give a byte-identical file.
- `HELIA_SYNTH_KIND` is required (a key of heliabuild.synth.KINDS);
  `HELIA_SYNTH_SEED` defaults to 0. Both are in the action's varlist, so
  changing either rebuilds; so does a heliabuild or ai-edge-litert upgrade.
- Prints `$HELIA_SYNTHCOMSTR` (default `heliabuild: synth $TARGET`). An
  unknown kind or a bad seed stops the build with one `heliabuild: error:`
  line and leaves no target.
"""

from __future__ import annotations

from SCons.Builder import Builder
from SCons.Environment import Base as Environment
from SCons.Node import Node

from heliabuild.errors import HeliaError
from heliabuild.scons.leftovers import remove_leftovers
from heliabuild.scons.messages import configuration_error, node_path, stage_comstr, stage_failed
from heliabuild.scons.progress import stage_action
from heliabuild.scons.signatures import add_stage_dependencies

BUILDER_NAME = "HeliaSynth"
KIND = "HELIA_SYNTH_KIND"
SEED = "HELIA_SYNTH_SEED"
COMSTR = "HELIA_SYNTHCOMSTR"
TARGET_SUFFIX = ".tflite"

DEFAULTS: dict[str, object] = {
    KIND: "",
    SEED: 0,
    COMSTR: stage_comstr("synth"),
}
"""Construction variables the tool sets with env.SetDefault."""


def synth_emitter(target: list[Node], source: list[Node], env: Environment) -> tuple[list[Node], list[Node]]:
    """Check the call (one target, no sources, a kind) and add the tool-version dependencies.

    A lone positional argument arrives as a source with the same node as
    target (see the module docstring); it is dropped from the sources.
    """
    if len(source) == 1 and len(target) == 1 and source[0] is target[0]:
        source = []
    if len(target) != 1:
        raise configuration_error(BUILDER_NAME, target, "give exactly one target, the model")
    if source:
        raise configuration_error(
            BUILDER_NAME,
            target[0],
            f"takes no sources (got {[node_path(s) for s in source]}); set {KIND} and {SEED} instead",
        )
    if not env.get(KIND):
        raise configuration_error(BUILDER_NAME, target[0], f"{KIND} is not set; e.g. {KIND}='chain'")
    add_stage_dependencies(env, target, options=(KIND, SEED))
    return target, source


def synth_action(target: list[Node], source: list[Node], env: Environment) -> int:
    """Write the model of HELIA_SYNTH_KIND and HELIA_SYNTH_SEED to `target[0]`.

    Returns 0, or EXIT_BAD_INPUT after printing one `heliabuild: error:`
    line for a HeliaError.
    """
    # Imported here, not at module level: reading the SConscripts must not pay for numpy and the schema.
    from heliabuild.model import save_model
    from heliabuild.synth import synthesize

    remove_leftovers(target)
    try:
        save_model(synthesize(env[KIND], seed=env[SEED]), str(target[0]))
    except HeliaError as error:
        return stage_failed(error, target)
    return 0


def synth_builder() -> Builder:
    """A new HeliaSynth builder (see the module docstring for its contract)."""
    return Builder(
        action=stage_action(synth_action, COMSTR, [KIND, SEED]),
        emitter=synth_emitter,
        suffix=TARGET_SUFFIX,
    )
