"""The summary table the tool prints, and SConscript-time mistakes, in a user's own project outside the checkout.

The project's SConstruct loads the installed package's tool (`heliabuild.scons.tool`), with no site_scons
and no toolpath, and builds two pipelines on the synthetic KWS chain: `kws` (a good policy) and `bad`
(a policy the runner refuses), each in its own folder.
"""

from __future__ import annotations

import csv
import json
import os
import re
import signal
import subprocess
import threading
from pathlib import Path

import pytest
from test_scons import build_ok, heliabuild_lines, output_of, run_scons, scons_command

from heliabuild.api import load_result
from heliabuild.schema_files import validate
from heliabuild.units import time_text, time_unit

pytestmark = pytest.mark.slow

SCONSTRUCT = """\
import heliabuild.scons

env = Environment(tools=["default", heliabuild.scons.tool])
model = env.HeliaSynth("kws.tflite", HELIA_SYNTH_KIND="chain")
env.HeliaPipeline("kws", model, fences=[3, 6], policy="policy.yaml", build_dir="kws")
env.HeliaPipeline("bad", model, fences=[3, 6], policy="bad.yaml", build_dir="bad"{more})
"""
POLICY = "defaults:\n  fvp:\n    acquisition: {{state: {state}, warmup_invokes: {warmup}, measured_invokes: {n}}}\n"
HEADER = "pipeline  backend  segments"


def user_project(folder: Path, measured: int = 3, more: str = "") -> Path:
    """The two-pipeline project in `folder` (module docstring); `more` is appended to the `bad` call."""
    folder.mkdir(parents=True)
    (folder / "SConstruct").write_text(SCONSTRUCT.format(more=more), encoding="utf-8")
    (folder / "policy.yaml").write_text(POLICY.format(state="carry", warmup=1, n=measured), encoding="utf-8")
    (folder / "bad.yaml").write_text(POLICY.format(state="single", warmup=2, n=3), encoding="utf-8")
    return folder


def table(result: subprocess.CompletedProcess[str]) -> list[str]:
    """The lines of the summary table a build printed ([] for none); it must be the end of stdout."""
    if HEADER not in result.stdout:
        return []
    lines = result.stdout[result.stdout.index(HEADER) :].splitlines()
    assert result.stdout.count(HEADER) == 1 and result.stdout.endswith(lines[-1] + "\n"), result.stdout
    return lines


def test_a_user_build_prints_the_table_except_after_failure_dry_run_or_clean(tmp_path: Path) -> None:
    project = user_project(tmp_path / "my-project")
    built = build_ok(project, "kws")
    rows = table(built)
    assert len(rows) == 4 and rows[2].startswith("kws ") and rows[2].endswith("kws/results/kws"), output_of(built)
    assert rows[3] == "note: host time is LiteRT on this machine's CPU: not comparable with Vela's NPU estimate"
    vela = json.loads((project / "kws" / "kws_fenced_segments.json").read_text(encoding="utf-8"))["vela"]
    cells = dict(zip(re.split(r"\s{2,}", rows[0]), re.split(r"\s{2,}", rows[2].strip()), strict=True))
    assert cells["Vela SRAM"] == f"{vela['sram_memory_used_kib']:,.1f} KiB", rows  # Vela's figure, labelled so
    assert cells["Vela flash"] == f"{vela['off_chip_flash_memory_used_kib']:,.1f} KiB", rows
    result = load_result(project / "kws" / "results" / "kws")
    latencies = sorted(sample.latency_s for sample in result.samples)
    assert cells["measured"] == "measured (host time, LiteRT, n=3)"
    assert cells["median"] == time_text(latencies[1]) and cells["median"].endswith((" us", " ms"))
    assert cells["spread"].startswith(time_text(latencies[-1] - latencies[0], time_unit(latencies[1])) + " (")
    estimates = "/".join(f"{segment['estimated_cycles']:,}" for segment in result.segments)
    assert cells["Vela NPU estimate (cycles per segment)"] == estimates

    document = json.loads((project / "build" / "heliabuild-summary.json").read_text(encoding="utf-8"))
    validate(document, "summary", "heliabuild-summary.json")
    (row,) = document["pipelines"]
    assert row["pipeline"] == "kws" and row["bundle"] == "kws/results/kws" and row["backend"] == "litert"
    assert row["vela_npu_estimate_cycles"] == [segment["estimated_cycles"] for segment in result.segments]
    assert row["vela_sram_used_kib"] == vela["sram_memory_used_kib"]
    measured = row["measured"]
    assert (measured["figure"], measured["scope"], measured["unit"], measured["n"]) == (
        "latency_s",
        "host_wall_clock",
        "s",
        3,
    )
    assert (measured["median"], measured["min"], measured["max"]) == (latencies[1], latencies[0], latencies[-1])
    assert measured["label"] == "measured (host time, LiteRT, n=3)" and document["sweeps"] == []
    with (project / "build" / "heliabuild-summary.csv").open(encoding="utf-8", newline="") as stream:
        (line,) = list(csv.DictReader(stream))
    assert line["pipeline"] == "kws" and line["measured_median"] == repr(latencies[1])
    assert line["measured_n"] == "3" and line["measured_scope"] == "host_wall_clock"
    assert line["vela_npu_estimate_cycles"] == "/".join(str(s["estimated_cycles"]) for s in result.segments)
    written = {
        name: (project / "build" / name).read_bytes() for name in ("heliabuild-summary.json", "heliabuild-summary.csv")
    }
    assert not any(str(tmp_path).encode() in data for data in written.values())

    again = build_ok(project, "kws")
    assert table(again) == rows and "Traceback" not in output_of(again)
    assert {name: (project / "build" / name).read_bytes() for name in written} == written  # the same bytes
    assert table(build_ok(project, "kws-vela")) == []  # no run stage in this build
    assert table(build_ok(project, "-n", "kws")) == []
    failed = run_scons(project, "-k")  # kws's run stage is up to date, bad's runner fails
    assert failed.returncode == 2 and "heliabuild: error: bad.yaml" in failed.stderr, output_of(failed)
    assert table(failed) == [] and "Traceback" not in output_of(failed)
    # neither the failed build nor the dry run wrote the summary: it is the last good build's
    assert {name: (project / "build" / name).read_bytes() for name in written} == written
    cleaned = build_ok(project, "-c", "kws")
    assert table(cleaned) == [] and not (project / "kws" / "results").exists()
    assert not (project / "build").exists()  # the summary files and their folder went with the clean


def test_a_users_own_file_where_the_summary_goes_is_left_alone(tmp_path: Path) -> None:
    project = user_project(tmp_path / "my-project")
    (project / "build").mkdir()
    (project / "build" / "heliabuild-summary.csv").write_text("my,own\n1,2\n", encoding="utf-8")
    built = build_ok(project, "kws")
    assert len(table(built)) == 4
    assert (
        "heliabuild: warning: build/heliabuild-summary.csv is not a summary heliabuild wrote: the summary is not "
        "written"
    ) in built.stderr
    assert sorted(path.name for path in (project / "build").iterdir()) == ["heliabuild-summary.csv"]
    build_ok(project, "-c", "kws")
    assert (project / "build" / "heliabuild-summary.csv").read_text(encoding="utf-8") == "my,own\n1,2\n"


def test_ctrl_c_while_a_run_measures_prints_no_table_and_no_traceback(tmp_path: Path) -> None:
    """The interrupt comes once the run stage has said it started (its progress line, printed as its action
    starts), while its 10,000 invokes are measured: no fixed sleep guesses when that is."""
    project = user_project(tmp_path / "my-project", measured=10_000)
    environment = {key: value for key, value in os.environ.items() if key != "SCONSFLAGS"}
    environment["PYTHONUNBUFFERED"] = "1"  # each stage line reaches the pipe as it is printed
    process = subprocess.Popen(
        [*scons_command(), "kws"],
        cwd=project,
        env=environment,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    started = threading.Event()
    output: dict[str, list[str]] = {"stdout": [], "stderr": []}

    def read(name: str) -> None:
        for line in getattr(process, name):
            output[name].append(line)
            if name == "stdout" and RUN_STARTED.match(line):
                started.set()

    readers = [threading.Thread(target=read, args=(name,), daemon=True) for name in output]
    for reader in readers:
        reader.start()
    try:
        assert started.wait(timeout=120), f"the run stage did not start: {output}"
        assert process.poll() is None, "the run stage ended before the interrupt"
        os.killpg(process.pid, signal.SIGINT)  # as Ctrl-C: the whole foreground group
        process.wait(timeout=90)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
        for reader in readers:
            reader.join(timeout=30)
    stdout, stderr = "".join(output["stdout"]), "".join(output["stderr"])
    interrupted = subprocess.CompletedProcess(process.args, process.returncode, stdout, stderr)
    assert interrupted.returncode != 0, output_of(interrupted)
    assert "Traceback" not in output_of(interrupted) and table(interrupted) == [], output_of(interrupted)


RUN_STARTED = re.compile(r"^heliabuild: \[\d+/\d+\] run kws/results/kws/result\.json$")


def test_sconscript_mistakes_name_the_users_line_only(tmp_path: Path) -> None:
    project = user_project(tmp_path / "my-project", more=", config='my.ini'")
    result = run_scons(project)
    assert result.returncode == 2, output_of(result)
    sconstruct = project / "SConstruct"
    assert f"(called at {sconstruct}:6)" in result.stderr, result.stderr
    assert "did you mean aot_config= or vela_config=" in result.stderr, result.stderr
    assert "unknown keyword config='my.ini'" in result.stderr, result.stderr
    file_lines = [line for line in result.stderr.splitlines() if line.startswith("File ")]
    assert file_lines == [f'File "{sconstruct}", line 6, in <module>'], result.stderr
    assert "heliabuild/scons" not in result.stderr and heliabuild_lines(result) == []


def test_a_misspelt_helia_variable_is_refused_and_the_user_s_own_variables_pass(tmp_path: Path) -> None:
    """`HELIA_VELA_OPTIMIZE="Size"` (heliabuild's is HELIA_VELA_OPTIMISE) would be read by no stage: it is
    refused before anything is built, naming the user's line; an upper-case variable of the user's own is not."""
    project = user_project(tmp_path / "my-project", more=", HELIA_VELA_OPTIMIZE='Size'")
    result = run_scons(project, "-n")
    assert result.returncode == 2, output_of(result)
    assert "unknown construction variable HELIA_VELA_OPTIMIZE='Size'; did you mean HELIA_VELA_OPTIMISE?" in (
        result.stderr
    ), result.stderr
    assert f"(called at {project / 'SConstruct'}:6)" in result.stderr and heliabuild_lines(result) == []
    own = user_project(tmp_path / "own", more=", MY_FLAG='x', HELIA_VELA_OPTIMISE='Size'")
    assert run_scons(own, "-n", "bad-vela").returncode == 0


def test_vela_config_takes_velas_packaged_file_by_vela_s_name(tmp_path: Path) -> None:
    from heliabuild.vela.configs import resolve_config

    packaged = resolve_config("Arm/vela.ini")
    assert packaged.is_absolute(), "Vela's packaged Arm/vela.ini is not installed"
    more = ", vela_config='Arm/vela.ini', system_config='Ethos_U55_High_End_Embedded', memory_mode='Shared_Sram'"
    project = user_project(tmp_path / "my-project", more=more)
    result = build_ok(project, "bad-vela", "--tree=prune")
    assert "heliabuild: vela bad/bad_fenced_vela.tflite" in heliabuild_lines(result), output_of(result)
    assert "No configuration file specified" not in result.stderr, result.stderr
    assert str(packaged) in result.stdout, result.stdout  # the dependency is the packaged file itself
    assert heliabuild_lines(build_ok(project, "bad-vela")) == []


CLEAN_SCONSTRUCT = """\
import heliabuild.scons

env = Environment(tools=["default", heliabuild.scons.tool])
model = env.HeliaSynth("kws.tflite", HELIA_SYNTH_KIND="chain")
options = {"system_config": ARGUMENTS["sys"], "policy": ARGUMENTS["policy"]}
env.HeliaPipeline("kws", model, fences=[3, 6], build_dir="out/kws", **options)
"""


def test_clean_removes_what_earlier_options_wrote_and_the_empty_folders(tmp_path: Path) -> None:
    project = user_project(tmp_path / "my-project")
    (project / "SConstruct").write_text(CLEAN_SCONSTRUCT, encoding="utf-8")
    (project / "more.yaml").write_text(POLICY.format(state="carry", warmup=1, n=4), encoding="utf-8")
    build_ok(project, "sys=Ethos_U55_High_End_Embedded", "policy=policy.yaml")
    build_ok(project, "sys=Ethos_U55_Deep_Embedded", "policy=more.yaml")  # reruns Vela, and the run stage
    out = project / "out" / "kws"
    assert sorted(p.name for p in out.glob("*_summary_*.csv")) == [
        "kws_fenced_summary_Ethos_U55_Deep_Embedded.csv",
        "kws_fenced_summary_Ethos_U55_High_End_Embedded.csv",
    ]
    assert (out / "results" / "kws.previous" / "result.json").is_file()  # the library kept the earlier bundle
    cleaned = build_ok(project, "-c", "sys=Ethos_U55_Deep_Embedded", "policy=more.yaml")
    assert not (project / "out").exists(), output_of(cleaned)
    assert sorted(p.name for p in project.iterdir() if not p.name.startswith(".")) == [
        "SConstruct",
        "bad.yaml",
        "more.yaml",
        "policy.yaml",
    ]


def test_explain_names_the_option_that_changed(tmp_path: Path) -> None:
    project = user_project(tmp_path / "my-project")
    (project / "SConstruct").write_text(CLEAN_SCONSTRUCT, encoding="utf-8")
    build_ok(project, "kws-vela", "sys=Ethos_U55_High_End_Embedded", "policy=policy.yaml")
    explained = build_ok(project, "kws-vela", "sys=Ethos_U55_Deep_Embedded", "policy=policy.yaml", "--debug=explain")
    assert "`option HELIA_VELA_SYSTEM_CONFIG='Ethos_U55_Deep_Embedded'' is a new dependency" in explained.stdout
    assert "`option HELIA_VELA_SYSTEM_CONFIG='Ethos_U55_High_End_Embedded'' is no longer a dependency" in (
        explained.stdout
    ), explained.stdout
