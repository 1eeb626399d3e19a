"""The native kernel build: SCons builds every C file for the host (and Cortex-M55 when the Arm
toolchain is present) into a folder of the caller's choosing, with a real compiler."""

from __future__ import annotations

import ctypes
import json
import os
import re
import shutil
import stat
import subprocess
from pathlib import Path

import pytest
from helpers.skips import require_tool

from heliabuild.errors import HeliaError, KernelError
from heliabuild.kernels import native
from heliabuild.kernels.native import (
    C_SOURCE_DIR,
    NativeBuildError,
    Status,
    build_native,
    code_size_report_path,
    host_library_path,
    load_host_library,
    m55_library_path,
    scons_command,
)


@pytest.fixture(scope="session")
def kernels_build(host_kernel_library: Path) -> Path:
    """The build folder of the run's host library (tests/conftest.py, built once per run by build_native)."""
    return host_kernel_library


def _listing(folder: Path) -> dict[str, int]:
    return {str(p.relative_to(folder)): p.stat().st_mtime_ns for p in sorted(folder.rglob("*"))}


def _scons(*arguments: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*scons_command(), "-Q", *arguments], cwd=cwd, capture_output=True, text=True, check=False, env=env
    )


def _copy_sources(destination: Path) -> Path:
    copy = destination / "c"
    shutil.copytree(C_SOURCE_DIR, copy)
    return copy


def test_host_library_is_built_and_exports_the_kernels(kernels_build: Path) -> None:
    library_path = host_library_path(kernels_build)
    assert library_path.is_file()
    assert library_path.name == "libheliakernels.so" or os.name != "posix"
    library = ctypes.CDLL(str(library_path))
    for symbol in ("helia_stream_split_prepare", "helia_stream_split_copy", "helia_stream_split_element_size"):
        assert hasattr(library, symbol), symbol
    # Every C file of the folder is compiled into it.
    objects = {p.stem for p in (kernels_build / "host" / "obj").iterdir()}
    assert objects == {p.stem for p in C_SOURCE_DIR.glob("*.c")}


def test_an_up_to_date_build_rebuilds_nothing(kernels_build: Path) -> None:
    build_native(kernels_build, "host")  # catches up with sources edited since the session started
    before = _listing(kernels_build / "host")
    assert build_native(kernels_build, "host") == host_library_path(kernels_build)
    assert _listing(kernels_build / "host") == before


def test_load_host_library_is_cached(kernels_build: Path) -> None:
    assert load_host_library(kernels_build) is load_host_library(kernels_build)


def test_the_build_writes_nothing_beside_read_only_sources(tmp_path: Path) -> None:
    """An installed package is read-only: `-C <pkg>/c` and `-f <pkg>/c/SConstruct` both build elsewhere."""
    sources = _copy_sources(tmp_path)
    before = _listing(sources)
    for path in [sources, *sources.iterdir()]:
        path.chmod(path.stat().st_mode & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))
    try:
        from_c = _scons("-C", str(sources), "BUILD_DIR=out_c", "host", cwd=tmp_path)
        assert from_c.returncode == 0, from_c.stdout + from_c.stderr
        launch = tmp_path / "elsewhere"
        launch.mkdir()
        from_f = _scons("-f", str(sources / "SConstruct"), "BUILD_DIR=out_f", "host", cwd=launch)
        assert from_f.returncode == 0, from_f.stdout + from_f.stderr
    finally:
        for path in [sources, *sources.iterdir()]:
            path.chmod(path.stat().st_mode | stat.S_IWUSR)
    assert _listing(sources) == before
    assert host_library_path(tmp_path / "out_c").is_file()  # BUILD_DIR is relative to the launch folder
    assert host_library_path(launch / "out_f").is_file()


def test_build_dir_is_required(tmp_path: Path) -> None:
    run = _scons("-f", str(C_SOURCE_DIR / "SConstruct"), cwd=tmp_path)
    assert run.returncode == 2
    assert "BUILD_DIR=<folder> is required" in run.stdout


def test_a_kernel_using_the_heap_fails_the_build(tmp_path: Path) -> None:
    sources = _copy_sources(tmp_path)
    # named to sort first: the build compiles it before the real kernels and stops there
    (sources / "a_uses_heap.c").write_text(
        "#include <stdlib.h>\nvoid *helia_bad(void);\nvoid *helia_bad(void) { return malloc(4u); }\n"
    )
    run = _scons("-f", str(sources / "SConstruct"), f"BUILD_DIR={tmp_path / 'out'}", "host", cwd=tmp_path)
    assert run.returncode != 0
    assert "uses_heap" in run.stdout and "calls malloc; kernels must not use the heap" in run.stdout


def test_warnings_are_errors(tmp_path: Path) -> None:
    sources = _copy_sources(tmp_path)
    (sources / "a_warns.c").write_text(  # sorts first, as in the test above
        "int helia_warns(int unused);\nint helia_warns(int unused) { return 0; }\n"
    )
    run = _scons("-f", str(sources / "SConstruct"), f"BUILD_DIR={tmp_path / 'out'}", "host", cwd=tmp_path)
    assert run.returncode != 0
    assert "unused parameter" in run.stdout + run.stderr


def test_no_c_compiler_is_a_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CC", "heliabuild-no-such-compiler")
    with pytest.raises(NativeBuildError, match="no C compiler found") as caught:
        build_native(tmp_path, "host")
    assert isinstance(caught.value, HeliaError)
    assert "install gcc or clang" in (caught.value.hint or "")
    # SCons itself refuses the same way when called directly.
    env = dict(os.environ, CC="heliabuild-no-such-compiler")
    run = _scons("-f", str(C_SOURCE_DIR / "SConstruct"), "BUILD_DIR=out", "host", cwd=tmp_path, env=env)
    assert run.returncode == 2
    assert "no C compiler found for the host build" in run.stdout


def test_missing_arm_toolchain_is_a_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    empty = tmp_path / "empty_path"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    with pytest.raises(NativeBuildError, match="arm-none-eabi-gcc is not on PATH") as caught:
        build_native(tmp_path / "out", "cortex-m55")
    assert "gcc-arm-none-eabi" in (caught.value.hint or "")


def test_unknown_target_is_refused(tmp_path: Path) -> None:
    with pytest.raises(KernelError, match="unknown target 'riscv'"):
        build_native(tmp_path, "riscv")
    run = _scons("-f", str(C_SOURCE_DIR / "SConstruct"), "BUILD_DIR=out", "riscv", cwd=tmp_path)
    assert run.returncode == 2 and "unknown target(s) riscv" in run.stdout


def test_status_enum_mirrors_the_c_header() -> None:
    header = (C_SOURCE_DIR / "helia_status.h").read_text()
    codes = {name: int(value) for name, value in re.findall(r"HELIA_STATUS_(\w+) = (\d+)", header)}
    assert codes == {status.name: status.value for status in Status}


def test_scons_command_uses_the_running_interpreter() -> None:
    command = scons_command()
    assert Path(command[0]).parent == Path(native.sys.executable).parent or command[1:] == ["-m", "SCons"]


KERNELS_DOC = Path(__file__).resolve().parents[1] / "docs" / "kernels.md"
CODE_SIZE_ROW = re.compile(r"^    (\S+\.o|total) +(\d+) +(\d+)$", re.MULTILINE)


def documented_code_sizes() -> dict[str, dict[str, int]]:
    """The rows of docs/kernels.md's "Code size (Cortex-M55)" table: object (or total) -> target -> text bytes."""
    text = KERNELS_DOC.read_text(encoding="utf-8")
    section = text[text.index("### Code size (Cortex-M55)") :]
    section = section[: section.index("\n## ")]
    return {
        name: {"cortex-m55": int(mve), "cortex-m55-nomve": int(nomve)}
        for name, mve, nomve in CODE_SIZE_ROW.findall(section)
    }


def test_cortex_m55_library_and_code_size_report(tmp_path_factory: pytest.TempPathFactory) -> None:
    require_tool("arm-none-eabi-gcc", "Debian: gcc-arm-none-eabi libnewlib-arm-none-eabi")
    folder = tmp_path_factory.mktemp("heliakernels_m55")
    library = build_native(folder, "cortex-m55")
    assert library == m55_library_path(folder) and library.is_file()
    report = json.loads(code_size_report_path(folder).read_text())
    assert report["target"] == "cortex-m55"
    # One flag set: the report's objects are compiled exactly as the firmware compiles them.
    from heliabuild.firmware.toolchain import C_FLAGS, CPU_FLAGS, cpu_flags

    assert report["flags"] == [*CPU_FLAGS, *C_FLAGS]
    assert {"-mcpu=cortex-m55", "-mthumb", "-mfloat-abi=hard", "-O2", "-std=c99"} <= set(report["flags"])
    assert set(report["objects"]) == {f"{p.stem}.o" for p in C_SOURCE_DIR.glob("*.c")}
    split = report["objects"]["stream_split.o"]
    assert split["text"] > 0 and split["data"] == 0 and split["bss"] == 0
    assert report["total"]["total"] == sum(row["total"] for row in report["objects"].values())
    assert "stream_split.o" in code_size_report_path(folder, ".txt").read_text()
    attributes = subprocess.run(
        ["arm-none-eabi-readelf", "-A", str(folder / "cortex-m55" / "obj" / "stream_split.o")],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert 'Tag_CPU_name: "cortex-m55"' in attributes
    assert "Tag_ABI_VFP_args: VFP registers" in attributes  # the hard-float ABI
    symbols = subprocess.run(["arm-none-eabi-nm", str(library)], capture_output=True, text=True, check=True).stdout
    assert re.search(r" T helia_stream_split_copy$", symbols, re.MULTILINE)
    # The host library is not rebuilt by the Cortex-M55 target, and vice versa.
    before = _listing(folder / "cortex-m55")
    build_native(folder, "cortex-m55")
    assert _listing(folder / "cortex-m55") == before
    # The same library without MVE: the same flags but -mcpu, and no Helium body.
    nomve = build_native(folder, "cortex-m55-nomve")
    assert nomve == m55_library_path(folder, "cortex-m55-nomve") and nomve.is_file()
    plain = json.loads(code_size_report_path(folder, target="cortex-m55-nomve").read_text())
    assert plain["target"] == "cortex-m55-nomve" and plain["flags"] == [*cpu_flags(mve=False), *C_FLAGS]
    assert plain["objects"]["ops_conv_mve.o"]["text"] == 0 < report["objects"]["ops_conv_mve.o"]["text"]
    # docs/kernels.md's "Code size (Cortex-M55)" table is these two reports: text bytes, no data, no bss.
    documented = documented_code_sizes()
    for target, built in (("cortex-m55", report), ("cortex-m55-nomve", plain)):
        assert {name: row["text"] for name, row in built["objects"].items()} == {
            name: sizes[target] for name, sizes in documented.items() if name != "total"
        }, target
        assert built["total"]["text"] == documented["total"][target]
        assert all(row["data"] == 0 and row["bss"] == 0 for row in built["objects"].values())
