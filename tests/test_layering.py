"""Layers point down (docs/layout.md, "The packages"): a package imports only the packages listed before it, every
import counted (module-level, function-level and TYPE_CHECKING ones alike), and only heliabuild/scons/ imports
SCons. Read from the source (ast), so a cycle a lazy import would hide at run time is found too."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "heliabuild"
SHARED = {
    "__init__", "__version__", "errors", "documents", "files", "paths", "locks", "lazy", "units", "tables", "colour",
    "distributions", "schema_files", "subprocesses", "sessions", "progress", "manual",
}  # fmt: skip
"""The top-level modules every layer may use (the shared ground, first in the table)."""
ORDER = (
    "<shared>", "targets", "model", "synth", "fence", "vela", "planning", "kernels", "aot", "codegen", "firmware",
    "module", "fvp", "results", "runner", "sweeps", "executor", "cache", "api", "doctor", "cli", "scons",
)  # fmt: skip
"""docs/layout.md's table, bottom layer first."""


def _layer(module: str) -> str:
    parts = module.split(".")
    if len(parts) < 2 or parts[1] in SHARED:
        return "<shared>"
    return parts[1]


def _imports(tree: ast.Module) -> list[str]:
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append(node.module)
            if node.module == "heliabuild":
                found.extend(f"heliabuild.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Import):
            found.extend(alias.name for alias in node.names)
    return found


SOURCES = {path: ast.parse(path.read_text(encoding="utf-8")) for path in sorted(PACKAGE.rglob("*.py"))}


def test_every_package_is_in_the_table() -> None:
    layers = {_layer(".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts)) for path in SOURCES}
    assert layers - set(ORDER) == set()


def test_imports_point_down() -> None:
    upward = []
    for path, tree in SOURCES.items():
        own = _layer(".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts))
        for module in _imports(tree):
            if module == "heliabuild" or not module.startswith("heliabuild."):
                continue
            target = _layer(module)
            if target != own and ORDER.index(target) > ORDER.index(own):
                upward.append(f"{path.relative_to(PACKAGE.parent)}: {own} imports {module} ({target} is above it)")
    assert upward == []


def test_only_the_scons_package_imports_scons() -> None:
    importing = [
        str(path.relative_to(PACKAGE.parent))
        for path, tree in SOURCES.items()
        if any(module == "SCons" or module.startswith("SCons.") for module in _imports(tree))
        and "scons" not in path.relative_to(PACKAGE).parts[:1]
    ]
    assert importing == []
