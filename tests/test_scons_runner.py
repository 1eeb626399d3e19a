"""HeliaRunner, HeliaRun and the pipeline's `runner` and `run` stages: real SCons, real Vela, real LiteRT.

A test project (tests/test_scons_pipeline.py's make_project) runs one pipeline on the synthetic KWS chain
with the keyword arguments in options.json; the summary table of the examples is tested on a copy of
the repository's examples (tests/test_scons.py's examples_built_once).
"""

from __future__ import annotations

import json
import re
import subprocess
from collections import Counter
from pathlib import Path

import pytest
from helpers.skips import require
from test_scons import build_ok, copy_built, examples_built_once, heliabuild_lines, output_of, run_scons
from test_scons_pipeline import make_project, set_options, snapshot

from heliabuild.api import acquisition_facts, load_result, measurement_samples, run_identity
from heliabuild.files import sha256_file
from heliabuild.results.figures import Figure
from heliabuild.results.summary import BundleFacts, MeasuredFigure, SummaryRow, summary_text
from heliabuild.runner.freeze import load_runner

STAGES = ("synth", "vela", "plan-fences", "fence", "aot-plan", "runner", "run")
POLICY = "defaults:\n  fvp:\n    acquisition: {{state: carry, warmup_invokes: 1, measured_invokes: {measured}}}\n"
AOT = "optimization:\n  goal: {goal}\n  allow_approximate: false\n"

pytestmark = pytest.mark.slow


def stage_counts(result: subprocess.CompletedProcess[str]) -> Counter[str]:
    counts: Counter[str] = Counter()
    for line in heliabuild_lines(result):
        words = line.split(" ")
        if len(words) == 3 and words[1] in STAGES:  # a start line, `heliabuild: <stage> <target>`
            counts[words[1]] += 1
    return counts


def project_with_policy(folder: Path, measured: int = 3, **options: object) -> Path:
    project = make_project(folder, {"fences": [3, 6], "policy": "policy.yaml", "aot_config": "aot.yaml", **options})
    (project / "policy.yaml").write_text(POLICY.format(measured=measured), encoding="utf-8")
    (project / "aot.yaml").write_text(AOT.format(goal="latency"), encoding="utf-8")
    return project


def test_the_pipeline_builds_through_run_and_the_bundle_verifies(tmp_path: Path) -> None:
    project = project_with_policy(tmp_path / "project")
    result = build_ok(project)
    assert stage_counts(result) == {"fence": 1, "vela": 1, "aot-plan": 1, "runner": 1, "run": 1}, output_of(result)
    build = project / "build"
    assert "heliabuild: runner build/runner/kws/runner.json" in heliabuild_lines(result)
    assert "heliabuild: run build/results/kws/result.json" in heliabuild_lines(result)

    runner = load_runner(build / "runner" / "kws" / "runner.json")
    inputs = runner.document["inputs"]
    assert inputs["model"]["sha256"] == sha256_file(build / "kws_fenced.tflite")
    assert inputs["sidecar"]["sha256"] == sha256_file(build / "kws_fenced.fenced_boundaries.json")
    assert inputs["segments"]["sha256"] == sha256_file(build / "kws_fenced_segments.json")
    assert inputs["vela_model"]["sha256"] == sha256_file(build / "kws_fenced_vela.tflite")
    assert inputs["aot_plan"]["sha256"] == sha256_file(build / "kws_plan.json")

    bundle = load_result(build / "results" / "kws")
    facts = acquisition_facts(bundle)
    assert facts is not None and (facts.state, facts.warmup_invokes, facts.measured_invokes) == ("carry", 1, 3)
    assert run_identity(bundle).runner_sha256 == runner.sha256
    assert [sample.index for sample in measurement_samples(bundle)] == [0, 1, 2]
    assert [segment["estimated_cycles"] is not None for segment in bundle.segments] == [True, True, True]

    tree = build_ok(project, "-Q", "-n", "--tree=prune", "kws-run").stdout
    assert "heliabuild==" in tree and "ai-edge-litert==" in tree

    cleaned = build_ok(project, "-c")
    assert "Removed directory build/results/kws" in cleaned.stdout.splitlines()
    assert not (build / "results" / "kws").exists()
    assert not build.exists()  # nor the folders the stages made, once empty


def test_incremental_matrix(tmp_path: Path) -> None:
    project = project_with_policy(tmp_path / "project")
    build = project / "build"
    first = build_ok(project)
    assert stage_counts(first)["run"] == 1, output_of(first)

    # a no-op rebuilds nothing
    assert stage_counts(build_ok(project)) == {}

    # another policy: runner and run only
    (project / "policy.yaml").write_text(POLICY.format(measured=2), encoding="utf-8")
    result = build_ok(project)
    assert stage_counts(result) == {"runner": 1, "run": 1}, output_of(result)
    assert len(measurement_samples(load_result(build / "results" / "kws"))) == 2
    assert stage_counts(build_ok(project)) == {}

    # the same policy as a mapping: runner.json comes out byte-identical, so the run does not rerun
    runner_bytes = (build / "runner" / "kws" / "runner.json").read_bytes()
    mapping = {"defaults": {"fvp": {"acquisition": {"state": "carry", "warmup_invokes": 1, "measured_invokes": 2}}}}
    set_options(project, fences=[3, 6], policy=mapping, aot_config="aot.yaml")
    result = build_ok(project)
    assert stage_counts(result) == {"runner": 1}, output_of(result)
    assert (build / "runner" / "kws" / "runner.json").read_bytes() == runner_bytes

    # the AOT plan's inputs change but the plan comes out byte-identical: aot-plan only, the runner does not rerun
    plan_bytes = (build / "kws_plan.json").read_bytes()
    with open(project / "aot.yaml", "a", encoding="utf-8") as handle:
        handle.write("# edited, same configuration\n")
    result = build_ok(project)
    assert stage_counts(result) == {"aot-plan": 1}, output_of(result)
    assert (build / "kws_plan.json").read_bytes() == plan_bytes

    # the plan changes: aot-plan, then runner (it records the plan's hash) and run
    (project / "aot.yaml").write_text(AOT.format(goal="balanced"), encoding="utf-8")
    result = build_ok(project)
    assert stage_counts(result) == {"aot-plan": 1, "runner": 1, "run": 1}, output_of(result)
    assert load_runner(build / "runner" / "kws").document["inputs"]["aot_plan"]["sha256"] == sha256_file(
        build / "kws_plan.json"
    )

    # a platform without an NPU: aot-plan stops the build with one line; runner and run do not run
    set_options(project, fences=[3, 6], policy=mapping, aot_config="aot.yaml", platform="apollo510_evb")
    failed = run_scons(project)
    assert failed.returncode == 2, output_of(failed)
    assert len(heliabuild_lines(failed, "heliabuild: error:")) == 1, output_of(failed)
    assert stage_counts(failed) == {"aot-plan": 1}, output_of(failed)
    assert not (build / "kws_plan.json").exists()
    set_options(project, fences=[3, 6], policy=mapping, aot_config="aot.yaml")
    assert stage_counts(build_ok(project)) == {"aot-plan": 1}
    assert stage_counts(build_ok(project)) == {}


def test_a_bad_policy_stops_the_runner_with_one_line_and_no_runner_output(tmp_path: Path) -> None:
    project = project_with_policy(tmp_path / "project")
    build_ok(project)
    runner_folder = project / "build" / "runner" / "kws"
    bundle_before = snapshot(project / "build" / "results" / "kws")
    (project / "policy.yaml").write_text(
        "defaults:\n  fvp:\n    acquisition: {state: single, warmup_invokes: 2}\n", encoding="utf-8"
    )
    result = run_scons(project)
    assert result.returncode == 2, output_of(result)
    errors = heliabuild_lines(result, "heliabuild: error:")
    assert len(errors) == 1 and "policy.yaml" in errors[0] and "warmup_invokes" in errors[0], errors
    assert "Traceback" not in output_of(result)
    assert stage_counts(result) == {"runner": 1}
    assert sorted(p.name for p in runner_folder.iterdir()) == []
    # the run stage did not run: its earlier bundle stays until the next successful build
    assert snapshot(project / "build" / "results" / "kws") == bundle_before


def test_a_failed_run_leaves_no_bundle(tmp_path: Path) -> None:
    project = project_with_policy(tmp_path / "project")
    (project / "SConstruct").write_text(
        (project / "SConstruct").read_text(encoding="utf-8")
        + 'env.HeliaRun("alone/result.json", "given/runner.json")\n',
        encoding="utf-8",
    )
    build_ok(project, "build")
    given = project / "given"
    given.mkdir()
    for path in (project / "build" / "runner" / "kws").iterdir():
        (given / path.name).write_bytes(path.read_bytes())
    build_ok(project, "alone")
    assert load_result(project / "alone").receipt is not None
    document = json.loads((given / "runner.json").read_text(encoding="utf-8"))
    (given / "runner.json").write_text(json.dumps({**document, "format": 1}), encoding="utf-8")
    result = run_scons(project, "alone")
    assert result.returncode == 2, output_of(result)
    errors = heliabuild_lines(result, "heliabuild: error:")
    assert len(errors) == 1 and "runner format 1 is not supported" in errors[0], output_of(result)
    assert stage_counts(result) == {"run": 1}
    assert not (project / "alone").exists()


def test_a_policy_that_does_not_execute_builds_a_build_only_bundle_and_stays_up_to_date(tmp_path: Path) -> None:
    project = make_project(
        tmp_path / "project", {"fences": [3, 6], "policy": {"defaults": {"fvp": {"enabled": False}}}}
    )
    result = build_ok(project)
    assert stage_counts(result)["run"] == 1, output_of(result)
    bundle = load_result(project / "build" / "results" / "kws")
    assert bundle.stage == "build_only" and acquisition_facts(bundle) is None
    assert stage_counts(build_ok(project)) == {}


@pytest.mark.parametrize(
    "call",
    [
        'env.HeliaRunner("r/runner.json", ["a_vela.tflite"])',
        'env.HeliaRunner("r/runner.json", ["model.tflite", "notes.txt"])',
        'env.HeliaRunner("r/other.json", ["model.tflite"])',
        'env.HeliaRunner("r/runner.json", ["model.tflite"], HELIA_POLICY=3)',
        'env.HeliaRun("x/result.json", ["model.tflite"])',
        'env.HeliaRun("x/out.json", ["r/runner.json"])',
    ],
)
def test_builder_mistakes_are_reported_before_building(tmp_path: Path, call: str) -> None:
    project = make_project(tmp_path / "project", {})
    (project / "SConstruct").write_text(
        (project / "SConstruct").read_text(encoding="utf-8").replace("env.HeliaPipeline", "# ") + call + "\n",
        encoding="utf-8",
    )
    result = run_scons(project)
    assert result.returncode == 2, output_of(result)
    assert "scons: *** heliabuild: Helia" in result.stderr and "(called at" in result.stderr, result.stderr
    assert not (project / "r").exists() and not (project / "x").exists()


def test_the_root_sconstruct_prints_one_summary_table(tmp_path_factory: pytest.TempPathFactory, tmp_path: Path) -> None:
    built, first = examples_built_once(tmp_path_factory)  # the first `scons` of a fresh copy
    project = copy_built(built, tmp_path / "project")
    from heliabuild.scons.firmware import missing_tools

    examples = ("kws_budget", "kws_chain", *(() if missing_tools() else ("residual_qemu",)), "resnet_residual")
    assert stage_counts(first)["run"] == len(examples), output_of(first)
    assert first.stdout.count("pipeline ") == 1
    table = first.stdout[first.stdout.index("pipeline ") :].splitlines()
    assert first.stdout.rstrip().endswith(table[-1])
    notes = [line for line in table if line.startswith("note: ")]
    assert len(table) == 2 + len(examples) + len(notes) and table[-len(notes) :] == notes
    for example, row in zip(examples, table[2 : 2 + len(examples)], strict=True):
        assert row.startswith(example) and row.endswith(f"build/{example}/results/{example}"), row
    chain = load_result(project / "build" / "kws_chain" / "results" / "kws_chain")
    assert len(chain.samples) == 3 and chain.receipt is not None and chain.receipt.warmup_invokes == 1
    assert "  " + "/".join(f"{s['estimated_cycles']:,}" for s in chain.segments) + "  " in table[3]
    assert "  measured (host time, LiteRT, n=3)  " in table[3] and "litert" in table[3]
    assert re.search(r"  not compared\s+zeros\s", table[3])
    assert "note: host time is LiteRT on this machine's CPU: not comparable with Vela's NPU estimate" in notes
    if "residual_qemu" in examples:
        qemu = load_result(project / "build" / "residual_qemu" / "results" / "residual_qemu")
        assert qemu.samples[0].instructions is not None
        n = len(qemu.samples)
        assert f"  measured (QEMU M55 instructions, CPU only, n={n})  " in table[4] and "qemu-m55" in table[4]
        assert f"  {qemu.samples[0].instructions['total']:,} instructions  " in table[4]
        assert re.search(r"  0 of \d+ differ \(BUILTIN_REF\)\s+zeros\s", table[4])  # strict by default: it held
        assert any(note.startswith("note: qemu-m55 counts the Cortex-M55's instructions") for note in notes)
    summary = json.loads((project / "build" / "heliabuild-summary.json").read_text(encoding="utf-8"))
    assert [row["pipeline"] for row in summary["pipelines"]] == list(examples)

    again = build_ok(project)
    assert "scons: `all' is up to date." in again.stdout and again.stdout.count("pipeline ") == 1
    assert "pipeline " not in build_ok(project, "kws_chain-vela").stdout
    assert "pipeline " not in build_ok(project, "-c").stdout
    assert not (project / "build" / "heliabuild-summary.json").exists()


def summary_rows() -> list[SummaryRow]:
    """A litert, a qemu-m55 and an fvp row, as bundle_facts reads them from bundles of those backends."""

    def measured(name: str, kind: str, values: list[float], scopes: dict[str, str]) -> MeasuredFigure:
        ordered = sorted(values)
        figure = Figure(
            name, kind, len(values), ordered[len(values) // 2], sum(values) / len(values), ordered[0], ordered[-1]
        )
        return MeasuredFigure.of(figure, scopes)

    host = {"latency_s": "host_wall_clock", "segment_latency_s": "host_wall_clock"}
    litert = measured("latency_s", "float", [0.000601, 0.0006121, 0.00063], host)
    qemu = measured("instructions.total", "counter", [46072071.0] * 3, {"instructions": "qemu_icount"})
    fvp = measured("cycles.total", "counter", [12345.0], {"cycles": "npu_callbacks", "traffic_beats": "npu_callbacks"})
    return [
        SummaryRow(
            "a",
            BundleFacts("litert", (1000, 2500, 12345), 21.6, None, litert, "not compared", "in.bin"),
            "build/a/results/a",
        ),
        SummaryRow(
            "q",
            BundleFacts("qemu-m55", (1000, 2500), 72.65, 1.25, qemu, "0 of 10 differ (BUILTIN_REF)", "zeros"),
            "build/q/results/q",
        ),
        SummaryRow(
            "f",
            BundleFacts("fvp", (1000,), None, None, fvp, "0 of 10 differ (BUILTIN_REF)", "zeros"),
            "build/f/results/f",
        ),
    ]


def test_the_summary_table_names_each_figure_with_its_scope_n_and_spread() -> None:
    lines = summary_text(summary_rows()).splitlines()
    assert [line.rstrip() for line in lines] == [
        "pipeline  backend   segments  Vela NPU estimate (cycles per segment)  Vela SRAM  Vela flash  measured"
        "                                                          median           spread  verification"
        "                  inputs  bundle",
        "--------  --------  --------  --------------------------------------  ---------  ----------  "
        "-----------------------------------------------  -----------------------  ---------------  "
        "----------------------------  ------  -----------------",
        "a         litert           3  1,000/2,500/12,345                      21.6 KiB   -           measured (host "
        "time, LiteRT, n=3)                               612.1 us  29.00 us (4.7%)  not compared                  "
        "in.bin  build/a/results/a",
        "q         qemu-m55         2  1,000/2,500                             72.7 KiB   1.2 KiB     measured (QEMU "
        "M55 instructions, CPU only, n=3)  46,072,071 instructions         0 (0.0%)  0 of 10 differ (BUILTIN_REF)  "
        "zeros   build/q/results/q",
        "f         fvp              1  1,000                                   -          -           measured (NPU "
        "cycles, FVP, n=1)                            12,345 cycles         0 (0.0%)  0 of 10 differ (BUILTIN_REF)  "
        "zeros   build/f/results/f",
        "note: host time is LiteRT on this machine's CPU: not comparable with Vela's NPU estimate",
        "note: qemu-m55 counts the Cortex-M55's instructions with every operator on the CPU (no NPU): not comparable "
        "with Vela's NPU estimate",
    ]


def test_the_qemu_example_is_among_those_built() -> None:
    """residual_qemu is left out of the examples above without the Arm toolchain and QEMU: without them this
    test is the skip (a failure under CI) that says so."""
    from heliabuild.scons.firmware import missing_tools

    require(not missing_tools(), f"residual_qemu is not built here: {', '.join(missing_tools())} missing")
