"""What SCons itself would miss: a corrupted intermediate target, an edit that keeps an old mtime, two builds at
once. Real SCons, real Vela, real LiteRT, on tests/test_scons_pipeline.py's one-pipeline project (the
synthetic KWS chain fenced after operators 3 and 6, through the run stage); stages are counted from the
`heliabuild: <stage> <target>` lines.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from test_scons import build_ok, copy_project, heliabuild_lines, output_of, run_scons, scons_command
from test_scons_pipeline import BIG, big_model, leftovers, make_big_project, make_project, snapshot
from test_scons_runner import stage_counts

from heliabuild.model import save_model
from heliabuild.scons.process import BUILD_LOCK
from heliabuild.synth import synthesize

pytestmark = pytest.mark.slow

__all__ = ["big_model"]  # a fixture of tests/test_scons_pipeline.py, used here

UP_TO_DATE = "scons: `.' is up to date."
RESULTS = "build/results/kws"


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A project after one build; tests copy it (with SCons's database) and must not change it."""
    project = make_project(tmp_path_factory.mktemp("integrity") / "project", {"fences": [3, 6]})
    build_ok(project)
    return project


def copy_of(reference: Path, folder: Path) -> Path:
    return Path(shutil.copytree(reference, folder / "project", symlinks=True))


def without_bundle(files: dict[str, bytes]) -> dict[str, bytes]:
    """The files of a build snapshot but the result bundle's and the build's summary of it, which hold
    measurements (they differ per run)."""
    return {name: data for name, data in files.items() if not name.startswith(("results/", "heliabuild-summary."))}


def _another_pipelines_vela_model(project: Path) -> None:
    from heliabuild.vela import compile as vela_compile

    other = project / "other"
    save_model(synthesize("residual", seed=0), project / "other.tflite")
    compiled = vela_compile(project / "other.tflite", other)
    shutil.copyfile(compiled.model, project / "build" / "kws_fenced_vela.tflite")
    shutil.rmtree(other)
    (project / "other.tflite").unlink()


def _cut(path: str, size: int) -> Callable[[Path], None]:
    def cut(project: Path) -> None:
        with open(project / path, "r+b") as handle:
            handle.truncate(size)

    return cut


def _garbage(path: str) -> Callable[[Path], None]:
    def garbage(project: Path) -> None:
        (project / path).write_bytes(b"garbage\n")

    return garbage


def _overwrite(path: str, source: str) -> Callable[[Path], None]:
    def overwrite(project: Path) -> None:
        shutil.copyfile(project / source, project / path)

    return overwrite


CORRUPTIONS: dict[str, tuple[Callable[[Path], None], dict[str, int]]] = {
    "vela model of another pipeline": (_another_pipelines_vela_model, {"vela": 1}),
    "plan cut to 100 bytes": (_cut("build/kws_plan.json", 100), {"aot-plan": 1}),
    "runner's frozen model overwritten": (_overwrite("build/runner/kws/model.tflite", "model.tflite"), {"runner": 1}),
    "runner.json cut": (_cut("build/runner/kws/runner.json", 10), {"runner": 1}),
    "garbage fenced model": (_garbage("build/kws_fenced.tflite"), {"fence": 1}),
    "garbage sidecar": (_garbage("build/kws_fenced.fenced_boundaries.json"), {"fence": 1}),
    "garbage segments.json": (_garbage("build/kws_fenced_segments.json"), {"vela": 1}),
    "garbage per-layer CSV": (_garbage("build/kws_fenced_per-layer.csv"), {"vela": 1}),
}
"""A corruption of one intermediate target, and the stages the next build reruns: only the corrupted
target's, since it comes out byte-identical to what the earlier build made."""


@pytest.mark.parametrize("case", sorted(CORRUPTIONS))
def test_a_corrupted_target_is_rebuilt_by_the_next_build(reference: Path, tmp_path: Path, case: str) -> None:
    corrupt, reruns = CORRUPTIONS[case]
    project = copy_of(reference, tmp_path)
    assert UP_TO_DATE in build_ok(project).stdout  # the copy, database included, is up to date
    corrupt(project)
    result = build_ok(project)
    assert stage_counts(result) == reruns, output_of(result)
    assert without_bundle(snapshot(project / "build")) == without_bundle(snapshot(reference / "build"))
    again = build_ok(project)
    assert stage_counts(again) == {} and UP_TO_DATE in again.stdout, output_of(again)


def test_a_corrupted_target_without_file_sources_is_rebuilt(tmp_path: Path) -> None:
    """HeliaSynth's model depends on Value nodes only: the integrity node's check holds for it too."""
    project = copy_project(tmp_path / "project")
    build_ok(project, "kws_chain")
    model = project / "build" / "kws_chain" / "kws_chain.tflite"
    built = model.read_bytes()
    model.write_bytes(b"garbage\n")
    result = build_ok(project, "kws_chain")
    assert stage_counts(result) == {"synth": 1}, output_of(result)
    assert model.read_bytes() == built


def test_the_rebuild_is_explained(reference: Path, tmp_path: Path) -> None:
    project = copy_of(reference, tmp_path)
    _cut("build/kws_plan.json", 100)(project)
    result = build_ok(project, "--debug=explain")
    assert (
        "scons: rebuilding `build/kws_plan.json' because `heliabuild: target content as built' changed"
        in result.stdout.splitlines()
    ), output_of(result)


@pytest.mark.parametrize("tampered", ["result.json", "artifacts/samples/0"], ids=["declared", "per-sample"])
def test_a_tampered_bundle_is_moved_aside_whole_with_one_warning_and_the_run_stage_reruns(
    reference: Path, tmp_path: Path, tampered: str
) -> None:
    project = copy_of(reference, tmp_path)
    bundle = project / RESULTS
    file = bundle / tampered
    if file.is_dir():  # a per-sample output, named after the model's output: not a declared target
        file = next(path for path in file.iterdir() if path.is_file())
    relative = file.relative_to(bundle).as_posix()
    file.write_bytes(file.read_bytes() + b"x")
    tampered_bundle = snapshot(bundle)
    (project / f"{RESULTS}.damaged-1").mkdir()  # a name taken already: the next one is used

    result = build_ok(project)
    assert stage_counts(result) == {"run": 1}, output_of(result)
    warnings = [line for line in heliabuild_lines(result) if line.startswith("heliabuild: warning:")]
    assert len(warnings) == 1, output_of(result)
    assert f"{RESULTS} did not verify as a result bundle" in warnings[0] and f"({relative}: " in warnings[0]
    assert f"moved it aside whole to {RESULTS}.damaged-2 and ran again" in warnings[0]
    assert snapshot(project / f"{RESULTS}.damaged-2") == tampered_bundle  # every byte kept
    assert "Traceback" not in output_of(result)
    assert not list((project / f"{RESULTS}.damaged-1").iterdir())

    again = build_ok(project)
    assert stage_counts(again) == {} and "warning" not in output_of(again), output_of(again)


def test_an_edit_keeping_an_old_mtime_rebuilds_unless_the_user_sets_max_drift(tmp_path: Path) -> None:
    project = make_project(tmp_path / "project", {"fences": [3, 6]})
    model = project / "model.tflite"
    three_days_ago = time.time() - 3 * 24 * 3600
    os.utime(model, (three_days_ago, three_days_ago))
    build_ok(project)

    save_model(synthesize("chain", seed=1), model)  # as `cp -p`, `tar` or `rsync -t` leave it: the old mtime
    os.utime(model, (three_days_ago, three_days_ago))
    edited = build_ok(project)
    assert stage_counts(edited) == {"fence": 1, "vela": 1, "aot-plan": 1, "runner": 1, "run": 1}, output_of(edited)
    assert stage_counts(build_ok(project)) == {}

    # a max_drift the user sets is kept: SCons then trusts the old mtime, as documented
    save_model(synthesize("chain", seed=2), model)
    os.utime(model, (three_days_ago, three_days_ago))
    trusted = build_ok(project, "--max-drift=86400")
    assert stage_counts(trusted) == {}, output_of(trusted)
    assert stage_counts(build_ok(project))["fence"] == 1


def test_a_second_build_at_once_waits_for_the_first_and_removes_nothing_of_it(tmp_path: Path, big_model: Path) -> None:
    project = make_big_project(tmp_path / "project", big_model)
    jobs = tmp_path / "tmp"  # Vela runs in its job's private folder (heliabuild.executor.worker), under TMPDIR
    jobs.mkdir()
    environment = {key: value for key, value in os.environ.items() if key != "SCONSFLAGS"} | {"TMPDIR": str(jobs)}
    first = subprocess.Popen(
        scons_command(), cwd=project, env=environment, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    build = project / "build"
    deadline = time.monotonic() + 90
    try:
        while not list(jobs.glob(f"heliabuild-job-*/build/.{BIG}_fenced.vela-*")):
            assert first.poll() is None, "scons ended before Vela started"
            assert time.monotonic() < deadline, "Vela did not start"
            time.sleep(0.005)
        second = run_scons(project)  # while the first build's Vela runs in its work folder
        stdout, stderr = first.communicate(timeout=120)
    finally:
        if first.poll() is None:
            first.kill()
            first.wait()
    assert first.returncode == 0, stdout + stderr
    first_lines = heliabuild_lines(subprocess.CompletedProcess([], 0, stdout, ""))
    assert "heliabuild: vela build/big_fenced_vela.tflite" in first_lines
    assert second.returncode == 0, output_of(second)
    waiting = f"heliabuild: waiting for the other scons building {project} to finish ({project / BUILD_LOCK})"
    assert heliabuild_lines(second) == [waiting], output_of(second)
    assert UP_TO_DATE in second.stdout
    assert leftovers(build) == []
    assert not (project / BUILD_LOCK).exists()
