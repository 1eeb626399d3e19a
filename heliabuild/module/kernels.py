"""Which of heliabuild's C sources a generated module needs, derived from the sources themselves.

    needed = kernel_sources(calls, generated_includes)   # -> KernelSources(sources, headers)

The table is read from `heliabuild/kernels/c/`: every external function a `.c` file defines (a definition at
the start of a line, not `static`), and every `#include "..."` of each file. A module needs the files that
define the functions its calls name (each call's check and run entry, whatever the generator calls them), then,
to a fixed point, the files defining any function those files call, and every header any of them (or the
generated source) includes. So a kernel another helper adds, or a `_run` entry the generator starts calling,
flows into the export without a list to keep up to date; a call no source defines is a ModuleError, never a
module that fails to link.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from heliabuild.codegen.calls import KernelCall
from heliabuild.errors import HeliaError

KERNEL_SOURCE_DIR = Path(__file__).resolve().parents[1] / "kernels" / "c"

_DEFINITION = re.compile(
    r"^(?!static\b)(?:[A-Za-z_][\w ]*?[\s*]+)(helia_\w+)\s*\([^;{]*\)\s*\{", re.MULTILINE | re.DOTALL
)
_CALL = re.compile(r"\b(helia_\w+)\s*\(")
_INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.MULTILINE)
_MAX_SOURCE_BYTES = 4 << 20


class ModuleError(HeliaError):
    """A module export that cannot be made: a kernel no source defines, an unknown layout, an output folder
    that is not an export of heliabuild's."""


@dataclass(frozen=True)
class SourceTable:
    """Function name -> the `.c` file (a name in KERNEL_SOURCE_DIR) that defines it; each `.c` file's calls of
    `helia_*` functions; each file's quoted includes."""

    defined_in: dict[str, str]
    calls: dict[str, frozenset[str]]
    includes: dict[str, tuple[str, ...]]


@dataclass(frozen=True)
class KernelSources:
    """The kernel sources and headers a module needs, as names in KERNEL_SOURCE_DIR, sorted."""

    sources: tuple[str, ...]
    headers: tuple[str, ...]


def _text(path: Path) -> str:
    with path.open("rb") as handle:
        data = handle.read(_MAX_SOURCE_BYTES + 1)
    if len(data) > _MAX_SOURCE_BYTES:
        raise ModuleError(f"{path}: a kernel source above {_MAX_SOURCE_BYTES} bytes")
    return data.decode("utf-8")


def _without_comments(text: str) -> str:
    return re.sub(r"/\*.*?\*/|//[^\n]*", " ", text, flags=re.DOTALL)


@cache
def source_table(folder: Path = KERNEL_SOURCE_DIR) -> SourceTable:
    """The table of `folder`'s C sources (module docstring)."""
    defined_in: dict[str, str] = {}
    calls: dict[str, frozenset[str]] = {}
    includes: dict[str, tuple[str, ...]] = {}
    for path in sorted([*folder.glob("*.c"), *folder.glob("*.h")]):
        text = _text(path)
        includes[path.name] = tuple(_INCLUDE.findall(text))
        if path.suffix != ".c":
            continue
        code = _without_comments(text)
        for name in _DEFINITION.findall(code):
            known = defined_in.setdefault(name, path.name)
            if known != path.name:
                raise ModuleError(f"{name} is defined in both {known} and {path.name}")
        calls[path.name] = frozenset(_CALL.findall(code))
    return SourceTable(defined_in, calls, includes)


def called_functions(calls: Iterable[KernelCall]) -> list[str]:
    """Every function the generated module calls: each call's check and run entry, in call order."""
    return list(dict.fromkeys(name for call in calls for name in (call.check, call.run)))


def kernel_sources(
    calls: Sequence[KernelCall], generated_includes: Iterable[str], table: SourceTable | None = None
) -> KernelSources:
    """The sources defining what `calls` call, closed over the functions those sources call, and the headers
    they and the generated source (`generated_includes`, its quoted includes) include."""
    table = table or source_table()
    sources: set[str] = set()
    pending = called_functions(calls)
    missing = [name for name in pending if name not in table.defined_in]
    if missing:
        raise ModuleError(
            f"no kernel source in {KERNEL_SOURCE_DIR} defines {', '.join(missing)}",
            hint="the generator calls a kernel heliabuild does not ship; reinstall heliabuild",
        )
    while pending:
        name = pending.pop()
        source = table.defined_in.get(name)
        if source is None or source in sources:
            continue
        sources.add(source)
        pending.extend(table.calls[source])
    headers: set[str] = set()
    waiting = [include for source in sources for include in table.includes[source]]
    waiting.extend(generated_includes)
    while waiting:
        header = waiting.pop()
        if header in headers or header not in table.includes:
            continue
        headers.add(header)
        waiting.extend(table.includes[header])
    return KernelSources(tuple(sorted(sources)), tuple(sorted(headers)))
