"""Running a firmware on QEMU's mps3-an547 (Corstone-300's Cortex-M55 and memory map) and collecting what it
says (docs/firmware.md, "Running on QEMU").

QEMU runs with `-icount shift=0`, so virtual time advances one nanosecond per instruction and the firmware's
counter readings are deterministic instruction counts. The firmware's semihosting console goes to QEMU's
standard output; its exit status (semihosting SYS_EXIT_EXTENDED) becomes QEMU's. A run that outlives its
wall-clock timeout is killed, and output beyond `max_output` bytes stops the run: neither can hang the host
or exhaust its memory.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from heliabuild.errors import FirmwareError

QEMU = "qemu-system-arm"
MACHINE = "mps3-an547"
QEMU_PACKAGE = "qemu-system-arm"
DEFAULT_TIMEOUT_S = 60.0
DEFAULT_MAX_OUTPUT = 64 << 20


@dataclass(frozen=True)
class QemuRun:
    """What one run left: QEMU's exit status (None when it was killed), the console text, whether the timeout or
    the output limit stopped it, and QEMU's own diagnostics (its standard error, bounded); `output` is the
    console's bytes as the simulator wrote them (empty when the run was made from text)."""

    exit_status: int | None
    console: str
    timed_out: bool
    output_overflow: bool
    diagnostics: str
    output: bytes = b""


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
) -> QemuRun:
    """Run `elf` on QEMU until it exits, `timeout_s` of wall time pass, or it prints more than `max_output`
    bytes. FirmwareError when QEMU is missing or `elf` is not a file."""
    if not Path(elf).is_file():
        raise FirmwareError(f"{elf}: the firmware ELF does not exist")
    return run_bounded(qemu_command(elf), timeout_s=timeout_s, max_output=max_output)


def run_bounded(
    command: list[str],
    *,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    max_output: int = DEFAULT_MAX_OUTPUT,
    env: dict[str, str] | None = None,
) -> QemuRun:
    """Run `command` (in its own session, no standard input) until it exits, `timeout_s` of wall time pass, or
    one of its streams passes `max_output` bytes; then its whole session is killed. Shared by the simulators
    heliabuild drives (QEMU here, the Arm FVPs in heliabuild.fvp.launch)."""
    process = subprocess.Popen(
        command,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
        env=env,
    )
    assert process.stdout is not None and process.stderr is not None
    chunks: dict[int, list[bytes]] = {process.stdout.fileno(): [], process.stderr.fileno(): []}
    sizes = dict.fromkeys(chunks, 0)
    deadline = time.monotonic() + timeout_s
    timed_out = overflow = False
    with selectors.DefaultSelector() as selector:
        for stream in (process.stdout, process.stderr):
            selector.register(stream, selectors.EVENT_READ)
        open_streams = 2
        try:
            while open_streams:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    timed_out = True
                    break
                for key, _ in selector.select(timeout=remaining):
                    data = os.read(key.fd, 1 << 16)
                    if not data:
                        selector.unregister(key.fileobj)
                        open_streams -= 1
                        continue
                    sizes[key.fd] += len(data)
                    if sizes[key.fd] > max_output:
                        overflow = True
                        break
                    chunks[key.fd].append(data)
                if overflow:
                    break
        finally:
            if timed_out or overflow or open_streams:
                _kill(process)
            status = process.wait()
            process.stdout.close()
            process.stderr.close()
    output = b"".join(chunks[next(iter(chunks))])
    stderr = b"".join(list(chunks.values())[1]).decode("utf-8", errors="replace")
    return QemuRun(
        exit_status=None if (timed_out or overflow) else status,
        console=output.decode("utf-8", errors="replace"),
        timed_out=timed_out,
        output_overflow=overflow,
        diagnostics=stderr[-4000:],
        output=output,
    )


def _kill(process: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
