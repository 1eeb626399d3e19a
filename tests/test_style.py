"""The code base stays ruff clean (lint and format), as the project's style asks."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from helpers.skips import require

ROOT = Path(__file__).resolve().parents[1]
RUFF = Path(sys.executable).with_name("ruff")


@pytest.mark.parametrize("command", [["check", "."], ["format", "--check", "."]], ids=["lint", "format"])
def test_ruff_is_clean(command: list[str]) -> None:
    require(RUFF.exists(), f"ruff is not installed beside {sys.executable} (pip install .[test])")
    run = subprocess.run([str(RUFF), *command], cwd=ROOT, capture_output=True, text=True, check=False)
    assert run.returncode == 0, run.stdout + run.stderr
