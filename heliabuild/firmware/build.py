"""Building a firmware outside SCons (the CLI's runner build, the tests): the firmware library once per
target, then one ELF per module (docs/firmware.md, "Building").

- `build_library(build_dir, target)` compiles heliabuild's kernels (`heliabuild/kernels/c/*.c`), the harness
  (semihosting, records, counter, lifecycle) and the target's startup into `<build_dir>/<target>/
  libheliafirmware.a`. It rebuilds only when a source, the flags or the toolchain changed (a stamp of their
  hashes), and builds into one folder from several processes one at a time.
- `link_firmware(library, sources, include_dirs, output, target)` compiles the per-firmware sources (the
  generated module and helia_firmware.c) and links them with the library and the target's linker script.

SCons builds the same objects with the same flags through its own builders (heliabuild.scons.firmware), so a
CacheDir can serve them; this module is for where no SCons build is running.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import subprocess
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from heliabuild.errors import FirmwareError
from heliabuild.files import replaced_on_success, write_atomic
from heliabuild.firmware import C_SOURCE_DIR
from heliabuild.firmware.toolchain import (
    C_FLAGS,
    LINK_FLAGS,
    arm_gcc,
    compile_object,
    cpu_flags,
    link_elf,
    toolchain_version,
)
from heliabuild.targets import Machine, table

if TYPE_CHECKING:  # the SCons tool imports this module while SConscripts are read: no numpy or TFLite schema
    from heliabuild.codegen.layout import Layout
    from heliabuild.firmware.driver import EthosuDriver

KERNEL_SOURCE_DIR = Path(__file__).resolve().parents[1] / "kernels" / "c"
"""heliabuild's C kernels (heliabuild.kernels.native.C_SOURCE_DIR), named here without importing the kernels
package, which loads numpy."""

LIBRARY_NAME = "libheliafirmware.a"
HARNESS_SOURCES = ("records.c", "lifecycle.c", "reset.c")
"""The harness sources every target shares; a target adds its console and its measurement (FirmwareTarget.harness)."""


@dataclass(frozen=True)
class FirmwareTarget:
    """A firmware target: its startup source, linker script and own harness sources (under
    heliabuild/firmware/c/), and, for check_memory_fit, the memories (by the linker script's region names) and
    bytes it gives the arena, the constants and the data memory (what the stack leaves of DTCM), and pinned
    SRAM constants. `npu` targets run `ethos-u` operators through the Ethos-U driver (docs/firmware.md,
    "Corstone-300 and the Ethos-U driver")."""

    name: str
    startup: str
    linker_script: str
    arena_bytes: int
    constant_bytes: int
    data_bytes: int
    sram_bytes: int
    harness: tuple[str, ...]
    arena_memory: str
    constant_memory: str
    npu: bool

    @classmethod
    def of(cls, machine: Machine) -> FirmwareTarget:
        """The firmware target of a machine of the target table (heliabuild.targets) that has firmware facts."""
        facts = machine.firmware
        assert facts is not None
        return cls(
            machine.name,
            facts.startup,
            facts.linker_script,
            arena_bytes=machine.memory(facts.arena_memory).bytes,
            constant_bytes=machine.memory(facts.constant_memory).bytes,
            data_bytes=machine.memory("DTCM").bytes - facts.stack_bytes - facts.harness_data_bytes,
            sram_bytes=machine.memory("SRAM").bytes,
            harness=facts.harness,
            arena_memory=facts.arena_memory,
            constant_memory=facts.constant_memory,
            npu=facts.npu,
        )


TARGETS = {name: FirmwareTarget.of(machine) for name, machine in table().machines.items() if machine.firmware}
"""Firmware targets by name (the machine they run on), from the target table: `data_bytes` is what the stack and
the harness's own data leave of DTCM. `corstone300` is the Corstone-300 FVPs' map (secure aliases;
docs/firmware.md)."""
QEMU_TARGET = table().qemu_machine().name
"""The firmware target QEMU runs (the default of build_library and link_firmware)."""


def target(name: str) -> FirmwareTarget:
    found = TARGETS.get(name)
    if found is None:
        raise FirmwareError(f"firmware target {name!r} is not known; expected one of {', '.join(TARGETS)}")
    return found


def check_memory_fit(layout: Layout, name: str, source: str) -> None:
    """FirmwareError naming the memory, the bytes needed and the bytes the target has, for the first part of
    `layout` that does not fit target `name`'s memory map (checked before anything is compiled)."""
    found = target(name)
    constants = sum(c.bytes for c in layout.constants if c.residency != "stream") + sum(u.bytes for u in layout.units)
    pinned = {"DTCM": 0, "SRAM": 0}
    for constant in layout.constants:
        if constant.residency == "pin":
            memory = (constant.destination_memory or "").upper()
            pinned[memory] = pinned.get(memory, 0) + constant.bytes
    needs = (
        ("the activation arena", found.arena_memory, layout.arena.size, found.arena_bytes),
        ("the constants", found.constant_memory, constants, found.constant_bytes),
        (
            "the stream pool, the carried state and constants pinned to DTCM",
            "DTCM",
            layout.pool_bytes + layout.state_bytes + pinned["DTCM"],
            found.data_bytes,
        ),
        ("constants pinned to SRAM", "SRAM", pinned["SRAM"], found.sram_bytes),
    )
    for what, memory, needed, available in needs:
        if needed > available:
            raise FirmwareError(
                f"{source}: {what} needs {needed} bytes of {memory}, and {found.name} has {available}",
                hint="a smaller model, or a plan that streams or places constants elsewhere",
            )


def headers() -> list[Path]:
    """Every header the firmware sources include from heliabuild (the harness's and the kernels')."""
    return sorted({*KERNEL_SOURCE_DIR.glob("*.h"), *C_SOURCE_DIR.glob("*.h"), *C_SOURCE_DIR.glob("*/*.h")})


def include_dirs() -> tuple[Path, Path]:
    """The folders every firmware source includes from: the harness's and the kernels'."""
    return (C_SOURCE_DIR, KERNEL_SOURCE_DIR)


def library_sources(name: str) -> list[Path]:
    """Every source of the firmware library of target `name`, in a fixed order."""
    kernels = sorted(KERNEL_SOURCE_DIR.glob("*.c"))
    found = target(name)
    harness = (*HARNESS_SOURCES, *found.harness)
    return [*kernels, *(C_SOURCE_DIR / source for source in harness), C_SOURCE_DIR / found.startup]


def _stamp(sources: Sequence[Path], mve: bool) -> str:
    digest = hashlib.sha256()
    for part in (*cpu_flags(mve), *C_FLAGS, *LINK_FLAGS, toolchain_version()):
        digest.update(part.encode() + b"\0")
    for path in (*sources, *headers()):
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


@contextlib.contextmanager
def _locked(folder: Path) -> Iterator[None]:
    import fcntl

    with open(folder / ".heliafirmware.lock", "a+b") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def library_folder(name: str, mve: bool = True) -> str:
    """The folder, under a build folder, of target `name`'s library: `<name>`, or `<name>-nomve` for the
    `-mcpu=cortex-m55+nomve` build (the kernels' portable bodies)."""
    return name if mve else f"{name}-nomve"


def build_library(build_dir: str | os.PathLike[str], name: str = QEMU_TARGET, *, mve: bool = True) -> Path:
    """The firmware library of target `name` in `build_dir` (module docstring); its path. Without `mve` the
    library is compiled for `-mcpu=cortex-m55+nomve` (link it with `link_firmware(..., mve=False)`)."""
    folder = Path(build_dir).resolve() / library_folder(name, mve)
    folder.mkdir(parents=True, exist_ok=True)
    library = folder / LIBRARY_NAME
    stamp_file = folder / "library.sha256"
    sources = library_sources(name)
    with _locked(folder):
        stamp = _stamp(sources, mve)
        if library.is_file() and stamp_file.is_file() and stamp_file.read_text() == stamp:
            return library
        compile_library(sources, library, folder / "objects", mve)
        write_atomic(stamp_file, stamp.encode())
    return library


def compile_library(sources: Sequence[Path], library: Path, objects_dir: Path, mve: bool = True) -> None:
    """Compile `sources` into `objects_dir` and archive them, deterministically (`ar D`), into `library`, which
    is replaced atomically: a failure leaves the earlier library or none."""
    objects = []
    for source in sources:
        output = objects_dir / f"{source.stem}.o"
        compile_object(source, output, include_dirs(), mve=mve)
        objects.append(output)
    archiver = str(Path(arm_gcc()).with_name("arm-none-eabi-ar"))
    with replaced_on_success(library) as partial:
        run = subprocess.run([archiver, "rcsD", str(partial), *map(str, objects)], capture_output=True, text=True)
        if run.returncode != 0:
            raise FirmwareError(f"archiving {library.name} failed: {run.stderr.strip()[:400]}")


def link_firmware(
    library: str | os.PathLike[str],
    sources: Sequence[str | os.PathLike[str]],
    extra_include_dirs: Sequence[str | os.PathLike[str]],
    output: str | os.PathLike[str],
    name: str = QEMU_TARGET,
    *,
    driver: EthosuDriver | None = None,
    mve: bool = True,
    defines: Sequence[str] = (),
) -> Path:
    """Compile `sources` (the generated module, helia_firmware.c) and link them with `library` into `output`.
    An `npu` target also compiles `npu/helia_ethosu.c` and the Ethos-U `driver`'s sources (docs/firmware.md,
    "Corstone-300 and the Ethos-U driver"); without a driver it is a FirmwareError. `mve` must be the library's
    (build_library); `defines` are `-D` macros for the per-firmware sources (bench/firmware.py's
    HELIA_PROFILE_OPERATORS)."""
    found = target(name)
    if found.npu != (driver is not None):
        needs = "needs the Ethos-U driver" if found.npu else "has no NPU, so no Ethos-U driver"
        raise FirmwareError(f"firmware target {name} {needs}")
    output_path = Path(output)
    objects_dir = output_path.parent / "objects"
    includes = [*include_dirs(), *extra_include_dirs]
    compiled = [(Path(source), False) for source in sources]
    defines = tuple(defines)
    if driver is not None:
        includes += [C_SOURCE_DIR / "npu", *driver.include_dirs]
        defines += (driver.define,)
        compiled += [(C_SOURCE_DIR / "npu" / "helia_ethosu.c", False), *((path, True) for path in driver.sources)]
    objects = []
    for source, foreign in compiled:
        obj = objects_dir / f"{source.stem}.o"
        compile_object(source, obj, includes, defines, foreign=foreign, mve=mve)
        objects.append(obj)
    link_elf([*objects, Path(library)], output_path, C_SOURCE_DIR / found.linker_script, mve=mve)
    return output_path
