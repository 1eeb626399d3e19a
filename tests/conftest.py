"""Fixtures shared by heliabuild's tests."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED_MODELS = REPO.parent / "shared" / "models"
KWS = "kws_ref_model.tflite"
RESNET = "pretrainedResnet_quant.tflite"


@pytest.fixture(scope="session")
def shared_models() -> Path:
    """The folder of real models beside the repository; tests using it skip where it is absent."""
    if not (SHARED_MODELS / KWS).is_file() or not (SHARED_MODELS / RESNET).is_file():
        pytest.skip(f"real models not available: {SHARED_MODELS} is absent (a fresh clone has no ../shared/models)")
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
