"""What `pip install .` (not editable) installs: every package of the source tree and every data file the
code reads. An editable install, as in .venv, sees the source tree and would hide a package left out of
pyproject.toml's list (heliabuild.planning once was: a pip-installed `scons` then failed at plan-fences)."""

from __future__ import annotations

import fnmatch
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SOURCE = REPO / "heliabuild"


def _setuptools() -> dict:
    return tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]


def test_every_package_of_the_source_tree_is_installed() -> None:
    found = {
        ".".join(init.parent.relative_to(REPO).parts)
        for init in SOURCE.rglob("__init__.py")
        if "__pycache__" not in init.parts
    }
    listed = set(_setuptools()["packages"])
    assert found - listed == set(), "packages missing from pyproject.toml [tool.setuptools] packages"
    assert listed - found == {"heliabuild.schemas", "heliabuild.docs"}  # schemas/ and docs/ mapped by package-dir
    assert _setuptools()["package-dir"] == {"heliabuild.schemas": "schemas", "heliabuild.docs": "docs"}


def test_every_data_file_in_a_package_is_installed() -> None:
    """A file of a package folder that is not Python is installed only when a package-data glob names it."""
    data = _setuptools()["package-data"]
    missed = []
    for path in SOURCE.rglob("*"):
        if not path.is_file() or path.suffix in (".py", ".pyc") or "__pycache__" in path.parts:
            continue
        package_dir = next(parent for parent in path.parents if (parent / "__init__.py").is_file())
        package = ".".join(package_dir.relative_to(REPO).parts)
        relative = path.relative_to(package_dir).as_posix()
        if not any(fnmatch.fnmatch(relative, glob) for glob in data.get(package, [])):
            missed.append(f"{package}: {relative}")
    assert missed == []
    schemas = sorted(path.name for path in (REPO / "schemas").glob("*.json"))
    assert schemas and data["heliabuild.schemas"] == ["*.json"]
