"""`heliabuild runner`, `run`, `run-build`, `show` and `export` on real models: the synthetic chain fenced
with heliabuild.fence and its Vela segments from heliabuild.vela.compile; bad input exits 2 with one line
and writes nothing."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest
from helpers.checks import assert_not_written, assert_one_line_error

from heliabuild.api import acquisition_facts, load_result, measurement_samples
from heliabuild.fence import rewrite_model_with_fences
from heliabuild.model import save_model
from heliabuild.runner.freeze import MODEL_FILE, RUNNER_FILE, SEGMENTS_FILE, SIDECAR_FILE
from heliabuild.scons import runner as scons_runner
from heliabuild.synth import chain_network
from heliabuild.vela import compile

POLICY = "defaults:\n  fvp:\n    acquisition: {state: carry, warmup_invokes: 1, measured_invokes: 3}\n"


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A fenced synthetic chain (fences after 3 and 6), its sidecar, Vela's outputs and a policy file."""
    folder = tmp_path_factory.mktemp("cli_runner")
    model = folder / "chain.tflite"
    save_model(chain_network(0), model)
    fenced = folder / "chain_fenced.tflite"
    sidecar = rewrite_model_with_fences(model, [3, 6]).save(fenced)
    vela = compile(fenced, folder / "vela")
    policy = folder / "policy.yaml"
    policy.write_text(POLICY, encoding="utf-8")
    return {
        "model": model,
        "fenced": fenced,
        "sidecar": Path(sidecar),
        "vela_model": Path(vela.model),
        "segments": Path(vela.segments_json),
        "policy": policy,
    }


def runner_args(inputs: dict[str, Path], output: Path) -> list[object]:
    return [
        "runner",
        "--model",
        inputs["fenced"],
        "--sidecar",
        inputs["sidecar"],
        "--vela-model",
        inputs["vela_model"],
        "--segments",
        inputs["segments"],
        "--policy",
        inputs["policy"],
        "-o",
        output,
    ]


@pytest.fixture(scope="module")
def bundle(inputs: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(runner.json, result folder) built through the library calls the CLI makes."""
    from heliabuild.cli import main

    folder = tmp_path_factory.mktemp("bundle")
    assert main([str(a) for a in runner_args(inputs, folder / "runner")]) == 0
    assert main(["run", str(folder / "runner" / RUNNER_FILE), "-o", str(folder / "result")]) == 0
    return folder / "runner" / RUNNER_FILE, folder / "result"


def test_runner_then_run_write_a_verified_bundle(cli, inputs: dict[str, Path], tmp_path: Path) -> None:
    result = cli(*runner_args(inputs, tmp_path / "runner"))
    assert result.code == 0, result.err
    runner_json = tmp_path / "runner" / RUNNER_FILE
    assert result.out == f"heliabuild: runner {runner_json}\n"
    assert sorted(p.name for p in (tmp_path / "runner").iterdir()) == sorted(
        [RUNNER_FILE, MODEL_FILE, SIDECAR_FILE, SEGMENTS_FILE]
    )
    document = json.loads(runner_json.read_text(encoding="utf-8"))
    assert document["policy"]["measured_invokes"] == 3 and document["policy"]["warmup_invokes"] == 1
    assert document["inputs"]["vela_model"]["file"] == inputs["vela_model"].name

    ran = cli("run", runner_json, "-o", tmp_path / "result")
    assert ran.code == 0, ran.err
    assert ran.out.splitlines() == [
        f"heliabuild: run {tmp_path / 'result' / 'result.json'}",
        "heliabuild: run receipt: carry, 1 warmup, 3 measured",
        "heliabuild: run verification: outputs not compared; inputs: zeros",
    ]
    loaded = load_result(tmp_path / "result")
    facts = acquisition_facts(loaded)
    assert facts is not None and facts.warmup_invokes == 1 and facts.measured_invokes == 3
    samples = measurement_samples(loaded)
    assert [s.index for s in samples] == [0, 1, 2]
    assert all(s.cycles is None and s.segment_latency_s is not None and len(s.segment_latency_s) == 3 for s in samples)


def test_run_build_reruns_the_retained_runner_without_rebuilding_it(
    cli, bundle: tuple[Path, Path], tmp_path: Path
) -> None:
    runner_json, _ = bundle
    before = {p.name: p.read_bytes() for p in runner_json.parent.iterdir()}
    result = cli("run-build", runner_json, "-o", tmp_path / "again")
    assert result.code == 0, result.err
    assert result.out.splitlines()[-2] == "heliabuild: run-build receipt: carry, 1 warmup, 3 measured"
    assert {p.name: p.read_bytes() for p in runner_json.parent.iterdir()} == before
    assert load_result(tmp_path / "again").receipt is not None


def test_show_labels_every_sample_and_plots(cli, bundle: tuple[Path, Path], tmp_path: Path) -> None:
    _, result_dir = bundle
    result = cli("show", result_dir, "--plot", tmp_path / "plot.svg")
    assert result.code == 0, result.err
    for label in ("sample 0", "sample 1", "sample 2", "acquisition carry: 1 warmup, 3 measured", "segments"):
        assert label in result.out
    assert result.out.splitlines()[-1] == f"heliabuild: plot {tmp_path / 'plot.svg'}"
    svg = (tmp_path / "plot.svg").read_text(encoding="utf-8")
    assert svg.startswith("<?xml") and "<svg" in svg and "measured (host time, LiteRT, n=3): per sample" in svg


def test_export_samples_and_statistics(cli, bundle: tuple[Path, Path]) -> None:
    _, result_dir = bundle
    rows = list(csv.DictReader(io.StringIO(cli("export", result_dir, "--fields", "samples", "--format", "csv").out)))
    assert [row["index"] for row in rows] == ["0", "1", "2"]
    assert rows[0]["cycles_total"] == "" and all(rows[0][f"cycles_segment_{k}"] == "" for k in range(3))
    latencies = [float(rows[0][f"segment_latency_s_{k}"]) for k in range(3)]
    assert float(rows[0]["latency_s"]) == pytest.approx(sum(latencies), rel=1e-12)
    assert (result_dir / "run_summary.csv").read_text(encoding="utf-8") == cli(
        "export", result_dir, "--fields", "samples", "--format", "csv"
    ).out
    statistics = json.loads(cli("export", result_dir, "--fields", "statistics", "--format", "json").out)
    assert statistics["counters"]["cycles.total"] is None
    assert statistics["float"]["latency_s"]["count"] == 3
    samples = json.loads(cli("export", result_dir, "--fields", "samples", "--format", "json").out)
    assert len(samples) == 3
    table = cli("export", result_dir, "--format", "csv").out
    assert table.splitlines()[0].startswith("metric,kind,count")


def test_bad_policy_exits_2_with_one_line_and_writes_nothing(cli, inputs: dict[str, Path], tmp_path: Path) -> None:
    policy = tmp_path / "bad.yaml"
    policy.write_text("defaults:\n  fvp:\n    acquisition: {state: single, warmup_invokes: 2}\n", encoding="utf-8")
    args = runner_args(inputs, tmp_path / "runner")
    args[args.index("--policy") + 1] = policy
    result = cli(*args)
    assert_one_line_error(result, "bad.yaml", "warmup_invokes")
    assert_not_written(tmp_path / "runner")


def test_a_sidecar_of_another_model_exits_2(cli, inputs: dict[str, Path], tmp_path: Path) -> None:
    args = runner_args(inputs, tmp_path / "runner")
    args[args.index("--model") + 1] = inputs["model"]  # the unfenced model: the sidecar is not its own
    result = cli(*args)
    assert_one_line_error(result, "fenced_sha256")
    assert_not_written(tmp_path / "runner")


def test_a_changed_runner_file_is_refused_by_run(cli, bundle: tuple[Path, Path], tmp_path: Path) -> None:
    runner_json, _ = bundle
    copy = tmp_path / "runner"
    copy.mkdir()
    for path in runner_json.parent.iterdir():
        (copy / path.name).write_bytes(path.read_bytes())
    (copy / MODEL_FILE).write_bytes((copy / MODEL_FILE).read_bytes() + b"\0")
    for command in ("run", "run-build"):
        result = cli(command, copy / RUNNER_FILE, "-o", tmp_path / "result")
        assert_one_line_error(result, "sha256", "rebuild the runner")
        assert_not_written(tmp_path / "result")


def test_an_earlier_runner_format_is_refused(cli, bundle: tuple[Path, Path], tmp_path: Path) -> None:
    runner_json, _ = bundle
    old = tmp_path / RUNNER_FILE
    document = json.loads(runner_json.read_text(encoding="utf-8"))
    old.write_text(json.dumps({**document, "format": 1}), encoding="utf-8")
    result = cli("run", old, "-o", tmp_path / "result")
    assert_one_line_error(result, "runner format 1 is not supported; rebuild the runner")
    assert_not_written(tmp_path / "result")


def test_show_and_export_refuse_a_tampered_bundle(cli, bundle: tuple[Path, Path], tmp_path: Path) -> None:
    _, result_dir = bundle
    copy = tmp_path / "bundle"
    for path in result_dir.rglob("*"):
        if path.is_file():
            (copy / path.relative_to(result_dir)).parent.mkdir(parents=True, exist_ok=True)
            (copy / path.relative_to(result_dir)).write_bytes(path.read_bytes())
    with open(copy / "run_summary.csv", "a", encoding="utf-8") as handle:
        handle.write("9,,,,,,\n")
    assert_one_line_error(cli("show", copy, "--plot", tmp_path / "p.svg"), "run_summary.csv")
    assert_not_written(tmp_path / "p.svg")
    assert_one_line_error(cli("export", copy, "--fields", "samples", "--format", "csv"), "run_summary.csv")


def test_bad_arguments_exit_2(cli, bundle: tuple[Path, Path], tmp_path: Path) -> None:
    _, result_dir = bundle
    assert_one_line_error(cli("export", result_dir, "--format", "xml"), "--format")
    assert_one_line_error(cli("runner", "--model", tmp_path / "missing.tflite", "-o", tmp_path / "r"), "missing")
    assert_not_written(tmp_path / "r")
    assert_one_line_error(cli("run", tmp_path / "missing.json", "-o", tmp_path / "x"), "missing.json")
    assert_not_written(tmp_path / "x")


def test_the_scons_wiring_restates_the_library_names() -> None:
    from heliabuild.results import bundle, receipt
    from heliabuild.runner import freeze

    assert (scons_runner.RUNNER_FILE, scons_runner.MODEL_FILE) == (freeze.RUNNER_FILE, freeze.MODEL_FILE)
    assert (scons_runner.SIDECAR_FILE, scons_runner.SEGMENTS_FILE) == (freeze.SIDECAR_FILE, freeze.SEGMENTS_FILE)
    assert scons_runner.INPUTS_DIR == freeze.INPUTS_DIR
    assert (scons_runner.RESULT_FILE, scons_runner.MANIFEST_FILE) == (bundle.RESULT_FILE, bundle.MANIFEST_FILE)
    assert scons_runner.SUMMARY_FILE == bundle.SUMMARY_FILE
    assert scons_runner.RECEIPT_FILE == receipt.RECEIPT_PATH
    from heliabuild.fvp import aot_firmware
    from heliabuild.runner.backends import fvp_prebuilt as fvp
    from heliabuild.scons import fvp as scons_fvp

    assert scons_fvp.COMPILED_FILE == fvp.COMPILED_FILE
    assert scons_fvp.AOT_FILES == (aot_firmware.ELF_FILE, aot_firmware.LAYOUT_FILE)
