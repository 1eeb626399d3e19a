"""The errors rule (docs/layout.md, "Errors"): every exception class heliabuild defines derives from HeliaError
and lives where the rule says: in heliabuild/errors.py when another package imports it, else beside the one
package that raises and handles it. Read from the source (ast), so a class nothing imports yet is checked too."""

from __future__ import annotations

import ast
import builtins
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "heliabuild"
ERRORS = "heliabuild/errors.py"
FRONT_ENDS = ("heliabuild/scons/", "heliabuild/cli", "heliabuild/api.py", "heliabuild/doctor.py")
"""The layers above every package: they catch a package's own error by name where it lives (the rule)."""
NOT_HELIA_ERRORS = {
    "NotInstalled": "a LookupError the callers of heliabuild.distributions.version always catch, as "
    "importlib.metadata.PackageNotFoundError is; never a user's error",
}
BUILTIN_ERRORS = {
    name for name, value in vars(builtins).items() if isinstance(value, type) and issubclass(value, Exception)
}
"""Errors are Exceptions; an interrupt (heliabuild.scons.interrupt.StageInterrupted, a KeyboardInterrupt) is not one."""


@dataclass(frozen=True)
class ClassDef:
    name: str
    module: str
    bases: tuple[str, ...]


def _modules() -> dict[str, ast.Module]:
    root = PACKAGE.parent
    return {
        path.relative_to(root).as_posix(): ast.parse(path.read_text("utf-8")) for path in sorted(PACKAGE.rglob("*.py"))
    }


MODULES = _modules()


def _base_name(node: ast.expr) -> str:
    return node.attr if isinstance(node, ast.Attribute) else node.id if isinstance(node, ast.Name) else ""


def _classes() -> dict[str, list[ClassDef]]:
    found: dict[str, list[ClassDef]] = defaultdict(list)
    for module, tree in MODULES.items():
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                found[node.name].append(ClassDef(node.name, module, tuple(_base_name(b) for b in node.bases)))
    return found


CLASSES = _classes()


def _derives(name: str, roots: set[str], seen: frozenset[str] = frozenset()) -> bool:
    if name in roots:
        return True
    if name in seen:
        return False
    return any(_derives(base, roots, seen | {name}) for c in CLASSES.get(name, ()) for base in c.bases)


EXCEPTIONS = sorted(
    (c for defs in CLASSES.values() for c in defs if any(_derives(b, BUILTIN_ERRORS) for b in c.bases)),
    key=lambda c: (c.module, c.name),
)


def _package(module: str) -> str:
    """heliabuild/<package>/ for a module of a sub-package, the module itself for a top-level one."""
    parts = module.split("/")
    return "/".join(parts[:2]) + "/" if len(parts) > 2 else module


def _names(tree: ast.Module) -> frozenset[str]:
    """Every name a module uses: imported, raised, caught or referenced as an attribute."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            found.add(node.id)
        elif isinstance(node, ast.Attribute):
            found.add(node.attr)
        elif isinstance(node, ast.alias):
            found.add(node.name)
    return frozenset(found)


NAMES = {module: _names(tree) for module, tree in MODULES.items()}


def _referencing(name: str) -> set[str]:
    """The modules that name `name`."""
    return {module for module, names in NAMES.items() if name in names}


def test_the_source_has_the_error_classes_the_rule_speaks_of() -> None:
    names = {c.name for c in EXCEPTIONS}
    assert {"HeliaError", "KernelError", "Int8KernelError", "CodegenError", "PlatformError"} <= names
    assert len(EXCEPTIONS) >= 36


def test_every_error_class_derives_from_helia_error() -> None:
    """Private control-flow exceptions (`_Refusal`) are checked by the next test: they never leave their package."""
    wrong = [
        f"{c.module}: {c.name}"
        for c in EXCEPTIONS
        if not c.name.startswith("_") and c.name not in NOT_HELIA_ERRORS and not _derives(c.name, {"HeliaError"})
    ]
    assert wrong == []


def test_an_error_name_means_one_class() -> None:
    twice = {c.name: [d.module for d in CLASSES[c.name]] for c in EXCEPTIONS if len(CLASSES[c.name]) > 1}
    assert twice == {}


def test_an_error_outside_errors_py_is_named_by_its_own_package_and_the_front_ends_only() -> None:
    misplaced = []
    for c in EXCEPTIONS:
        if c.module == ERRORS or c.name in NOT_HELIA_ERRORS:
            continue
        own = _package(c.module)
        others = sorted(
            module
            for module in _referencing(c.name)
            if _package(module) != own and (c.name.startswith("_") or not module.startswith(FRONT_ENDS))
        )
        if others:
            misplaced.append(f"{c.name} ({c.module}) is named by {', '.join(others)}: move it to {ERRORS}")
    assert misplaced == []


def test_errors_py_imports_nothing_of_heliabuild() -> None:
    """The bottom layer: every package imports it, so it imports none of them."""
    imports = [
        node
        for node in ast.walk(MODULES[ERRORS])
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("heliabuild")
    ]
    assert imports == []
