"""The on-target runner: C sources of the firmware harness (startup and linker files per target, the console:
semihosting on QEMU, UART0 on the Corstone FVPs; the record protocol; the measurement: the instruction counter
on QEMU, the Ethos-U PMU through the user's driver on an FVP) and the Python that builds firmware, runs it on
QEMU and reads its record stream. See docs/firmware.md."""

from pathlib import Path

C_SOURCE_DIR = Path(__file__).resolve().parent / "c"
"""The harness's C sources; a target's startup and linker files are in its own sub-folder (`mps3_an547/`)."""
