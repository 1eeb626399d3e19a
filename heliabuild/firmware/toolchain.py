"""The Arm toolchain the firmware is built with (Debian's gcc-arm-none-eabi and libnewlib-arm-none-eabi), and
the compile and link commands of a Cortex-M55 firmware (docs/firmware.md, "Building").

The commands are deterministic: no debug information, no build id, sources named relative to the folder the
compiler runs in, so an ELF is byte-identical whichever folder it was built in.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Sequence
from functools import cache
from pathlib import Path

from heliabuild.errors import FirmwareError
from heliabuild.files import replaced_on_success

ARM_GCC = "arm-none-eabi-gcc"
TOOLCHAIN_PACKAGES = "gcc-arm-none-eabi libnewlib-arm-none-eabi"

FLAGS_FILE = Path(__file__).resolve().parents[1] / "kernels" / "c" / "cortex-m55.flags"
"""The one flag set of every heliabuild Cortex-M55 object, shared with the kernel library's SConstruct."""


def read_flags(path: Path = FLAGS_FILE) -> tuple[str, ...]:
    """The flags of `path`: one a line, `#` comments and blank lines skipped."""
    lines = (line.split("#", 1)[0].strip() for line in path.read_text(encoding="ascii").splitlines())
    return tuple(line for line in lines if line)


_FLAGS = read_flags()
CPU_FLAGS = tuple(flag for flag in _FLAGS if flag.startswith("-m"))
"""The target flags (also passed to the linker, which picks the multilib from them)."""
C_FLAGS = tuple(flag for flag in _FLAGS if not flag.startswith("-m"))
NOMVE_CPU = "-mcpu=cortex-m55+nomve"
"""The same Cortex-M55 without MVE: the kernels' portable bodies (the scalar baseline the MVE build is checked
and measured against)."""


def cpu_flags(mve: bool = True) -> tuple[str, ...]:
    """CPU_FLAGS, with `-mcpu=cortex-m55+nomve` when not `mve`."""
    return CPU_FLAGS if mve else tuple(NOMVE_CPU if f.startswith("-mcpu=") else f for f in CPU_FLAGS)


LINK_FLAGS = (
    "-nostartfiles",
    # The startup object sits in the firmware library; nothing else references it.
    "-Wl,--undefined=Reset_Handler",
    "--specs=nano.specs",
    "--specs=nosys.specs",
    "-Wl,--gc-sections",
    "-Wl,--build-id=none",
)


def arm_gcc() -> str:
    """The path of arm-none-eabi-gcc; FirmwareError naming the Debian packages when it is not on PATH."""
    found = shutil.which(ARM_GCC)
    if found is None:
        raise FirmwareError(
            f"{ARM_GCC} is not on PATH, so the Cortex-M55 firmware cannot be built",
            hint=f"install the Arm toolchain (Debian/Ubuntu: apt-get install {TOOLCHAIN_PACKAGES})",
        )
    return found


def toolchain_version() -> str:
    """The first line of `arm-none-eabi-gcc --version` (of the one on PATH now), recorded in runner.json."""
    return _version_of(arm_gcc())


@cache
def _version_of(compiler: str) -> str:
    run = subprocess.run([compiler, "--version"], capture_output=True, text=True, check=False)
    lines = run.stdout.splitlines()
    if run.returncode != 0 or not lines:
        raise FirmwareError(f"{ARM_GCC} --version failed (exit {run.returncode}): {run.stderr.strip()[:200]}")
    return lines[0].strip()


def _run(command: list[str], cwd: Path, what: str) -> None:
    run = subprocess.run(command, cwd=cwd, capture_output=True, text=True, check=False)
    if run.returncode != 0:
        tail = "\n".join((run.stdout + run.stderr).strip().splitlines()[-20:])
        raise FirmwareError(f"{what} failed (exit {run.returncode}):\n{tail}")


FOREIGN_C_FLAGS = (
    "-std=gnu11",
    "-O2",
    "-ffreestanding",
    "-ffunction-sections",
    "-fdata-sections",
    "-fno-if-conversion2",
)
"""The flags of a source heliabuild did not write (the user's Ethos-U driver): no warning is an error there."""


def compile_object(
    source: str | os.PathLike[str],
    output: str | os.PathLike[str],
    include_dirs: Sequence[str | os.PathLike[str]] = (),
    defines: Sequence[str] = (),
    foreign: bool = False,
    mve: bool = True,
) -> None:
    """Compile the C99 `source` into the object `output` for the Cortex-M55 (warnings are errors), with
    `-D<define>` for each of `defines`; a `foreign` source (not heliabuild's) with FOREIGN_C_FLAGS; without `mve`
    for `-mcpu=cortex-m55+nomve`."""
    source_path = Path(source).resolve()
    output_path = Path(output).resolve()
    output_path.parent.mkdir(parents=True, exist_ok=True)
    includes = [f"-I{Path(folder).resolve()}" for folder in include_dirs]
    flags = FOREIGN_C_FLAGS if foreign else C_FLAGS
    command = [arm_gcc(), *cpu_flags(mve), *flags, *(f"-D{d}" for d in defines), *includes, "-c", source_path.name]
    with replaced_on_success(output_path) as partial:
        _run([*command, "-o", str(partial)], source_path.parent, f"compiling {source_path.name}")


def link_elf(
    objects: Sequence[str | os.PathLike[str]],
    output: str | os.PathLike[str],
    linker_script: str | os.PathLike[str],
    mve: bool = True,
) -> None:
    """Link `objects` into the ELF `output` with `linker_script` (a section that does not fit fails the link)."""
    output_path = Path(output).resolve()
    output_path.parent.mkdir(parents=True, exist_ok=True)
    command = [
        arm_gcc(),
        *cpu_flags(mve),
        *LINK_FLAGS,
        f"-T{Path(linker_script).resolve()}",
        *(str(Path(item).resolve()) for item in objects),
    ]
    with replaced_on_success(output_path) as partial:
        _run([*command, "-o", str(partial)], output_path.parent, f"linking {output_path.name}")
