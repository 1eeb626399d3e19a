"""The fvp backend against a FAKE FVP (tests/helpers/fake_fvp.py, a test double put on PATH) and the real
prebuilt runner that `mlia-ethos-u` ships (its path and hash; no FVP runs it here)."""

from __future__ import annotations

import csv
import importlib.metadata
import io
import json
import os
from pathlib import Path

import pytest
from conftest import require_prebuilt_runner
from helpers.checks import assert_one_line_error
from helpers.fvp_models import compiled_residual

from heliabuild.api import acquisition_facts, load_result
from heliabuild.errors import FvpError, RunnerError
from heliabuild.files import sha256_bytes
from heliabuild.runner.freeze import build_runner, load_runner
from heliabuild.runner.lifecycle import run_runner
from heliabuild.synth import residual_network


@pytest.fixture(autouse=True)
def _prebuilt_runner() -> None:
    require_prebuilt_runner()


POLICY = {"defaults": {"fvp": {"acquisition": {"state": "single", "warmup_invokes": 0, "measured_invokes": 1}}}}
CASES = {  # target choice -> (accelerator, executable)
    "corstone-300": ("ethos-u55-128", "FVP_Corstone_SSE-300_Ethos-U55"),
    "corstone-300/ethos-u65-256": ("ethos-u65-256", "FVP_Corstone_SSE-300_Ethos-U65"),
    "corstone-310": ("ethos-u55-64", "FVP_Corstone_SSE-310"),
    "corstone-320": ("ethos-u85-256", "FVP_Corstone_SSE-320"),
}


_compiled = compiled_residual


def _build(out: Path, inputs: dict[str, Path], **options: object) -> Path:
    return build_runner(
        out,
        model=inputs["model"],
        policy=options.pop("policy", POLICY),
        sidecar=inputs["sidecar"],
        vela_model=inputs["vela"],
        segments=inputs["segments"],
        backend="fvp",
        **options,
    )


@pytest.mark.parametrize("code_byte", ["1", "0"], ids=["code-byte-after-eot", "no-code-byte"])
@pytest.mark.parametrize("choice", sorted(CASES))
def test_good_run_publishes_per_segment_counters(
    tmp_path: Path,
    tmp_path_factory: pytest.TempPathFactory,
    fake_fvp: Path,
    monkeypatch: pytest.MonkeyPatch,
    choice: str,
    code_byte: str,
) -> None:
    """The FAKE FVP prints the prebuilt runner's log as the shipped AXF does (tests/helpers/fake_fvp.py), with and
    without the exit-code byte after EOT."""
    monkeypatch.setenv("FAKE_FVP_CODE_BYTE", code_byte)
    accelerator, executable = CASES[choice]
    inputs = _compiled(tmp_path_factory, accelerator)
    runner_json = _build(tmp_path / "runner", inputs, fvp_target=choice)
    runner = load_runner(runner_json)
    section = runner.document["fvp"]
    assert section["target"]["executable"] == executable
    assert section["target"]["accelerator"] == accelerator
    assert [entry["command_streams"] for entry in section["segments"]] == [1, 1, 1]
    assert not any(os.sep in part and part.startswith(os.sep) for part in section["command"])  # no machine path
    # The firmware is the real prebuilt runner mlia-ethos-u ships: its distribution path and its bytes.
    distribution = importlib.metadata.distribution("mlia-ethos-u")
    firmware = section["firmware"]
    assert firmware["source"] == "mlia-ethos-u" and firmware["package_version"] == distribution.version
    assert firmware["file"].endswith("/mlek_inference_runner.axf") and "-tflm-ethos-" in firmware["file"]
    runner_file = Path(str(distribution.locate_file(firmware["file"])))
    assert sha256_bytes(runner_file.read_bytes()) == firmware["sha256"]

    # The runner holds Vela's compiled model, not the sub-models: its files do not depend on the segment count.
    assert sorted(runner.document["files"]) == [
        "fvp/model_vela.tflite",
        "model.fenced_boundaries.json",
        "model.tflite",
        "segments.json",
    ]
    assert (runner.folder / "fvp" / "model_vela.tflite").read_bytes() == inputs["vela"].read_bytes()
    assert runner.document["inputs"]["vela_model"] == {
        "file": "fvp/model_vela.tflite",
        "sha256": sha256_bytes(inputs["vela"].read_bytes()),
        "copied": True,
    }

    result_json = run_runner(runner_json, tmp_path / "result")
    result = load_result(result_json.parent)  # the reader verifies the bundle
    sizes = [entry["bytes"] for entry in section["segments"]]
    # each job ran the sub-model runner.json records, cut into a temporary folder that is gone after the run
    ran = (fake_fvp.parent / "fake-fvp-models.txt").read_text().split()
    assert sorted(ran) == sorted(entry["sha256"] for entry in section["segments"])
    jobs = [json.loads(line) for line in fake_fvp.read_text().splitlines() if "--data" in line]
    models = [Path(job[job.index("--data") + 1].rsplit("@", 1)[0]) for job in jobs]
    assert sorted(path.name for path in models) == [f"segment_{k}.tflite" for k in range(3)]
    assert not any(path.exists() or runner.folder in path.parents for path in models)
    for path in result_json.parent.rglob("*"):  # no path of the temporary folder or this machine in the bundle
        assert not path.is_file() or str(models[0].parent).encode() not in path.read_bytes()
        assert not path.is_file() or str(tmp_path).encode() not in path.read_bytes()
    (sample,) = result.samples
    assert sample.cycles == {"total": sum(sizes), "segments": sizes}
    fractions = 4 if accelerator.startswith("ethos-u85") else 3
    beats = [sum(size // (k + 2) for k in range(fractions)) for size in sizes]
    assert sample.segment_traffic_beats == beats and sample.traffic_beats == sum(beats)
    statistics = result.statistics
    assert statistics is not None and statistics.counters["segment_traffic_beats.2"] is not None
    assert sample.sanity == {"outputs_finite": True, "counter_overflow": False}
    document = json.loads(result_json.read_text())
    assert document["runtime"] == "tflm" and document["scopes"]["cycles"] == "npu_callbacks"
    assert document["provider_versions"][executable] == "11.27.25"  # fake_fvp.VERSION: `Fast Models [11.27.25 (...)]`
    assert document["provider_versions"]["mlia-ethos-u"] == distribution.version
    facts = acquisition_facts(result)
    assert facts is not None and facts.counter_scope == "npu_callbacks"
    from heliabuild.results.export import export
    from heliabuild.results.show import show

    assert "segment_traffic_beats.0" in show(result_json.parent)
    assert json.loads(export(result_json.parent, fields="samples", fmt="json"))[0]["segment_traffic_beats"] == beats
    (row,) = csv.DictReader(io.StringIO((result_json.parent / "run_summary.csv").read_text()))
    assert row["traffic_beats_total"] == str(sum(beats))
    assert [row[f"traffic_beats_segment_{k}"] for k in range(3)] == [str(b) for b in beats]
    calls = [json.loads(line) for line in fake_fvp.read_text().splitlines()]
    assert sum(1 for call in calls if call[1:] != ["--version"]) == 3  # one job per segment


FAULTS = {  # FAKE_FVP_SCENARIO -> (the error's words, whether the reader does not know the log and keeps it)
    "exit-1": ("segment 0 (FVP_Corstone_SSE-300_Ethos-U55): the FVP exited with status 1 after a complete log", False),
    "error": ("segment 0 (FVP_Corstone_SSE-300_Ethos-U55): the runner failed: 'ERROR - Inference failed.'", False),
    "mismatch": ("NPU config mismatch, compiled for 256 MACs, the FVP has 128", False),
    "no-metrics": ("the runner ended but printed no 'INFO - <metrics>...</metrics>' line", True),
    "missing-metric": ("<metrics> lacks NPU ACTIVE", True),
    "count-mismatch": ("the UART log holds 2 <metrics> blocks", False),
    "garbage": ("the UART log shows no ending heliabuild reads", True),
    "no-eot": ("the FVP stopped the simulation: CPU time has been exceeded (a time limit)", False),
    "hang": ("the FVP did not finish within its wall-clock bound and was stopped", False),
    "cut": ("the UART log holds no EOT (0x04): the firmware did not end", True),
}


def _alive(pids: Path) -> list[int]:
    alive = []
    for pid in map(int, pids.read_text().split()):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            continue
        alive.append(pid)
    return alive


@pytest.mark.parametrize("scenario", sorted(FAULTS))
def test_each_fault_is_one_error_nothing_published_nothing_running(
    tmp_path: Path,
    tmp_path_factory: pytest.TempPathFactory,
    fake_fvp: Path,
    monkeypatch: pytest.MonkeyPatch,
    scenario: str,
) -> None:
    """The FAKE FVP prints the prebuilt runner's log (tests/helpers/fake_fvp.py) with one fault each."""
    runner_json = _build(tmp_path / "runner", _compiled(tmp_path_factory, "ethos-u55-128"), fvp_timelimit_s=1)
    monkeypatch.setenv("FAKE_FVP_SCENARIO", scenario)
    monkeypatch.setenv("FAKE_FVP_COMPILED_MACS", "256")
    monkeypatch.setenv("FAKE_FVP_PIDS", str(tmp_path / "pids.txt"))
    with pytest.raises(FvpError) as caught:
        run_runner(runner_json, tmp_path / "result", timeout_s=3 if scenario == "hang" else None)
    message, kept = FAULTS[scenario]
    assert message in caught.value.message
    assert caught.value.message.count("\n") == 0
    assert not (tmp_path / "result").exists()
    assert _alive(tmp_path / "pids.txt") == []  # every job's process ended, the hanging ones killed
    jobs = [json.loads(line) for line in fake_fvp.read_text().splitlines() if "--data" in line]
    assert len(jobs) == 3 and not any(Path(job[job.index("--data") + 1].rsplit("@", 1)[0]).exists() for job in jobs)
    folders = sorted(tmp_path.glob("result.failed-*"))
    if kept:
        (folder,) = folders
        (log,) = folder.iterdir()
        assert caught.value.message.endswith(f"; the UART log is kept in {log}")
        assert log.name in {f"segment_{k}.uart.log" for k in range(3)} and log.stat().st_size > 0
        if scenario == "garbage":  # the bytes the FVP wrote, unmodified (fake_fvp: bytes 5..255, then EOT)
            assert log.read_bytes().startswith(bytes(range(5, 256)) * 4 + b"\x04\x00")
        else:
            assert log.read_bytes().startswith(b"INFO - CPU: Cortex-M55 r0p1\r\n")
    else:
        assert folders == [] and "kept in" not in caught.value.message


def test_a_counter_overflow_publishes_null_counts_flagged(
    tmp_path: Path, tmp_path_factory: pytest.TempPathFactory, fake_fvp: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    runner_json = _build(tmp_path / "runner", _compiled(tmp_path_factory, "ethos-u55-128"))
    monkeypatch.setenv("FAKE_FVP_SCENARIO", "overflow")
    result = load_result(run_runner(runner_json, tmp_path / "result").parent)
    (sample,) = result.samples
    assert (sample.cycles, sample.traffic_beats, sample.segment_traffic_beats) == (None, None, None)
    assert sample.sanity == {"outputs_finite": True, "counter_overflow": True}


def test_refused_accelerator_configs(tmp_path: Path, tmp_path_factory: pytest.TempPathFactory) -> None:
    with pytest.raises(FvpError, match=r"compiled for ethos-u85-256, but corstone-300 runs ethos-u55 or ethos-u65"):
        _build(tmp_path / "a", _compiled(tmp_path_factory, "ethos-u85-256"), fvp_target="corstone-300")
    with pytest.raises(FvpError, match=r"compiled for ethos-u55-256, but FVP target .* runs ethos-u55-128"):
        _build(tmp_path / "b", _compiled(tmp_path_factory, "ethos-u55-256"), fvp_target="corstone-300/ethos-u55-128")
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()


def test_policy_the_prebuilt_runner_cannot_honour(tmp_path: Path, tmp_path_factory: pytest.TempPathFactory) -> None:
    policy = {"defaults": {"fvp": {"acquisition": {"state": "carry", "warmup_invokes": 2, "measured_invokes": 3}}}}
    with pytest.raises(FvpError, match=r"cannot honour warmup_invokes 2 .*measured_invokes 3"):
        _build(tmp_path / "runner", _compiled(tmp_path_factory, "ethos-u55-128"), policy=policy)


def test_missing_fvp_is_one_clear_error(
    tmp_path: Path, tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    runner_json = _build(tmp_path / "runner", _compiled(tmp_path_factory, "ethos-u55-128"))
    monkeypatch.setenv("PATH", str(tmp_path / "nothing-here"))
    monkeypatch.setenv("HELIA_FVP_DIR", str(tmp_path / "no-fvp"))
    with pytest.raises(FvpError, match="FVP_Corstone_SSE-300_Ethos-U55 is not in \\$HELIA_FVP_DIR") as caught:
        run_runner(runner_json, tmp_path / "result")
    assert "install Arm's FVP_Corstone_SSE-300_Ethos-U55" in (caught.value.hint or "")


def test_helia_fvp_dir_finds_the_fvp(
    tmp_path: Path, tmp_path_factory: pytest.TempPathFactory, fake_fvp: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    runner_json = _build(tmp_path / "runner", _compiled(tmp_path_factory, "ethos-u55-128"))
    folder = fake_fvp.parent / "fake-fvp-bin"
    monkeypatch.setenv("PATH", str(tmp_path / "nothing-here"))
    monkeypatch.setenv("HELIA_FVP_DIR", str(folder))
    assert run_runner(runner_json, tmp_path / "result").is_file()


def test_vela_model_and_segments_are_required(tmp_path: Path, tmp_path_factory: pytest.TempPathFactory) -> None:
    inputs = _compiled(tmp_path_factory, "ethos-u55-128")
    with pytest.raises(FvpError, match=r"pass both the Vela model and its segments\.json"):
        build_runner(
            tmp_path / "runner", model=inputs["model"], policy=POLICY, sidecar=inputs["sidecar"], backend="fvp"
        )


def test_changed_prebuilt_runner_is_refused(
    tmp_path: Path, tmp_path_factory: pytest.TempPathFactory, fake_fvp: Path
) -> None:
    runner_json = _build(tmp_path / "runner", _compiled(tmp_path_factory, "ethos-u55-128"))
    document = json.loads(runner_json.read_text())
    document["fvp"]["firmware"]["sha256"] = "0" * 64
    runner_json.write_text(json.dumps(document))
    with pytest.raises((FvpError, RunnerError), match=r"the runner was built with 0{64}"):
        run_runner(runner_json, tmp_path / "result")


def test_cli_runner_and_run(
    tmp_path: Path, tmp_path_factory: pytest.TempPathFactory, fake_fvp: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from heliabuild.cli import main

    inputs = _compiled(tmp_path_factory, "ethos-u85-256")
    policy = tmp_path / "policy.yaml"
    policy.write_text(json.dumps(POLICY))
    arguments = ["runner", "--model", str(inputs["model"]), "--sidecar", str(inputs["sidecar"])]
    arguments += ["--vela-model", str(inputs["vela"]), "--segments", str(inputs["segments"]), "--policy", str(policy)]
    arguments += ["--backend", "fvp", "--fvp-target", "corstone-320", "--fvp-timelimit", "120"]
    assert main([*arguments, "-o", str(tmp_path / "runner")]) == 0
    document = json.loads((tmp_path / "runner" / "runner.json").read_text())
    assert document["fvp"]["timelimit_s"] == 120 and document["fvp"]["command"][-2:] == ["--timelimit", "120"]
    assert "mps4_board.subsystem.ethosu.num_macs=256" in document["fvp"]["command"]
    assert main(["run", str(tmp_path / "runner" / "runner.json"), "-o", str(tmp_path / "result")]) == 0
    assert (tmp_path / "result" / "result.json").is_file()
    other = [*arguments[:-6], "--backend", "fvp", "--fvp-target", "corstone-300", "-o", str(tmp_path / "other")]
    assert main(other) == 2
    assert "corstone-300 runs ethos-u55 or ethos-u65 only" in capsys.readouterr().err


def test_runner_is_byte_identical_across_folders(tmp_path: Path, tmp_path_factory: pytest.TempPathFactory) -> None:
    inputs = _compiled(tmp_path_factory, "ethos-u55-128")
    first = _build(tmp_path / "one" / "runner", inputs).parent
    second = _build(tmp_path / "elsewhere" / "deeper" / "runner", inputs).parent
    files = {path.relative_to(first): path.read_bytes() for path in sorted(first.rglob("*")) if path.is_file()}
    assert files == {path.relative_to(second): path.read_bytes() for path in second.rglob("*") if path.is_file()}
    assert str(tmp_path).encode() not in files[Path("runner.json")]


def _job_count(log: Path) -> int:
    return sum(1 for line in log.read_text().splitlines() if "--data" in line) if log.exists() else 0


def test_a_tampered_compiled_model_is_refused_before_any_job(
    tmp_path: Path, tmp_path_factory: pytest.TempPathFactory, fake_fvp: Path
) -> None:
    runner_json = _build(tmp_path / "runner", _compiled(tmp_path_factory, "ethos-u55-128"))
    compiled = runner_json.parent / "fvp" / "model_vela.tflite"
    data = compiled.read_bytes()
    compiled.write_bytes(data[:-1] + bytes([data[-1] ^ 1]))
    with pytest.raises(RunnerError, match=r"model_vela\.tflite: sha256 is [0-9a-f]{64}, but runner\.json records"):
        run_runner(runner_json, tmp_path / "result")
    assert _job_count(fake_fvp) == 0 and not (tmp_path / "result").exists()


def test_another_compiled_model_with_its_hash_recorded_is_refused_by_the_sub_model_check(
    tmp_path: Path, tmp_path_factory: pytest.TempPathFactory, fake_fvp: Path
) -> None:
    """A runner whose compiled model was swapped for another (Vela's output for another MAC count, the same segment
    count) and whose `files` and `inputs` hashes were edited to match: the sub-models cut from it are not those
    runner.json records, so nothing runs."""
    runner_json = _build(tmp_path / "runner", _compiled(tmp_path_factory, "ethos-u55-128"))
    other = _compiled(tmp_path_factory, "ethos-u55-256")["vela"].read_bytes()
    (runner_json.parent / "fvp" / "model_vela.tflite").write_bytes(other)
    document = json.loads(runner_json.read_text())
    document["files"]["fvp/model_vela.tflite"] = document["inputs"]["vela_model"]["sha256"] = sha256_bytes(other)
    runner_json.write_text(json.dumps(document))
    with pytest.raises(FvpError) as caught:
        run_runner(runner_json, tmp_path / "result")
    assert "fvp.segments[0]: the sub-model of segment 0 cut from fvp/model_vela.tflite is " in caught.value.message
    assert "the runner was changed after it was built" in caught.value.message
    assert caught.value.hint == "rebuild the runner"
    assert _job_count(fake_fvp) == 0 and not (tmp_path / "result").exists()


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda d: d["fvp"]["segments"][2].update(sha256="0" * 64), r"segments\[2\]: .* records segment 2, \d+ bytes"),
        (lambda d: d["fvp"]["segments"][1].update(bytes=1), r"fvp\.segments\[1\]: .* records segment 1, 1 bytes"),
        (lambda d: d["fvp"]["segments"].pop(), r"cuts into 3 segment sub-models, but fvp\.segments records 2"),
        (lambda d: d["inputs"]["vela_model"].update(copied=False), r"holds no copy of Vela's compiled model"),
    ],
)
def test_an_edited_segment_record_is_refused(
    tmp_path: Path, tmp_path_factory: pytest.TempPathFactory, fake_fvp: Path, edit: object, message: str
) -> None:
    runner_json = _build(tmp_path / "runner", _compiled(tmp_path_factory, "ethos-u55-128"))
    document = json.loads(runner_json.read_text())
    edit(document)  # type: ignore[operator]
    runner_json.write_text(json.dumps(document))
    with pytest.raises(FvpError, match=message):
        run_runner(runner_json, tmp_path / "result")
    assert _job_count(fake_fvp) == 0 and not (tmp_path / "result").exists()


def test_the_jobs_run_in_parallel(
    tmp_path: Path, tmp_path_factory: pytest.TempPathFactory, fake_fvp: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each fake job waits until two jobs have started: run one after another, the first would never finish. The
    pool is sized by the CPU count (heliabuild.fvp.launch), which is made 4 here so that the test runs on any
    machine (the waiting jobs need no CPU)."""
    monkeypatch.setattr(os, "cpu_count", lambda: 4)
    runner_json = _build(tmp_path / "runner", _compiled(tmp_path_factory, "ethos-u55-128"))
    (tmp_path / "started").mkdir()
    monkeypatch.setenv("FAKE_FVP_TOGETHER", f"{tmp_path / 'started'}:2")
    result = load_result(run_runner(runner_json, tmp_path / "result").parent)
    assert len(result.samples[0].cycles["segments"]) == 3  # type: ignore[index]
    assert len(list((tmp_path / "started").iterdir())) == 3


CHAINS = {  # --fvp-target -> (Vela's --accelerator-config, the executable)
    "corstone-300": ("ethos-u55-128", "FVP_Corstone_SSE-300_Ethos-U55"),
    "corstone-300/ethos-u65-256": ("ethos-u65-256", "FVP_Corstone_SSE-300_Ethos-U65"),
    "corstone-310": ("ethos-u55-256", "FVP_Corstone_SSE-310"),
    "corstone-320": ("ethos-u85-256", "FVP_Corstone_SSE-320"),
}


@pytest.mark.parametrize("choice", sorted(CHAINS))
def test_the_cli_chain_publishes_verified_bundles_with_and_without_the_code_byte(
    cli, tmp_path: Path, fake_fvp: Path, monkeypatch: pytest.MonkeyPatch, choice: str
) -> None:
    """fence, vela, runner --backend fvp, run and show, as a user types them; the FAKE FVP prints the prebuilt
    runner's log (tests/helpers/fake_fvp.py) with the exit-code byte after EOT, then without it."""
    from heliabuild.fence import sidecar_path_for
    from heliabuild.model import save_model

    accelerator, executable = CHAINS[choice]
    save_model(residual_network(0), tmp_path / "model.tflite")
    fenced = tmp_path / "model_fenced.tflite"
    assert cli("fence", tmp_path / "model.tflite", "-o", fenced, "--after-ops", "1,7").code == 0
    sidecar = sidecar_path_for(fenced)
    vela = cli("vela", fenced, "-o", tmp_path / "vela", "--accelerator-config", accelerator)
    assert vela.code == 0, vela.err
    (tmp_path / "policy.json").write_text(json.dumps(POLICY))
    runner = cli(
        "runner", "--model", fenced, "--sidecar", sidecar, "--policy", tmp_path / "policy.json",
        "--vela-model", next((tmp_path / "vela").glob("*_vela.tflite")),
        "--segments", next((tmp_path / "vela").glob("*_segments.json")),
        "--backend", "fvp", "--fvp-target", choice, "-o", tmp_path / "runner",
    )  # fmt: skip
    assert runner.code == 0, runner.err
    section = json.loads((tmp_path / "runner" / "runner.json").read_text())["fvp"]
    sizes = [entry["bytes"] for entry in section["segments"]]
    fractions = 4 if accelerator.startswith("ethos-u85") else 3
    for code_byte in ("1", "0"):
        monkeypatch.setenv("FAKE_FVP_CODE_BYTE", code_byte)
        out = tmp_path / f"result-{code_byte}"
        ran = cli("run", tmp_path / "runner" / "runner.json", "-o", out)
        assert ran.code == 0, ran.err
        (sample,) = load_result(out).samples  # the reader verifies the bundle
        assert sample.cycles == {"total": sum(sizes), "segments": sizes}
        assert sample.segment_traffic_beats == [sum(size // (k + 2) for k in range(fractions)) for size in sizes]
        document = json.loads((out / "result.json").read_text())
        assert document["provider_versions"][executable] == "11.27.25"
        shown = cli("show", out)
        assert shown.code == 0 and "segment_traffic_beats.2" in shown.out, shown.err
    monkeypatch.setenv("FAKE_FVP_SCENARIO", "garbage")  # a log the reader does not know: one error naming it
    line = assert_one_line_error(
        cli("run", tmp_path / "runner" / "runner.json", "-o", tmp_path / "failed"), "shows no ending heliabuild reads"
    )
    kept = Path(line.rsplit("; the UART log is kept in ", 1)[1])
    assert kept.is_file() and kept.parent.parent == tmp_path and kept.parent.name.startswith("failed.failed-")
    assert not (tmp_path / "failed").exists()
