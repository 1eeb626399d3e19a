"""Every kernel C file as the firmware compiles it (arm-none-eabi-gcc, the firmware's flags, MVE on): each function's
stack frame is static (-fstack-usage), and no frame is larger than docs/kernels.md says ("Rules": the depthwise
Helium body's 3x3 planes about 3.6 KiB, its general body about 1.7 KiB, the held-vector 1x1 body about 1.3 KiB,
Detess's inference check under 1 KiB, every other function at most 512 bytes), and that the library imports only
memcpy and memset, with the 64-bit division helpers for Detess alone (the operator kernels divide no 64-bit value:
the M55 has no instruction for it)."""

from __future__ import annotations

import subprocess
from pathlib import Path

from conftest import require_firmware_tools

from heliabuild.firmware.toolchain import C_FLAGS, CPU_FLAGS, arm_gcc

KERNELS = Path(__file__).resolve().parents[1] / "heliabuild" / "kernels" / "c"
LARGE_FRAMES = {
    "helia_ops_depthwise_plane_mve": 3840,
    "depthwise_general": 1792,
    "conv2d_in_place_held": 1408,
    "helia_detess_check_inference": 1024,
}
"""Bytes: the functions docs/kernels.md names, each with its bound (measured 3,624, 1,680, 1,312 and 904)."""
OTHER_FRAMES = 512
IMPORTS = {"memcpy", "memset"}
DETESS_IMPORTS = {"__aeabi_ldivmod", "__aeabi_uldivmod"}


def test_every_kernel_frame_is_static_and_within_its_documented_bound(tmp_path: Path) -> None:
    require_firmware_tools()
    frames: dict[str, tuple[int, str]] = {}
    imported: dict[str, set[str]] = {}
    defined: set[str] = set()
    nm = arm_gcc().removesuffix("gcc") + "nm"
    for source in sorted(KERNELS.glob("*.c")):
        obj = tmp_path / f"{source.stem}.o"
        command = [arm_gcc(), *CPU_FLAGS, *C_FLAGS, "-fstack-usage", f"-I{KERNELS}", "-c", str(source)]
        subprocess.run([*command, "-o", str(obj)], check=True, cwd=tmp_path)
        for line in obj.with_suffix(".su").read_text().splitlines():
            where, size, kind = line.split("\t")
            frames[f"{source.name}:{where.rsplit(':', 1)[-1]}"] = (int(size), kind)
        symbols = subprocess.run([nm, str(obj)], capture_output=True, text=True, check=True).stdout.split("\n")
        rows = [line.split() for line in symbols if line.strip()]
        imported[source.name] = {row[-1] for row in rows if row[-2] == "U"}
        defined |= {row[-1] for row in rows if row[-2] != "U"}
    assert len(frames) > 100
    assert all(kind == "static" for _, kind in frames.values()), frames
    for name, (size, _) in frames.items():
        function = name.rsplit(":", 1)[-1]
        assert size <= LARGE_FRAMES.get(function, OTHER_FRAMES), (name, size)
    for name, symbols in imported.items():
        allowed = IMPORTS | (DETESS_IMPORTS if name == "detess.c" else set())
        assert symbols - defined <= allowed, (name, symbols - defined)
