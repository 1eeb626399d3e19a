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
from helpers.skips import require, require_distribution

from heliabuild.api import acquisition_facts, load_result
from heliabuild.errors import FvpError, RunnerError
from heliabuild.fence import rewrite_model_with_fences
from heliabuild.files import sha256_bytes
from heliabuild.fvp.targets import TARGETS
from heliabuild.model import serialize
from heliabuild.runner.freeze import build_runner, load_runner
from heliabuild.runner.lifecycle import run_runner
from heliabuild.synth import residual_network
from heliabuild.vela import compile as vela_compile

require_distribution("mlia-ethos-u", "pip install heliabuild[fvp]", module_level=True)

POLICY = {"defaults": {"fvp": {"acquisition": {"state": "single", "warmup_invokes": 0, "measured_invokes": 1}}}}
CASES = {  # target choice -> (accelerator, executable)
    "corstone-300": ("ethos-u55-128", "FVP_Corstone_SSE-300_Ethos-U55"),
    "corstone-300/ethos-u65-256": ("ethos-u65-256", "FVP_Corstone_SSE-300_Ethos-U65"),
    "corstone-310": ("ethos-u55-64", "FVP_Corstone_SSE-310"),
    "corstone-320": ("ethos-u85-256", "FVP_Corstone_SSE-320"),
}


_COMPILED: dict[tuple[str, str], dict[str, Path]] = {}


def _compiled(tmp_path_factory: pytest.TempPathFactory, accelerator: str) -> dict[str, Path]:
    """A residual network fenced after operators 1 and 7 (three segments), compiled by Vela for `accelerator`."""
    key = ("residual", accelerator)
    if key not in _COMPILED:
        folder = tmp_path_factory.mktemp(f"fvp-{accelerator}")
        fenced = rewrite_model_with_fences(bytes(serialize(residual_network(0))), [1, 7])
        model = folder / "model_fenced.tflite"
        model.write_bytes(bytes(fenced.fenced_bytes))
        sidecar = folder / "model_fenced.fenced_boundaries.json"
        sidecar.write_text(json.dumps(fenced.boundaries.to_json()))
        vela = vela_compile(model, folder / "vela", accelerator=accelerator)
        _COMPILED[key] = {"model": model, "sidecar": sidecar, "vela": vela.model, "segments": vela.segments_json}
    return _COMPILED[key]


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


@pytest.mark.parametrize("choice", sorted(CASES))
def test_good_run_publishes_per_segment_counters(
    tmp_path: Path, tmp_path_factory: pytest.TempPathFactory, fake_fvp: Path, choice: str
) -> None:
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
    assert document["provider_versions"][executable].startswith("Fake ")
    assert document["provider_versions"]["mlia-ethos-u"] == distribution.version
    facts = acquisition_facts(result)
    assert facts is not None and facts.counter_scope == "npu_callbacks"
    from heliabuild.results.export import export, show

    assert "segment_traffic_beats.0" in show(result_json.parent)
    assert json.loads(export(result_json.parent, fields="samples", fmt="json"))[0]["segment_traffic_beats"] == beats
    (row,) = csv.DictReader(io.StringIO((result_json.parent / "run_summary.csv").read_text()))
    assert row["traffic_beats_total"] == str(sum(beats))
    assert [row[f"traffic_beats_segment_{k}"] for k in range(3)] == [str(b) for b in beats]
    calls = [json.loads(line) for line in fake_fvp.read_text().splitlines()]
    assert sum(1 for call in calls if call[1:] != ["--version"]) == 3  # one job per segment


@pytest.mark.parametrize(
    ("scenario", "message"),
    [
        ("missing-metric", "lacks NPU ACTIVE"),
        ("count-mismatch", "holds 2 <metrics> blocks"),
        ("timeout", "Simulated time has been exceeded (a timeout)"),
        ("fault", "the runner failed: 'ERROR - HardFault"),
        ("no-eot", "sent no EOT"),
        ("cut", "ends mid-line"),
    ],
)
def test_bad_run_publishes_nothing(
    tmp_path: Path,
    tmp_path_factory: pytest.TempPathFactory,
    fake_fvp: Path,
    monkeypatch: pytest.MonkeyPatch,
    scenario: str,
    message: str,
) -> None:
    runner_json = _build(tmp_path / "runner", _compiled(tmp_path_factory, "ethos-u55-128"))
    monkeypatch.setenv("FAKE_FVP_SCENARIO", scenario)
    with pytest.raises(FvpError) as caught:
        run_runner(runner_json, tmp_path / "result")
    assert message in caught.value.message
    assert caught.value.message.count("\n") == 0
    assert not (tmp_path / "result").exists()
    jobs = [json.loads(line) for line in fake_fvp.read_text().splitlines() if "--data" in line]
    assert len(jobs) == 3 and not any(Path(job[job.index("--data") + 1].rsplit("@", 1)[0]).exists() for job in jobs)


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


def test_the_prebuilt_runner_boots_on_qemu_and_the_adapter_reports_the_missing_npu() -> None:
    """The real runner file mlia-ethos-u ships for Corstone-300 boots on QEMU's mps3-an547 (Corstone-300's CPU,
    memory map and UART0, but no Ethos-U) and stops at the NPU's absence; read as an FVP job's UART log (QEMU
    does not stop on EOT as the FVP does, so the test ends it there), the adapter reports the failure."""
    from conftest import require_firmware_tools
    from helpers.qemu_uart import uart_until_eot

    from heliabuild.firmware.qemu import QemuRun
    from heliabuild.fvp.firmware import prebuilt_runner
    from heliabuild.fvp.log import read_job

    require_firmware_tools()
    runner = prebuilt_runner(TARGETS[0])
    console = uart_until_eot(runner.path)
    assert "Initialising Ethos-U device@0x58102000" in console  # the NPU address the AOT firmware uses too
    run = QemuRun(exit_status=0, console=console, timed_out=False, output_overflow=False, diagnostics="")
    with pytest.raises(FvpError) as error:
        read_job(run, "ethos-u55", "segment 0 (QEMU mps3-an547)")
    assert error.value.message == (
        "segment 0 (QEMU mps3-an547): the runner failed: "
        "'ERROR - Failed to initialise platform Arm Corstone-300 - AN552'"
    )


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
    """Each fake job waits until two jobs have started: run one after another, the first would never finish."""
    require((os.cpu_count() or 1) >= 2, "one CPU: the jobs run one after another by design")
    runner_json = _build(tmp_path / "runner", _compiled(tmp_path_factory, "ethos-u55-128"))
    (tmp_path / "started").mkdir()
    monkeypatch.setenv("FAKE_FVP_TOGETHER", f"{tmp_path / 'started'}:2")
    result = load_result(run_runner(runner_json, tmp_path / "result").parent)
    assert len(result.samples[0].cycles["segments"]) == 3  # type: ignore[index]
    assert len(list((tmp_path / "started").iterdir())) == 3
