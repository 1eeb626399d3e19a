"""Inputs bound to another model are refused, naming both hashes or the first row that does not match, and
nothing is written; Vela's work folders are safe to share between processes (heliabuild.locks).

The models are real (heliabuild.synth) and so are Vela's outputs (ethos-u-vela runs once per model).
"""

from __future__ import annotations

import json
import multiprocessing
import re
import shutil
from pathlib import Path

import pytest

from heliabuild.errors import FenceError, RunnerError
from heliabuild.fence import rewrite_model_with_fences
from heliabuild.files import sha256_file
from heliabuild.locks import acquire, is_held, release
from heliabuild.model import load_model, save_model
from heliabuild.planning import plan_fences
from heliabuild.runner.freeze import build_runner
from heliabuild.synth import chain_network, residual_network
from heliabuild.vela import compile as vela_compile
from heliabuild.vela import read_per_layer
from heliabuild.vela.binding import compilation_mismatch, compiled_per_layer_mismatch, per_layer_mismatch
from heliabuild.vela.run import WORK_MARKER, WORK_MARKER_TEXT


def _pipeline(folder: Path, name: str, network, fences: list[int]) -> dict[str, Path]:
    """A model, its fenced model and sidecar, Vela's outputs for both, and an AOT plan of the fenced one."""
    from heliabuild.aot.stage import write_plan

    folder.mkdir(parents=True)
    model = folder / f"{name}.tflite"
    save_model(network, model)
    fenced = folder / f"{name}_fenced.tflite"
    sidecar = Path(rewrite_model_with_fences(model, fences).save(fenced))
    unfenced = vela_compile(model, folder / "unfenced")
    compiled = vela_compile(fenced, folder)
    plan = write_plan(compiled.model, folder, name, "corstone300_ethos_u55", None, compiled.per_layer_csv).plan
    return {
        "model": model,
        "fenced": fenced,
        "sidecar": sidecar,
        "vela_model": Path(compiled.model),
        "per_layer": Path(compiled.per_layer_csv),
        "segments": Path(compiled.segments_json),
        "unfenced_per_layer": Path(unfenced.per_layer_csv),
        "plan": plan,
    }


@pytest.fixture(scope="module")
def kws(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return _pipeline(tmp_path_factory.mktemp("bindings") / "kws", "kws", chain_network(0), [3, 6])


@pytest.fixture(scope="module")
def resnet(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return _pipeline(tmp_path_factory.mktemp("bindings") / "resnet", "resnet", residual_network(0), [5, 11])


def _runner(out: Path, inputs: dict[str, Path], **replaced: Path) -> Path:
    given = {key: inputs[key] for key in ("sidecar", "vela_model", "segments")} | {"aot_plan": inputs["plan"]}
    return build_runner(out, model=inputs["fenced"], policy=None, **(given | replaced))


# --- the bindings hold for the stages' own inputs -------------------------------------------------------------------


def test_each_stage_accepts_its_own_inputs(kws: dict[str, Path], resnet: dict[str, Path], tmp_path: Path) -> None:
    for inputs in (kws, resnet):
        compiled, fenced = load_model(inputs["vela_model"]), load_model(inputs["fenced"])
        assert compiled_per_layer_mismatch(compiled, read_per_layer(inputs["per_layer"])) is None
        assert per_layer_mismatch(fenced, read_per_layer(inputs["per_layer"])) is None
        assert per_layer_mismatch(load_model(inputs["model"]), read_per_layer(inputs["unfenced_per_layer"])) is None
        assert compilation_mismatch(fenced, compiled) is None
        segments = json.loads(inputs["segments"].read_text(encoding="utf-8"))
        assert segments["compiled_sha256"] == sha256_file(inputs["vela_model"])
    runner_json = _runner(tmp_path / "runner", kws)
    document = json.loads(runner_json.read_text(encoding="utf-8"))
    assert document["inputs"]["aot_plan"]["sha256"] == sha256_file(kws["plan"])


# --- runner: --aot-plan and --vela-model of another model -------------------------------------------------------------


def test_the_runner_refuses_an_aot_plan_of_another_model_naming_both_hashes(
    kws: dict[str, Path], resnet: dict[str, Path], tmp_path: Path
) -> None:
    out = tmp_path / "runner"
    with pytest.raises(RunnerError) as caught:
        _runner(out, kws, aot_plan=resnet["plan"])
    plan_hash = json.loads(resnet["plan"].read_text(encoding="utf-8"))["model"]["sha256"]
    assert caught.value.message == (
        f"{resnet['plan']}: model.sha256 is {plan_hash!r}, but kws_fenced_vela.tflite has sha256 "
        f"{sha256_file(kws['vela_model'])}: the plan was made for another model"
    )
    assert not out.exists()


def test_the_runner_refuses_an_aot_plan_of_the_model_instead_of_the_vela_model(
    kws: dict[str, Path], tmp_path: Path
) -> None:
    from heliabuild.aot.stage import write_plan

    plan = write_plan(kws["fenced"], tmp_path, "own", "corstone300_ethos_u55").plan
    with pytest.raises(RunnerError, match=f"but kws_fenced_vela.tflite has sha256 {sha256_file(kws['vela_model'])}"):
        _runner(tmp_path / "runner", kws, aot_plan=plan)
    assert not (tmp_path / "runner").exists()


def test_the_runner_refuses_a_vela_model_of_another_model_naming_both_hashes(
    kws: dict[str, Path], resnet: dict[str, Path], tmp_path: Path
) -> None:
    out = tmp_path / "runner"
    with pytest.raises(RunnerError) as caught:
        _runner(out, kws, vela_model=resnet["vela_model"])
    recorded = json.loads(kws["segments"].read_text(encoding="utf-8"))["compiled_sha256"]
    assert caught.value.message == (
        f"{resnet['vela_model']}: sha256 is {sha256_file(resnet['vela_model'])}, but {kws['segments']} records "
        f"compiled_sha256 {recorded} for the model kws_fenced.tflite: the Vela model is the compilation of "
        "another model"
    )
    assert not out.exists()


def test_without_segments_the_vela_model_is_bound_by_the_names_vela_keeps(
    kws: dict[str, Path], resnet: dict[str, Path], tmp_path: Path
) -> None:
    out = tmp_path / "runner"
    with pytest.raises(RunnerError) as caught:
        build_runner(out, model=kws["fenced"], policy=None, sidecar=kws["sidecar"], vela_model=resnet["vela_model"])
    assert caught.value.message == (
        f"{resnet['vela_model']}: not Vela's compilation of the model kws_fenced.tflite: operator 1 of the compiled "
        "model (ETHOS_U_STREAM_SPLIT writing ['conv2d_4/BiasAdd/stream_split']) is no operator of the model after the "
        "previous CPU operator"
    )
    assert not out.exists()
    # the unfenced model's compilation has the model's graph inputs and outputs, but not its fences
    unfenced = kws["unfenced_per_layer"].with_name("kws_vela.tflite")
    with pytest.raises(RunnerError, match="the compiled model's fences write \\[\\], but the model's fences write"):
        build_runner(out, model=kws["fenced"], policy=None, sidecar=kws["sidecar"], vela_model=unfenced)
    assert not out.exists()


# --- aot-plan --vela-per-layer of another model ----------------------------------------------------------------------


def test_aot_plan_refuses_another_models_per_layer_csv_naming_the_first_row(
    kws: dict[str, Path], resnet: dict[str, Path], tmp_path: Path
) -> None:
    from heliabuild.aot.stage import StageInputError, write_plan

    write_plan(kws["vela_model"], tmp_path, "kws", "corstone300_ethos_u55")  # an earlier run's outputs: removed
    assert sorted(p.name for p in tmp_path.iterdir()) == ["kws_plan.json", "kws_report.json"]
    with pytest.raises(StageInputError) as caught:
        write_plan(kws["vela_model"], tmp_path, "kws", "corstone300_ethos_u55", None, resnet["per_layer"])
    rows = read_per_layer(resnet["per_layer"])
    first_npu_run_end = next(row.index for row in rows if row.target == "CPU")
    assert caught.value.message == (
        f"{resnet['per_layer']}: not Vela's per-layer CSV of {kws['vela_model']}: rows 1 to {first_npu_run_end} "
        "(one command stream) name no tensor 'depthwise_conv2d_1/Relu', which operator 0 (ethos-u) of the "
        "compiled model writes"
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_aot_plan_refuses_the_unfenced_models_csv_for_the_fenced_compiled_model(
    kws: dict[str, Path], tmp_path: Path
) -> None:
    from heliabuild.aot.stage import StageInputError, write_plan

    with pytest.raises(StageInputError, match=re.escape("the rows end before operator 1 (ETHOS_U_STREAM_SPLIT")):
        write_plan(kws["vela_model"], tmp_path, "kws", "corstone300_ethos_u55", None, kws["unfenced_per_layer"])
    assert sorted(p.name for p in tmp_path.iterdir()) == []


# --- plan-fences given the fenced model's CSV for the unfenced model ------------------------------------------------


@pytest.mark.parametrize("min_coverage", [1.0, 0.0])
def test_plan_fences_refuses_the_fenced_models_csv_naming_the_first_fence_row(
    kws: dict[str, Path], min_coverage: float
) -> None:
    rows = read_per_layer(kws["per_layer"])
    fence_row = next(row for row in rows if row.target == "CPU")
    with pytest.raises(FenceError) as caught:
        plan_fences(kws["model"], kws["per_layer"], 30000, min_coverage)
    assert caught.value.message == (
        f"{kws['per_layer']}: not Vela's per-layer estimate of {kws['model']}: row {fence_row.index + 1} "
        f"(CPU Custom {fence_row.name!r}) names no operator output of the model after the previous CPU row's"
    )


# --- work folders shared by processes ----------------------------------------------------------------------------


def test_a_lock_is_held_until_released_and_a_removed_lock_file_is_not_shared(tmp_path: Path) -> None:
    path = tmp_path / ".x.lock"
    assert not is_held(path)
    descriptor = acquire(path)
    context = multiprocessing.get_context("spawn")
    with context.Pool(1) as pool:
        assert pool.apply(is_held, (path,)) is True
        release(descriptor, path)
        assert not path.exists()
        assert pool.apply(is_held, (path,)) is False


def _compile_in(model: str, out: str) -> str:
    return sha256_file(vela_compile(model, out).model)


def test_two_compiles_at_once_into_one_folder_both_succeed_and_a_stale_work_folder_goes(
    kws: dict[str, Path], tmp_path: Path
) -> None:
    out = tmp_path / "out"
    model = shutil.copy(kws["model"], tmp_path / "kws.tflite")
    stale = out / ".kws.vela-killed1"  # what a killed run leaves: heliabuild's marker, a lock no one holds
    stale.mkdir(parents=True)
    (stale / WORK_MARKER).write_bytes(WORK_MARKER_TEXT)
    (stale / ".lock").write_bytes(b"")
    (stale / "kws_vela.tflite").write_bytes(b"half")
    unmarked = out / ".kws.vela-mynotes"  # the name of a work folder, but no marker: the user's
    (unmarked / ".lock").parent.mkdir()
    (unmarked / ".lock").write_bytes(b"")
    forged = out / ".kws.vela-forged1"  # a marker that is not heliabuild's text
    forged.mkdir()
    (forged / WORK_MARKER).write_bytes(b"not the marker\n")
    not_ours = [out / ".kws.vela-Other.Name", out / "kws.vela-x"]
    for folder in not_ours:
        folder.mkdir()
    not_ours += [unmarked, forged]
    # a live work folder of another process: its lock is held, so no compile removes it
    live = out / ".kws.vela-live0001"
    live.mkdir()
    (live / WORK_MARKER).write_bytes(WORK_MARKER_TEXT)
    held = acquire(live / ".lock")
    try:
        context = multiprocessing.get_context("spawn")
        with context.Pool(2) as pool:
            hashes = pool.starmap(_compile_in, [(str(model), str(out))] * 2)
        assert hashes[0] == hashes[1] == sha256_file(kws["unfenced_per_layer"].with_name("kws_vela.tflite"))
        assert live.is_dir() and (live / ".lock").exists()
    finally:
        release(held, live / ".lock")
    assert not stale.exists()
    assert all(folder.is_dir() for folder in not_ours)
    assert sorted(p.name for p in out.iterdir() if p.name.startswith(".")) == sorted(
        [".kws.vela-Other.Name", forged.name, unmarked.name, live.name]
    )


def test_a_stateful_model_s_csv_binds_though_vela_writes_its_initialization_subgraph_s_rows(
    kws: dict[str, Path], tmp_path: Path
) -> None:
    """The synthetic counter (CALL_ONCE, VAR_HANDLE, ASSIGN_VARIABLE; float, so its main subgraph stays on the
    CPU): Vela's per-layer CSV holds the rows of the `init` subgraph, one of them named `placeholder-for-...`.
    Both belong to the model; the CSV of another model is still refused."""
    from heliabuild.aot.stage import write_plan
    from heliabuild.synth import synthesize

    save_model(synthesize("counter"), tmp_path / "counter.tflite")
    compiled = vela_compile(tmp_path / "counter.tflite", tmp_path / "vela")
    rows = read_per_layer(compiled.per_layer_csv)
    assert {row.name for row in rows} >= {"init/counter_handle"}
    assert any(row.name.startswith("placeholder-for-") for row in rows)
    model = load_model(tmp_path / "counter.tflite")
    assert per_layer_mismatch(model, rows) is None
    assert per_layer_mismatch(load_model(compiled.model), rows) is None
    write_plan(compiled.model, tmp_path / "plan", "ctr", "corstone300_ethos_u55", None, compiled.per_layer_csv)
    other = per_layer_mismatch(model, read_per_layer(kws["per_layer"]))  # its fences' CPU rows name nothing here
    assert other is not None and "names no operator output of the model" in other
