"""Issue 22 part A's kernel files as the firmware compiles them (arm-none-eabi-gcc, the firmware's flags): every
function's stack frame is static and small (-fstack-usage), and the objects import nothing but memcpy and
memset (no heap, no libm, no 64-bit division helper)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from conftest import require_firmware_tools

from heliabuild.firmware.toolchain import C_FLAGS, CPU_FLAGS, arm_gcc

KERNELS = Path(__file__).resolve().parents[1] / "heliabuild" / "kernels" / "c"
PART_A = ("ops_unary.c", "ops_binary.c", "ops_data.c")
LARGEST_FRAME = 160
"""Bytes: the largest frame measured is 136 (ops_binary.c's broadcast loop, three rank-6 index arrays)."""


@pytest.mark.parametrize("source", PART_A)
def test_frames_are_static_and_small_and_only_memcpy_and_memset_are_imported(tmp_path: Path, source: str) -> None:
    require_firmware_tools()
    obj = tmp_path / source.replace(".c", ".o")
    command = [arm_gcc(), *CPU_FLAGS, *C_FLAGS, "-fstack-usage", f"-I{KERNELS}", "-c", str(KERNELS / source)]
    subprocess.run([*command, "-o", str(obj)], check=True, cwd=tmp_path)
    frames = [line.split("\t") for line in obj.with_suffix(".su").read_text().splitlines()]
    assert frames and all(kind == "static" for _, _, kind in frames), frames
    assert max(int(size) for _, size, _ in frames) <= LARGEST_FRAME, frames
    nm = arm_gcc().removesuffix("gcc") + "nm"
    undefined = subprocess.run([nm, "-u", str(obj)], capture_output=True, text=True, check=True).stdout.split()
    assert set(undefined[1::2]) <= {"memcpy", "memset"}, undefined
