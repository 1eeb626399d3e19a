"""The on-target runner: C sources of the firmware harness (startup and linker files per target, semihosting
I/O, the record protocol, the instruction counter) and the Python that runs firmware on QEMU and reads its
record stream. See docs/firmware.md."""

from pathlib import Path

C_SOURCE_DIR = Path(__file__).resolve().parent / "c"
"""The harness's C sources; a target's startup and linker files are in its own sub-folder (`mps3_an547/`)."""
