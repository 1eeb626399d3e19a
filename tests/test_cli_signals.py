"""SIGINT of a running `heliabuild` command: one line on stderr, exit 130, no traceback, nothing partial left
(a real subprocess of the installed command, interrupted while Vela runs)."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from helpers.trees import snapshot

from heliabuild.model import save_model
from heliabuild.synth import chain_network

HELIABUILD = Path(sys.executable).with_name("heliabuild")


def interrupt_vela(model: Path, out: Path) -> subprocess.CompletedProcess[str]:
    """Start `heliabuild vela MODEL -o OUT`, send SIGINT once Vela's work folder exists, and wait."""
    process = subprocess.Popen(
        [str(HELIABUILD), "vela", str(model), "-o", str(out)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 60
    while not (out.is_dir() and any(p.name.startswith(f".{model.stem}.vela-") for p in out.iterdir())):
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            pytest.fail(f"vela finished or stalled before it could be interrupted: {process.communicate()}")
        time.sleep(0.01)
    process.send_signal(signal.SIGINT)
    stdout, stderr = process.communicate(timeout=60)
    return subprocess.CompletedProcess(process.args, process.returncode, stdout, stderr)


@pytest.fixture
def model(tmp_path: Path) -> Path:
    path = tmp_path / "in" / "chain.tflite"
    path.parent.mkdir()
    save_model(chain_network(0), path)
    return path


def test_sigint_prints_one_line_exits_130_and_removes_the_folder_it_created(model: Path, tmp_path: Path) -> None:
    before = snapshot(tmp_path)
    result = interrupt_vela(model, tmp_path / "out" / "vela")
    assert result.returncode == 130, result
    assert result.stderr == "heliabuild: interrupted\n"
    assert snapshot(tmp_path) == before


def test_sigint_leaves_an_existing_output_folder_as_it_was(model: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "notes.txt").write_bytes(b"mine")
    before = snapshot(tmp_path)
    result = interrupt_vela(model, out)
    assert (result.returncode, result.stderr) == (130, "heliabuild: interrupted\n")
    assert snapshot(tmp_path) == before
