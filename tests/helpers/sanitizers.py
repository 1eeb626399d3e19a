"""The C kernels under AddressSanitizer and UBSan: gcc's runtimes, the flags, and a driver script run in a
Python with both runtimes preloaded (the runtime must be loaded before the instrumented library)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from helpers.skips import require, require_tool

ROOT = Path(__file__).resolve().parents[2]
OPS_SOURCES = sorted((ROOT / "heliabuild" / "kernels" / "c").glob("ops_*.c"))
"""Every operator kernel file (libheliaops_sanitized.so: the sanitized_builds fixture of tests/conftest.py)."""
FLAGS = ["-std=c99", "-O1", "-g", "-fno-omit-frame-pointer", "-fsanitize=address,undefined"]
FLAGS += ["-fno-sanitize-recover=all", "-Wall", "-Wextra", "-Werror", "-pedantic", "-fPIC", "-shared"]


@dataclass(frozen=True)
class SanitizedBuilds:
    """The kernels built sanitized (`library`) and the regular host library (`regular`) to compare with."""

    library: Path
    regular: Path


def _runtime(name: str) -> str | None:
    found = subprocess.run(["gcc", f"-print-file-name={name}"], capture_output=True, text=True, check=False)
    path = found.stdout.strip()
    return path if found.returncode == 0 and os.path.isabs(path) and os.path.exists(path) else None


def sanitizer_runtimes() -> tuple[str, str]:
    """gcc's libasan and libubsan; skip (fail under CI) on another platform or without them."""
    require(sys.platform == "linux", "gcc's sanitizers are tested on Linux")
    require_tool("gcc", "gcc")
    asan, ubsan = _runtime("libasan.so"), _runtime("libubsan.so")
    require(asan is not None and ubsan is not None, "gcc has no libasan/libubsan here (Debian: libasan8 libubsan1)")
    assert asan is not None and ubsan is not None
    return asan, ubsan


def build_sanitized(sources: Sequence[Path], library: Path) -> Path:
    """`sources` compiled with FLAGS into the shared library `library`."""
    subprocess.run(["gcc", *FLAGS, *map(str, sources), "-o", str(library)], check=True)
    return library


def run_driver(tmp_path: Path, driver_text: str) -> subprocess.CompletedProcess[str]:
    """Run the script `driver_text` from the repository root in a Python with ASan and UBSan preloaded."""
    asan, ubsan = sanitizer_runtimes()
    driver = tmp_path / "driver.py"
    driver.write_text(driver_text, encoding="utf-8")
    environment = dict(os.environ, LD_PRELOAD=f"{asan}:{ubsan}", PYTHONMALLOC="malloc", ASAN_OPTIONS="detect_leaks=0")
    return subprocess.run(
        [sys.executable, str(driver)], capture_output=True, text=True, env=environment, cwd=ROOT, check=False
    )
