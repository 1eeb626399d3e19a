#!/usr/bin/env python3
"""Benchmark: a no-op rebuild of many heliabuild pipelines versus plain SCons Command targets.

Builds N pipelines (default 50) of the synthetic KWS chain model, each
`HeliaSynth` -> `HeliaPipeline(fences=[3, 6])`, up to the stages the baseline mirrors (the alias `mirrored`:
synth, fence, Vela: 7 files, with real Vela; the later stages are not mirrored), then times a no-op
`scons` of them against a no-op `scons` of an SConstruct with the same graph made of plain `Command` targets: the
same number of targets per step, the same sources, explicit dependencies in
place of the sidecar scanner's, the same Value nodes for tool versions and
trivial Python actions. Both use `hash_format=sha256` and the `content`
decider. The no-op runs alternate, and the median of several rounds is
reported, since the machine is shared and noisy.

Prints the time of the full build, of the no-op rebuild (and per pipeline),
of the baseline's no-op rebuild, and their ratio.

Target: no-op rebuild of 50 pipelines <= 1.5x the plain-Command baseline.

    python bench/null_build.py [--pipelines 50] [--rounds 5] [--jobs 2]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
UP_TO_DATE = "is up to date"

HELIA_SCONSTRUCT = """\
SetOption("hash_format", "sha256")
env = Environment(tools=["helia"], toolpath=["site_scons/site_tools"])
env.Decider("content")
for index in range({pipelines}):
    name = f"p{{index:03d}}"
    model = env.HeliaSynth(f"{{name}}/{{name}}.tflite", HELIA_SYNTH_KIND="chain", HELIA_SYNTH_SEED=0)
    env.HeliaPipeline(name, model, fences=[3, 6], build_dir=name)
    Alias("mirrored", [model, f"{{name}}-fence", f"{{name}}-vela"])
"""

BASELINE_SCONSTRUCT = """\
SetOption("hash_format", "sha256")
env = Environment(tools=[])
env.Decider("content")


def write_names(target, source, env):
    for node in target:
        with open(str(node), "w") as handle:
            handle.write(node.name)
    return 0


versions = [env.Value(v) for v in ("heliabuild==0", "ai-edge-litert==0")]
vela_version = env.Value("ethos-u-vela==0")
for index in range({pipelines}):
    name = f"p{{index:03d}}"
    model = env.Command(f"{{name}}/{{name}}.tflite", [], Action(write_names, varlist=["KIND", "SEED"]))
    env.Depends(model, versions)
    fenced = env.Command(
        [f"{{name}}/{{name}}_fenced.tflite", f"{{name}}/{{name}}_fenced.fenced_boundaries.json"],
        model,
        Action(write_names, varlist=["FENCES"]),
    )
    env.Depends(fenced, versions)
    vela = env.Command(
        [
            f"{{name}}/{{name}}_fenced_vela.tflite",
            f"{{name}}/{{name}}_fenced_per-layer.csv",
            f"{{name}}/{{name}}_fenced_summary_Ethos_U55_High_End_Embedded.csv",
            f"{{name}}/{{name}}_fenced_segments.json",
        ],
        fenced[0],
        Action(write_names, varlist=["A", "B", "C", "D", "E", "F"]),
    )
    env.Depends(vela, [fenced[1], *versions, vela_version])
    env.Alias(name, [*model, *fenced, *vela])
    env.Alias(f"{{name}}-fence", fenced)
    env.Alias(f"{{name}}-vela", vela)
    env.Alias("fenced_model", fenced)
    env.Alias("mirrored", [*model, *fenced, *vela])
"""


def scons_command() -> list[str]:
    script = Path(sys.executable).with_name("scons")
    return [str(script)] if script.is_file() else [sys.executable, "-m", "SCons"]


def run_scons(project: Path, *arguments: str) -> tuple[float, str]:
    """Run scons in `project`; return its wall time and output. Exits on failure."""
    environment = {key: value for key, value in os.environ.items() if key != "SCONSFLAGS"}
    start = time.perf_counter()
    run = subprocess.run(
        [*scons_command(), *arguments], cwd=project, env=environment, capture_output=True, text=True, check=False
    )
    elapsed = time.perf_counter() - start
    if run.returncode != 0:
        sys.exit(f"null_build: scons failed in {project}:\n{run.stdout}{run.stderr}")
    return elapsed, run.stdout + run.stderr


def make_project(folder: Path, sconstruct: str) -> Path:
    folder.mkdir(parents=True)
    (folder / "SConstruct").write_text(sconstruct, encoding="utf-8")
    shutil.copytree(REPO / "site_scons", folder / "site_scons", ignore=shutil.ignore_patterns("__pycache__"))
    return folder


def no_op(project: Path) -> float:
    elapsed, output = run_scons(project, "-Q", "mirrored")
    if UP_TO_DATE not in output or "heliabuild:" in output:
        sys.exit(f"null_build: the no-op rebuild in {project} built something:\n{output}")
    return elapsed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pipelines", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="jobs of the full build (scons -j)")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as temporary:
        root = Path(temporary)
        helia = make_project(root / "helia", HELIA_SCONSTRUCT.format(pipelines=args.pipelines))
        baseline = make_project(root / "baseline", BASELINE_SCONSTRUCT.format(pipelines=args.pipelines))

        full, _ = run_scons(helia, "-Q", f"-j{args.jobs}", "mirrored")
        baseline_full, _ = run_scons(baseline, "-Q", f"-j{args.jobs}", "mirrored")
        targets = sum(1 for path in helia.rglob("p*/*") if path.is_file())
        baseline_targets = sum(1 for path in baseline.rglob("p*/*") if path.is_file())
        if targets != baseline_targets:
            sys.exit(f"null_build: {targets} heliabuild targets, but {baseline_targets} baseline targets")

        helia_times: list[float] = []
        baseline_times: list[float] = []
        for _ in range(args.rounds):
            helia_times.append(no_op(helia))
            baseline_times.append(no_op(baseline))

    pipeline_noop = statistics.median(helia_times)
    baseline_noop = statistics.median(baseline_times)
    ratio = pipeline_noop / baseline_noop
    print(f"{args.pipelines} pipelines of the synthetic KWS chain (synth, fence, vela): {targets} files")
    print(f"full build (-j{args.jobs})          {full:8.2f} s   (plain Command graph: {baseline_full:.2f} s)")
    print(f"no-op rebuild             median {pipeline_noop * 1000:8.1f} ms   ({args.rounds} rounds)")
    print(f"no-op per pipeline               {pipeline_noop / args.pipelines * 1000:8.2f} ms")
    print(f"plain Command no-op       median {baseline_noop * 1000:8.1f} ms")
    print(f"ratio no-op / plain Command: {ratio:.2f}x   (target <= 1.5x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
