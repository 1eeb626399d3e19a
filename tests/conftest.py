"""Fixtures shared by heliabuild's tests."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from helpers.paths import KWS, RESNET, SHARED_MODELS, shared_models_present
from helpers.skips import require, require_distribution, require_tool, under_ci
from hypothesis import settings

if TYPE_CHECKING:
    from helpers.sanitizers import SanitizedBuilds

# Shared 2-core machines make wall-clock deadlines flaky; property tests bound their work by example counts.
# Under CI the examples are derived from each test itself (derandomize, no example database), so one run's
# counterexample is every run's; a local run explores at random, with more examples, and keeps what it found.
settings.register_profile("ci", deadline=None, print_blob=True, derandomize=True, database=None)
settings.register_profile("local", deadline=None, print_blob=True, max_examples=200)
settings.load_profile("ci" if under_ci() else "local")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Put the test files with the fewest tests first, each file's tests in their own order.

    pytest-xdist (`--dist loadfile --no-loadscope-reorder`, dev.py) hands the files out in this order. The files
    with few tests are the end-to-end ones whose every test builds something (a minute or more a file); the
    files with hundreds of tests are made of short ones. Long files first and short ones last is what lets the
    two workers end together: whichever finishes its file first takes the next, and what is left at the end is
    short. (pytest-xdist's own reordering does the opposite, most tests first.)"""
    counts: dict[Path, int] = {}
    for item in items:
        counts[item.path] = counts.get(item.path, 0) + 1
    items.sort(key=lambda item: counts[item.path])  # stable: a file's tests keep their order


def run_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The temporary folder of the whole run: under pytest-xdist the one the workers' own basetemps share."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


def built_once_per_run(tmp_path_factory: pytest.TempPathFactory, name: str, build: Callable[[Path], object]) -> Path:
    """The folder `name`, filled by `build(folder)` once for the whole run: under pytest-xdist every worker's
    session asks for it, the first builds it under a lock in the run's folder, the others wait for that build
    and then use it."""
    from heliabuild.locks import locked

    base = run_folder(tmp_path_factory)
    folder = base / name
    built = base / f"{name}.built"
    with locked(base / f"{name}.lock"):
        if not built.exists():
            folder.mkdir(exist_ok=True)
            build(folder)
            built.touch()
    return folder


@pytest.fixture(scope="session")
def shared_models() -> Path:
    """The folder of real models beside the repository; tests using it skip where it is absent."""
    require(shared_models_present(), f"real models not available: {SHARED_MODELS} is absent (a fresh clone has none)")
    return SHARED_MODELS


@pytest.fixture(scope="session")
def kws_path(shared_models: Path) -> Path:
    return shared_models / KWS


@pytest.fixture(scope="session")
def resnet_path(shared_models: Path) -> Path:
    return shared_models / RESNET


@pytest.fixture(params=[KWS, RESNET], ids=["kws", "resnet"])
def shared_model_path(request: pytest.FixtureRequest, shared_models: Path) -> Path:
    return shared_models / request.param


@pytest.fixture(scope="session")
def synth_models(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The synthetic stand-ins of the real models, saved once: they work in a fresh clone."""
    from heliabuild.model import save_model
    from heliabuild.synth import chain_network, residual_network

    def save(folder: Path) -> None:
        save_model(chain_network(0), folder / "synth_chain.tflite")
        save_model(residual_network(0), folder / "synth_residual.tflite")

    return built_once_per_run(tmp_path_factory, "synth_models", save)


@pytest.fixture(scope="session", params=["resnet", "synth-residual"])
def residual_file(request: pytest.FixtureRequest, synth_models: Path) -> Path:
    """A ResNet-8 topology file (16 ops, residual ADDs at 3, 7, 11): the real one or heliabuild.synth's."""
    if request.param == "resnet":
        return request.getfixturevalue("resnet_path")
    return synth_models / "synth_residual.tflite"


@pytest.fixture(scope="session", params=["kws", "synth-chain"])
def chain_file(request: pytest.FixtureRequest, synth_models: Path) -> Path:
    """A plain chain file (one live tensor at every cut): the real DS-CNN (13 ops) or heliabuild.synth's (9)."""
    if request.param == "kws":
        return request.getfixturevalue("kws_path")
    return synth_models / "synth_chain.tflite"


@dataclass
class CliResult:
    code: int
    out: str
    err: str


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str]):
    """Run `heliabuild.cli.main(argv)` in-process; argparse's SystemExit becomes the exit code."""
    from heliabuild.cli import main

    def run(*argv: object) -> CliResult:
        capsys.readouterr()
        try:
            code = main([str(a) for a in argv])
        except SystemExit as stop:
            code = stop.code if isinstance(stop.code, int) else 1
        captured = capsys.readouterr()
        return CliResult(code=code, out=captured.out, err=captured.err)

    return run


def require_firmware_tools() -> None:
    """Skip (fail under CI, whose .ci/run installs them) when the Arm toolchain or QEMU is missing."""
    for tool in ("arm-none-eabi-gcc", "qemu-system-arm"):
        require_tool(tool, "Debian: gcc-arm-none-eabi libnewlib-arm-none-eabi qemu-system-arm")


def require_prebuilt_runner() -> None:
    """Skip (fail under CI, whose .ci/run installs it) when mlia-ethos-u, which ships Arm's prebuilt runner, is
    missing."""
    require_distribution("mlia-ethos-u", "pip install heliabuild[fvp]")


@pytest.fixture(scope="session")
def firmware_library(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The Cortex-M55 firmware library (kernels + harness), built once for the whole run."""
    require_firmware_tools()
    from heliabuild.firmware.build import build_library

    # build_library builds under its own lock and only when its stamp is stale: once per run in the run's folder
    return build_library(run_folder(tmp_path_factory) / "firmware-library")


@pytest.fixture(scope="session")
def firmware_library_nomve(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The same library for `-mcpu=cortex-m55+nomve` (the kernels' portable bodies), built once per run."""
    require_firmware_tools()
    from heliabuild.firmware.build import build_library

    return build_library(run_folder(tmp_path_factory) / "firmware-library-nomve", mve=False)


@dataclass(frozen=True)
class FirmwareLibrary:
    """A firmware library and whether it was built with MVE (link with `link_firmware(..., mve=mve)`)."""

    path: Path
    mve: bool


@pytest.fixture(params=["mve", "nomve"])
def firmware_build(request: pytest.FixtureRequest) -> FirmwareLibrary:
    """Each of the two session libraries in turn: the MVE build and the +nomve build (the kernels' Helium and
    portable bodies), so a test asserts the same bytes from both."""
    if request.param == "mve":
        return FirmwareLibrary(request.getfixturevalue("firmware_library"), True)
    return FirmwareLibrary(request.getfixturevalue("firmware_library_nomve"), False)


@pytest.fixture(scope="session")
def host_kernel_library(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The build folder of the host kernel library (heliabuild.kernels.native), built once for the whole run and
    loaded once per process; every test module of the host kernels uses it."""
    from heliabuild.kernels.native import build_native, load_host_library

    folder = built_once_per_run(tmp_path_factory, "heliakernels-host", lambda folder: build_native(folder, "host"))
    load_host_library(folder)
    return folder


@pytest.fixture(scope="session")
def sanitized_builds(tmp_path_factory: pytest.TempPathFactory, host_kernel_library: Path) -> SanitizedBuilds:
    """Every operator kernel file built with AddressSanitizer and UBSan into one library, once for the whole
    run, beside the regular host library to compare with (tests/helpers/sanitizers.py)."""
    from helpers.sanitizers import OPS_SOURCES, SanitizedBuilds, build_sanitized, sanitizer_runtimes

    from heliabuild.kernels.native import host_library_path

    sanitizer_runtimes()
    name = "libheliaops_sanitized.so"
    folder = built_once_per_run(tmp_path_factory, "kernels-sanitized", lambda f: build_sanitized(OPS_SOURCES, f / name))
    return SanitizedBuilds(folder / name, host_library_path(host_kernel_library))


def fake_fvp_folder(folder: Path) -> Path:
    """`folder`, created, holding one FAKE FVP executable (tests/helpers/fake_fvp.py, a test double) per FVP
    target name, run by this interpreter; put it first on PATH."""
    import stat
    import sys

    from heliabuild.fvp.targets import TARGETS

    folder.mkdir()
    text = f"#!{sys.executable}\n" + (Path(__file__).parent / "helpers" / "fake_fvp.py").read_text()
    for target in TARGETS:
        path = folder / target.executable
        path.write_text(text)
        path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return folder


@pytest.fixture
def fake_fvp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A folder of FAKE FVP executables (tests/helpers/fake_fvp.py, a test double, one per target name) first on
    PATH; returns the call log (the SHA-256 of each job's model is in `fake-fvp-models.txt` beside it)."""
    import os

    folder = fake_fvp_folder(tmp_path / "fake-fvp-bin")
    log = tmp_path / "fake-fvp-calls.jsonl"
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("FAKE_FVP_LOG", str(log))
    monkeypatch.setenv("FAKE_FVP_MODELS", str(tmp_path / "fake-fvp-models.txt"))
    monkeypatch.delenv("HELIA_FVP_DIR", raising=False)
    monkeypatch.delenv("FAKE_FVP_SCENARIO", raising=False)
    monkeypatch.delenv("FAKE_FVP_RECORDS", raising=False)
    return log
