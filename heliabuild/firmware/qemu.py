"""Running a firmware on QEMU's mps3-an547 (Corstone-300's Cortex-M55 and memory map) and collecting what it
says (docs/firmware.md, "Running on QEMU").

QEMU runs with `-icount shift=0`, so virtual time advances one nanosecond per instruction and the firmware's
counter readings are deterministic instruction counts. The firmware's semihosting console goes to QEMU's
standard output; its exit status (semihosting SYS_EXIT_EXTENDED) becomes QEMU's. A run that outlives its
wall-clock timeout is killed, and output beyond `max_output` bytes stops the run: neither can hang the host
or exhaust its memory.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from heliabuild.errors import FirmwareError
from heliabuild.subprocesses import BoundedRun, run_bounded
from heliabuild.targets import table

QEMU = "qemu-system-arm"
MACHINE = table().qemu_machine().qemu_machine
QEMU_PACKAGE = "qemu-system-arm"
DEFAULT_TIMEOUT_S = 60.0
DEFAULT_MAX_OUTPUT = 64 << 20


def qemu_executable() -> str:
    """The path of qemu-system-arm; FirmwareError naming the package when it is not on PATH."""
    found = shutil.which(QEMU)
    if found is None:
        raise FirmwareError(
            f"{QEMU} is not on PATH, so the qemu-m55 backend cannot run",
            hint=f"install QEMU's Arm system emulator (Debian/Ubuntu: apt-get install {QEMU_PACKAGE})",
        )
    return found


def qemu_command(elf: str | os.PathLike[str]) -> list[str]:
    """The argument vector that runs `elf` (its machine path last, so the rest can be recorded as is)."""
    return [
        qemu_executable(),
        "-M",
        MACHINE,
        "-icount",
        "shift=0",
        "-display",
        "none",
        "-monitor",
        "none",
        "-serial",
        "none",
        "-chardev",
        "stdio,id=semihosting",
        "-semihosting-config",
        "enable=on,target=native,chardev=semihosting",
        "-kernel",
        os.fspath(elf),
    ]


def run_on_qemu(
    elf: str | os.PathLike[str],
    *,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    max_output: int = DEFAULT_MAX_OUTPUT,
) -> BoundedRun:
    """Run `elf` on QEMU until it exits, `timeout_s` of wall time pass, or it prints more than `max_output`
    bytes. FirmwareError when QEMU is missing or `elf` is not a file."""
    if not Path(elf).is_file():
        raise FirmwareError(f"{elf}: the firmware ELF does not exist")
    return run_bounded(qemu_command(elf), timeout_s=timeout_s, max_output=max_output)
