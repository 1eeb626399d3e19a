"""Where SCons runs Vela (heliabuild.scons.executor): inside the SCons process at -j1, as a subprocess at
-j2 or when Vela was imported under another sys.stdout, and the same outputs, warnings and errors either
way. Real SCons, real Vela, a synthetic model.

The SConstruct records every subprocess the SCons process starts (an audit hook on `subprocess.Popen`),
so a test sees where Vela ran.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from test_scons import SITE_TOOLS, build_ok, heliabuild_lines, output_of, run_scons
from test_scons_pipeline import is_bundle_file

from heliabuild.model import save_model
from heliabuild.synth import synthesize
from heliabuild.vela import output_names

pytestmark = pytest.mark.slow

SCONSTRUCT = """\
import atexit, json, sys

started = []
sys.addaudithook(lambda event, args: started.append(list(map(str, args[1]))) if event == "subprocess.Popen" else None)
atexit.register(lambda: open("subprocesses.json", "w").write(json.dumps(started)))
if ARGUMENTS.get("bind_vela"):  # Vela imported while sys.stdout is another stream: it cannot be captured here
    import io
    own, sys.stdout = sys.stdout, io.StringIO()
    import ethosu.vela.stats_writer
    sys.stdout = own

SetOption("hash_format", "sha256")
env = Environment(tools=["helia"], toolpath=[{site_tools!r}])
env.Decider("content")
with open("options.json", encoding="utf-8") as handle:
    options = json.load(handle)
env.HeliaPipeline("kws", "model.tflite", build_dir="build", policy="policy.yaml", **options)
"""
POLICY = "defaults:\n  fvp:\n    acquisition: {state: carry, warmup_invokes: 1, measured_invokes: 3}\n"
VELA_SCRIPT = "in_process.py"
"""The script a Vela subprocess runs (heliabuild.vela.in_process.command)."""


def project(folder: Path, **options: object) -> Path:
    folder.mkdir(parents=True)
    (folder / "SConstruct").write_text(SCONSTRUCT.format(site_tools=str(SITE_TOOLS)), encoding="utf-8")
    (folder / "policy.yaml").write_text(POLICY, encoding="utf-8")
    (folder / "options.json").write_text(json.dumps({"fences": [3, 6], **options}), encoding="utf-8")
    save_model(synthesize("chain", seed=0), folder / "model.tflite")
    return folder


def vela_subprocesses(folder: Path) -> int:
    """How many Vela subprocesses the last scons in `folder` started."""
    started = json.loads((folder / "subprocesses.json").read_text(encoding="utf-8"))
    return sum(any(Path(word).name == VELA_SCRIPT for word in command) for command in started)


def built_files(folder: Path) -> dict[str, bytes]:
    """Every file under build/ but the run's result bundle and the build's summary of it (is_bundle_file):
    measurements of this run."""
    build = folder / "build"
    return {
        path.relative_to(build).as_posix(): path.read_bytes()
        for path in sorted(build.rglob("*"))
        if path.is_file() and not is_bundle_file(path.relative_to(build).as_posix())
    }


def table_words(result: subprocess.CompletedProcess[str]) -> list[str]:
    """The first word of each line that is not heliabuild's: the summary table's (the rest shows measured times)."""
    return [line.split(" ")[0] for line in output_of(result).splitlines() if not line.startswith("heliabuild: ")]


def vela_lines(result: subprocess.CompletedProcess[str]) -> list[str]:
    return [line for line in heliabuild_lines(result) if " vela " in line]


def test_j1_runs_vela_in_the_scons_process_and_builds_what_j2_builds(tmp_path: Path) -> None:
    one = project(tmp_path / "one")
    two = project(tmp_path / "two")
    serial = build_ok(one)
    parallel = build_ok(two, "-j2")
    assert vela_subprocesses(one) == 0
    assert vela_subprocesses(two) == 1
    assert built_files(one) == built_files(two)
    assert set(output_names("kws_fenced.tflite", "Ethos_U55_High_End_Embedded").values()) <= set(built_files(one))
    warnings = vela_lines(serial)
    assert warnings == vela_lines(parallel)
    assert [line.split(": ")[3] for line in warnings if "warning" in line] == [
        "Vela chose its own defaults for what was not given"
    ]
    assert "Traceback" not in output_of(serial)
    # SCons's own lines are all there, in the same order, and nothing of what Vela printed got past the capture
    assert heliabuild_lines(serial) == heliabuild_lines(parallel)
    assert table_words(serial) == table_words(parallel)
    assert "Accelerator configuration" not in output_of(serial)
    assert [path.name for path in (one / "build").rglob(".*")] == []  # no work folder or capture left


def test_vela_bound_to_another_stream_runs_as_a_subprocess_at_j1(tmp_path: Path) -> None:
    one = project(tmp_path / "one")
    bound = project(tmp_path / "bound")
    build_ok(one)
    build_ok(bound, "bind_vela=1")
    assert (vela_subprocesses(one), vela_subprocesses(bound)) == (0, 1)
    assert built_files(one) == built_files(bound)


@pytest.mark.parametrize(
    ("options", "fragment"),
    [
        ({"HELIA_VELA_EXTRA_ARGS": ["--cpu-tensor-alignment", "7"]}, "cpu-tensor-alignment"),
        ({"system_config": "Ethos_U55_Nowhere"}, "Ethos_U55_Nowhere"),
    ],
    ids=["bad Vela option", "bad system config"],
)
def test_a_failing_vela_compile_gives_one_error_at_j1_as_at_j2_and_writes_nothing(
    tmp_path: Path, options: dict[str, object], fragment: str
) -> None:
    errors = {}
    for jobs in ("-j1", "-j2"):
        folder = project(tmp_path / jobs, **options)
        result = run_scons(folder, jobs)
        assert result.returncode == 2, output_of(result)
        errors[jobs] = heliabuild_lines(result, "heliabuild: error:")
        assert len(errors[jobs]) == 1, output_of(result)
        assert fragment in errors[jobs][0]
        assert "Traceback" not in output_of(result)
        build = folder / "build"
        assert sorted(path.name for path in build.iterdir() if "vela" in path.name or path.name.startswith(".")) == []
    assert errors["-j1"] == errors["-j2"]


def test_after_a_failing_compile_in_process_the_next_build_is_the_subprocess_build(tmp_path: Path) -> None:
    """A refused compile inside the SCons process leaves nothing behind that changes the next compile."""
    folder = project(tmp_path / "one", HELIA_VELA_EXTRA_ARGS=["--cpu-tensor-alignment", "7"])
    assert run_scons(folder).returncode == 2
    (folder / "options.json").write_text(json.dumps({"fences": [3, 6]}), encoding="utf-8")
    build_ok(folder)
    assert vela_subprocesses(folder) == 0
    other = project(tmp_path / "two")
    build_ok(other, "-j2")
    assert built_files(folder) == built_files(other)
