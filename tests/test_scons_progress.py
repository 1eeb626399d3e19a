"""The `[k/n]` counter and `done in` line of the SCons stage lines (heliabuild.scons.progress), in a user's
own project outside the checkout, built by real SCons: a full build, partial rebuilds, `-n`, `-s`, `-j2`
and a build of one stage's alias; and the status line of heliabuild.progress, on a pseudo-terminal (the
`pty` module) and in a log (pipes)."""

from __future__ import annotations

import json
import os
import pty
import re
import subprocess
from pathlib import Path

import pytest
from helpers.terminal import read_to_the_end
from test_scons import build_ok, output_of, scons_command

pytestmark = pytest.mark.slow

SCONSTRUCT = """\
import heliabuild.scons

env = Environment(tools=["default", heliabuild.scons.tool])
model = env.HeliaSynth("kws.tflite", HELIA_SYNTH_KIND="chain")
env.HeliaPipeline("kws", model, fences=[3, 6], policy="policy.yaml", build_dir="kws")
"""
POLICY = "defaults:\n  fvp:\n    acquisition: {{state: carry, warmup_invokes: 1, measured_invokes: {n}}}\n"
STAGE_LINE = re.compile(r"^heliabuild: \[(\d+)/(\d+)\] ([a-z-]+) (\S+)(: done in \d+\.\d\d s)?$")
FULL = ["synth", "fence", "vela", "aot-plan", "runner", "run"]


def project(folder: Path) -> Path:
    folder.mkdir()
    (folder / "SConstruct").write_text(SCONSTRUCT, encoding="utf-8")
    (folder / "policy.yaml").write_text(POLICY.format(n=3), encoding="utf-8")
    return folder


def stage_lines(result: subprocess.CompletedProcess[str]) -> list[tuple[int, int, str, str, bool]]:
    """(k, n, stage, target, is the `done` line) of every counted stage line on stdout, in order."""
    found = []
    for line in result.stdout.splitlines():
        match = STAGE_LINE.match(line)
        if match:
            found.append((int(match[1]), int(match[2]), match[3], match[4], match[5] is not None))
    return found


def started(result: subprocess.CompletedProcess[str]) -> list[tuple[int, int, str]]:
    return [(k, n, stage) for k, n, stage, _, done in stage_lines(result) if not done]


def test_a_full_build_counts_every_stage_to_n_of_n_and_says_when_each_is_done(tmp_path: Path) -> None:
    built = build_ok(project(tmp_path / "my-project"))
    assert started(built) == [(k, len(FULL), stage) for k, stage in enumerate(FULL, 1)], output_of(built)
    lines = stage_lines(built)
    starts = {(k, target) for k, _, _, target, done in lines if not done}
    assert {(k, target) for k, _, _, target, done in lines if done} == starts, output_of(built)
    assert ("heliabuild: [3/6] vela kws/kws_fenced_vela.tflite") in built.stdout.splitlines()
    assert stage_lines(build_ok(tmp_path / "my-project")) == []  # up to date: no stage line at all


def test_a_partial_rebuild_counts_only_the_stages_that_run(tmp_path: Path) -> None:
    folder = project(tmp_path / "my-project")
    build_ok(folder)
    (folder / "policy.yaml").write_text(POLICY.format(n=4), encoding="utf-8")
    dry = build_ok(folder, "-n")
    # -n runs nothing, so no `done` line, and the run stage, whose runner.json did not change, is up to date
    assert stage_lines(dry) == [(1, 2, "runner", "kws/runner/kws/runner.json", False)], output_of(dry)
    assert stage_lines(build_ok(folder, "-s")) == [] and "heliabuild: " not in build_ok(folder, "-s").stdout
    (folder / "policy.yaml").write_text(POLICY.format(n=5), encoding="utf-8")
    rebuilt = build_ok(folder)
    assert started(rebuilt) == [(1, 2, "runner"), (2, 2, "run")], output_of(rebuilt)
    assert [done for *_, done in stage_lines(rebuilt)] == [False, True, False, True]


def test_one_stage_alias_counts_the_stages_under_it_and_j2_counts_each_stage_once(tmp_path: Path) -> None:
    folder = project(tmp_path / "my-project")
    vela = build_ok(folder, "kws-vela")
    assert started(vela) == [(1, 3, "synth"), (2, 3, "fence"), (3, 3, "vela")], output_of(vela)
    rest = build_ok(folder, "-j2")
    assert started(rest) == [(1, 3, "aot-plan"), (2, 3, "runner"), (3, 3, "run")], output_of(rest)
    build_ok(folder, "-c")
    parallel = build_ok(folder, "-j2")
    assert sorted(k for k, _, _ in started(parallel)) == list(range(1, 7)), output_of(parallel)
    assert {n for _, n, _ in started(parallel)} == {6}


TWO_PIPELINES = """\
import json
import heliabuild.scons

env = Environment(tools=["default", heliabuild.scons.tool])
model = env.HeliaSynth("kws.tflite", HELIA_SYNTH_KIND="chain")
for name, fences in json.load(open("fences.json")).items():
    env.HeliaPipeline(name, model, fences=fences, build_dir=name)
"""


def test_a_one_pipeline_change_counts_only_that_pipelines_stages_and_ends_at_k_of_k(tmp_path: Path) -> None:
    """With two pipelines, a change to either reruns its five stages, counted 1/5 to 5/5: the other pipeline's
    stages, which SCons finds up to date only later (or earlier), are never in n."""
    folder = tmp_path / "my-project"
    folder.mkdir()
    (folder / "SConstruct").write_text(TWO_PIPELINES, encoding="utf-8")
    fences = {"first": [3], "second": [6]}
    (folder / "fences.json").write_text(json.dumps(fences), encoding="utf-8")
    full = build_ok(folder)
    assert started(full) == [(k, 11, stage) for k, (_, _, stage) in enumerate(started(full), 1)], output_of(full)
    rerun = ["fence", "vela", "aot-plan", "runner", "run"]
    for name in fences:
        fences[name] = [2, 5]
        (folder / "fences.json").write_text(json.dumps(fences), encoding="utf-8")
        changed = build_ok(folder)
        assert started(changed) == [(k, 5, stage) for k, stage in enumerate(rerun, 1)], output_of(changed)
        assert all(f" {name}/" in line for line in changed.stdout.splitlines() if STAGE_LINE.match(line))


def on_a_terminal(folder: Path, *arguments: str) -> tuple[int, str]:
    """Run scons in `folder` with stdout and stderr on a pseudo-terminal; its exit status and all it wrote."""
    controller, terminal = pty.openpty()
    environment = {key: value for key, value in os.environ.items() if key != "SCONSFLAGS"}
    process = subprocess.Popen(
        [*scons_command(), *arguments], cwd=folder, env=environment, stdout=terminal, stderr=terminal
    )
    os.close(terminal)
    written = read_to_the_end(controller)
    return process.wait(timeout=120), written.decode()


def test_a_terminal_shows_the_status_of_vela_and_of_the_invokes_and_a_log_shows_none(tmp_path: Path) -> None:
    folder = project(tmp_path / "my-project")
    (folder / "policy.yaml").write_text(POLICY.format(n=1000), encoding="utf-8")
    status, written = on_a_terminal(folder)
    assert status == 0, written
    assert "\r\x1b[Kheliabuild: vela kws_fenced.tflite " in written, written
    assert re.search(r"\r\x1b\[Kheliabuild: run kws: invoke \d+/1001 \d+ s", written), written
    assert "\r\x1b[Kheliabuild: run kws: writing the bundle of 1000 samples " in written, written
    assert written.replace("\r\n", "\n").endswith("\n") and "Traceback" not in written
    # every ordinary line starts at the left margin: after a line end, or after the status line was erased
    warning = "heliabuild: \x1b[1;33mwarning\x1b[0m: vela "  # coloured on a terminal (heliabuild.colour)
    for line in (warning, "heliabuild: [4/6] aot-plan", "heliabuild: [6/6] run kws/"):
        at = written.index(line)
        assert written[:at].endswith(("\n", "\x1b[K")), written[at - 80 : at + 40]
    build_ok(folder, "-c")
    logged = build_ok(folder)  # stdout and stderr are pipes, as in CI
    assert "\r" not in logged.stdout + logged.stderr and "\x1b" not in logged.stdout + logged.stderr
    assert "heliabuild: [6/6] run kws/results/kws/result.json" in logged.stdout.splitlines()
