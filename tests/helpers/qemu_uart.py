"""UART0 of a firmware on QEMU's mps3-an547 (Corstone-300's CPU, memory map and UART0), up to its EOT.

Firmware written for the Corstone FVPs ends with EOT (0x04), on which the FVP stops (`uart0.shutdown_on_eot`);
QEMU does not stop on it, so `uart_until_eot` reads QEMU's serial output until the EOT byte arrives (or
`timeout_s` passes) and then ends QEMU.
"""

from __future__ import annotations

import os
import selectors
import subprocess
import time
from pathlib import Path

EOT = b"\x04"


def uart_until_eot(elf: Path, timeout_s: float = 20.0) -> str:
    """What `elf` writes to UART0 on QEMU's mps3-an547 until its EOT (included), as text."""
    return uart_bytes(elf, timeout_s, after_eot_s=0.0).split(EOT, 1)[0].decode("utf-8", errors="replace") + "\x04"


def uart_bytes(elf: Path, timeout_s: float = 20.0, after_eot_s: float = 0.5) -> bytes:
    """The bytes `elf` writes to UART0 on QEMU's mps3-an547, unmodified, until `after_eot_s` after its EOT (so a
    byte the firmware sends after EOT, such as the prebuilt runner's exit code, is among them)."""
    command = ["qemu-system-arm", "-M", "mps3-an547", "-display", "none", "-monitor", "none", "-serial", "stdio"]
    process = subprocess.Popen([*command, "-kernel", str(elf)], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE)
    assert process.stdout is not None
    output = bytearray()
    deadline = time.monotonic() + timeout_s
    try:
        with selectors.DefaultSelector() as selector:
            selector.register(process.stdout, selectors.EVENT_READ)
            while time.monotonic() < deadline:
                if EOT in output:
                    deadline = min(deadline, time.monotonic() + after_eot_s)
                if selector.select(timeout=max(deadline - time.monotonic(), 0.0)):
                    chunk = os.read(process.stdout.fileno(), 1 << 16)
                    if not chunk:
                        break
                    output += chunk
    finally:
        process.kill()
        process.wait()
        process.stdout.close()
    return bytes(output)
