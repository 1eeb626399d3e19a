"""Ctrl-C in an SCons build (heliabuild.scons.interrupt): real SCons on a pseudo-terminal that is its
controlling terminal, and a real SIGINT from the terminal's line discipline (the ^C byte written to the
terminal), while a stage runs: litert invokes, a qemu-m55 run on real QEMU, a run on the FAKE FVP
(tests/helpers/fake_fvp.py, a test double of Arm's FVP executables, held running by its
FAKE_FVP_TOGETHER option) and a Vela compile, at -j1 and -j2. The build ends long before the stage would
have; the stage's children are gone; the stage left no target and published nothing; and the next scons
rebuilds that stage only."""

from __future__ import annotations

import fcntl
import os
import pty
import re
import select
import shutil
import signal
import subprocess
import termios
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import fake_fvp_folder, require_firmware_tools
from test_scons import build_ok, output_of, scons_command

from heliabuild.model import save_model
from heliabuild.synth import large_model as large_model_of
from heliabuild.synth import synthesize

pytestmark = pytest.mark.slow

SCONSTRUCT = """\
import heliabuild.scons

env = Environment(tools=["default", heliabuild.scons.tool])
env.HeliaPipeline("kws", "model.tflite", fences={fences}, policy="policy.yaml", backend="{backend}", build_dir="kws")
"""
POLICY = "defaults:\n  fvp:\n    acquisition: {{state: {state}, warmup_invokes: {warmup}, measured_invokes: {n}}}\n"
STAGE_START = re.compile(r"^heliabuild: \[(\d+)/(\d+)\] ([a-z-]+) (\S+)$", re.MULTILINE)
ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
"""A terminal control sequence: erasing the status line, colour."""
BOUND_S = 10.0
"""How long the build may take to stop after ^C: each interrupted stage would run for minutes."""


def project(folder: Path, backend: str, *, n: int, state: str = "carry", fences: tuple[int, ...] = (3, 6)) -> Path:
    """A project of one pipeline `kws` on the synthetic chain (no fences for `fences=()`)."""
    folder.mkdir()
    sconstruct = SCONSTRUCT.format(backend=backend, fences=list(fences) or None)
    (folder / "SConstruct").write_text(sconstruct, encoding="utf-8")
    warmup = 1 if state == "carry" else 0
    (folder / "policy.yaml").write_text(POLICY.format(state=state, warmup=warmup, n=n), encoding="utf-8")
    save_model(synthesize("chain", seed=0), folder / "model.tflite")
    return folder


def _controlling_terminal() -> None:
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)


def interrupt(
    folder: Path, ready: Callable[[str, int], bool], *arguments: str, signal_scons_alone: bool = False
) -> tuple[int, str, float]:
    """Run scons in `folder` on a new pseudo-terminal that is its controlling terminal, type ^C once
    `ready(output so far, scons's process id)` holds (with `signal_scons_alone`, send SIGINT to the scons
    process only, as `kill -INT` does), and read to the end: (exit status, everything written, seconds from
    ^C to exit)."""
    controller, terminal = pty.openpty()
    environment = {key: value for key, value in os.environ.items() if key != "SCONSFLAGS"}
    process = subprocess.Popen(
        [*scons_command(), *arguments],
        cwd=folder,
        env=environment,
        stdin=terminal,
        stdout=terminal,
        stderr=terminal,
        start_new_session=True,
        preexec_fn=_controlling_terminal,
    )
    os.close(terminal)
    written = bytearray()
    typed_at = None
    deadline = time.monotonic() + 600
    while True:
        if typed_at is None and ready(written.decode(errors="replace"), process.pid):
            if signal_scons_alone:
                os.kill(process.pid, signal.SIGINT)
            else:
                os.write(controller, b"\x03")
            typed_at = time.monotonic()
        if time.monotonic() > deadline:
            process.kill()
            pytest.fail(f"scons did not end: {written.decode(errors='replace')}")
        readable, _, _ = select.select([controller], [], [], 0.05)
        if not readable:
            continue
        try:
            chunk = os.read(controller, 65536)
        except OSError:  # EIO: every writer has closed the terminal
            break
        if not chunk:
            break
        written += chunk
    status = process.wait(timeout=60)
    ended = time.monotonic()
    os.close(controller)
    text = written.decode(errors="replace").replace("\r\n", "\n")
    assert typed_at is not None, f"the build ended before it could be interrupted: {text}"
    return status, text, ended - typed_at


def processes() -> dict[int, tuple[int, str]]:
    """Every live process: its id -> (its parent's id, its command line)."""
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[0] != "Z":
            found[int(entry.name)] = (int(fields[1]), command)
    return found


def children_running(parent: int, program: str) -> list[int]:
    """The ids of the live children of `parent` running `program` (its file name)."""
    return [pid for pid, (ppid, command) in processes().items() if ppid == parent and program in command.split(" ")[0]]


def alive(pids: list[int]) -> list[int]:
    """Those of `pids` still running."""
    return [pid for pid in pids if pid in processes()]


def started_stage(stage: str) -> Callable[[str, int], bool]:
    """ready(): the stage's start line has been printed."""
    return lambda written, _: any(match[3] == stage for match in STAGE_START.finditer(written.replace("\r\n", "\n")))


def dry_run_stages(folder: Path) -> list[str]:
    """The stages `scons -n` says it would run now (what the next scons rebuilds)."""
    return [match[3] for match in STAGE_START.finditer(build_ok(folder, "-n").stdout)]


def shown(written: str) -> list[str]:
    """The lines the terminal shows: each line's text after its last carriage return (the status line, and
    the ^C the terminal echoed, are erased and overwritten), without control sequences."""
    return [ANSI.sub("", line.rsplit("\r", 1)[-1]).removeprefix("^C") for line in written.split("\n")]


def assert_stopped(status: int, written: str, took: float, stage: str) -> None:
    assert status == 2, written
    assert took < BOUND_S, (took, written)
    assert "scons: Build interrupted." in written, written
    ended = re.compile(rf"heliabuild: \[\d+/\d+\] {stage} \S+: interrupted")
    assert any(ended.fullmatch(line) for line in shown(written)), written
    assert "Traceback" not in written, written
    assert not any(line.startswith("heliabuild: error:") for line in shown(written)), written


def bundle_files(folder: Path) -> list[str]:
    results = folder / "kws" / "results"
    return sorted(str(p.relative_to(folder)) for p in results.rglob("*")) if results.exists() else []


def temporary_leftovers(folder: Path) -> list[str]:
    """Files and folders a stage writes only while it runs (temporary files, Vela's work folders)."""
    return sorted(
        str(p.relative_to(folder))
        for p in folder.rglob(".*")
        if not p.name.startswith(".sconsign") and p.name != ".sconf_temp"
    )


@pytest.fixture(scope="module")
def large_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """heliabuild.synth's large model with 150 blocks: 24 MB (it fits corstone300_ethos_u55's DDR), which Vela
    compiles in about 15 s and LiteRT invokes in about 10 ms."""
    path = tmp_path_factory.mktemp("large") / "large.tflite"
    save_model(large_model_of(0, blocks=150), path)
    return path


def copy_of(built: Path, folder: Path) -> Path:
    """A copy in `folder` of the project `built` up to its runner, under the same name: only its run stage is
    left to run."""
    return Path(shutil.copytree(built, folder / built.name))


@pytest.fixture(scope="module")
def litert_project(tmp_path_factory: pytest.TempPathFactory, large_model: Path) -> Path:
    """A project whose pipeline on the large model is built up to its runner, with a policy of 1 + 10,000
    invokes (minutes of LiteRT): copies of it only have the run stage to run."""
    folder = project(tmp_path_factory.mktemp("litert") / "my-project", "litert", n=10_000, fences=())
    os.unlink(folder / "model.tflite")
    os.link(large_model, folder / "model.tflite")
    build_ok(folder, "kws-runner")
    return folder


@pytest.mark.parametrize("jobs", ["-j1", "-j2"])
def test_ctrl_c_ends_a_litert_run_and_publishes_nothing(tmp_path: Path, litert_project: Path, jobs: str) -> None:
    folder = copy_of(litert_project, tmp_path)
    status, written, took = interrupt(folder, lambda w, _: re.search(r"invoke \d+/10001 [1-9] s", w) is not None, jobs)
    assert_stopped(status, written, took, "run")
    assert bundle_files(folder) == [] and temporary_leftovers(folder) == []
    assert (folder / "kws" / "runner" / "kws" / "runner.json").is_file()  # the stages before it stay built
    assert dry_run_stages(folder) == ["run"]


@pytest.fixture(scope="module")
def qemu_project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A qemu-m55 project built up to its runner (the firmware linked), with a policy of 1 + 10,000 invokes:
    copies of it only have the run stage to run, as litert_project's."""
    require_firmware_tools()
    folder = project(tmp_path_factory.mktemp("qemu") / "my-project", "qemu-m55", n=10_000)
    build_ok(folder, "kws-runner")
    return folder


@pytest.mark.parametrize("jobs", ["-j1", "-j2"])
def test_ctrl_c_ends_a_qemu_run_and_its_qemu(tmp_path: Path, qemu_project: Path, jobs: str) -> None:
    folder = copy_of(qemu_project, tmp_path)
    qemu: list[int] = []

    def qemu_running(written: str, scons: int) -> bool:
        qemu.extend(children_running(scons, "qemu-system-arm") if started_stage("run")(written, scons) else [])
        return bool(qemu)

    status, written, took = interrupt(folder, qemu_running, jobs)
    assert_stopped(status, written, took, "run")
    assert alive(qemu) == []
    assert bundle_files(folder) == [] and temporary_leftovers(folder) == []
    assert dry_run_stages(folder) == ["run"]


@pytest.mark.parametrize("jobs", ["-j1", "-j2"])
def test_ctrl_c_ends_a_run_on_the_fake_fvp_and_the_fake_fvp(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, jobs: str
) -> None:
    """FAKE FVP (a test double): FAKE_FVP_TOGETHER with more jobs than the run starts holds each job running
    (for 30 s, then it would refuse), as a long FVP simulation would run; each job marks its start there."""
    import test_fvp_backend  # noqa: F401  (skips when mlia-ethos-u, whose prebuilt runner the fvp backend uses, is missing)

    bin_folder = fake_fvp_folder(tmp_path / "fake-fvp-bin")
    started = tmp_path / "fvp-jobs"
    started.mkdir()
    monkeypatch.setenv("PATH", f"{bin_folder}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("FAKE_FVP_TOGETHER", f"{started}:99")
    for name in ("HELIA_FVP_DIR", "FAKE_FVP_SCENARIO", "FAKE_FVP_RECORDS", "FAKE_FVP_LOG", "FAKE_FVP_MODELS"):
        monkeypatch.delenv(name, raising=False)
    folder = project(tmp_path / "my-project", "fvp", n=1, state="single")
    status, written, took = interrupt(folder, lambda w, _: started_stage("run")(w, 0) and any(started.iterdir()), jobs)
    assert_stopped(status, written, took, "run")
    assert alive([int(p.name) for p in started.iterdir()]) == []  # each job's file is named by its process id
    assert bundle_files(folder) == [] and temporary_leftovers(folder) == []
    assert dry_run_stages(folder) == ["run"]


@pytest.mark.parametrize(("jobs", "signal_scons_alone"), [("-j1", False), ("-j2", False), ("-j2", True)])
def test_ctrl_c_ends_a_vela_compile(tmp_path: Path, large_model: Path, jobs: str, signal_scons_alone: bool) -> None:
    """At -j2 Vela is a subprocess in a session of its own: the build ends it, whether the terminal's ^C or a
    SIGINT to the scons process alone (`kill -INT`, which reaches no other process) stopped the build."""
    folder = tmp_path / "my-project"
    folder.mkdir()
    (folder / "SConstruct").write_text(
        SCONSTRUCT.format(backend="litert", fences=None).replace(', policy="policy.yaml"', ""), encoding="utf-8"
    )
    os.link(large_model, folder / "model.tflite")
    vela: list[int] = []

    def vela_running(written: str, scons: int) -> bool:
        vela.extend(children_running(scons, "python") if jobs == "-j2" else [])
        return "heliabuild: vela model.tflite " in written and (jobs == "-j1" or bool(vela))

    status, written, took = interrupt(folder, vela_running, jobs, "kws-vela", signal_scons_alone=signal_scons_alone)
    assert_stopped(status, written, took, "vela")
    if signal_scons_alone:  # killed at once: it used to end when Vela next wrote output (1.6-1.8 s measured)
        assert took < 1.0, (took, written)
    assert alive(vela) == []  # at -j2 Vela runs as a subprocess: it does not outlive the build
    assert not (folder / "kws").exists() or list((folder / "kws").iterdir()) == []
    assert temporary_leftovers(folder) == []
    result = subprocess.run([*scons_command(), "-n", "kws-vela"], cwd=folder, capture_output=True, text=True)
    assert [match[3] for match in STAGE_START.finditer(result.stdout)] == ["vela"], output_of(result)
