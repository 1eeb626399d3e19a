"""A sweep's grid: its points, in order, and the folder name of each (docs/sweeps.md, "Folder names").

A grid maps axis names to non-empty lists of values. Its points are the product of the lists, in the
grid's order, the first axis varying slowest. Values are JSON values (None, bools, numbers, strings, lists
and mappings with string keys); the SCons side gives a file node as its path.

A point's folder name is `<axis>=<text>` for each axis, in the grid's order, joined by `,`, for example
`accelerator=ethos-u55-128,budget_cycles=30000`. A value's text is

- `none`, `true`, `false`, or the number as Python writes it (`30000`, `0.5`);
- for a string, the part after its last `/` (a path reads as its file name; where that reads like
  another value's, as many of its last folders as tell them apart, joined by `_`: `policy.yaml` and
  `other_policy.yaml`), each character other than letters, digits, `_`, `.`, `+` and `-` replaced by `_`;
- for a list, its items' texts joined by `+` (fences `[3, 6]` read `3+6`);
- for a mapping, nothing: only its hash names it;

cut to MAX_TEXT characters. A text that was cut, is empty, or reads like another value's text of the same
axis, ignoring case (two folders that differ only in case are one folder on macOS and Windows), gets
`~` and the first 8 hex digits of the SHA-256 of the value's canonical JSON (more digits if 8 do not tell
the values apart). A folder name longer than MAX_NAME is cut and ends with `~~` and 16 hex digits of the
point's hash.

Distinct points get distinct folder names, also ignoring case: texts hold no `,`, `=` or `~` of their
own, so a name splits back into its axes' texts; within an axis, equal texts are told apart by their
hashes; a cut name holds `~~`, which no uncut name does. A grid whose axis lists one value twice (equal
canonical JSON) is refused, since its two points would be one.
"""

from __future__ import annotations

import itertools
import json
import math
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from heliabuild.errors import HeliaError
from heliabuild.files import sha256_bytes

MAX_TEXT = 32
"""The longest text of one value in a folder name; a longer one is cut and hashed."""

MAX_NAME = 200
"""The longest folder name (file systems allow 255 bytes; a name is ASCII)."""

HASH_DIGITS = (8, 16, 64)
"""How many hex digits of a value's hash tell texts apart: the fewest that do."""

LONG_NAME_DIGITS = 16
"""Hex digits of the point's hash that end a cut folder name."""

AXIS_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_UNSAFE = re.compile(r"[^A-Za-z0-9_.+-]")


class GridError(HeliaError):
    """A grid that has no points or cannot name them: not a mapping of non-empty lists of JSON values."""


@dataclass(frozen=True)
class Point:
    """One point of a grid: its value on each axis, in the grid's order, and its folder name."""

    values: Mapping[str, Any]
    folder: str

    def to_json(self) -> dict[str, Any]:
        return {"folder": self.folder, "options": dict(self.values)}

    @classmethod
    def from_json(cls, document: Mapping[str, Any]) -> Point:
        return cls(values=MappingProxyType(dict(document["options"])), folder=str(document["folder"]))


def canonical(value: Any) -> str:
    """The canonical JSON of a value: sorted keys, no spaces; equal for values the grid treats as one."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def _digest(text: str) -> str:
    return sha256_bytes(text.encode("utf-8"))


def _parts(text: str) -> list[str]:
    return text.rstrip("/").split("/")


def value_text(value: Any, depth: int = 1) -> str:
    """The readable text of a value, before it is cut or hashed (module docstring); a string reads as its
    last `depth` parts between `/`."""
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        return _UNSAFE.sub("_", "_".join(_parts(value)[-depth:]))
    if isinstance(value, list | tuple):
        return "+".join(value_text(item) for item in value)
    return ""


def _check_value(axis: str, value: Any) -> None:
    """GridError unless `value` is a JSON value (module docstring)."""
    if value is None or isinstance(value, bool | int | str):
        return
    if isinstance(value, float):
        if not math.isfinite(value):
            raise GridError(f"grid axis {axis}: {value!r} is not a finite number")
        return
    if isinstance(value, list | tuple):
        for item in value:
            _check_value(axis, item)
        return
    if isinstance(value, Mapping):
        for key, item in value.items():
            if not isinstance(key, str):
                raise GridError(f"grid axis {axis}: the mapping key {key!r} is not a string")
            _check_value(axis, item)
        return
    raise GridError(f"grid axis {axis}: {value!r} is not a grid value (a number, string, list or mapping)")


def axis_texts(values: Sequence[Any]) -> list[str]:
    """The text of each of one axis's values in folder names: distinct, also ignoring case (module docstring)."""
    depths = [1] * len(values)
    while True:
        texts = [value_text(value, depth) for value, depth in zip(values, depths, strict=True)]
        folded = Counter(text.lower() for text in texts)
        deeper = [
            index
            for index, (value, text) in enumerate(zip(values, texts, strict=True))
            if folded[text.lower()] > 1 and isinstance(value, str) and depths[index] < len(_parts(value))
        ]
        if not deeper:
            break
        for index in deeper:
            depths[index] += 1
    marked = [len(text) > MAX_TEXT or not text for text in texts]
    texts = [text[:MAX_TEXT] for text in texts]
    folded = Counter(text.lower() for text in texts)
    digests = [_digest(canonical(value)) for value in values]
    for digits in HASH_DIGITS:
        named = [
            f"{text}~{digest[:digits]}" if mark or folded[text.lower()] > 1 else text
            for text, mark, digest in zip(texts, marked, digests, strict=True)
        ]
        if len({text.lower() for text in named}) == len(named):
            return named
    raise AssertionError(f"two values of one axis have one SHA-256: {values!r}")


def _folder_names(axes: Sequence[str], texts: Sequence[Sequence[str]], points: Sequence[tuple[Any, ...]]) -> list[str]:
    """The folder name of each point, from its axes' texts (`texts[k]` is the k-th axis's texts, by value index)."""
    names = [
        ",".join(f"{axis}={axis_text[i]}" for axis, axis_text, i in zip(axes, texts, combination, strict=True))
        for combination in itertools.product(*(range(len(axis_text)) for axis_text in texts))
    ]
    long = {index for index, name in enumerate(names) if len(name) > MAX_NAME}
    cut = MAX_NAME - 2 - LONG_NAME_DIGITS
    for index in long:
        point = dict(zip(axes, points[index], strict=True))
        names[index] = f"{names[index][:cut]}~~{_digest(canonical(point))[:LONG_NAME_DIGITS]}"
    if len({name.lower() for name in names}) != len(names):
        raise AssertionError(f"two points of a grid have one {LONG_NAME_DIGITS}-digit hash: {axes!r}")
    return names


def expand(grid: Mapping[str, Sequence[Any]]) -> tuple[Point, ...]:
    """The points of `grid`, in order, each with its folder name (module docstring).

    GridError for a grid that is not a non-empty mapping of axis names (letters, digits and `_`, not
    starting with a digit) to non-empty lists of JSON values, or that lists a value twice on one axis.
    """
    if not isinstance(grid, Mapping) or not grid:
        raise GridError(
            f"the grid is {grid!r}; expected a mapping of axes to lists of values, e.g. {{'fences': [[3]]}}"
        )
    axes: list[str] = []
    columns: list[list[Any]] = []
    for axis, values in grid.items():
        if not isinstance(axis, str) or not AXIS_NAME.fullmatch(axis):
            raise GridError(f"grid axis {axis!r} is not a name (letters, digits and '_')")
        if not isinstance(values, list | tuple) or not values:
            raise GridError(f"grid axis {axis} is {values!r}; expected a non-empty list of values, e.g. [{values!r}]")
        seen: dict[str, Any] = {}
        for value in values:
            _check_value(axis, value)
            key = canonical(value)
            if key in seen:
                raise GridError(f"grid axis {axis} lists {value!r} twice (as {seen[key]!r} too)")
            seen[key] = value
        axes.append(axis)
        columns.append(list(values))
    texts = [axis_texts(values) for values in columns]
    combinations = list(itertools.product(*columns))
    names = _folder_names(axes, texts, combinations)
    return tuple(
        Point(values=MappingProxyType(dict(zip(axes, combination, strict=True))), folder=name)
        for combination, name in zip(combinations, names, strict=True)
    )
