"""The SCons side end to end: the repo's SConstruct, site tool and examples, run by real SCons.

Each test copies SConstruct, site_scons and examples/ into a temporary folder
and runs the `scons` next to the interpreter (or `python -m SCons`) there, so
nothing is written into the source tree and every build starts from a fresh
clone's state. Every example's fenced model is `build/<example>/<example>_fenced.tflite`.
The pipelines as a whole (Vela, plans, staleness, caching, interruption) are
tested in tests/test_scons_pipeline.py, which reuses the helpers here.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

import pytest
from helpers.skips import require

import heliabuild
from heliabuild.files import sha256_file
from heliabuild.schema_files import validate
from heliabuild.scons.firmware import missing_tools

REPO = Path(__file__).resolve().parents[1]
SITE_TOOLS = REPO / "site_scons" / "site_tools"
EXAMPLES = sorted(
    path.parent.name
    for path in (REPO / "examples").glob("*/SConscript")
    if path.parent.name != "residual_qemu" or not missing_tools()  # skipped without the Arm toolchain and QEMU
)
KWS = "kws_chain"
RESNET = "resnet_residual"
UP_TO_DATE = "scons: `fenced_model' is up to date."
DEFAULT_UP_TO_DATE = "scons: `all' is up to date."


def scons_command() -> list[str]:
    """The scons of this interpreter's environment: the script beside sys.executable, else `-m SCons`."""
    script = Path(sys.executable).with_name("scons.exe" if os.name == "nt" else "scons")
    return [str(script)] if script.is_file() else [sys.executable, "-m", "SCons"]


def copy_project(destination: Path) -> Path:
    """A copy of what a fresh clone gives SCons: SConstruct, site_scons and examples/."""
    destination.mkdir(parents=True)
    shutil.copy2(REPO / "SConstruct", destination / "SConstruct")
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    shutil.copytree(REPO / "site_scons", destination / "site_scons", ignore=ignore)
    shutil.copytree(REPO / "examples", destination / "examples", ignore=ignore)
    return destination


def run_scons(project: Path, *arguments: str) -> subprocess.CompletedProcess[str]:
    """Run scons in `project` with `arguments`; output is captured as text."""
    environment = {key: value for key, value in os.environ.items() if key != "SCONSFLAGS"}
    return subprocess.run(
        [*scons_command(), *arguments],
        cwd=project,
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def output_of(result: subprocess.CompletedProcess[str]) -> str:
    return result.stdout + result.stderr


STAGE_COUNTER = re.compile(r"^heliabuild: \[\d+/\d+\] ")
STAGE_DONE = re.compile(r": done in \d+\.\d\d s$")


def heliabuild_lines(result: subprocess.CompletedProcess[str], prefix: str = "heliabuild:") -> list[str]:
    """The `heliabuild:` lines starting with `prefix`, each stage line without its `[k/n]` counter and
    without the `done in` line that ends the stage (tests/test_scons_progress.py tests those)."""
    lines = (STAGE_COUNTER.sub("heliabuild: ", line) for line in output_of(result).splitlines())
    return [line for line in lines if line.startswith(prefix) and not STAGE_DONE.search(line)]


def fenced_outputs(project: Path, example: str) -> tuple[Path, Path]:
    """The fenced model and sidecar of `example` in `project`."""
    folder = project / "build" / example
    return folder / f"{example}_fenced.tflite", folder / f"{example}_fenced.fenced_boundaries.json"


def fence_line(example: str) -> str:
    return f"heliabuild: fence build/{example}/{example}_fenced.tflite"


def build_ok(project: Path, *arguments: str) -> subprocess.CompletedProcess[str]:
    result = run_scons(project, *arguments)
    assert result.returncode == 0, output_of(result)
    return result


def examples_built_once(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, subprocess.CompletedProcess[str]]:
    """A fresh copy of the project after one `scons` (the default target: every pipeline), and that run's
    result: built once for the whole run (tests/conftest.py's built_once_per_run) and never changed, so that
    the test files asserting on that first build share it; a test copies it (copy_built) to use it."""
    from conftest import built_once_per_run

    def build(folder: Path) -> None:
        shutil.rmtree(folder / "project", ignore_errors=True)  # what a failed build of another test left
        result = build_ok(copy_project(folder / "project"))
        record = {"args": result.args, "stdout": result.stdout, "stderr": result.stderr}
        (folder / "result.json").write_text(json.dumps(record), encoding="utf-8")

    folder = built_once_per_run(tmp_path_factory, "examples-built", build)
    record = json.loads((folder / "result.json").read_text(encoding="utf-8"))
    return folder / "project", subprocess.CompletedProcess(record["args"], 0, record["stdout"], record["stderr"])


def copy_built(project: Path, destination: Path) -> Path:
    """A copy at `destination` of the built `project`, SCons's database and modification times included, so
    the copy is up to date as the original is."""
    return Path(shutil.copytree(project, destination, symlinks=True))


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, subprocess.CompletedProcess[str]]:
    """A project copy after one `scons` (the default target: every pipeline), and that run's result
    (examples_built_once, copied for this module).

    Tests must not change it.
    """
    project, result = examples_built_once(tmp_path_factory)
    return copy_built(project, tmp_path_factory.mktemp("built") / "project"), result


def test_there_are_examples_to_build() -> None:
    assert {KWS, RESNET} <= set(EXAMPLES)


def test_fenced_model_builds_every_example_with_one_fence_line_each(
    built: tuple[Path, subprocess.CompletedProcess[str]],
) -> None:
    project, result = built
    assert sorted(heliabuild_lines(result, "heliabuild: fence ")) == sorted(fence_line(e) for e in EXAMPLES)
    assert "Traceback" not in output_of(result)
    for example in EXAMPLES:
        model, sidecar = fenced_outputs(project, example)
        assert model.is_file() and sidecar.is_file(), example
        document = json.loads(sidecar.read_text(encoding="utf-8"))
        validate(document, "fenced-boundaries", str(sidecar))
        assert document["fenced_sha256"] == sha256_file(model)
    assert not (REPO / "examples" / KWS / "build").exists()


def test_example_sidecars_record_the_fences_asked_for(built: tuple[Path, subprocess.CompletedProcess[str]]) -> None:
    project, _ = built
    kws = json.loads(fenced_outputs(project, KWS)[1].read_text(encoding="utf-8"))
    assert kws["boundary_after_ops"] == [3, 6]
    plan = json.loads((REPO / "examples" / RESNET / "fence_plan.json").read_text(encoding="utf-8"))
    resnet = json.loads(fenced_outputs(project, RESNET)[1].read_text(encoding="utf-8"))
    assert resnet["boundary_after_ops"] == [fence["after_op"] for fence in plan["fences"]]
    # the plan cuts inside a residual block, where two tensors cross the cut
    assert max(len(segment["tensor_pairs"]) for segment in resnet["segments"]) == 2


def test_second_run_is_up_to_date_and_prints_nothing_of_heliabuild(
    built: tuple[Path, subprocess.CompletedProcess[str]],
) -> None:
    project, _ = built
    for arguments, up_to_date in ((["fenced_model"], UP_TO_DATE), ([], DEFAULT_UP_TO_DATE)):  # [] is the default
        result = build_ok(project, *arguments)
        assert heliabuild_lines(result) == [], output_of(result)
        assert up_to_date in result.stdout


def test_tool_versions_are_dependencies_of_every_fenced_model(
    built: tuple[Path, subprocess.CompletedProcess[str]],
) -> None:
    project, _ = built
    tree = build_ok(project, "-Q", "--tree=prune", "fenced_model").stdout
    assert f"heliabuild=={heliabuild.__version__}" in tree
    assert f"ai-edge-litert=={version('ai-edge-litert')}" in tree


def test_changing_fences_rebuilds_only_that_example(tmp_path: Path) -> None:
    project = copy_project(tmp_path / "project")
    build_ok(project, "fenced_model")
    untouched = {e: fenced_outputs(project, e)[0].stat().st_mtime_ns for e in EXAMPLES if e != KWS}

    sconscript = project / "examples" / KWS / "SConscript"
    text = sconscript.read_text(encoding="utf-8")
    assert "fences=[3, 6]" in text
    sconscript.write_text(text.replace("fences=[3, 6]", "fences=[2, 6]"), encoding="utf-8")

    result = build_ok(project, "fenced_model")
    assert heliabuild_lines(result) == [fence_line(KWS)]
    sidecar = json.loads(fenced_outputs(project, KWS)[1].read_text(encoding="utf-8"))
    assert sidecar["boundary_after_ops"] == [2, 6]
    assert {e: fenced_outputs(project, e)[0].stat().st_mtime_ns for e in untouched} == untouched


def test_parallel_clean_build_is_byte_identical_and_clean_removes_it(
    built: tuple[Path, subprocess.CompletedProcess[str]], tmp_path: Path
) -> None:
    reference, _ = built
    project = copy_project(tmp_path / "elsewhere" / "project")
    result = build_ok(project, "-j2", "fenced_model")
    assert sorted(heliabuild_lines(result, "heliabuild: fence ")) == sorted(fence_line(e) for e in EXAMPLES)
    for example in EXAMPLES:
        for ours, theirs in zip(fenced_outputs(project, example), fenced_outputs(reference, example), strict=True):
            assert ours.read_bytes() == theirs.read_bytes(), ours.name

    build_ok(project, "-c", "fenced_model")
    for example in EXAMPLES:
        for path in fenced_outputs(project, example):
            assert not path.exists(), path


def test_a_plan_bound_to_another_model_stops_the_build_and_leaves_no_output(tmp_path: Path) -> None:
    project = copy_project(tmp_path / "project")
    build_ok(project, "fenced_model")  # outputs of an earlier good build must not survive either

    plan_path = project / "examples" / RESNET / "fence_plan.json"
    plan = json.loads(plan_path.read_text(encoding="utf-8"))
    wrong = "ADD" if plan["fences"][-1]["opcode"] != "ADD" else "CONV_2D"
    plan["fences"][-1]["opcode"] = wrong
    plan_path.write_text(json.dumps(plan), encoding="utf-8")

    result = run_scons(project, "fenced_model")
    assert result.returncode != 0
    errors = heliabuild_lines(result, "heliabuild: error:")
    assert len(errors) == 1, output_of(result)
    assert f"examples/{RESNET}/fence_plan.json" in errors[0]
    assert f"build/{RESNET}/{RESNET}.tflite" in errors[0]
    assert repr(wrong) in errors[0]
    assert "Traceback" not in output_of(result)
    for path in fenced_outputs(project, RESNET):
        assert not path.exists(), path


CONFIGURATION_MISTAKES = {
    "plan and HELIA_FENCES": ("env.HeliaFence('f.tflite', [model, 'plan.json'], HELIA_FENCES=[1])", "given twice"),
    "no fences at all": ("env.HeliaFence('f.tflite', model)", "no fences"),
    "fences as a string": ("env.HeliaFence('f.tflite', model, HELIA_FENCES='1,2')", "expected a list"),
    "synth without a kind": ("env.HeliaSynth('other.tflite')", "HELIA_SYNTH_KIND is not set"),
}


@pytest.mark.parametrize("mistake", sorted(CONFIGURATION_MISTAKES))
def test_configuration_mistakes_are_reported_before_building(tmp_path: Path, mistake: str) -> None:
    call, expected = CONFIGURATION_MISTAKES[mistake]
    (tmp_path / "plan.json").write_text('{"contract_version": 1, "subgraph": 0, "operator_count": 9, "fences": []}\n')
    (tmp_path / "SConstruct").write_text(
        f"env = Environment(tools=['helia'], toolpath=[{str(SITE_TOOLS)!r}])\n"
        "model = env.HeliaSynth('model.tflite', HELIA_SYNTH_KIND='chain')\n"
        f"{call}\n",
        encoding="utf-8",
    )
    result = run_scons(tmp_path, ".")
    assert result.returncode == 2
    assert expected in result.stderr
    assert "SConstruct:3" in result.stderr  # the message points at the call
    assert not (tmp_path / "model.tflite").exists()


def test_a_library_error_in_an_action_is_one_line_without_traceback(tmp_path: Path) -> None:
    (tmp_path / "SConstruct").write_text(
        f"env = Environment(tools=['helia'], toolpath=[{str(SITE_TOOLS)!r}])\n"
        "model = env.HeliaSynth('model.tflite', HELIA_SYNTH_KIND='chain')\n"
        "env.HeliaFence('fenced.tflite', model, HELIA_FENCES=[99])\n",
        encoding="utf-8",
    )
    result = run_scons(tmp_path, ".")
    assert result.returncode == 2
    errors = heliabuild_lines(result, "heliabuild: error:")
    assert len(errors) == 1 and "model.tflite" in errors[0] and "99" in errors[0], output_of(result)
    assert "Traceback" not in output_of(result)
    assert (tmp_path / "model.tflite").is_file()
    assert not (tmp_path / "fenced.tflite").exists()
    assert not (tmp_path / "fenced.fenced_boundaries.json").exists()


def test_the_qemu_example_is_among_those_built() -> None:
    """residual_qemu is left out of the examples above without the Arm toolchain and QEMU: without them this
    test is the skip (a failure under CI) that says so."""
    require(not missing_tools(), f"residual_qemu is not built here: {', '.join(missing_tools())} missing")
