"""The HeliaVela builder: Vela's four outputs from a model, fenced or not (docs/scons.md, "HeliaVela").

    env.HeliaVela('build/x_fenced_vela.tflite', 'build/x_fenced.tflite')
    env.HeliaVela('build/x_fenced.tflite', HELIA_VELA_ACCELERATOR='ethos-u85-256')

Contract:

- Source: one `.tflite` model; a fenced model's sidecar is an implicit dependency (heliabuild.scons.scanners).
- Targets: heliabuild.vela.output_names, in that order, in the folder of the first target (given, or beside
  the source); a first target of another name is a configuration error. `scons -c` removes all four, and
  the summary CSVs of earlier system configs.
- Options: OPTIONS (defaults in DEFAULTS; each HELIA_VELA_CONFIG file is a dependency), in the varlist;
  the recorded Vela version HELIA_VELA_VERSION and the tool versions are Value dependencies.
- Runs heliabuild.vela.compile as a `vela` job of the build's executor (heliabuild.scons.executor), all four
  targets written or none; prints `$HELIA_VELACOMSTR` and each of Vela's warnings once per SCons run. A
  HeliaError is one `heliabuild: error:` line and leaves none of the targets.
"""

from __future__ import annotations

import os

from SCons.Builder import Builder
from SCons.Environment import Base as Environment
from SCons.Node import Node

from heliabuild.errors import HeliaError
from heliabuild.scons.executor import failed, run_stage
from heliabuild.scons.leftovers import clean_earlier, remove_leftovers
from heliabuild.scons.messages import configuration_error, node_path, stage_comstr, stage_warnings
from heliabuild.scons.progress import stage_action
from heliabuild.scons.scanners import sidecar_scanner
from heliabuild.scons.signatures import VELA_DISTRIBUTION, VELA_VERSION, add_stage_dependencies, installed_version
from heliabuild.vela.configs import resolve_config
from heliabuild.vela.default_config import explained
from heliabuild.vela.names import DEFAULT_ACCELERATOR, default_system_config, output_names

BUILDER_NAME = "HeliaVela"
STAGE = "vela"
AOT_PLATFORM = "HELIA_AOT_PLATFORM"
"""heliabuild.scons.aot.PLATFORM: the platform the pipeline plans for, named in the default-config warning."""
ACCELERATOR = "HELIA_VELA_ACCELERATOR"
SYSTEM_CONFIG = "HELIA_VELA_SYSTEM_CONFIG"
MEMORY_MODE = "HELIA_VELA_MEMORY_MODE"
CONFIG = "HELIA_VELA_CONFIG"
OPTIMISE = "HELIA_VELA_OPTIMISE"
EXTRA_ARGS = "HELIA_VELA_EXTRA_ARGS"
COMSTR = "HELIA_VELACOMSTR"
MODEL_SUFFIX = ".tflite"
TARGET_SUFFIX = "_vela.tflite"
OPTIONS = (ACCELERATOR, SYSTEM_CONFIG, MEMORY_MODE, CONFIG, OPTIMISE, EXTRA_ARGS)
"""The construction variables that hold Vela's options, in the action's varlist."""

DEFAULTS: dict[str, object] = {
    ACCELERATOR: DEFAULT_ACCELERATOR,
    SYSTEM_CONFIG: None,
    MEMORY_MODE: None,
    CONFIG: [],
    OPTIMISE: None,
    EXTRA_ARGS: [],
    VELA_VERSION: installed_version(VELA_DISTRIBUTION),  # what heliabuild.vela.vela_version() gives
    COMSTR: stage_comstr(STAGE),
}
"""Construction variables the tool sets with env.SetDefault.

`HELIA_VELA_VERSION` is the recorded Vela version, the installed
ethos-u-vela's (heliabuild.vela.vela_version()); overriding it reruns Vela.
"""

_CONFIG_PATHS = "helia_vela_config"
"""Attribute of the first target's `attributes`: the config files' paths, as the action passes them to Vela."""


def _optional_text(env: Environment, name: str, target: Node) -> str | None:
    value = env.get(name)
    if value is None or isinstance(value, str):
        return value or None
    raise configuration_error(BUILDER_NAME, target, f"{name} is {value!r}; expected a string or None")


def _text_list(env: Environment, name: str, target: Node, example: str) -> list[object]:
    """The list or tuple `name` holds, as a list ([] for None); UserError for anything else, a string included."""
    value = env.get(name)
    if value is None:
        return []
    if isinstance(value, list | tuple):
        return list(value)
    raise configuration_error(BUILDER_NAME, target, f"{name} is {value!r}; expected a list, e.g. {name}={example}")


def vela_options(env: Environment, target: Node) -> dict[str, object]:
    """The keyword arguments of heliabuild.vela.compile the HELIA_VELA_* variables give, config files left out.

    UserError when a variable has the wrong type; the values themselves
    (an unknown accelerator, say) are checked by the library when Vela runs.
    """
    accelerator = env.get(ACCELERATOR)
    if not isinstance(accelerator, str) or not accelerator:
        raise configuration_error(
            BUILDER_NAME, target, f"{ACCELERATOR} is {accelerator!r}; expected a name such as {DEFAULT_ACCELERATOR!r}"
        )
    extra = _text_list(env, EXTRA_ARGS, target, "['--verbose-weights']")
    if not all(isinstance(argument, str) for argument in extra):
        raise configuration_error(BUILDER_NAME, target, f"{EXTRA_ARGS} is {extra!r}; expected a list of strings")
    return {
        "accelerator": accelerator,
        "system_config": _optional_text(env, SYSTEM_CONFIG, target),
        "memory_mode": _optional_text(env, MEMORY_MODE, target),
        "optimise": _optional_text(env, OPTIMISE, target),
        "extra_args": tuple(extra),
    }


def config_nodes(env: Environment, target: Node) -> list[Node]:
    """The File nodes of HELIA_VELA_CONFIG (a path or node, or a list), each the file Vela will read.

    A path is relative to the calling SConscript's folder; one that names no file there, built or present,
    but names one of Vela's packaged configuration files as Vela does (`Arm/vela.ini`), is that packaged
    file (heliabuild.vela.configs.resolve_config), so its content is the dependency.
    """
    value = env.get(CONFIG)
    items = [value] if isinstance(value, str | Node) else _text_list(env, CONFIG, target, "['vela.ini']")
    nodes = []
    for item in items:
        node = env.File(item)
        if isinstance(item, str) and not node.has_builder() and not node.srcnode().exists():
            packaged = resolve_config(item)
            if packaged.is_absolute() and packaged.is_file():
                node = env.File(str(packaged))
        nodes.append(node)
    return nodes


def vela_target_name(model_name: str) -> str:
    """The name of Vela's compiled model for a model named `model_name`: `<stem>_vela.tflite`."""
    return output_names(model_name, default_system_config(DEFAULT_ACCELERATOR))["model"]


def vela_emitter(target: list[Node], source: list[Node], env: Environment) -> tuple[list[Node], list[Node]]:
    """Check the call and options, add the other three targets and the dependencies.

    Returns `([compiled model, per-layer CSV, summary CSV, segments JSON], [model])`.
    Config files that exist or are built become dependencies; the paths of
    all of them go to the action (a missing one is then reported by Vela's
    stage as a one-line error, not by SCons).
    """
    if len(target) != 1:
        raise configuration_error(BUILDER_NAME, target, "give one target, the compiled model; the others are added")
    compiled = target[0]
    if len(source) != 1 or not source[0].name.endswith(MODEL_SUFFIX):
        raise configuration_error(
            BUILDER_NAME,
            compiled,
            f"sources are {[node_path(s) for s in source]}; expected one {MODEL_SUFFIX} model",
        )
    model = source[0]
    options = vela_options(env, compiled)
    accelerator = str(options["accelerator"])
    names = output_names(model.name, options["system_config"] or default_system_config(accelerator))
    if compiled.name != names["model"]:
        raise configuration_error(
            BUILDER_NAME,
            compiled,
            f"Vela names its compiled model {names['model']} after the source {model.name}; "
            f"give that name (in any folder) or no target",
        )
    targets = [compiled.dir.File(name) for name in names.values()]
    system_config = str(options["system_config"] or default_system_config(accelerator))
    earlier_summary = names["summary"].removesuffix(f"{system_config}.csv") + "*.csv"
    clean_earlier(env, targets, compiled.dir, earlier_summary)  # summaries of earlier system configs
    configs = config_nodes(env, compiled)
    setattr(compiled.attributes, _CONFIG_PATHS, tuple(node_path(node) for node in configs))
    present = [node for node in configs if node.has_builder() or node.srcnode().exists()]
    if present:
        env.Depends(targets, present)
    add_stage_dependencies(env, targets, vela=True, options=OPTIONS)
    return targets, [model]


def vela_action(target: list[Node], source: list[Node], env: Environment) -> int:
    """Compile `source[0]` with Vela into the folder of `target[0]`: all four targets or none.

    Returns 0, or EXIT_BAD_INPUT after printing one `heliabuild: error:`
    line for a HeliaError.
    """
    # Imported here, not at module level: reading the SConscripts must not pay for numpy and the schema.
    from heliabuild.executor.stages import vela_job

    remove_leftovers(target)
    folder = os.path.dirname(str(target[0])) or os.curdir
    config = getattr(target[0].attributes, _CONFIG_PATHS, ())
    try:
        job, files = vela_job(str(source[0]), folder, config=config, **vela_options(env, target[0]))
        result = run_stage(job, files, target)  # the targets are Vela's outputs, or the job fails
    except HeliaError as error:
        return failed(error, target)
    stage_warnings(STAGE, target[0], explained(result.warnings, env.get(AOT_PLATFORM)))
    return 0


def vela_builder() -> Builder:
    """A new HeliaVela builder (see the module docstring for its contract)."""
    return Builder(
        action=stage_action(vela_action, COMSTR, list(OPTIONS)),
        emitter=vela_emitter,
        source_scanner=sidecar_scanner(),
        suffix=TARGET_SUFFIX,
        src_suffix=MODEL_SUFFIX,
        single_source=True,
    )
