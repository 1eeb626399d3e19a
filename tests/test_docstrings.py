"""Every dotted heliabuild name a docstring of heliabuild cites exists: a module, or an attribute of one (a
dataclass field counts). Docstrings state the contract and point to docs/ for the rest, so a name that moved
(a function cited in its old package, say) is found here rather than by a reader."""

from __future__ import annotations

import ast
import dataclasses
import importlib
import re
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "heliabuild"
CITED = re.compile(r"(?<![\w.])heliabuild(?:\.[A-Za-z_]\w*)+(?!\w)(?!\.<|/)")
"""A dotted name: not part of a file name (`.sconsign.heliabuild.lock`) nor of an identifier with a
placeholder or a version after it (`heliabuild.cmsis_nn.<family>/1`, a provider id)."""


def _exists(name: str) -> bool:
    """Whether the longest importable module prefix of `name` has the rest as attributes (or fields)."""
    parts = name.split(".")
    for end in range(len(parts), 0, -1):
        try:
            found: object = importlib.import_module(".".join(parts[:end]))
        except ImportError:
            continue
        for attribute in parts[end:]:
            fields = {field.name for field in dataclasses.fields(found)} if dataclasses.is_dataclass(found) else set()
            if attribute in fields:
                return attribute == parts[-1]
            if not hasattr(found, attribute):
                return False
            found = getattr(found, attribute)
        return True
    return False


def _cited() -> dict[str, set[str]]:
    """Each cited name and the modules whose docstrings cite it."""
    cited: dict[str, set[str]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
                for name in CITED.findall(ast.get_docstring(node, clean=False) or ""):
                    cited.setdefault(name, set()).add(path.relative_to(PACKAGE.parent).as_posix())
    return cited


def test_the_citation_pattern_finds_names_and_skips_file_names_and_ids() -> None:
    text = "see heliabuild.scons.sweep. The lock .sconsign.heliabuild.lock; heliabuild.cmsis_nn.<family>/1"
    assert CITED.findall(text) == ["heliabuild.scons.sweep"]
    assert not _exists("heliabuild.fence.plan_fences") and _exists("heliabuild.planning.plan_fences")


def test_every_name_a_docstring_cites_exists() -> None:
    cited = _cited()
    assert len(cited) > 100  # the docstrings do cite names: the pattern finds them
    missing = {name: sorted(where) for name, where in cited.items() if not _exists(name)}
    assert missing == {}
