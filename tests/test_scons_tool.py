"""The heliabuild tool as SCons's own tools are (docs/scons.md, "What heliabuild changes in a build"), with
real SCons and the host's gcc: loading it touches only the environment, so a user's plain C targets build,
rebuild and print exactly as without heliabuild; the build-wide settings come with the first heliabuild
target (or `heliabuild.scons.configure_build()`); `exists` says whether Vela and LiteRT can be imported."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from helpers.skips import require_tool
from test_scons import output_of, run_scons

import heliabuild.scons
from heliabuild.scons.process import BUILD_LOCK

PROBE = (
    "import atexit, gc, signal\n"
    "print('probe', gc.isenabled(), GetOption('max_drift'), atexit._ncallbacks(), signal.set_wakeup_fd(-1))\n"
)
"""What the SConscript prints of the process: the collector, max_drift, the exit hooks, the signal wakeup fd."""

HELLO = '#include <stdio.h>\n#include "hello.h"\nint main(void) { puts(GREETING); return 0; }\n'


def _project(folder: Path, tools: str, pipeline: bool, probe: bool = True) -> Path:
    """A project whose SConstruct builds `hello` from hello.c with the tools `tools`, and, with `pipeline`, also
    declares a heliabuild pipeline (not built by `scons hello`)."""
    folder.mkdir(parents=True)
    (folder / "hello.c").write_text(HELLO, encoding="utf-8")
    (folder / "hello.h").write_text('#define GREETING "hello"\n', encoding="utf-8")
    lines = ["import heliabuild.scons", f"env = Environment(tools={tools})", 'env.Program("hello", ["hello.c"])']
    if pipeline:
        lines += [
            'model = env.HeliaSynth("model.tflite", HELIA_SYNTH_KIND="chain")',
            'env.HeliaPipeline("chain", model, fences=[3])',
        ]
    (folder / "SConstruct").write_text("\n".join(lines) + "\n" + (PROBE if probe else ""), encoding="utf-8")
    return folder


def _files(folder: Path) -> list[str]:
    return sorted(path.relative_to(folder).as_posix() for path in folder.rglob("*"))


def _session(project: Path, *target: str) -> list[tuple[int, str, list[str]]]:
    """A user's session with the C target: build, no-op, help, an edit, the same bytes again, a header edit,
    clean. Each step's exit status, output and the project's files afterwards."""
    steps = []

    def step(*arguments: str) -> None:
        result = run_scons(project, *arguments)
        steps.append((result.returncode, output_of(result), _files(project)))

    step(*target)
    step(*target)
    step("-h")
    (project / "hello.c").write_text(HELLO.replace("return 0", "return 0 "), encoding="utf-8")
    step(*target)
    (project / "hello.c").write_text(HELLO.replace("return 0", "return 0 "), encoding="utf-8")  # same bytes
    step(*target)
    (project / "hello.h").write_text('#define GREETING "hello, again"\n', encoding="utf-8")
    step(*target)
    step("-c", *target)
    return steps


@pytest.fixture(autouse=True)
def _gcc() -> None:
    require_tool("gcc", "apt-get install gcc")


def test_plain_c_targets_with_the_tool_loaded_build_as_without_heliabuild(tmp_path: Path) -> None:
    """Same output line for line (SCons's and the probe's), same rebuild decisions, same files: no lock file,
    no summary, no options in `scons -h`, the collector, max_drift, exit hooks and signal handling untouched."""
    plain = _session(_project(tmp_path / "plain", '["default"]', pipeline=False))
    loaded = _session(_project(tmp_path / "loaded", '["default", heliabuild.scons.tool]', pipeline=False))
    assert loaded == plain
    assert [status for status, _, _ in plain] == [0] * 7
    outputs = [output for _, output, _ in plain]
    assert "gcc -o hello.o -c hello.c" in outputs[0] and "is up to date" in outputs[1]
    assert "gcc -o hello.o -c hello.c" in outputs[3] and "is up to date" in outputs[4]  # content, not mtime
    assert "gcc -o hello.o -c hello.c" in outputs[5]  # the header is scanned
    assert "helia" not in "".join(outputs).replace("import heliabuild.scons", "")
    assert BUILD_LOCK not in "".join(" ".join(files) for _, _, files in plain)


def test_plain_c_targets_beside_a_pipeline_build_as_without_heliabuild(tmp_path: Path) -> None:
    """In a build that also declares a heliabuild pipeline, `scons hello` prints and rebuilds as a project
    without heliabuild does: no summary, no heliabuild line, nothing of the pipeline built, no lock left."""
    plain = _session(_project(tmp_path / "plain", '["default"]', pipeline=False, probe=False), "hello")
    project = _project(tmp_path / "mixed", '["default", heliabuild.scons.tool]', pipeline=True, probe=False)
    mixed = _session(project, "hello")
    help_step = 2  # `scons -h` lists the options the declared pipeline added: the one difference
    for number, ((status, output, files), (plain_status, plain_output, plain_files)) in enumerate(
        zip(mixed, plain, strict=True)
    ):
        assert status == plain_status == 0, output
        assert files == plain_files
        if number != help_step:
            assert output == plain_output
    assert not (project / BUILD_LOCK).exists() and not (project / "build").exists()


def test_the_first_heliabuild_target_makes_the_build_wide_settings(tmp_path: Path) -> None:
    """Loading the tool changes nothing of the process; the first heliabuild target turns the collector off,
    sets max_drift to -1 and adds heliabuild's options; `heliabuild.scons.configure_build()` does the same
    for an SConstruct that wants them without a target."""
    project = tmp_path / "declared"
    project.mkdir()
    (project / "SConstruct").write_text(
        "import gc, heliabuild.scons\n"
        "env = Environment(tools=[heliabuild.scons.tool])\n"
        "print('loaded', gc.isenabled(), GetOption('max_drift'))\n"
        "env.HeliaSynth('model.tflite', HELIA_SYNTH_KIND='chain')\n"
        "print('declared', gc.isenabled(), GetOption('max_drift'), GetOption('helia_executor'))\n",
        encoding="utf-8",
    )
    declared = run_scons(project, "-n")
    assert declared.returncode == 0, output_of(declared)
    assert "loaded True 172800" in declared.stdout and "declared False -1 None" in declared.stdout
    assert "--helia-executor" in run_scons(project, "-h").stdout

    explicit = tmp_path / "explicit"
    explicit.mkdir()
    (explicit / "SConstruct").write_text(
        "import gc, heliabuild.scons\nheliabuild.scons.configure_build()\n"
        "print('configured', gc.isenabled(), GetOption('max_drift'))\n",
        encoding="utf-8",
    )
    configured = run_scons(explicit, "-Q")
    assert configured.returncode == 0, output_of(configured)
    assert "configured False -1" in configured.stdout
    assert "--helia-cache-url" in run_scons(explicit, "-h").stdout
    assert not (explicit / BUILD_LOCK).exists()  # held while SCons ran, released when it ended


def test_exists_says_whether_vela_and_litert_can_be_imported(monkeypatch: pytest.MonkeyPatch) -> None:
    """True here (both installed); False when either cannot be imported (`sys.modules[name] = None` is how
    Python blocks an import), and the check imports neither."""
    from SCons.Environment import Environment

    env = Environment(tools=[])
    assert heliabuild.scons.exists(env) is True
    for name in ("ethosu.vela", "ai_edge_litert"):
        with monkeypatch.context() as blocked:
            blocked.setitem(sys.modules, name, None)
            assert heliabuild.scons.exists(env) is False
    probe = "import sys, heliabuild.scons; heliabuild.scons.exists(None); print('ethosu.vela' in sys.modules)"
    found = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert found.stdout.strip() == "False"
