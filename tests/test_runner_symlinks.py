"""A runner folder holds only regular files and folders: a symlink anywhere in it (the `inputs/` folder, the
model, runner.json) is refused by `load_runner` and by a runner rebuild, which then deletes nothing behind it."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from heliabuild.errors import RunnerError
from heliabuild.files import sha256_file
from heliabuild.model import save_model
from heliabuild.runner.freeze import MODEL_FILE, RUNNER_FILE, build_runner, load_runner
from heliabuild.runner.litert import LiteRTInstance
from heliabuild.synth import chain_network


@pytest.fixture
def runner_with_input(tmp_path: Path) -> tuple[Path, Path]:
    """(the chain model, a runner folder whose policy copies random input bytes to inputs/input_0.bin)."""
    model = tmp_path / "chain.tflite"
    save_model(chain_network(0), model)
    info = LiteRTInstance(model).input_infos()[0]
    data = np.random.default_rng(5).integers(-128, 128, size=info.shape).astype(np.int8)
    (tmp_path / "in0.bin").write_bytes(data.tobytes())
    policy = tmp_path / "policy.yaml"
    policy.write_text("defaults:\n  fvp:\n    tensor_io:\n      inputs:\n        - {index: 0, file: in0.bin}\n")
    build_runner(tmp_path / "r", model=model, policy=policy)
    return model, tmp_path / "r"


def _symlink_inputs_to_a_users_folder(runner: Path) -> Path:
    """Move the runner's inputs/ aside as the user's own folder and put a symlink to it in its place; the
    user's copy of input_0.bin (the same bytes, so every hash still verifies)."""
    mine = runner.parent / "my-inputs"
    (runner / "inputs").rename(mine)
    os.symlink(mine, runner / "inputs")
    return mine / "input_0.bin"


def test_a_runner_rebuild_refuses_a_symlinked_inputs_folder_and_deletes_nothing_behind_it(
    cli, runner_with_input: tuple[Path, Path]
) -> None:
    model, runner = runner_with_input
    users_file = _symlink_inputs_to_a_users_folder(runner)
    before = users_file.read_bytes()
    result = cli("runner", "--model", model, "-o", runner)  # no tensor_io now: input_0.bin would go
    assert result.code == 2, result.err
    assert result.err.count("\n") == 1 and "symlink" in result.err and "inputs" in result.err, result.err
    assert users_file.read_bytes() == before


def test_load_runner_refuses_a_symlinked_inputs_folder(runner_with_input: tuple[Path, Path]) -> None:
    _, runner = runner_with_input
    _symlink_inputs_to_a_users_folder(runner)
    with pytest.raises(RunnerError, match=r"inputs: a symlink inside the runner folder"):
        load_runner(runner / RUNNER_FILE)


@pytest.mark.parametrize("name", [MODEL_FILE, RUNNER_FILE])
def test_a_model_or_runner_json_that_is_a_symlink_to_a_file_outside_is_refused(
    runner_with_input: tuple[Path, Path], name: str
) -> None:
    _, runner = runner_with_input
    outside = runner.parent / f"outside-{name}"
    (runner / name).rename(outside)
    os.symlink(outside, runner / name)
    digest = sha256_file(outside)
    with pytest.raises(RunnerError, match=rf"{name}: .*symlink"):
        load_runner(runner)
    assert sha256_file(outside) == digest
