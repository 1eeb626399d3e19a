"""NaN and Infinity are not JSON: in a fence plan, a sidecar, segments.json, runner.json or an AOT config each
is refused with one error naming the file and the field that holds it, as every other bad value is; an AOT
config whose JSON value is `null` is refused (an empty file is the default configuration)."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path

import pytest
from helpers.checks import assert_one_line_error

from heliabuild.aot.config import load_config
from heliabuild.errors import HeliaError
from heliabuild.fence import load_plan, load_sidecar, rewrite_model_with_fences
from heliabuild.model import save_model
from heliabuild.runner.freeze import build_runner, load_runner
from heliabuild.synth import chain_network
from heliabuild.vela import compile as vela_compile


@pytest.fixture(scope="module")
def documents(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Real documents of each kind, made by heliabuild from the synthetic chain."""
    from heliabuild.planning import plan_fences

    folder = tmp_path_factory.mktemp("nan")
    save_model(chain_network(0), folder / "chain.tflite")
    sidecar = rewrite_model_with_fences(folder / "chain.tflite", [3, 6]).save(folder / "chain_fenced.tflite")
    vela = vela_compile(folder / "chain_fenced.tflite", folder / "vela")
    unfenced = vela_compile(folder / "chain.tflite", folder / "vela-unfenced")
    plan = plan_fences(folder / "chain.tflite", unfenced.per_layer_csv, budget_cycles=100)
    (folder / "plan.json").write_text(json.dumps(plan.to_json()))
    runner = build_runner(folder / "runner", model=folder / "chain_fenced.tflite", policy=None, sidecar=sidecar)
    (folder / "config.json").write_text(json.dumps({"operators": [{"index": 2, "knobs": {"a": "b"}}]}))
    return {
        "fenced": folder / "chain_fenced.tflite",
        "plan": folder / "plan.json",
        "sidecar": Path(sidecar),
        "segments": Path(vela.segments_json),
        "runner": runner,
        "config": folder / "config.json",
    }


def _with(path: Path, field: str, literal: str, folder: Path) -> Path:
    """A copy of the JSON document `path` in `folder` (same name) whose first number at key `field` is `literal`."""
    text, count = re.subn(rf'("{field}": )-?\d+(\.\d+)?', rf"\g<1>{literal}", path.read_text(), count=1)
    assert count == 1, field
    copy = folder / path.name
    copy.write_text(text)
    return copy


@pytest.mark.parametrize("literal", ["NaN", "Infinity", "-Infinity"])
def test_a_nan_in_a_fence_plan_is_refused_naming_after_op(documents, tmp_path: Path, literal: str) -> None:
    with pytest.raises(HeliaError, match=r"plan.json: fences\[0\]\.after_op: (nan|inf|-inf) is not a finite number"):
        load_plan(_with(documents["plan"], "after_op", literal, tmp_path))


def test_a_nan_in_a_sidecar_is_refused_naming_num_segments(documents, tmp_path: Path) -> None:
    with pytest.raises(HeliaError, match=r"fenced_boundaries.json: num_segments: nan is not a finite number"):
        load_sidecar(_with(documents["sidecar"], "num_segments", "NaN", tmp_path))


def test_a_nan_in_segments_json_is_refused_by_the_runner_naming_op_range_end(cli, documents, tmp_path: Path) -> None:
    segments = _with(documents["segments"], "op_range_end", "NaN", tmp_path)
    result = cli("runner", "--model", documents["fenced"], "--segments", segments, "-o", tmp_path / "r")
    assert_one_line_error(result, "segments.json", ".op_range_end: nan is not a finite number")


def test_a_nan_in_runner_json_is_refused_naming_measured_invokes(documents, tmp_path: Path) -> None:
    folder = documents["runner"].parent
    copy = tmp_path / "runner"
    copy.mkdir()
    for path in folder.iterdir():
        (copy / path.name).write_bytes(path.read_bytes())
    _with(folder / "runner.json", "measured_invokes", "NaN", copy)
    with pytest.raises(HeliaError, match=r"runner.json: policy\.measured_invokes: nan is not a finite number"):
        load_runner(copy)


def test_a_nan_in_an_aot_config_is_refused_naming_the_field(documents, tmp_path: Path) -> None:
    with pytest.raises(HeliaError, match=r"config.json: operators\[0\]\.index: nan is not a finite number"):
        load_config(_with(documents["config"], "index", "NaN", tmp_path))


@pytest.mark.parametrize("text", ["null", " null\n"])
def test_a_null_aot_config_is_refused(tmp_path: Path, text: str) -> None:
    (tmp_path / "config.json").write_text(text)
    with pytest.raises(HeliaError, match=r"config.json: the configuration is null"):
        load_config(tmp_path / "config.json")


@pytest.mark.parametrize("text", ["null\n", "~\n", "---\n"])
def test_a_null_yaml_aot_config_is_refused_and_an_empty_one_is_the_default(tmp_path: Path, text: str) -> None:
    (tmp_path / "config.yaml").write_text(text)
    with pytest.raises(HeliaError, match=r"config.yaml: the configuration is null"):
        load_config(tmp_path / "config.yaml")
    (tmp_path / "empty.yaml").write_text("# only a comment\n\n")
    (tmp_path / "empty.json").write_text("")
    default = replace(load_config(tmp_path / "empty.json"), source="")
    assert replace(load_config(tmp_path / "empty.yaml"), source="") == default
