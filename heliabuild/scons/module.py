"""env.HeliaModule: the exported AOT module (heliabuild.module.export) as SCons nodes a user's own firmware
`Program` links (docs/module.md, "Using the module in your firmware").

    module = env.HeliaModule('build/kws_module', [model, plan], HELIA_MODULE_LAYOUT='cmake')
    module = env.HeliaModule('build/kws_module', pipeline)  # a qemu-m55 HeliaPipeline's model and plan
    arm.Program('app.elf', ['main.c', *module.objects], LIBS=[module.library], CPPPATH=[module.include])

- The export's files of fixed name (the public and generated sources, the layout JSON, README, LICENSE,
  module.json, the layout's build files) are the targets of one stage action, Precious so that SCons leaves
  the earlier export for the library to recognise and replace, and never stored in or served from a CacheDir
  (the folder is written whole); the kernel copies in `src/` are the folder's
  too (`scons -c` removes the folder's files through its manifest's listing, leftovers.keep_folder_of).
- `module.objects`: `<prefix>_model.o` and `<prefix>_model_io.o`, compiled beside the folder in
  `<folder>.objects/` by heliabuild's cross environment (the flags the README names) from the export's own
  `include/` and `src/` only.
- `module.library`: the shared kernel library node (heliabuild.scons.firmware.kernel_library), the same node
  the qemu-m55 runner's firmware library is built from, compiled once per build whatever the models.

A policy never reaches the module; a new plan regenerates the export, and only the objects of the sources
whose bytes changed recompile; a new model with the same operators leaves the kernel library alone.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from SCons.Environment import Base as Environment
from SCons.Node import Node

from heliabuild.errors import HeliaError
from heliabuild.scons import firmware
from heliabuild.scons.leftovers import keep_folder_of, remove_leftovers
from heliabuild.scons.messages import configuration_error, stage_comstr, stage_failed
from heliabuild.scons.progress import stage_action
from heliabuild.scons.signatures import add_stage_dependencies

METHOD_NAME = "HeliaModule"
STAGE = "module"
LAYOUT = "HELIA_MODULE_LAYOUT"
PREFIX = "HELIA_MODULE_PREFIX"
ARENA_SECTION = "HELIA_MODULE_ARENA_SECTION"
COMSTR = "HELIA_MODULECOMSTR"
DEFAULTS: dict[str, object] = {LAYOUT: "plain", PREFIX: None, ARENA_SECTION: None, COMSTR: stage_comstr(STAGE)}
"""Construction variables the tool sets with env.SetDefault."""

# heliabuild.module's names, restated so that reading the SConscripts imports no numpy (a test checks they agree).
LAYOUT_FILES = {
    "plain": (),
    "cmake": ("CMakeLists.txt",),
    "zephyr": ("zephyr/module.yml", "zephyr/CMakeLists.txt", "zephyr/Kconfig"),
    "cmsis-pack": ("heliabuild.{prefix}_model.pdsc",),
}
FIXED_FILES = (
    "include/{prefix}_model.h",
    "src/{prefix}_model.c",
    "src/{prefix}_model_io.c",
    "include/helia_model.h",
    "include/helia_module.h",
    "include/helia_status.h",
    "{prefix}_layout.json",
    "README.md",
    "LICENSE",
    "module.json",
)


@dataclass(frozen=True)
class ModuleNodes:
    """What env.HeliaModule returns (module docstring): the export's declared files, the objects of its
    generated sources, the shared kernel library, and the folders to put on a Program's include path."""

    folder: Node
    files: list[Node]
    objects: list[Node]
    library: Node
    include: Node


def _prefix(env: Environment, plan: Node, overrides: dict[str, Any]) -> str:
    given = overrides.get(PREFIX, env.get(PREFIX))
    if given is not None:
        return str(given)
    return plan.name.removesuffix("_plan.json")


def _action(target: list[Node], source: list[Node], env: Environment) -> int:
    """Export the module with heliabuild.module.export.export_module into the folder of module.json."""
    from heliabuild.module.export import export_module

    remove_leftovers(target)
    folder = next(node for node in target if node.name == "module.json").dir
    try:
        export_module(
            source[0].get_abspath(),
            source[1].get_abspath(),
            folder.get_abspath(),
            layout=env.subst(f"${LAYOUT}"),
            prefix=env.subst(f"${PREFIX}") or None,
            arena_section=env.subst(f"${ARENA_SECTION}") or None,
        )
    except HeliaError as error:
        return stage_failed(error, target)
    return 0


def _pipeline_sources(folder: Node, pipeline: Any) -> list[Node]:
    """The model and plan of a HeliaPipeline's firmware stage (the plan of the model it runs on the CPU)."""
    if "firmware" not in pipeline:
        raise configuration_error(
            METHOD_NAME,
            folder,
            f"pipeline {pipeline.name}'s AOT plan is of Vela's model, whose ethos-u operators the module cannot run; "
            "give a pipeline with backend='qemu-m55', or the model and a plan made for a platform without an NPU",
        )
    return list(pipeline["firmware"][0].sources)


def helia_module(env: Environment, target: str | Node, source: Any, **overrides: Any) -> ModuleNodes:
    """env.HeliaModule(folder, [model, plan] or a qemu-m55 pipeline, HELIA_MODULE_LAYOUT=..., ...) (module
    docstring)."""
    from heliabuild.scons.pipeline import Pipeline

    folder = env.Dir(target) if not isinstance(target, Node) else target
    if isinstance(source, Pipeline):
        sources = _pipeline_sources(folder, source)
    else:
        sources = env.arg2nodes(list(source) if isinstance(source, Sequence) else [source], env.File)
    if len(sources) != 2 or not sources[0].name.endswith(".tflite") or not sources[1].name.endswith("_plan.json"):
        raise configuration_error(METHOD_NAME, folder, "sources are the model and its AOT plan (<prefix>_plan.json)")
    unknown = sorted(name for name in overrides if name not in DEFAULTS)
    if unknown:
        raise configuration_error(METHOD_NAME, folder, f"unknown keyword {unknown[0]}; expected {', '.join(DEFAULTS)}")
    layout = str(overrides.get(LAYOUT, env.get(LAYOUT)))
    if layout not in LAYOUT_FILES:
        raise configuration_error(
            METHOD_NAME, folder, f"unknown module layout {layout!r}; the layouts are {', '.join(LAYOUT_FILES)}"
        )
    prefix = _prefix(env, sources[1], overrides)
    names = [name.format(prefix=prefix) for name in (*FIXED_FILES, *LAYOUT_FILES[layout])]
    values = {**overrides, PREFIX: prefix, LAYOUT: layout}
    action = stage_action(_action, COMSTR, [LAYOUT, PREFIX, ARENA_SECTION])
    files = env.Command([folder.File(name) for name in names], sources, action, **values)
    env.Precious(files)
    # The kernel copies in src/ are not targets (which the model needs is known only when it is read), so a
    # CacheDir could serve the declared files without them: the export is written whole, never retrieved.
    env.NoCache(files)
    add_stage_dependencies(env, files, options=[LAYOUT, PREFIX, ARENA_SECTION])
    env.Clean(files, folder)
    arm = firmware.cross_environment(env)
    objects_dir = folder.dir.Dir(f"{folder.name}.objects")
    include, private = folder.Dir("include"), folder.Dir("src")
    objects = [
        arm.Object(objects_dir.File(f"{stem}.o"), private.File(f"{stem}.c"), CPPPATH=[include, private])[0]
        for stem in (f"{prefix}_model", f"{prefix}_model_io")
    ]
    arm.Depends(objects, [*files, firmware.toolchain_dependency(env)])
    keep_folder_of(objects)
    return ModuleNodes(
        folder=folder, files=list(files), objects=objects, library=firmware.kernel_library(env), include=include
    )
