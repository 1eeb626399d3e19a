#!/usr/bin/env python3
"""Developer entry point: `python3 dev.py build` and `python3 dev.py test`.

Each command creates `.venv` (or refreshes it when pyproject.toml changed)
with the project installed in editable mode, then runs inside it:

  build  builds every example through every stage that exists (scons)
  test   runs the whole test suite (pytest) on two worker processes (pytest-xdist,
         one test file per worker at a time); extra arguments go to pytest, and
         -n/--numprocesses, -p no:xdist or --pdb among them choose the workers instead

Only python3 (3.11+) and a C compiler are needed on the machine.
"""

from __future__ import annotations

import hashlib
import itertools
import os
import subprocess
import sys
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent
VENV = ROOT / ".venv"
STAMP = VENV / ".heliabuild-installed"


def _bin(name: str) -> Path:
    return VENV / ("Scripts" if os.name == "nt" else "bin") / name


def _requirements_digest() -> str:
    return hashlib.sha256((ROOT / "pyproject.toml").read_bytes()).hexdigest()


def ensure_venv() -> None:
    if sys.version_info < (3, 11):  # noqa: UP036 - dev.py runs under whatever python3 the machine has
        sys.exit(f"dev.py: Python 3.11 or newer is needed, this is {sys.version.split()[0]}")
    if not _bin("python").exists():
        print("dev.py: creating .venv", flush=True)
        venv.EnvBuilder(with_pip=True).create(VENV)
    digest = _requirements_digest()
    if STAMP.exists() and STAMP.read_text() == digest:
        return
    print("dev.py: installing heliabuild and its test dependencies into .venv", flush=True)
    subprocess.run(
        [str(_bin("python")), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "-e", ".[test]"],
        cwd=ROOT,
        check=True,
    )
    STAMP.write_text(digest)


PARALLEL = ["-n", "2", "--dist", "loadfile", "--no-loadscope-reorder"]
"""The suite on both cores of the 2-core machine it is sized for: each test file on one worker, so its module
fixtures are set up once, handed out in the order tests/conftest.py collects them (docs/testing.md)."""


def pytest_arguments(arguments: list[str]) -> list[str]:
    """`arguments` after PARALLEL, unless they choose the workers themselves or run the debugger (which
    pytest-xdist refuses)."""
    chosen = any(
        argument in {"-pno:xdist", "--pdb", "--trace"} or argument.startswith(("-n", "--numprocesses"))
        for argument in arguments
    ) or ("-p", "no:xdist") in itertools.pairwise(arguments)
    return arguments if chosen else [*PARALLEL, *arguments]


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in {"build", "test"}:
        print(__doc__)
        return 2
    ensure_venv()
    env = dict(os.environ, PATH=f"{_bin('python').parent}{os.pathsep}{os.environ.get('PATH', '')}")
    if argv[0] == "build":
        command = [str(_bin("scons")), "-j2", *argv[1:]]
    else:
        command = [str(_bin("python")), "-m", "pytest", *pytest_arguments(argv[1:])]
    return subprocess.run(command, cwd=ROOT, env=env).returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
