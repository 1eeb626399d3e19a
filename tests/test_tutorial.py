"""docs/tutorial.md followed verbatim, as a pip user meets heliabuild: its wheel installed (not editable) into a
fresh virtual environment, an empty project folder outside the checkout, and every `$ ` command of the
tutorial run in order by bash, every file it shows written where it says. The docs, `heliabuild docs` and
`heliabuild doctor` are those of the installed wheel.

The tutorial's `pip install heliabuild` and the venv lines are done by the fixture: heliabuild comes from the
wheel built from this checkout, and its dependencies from this test environment (pip installed them here; a
path file makes them importable in the fresh environment, and `scons` gets the script pip would write), since
this machine cannot download them again."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest
from conftest import require_firmware_tools

from heliabuild.api import load_result

REPO = Path(__file__).resolve().parents[1]
TUTORIAL = REPO / "docs" / "tutorial.md"
SETUP_COMMANDS = ("python3 -m venv .venv", ". .venv/bin/activate", "pip install heliabuild")
"""The tutorial's first lines, which the fixture does (module docstring)."""

pytestmark = pytest.mark.slow


def steps(text: str) -> list[tuple[str, str, str]]:
    """The tutorial's steps in order: ("file", name, content) for a code block right after a "`name`:" line,
    ("run", command, "") for each `$ ` line of a console block."""
    found: list[tuple[str, str, str]] = []
    pattern = re.compile(r"(?:^`([^`]+)`:\n\n)?^```(\w+)\n(.*?)^```$", re.MULTILINE | re.DOTALL)
    for match in pattern.finditer(text):
        name, kind, body = match.groups()
        if name is not None:
            found.append(("file", name, body))
        elif kind == "console":
            found.extend(("run", line[2:], "") for line in body.splitlines() if line.startswith("$ "))
    return found


@pytest.fixture(scope="module")
def fresh_venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A new virtual environment with heliabuild installed from its wheel (module docstring)."""
    root = tmp_path_factory.mktemp("pip-user")
    source = root / "source"  # a copy: building in place would write build/ into the checkout
    files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard"], cwd=REPO, capture_output=True, text=True)
    for name in files.stdout.splitlines():
        if (REPO / name).is_file():
            (source / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / name, source / name)
    wheels = root / "wheels"
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", wheels, source], check=True, capture_output=True
    )
    (wheel,) = wheels.glob("heliabuild-*.whl")
    venv = root / ".venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", venv], check=True)
    python = venv / "bin" / "python"
    purelib = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    (Path(purelib) / "heliabuild-test-dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    subprocess.run(
        [sys.executable, "-m", "pip", "--python", python, "install", "--no-deps", "-q", wheel],
        check=True,
        capture_output=True,
    )
    scons = venv / "bin" / "scons"
    scons.write_text(f"#!{python}\nimport sys\nfrom SCons.Script.Main import main\nsys.exit(main())\n")
    scons.chmod(0o755)
    return venv


def run_in(venv: Path, folder: Path, command: str) -> subprocess.CompletedProcess[str]:
    environment = {key: value for key, value in os.environ.items() if key not in ("SCONSFLAGS", "PYTHONPATH")}
    environment["PATH"] = f"{venv / 'bin'}{os.pathsep}{environment['PATH']}"
    environment["VIRTUAL_ENV"] = str(venv)
    return subprocess.run(
        ["bash", "-c", command], cwd=folder, env=environment, capture_output=True, text=True, timeout=600
    )


def test_the_installed_wheel_is_what_a_pip_user_runs(fresh_venv: Path, tmp_path: Path) -> None:
    where = run_in(fresh_venv, tmp_path, "python -c 'import heliabuild, heliabuild.docs; print(heliabuild.__file__)'")
    assert where.stdout.startswith(str(fresh_venv)), where
    docs = run_in(fresh_venv, tmp_path, "heliabuild docs")
    assert docs.returncode == 0 and "  tutorial  " in docs.stdout and "  troubleshooting  " in docs.stdout, docs
    assert f"installed in {fresh_venv}" in docs.stdout
    shipped = run_in(fresh_venv, tmp_path, "heliabuild docs docs/runner.md")
    assert shipped.stdout == (REPO / "docs" / "runner.md").read_text(encoding="utf-8")
    every = sorted(path.stem for path in (REPO / "docs").glob("*.md"))
    assert [line.split()[0] for line in docs.stdout.splitlines()[2:-2]] == every


def test_the_tutorial_verbatim(fresh_venv: Path, tmp_path: Path) -> None:
    require_firmware_tools()
    found = steps(TUTORIAL.read_text(encoding="utf-8"))
    assert [command for kind, command, _ in found[:3]] == list(SETUP_COMMANDS)
    folder = tmp_path
    ran = []
    for kind, what, content in found[3:]:
        if kind == "file":
            (folder / what).write_text(content, encoding="utf-8")
            continue
        result = run_in(fresh_venv, folder, what)
        assert result.returncode == 0, (what, result.stdout, result.stderr)
        assert "Traceback" not in result.stderr, (what, result.stderr)
        ran.append((what, result))
        if what.startswith("mkdir "):
            continue
        if what.startswith("cd "):
            folder = folder / what.removeprefix("cd ")
    commands = [what for what, _ in ran]
    assert "scons kws" in commands and "scons kws_sweep" in commands
    doctor = dict(ran)["heliabuild doctor --backend qemu-m55"]
    assert "  qemu-m55: ready" in doctor.stdout and f"({fresh_venv}" in doctor.stdout
    bundle = load_result(folder / "build" / "kws" / "results" / "kws")
    assert bundle.document["run_identity"]["backend"] == "qemu-m55" and len(bundle.segments) == 3
    assert (folder / "build" / "kws_sweep" / "kws_sweep_sweep.html").is_file()
    gate = ran[-1][1]
    assert ran[-1][0].startswith("heliabuild compare baseline build/kws/results/kws --max-regression 5")
    assert gate.stdout.startswith("compare baseline -> build/kws/results/kws\n"), gate.stdout
    assert not (REPO / "my-project").exists()  # everything happened outside the checkout
