"""`heliabuild doctor` and `heliabuild --version` (heliabuild.doctor), run as the installed command: what it
finds with this machine's real tools, what it says when a PATH lacks them, FVPs found on PATH or in
HELIA_FVP_DIR (the FAKE FVP, tests/helpers/fake_fvp.py, a test double of Arm's FVP executables: Arm's FVPs
cannot be installed here), and its exit status for `--backend`."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import fake_fvp_folder, require_firmware_tools

from heliabuild.distributions import version

HELIABUILD = Path(sys.executable).with_name("heliabuild")
FVP_VARIABLES = ("HELIA_FVP_DIR", "HELIA_ETHOSU_DRIVER_DIR", "FAKE_FVP_SCENARIO", "FAKE_FVP_RECORDS", "FAKE_FVP_LOG")


def doctor(*arguments: str, path: str | None = None, **variables: str) -> subprocess.CompletedProcess[str]:
    environment = {key: value for key, value in os.environ.items() if key not in FVP_VARIABLES}
    environment.update(variables)
    if path is not None:
        environment["PATH"] = path
    return subprocess.run(
        [str(HELIABUILD), "doctor", *arguments], capture_output=True, text=True, env=environment, check=False
    )


def line_of(report: str, name: str) -> str:
    (line,) = [line for line in report.splitlines() if line.strip().startswith(name + " ")]
    return line


def backend_block(report: str, backend: str) -> str:
    """The backend's lines of the report's `backends:` part."""
    lines = report.split("\nbackends:\n", 1)[1].splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(f"  {backend}:"))
    end = next((i for i in range(start + 1, len(lines)) if not lines[i].startswith("    ")), len(lines))
    return "\n".join(lines[start:end])


def test_doctor_lists_the_real_tools_with_version_and_location() -> None:
    require_firmware_tools()
    result = doctor()
    assert result.returncode == 0 and result.stderr == "", result
    report = result.stdout
    gcc = line_of(report, "arm-none-eabi-gcc")
    first_line = subprocess.run(["arm-none-eabi-gcc", "--version"], capture_output=True, text=True).stdout.split("\n")[
        0
    ]
    assert gcc.endswith(f"  {first_line}  ({shutil.which('arm-none-eabi-gcc')})"), gcc
    assert line_of(report, "qemu-system-arm").endswith(f"({shutil.which('qemu-system-arm')})")
    assert "QEMU emulator version" in line_of(report, "qemu-system-arm")
    newlib = line_of(report, "newlib (nano)")
    assert "libc_nano.a)" in newlib and "missing" not in newlib, newlib
    vela = line_of(report, "ethos-u-vela")
    assert f" {version('ethos-u-vela')} " in vela and "ethosu" in vela, vela
    assert f" {version('scons')} " in line_of(report, "SCons")
    for target in ("FVP_Corstone_SSE-300_Ethos-U55", "FVP_Corstone_SSE-320"):
        assert line_of(report, target).endswith("missing: not on PATH, $HELIA_FVP_DIR unset")
    assert "missing: not set" in line_of(report, "Ethos-U driver ($HELIA_ETHOSU_DRIVER_DIR)")
    assert backend_block(report, "litert") == "  litert: ready"
    assert backend_block(report, "qemu-m55") == "  qemu-m55: ready"
    assert backend_block(report, "fvp").startswith("  fvp: cannot run; missing:\n    - an Arm Corstone FVP (")
    assert "https://developer.arm.com/" in backend_block(report, "fvp")


def test_a_path_without_the_toolchain_and_qemu_says_what_to_install_and_fails_that_backend(tmp_path: Path) -> None:
    empty = tmp_path / "bin"
    empty.mkdir()
    result = doctor("--backend", "qemu-m55", path=str(empty))
    assert result.returncode == 2, result
    assert result.stderr == "heliabuild: error: doctor: qemu-m55 cannot run here (what it lacks is listed above)\n"
    block = backend_block(result.stdout, "qemu-m55")
    assert "arm-none-eabi-gcc: arm-none-eabi-gcc is not on PATH" in block, block
    assert "apt-get install gcc-arm-none-eabi libnewlib-arm-none-eabi" in block
    assert "qemu-system-arm: qemu-system-arm is not on PATH" in block and "apt-get install qemu-system-arm" in block
    assert "newlib (nano): no arm-none-eabi-gcc to find it with" in block
    assert line_of(result.stdout, "qemu-system-arm").endswith(
        "missing: qemu-system-arm is not on PATH, so the qemu-m55 backend cannot run"
    )
    assert doctor("--backend", "litert", path=str(empty)).returncode == 0  # LiteRT needs no program on PATH


def test_an_unknown_backend_is_bad_input() -> None:
    result = doctor("--backend", "qemu")
    assert result.returncode == 2 and "invalid choice: 'qemu'" in result.stderr, result


@pytest.fixture
def fake_fvps(tmp_path: Path) -> Path:
    import test_fvp_backend  # noqa: F401  (skips when mlia-ethos-u, whose prebuilt runners the fvp backend runs, is missing)

    return fake_fvp_folder(tmp_path / "fake-fvp-bin")


def test_fvps_on_path_make_the_fvp_backend_ready(fake_fvps: Path) -> None:
    """FAKE FVP (a test double) executables first on PATH, with mlia-ethos-u's real prebuilt runners."""
    result = doctor("--backend", "fvp", path=f"{fake_fvps}{os.pathsep}{os.environ['PATH']}")
    assert result.returncode == 0, result
    line = line_of(result.stdout, "FVP_Corstone_SSE-310")
    assert line.endswith(f"({fake_fvps / 'FVP_Corstone_SSE-310'})") and "missing" not in line, line
    runner = line_of(result.stdout, "mlia-ethos-u runner for SSE-310")
    assert f" {version('mlia-ethos-u')} " in runner and runner.endswith("mlek_inference_runner.axf)"), runner
    assert backend_block(result.stdout, "fvp") == "  fvp: ready"


def test_fvps_in_helia_fvp_dir_are_found_there(fake_fvps: Path, tmp_path: Path) -> None:
    install = tmp_path / "FVP_Corstone_SSE-320" / "models" / "Linux64_GCC-9.3"
    install.mkdir(parents=True)
    shutil.copy2(fake_fvps / "FVP_Corstone_SSE-320", install / "FVP_Corstone_SSE-320")
    result = doctor(HELIA_FVP_DIR=str(tmp_path / "FVP_Corstone_SSE-320"))
    assert line_of(result.stdout, "FVP_Corstone_SSE-320").endswith(f"({install / 'FVP_Corstone_SSE-320'})")
    folder = tmp_path / "FVP_Corstone_SSE-320"
    assert line_of(result.stdout, "FVP_Corstone_SSE-300_Ethos-U55").endswith(
        f"missing: not in $HELIA_FVP_DIR ({folder}) or on PATH"
    )
    assert backend_block(result.stdout, "fvp") == "  fvp: ready"


def test_a_folder_that_is_no_driver_is_named_with_what_it_lacks(tmp_path: Path) -> None:
    result = doctor(HELIA_ETHOSU_DRIVER_DIR=str(tmp_path))
    line = line_of(result.stdout, "Ethos-U driver ($HELIA_ETHOSU_DRIVER_DIR)")
    lacks = f"{tmp_path} is not an Ethos-U core driver for ethos-u55: it lacks include/ethosu_driver.h"
    assert f"missing: HELIA_ETHOSU_DRIVER_DIR {lacks}" in line, line


def test_version_prints_heliabuild_and_the_tools_bundles_record() -> None:
    result = subprocess.run([str(HELIABUILD), "--version"], capture_output=True, text=True, check=False)
    assert result.returncode == 0 and result.stderr == "", result
    lines = result.stdout.splitlines()
    assert lines[0].startswith(f"heliabuild {version('heliabuild')}+")
    assert f"  ethos-u-vela: {version('ethos-u-vela')}" in lines
    assert f"  ai-edge-litert: {version('ai-edge-litert')}" in lines
    assert f"  scons: {version('scons')}" in lines
    assert {line.split(":")[0].strip() for line in lines[1:]} == {
        "ai-edge-litert",
        "arm-none-eabi-gcc",
        "ethos-u-vela",
        "mlia-ethos-u",
        "python",
        "qemu-system-arm",
        "scons",
    }
