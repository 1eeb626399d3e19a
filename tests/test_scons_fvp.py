"""The fvp backend in SCons, with real SCons, Vela and the real prebuilt runner of `mlia-ethos-u`, and a FAKE
FVP (tests/helpers/fake_fvp.py, a test double of Arm's FVP executables, first on PATH): HeliaPipeline(...,
backend='fvp') declares the runner's copy of Vela's compiled model as the runner stage's target (whatever the
segment count: fences given as a list, a plan file or a cycle budget), runs the FVP target of its platform, one
job per segment, publishes a bundle the reader verifies, rebuilds nothing the second time and, after a change,
only what depends on it."""

from __future__ import annotations

import json
import shutil
import subprocess
from collections import Counter
from pathlib import Path

import pytest
from conftest import require_prebuilt_runner
from helpers.fvp_models import compiled_residual
from test_scons import build_ok, heliabuild_lines, output_of, run_scons
from test_scons_pipeline import bound_plan, leftovers, make_project, set_options, snapshot

from heliabuild.api import load_result
from heliabuild.runner.freeze import load_runner

pytestmark = pytest.mark.slow


@pytest.fixture(autouse=True)
def _prebuilt_runner() -> None:
    require_prebuilt_runner()


POLICY = "defaults:\n  fvp:\n    acquisition: {state: single, warmup_invokes: 0, measured_invokes: 1}\n"
STAGES = ("plan-fences", "fence", "vela", "aot-plan", "runner", "run")
RUNNER_FILES = ["fvp/model_vela.tflite", "model.fenced_boundaries.json", "model.tflite", "runner.json", "segments.json"]


def stage_counts(result: subprocess.CompletedProcess[str]) -> Counter[str]:
    counts: Counter[str] = Counter()
    for line in heliabuild_lines(result):
        words = line.split(" ")
        if len(words) == 3 and words[1] in STAGES:
            counts[words[1]] += 1
    return counts


def runner_files(folder: Path) -> list[str]:
    return sorted(str(path.relative_to(folder)) for path in folder.rglob("*") if path.is_file())


def job_count(log: Path) -> int:
    """How many FVP jobs (calls with a model) the fake FVP's call log records."""
    return sum(1 for line in log.read_text().splitlines() if "--data" in line) if log.exists() else 0


def published_segments(project: Path) -> tuple[list[int], list[int]]:
    """The one sample's per-segment cycles and beats of the bundle `scons` published (the reader verifies it)."""
    (sample,) = load_result(project / "build" / "results" / "kws").samples
    assert sample.cycles is not None and sample.segment_traffic_beats is not None
    return sample.cycles["segments"], sample.segment_traffic_beats


def fvp_project(folder: Path, **options: object) -> Path:
    project = make_project(folder, {"fences": [3, 6], "policy": "policy.yaml", "backend": "fvp", **options})
    (project / "policy.yaml").write_text(POLICY, encoding="utf-8")
    return project


def test_pipeline_on_the_fvp_of_its_platform(tmp_path: Path, fake_fvp: Path) -> None:
    project = fvp_project(tmp_path / "project")
    result = build_ok(project)
    assert stage_counts(result) == {"fence": 1, "vela": 1, "aot-plan": 1, "runner": 1, "run": 1}, output_of(result)
    build = project / "build"
    runner = load_runner(build / "runner" / "kws" / "runner.json")
    assert runner.document["fvp"]["target"]["executable"] == "FVP_Corstone_SSE-300_Ethos-U55"
    assert runner_files(build / "runner" / "kws") == RUNNER_FILES
    bundle = load_result(build / "results" / "kws")
    (sample,) = bundle.samples
    assert sample.cycles is not None and len(sample.cycles["segments"]) == 3
    assert sample.segment_traffic_beats is not None and len(sample.segment_traffic_beats) == 3
    calls = [json.loads(line) for line in fake_fvp.read_text().splitlines()]
    assert sum(1 for call in calls if call[1:] != ["--version"]) == 3  # one job per segment
    # the build summary shows the FVP's NPU cycles (the FAKE FVP's, as the real one prints them), named so
    (row,) = [line for line in result.stdout.splitlines() if line.startswith("kws ")]
    assert f"  measured (NPU cycles, FVP, n=1)  {sample.cycles['total']:,} cycles  0 (0.0%)  " in row, row
    summary = json.loads((project / "build" / "heliabuild-summary.json").read_text(encoding="utf-8"))
    (measured,) = [entry["measured"] for entry in summary["pipelines"]]
    assert (measured["figure"], measured["scope"], measured["median"]) == (
        "cycles.total",
        "npu_callbacks",
        sample.cycles["total"],
    )

    again = build_ok(project)
    assert stage_counts(again) == {}, output_of(again)

    # a policy edit that freezes the same policy reruns the runner stage only; runner.json is unchanged
    (project / "policy.yaml").write_text("# the same policy\n" + POLICY, encoding="utf-8")
    edited = build_ok(project)
    assert stage_counts(edited) == {"runner": 1}, output_of(edited)

    # a new time limit is a new runner (its recorded command line) and so a new run, nothing before them
    set_options(project, fences=[3, 6], policy="policy.yaml", backend="fvp", HELIA_FVP_TIMELIMIT=300)
    limited = build_ok(project)
    assert stage_counts(limited) == {"runner": 1, "run": 1}, output_of(limited)
    assert load_runner(build / "runner" / "kws" / "runner.json").document["fvp"]["timelimit_s"] == 300

    cleaned = build_ok(project, "-c")
    assert not (build / "runner" / "kws" / "fvp").exists(), output_of(cleaned)


def test_platform_without_an_fvp_is_refused(tmp_path: Path, fake_fvp: Path) -> None:
    project = fvp_project(tmp_path / "project", platform="apollo510_evb")
    result = run_scons(project)
    assert result.returncode == 2, output_of(result)
    assert "platform 'apollo510_evb' has no FVP" in output_of(result)
    assert "SConstruct" in output_of(result)  # the UserError names the SConscript line
    assert not (project / "build").exists()


def test_aot_firmware_pipeline(tmp_path: Path, fake_fvp: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """fvp_firmware='aot': the runner stage links heliabuild's AOT firmware against the Ethos-U driver named by
    HELIA_ETHOSU_DRIVER_DIR (here a TEST DOUBLE of the driver) with the shared corstone300 library; the fake FVP
    replays the firmware's record stream, captured by running the ELF on QEMU's mps3-an547."""
    from conftest import require_firmware_tools
    from helpers.qemu_uart import uart_until_eot
    from test_fvp_firmware import DRIVER_DOUBLE

    require_firmware_tools()
    options = {"fvp_firmware": "aot", "HELIA_ETHOSU_DRIVER_DIR": str(DRIVER_DOUBLE)}
    project = fvp_project(tmp_path / "project", **options)
    (project / "policy.yaml").write_text(
        "defaults:\n  fvp:\n    acquisition: {state: carry, warmup_invokes: 1, measured_invokes: 2}\n", encoding="utf-8"
    )
    runner_only = build_ok(project, "kws-runner")
    assert stage_counts(runner_only) == {"fence": 1, "vela": 1, "aot-plan": 1, "runner": 1}, output_of(runner_only)
    library = "heliabuild: firmware-cc build/heliabuild-firmware/corstone300/libheliafirmware.a"
    assert library in heliabuild_lines(runner_only), output_of(runner_only)
    folder = project / "build" / "runner" / "kws"
    assert sorted(p.name for p in (folder / "fvp").iterdir()) == ["firmware.elf", "firmware_layout.json"]
    records = tmp_path / "uart.txt"
    records.write_text(uart_until_eot(folder / "fvp" / "firmware.elf"), encoding="ascii")
    monkeypatch.setenv("FAKE_FVP_RECORDS", str(records))

    result = build_ok(project)
    assert stage_counts(result) == {"run": 1}, output_of(result)
    bundle = load_result(project / "build" / "results" / "kws")
    assert [s.cycles["segments"] for s in bundle.samples if s.cycles] == [[1000, 1000, 1000]] * 2
    assert [s.segment_traffic_beats for s in bundle.samples] == [[234, 234, 234]] * 2
    assert stage_counts(build_ok(project)) == {}

    # the driver's files are dependencies: another driver relinks the firmware and reruns the runner
    driver = tmp_path / "driver"
    shutil.copytree(DRIVER_DOUBLE, driver)
    set_options(
        project,
        fences=[3, 6],
        policy="policy.yaml",
        backend="fvp",
        **{**options, "HELIA_ETHOSU_DRIVER_DIR": str(driver)},
    )
    assert stage_counts(build_ok(project, "kws-runner")) == {}  # the same files: nothing to do
    (driver / "src" / "ethosu_pmu.c").write_text((driver / "src" / "ethosu_pmu.c").read_text() + "\n/* edited */\n")
    assert stage_counts(build_ok(project, "kws-runner")) == {"runner": 1}


def test_aot_firmware_without_a_driver_is_one_clear_error(
    tmp_path: Path, fake_fvp: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("HELIA_ETHOSU_DRIVER_DIR", raising=False)
    project = fvp_project(tmp_path / "project", fvp_firmware="aot")
    result = run_scons(project)
    assert result.returncode == 2, output_of(result)
    assert "no driver folder is named (HELIA_ETHOSU_DRIVER_DIR is not set)" in output_of(result)
    assert "SConstruct" in output_of(result)
    assert not (project / "build").exists()


STANDALONE = """\
SetOption("hash_format", "sha256")
env = Environment(tools=["helia"], toolpath=[{site_tools!r}])
env.Decider("content")
sources = ["model_fenced.tflite", "model_fenced.fenced_boundaries.json", "model_fenced_vela.tflite",
           "model_fenced_segments.json"]
runner = env.HeliaRunner("runner/runner.json", sources, HELIA_BACKEND="fvp", HELIA_POLICY="policy.yaml")
env.HeliaRun("results/result.json", runner[0])
"""


def test_standalone_helia_runner_on_the_fvp(
    tmp_path: Path, tmp_path_factory: pytest.TempPathFactory, fake_fvp: Path
) -> None:
    from test_scons import SITE_TOOLS

    project = tmp_path / "project"
    project.mkdir()
    for path in compiled_residual(tmp_path_factory, "ethos-u55-128").values():
        shutil.copy(path, project / path.name)
    (project / "policy.yaml").write_text(POLICY, encoding="utf-8")
    (project / "SConstruct").write_text(STANDALONE.format(site_tools=str(SITE_TOOLS)), encoding="utf-8")
    result = build_ok(project)
    assert stage_counts(result) == {"runner": 1, "run": 1}, output_of(result)
    assert runner_files(project / "runner") == RUNNER_FILES
    assert job_count(fake_fvp) == 3
    assert len(load_result(project / "results").samples) == 1
    assert stage_counts(build_ok(project)) == {}


BUDGET = {"budget_cycles": 30000, "backend": "fvp", "platform": "corstone300_ethos_u55"}
"""The user's call, `env.HeliaPipeline('kws', model, budget_cycles=30000, backend='fvp', platform=...)`: the default
policy (no warmup for a model without CALL_ONCE, one measured invoke) is one the prebuilt runner honours."""


def test_a_budget_pipeline_runs_on_the_fvp_whatever_its_segment_count(tmp_path: Path, fake_fvp: Path) -> None:
    """The segment count of a cycle budget is known only once plan-fences has run: the runner stage's targets do
    not depend on it, so the pipeline builds without HELIA_FVP_SEGMENTS, and a budget that changes the count
    publishes the new count."""
    from heliabuild.fence.plan import load_plan

    project = make_project(tmp_path / "project", BUDGET)
    result = build_ok(project)
    counts = {"plan-fences": 1, "fence": 1, "vela": 2, "aot-plan": 1, "runner": 1, "run": 1}
    assert stage_counts(result) == counts, output_of(result)
    build = project / "build"
    assert len(load_plan(build / "kws_fence_plan.json").fences) == 2
    assert runner_files(build / "runner" / "kws") == RUNNER_FILES
    runner = load_runner(build / "runner" / "kws" / "runner.json")
    recorded = runner.document["fvp"]["segments"]
    cycles, beats = published_segments(project)
    assert cycles == [entry["bytes"] for entry in recorded]  # the fake FVP counts a model's size as its cycles
    assert len(beats) == 3 and job_count(fake_fvp) == 3
    ran = (fake_fvp.parent / "fake-fvp-models.txt").read_text().split()
    assert sorted(ran) == sorted(entry["sha256"] for entry in recorded)

    again = build_ok(project)
    assert stage_counts(again) == {}, output_of(again)
    assert job_count(fake_fvp) == 3

    set_options(project, **{**BUDGET, "budget_cycles": 15000})
    smaller = build_ok(project)
    assert stage_counts(smaller) == {"plan-fences": 1, "fence": 1, "vela": 1, "aot-plan": 1, "runner": 1, "run": 1}
    cycles, beats = published_segments(project)
    assert len(cycles) == len(beats) == 4 == len(load_plan(build / "kws_fence_plan.json").fences) + 1
    assert runner_files(build / "runner" / "kws") == RUNNER_FILES
    assert job_count(fake_fvp) == 3 + 4

    # a tampered copy of the compiled model is not what SCons built: the runner stage reruns and rebuilds it
    # (runner.json comes out byte-identical, so the bundle stays); a tampered runner's run is refused
    # (test_fvp_backend.py)
    compiled = build / "runner" / "kws" / "fvp" / "model_vela.tflite"
    original = compiled.read_bytes()
    compiled.write_bytes(original[:-1] + bytes([original[-1] ^ 1]))
    repaired = build_ok(project)
    assert stage_counts(repaired) == {"runner": 1}, output_of(repaired)
    assert compiled.read_bytes() == original and job_count(fake_fvp) == 7

    (build / "runner" / "kws" / "fvp" / "segment_0.tflite").write_bytes(b"an earlier heliabuild's sub-model")
    cleaned = build_ok(project, "-c")
    assert snapshot(build) == {}, output_of(cleaned)
    assert leftovers(project) == [".sconsign_sha256.dblite"]


def plan_project(folder: Path) -> Path:
    from heliabuild.files import json_text

    project = make_project(folder, {})
    (project / "policy.yaml").write_text(POLICY, encoding="utf-8")
    (project / "plan.json").write_text(json_text(bound_plan(project / "model.tflite", [2, 6])), encoding="utf-8")
    set_options(project, fences="plan.json", policy="policy.yaml", backend="fvp")
    return project


def test_a_fence_plan_pipeline_runs_on_the_fvp(tmp_path: Path, fake_fvp: Path) -> None:
    from heliabuild.files import json_text

    project = plan_project(tmp_path / "project")
    result = build_ok(project)
    assert stage_counts(result) == {"fence": 1, "vela": 1, "aot-plan": 1, "runner": 1, "run": 1}, output_of(result)
    cycles, beats = published_segments(project)
    assert len(cycles) == len(beats) == 3 and job_count(fake_fvp) == 3
    assert stage_counts(build_ok(project)) == {}

    # the same project in another folder: the runner folder is byte-identical
    elsewhere = plan_project(tmp_path / "somewhere" / "else")
    build_ok(elsewhere, "kws-runner")
    runner = Path("build") / "runner" / "kws"
    assert snapshot(elsewhere / runner) == snapshot(project / runner)

    # another plan with another segment count: the new count is published
    (project / "plan.json").write_text(json_text(bound_plan(project / "model.tflite", [4])), encoding="utf-8")
    replanned = build_ok(project)
    assert stage_counts(replanned) == {"fence": 1, "vela": 1, "aot-plan": 1, "runner": 1, "run": 1}
    cycles, beats = published_segments(project)
    assert len(cycles) == len(beats) == 2 and job_count(fake_fvp) == 3 + 2


PLATFORMS = {  # platform -> (Vela's accelerator config, the FVP it runs on, the NPU's beat counters)
    "corstone300_ethos_u55": ("ethos-u55-128", "FVP_Corstone_SSE-300_Ethos-U55", 3),
    "corstone300_ethos_u65": ("ethos-u65-256", "FVP_Corstone_SSE-300_Ethos-U65", 3),
    "corstone310_ethos_u55": ("ethos-u55-128", "FVP_Corstone_SSE-310", 3),
    "corstone320_ethos_u85": ("ethos-u85-256", "FVP_Corstone_SSE-320", 4),
}


@pytest.mark.parametrize("code_byte", ["1", "0"], ids=["code-byte-after-eot", "no-code-byte"])
@pytest.mark.parametrize("platform", sorted(PLATFORMS))
def test_each_platform_publishes_the_figures_the_fvp_printed(
    tmp_path: Path, fake_fvp: Path, monkeypatch: pytest.MonkeyPatch, platform: str, code_byte: str
) -> None:
    """The FAKE FVP prints the prebuilt runner's log (tests/helpers/fake_fvp.py), with or without the exit-code
    byte after EOT: the bundle's per-segment cycles and beats are what it printed for each segment's model."""
    monkeypatch.setenv("FAKE_FVP_CODE_BYTE", code_byte)
    accelerator, executable, beat_counters = PLATFORMS[platform]
    project = fvp_project(tmp_path / "project", platform=platform, accelerator=accelerator)
    result = build_ok(project)
    assert stage_counts(result)["run"] == 1, output_of(result)
    runner = load_runner(project / "build" / "runner" / "kws" / "runner.json")
    assert runner.document["fvp"]["target"]["executable"] == executable
    sizes = [entry["bytes"] for entry in runner.document["fvp"]["segments"]]
    cycles, beats = published_segments(project)
    assert cycles == sizes  # fake_fvp: NPU ACTIVE is the segment model's size
    assert beats == [sum(size // (k + 2) for k in range(beat_counters)) for size in sizes]
    assert stage_counts(build_ok(project)) == {}  # a second scons is a no-op


@pytest.mark.parametrize(
    ("scenario", "message"),
    [
        ("exit-1", "the FVP exited with status 1 after a complete log"),
        ("mismatch", "NPU config mismatch, compiled for 256 MACs, the FVP has 128"),
        ("garbage", "the UART log shows no ending heliabuild reads"),
    ],
)
def test_a_failed_fvp_run_is_one_error_and_publishes_nothing(
    tmp_path: Path, fake_fvp: Path, monkeypatch: pytest.MonkeyPatch, scenario: str, message: str
) -> None:
    monkeypatch.setenv("FAKE_FVP_SCENARIO", scenario)
    monkeypatch.setenv("FAKE_FVP_COMPILED_MACS", "256")
    project = fvp_project(tmp_path / "project")
    result = run_scons(project)
    assert result.returncode != 0
    errors = [line for line in output_of(result).splitlines() if line.startswith("heliabuild: error:")]
    assert len(errors) == 1 and message in errors[0], output_of(result)
    assert not (project / "build" / "results" / "kws").exists()
    monkeypatch.delenv("FAKE_FVP_SCENARIO")
    assert stage_counts(build_ok(project)) == {"run": 1}  # the fault gone, the run publishes
