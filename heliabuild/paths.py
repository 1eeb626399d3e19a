"""Keeping the outputs of a command apart from its inputs.

Before it writes anything, a command refuses an output path that

- is one of its inputs (`fence m.tflite -o m.tflite`),
- is a folder that contains one (`runner --model d/m.tflite -o d`), or
- lies inside an input that is a folder read as a whole (`show b --plot b/plot.svg`).

Paths are compared resolved (os.path.realpath, so a symlink or `..` does not hide a match) and by identity
(st_dev and st_ino through os.path.samefile, so a hard link or a second mount of a folder does not either).
An input that does not exist is compared by its resolved path alone.
"""

from __future__ import annotations

import os
from collections.abc import Iterable

from heliabuild.errors import HeliaError

PathLike = str | os.PathLike[str]
Named = tuple[str, PathLike | None]
"""(what it is, e.g. "fence plan"; its path, or None when the command was not given it)."""


_RELATIONS = ("is", "contains", "is inside")


def _same(first: str, second: str) -> bool:
    """Whether two resolved paths name one file: equal, or the same st_dev and st_ino."""
    if first == second:
        return True
    try:
        return os.path.samefile(first, second)
    except OSError:
        return False


def _lineage(path: PathLike) -> list[str]:
    """The resolved `path`, then each of its parent folders up to the root."""
    lineage = [os.path.realpath(path)]
    while (parent := os.path.dirname(lineage[-1])) != lineage[-1]:
        lineage.append(parent)
    return lineage


def _overlap(output: PathLike, source: PathLike, whole_folder: bool) -> str | None:
    """How `output` meets the input `source` ("is", "contains", "is inside"), or None when apart."""
    outputs, sources = _lineage(output), _lineage(source)
    if _same(outputs[0], sources[0]):
        return "is"
    if any(_same(outputs[0], parent) for parent in sources[1:]):
        return "contains"
    if whole_folder and any(_same(parent, sources[0]) for parent in outputs[1:]):
        return "is inside"
    return None


def check_outputs(outputs: Iterable[Named], inputs: Iterable[Named], folders: Iterable[Named] = ()) -> None:
    """Raise HeliaError, naming both paths, when an output is or contains one of `inputs` or `folders`, or
    lies inside one of `folders` (inputs read as whole folders, e.g. a result bundle). Entries whose path is
    None are skipped. Reads nothing but the file system's metadata and writes nothing."""
    given = [(what, path, False) for what, path in inputs if path is not None]
    given += [(what, path, True) for what, path in folders if path is not None]
    for output_what, output in outputs:
        if output is None:
            continue
        meets = [
            (_RELATIONS.index(relation), relation, what, source)
            for what, source, whole_folder in given
            if (relation := _overlap(output, source, whole_folder)) is not None
        ]
        if meets:  # name the closest input: one the output is, else one it contains, else one it is inside
            _, relation, input_what, source = min(meets, key=lambda meet: meet[0])
            raise HeliaError(
                f"{output}: the output {output_what} {relation} the input {input_what} {source}; "
                "a command never writes over, into or around its own inputs",
                hint="choose an output path apart from the inputs",
            )
