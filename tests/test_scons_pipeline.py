"""HeliaPipeline, HeliaVela and HeliaFencePlan end to end: real SCons, real Vela, synthetic models.

Stages are counted from the `heliabuild: <stage> <target>` lines a build
prints. Most tests build a small project in a temporary folder: an SConstruct
that runs one pipeline on `model.tflite` (the synthetic KWS chain, a source
file the test writes) with the keyword arguments in `options.json`, so a test
changes the pipeline by rewriting that file. The reproducibility, `-j2`,
`-c` and CacheDir tests build the repository's own SConstruct and examples.
"""

from __future__ import annotations

import csv
import io
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
from helpers.skips import require
from test_scons import (
    SITE_TOOLS,
    build_ok,
    copy_built,
    copy_project,
    heliabuild_lines,
    output_of,
    run_scons,
    scons_command,
)

from heliabuild.fence import Fence, FencePlan, load_plan, load_sidecar, sidecar_path_for
from heliabuild.files import json_text, sha256_file
from heliabuild.model import load_model, model_sha256, operator_type, save_model, tensor_name
from heliabuild.schema_files import validate
from heliabuild.scons.firmware import missing_tools
from heliabuild.synth import synthesize
from heliabuild.synth.large import large_model
from heliabuild.vela import (
    default_system_config,
    output_names,
    read_per_layer,
    read_summary,
    vela_version,
)

STAGES = ("synth", "vela", "plan-fences", "fence")
QEMU_EXAMPLE = not missing_tools()
"""Whether the examples include residual_qemu (it is skipped without the Arm toolchain and QEMU)."""
EXAMPLES = ("kws_budget", "kws_chain", *(("residual_qemu",) if QEMU_EXAMPLE else ()), "resnet_residual")
EXAMPLE_STAGES = {"synth": len(EXAMPLES), "fence": len(EXAMPLES), "vela": len(EXAMPLES) + 1, "plan-fences": 1}
U55_SUMMARY = "Ethos_U55_High_End_Embedded"

PROJECT_SCONSTRUCT = """\
import json

SetOption("hash_format", "sha256")
env = Environment(tools=["helia"], toolpath=[{site_tools!r}])
env.Decider("content")
with open("options.json", encoding="utf-8") as handle:
    options = json.load(handle)
env.HeliaPipeline("{name}", "{model}", build_dir="build", **options)
"""


def stage_counts(result: subprocess.CompletedProcess[str]) -> Counter[str]:
    """How many `heliabuild: <stage> ...` lines the build printed, by stage."""
    counts: Counter[str] = Counter()
    for line in heliabuild_lines(result):
        words = line.split(" ")
        if len(words) == 3 and words[1] in STAGES:  # a start line, `heliabuild: <stage> <target>`
            counts[words[1]] += 1
    return counts


def make_project(folder: Path, options: dict[str, object], name: str = "kws", model: str = "model.tflite") -> Path:
    """A project running one pipeline `name` on `model` (the synthetic chain unless the test writes another)."""
    folder.mkdir(parents=True)
    (folder / "SConstruct").write_text(
        PROJECT_SCONSTRUCT.format(site_tools=str(SITE_TOOLS), name=name, model=model), encoding="utf-8"
    )
    if model == "model.tflite":
        save_model(synthesize("chain", seed=0), folder / model)
    set_options(folder, **options)
    return folder


def set_options(project: Path, **options: object) -> None:
    (project / "options.json").write_text(json.dumps(options), encoding="utf-8")


def vela_outputs(folder: Path, stem: str, summary: str = U55_SUMMARY) -> list[Path]:
    return [folder / name for name in output_names(f"{stem}.tflite", summary).values()]


def fence_outputs(folder: Path, stem: str) -> list[Path]:
    return [folder / f"{stem}.tflite", sidecar_path_for(folder / f"{stem}.tflite")]


def bound_plan(model: Path, after_ops: list[int], model_sha: str | None = None) -> dict[str, object]:
    """A fence plan for `model` after `after_ops`, with each fence's identity; bound to `model_sha` if given."""
    loaded = load_model(model)
    subgraph = loaded.subgraphs[0]
    fences = []
    for index, after_op in enumerate(after_ops):
        op = subgraph.operators[after_op]
        fences.append(
            Fence(
                after_op=after_op,
                output_tensor_name=tensor_name(subgraph.tensors[op.outputs[0]]),
                opcode=operator_type(loaded.operator_codes[op.opcodeIndex]),
                segment_index=index,
            )
        )
    plan = FencePlan(
        fences=tuple(fences),
        operator_count=len(subgraph.operators),
        model_sha256=model_sha or model_sha256(loaded),
    )
    return plan.to_json()


def snapshot(folder: Path) -> dict[str, bytes]:
    """Every file under `folder`, by relative path."""
    return {str(path.relative_to(folder)): path.read_bytes() for path in sorted(folder.rglob("*")) if path.is_file()}


def leftovers(folder: Path) -> list[str]:
    """Hidden files or folders under `folder`: temporaries of an atomic write or a Vela run."""
    return sorted(str(path.relative_to(folder)) for path in folder.rglob(".*"))


# --- reading the SConscripts stays light --------------------------------------------------------------------------


def test_loading_the_tool_imports_no_stage_code() -> None:
    """Emitters run on every build, a no-op one included: the tool must not pull in numpy, the TFLite
    schema or jsonschema (the library's naming modules are light; stage code loads when an action runs)."""
    probe = (
        "import sys; import heliabuild.scons, heliabuild.scons.firmware, heliabuild.firmware.build; "
        "heavy = sorted(m for m in ('numpy', 'jsonschema', 'ai_edge_litert', 'ethosu') if m in sys.modules); "
        "print(heavy)"
    )
    run = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert run.stdout.strip() == "[]", run.stdout + run.stderr


def test_recorded_vela_version_defaults_to_the_installed_one(tmp_path: Path) -> None:
    project = make_project(tmp_path / "project", {"fences": [3, 6]})
    tree = build_ok(project, "-Q", "-n", "--tree=prune", "kws-vela").stdout
    assert f"ethos-u-vela=={vela_version()}" in tree


# --- the incremental matrix -----------------------------------------------------------------------------------------


@pytest.mark.slow
def test_incremental_matrix(tmp_path: Path) -> None:
    project = make_project(tmp_path / "project", {"fences": [3, 6]})
    build = project / "build"
    model = project / "model.tflite"

    first = build_ok(project)
    assert stage_counts(first) == {"fence": 1, "vela": 1}, output_of(first)
    assert all(path.is_file() for path in [*fence_outputs(build, "kws_fenced"), *vela_outputs(build, "kws_fenced")])

    # a no-op rebuilds nothing
    assert stage_counts(build_ok(project)) == {}

    # touching the model, or rewriting the same bytes, rebuilds nothing: signatures are contents
    os.utime(model, (time.time() + 60, time.time() + 60))
    assert stage_counts(build_ok(project)) == {}
    model.write_bytes(model.read_bytes())
    assert stage_counts(build_ok(project)) == {}

    # other fences: fence and Vela
    set_options(project, fences=[2, 6])
    result = build_ok(project)
    assert stage_counts(result) == {"fence": 1, "vela": 1}, output_of(result)
    fenced_bytes = (build / "kws_fenced.tflite").read_bytes()
    vela_mtimes = [path.stat().st_mtime_ns for path in vela_outputs(build, "kws_fenced")]

    # the same fences from a plan: the fence stage reruns, its output is byte-identical, so Vela does not
    (project / "plan.json").write_text(json_text(bound_plan(model, [2, 6])), encoding="utf-8")
    set_options(project, fences="plan.json")
    result = build_ok(project, "--debug=explain")
    assert stage_counts(result) == {"fence": 1}, output_of(result)
    assert (build / "kws_fenced.tflite").read_bytes() == fenced_bytes
    assert [path.stat().st_mtime_ns for path in vela_outputs(build, "kws_fenced")] == vela_mtimes

    # another accelerator: Vela only (its summary is named after the accelerator's default system config);
    # the plan is made for a platform with that NPU (aot-plan refuses an Ethos-U85 model on an Ethos-U55)
    u85_platform = "corstone320_ethos_u85"
    set_options(project, fences="plan.json", accelerator="ethos-u85-256", platform=u85_platform)
    result = build_ok(project)
    assert stage_counts(result) == {"vela": 1}, output_of(result)
    u85 = vela_outputs(build, "kws_fenced", default_system_config("ethos-u85-256"))
    assert all(path.is_file() for path in u85)
    segments = json.loads(u85[3].read_text(encoding="utf-8"))
    assert segments["vela"]["accelerator"] == "ethos-u85-256"

    # a deleted Vela CSV: Vela again, and nothing else
    u85[1].unlink()
    result = build_ok(project)
    assert stage_counts(result) == {"vela": 1}, output_of(result)
    assert u85[1].is_file()

    # another recorded Vela version: Vela again, and --debug=explain says why
    set_options(
        project,
        fences="plan.json",
        accelerator="ethos-u85-256",
        platform=u85_platform,
        HELIA_VELA_VERSION="0.0-simulated",
    )
    result = build_ok(project, "--debug=explain")
    assert stage_counts(result) == {"vela": 1}, output_of(result)
    assert "ethos-u-vela==0.0-simulated" in result.stdout, result.stdout
    assert stage_counts(build_ok(project)) == {}


@pytest.mark.slow
def test_a_vela_config_file_is_a_dependency(tmp_path: Path) -> None:
    import ethosu.vela

    config = Path(ethosu.vela.__file__).parents[1] / "config_files" / "Arm" / "vela.ini"  # Vela's own default
    options = {
        "fences": [3, 6],
        "system_config": U55_SUMMARY,
        "memory_mode": "Shared_Sram",
        "HELIA_VELA_CONFIG": ["vela.ini"],
    }
    project = make_project(tmp_path / "project", options)
    shutil.copyfile(config, project / "vela.ini")
    result = build_ok(project)
    assert stage_counts(result) == {"fence": 1, "vela": 1}, output_of(result)
    assert "No configuration file specified" not in output_of(result)

    with open(project / "vela.ini", "a", encoding="utf-8") as handle:
        handle.write("\n; edited\n")
    result = build_ok(project, "--debug=explain")
    assert stage_counts(result) == {"vela": 1}, output_of(result)
    assert "vela.ini" in result.stdout


# --- bad input ------------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def good_build(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A project with fences [3, 6] after a successful build; tests copy it before changing anything."""
    project = make_project(tmp_path_factory.mktemp("good") / "project", {"fences": [3, 6]})
    build_ok(project)
    return project


def _plan_for_another_model(project: Path) -> list[str]:
    other = project / "other.tflite"
    save_model(synthesize("chain", seed=1), other)
    plan = bound_plan(project / "model.tflite", [3, 6], model_sha=model_sha256(other))
    (project / "plan.json").write_text(json_text(plan), encoding="utf-8")
    set_options(project, fences="plan.json")
    return ["plan.json", "model.tflite", "model_sha256"]


def _missing_config(project: Path) -> list[str]:
    set_options(
        project,
        fences=[3, 6],
        system_config=U55_SUMMARY,
        memory_mode="Shared_Sram",
        HELIA_VELA_CONFIG=["missing.ini"],
    )
    return ["missing.ini"]


def _corrupt_model(project: Path) -> list[str]:
    (project / "model.tflite").write_bytes(b"not a TFLite flatbuffer" * 8)
    return ["model.tflite"]


BAD_INPUTS = {
    "plan bound to another model": (_plan_for_another_model, "fence"),
    "missing Vela config file": (_missing_config, "vela"),
    "corrupt model": (_corrupt_model, "fence"),
}


@pytest.mark.slow
@pytest.mark.parametrize("case", sorted(BAD_INPUTS))
def test_bad_input_stops_the_build_with_one_line_and_no_output_of_the_stage(
    good_build: Path, tmp_path: Path, case: str
) -> None:
    project = tmp_path / "project"
    shutil.copytree(good_build, project)
    make_bad, stage = BAD_INPUTS[case]
    fragments = make_bad(project)

    result = run_scons(project)
    assert result.returncode == 2, output_of(result)
    errors = heliabuild_lines(result, "heliabuild: error:")
    assert len(errors) == 1, output_of(result)
    for fragment in fragments:
        assert fragment in errors[0], (fragment, errors[0])
    assert "Traceback" not in output_of(result)
    build = project / "build"
    failed = fence_outputs(build, "kws_fenced") if stage == "fence" else vela_outputs(build, "kws_fenced")
    for path in failed:
        assert not path.exists(), path
    assert stage_counts(result) == {stage: 1}, output_of(result)  # nothing after the failed stage ran
    assert leftovers(build) == []


CONFIGURATION_MISTAKES = {
    "fences and a budget": ("env.HeliaPipeline('p', model, fences=[3], budget_cycles=100)", "not both"),
    "an empty fence list": ("env.HeliaPipeline('p', model, fences=[])", "non-empty list"),
    "a pipeline name twice": (
        "env.HeliaPipeline('p', model, fences=[3]); env.HeliaPipeline('p', model, build_dir='b')",
        "exists already",
    ),
    "a plan without a budget": ("env.HeliaFencePlan('plan.json', [model, 'x_per-layer.csv'])", "HELIA_BUDGET_CYCLES"),
    "a misnamed Vela target": ("env.HeliaVela('other.tflite', model)", "model_vela.tflite"),
    "Vela arguments as a string": ("env.HeliaVela(model, HELIA_VELA_EXTRA_ARGS='--verbose-weights')", "a list"),
    "an unknown accelerator": (
        "env.HeliaPipeline('p', model, accelerator='ethos-u99-1')",
        "accelerator='ethos-u99-1' is not an accelerator Vela knows",
    ),
}


@pytest.mark.parametrize("mistake", sorted(CONFIGURATION_MISTAKES))
def test_configuration_mistakes_are_reported_before_building(tmp_path: Path, mistake: str) -> None:
    call, expected = CONFIGURATION_MISTAKES[mistake]
    (tmp_path / "SConstruct").write_text(
        f"env = Environment(tools=['helia'], toolpath=[{str(SITE_TOOLS)!r}])\n"
        "model = env.HeliaSynth('model.tflite', HELIA_SYNTH_KIND='chain')\n"
        f"{call}\n",
        encoding="utf-8",
    )
    result = run_scons(tmp_path, ".")
    assert result.returncode == 2, output_of(result)
    assert expected in result.stderr, result.stderr
    assert "SConstruct:3" in result.stderr
    assert not (tmp_path / "model.tflite").exists()


# --- the repository's examples: reproducibility, -j2, -c, CacheDir ---------------------------------------------------


@pytest.fixture(scope="module")
def cached_reference(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, subprocess.CompletedProcess[str]]:
    """The examples built by `scons` in a fresh copy with an (empty) CacheDir: (project, cache, result)."""
    folder = tmp_path_factory.mktemp("reference")
    cache = folder / "cache"
    project = copy_project(folder / "project")
    return project, cache, build_ok(project, f"--helia-cache-dir={cache}")


@pytest.mark.slow
def test_the_default_target_builds_every_pipeline_end_to_end(
    cached_reference: tuple[Path, Path, subprocess.CompletedProcess[str]],
) -> None:
    project, _, result = cached_reference
    assert stage_counts(result) == EXAMPLE_STAGES, output_of(result)
    warnings = heliabuild_lines(result, "heliabuild: warning:")
    assert len(warnings) == len(set(warnings))
    assert all(line.startswith("heliabuild: warning: vela build/") for line in warnings), warnings

    budget = project / "build" / "kws_budget"
    plan = load_plan(budget / "kws_budget_fence_plan.json")
    assert plan.model_sha256 == sha256_file(budget / "kws_budget.tflite")
    assert plan.budget_cycles == 30000 and plan.coverage is not None and plan.coverage.fraction == 1.0
    planned = f"heliabuild: plan-fences build/kws_budget/kws_budget_fence_plan.json: {len(plan.fences)} fences, "
    assert f"{planned}{len(plan.fences) + 1} segments" in result.stdout.splitlines(), output_of(result)
    sidecar = load_sidecar(budget / "kws_budget_fenced.fenced_boundaries.json")
    assert list(sidecar.boundary_after_ops) == plan.after_ops
    for example in ("kws_budget", "kws_chain", "resnet_residual"):
        folder = project / "build" / example
        compiled, per_layer, summary, segments = vela_outputs(folder, f"{example}_fenced")
        load_model(compiled)
        assert read_per_layer(per_layer) and read_summary(summary).accelerator
        document = json.loads(segments.read_text(encoding="utf-8"))
        validate(document, "segments", str(segments))
        assert document["model_sha256"] == sha256_file(folder / f"{example}_fenced.tflite")
        assert document["source_sha256"] == sha256_file(folder / f"{example}.tflite")
        assert document["command_streams"]["matches_segments"], example
    unfenced = vela_outputs(budget / "unfenced", "kws_budget")
    assert all(path.is_file() for path in unfenced)


@pytest.mark.slow
def test_the_sidecar_is_a_dependency_of_vela(
    cached_reference: tuple[Path, Path, subprocess.CompletedProcess[str]],
) -> None:
    project, _, _ = cached_reference
    tree = build_ok(project, "-Q", "--tree=prune", "kws_chain-vela").stdout
    vela_part = tree.split("build/kws_chain/kws_chain_fenced_vela.tflite", 1)[1]
    assert "build/kws_chain/kws_chain_fenced.fenced_boundaries.json" in vela_part
    assert f"ethos-u-vela=={vela_version()}" in vela_part


@pytest.mark.slow
def test_two_clean_builds_in_different_folders_are_byte_identical_and_clean_removes_everything(
    cached_reference: tuple[Path, Path, subprocess.CompletedProcess[str]], tmp_path: Path
) -> None:
    reference, _, _ = cached_reference
    project = copy_project(tmp_path / "somewhere" / "else")
    result = build_ok(project, "-j2")
    assert stage_counts(result) == EXAMPLE_STAGES, output_of(result)
    assert sum(line.startswith("heliabuild: aot-plan ") for line in heliabuild_lines(result)) == len(EXAMPLES)
    ours, theirs = snapshot(project / "build"), snapshot(reference / "build")
    assert sorted(ours) == sorted(theirs)
    # the result bundles hold measurements (latency, time of the run): not byte-identical, compared apart
    bundles = {name for name in ours if is_bundle_file(name)}
    # per example: model, fence (2), Vela (4), AOT plan and report (2), runner (runner.json and 3 copied files);
    # kws_budget also: unfenced Vela (4), plan (1); residual_qemu also: the firmware ELF and layout in its runner,
    # the generated module (3), the policy source, two objects and the ELF, the shared kernel and firmware
    # libraries (2: the firmware library is built from the kernel library env.HeliaModule also links) and the
    # module generator's admission record (1)
    qemu_files = 2 + 3 + 4 + 2 + 1 if QEMU_EXAMPLE else 0
    assert len(ours) - len(bundles) == len(EXAMPLES) * (1 + 2 + 4 + 2 + 4) + 4 + 1 + qemu_files
    different = [name for name in ours if ours[name] != theirs[name] and name not in bundles]
    assert different == []

    cleaned = build_ok(project, "-c")
    lines = cleaned.stdout.splitlines()
    removed = sorted(line.removeprefix("Removed ") for line in lines if line.startswith("Removed build/"))
    assert set(removed) >= {f"build/{name}" for name in ours if name not in bundles}
    assert set(removed) <= {f"build/{name}" for name in ours}
    for example in EXAMPLES:
        assert f"Removed directory build/{example}/results/{example}" in lines
    assert snapshot(project / "build") == {}
    assert leftovers(project) == [".sconsign_sha256.dblite"]


def is_bundle_file(name: str) -> bool:
    """Whether `name` (relative to a build folder) lies in a result bundle, `[<example>/]results/<name>/...`, or
    is the build's summary of them (`heliabuild-summary.json`, `.csv`): files that hold measurements."""
    return "results" in Path(name).parts[:-1] or name.startswith("heliabuild-summary.")


@pytest.mark.slow
def test_a_second_checkout_with_the_same_cache_builds_nothing(
    cached_reference: tuple[Path, Path, subprocess.CompletedProcess[str]], tmp_path: Path
) -> None:
    reference, cache, _ = cached_reference
    project = copy_project(tmp_path / "checkout")
    result = build_ok(project, f"--helia-cache-dir={cache}")
    assert stage_counts(result) == {}, output_of(result)
    # a measurement is never taken from the cache: each run stage runs, everything else is retrieved
    assert sum(line.startswith("heliabuild: run ") for line in heliabuild_lines(result)) == len(EXAMPLES), output_of(
        result
    )
    expected = {name: data for name, data in snapshot(reference / "build").items() if not is_bundle_file(name)}
    retrieved = sorted(line for line in result.stdout.splitlines() if line.startswith("Retrieved `"))
    assert retrieved == sorted(f"Retrieved `build/{name}' from cache" for name in expected)
    ours = snapshot(project / "build")
    assert {name: data for name, data in ours.items() if not is_bundle_file(name)} == expected


# --- interruption -----------------------------------------------------------------------------------------------------

BIG = "big"
BIG_FENCES = [300, 600]
EARLIER_FENCES = [200, 500]


@pytest.fixture(scope="module")
def big_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A model Vela takes about a second on (heliabuild.synth's large model, 300 blocks of 32 channels)."""
    path = tmp_path_factory.mktemp("big") / f"{BIG}.tflite"
    save_model(large_model(seed=0, blocks=300, channels=32), path)
    return path


def make_big_project(folder: Path, model: Path, fences: list[int] = BIG_FENCES) -> Path:
    project = make_project(folder, {"fences": fences}, name=BIG, model=f"{BIG}.tflite")
    shutil.copyfile(model, project / f"{BIG}.tflite")
    return project


@pytest.fixture(scope="module")
def big_reference(tmp_path_factory: pytest.TempPathFactory, big_model: Path) -> dict[str, bytes]:
    project = make_big_project(tmp_path_factory.mktemp("big_reference") / "project", big_model)
    build_ok(project)
    return snapshot(project / "build")


@pytest.fixture(scope="module")
def big_earlier(tmp_path_factory: pytest.TempPathFactory, big_model: Path) -> Path:
    """The big pipeline built with EARLIER_FENCES: the earlier build each interruption test copies (its SCons
    database with it). Tests must not change it."""
    project = make_big_project(tmp_path_factory.mktemp("big_earlier") / "project", big_model, fences=EARLIER_FENCES)
    build_ok(project)
    return project


def assert_complete_or_absent(build: Path) -> None:
    """Every target of the big pipeline is absent, or complete and readable."""
    fenced, sidecar = fence_outputs(build, f"{BIG}_fenced")
    if fenced.exists():
        load_model(fenced)
    if sidecar.exists():
        validate(json.loads(sidecar.read_text(encoding="utf-8")), "fenced-boundaries", str(sidecar))
    compiled, per_layer, summary, segments = vela_outputs(build, f"{BIG}_fenced")
    if compiled.exists():
        load_model(compiled)
    if per_layer.exists():
        assert read_per_layer(per_layer)
    if summary.exists():
        read_summary(summary)
        assert list(csv.reader(io.StringIO(summary.read_text(encoding="utf-8"))))
    if segments.exists():
        validate(json.loads(segments.read_text(encoding="utf-8")), "segments", str(segments))


def interrupt_while_vela_runs(project: Path, sent: signal.Signals) -> subprocess.CompletedProcess[str]:
    """Start `scons` in its own process group, send `sent` to the group while Vela runs, and wait for the end."""
    environment = {key: value for key, value in os.environ.items() if key != "SCONSFLAGS"}
    # Vela runs in the private folder of its job (heliabuild.executor.worker), under the temporary folder.
    jobs = project.parent / "tmp"
    jobs.mkdir(exist_ok=True)
    environment["TMPDIR"] = str(jobs)
    process = subprocess.Popen(
        scons_command(),
        cwd=project,
        env=environment,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    deadline = time.monotonic() + 90
    try:
        while not list(jobs.glob(f"heliabuild-job-*/build/.{BIG}_fenced.vela-*")):
            assert process.poll() is None, "scons ended before Vela started"
            assert time.monotonic() < deadline, "Vela did not start"
            time.sleep(0.005)
        os.killpg(process.pid, sent)
        stdout, stderr = process.communicate(timeout=90)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    return subprocess.CompletedProcess(process.args, process.returncode, stdout, stderr)


@pytest.mark.slow
@pytest.mark.parametrize("sent", [signal.SIGINT, signal.SIGKILL], ids=["SIGINT", "SIGKILL"])
def test_an_interrupted_build_leaves_complete_or_absent_targets_and_the_next_build_completes(
    tmp_path: Path, big_earlier: Path, big_reference: dict[str, bytes], sent: signal.Signals
) -> None:
    # an earlier build (a copy of it), so SCons has a database to keep, then new fences: fence and Vela rerun
    project = copy_built(big_earlier, tmp_path / "project")
    set_options(project, fences=BIG_FENCES)
    interrupted = interrupt_while_vela_runs(project, sent)
    assert interrupted.returncode != 0, output_of(interrupted)
    assert "Traceback" not in output_of(interrupted)
    assert_complete_or_absent(project / "build")

    result = build_ok(project)  # SCons's database survived: it reads it, and reruns what it must
    # Vela reruns unless the signal landed just after it finished (then its outputs are complete and recorded).
    assert stage_counts(result)["vela"] <= 1, output_of(result)
    # the rebuilt run stage keeps the bundle of the earlier fences beside the new one, `<bundle>.previous/`
    ours = {n: d for n, d in snapshot(project / "build").items() if not n.startswith(f"results/{BIG}.previous/")}
    assert sorted(ours) == sorted(big_reference)
    # the result bundle holds measurements (latency, time of the run): it is compared apart
    assert {n: d for n, d in ours.items() if not is_bundle_file(n)} == {
        n: d for n, d in big_reference.items() if not is_bundle_file(n)
    }
    assert leftovers(project / "build") == []
    assert stage_counts(build_ok(project)) == {}


def test_the_qemu_example_is_among_those_built() -> None:
    """residual_qemu is left out of the examples above without the Arm toolchain and QEMU: without them this
    test is the skip (a failure under CI) that says so."""
    require(not missing_tools(), f"residual_qemu is not built here: {', '.join(missing_tools())} missing")
