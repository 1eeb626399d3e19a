"""A hand-edited runner.json is read through the validating reader before any field is used: every edit of
every field (removed, or replaced by a value of another type or range, another backend, a path elsewhere)
gives `run` exit 0 or one clean `heliabuild: error:` line with exit 2, never a traceback."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from helpers.checks import assert_not_written, assert_one_line_error

from heliabuild.fence import rewrite_model_with_fences
from heliabuild.model import save_model
from heliabuild.runner.freeze import BACKENDS, RUNNER_FILE
from heliabuild.runner.litert import LiteRTInstance
from heliabuild.synth import chain_network
from heliabuild.vela import compile as vela_compile

REPLACEMENTS: tuple[Any, ...] = (
    None,
    "",
    "x",
    "../outside.bin",
    "runner.json",
    "model.tflite",
    -1,
    0,
    1,
    7,
    2**70,
    1.5,
    True,
    [],
    {},
)


@pytest.fixture(scope="module")
def runner(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A runner folder with every optional input: a fenced chain, its sidecar, Vela's model and segments.json,
    and a tensor_io input file."""
    from heliabuild.cli import main

    folder = tmp_path_factory.mktemp("hand_edits")
    save_model(chain_network(0), folder / "chain.tflite")
    sidecar = rewrite_model_with_fences(folder / "chain.tflite", [3, 6]).save(folder / "chain_fenced.tflite")
    vela = vela_compile(folder / "chain_fenced.tflite", folder / "vela")
    info = LiteRTInstance(folder / "chain_fenced.tflite").input_infos()[0]
    data = np.random.default_rng(1).integers(-128, 128, size=info.shape).astype(np.int8)
    (folder / "in0.bin").write_bytes(data.tobytes())
    (folder / "policy.yaml").write_text(
        "defaults:\n  fvp:\n    acquisition: {state: carry, warmup_invokes: 1, measured_invokes: 2}\n"
        "    tensor_io:\n      inputs:\n        - {index: 0, file: in0.bin}\n"
    )
    arguments = ["runner", "--model", folder / "chain_fenced.tflite", "--sidecar", sidecar]
    arguments += ["--vela-model", vela.model, "--segments", vela.segments_json, "--policy", folder / "policy.yaml"]
    assert main([str(a) for a in [*arguments, "-o", folder / "r"]]) == 0
    return folder / "r"


def _edits(value: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[str, tuple[Any, ...], Any]]:
    """(description, path, new value or _REMOVED) for every field under `value`."""
    if path:
        for replacement in REPLACEMENTS:
            if replacement != value or type(replacement) is not type(value):
                yield f"{'.'.join(map(str, path))}={replacement!r}", path, replacement
    if path and path[-1] == "backend":
        for backend in BACKENDS:
            yield f"backend={backend}", path, backend
    if isinstance(value, dict):
        for key in sorted(value):
            yield f"del {'.'.join(map(str, (*path, key)))}", (*path, key), _REMOVED
            yield from _edits(value[key], (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _edits(item, (*path, index))


_REMOVED = object()


def _edited(document: Any, path: tuple[Any, ...], value: Any) -> Any:
    edited = json.loads(json.dumps(document))
    holder = edited
    for part in path[:-1]:
        holder = holder[part]
    if value is _REMOVED:
        del holder[path[-1]]
    else:
        holder[path[-1]] = value
    return edited


def test_every_hand_edit_of_runner_json_is_run_or_refused_with_one_line(cli, runner: Path, tmp_path: Path) -> None:
    document = json.loads((runner / RUNNER_FILE).read_text())
    edits = list(_edits(document))
    assert len(edits) > 300
    copy = Path(shutil.copytree(runner, tmp_path / "r"))
    outcomes: dict[int, int] = {}
    for description, path, value in edits:
        (copy / RUNNER_FILE).write_text(json.dumps(_edited(document, path, value)))
        result = cli("run", copy / RUNNER_FILE, "-o", tmp_path / "result")
        outcomes[result.code] = outcomes.get(result.code, 0) + 1
        if result.code == 0:
            shutil.rmtree(tmp_path / "result")
            continue
        try:
            assert_one_line_error(result)
            assert_not_written(tmp_path / "result")
        except AssertionError as failure:
            raise AssertionError(f"{description}: {failure}") from None
    assert set(outcomes) <= {0, 2} and outcomes.get(2, 0) > 0, outcomes


def test_run_into_the_current_or_parent_folder_is_one_clean_error(cli, runner: Path, monkeypatch) -> None:
    monkeypatch.chdir(runner.parent)
    for output in (".", ".."):
        assert_one_line_error(cli("run", runner / RUNNER_FILE, "-o", output), "a result bundle folder needs a name")


def test_a_runner_json_edited_to_another_backend_is_refused_naming_its_missing_section(
    cli, runner: Path, tmp_path: Path
) -> None:
    copy = Path(shutil.copytree(runner, tmp_path / "r"))
    document = json.loads((copy / RUNNER_FILE).read_text())
    for backend, section in (("fvp", "'fvp'"), ("qemu-m55", "'firmware'")):
        (copy / RUNNER_FILE).write_text(json.dumps({**document, "backend": backend}))
        assert_one_line_error(cli("run", copy / RUNNER_FILE, "-o", tmp_path / "result"), section, "required")
        assert_not_written(tmp_path / "result")
