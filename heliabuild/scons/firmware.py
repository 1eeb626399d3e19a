"""The firmware of the qemu-m55 backend in SCons: one firmware library per target, and per pipeline its
generated module, its policy source and its ELF (docs/scons.md, "Firmware").

    library = firmware_library(env)                                    # shared, built once
    module = env.HeliaFirmwareModule('build/kws/firmware/kws_model.c', ['kws_fenced.tflite', 'kws_plan.json'])
    elf = link_firmware(env, 'build/kws/runner/firmware.elf', [module[0], config_source], library)

Contract:

- `kernel_library(env)` and `firmware_library(env, target)`: one SCons target each under
  `$HELIA_FIRMWARE_DIR`, shared by every pipeline and HeliaModule of the build (one node per path); the
  toolchain's version is a dependency of everything compiled.
- HeliaFirmwareModule: the model and its AOT plan in; `<prefix>_model.c` (given), `.h` and `_layout.json`
  out, written by heliabuild.codegen.module.generate_module.
- `link_firmware(env, elf, sources, library)`: the objects of `sources` and the ELF, linked with the
  target's linker script (its content a dependency, its path out of the signature).

The cross environment is a new one with the caller's CacheDir and progress lines, and nothing else of the
host build: no flag, define or library of the user's environment leaks into the firmware.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from SCons.Builder import Builder
from SCons.Environment import Base as Environment
from SCons.Node import Node

from heliabuild.errors import FirmwareError, HeliaError
from heliabuild.files import replaced_on_success
from heliabuild.scons.leftovers import keep_folder_of, remove_leftovers
from heliabuild.scons.messages import configuration_error, stage_comstr, stage_failed
from heliabuild.scons.progress import stage_action, stage_command_action
from heliabuild.scons.signatures import add_stage_dependencies
from heliabuild.targets import table

MODULE_BUILDER_NAME = "HeliaFirmwareModule"
FIRMWARE_STAGE = "firmware"
FIRMWARE_DIR = "HELIA_FIRMWARE_DIR"
FIRMWARE_TARGET = "HELIA_FIRMWARE_TARGET"
PREFIX = "HELIA_FIRMWARE_PREFIX"
FIRMWARE_COMSTR = "HELIA_FIRMWARECOMSTR"
ADMISSION_COMSTR = "HELIA_ADMISSIONCOMSTR"
COMPILE_COMSTR = "HELIA_FIRMWARECCCOMSTR"
LINK_COMSTR = "HELIA_FIRMWARELINKCOMSTR"

DEFAULTS: dict[str, object] = {
    FIRMWARE_DIR: "#build/heliabuild-firmware",
    FIRMWARE_TARGET: table().qemu_machine().name,
    FIRMWARE_COMSTR: stage_comstr(FIRMWARE_STAGE),
    ADMISSION_COMSTR: stage_comstr("admission"),
    COMPILE_COMSTR: "heliabuild: firmware-cc $TARGET",
    LINK_COMSTR: "heliabuild: firmware-link $TARGET",
}
"""Construction variables the tool sets with env.SetDefault."""

_CROSS: dict[tuple[object, ...], Environment] = {}
"""One cross environment per (CacheDir, progress lines) in a run."""

KERNEL_LIBRARY_NAME = "libheliakernels.a"

_LIBRARIES: dict[str, Node] = {}
"""Library path -> its node, so every pipeline of one SCons run shares the one library target."""


def missing_tools() -> list[str]:
    """The Debian packages the qemu-m55 backend needs whose tools are not on PATH (empty when all are)."""
    import shutil

    needed = (
        ("arm-none-eabi-gcc", "gcc-arm-none-eabi libnewlib-arm-none-eabi"),
        ("qemu-system-arm", "qemu-system-arm"),
    )
    return [package for tool, package in needed if shutil.which(tool) is None]


def _toolchain_version() -> str:
    from heliabuild.firmware.toolchain import toolchain_version

    try:
        return toolchain_version()
    except FirmwareError:
        return "not-installed"


def toolchain_dependency(env: Environment) -> Node:
    """The Value node of the toolchain's version every firmware object depends on (another compiler rebuilds)."""
    return env.Value(f"firmware toolchain {_toolchain_version()}")


def cross_environment(env: Environment) -> Environment:
    """An environment for arm-none-eabi-gcc with heliabuild's flags (module docstring), with the caller's
    CacheDir and progress lines; one per CacheDir in a run."""
    from SCons.Environment import Environment as new_environment
    from SCons.Tool import createObjBuilders

    from heliabuild.firmware.build import include_dirs
    from heliabuild.firmware.toolchain import ARM_GCC, C_FLAGS, CPU_FLAGS, LINK_FLAGS

    cache = env.get_CacheDir().path
    cache_class = env.validate_CacheDir_class()  # a remote cache's class too (heliabuild.scons.remote_cache)
    key = (cache, cache_class, env.get(COMPILE_COMSTR), env.get(LINK_COMSTR))
    known = _CROSS.get(key)
    if known is not None:
        return known
    arm = new_environment(
        tools=["cc", "ar", "link"],
        ENV={"PATH": os.environ.get("PATH", os.defpath)},
        CC=ARM_GCC,
        AR=f"{ARM_GCC.removesuffix('gcc')}ar",
        ARFLAGS=["rcsD"],
        LINK=ARM_GCC,
        CCFLAGS=[*CPU_FLAGS, *C_FLAGS],
        CPPPATH=[str(path) for path in include_dirs()],
        LINKFLAGS=[*CPU_FLAGS, *LINK_FLAGS],
        PROGSUFFIX=".elf",
        # No C scanner: the headers are known (heliabuild's own, and the generated module's), each a dependency
        # by content, so a no-op build does not parse every source for its includes.
        SCANNERS=[],
        CCCOMSTR=env.get(COMPILE_COMSTR),
        LINKCOMSTR=env.get(LINK_COMSTR),
        HELIA_FIRMWARELINKCOMSTR=env.get(LINK_COMSTR),
        HELIA_FIRMWARECCCOMSTR=env.get(COMPILE_COMSTR),
    )
    arm.CacheDir(cache, cache_class)
    static_object, _ = createObjBuilders(arm)
    static_object.add_action(".c", stage_command_action("$CCCOM", "CCCOMSTR"))  # the counter (progress.py)
    _CROSS[key] = arm
    return arm


def _header_nodes(env: Environment) -> list[Node]:
    from heliabuild.firmware.build import headers

    return [env.File(str(path)) for path in headers()]


def _generated_headers(sources: Sequence[Node]) -> list[Node]:
    """The headers of the generated modules among `sources` (`<prefix>_model.c` beside `<prefix>_model.h`)."""
    return [
        source.dir.File(source.name.removesuffix(".c") + ".h") for source in sources if source.name.endswith("_model.c")
    ]


def kernel_library(env: Environment) -> Node:
    """The shared kernel library node (module docstring)."""
    from heliabuild.firmware.build import KERNEL_SOURCE_DIR

    library = env.Dir(env.subst(f"${FIRMWARE_DIR}")).Dir("kernels").File(KERNEL_LIBRARY_NAME)
    known = _LIBRARIES.get(library.get_abspath())
    if known is not None:
        return known
    arm = cross_environment(env)
    sources = [env.File(str(source)) for source in sorted(KERNEL_SOURCE_DIR.glob("*.c"))]
    node = arm.Command(library, sources, stage_action(_library_action, COMPILE_COMSTR))[0]
    arm.Depends(node, [toolchain_dependency(env), *_header_nodes(env)])
    _LIBRARIES[library.get_abspath()] = node
    keep_folder_of([node])
    return node


def firmware_library(env: Environment, target: str | None = None) -> Node:
    """The shared firmware library node of `target` (default `$HELIA_FIRMWARE_TARGET`)."""
    from heliabuild.firmware.build import KERNEL_SOURCE_DIR, LIBRARY_NAME, library_sources

    name = target or env.subst(f"${FIRMWARE_TARGET}")
    folder = env.Dir(env.subst(f"${FIRMWARE_DIR}")).Dir(name)
    library = folder.File(LIBRARY_NAME)
    known = _LIBRARIES.get(library.get_abspath())
    if known is not None:
        return known
    arm = cross_environment(env)
    harness = [source for source in library_sources(name) if source.parent != KERNEL_SOURCE_DIR]
    sources = [kernel_library(env), *(env.File(str(source)) for source in harness)]
    # One target for the whole library: a no-op build checks one node instead of one per object, and a CacheDir
    # stores and serves it whole.
    node = arm.Command(library, sources, stage_action(_library_action, COMPILE_COMSTR))[0]
    arm.Depends(node, [toolchain_dependency(env), *_header_nodes(env)])
    _LIBRARIES[library.get_abspath()] = node
    keep_folder_of([node])
    return node


def _archive(library: Path, archives: Sequence[Path], sources: Sequence[Path], work: Path) -> None:
    """Compile `sources` into `work`, then archive the members of `archives` (in their order) and those objects
    (in source order) into `library`, deterministically (`ar D`), replacing it atomically."""
    import subprocess

    from heliabuild.firmware.build import compile_library
    from heliabuild.firmware.toolchain import arm_gcc

    archiver = str(Path(arm_gcc()).with_name("arm-none-eabi-ar"))
    members: list[Path] = []
    for number, archive in enumerate(archives):
        unpacked = work / f"archive-{number}"
        unpacked.mkdir()
        listed = subprocess.run([archiver, "t", str(archive)], capture_output=True, text=True, check=False)
        unpacked_run = subprocess.run([archiver, "x", str(archive)], cwd=unpacked, capture_output=True, check=False)
        if listed.returncode != 0 or unpacked_run.returncode != 0:
            raise FirmwareError(f"reading {archive.name} failed: {listed.stderr.strip()[:400]}")
        members += [unpacked / name for name in listed.stdout.split()]
    if sources:
        compile_library(sources, work / "compiled.a", work / "objects")
        members += [work / "objects" / f"{source.stem}.o" for source in sources]
    with replaced_on_success(library) as partial:
        run = subprocess.run([archiver, "rcsD", str(partial), *map(str, members)], capture_output=True, text=True)
        if run.returncode != 0:
            raise FirmwareError(f"archiving {library.name} failed: {run.stderr.strip()[:400]}")


def _library_action(target: list[Node], source: list[Node], env: Environment) -> int:
    """Compile and archive a library: its `.c` sources, after the members of its `.a` sources (_archive)."""
    import tempfile

    library = Path(target[0].get_abspath())
    paths = [Path(node.get_abspath()) for node in source]
    try:
        with tempfile.TemporaryDirectory(prefix=".objects-", dir=library.parent) as work:
            archives, sources = [p for p in paths if p.suffix == ".a"], [p for p in paths if p.suffix == ".c"]
            _archive(library, archives, sources, Path(work))
    except HeliaError as error:
        return stage_failed(error, target)
    return 0


def link_firmware(
    env: Environment, elf: str | Node, sources: Sequence[Node], library: Node, include_dirs: Sequence[Node] = ()
) -> Node:
    """The ELF node linked from `sources` (compiled beside the ELF, in `objects/`, with `include_dirs` and each
    source's own folder on the include path) and `library`."""
    from heliabuild.firmware import C_SOURCE_DIR
    from heliabuild.firmware.build import target as firmware_target

    arm = cross_environment(env)
    node = env.File(elf)
    objects = []
    folders = list(dict.fromkeys([*(source.dir for source in sources), *include_dirs]))
    for source in sources:
        target = node.dir.Dir("objects").File(f"{Path(source.name).stem}.o")
        objects.append(arm.Object(target, source, CPPPATH=[*folders, *arm["CPPPATH"]])[0])
    generated = _generated_headers(sources)
    arm.Depends(objects, [toolchain_dependency(env), *_header_nodes(env), *generated])
    script = C_SOURCE_DIR / firmware_target(env.subst(f"${FIRMWARE_TARGET}")).linker_script
    # The link is a job of the executor (heliabuild.scons.executor). The script's path is machine-specific and
    # out of the action's signature; its content and the link flags are dependencies instead, so a CacheDir
    # serves the ELF to another checkout.
    link = stage_action(_link_action, LINK_COMSTR)
    program = arm.Command(node, [*objects, library], link, HELIA_FIRMWARE_LINKER_SCRIPT=str(script))[0]
    arm.Depends(program, [env.File(str(script)), env.Value(f"firmware link flags {' '.join(arm['LINKFLAGS'])}")])
    keep_folder_of([*objects, program])
    return program


def _link_action(target: list[Node], source: list[Node], env: Environment) -> int:
    """Link the ELF `target[0]` from the objects and library `source` (heliabuild.firmware.toolchain.link_elf,
    as a `firmware-link` job)."""
    from heliabuild.executor.stages import firmware_link_job
    from heliabuild.scons.executor import failed, run_stage

    remove_leftovers(target)
    try:
        job, files = firmware_link_job(
            [str(node) for node in source], env["HELIA_FIRMWARE_LINKER_SCRIPT"], str(target[0])
        )
        run_stage(job, files, target)
    except HeliaError as error:
        return failed(error, target)
    return 0


def module_emitter(target: list[Node], source: list[Node], env: Environment) -> tuple[list[Node], list[Node]]:
    """Check the call: one `<prefix>_model.c` target, sources the model and its `_plan.json`."""
    prefix = env.subst(f"${PREFIX}")
    expected = f"{prefix}_model.c"
    if len(target) != 1 or target[0].name != expected:
        raise configuration_error(MODULE_BUILDER_NAME, target, f"give one target, <folder>/{expected}")
    if len(source) != 2 or not source[0].name.endswith(".tflite") or not source[1].name.endswith("_plan.json"):
        raise configuration_error(
            MODULE_BUILDER_NAME, target[0], "sources are the model and its AOT plan (<prefix>_plan.json), in order"
        )
    folder = target[0].dir
    targets = [target[0], folder.File(f"{prefix}_model.h"), folder.File(f"{prefix}_layout.json")]
    add_stage_dependencies(env, targets)
    return targets, source


def module_action(target: list[Node], source: list[Node], env: Environment) -> int:
    """Generate the module with heliabuild.codegen.module.generate_module."""
    from heliabuild.codegen.module import generate_module

    try:
        generate_module(
            source[0].get_abspath(), source[1].get_abspath(), env.subst(f"${PREFIX}"), target[0].dir.get_abspath()
        )
    except HeliaError as error:
        return stage_failed(error, target)
    return 0


def module_builder() -> Builder:
    """A new HeliaFirmwareModule builder (module docstring)."""
    return Builder(action=stage_action(module_action, FIRMWARE_COMSTR, [PREFIX]), emitter=module_emitter)


ADMISSION_BUILDER_NAME = "HeliaModuleAdmission"
ADMISSION_SUFFIX = "_admission.json"


def admission_action(target: list[Node], source: list[Node], env: Environment) -> int:
    """Refuse the model the module generator would refuse (heliabuild.codegen.module.check_admission); on
    success write `<name>_admission.json`: the model's SHA-256 and its operator count."""
    from heliabuild.codegen.module import check_admission
    from heliabuild.files import write_json
    from heliabuild.model.io import load_model, model_sha256

    try:
        check_admission(source[0].get_abspath())
        loaded = load_model(source[0].get_abspath())
    except HeliaError as error:
        return stage_failed(error, target)
    operators = len(loaded.subgraphs[0].operators or [])
    write_json(target[0].get_abspath(), {"model_sha256": model_sha256(loaded), "operators": operators})
    return 0


def admission_builder() -> Builder:
    """A new HeliaModuleAdmission builder: one model in, `<name>_admission.json` out (admission_action)."""
    return Builder(action=stage_action(admission_action, ADMISSION_COMSTR))
