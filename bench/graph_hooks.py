"""SCons-side helpers of bench/speed.py, imported by the SConstructs it writes (never by heliabuild).

- `dump_graph(path)`: write every builder's targets, sources, explicit and scanned dependencies, node flags
  and every alias of the graph just read, as JSON, so the plain-SCons baseline can be made from it and checked
  against it (same files, same dependencies, same number of nodes).
- `copy_heliabuild_stages(env, template, real)`: make every heliabuild builder except those named in `real`
  copy its targets from pipeline `template` (its name replaced in the text files) instead of running its stage.
  Only the function an action calls changes: SCons computed the action's signature from the real function
  when the builder was made, so the database records what a real build records.
- `CopyCommand`: a Command action whose signature is its command line's, as for a plain Command, and that
  copies its targets from another project instead of running the command.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable, Iterable
from pathlib import Path

import SCons.Action
import SCons.Node.Alias
import SCons.Node.FS
import SCons.Node.Python
from SCons.Environment import Base as Environment
from SCons.Node import Node

TEXT_SUFFIXES = (".json", ".csv")


def _node(node: Node) -> list[str]:
    if isinstance(node, SCons.Node.Python.Value):
        return ["value", node.value]
    if isinstance(node, SCons.Node.Alias.Alias):
        return ["alias", str(node)]
    return ["file", str(node)]


def _files(folder: SCons.Node.FS.Dir) -> Iterable[Node]:
    for name, entry in sorted(folder.entries.items()):
        if name in (".", ".."):
            continue
        if isinstance(entry, SCons.Node.FS.Dir):
            yield from _files(entry)
        else:
            yield entry


def graph(env: Environment) -> dict[str, object]:
    """The graph read so far: each builder call (executor) with its nodes, and each alias."""
    seen: set[int] = set()
    calls = []
    for node in _files(env.Dir("#")):
        if not node.has_builder() or id(node.get_executor()) in seen:
            continue
        executor = node.get_executor()
        seen.add(id(executor))
        targets = list(executor.get_all_targets())
        sources = list(executor.get_all_sources())
        scanner = targets[0].builder.source_scanner
        scanned = [found for source in sources for found in (scanner(source, env) if scanner else [])]
        calls.append(
            {
                "builder": next((name for name, b in env["BUILDERS"].items() if b is targets[0].builder), "Command"),
                "targets": [str(t) for t in targets],
                "sources": [str(s) for s in sources],
                "depends": [[_node(d) for d in t.depends] for t in targets],
                "scanned": [str(s) for s in scanned],
                "flags": [[bool(t.precious), bool(t.nocache), bool(t.noclean)] for t in targets],
            }
        )
    aliases = {name: [_node(s) for s in alias.sources] for name, alias in sorted(SCons.Node.Alias.default_ans.items())}
    return {"calls": calls, "aliases": aliases}


def dump_graph(env: Environment, path: str) -> None:
    Path(path).write_text(json.dumps(graph(env), indent=1), encoding="utf-8")


def _copy(source: Path, destination: Path, template: str, name: str) -> None:
    data = source.read_bytes()
    if destination.suffix in TEXT_SUFFIXES:
        data = data.replace(template.encode(), name.encode())
    destination.parent.mkdir(parents=True, exist_ok=True)
    destination.write_bytes(data)


def _copier(template: str, whole_folder: bool) -> Callable[..., int]:
    def copy_stage(target: list[Node], source: list[Node], env: Environment) -> int:
        first = Path(str(target[0]))
        name = first.parts[0]
        if whole_folder:  # a result bundle: every file of the folder, names and all, as the run wrote them
            folder = first.parent
            model = Path(str(folder).replace(name, template))
            for path in sorted(model.rglob("*")):
                if path.is_file():
                    _copy(path, folder / path.relative_to(model), template, name)
            return 0
        for node in target:
            path = Path(str(node))
            _copy(Path(str(path).replace(name, template)), path, template, name)
        return 0

    return copy_stage


def copy_heliabuild_stages(env: Environment, template: str, real: Iterable[str], folders: Iterable[str]) -> None:
    """Let every builder of `env` not in `real` copy from pipeline `template` (see the module docstring);
    builders in `folders` copy their first target's whole folder."""
    real, folders = set(real), set(folders)
    for name, builder in env["BUILDERS"].items():
        action = builder.action
        if name in real or not isinstance(action, SCons.Action.FunctionAction):
            continue
        action.execfunction = _copier(template, name in folders)


class CopyCommand(SCons.Action.CommandAction):
    """A command line's action (its signature is the command line's) that copies its targets from the same
    paths under `origin` instead of running the command; for a target given as a folder's first file, the
    whole folder."""

    def __init__(self, command: str, origin: str, whole_folder: bool = False) -> None:
        super().__init__(command)
        self.origin = origin
        self.whole_folder = whole_folder

    def execute(self, target, source, env, executor=None):
        paths = [Path(str(node)) for node in target]
        if self.whole_folder:
            folder = paths[0].parent
            shutil.copytree(Path(self.origin) / folder, folder, dirs_exist_ok=True)
            return 0
        for path in paths:
            path.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(os.path.join(self.origin, path), path)
        return 0
