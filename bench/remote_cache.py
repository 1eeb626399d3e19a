#!/usr/bin/env python3
"""Benchmark: the remote cache's hit path against a local CacheDir's.

Builds N pipelines (default 8) of the synthetic KWS chain, each `HeliaSynth` -> `HeliaPipeline(fences=[3, 6])`
up to its runner (the alias `cached`: synth, fence, Vela, AOT plan, runner, 13 files a pipeline; the run
stage is left out, since a measurement is never cached), once, filling both a local CacheDir and a remote
cache on a real nginx with WebDAV PUT on 127.0.0.1 (tests/helpers/nginx.py, as the tests start it). Then,
in interleaved pairs, a fresh checkout (an empty folder with the same SConstruct) is built once with only
the remote cache (`--helia-cache-url`) and once with only the local CacheDir; each must retrieve every file
and run no stage. Prints the wall time of each (min/median/max over the rounds), the ratio remote / local of
each pair (min/median/max), the time per file and, for scale, the cold build that filled the caches.

No target (the issue asks for the figure); both are whole `scons` runs, so the ratio includes reading the
SConscripts, which both paths pay alike.

    python bench/remote_cache.py [--pipelines 8] [--rounds 7] [--jobs 1]
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
sys.path.insert(0, str(REPO / "tests"))

from helpers.nginx import nginx_binary, start_nginx  # noqa: E402 - the tests' nginx, from the tests' folder

SCONSTRUCT = """\
SetOption("hash_format", "sha256")
if ARGUMENTS.get("local_cache"):
    CacheDir(ARGUMENTS["local_cache"])
env = Environment(tools=["helia"], toolpath=[{site_tools!r}])
for index in range({pipelines}):
    name = f"p{{index:03d}}"
    model = env.HeliaSynth(f"{{name}}/{{name}}.tflite", HELIA_SYNTH_KIND="chain", HELIA_SYNTH_SEED=index)
    pipeline = env.HeliaPipeline(name, model, fences=[3, 6], build_dir=name)
    Alias("cached", pipeline["runner"])
"""
FILES_PER_PIPELINE = 13


def scons_command() -> list[str]:
    script = Path(sys.executable).with_name("scons")
    return [str(script)] if script.is_file() else [sys.executable, "-m", "SCons"]


def run_scons(project: Path, *arguments: str) -> tuple[float, str]:
    """Run scons in `project`; its wall time and output. Exits on failure."""
    environment = {key: value for key, value in os.environ.items() if not key.startswith(("SCONSFLAGS", "HELIA_"))}
    start = time.perf_counter()
    run = subprocess.run(
        [*scons_command(), *arguments], cwd=project, env=environment, capture_output=True, text=True, check=False
    )
    elapsed = time.perf_counter() - start
    if run.returncode != 0:
        sys.exit(f"remote_cache: scons failed in {project}:\n{run.stdout}{run.stderr}")
    return elapsed, run.stdout + run.stderr


def checkout(folder: Path, pipelines: int) -> Path:
    folder.mkdir(parents=True)
    sconstruct = SCONSTRUCT.format(site_tools=str(REPO / "site_scons" / "site_tools"), pipelines=pipelines)
    (folder / "SConstruct").write_text(sconstruct, encoding="utf-8")
    return folder


def hit(folder: Path, pipelines: int, jobs: int, where: str, *arguments: str) -> float:
    """Build a fresh checkout that must retrieve all its files from `where`; the wall time."""
    project = checkout(folder, pipelines)
    elapsed, output = run_scons(project, "-Q", f"-j{jobs}", *arguments, "cached")
    lines = output.splitlines()
    fetched = sum(1 for line in lines if line.startswith("Retrieved `") and line.endswith(f"' from {where}"))
    stages = [line for line in lines if line.startswith("heliabuild: ")]
    if fetched != pipelines * FILES_PER_PIPELINE or stages:
        sys.exit(f"remote_cache: {project} retrieved {fetched} files from {where}, ran {stages}:\n{output}")
    shutil.rmtree(project)
    return elapsed


def spread(values: list[float], scale: float = 1.0, unit: str = "s", digits: int = 3) -> str:
    low, middle, high = min(values) * scale, statistics.median(values) * scale, max(values) * scale
    return f"min {low:.{digits}f} {unit}  median {middle:.{digits}f} {unit}  max {high:.{digits}f} {unit}"


def report(pipelines: int, rounds: int, jobs: int) -> None:
    """Measure the hit paths (module docstring) and print the rows; exits when nginx is missing."""
    binary = nginx_binary()
    if binary is None:
        sys.exit("remote_cache: nginx is not installed (Debian package nginx)")

    with tempfile.TemporaryDirectory() as temporary:
        root = Path(temporary)
        server = start_nginx(root / "server", binary)
        try:
            url = f"--helia-cache-url={server.url}/bench"
            local = f"local_cache={root / 'local-cache'}"
            cold, _ = run_scons(checkout(root / "fill", pipelines), "-Q", f"-j{jobs}", url, local, "cached")
            remote_times: list[float] = []
            local_times: list[float] = []
            for index in range(rounds):
                folder = root / f"round{index}"
                first_remote = index % 2 == 0  # alternate which goes first, so drift favours neither
                for mode in ("remote", "local") if first_remote else ("local", "remote"):
                    if mode == "remote":
                        remote_times.append(hit(folder / mode, pipelines, jobs, "remote cache", url))
                    else:
                        local_times.append(hit(folder / mode, pipelines, jobs, "cache", local))
        finally:
            server.stop()

    files = pipelines * FILES_PER_PIPELINE
    ratios = [remote / local for remote, local in zip(remote_times, local_times, strict=True)]
    print(
        f"{pipelines} pipelines of the synthetic KWS chain up to the runner: {files} files, "
        f"-j{jobs}, {rounds} interleaved pairs, nginx on 127.0.0.1"
    )
    print(f"cold build filling both caches   {cold:7.2f} s (one run)")
    print(f"remote cache hit (whole scons)   {spread(remote_times)}")
    print(f"local CacheDir hit (whole scons) {spread(local_times)}")
    print(f"ratio remote / local per pair    {spread(ratios, unit='x', digits=2)}")
    extra = [(remote - local) / files for remote, local in zip(remote_times, local_times, strict=True)]
    print(f"remote minus local, per file     {spread(extra, 1000, 'ms', 2)}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pipelines", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--jobs", type=int, default=1, help="scons -j of the measured builds")
    args = parser.parse_args()
    report(args.pipelines, args.rounds, args.jobs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
