#!/usr/bin/env python3
"""Benchmark: a 24-point sweep built locally with `-j2` against the same sweep on a loopback Dask cluster
with 2 workers, and the per-job overhead of the Dask path.

The sweep is one `env.HeliaSweep` of the synthetic chain model: 4 fence sets x 6 Ethos-U55 and U65 sizes,
backend litert (24 points, each its own fence, Vela compile, aot-plan, runner and run, and the sweep's
table). Each round builds it from clean three times, alternating: with the
local executor and `-j2`; with `--helia-executor=dask://...` and `-j<dask jobs>` (default 4: two jobs on the
workers while the stages that stay on the client run beside them); and, as the control, locally with that
same `-j<dask jobs>`, which tells a gain of the cluster from a gain of running more at once. The cluster is
one `dask scheduler` and two `dask worker --nthreads 1` on 127.0.0.1, on the same machine: the ratio shows
what the Dask path costs or saves on one machine; on a real cluster the Vela jobs spread over its machines.

Per-job overhead: the round trip of an `echo` job (one 1 KiB input copied to one output: no stage work) on
the cluster against the same job with the local executor, interleaved; target <= 100 ms for the Dask path.

The cache hit path: bench/remote_cache.py's rows, in the same run after these (a fresh checkout of
`--cache-pipelines` pipelines that retrieves every file from the remote cache on nginx against one that
retrieves them from a local CacheDir, `--rounds` interleaved pairs).

    python bench/sweep.py [--rounds 3] [--jobs 50] [--dask-jobs 4] [--cache-pipelines 8]
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
sys.path.insert(0, str(REPO / "tests"))  # the loopback cluster the tests start (tests/helpers/dask_cluster.py)
sys.path.insert(0, str(REPO / "bench"))

import remote_cache  # noqa: E402 - bench/remote_cache.py, beside this file
from helpers.dask_cluster import running_cluster  # noqa: E402

SCONSTRUCT = """\
env = Environment(tools=["default", "helia"], toolpath=[{site_tools!r}])
grid = {{
    "fences": [None, [2], [3], [3, 6]],
    "accelerator": ["ethos-u55-32", "ethos-u55-64", "ethos-u55-128", "ethos-u55-256", "ethos-u65-256", "ethos-u65-512"],
}}
env.HeliaSweep("sweep", "chain0.tflite", grid=grid, build_dir="build/sweep")
"""


def sweep_project(folder: Path) -> Path:
    from heliabuild.model import save_model
    from heliabuild.synth import synthesize

    folder.mkdir(parents=True)
    (folder / "SConstruct").write_text(SCONSTRUCT.format(site_tools=str(REPO / "site_scons" / "site_tools")))
    save_model(synthesize("chain", seed=0), folder / "chain0.tflite")
    return folder


def clean_build_seconds(folder: Path, *arguments: str) -> float:
    """Seconds of one `scons` of `folder` from clean (build/ and SCons's database removed first)."""
    from heliabuild.kernels.native import scons_command

    shutil.rmtree(folder / "build", ignore_errors=True)
    for database in folder.glob(".sconsign*"):
        database.unlink()
    environment = {key: value for key, value in os.environ.items() if key not in ("SCONSFLAGS", "HELIA_EXECUTOR")}
    start = time.perf_counter()
    run = subprocess.run([*scons_command(), "-Q", *arguments], cwd=folder, env=environment, capture_output=True)
    seconds = time.perf_counter() - start
    if run.returncode != 0:
        sys.exit(f"scons {' '.join(arguments)} failed:\n{run.stdout.decode()}{run.stderr.decode()}")
    return seconds


def spread(values: list[float], unit: str = " s", scale: float = 1.0) -> str:
    shown = [value * scale for value in values]
    return f"min {min(shown):.2f}{unit}, median {statistics.median(shown):.2f}{unit}, max {max(shown):.2f}{unit}"


def sweep_rows(root: Path, url: str, rounds: int, dask_jobs: int) -> None:
    folder = sweep_project(root / "sweep")
    runs: dict[str, list[float]] = {"local -j2": [], f"local -j{dask_jobs}": [], f"Dask -j{dask_jobs}": []}
    for _ in range(rounds):
        runs["local -j2"].append(clean_build_seconds(folder, "-j2"))
        runs[f"Dask -j{dask_jobs}"].append(clean_build_seconds(folder, f"-j{dask_jobs}", f"--helia-executor={url}"))
        runs[f"local -j{dask_jobs}"].append(clean_build_seconds(folder, f"-j{dask_jobs}"))
    for name, seconds in runs.items():
        print(f"24-point sweep from clean, {name + ':':<14} {spread(seconds)}")
    dask, local, control = runs[f"Dask -j{dask_jobs}"], runs["local -j2"], runs[f"local -j{dask_jobs}"]
    against_local = spread([d / h for d, h in zip(dask, local, strict=True)], "x")
    against_control = spread([d / h for d, h in zip(dask, control, strict=True)], "x")
    print(f"ratio Dask (2 workers, -j{dask_jobs}) / local -j2, per round: {against_local}")
    print(f"ratio Dask / local at the same -j{dask_jobs}, per round: {against_control}")


def overhead_rows(root: Path, url: str, jobs: int) -> None:
    from heliabuild.executor import LocalExecutor
    from heliabuild.executor.remote import DaskExecutor
    from heliabuild.executor.stages import echo_job

    source = root / "echo" / "in.bin"
    source.parent.mkdir()
    source.write_bytes(os.urandom(1024))
    job, files = echo_job({str(source): "out.bin"})
    local, remote = LocalExecutor(), DaskExecutor(url)
    try:
        remote.run(job, files)  # connecting and the workers' first imports are not per job
        here, there = [], []
        for _ in range(jobs):
            start = time.perf_counter()
            remote.run(job, files)
            there.append(time.perf_counter() - start)
            start = time.perf_counter()
            local.run(job, files)
            here.append(time.perf_counter() - start)
    finally:
        remote.close()
    print(f"per-job round trip of a no-op job ({jobs} each, interleaved):")
    print(f"  Dask, loopback cluster: {spread(there, ' ms', 1000)}   (target <= 100 ms)")
    print(f"  local executor:         {spread(here, ' ms', 1000)}")
    difference = 1000 * (statistics.median(there) - statistics.median(here))
    print(f"  Dask overhead per job (median difference): {difference:.1f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3, help="clean builds of each kind, alternating")
    parser.add_argument("--jobs", type=int, default=50, help="no-op jobs of each executor for the overhead")
    parser.add_argument("--dask-jobs", type=int, default=4, help="scons -j of the build on the cluster")
    parser.add_argument("--cache-pipelines", type=int, default=8, help="pipelines of the cache hit path")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-sweep-") as temporary:
        root = Path(temporary)
        with running_cluster(root / "cluster", {"one": None, "two": None}) as cluster:
            print(f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}")
            overhead_rows(root, cluster.url, args.jobs)
            sweep_rows(root, cluster.url, args.rounds, args.dask_jobs)
    print("cache hit path, remote cache against a local CacheDir (bench/remote_cache.py):")
    remote_cache.report(args.cache_pipelines, args.rounds, jobs=1)


if __name__ == "__main__":
    main()
