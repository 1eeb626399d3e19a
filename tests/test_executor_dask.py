"""The Dask executor against a real cluster on 127.0.0.1: a `dask scheduler` and `dask worker` processes
(tests/helpers/dask_cluster.py), real SCons, Vela, LiteRT, arm-none-eabi-gcc and QEMU. Two `env.HeliaSweep`s,
one of 24 litert points (the synthetic chain, fences x accelerators x policies) and one of two qemu-m55 points,
built on the cluster give the same bytes as a local build; runs are routed by worker resources (qemu-m55 runs
to the QEMU worker, an fvp run to a worker whose PATH has the FAKE FVP, tests/helpers/fake_fvp.py, a test
double of Arm's FVP); a worker killed mid-sweep and a scheduler that goes away leave targets complete or absent
and the next build completes; a job no worker can take and a worker whose tools differ are one clear error
each."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest import fake_fvp_folder, require_firmware_tools, require_prebuilt_runner
from helpers.dask_cluster import Cluster, running_cluster
from test_scons import build_ok, heliabuild_lines, output_of, run_scons, scons_command

from heliabuild.api import load_result
from heliabuild.executor.journal import read_journal
from heliabuild.model import save_model
from heliabuild.scons.executor import JOURNAL
from heliabuild.synth import synthesize

pytest.importorskip("distributed", reason="the dask extra is not installed (pip install heliabuild[dask])")
pytestmark = pytest.mark.slow

SITE_TOOLS = Path(__file__).resolve().parents[1] / "site_scons" / "site_tools"
POLICY = "defaults:\n  fvp:\n    acquisition: {{state: {state}, warmup_invokes: {warmup}, measured_invokes: {n}}}\n"
POLICIES = ["one.yaml", "two.yaml"]
SCONSTRUCT = """\
env = Environment(tools=["default", "helia"], toolpath=[{site_tools!r}])
for name, model, grid, common in {sweeps!r}:
    env.HeliaSweep(name, model + ".tflite", grid=grid, build_dir="build/" + name, **common)
"""
ACCELERATORS = ["ethos-u55-32", "ethos-u55-64", "ethos-u55-128", "ethos-u55-256"]
BIG = ("big", "chain0", {"fences": [None, [3], [3, 6]], "accelerator": ACCELERATORS, "policy": POLICIES}, {})
"""24 litert points: 12 fenced models and Vela compiles, each run with two policies."""
QEMU = ("qemu", "chain1", {"fences": [None, [3, 6]]}, {"backend": "qemu-m55"})
"""Two qemu-m55 points."""
FVP = ("fvp", "chain0", {"fences": [[3]]}, {"backend": "fvp", "policy": "fvp.yaml"})
"""One fvp point."""
BUILD_TIMEOUT_S = 300


def project(folder: Path, *sweeps: tuple[str, str, dict[str, list[object]], dict[str, object]]) -> Path:
    """A project whose SConstruct builds `sweeps` (default: BIG and QEMU), each HeliaSweep(name, model, grid,
    **common) into build/<name>, with the two synthetic chain models and the policies."""
    folder.mkdir(parents=True, exist_ok=True)
    text = SCONSTRUCT.format(site_tools=str(SITE_TOOLS), sweeps=list(sweeps or (BIG, QEMU)))
    (folder / "SConstruct").write_text(text, encoding="utf-8")
    for seed in (0, 1):
        save_model(synthesize("chain", seed=seed), folder / f"chain{seed}.tflite")
    for name, state, warmup, measured in (
        ("one.yaml", "carry", 1, 1),
        ("two.yaml", "carry", 1, 2),
        ("fvp.yaml", "single", 0, 1),
    ):
        (folder / name).write_text(POLICY.format(state=state, warmup=warmup, n=measured), encoding="utf-8")
    return folder


def one_point(accelerator: str = "ethos-u55-64") -> tuple[str, str, dict[str, list[object]], dict[str, object]]:
    """A sweep `s` of one litert point: chain0 unfenced, on `accelerator`."""
    return ("s", "chain0", {"accelerator": [accelerator]}, {})


def on_cluster(folder: Path, cluster: Cluster, *arguments: str) -> subprocess.CompletedProcess[str]:
    return run_scons(folder, f"--helia-executor={cluster.url}", *arguments)


def start_build(folder: Path, *arguments: str) -> subprocess.Popen[str]:
    environment = {key: value for key, value in os.environ.items() if key != "SCONSFLAGS"}
    return subprocess.Popen(
        [*scons_command(), *arguments], cwd=folder, env=environment, text=True,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip


def finish(process: subprocess.Popen[str]) -> subprocess.CompletedProcess[str]:
    try:
        stdout, stderr = process.communicate(timeout=BUILD_TIMEOUT_S)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    return subprocess.CompletedProcess(process.args, process.returncode, stdout, stderr)


def snapshot(build: Path) -> dict[str, bytes]:
    """Every file under `build` by relative path, the measured result bundles and the sweep tables made from
    them left out (compared apart)."""
    return {
        path.relative_to(build).as_posix(): path.read_bytes()
        for path in sorted(build.rglob("*"))
        if path.is_file() and "/results/" not in path.relative_to(build).as_posix() and "_sweep." not in path.name
    }


def error_lines(result: subprocess.CompletedProcess[str]) -> list[str]:
    return [line for line in output_of(result).splitlines() if line.startswith("heliabuild: error:")]


def leftovers(build: Path) -> list[str]:
    return sorted(str(path) for path in build.rglob("*.tmp"))


def vela_folders(build: Path) -> list[str]:
    """The sweep folders (`<sweep>/<folder>`) that hold Vela's outputs; assert each holds all four or none."""
    present = []
    for folder in sorted(path for path in build.glob("*/*") if path.is_dir()):
        files = [path for path in folder.glob("*_vela.tflite")] + list(folder.glob("*_per-layer.csv"))
        files += list(folder.glob("*_summary_*.csv")) + list(folder.glob("*_segments.json"))
        assert len(files) in (0, 4), (folder, files)
        if files:
            present.append(folder.relative_to(build).as_posix())
    return present


def require_mlia() -> None:
    require_prebuilt_runner()


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    require_firmware_tools()
    with running_cluster(tmp_path_factory.mktemp("cluster"), {"plain": None, "qemu": "qemu=1"}) as started:
        yield started


@pytest.fixture(scope="module")
def local_sweep(tmp_path_factory: pytest.TempPathFactory) -> Path:
    require_firmware_tools()
    folder = project(tmp_path_factory.mktemp("local") / "sweep")
    build_ok(folder, "-j2")
    return folder


@dataclass
class ClusterSweep:
    folder: Path
    first: subprocess.CompletedProcess[str]
    rerun: subprocess.CompletedProcess[str] | None
    victim: str


@pytest.fixture(scope="module")
def cluster_sweep(cluster: Cluster, tmp_path_factory: pytest.TempPathFactory) -> ClusterSweep:
    """The sweep on the cluster with a third worker that is killed while it runs a job; rebuilt once more
    when that build failed."""
    folder = project(tmp_path_factory.mktemp("cluster-sweep") / "sweep")
    cluster.start_worker("victim")
    victim = cluster.worker_addresses()["victim"]
    process = start_build(folder, "-j3", f"--helia-executor={cluster.url}")
    deadline = time.monotonic() + BUILD_TIMEOUT_S
    while cluster.processing().get("victim", 0) == 0:
        assert process.poll() is None, "the build ended before the victim ran a job"
        assert time.monotonic() < deadline
        time.sleep(0.1)
    cluster.kill_worker("victim")
    first = finish(process)
    rerun = None
    if first.returncode != 0:
        assert "Traceback" not in output_of(first), output_of(first)
        assert len(error_lines(first)) == 1, output_of(first)
        rerun = on_cluster(folder, cluster, "-j3")
        assert rerun.returncode == 0, output_of(rerun)
    return ClusterSweep(folder, first, rerun, victim)


def test_the_sweep_on_the_cluster_is_byte_identical_to_the_local_build(
    local_sweep: Path, cluster_sweep: ClusterSweep
) -> None:
    local, remote = snapshot(local_sweep / "build"), snapshot(cluster_sweep.folder / "build")
    assert sorted(remote) == sorted(local)
    assert [name for name in local if local[name] != remote[name]] == []
    assert sum(1 for name in local if name.endswith("_vela.tflite")) == 12 + 2
    assert sum(1 for name in local if name.endswith("/runner.json")) == 24 + 2
    # the qemu-m55 runs count instructions, which are deterministic: the same samples whoever ran them
    for point in ("fences=none/results/qemu.1", "fences=3+6/results/qemu.2"):
        bundles = [folder / "build" / "qemu" / point for folder in (local_sweep, cluster_sweep.folder)]
        samples = [sorted((bundle / "samples").rglob("*")) for bundle in bundles]
        assert [p.relative_to(bundles[0]) for p in samples[0]] == [p.relative_to(bundles[1]) for p in samples[1]]
        assert [p.read_bytes() for p in samples[0] if p.is_file()] == [
            p.read_bytes() for p in samples[1] if p.is_file()
        ]
        summaries = [(bundle / "run_summary.csv").read_text() for bundle in bundles]
        assert summaries[0] == summaries[1]


def test_jobs_are_routed_by_resource(cluster: Cluster, cluster_sweep: ClusterSweep) -> None:
    journal = read_journal(cluster_sweep.folder / JOURNAL)
    assert {line["executor"] for line in journal} == {cluster.url}
    qemu = cluster.worker_addresses()["qemu"]
    runs = [line for line in journal if line["function"] == "run" and not line["failed"]]
    assert len(runs) == 2  # the qemu-m55 runs; litert runs measure this host, so they never leave it
    assert all(line["required_resources"] == {"qemu": 1.0} for line in runs)
    assert {line["worker"] for line in runs} == {qemu}
    assert all(line["worker_resources"] == {"qemu": 1.0} for line in runs)
    assert all(line["worker_versions"]["qemu-system-arm"] for line in runs)  # the worker reported its QEMU
    vela = [line for line in journal if line["function"] == "vela" and not line["failed"]]
    links = [line for line in journal if line["function"] == "firmware-link" and not line["failed"]]
    assert len(vela) == 12 + 2 and len(links) == 2
    assert len({line["worker"] for line in vela}) >= 2  # spread over the workers


def test_an_fvp_run_goes_to_the_worker_with_the_fvp_resource_only(cluster: Cluster, tmp_path: Path) -> None:
    """A worker started with `fvp=1` whose PATH has the FAKE FVP (a test double: no FVP can be installed
    here) runs the fvp point's job; the client has no FVP; the bundle it publishes verifies."""
    require_mlia()
    fake = fake_fvp_folder(tmp_path / "fake-fvp-bin")
    log = tmp_path / "fake-fvp-calls.jsonl"
    assert shutil.which("FVP_Corstone_SSE-300_Ethos-U55") is None  # only the worker can run it
    environment = {"PATH": f"{fake}{os.pathsep}{os.environ['PATH']}", "FAKE_FVP_LOG": str(log)}
    cluster.start_worker("fvp", "fvp=1", environment)
    try:
        fvp_worker = cluster.worker_addresses()["fvp"]
        folder = project(tmp_path / "project", FVP)
        result = on_cluster(folder, cluster, "-j2")
    finally:
        cluster.kill_worker("fvp")
    assert result.returncode == 0, output_of(result)
    runs = [line for line in read_journal(folder / JOURNAL) if line["function"] == "run"]
    assert len(runs) == 1 and not runs[0]["failed"]
    assert runs[0]["required_resources"] == {"fvp": 1.0} and runs[0]["worker"] == fvp_worker
    assert sum(1 for line in log.read_text().splitlines() if "--data" in line) == 2  # one FVP job per segment
    (sample,) = load_result(folder / "build" / "fvp" / "fences=3" / "results" / "fvp.1").samples
    assert sample.cycles is not None and len(sample.cycles["segments"]) == 2
    deadline = time.monotonic() + 30
    while "fvp" in cluster.worker_addresses():  # later tests need a cluster without an fvp worker
        assert time.monotonic() < deadline
        time.sleep(0.2)


def test_a_worker_killed_mid_sweep_leaves_valid_outputs_and_the_build_completes(
    cluster: Cluster, cluster_sweep: ClusterSweep
) -> None:
    build = cluster_sweep.folder / "build"
    journal = read_journal(cluster_sweep.folder / JOURNAL)
    assert cluster_sweep.victim not in cluster.worker_addresses().values()
    assert len(vela_folders(build)) == 12 + 2
    assert leftovers(build) == []
    result = on_cluster(cluster_sweep.folder, cluster)
    assert result.returncode == 0, output_of(result)
    assert heliabuild_lines(result) == [], output_of(result)  # nothing left to build, nothing rebuilt
    assert len(read_journal(cluster_sweep.folder / JOURNAL)) == len(journal)


def test_a_job_no_worker_can_take_is_one_clear_error(cluster: Cluster, tmp_path: Path) -> None:
    require_mlia()
    folder = project(tmp_path / "fvp", FVP)
    started = time.monotonic()
    result = on_cluster(folder, cluster)
    assert result.returncode != 0
    assert "Traceback" not in output_of(result)
    lines = error_lines(result)
    assert len(lines) == 1, output_of(result)
    assert "run build/fvp/fences=3/results/fvp.1/: no worker of the Dask scheduler at" in lines[0]
    assert "it needs the resources fvp=1" in lines[0] and "qemu=1" in lines[0]
    assert '--resources "fvp=1"' in lines[0]
    assert list((folder / "build" / "fvp").glob("*/results/**/*.json")) == []
    assert time.monotonic() - started < 120


def test_a_worker_whose_tools_differ_refuses_the_job_naming_both_versions(cluster: Cluster, tmp_path: Path) -> None:
    from distributed import Client

    from heliabuild.executor.remote import remote_execute
    from heliabuild.executor.stages import echo_job
    from heliabuild.executor.versions import heliabuild_version
    from heliabuild.executor.worker import Inputs

    source = tmp_path / "in.txt"
    source.write_text("x")
    job, files = echo_job({str(source): "out.txt"})
    data = {item.sha256: files[item.name].read_bytes() for item in job.inputs}
    with Client(cluster.address, timeout=10, set_as_default=False) as client:
        future = client.submit(remote_execute, job.to_json(), {"heliabuild": "0.0.1+other"}, Inputs(blobs=data))
        result = future.result(timeout=60)
    assert result.outputs == {}
    assert result.failure is not None and result.failure.kind == "ExecutorError"
    assert f"heliabuild: 0.0.1+other on the client, {heliabuild_version()} on the worker" in result.failure.message
    assert "refused by worker tcp://127.0.0.1:" in result.failure.message


def test_inputs_in_the_shared_folder_travel_by_path_and_a_changed_one_is_refused(
    cluster: Cluster, tmp_path: Path
) -> None:
    from heliabuild.executor.remote import DaskExecutor
    from heliabuild.executor.stages import echo_job

    shared = tmp_path / "shared"
    shared.mkdir()
    source = shared / "in.bin"
    source.write_bytes(b"first")
    job, files = echo_job({str(source): "out.bin"})
    executor = DaskExecutor(cluster.url, shared=shared)
    try:
        sent = executor._inputs(job, files)
        assert sent.blobs == {} and sent.paths == {job.inputs[0].sha256: str(source.resolve())}
        assert executor.run(job, files).outputs == {"out.bin": b"first"}
        source.write_bytes(b"changed")  # after the job was described: the worker reads it and refuses
        changed = executor.run(job, files)
    finally:
        executor.close()
    assert changed.outputs == {} and changed.failure is not None
    assert f"job input {job.inputs[0].name}: {source.resolve()} has sha256" in changed.failure.message
    assert "the file changed after the job was described" in changed.failure.message


def test_a_worker_with_other_heliabuild_code_refuses_the_build_naming_both_versions(tmp_path: Path) -> None:
    import heliabuild
    from heliabuild.executor.versions import heliabuild_version

    other = tmp_path / "other" / "heliabuild"  # this heliabuild's code with one line more, as another checkout
    shutil.copytree(Path(heliabuild.__file__).parent, other, ignore=shutil.ignore_patterns("__pycache__"))
    with open(other / "executor" / "job.py", "a", encoding="utf-8") as stream:
        stream.write("# another checkout\n")
    folder = project(tmp_path / "project", one_point())
    with running_cluster(tmp_path / "cluster", {}) as cluster:
        cluster.start_worker("other", environment={"PYTHONPATH": str(other.parent)})
        result = on_cluster(folder, cluster)
    assert result.returncode != 0
    lines = error_lines(result)
    assert len(lines) == 1, output_of(result)
    assert "vela build/s/accelerator=ethos-u55-64/chain0_vela.tflite: refused by worker tcp://127.0.0.1:" in lines[0]
    client = heliabuild_version()
    assert f"heliabuild: {client} on the client, {client.split('+')[0]}+" in lines[0]
    assert lines[0].split(" on the worker")[0].rsplit("+", 1)[1] != client.split("+")[1]
    assert list((folder / "build").rglob("*_vela.tflite")) == []


def test_a_scheduler_that_is_not_there_is_one_clear_error(tmp_path: Path) -> None:
    from helpers.dask_cluster import free_port

    folder = project(tmp_path / "project", one_point())
    url = f"dask://127.0.0.1:{free_port()}"
    result = run_scons(folder, f"--helia-executor={url}")
    assert result.returncode == 2
    assert "Traceback" not in output_of(result)
    lines = error_lines(result)
    assert len(lines) == 1 and lines[0].startswith(f"heliabuild: error: the Dask scheduler at {url} cannot be reached")
    assert list((folder / "build").rglob("*_vela.tflite")) == []


def test_the_scheduler_going_away_is_one_clear_error_and_the_next_build_resumes(tmp_path: Path) -> None:
    require_firmware_tools()
    grid = {"fences": [None, [3], [3, 6]], "accelerator": ["ethos-u55-64", "ethos-u55-128"]}
    folder = project(tmp_path / "project", ("s", "chain0", grid, {}))
    with running_cluster(tmp_path / "first", {"a": None, "b": None}) as first:
        process = start_build(folder, "-j2", f"--helia-executor={first.url}")
        deadline = time.monotonic() + BUILD_TIMEOUT_S
        while len(read_journal(folder / JOURNAL)) < 2:
            assert process.poll() is None, "the build ended before two jobs ran"
            assert time.monotonic() < deadline
            time.sleep(0.05)
        first.kill(first.scheduler)
        started = time.monotonic()
        gone = finish(process)
        assert time.monotonic() - started < 60
    assert gone.returncode != 0, output_of(gone)
    assert "Traceback" not in output_of(gone)
    lines = error_lines(gone)
    assert len(lines) == 1 and f"the Dask scheduler at {first.url} cannot be reached" in lines[0], output_of(gone)
    build = folder / "build"
    built = vela_folders(build)
    assert leftovers(build) == []
    with running_cluster(tmp_path / "second", {"a": None}) as second:
        resumed = run_scons(folder, "-j2", f"--helia-executor={second.url}")
    assert resumed.returncode == 0, output_of(resumed)
    rebuilt = sorted(
        Path(line.split(" ")[2]).parent.relative_to("build").as_posix()
        for line in heliabuild_lines(resumed)
        if line.startswith("heliabuild: vela ")
    )
    complete = vela_folders(build)
    assert len(complete) == 6
    assert built  # the first build had compiled some, which the second does not compile again
    assert rebuilt == sorted(set(complete) - set(built)), output_of(resumed)


def test_an_executor_that_is_not_one_is_one_clear_error(tmp_path: Path) -> None:
    folder = project(tmp_path / "project", one_point())
    result = run_scons(folder, "--helia-executor=http://127.0.0.1:8786")
    assert result.returncode == 2, output_of(result)
    assert "heliabuild: executor 'http://127.0.0.1:8786' is not `local` or dask://host:port" in output_of(result)
    assert not (folder / "build").exists()
    missing = tmp_path / "no-such-folder"
    result = run_scons(folder, "--helia-executor=dask://127.0.0.1:8786", f"--helia-shared-path={missing}")
    assert result.returncode == 2, output_of(result)
    assert f"heliabuild: the shared input folder {missing} is not a folder" in output_of(result)
    assert not (folder / "build").exists()
