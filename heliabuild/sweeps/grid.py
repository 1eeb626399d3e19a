"""A sweep's grid: its points, in order, and the folder name of each (docs/sweeps.md, "Folder names").

A grid maps axis names to non-empty lists of values. Its points are the product of the lists, in the
grid's order, the first axis varying slowest. A key may also be a tuple of linked axes, whose values are
tuples of one value per axis (`('accelerator', 'platform'): [('ethos-u55-128', 'corstone300_ethos_u55'),
('ethos-u85-256', 'corstone320_ethos_u85')]`): they vary together, as one axis. Values are JSON values
(None, bools, numbers, strings, lists and mappings with string keys); the SCons side gives a file node as
its path.

A point's folder name is `<axis>=<text>` for each axis (linked axes each on their own), in the grid's
order, joined by `,`, for example `accelerator=ethos-u55-128,budget_cycles=30000`. A value's text is

- `none`, `true`, `false`, or the number as Python writes it (`30000`, `0.5`);
- for a string, the part after its last `/` (a path reads as its file name; where that reads like
  another value's, as many of its last folders as tell them apart, joined by `_`: `policy.yaml` and
  `other_policy.yaml`), each character other than letters, digits, `_`, `.`, `+` and `-` replaced by `_`;
- for a list, its items' texts joined by `+` (fences `[3, 6]` read `3+6`);
- for a mapping, nothing: only its hash names it;

cut to MAX_TEXT characters. A text that was cut, is empty, or reads like another (distinct) value's text
of the same axis, ignoring case (two folders that differ only in case are one folder on macOS and
Windows), gets `~` and the first 8 hex digits of the SHA-256 of the value's canonical JSON (more digits
if 8 do not tell the values apart). A folder name longer than MAX_NAME is cut and ends with `~~` and 16
hex digits of the point's hash.

Distinct points get distinct folder names, also ignoring case: texts hold no `,`, `=` or `~` of their
own, so a name splits back into its axes' texts; two points differ in a value of at least one axis, and
within an axis, equal texts of distinct values are told apart by their hashes; a cut name holds `~~`,
which no uncut name does. A grid that lists one value twice on an axis (equal canonical JSON) is
refused, since its two points would be one.
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


Group = tuple[tuple[str, ...], list[tuple[Any, ...]]]
"""Linked axes and their values, each a tuple with one value per axis (a single axis is a group of one)."""


def groups(grid: Mapping[Any, Sequence[Any]]) -> list[Group]:
    """The grid's keys as groups of linked axes, with their values as tuples, in the grid's order.

    A key is an axis name, or a tuple of axis names whose values are lists or tuples of one value per axis
    (`('accelerator', 'platform'): [('ethos-u55-128', 'corstone300_ethos_u55'), ...]`). GridError for a
    grid that is not a non-empty mapping of such keys to non-empty lists, or that names an axis twice.
    The values themselves are checked by `expand`.
    """
    if not isinstance(grid, Mapping) or not grid:
        raise GridError(
            f"the grid is {grid!r}; expected a mapping of axes to lists of values, e.g. {{'fences': [[3]]}}"
        )
    found: list[Group] = []
    named: set[str] = set()
    for key, values in grid.items():
        axes = key if isinstance(key, tuple) and key else (key,)
        for axis in axes:
            if not isinstance(axis, str) or not AXIS_NAME.fullmatch(axis):
                raise GridError(f"grid axis {axis!r} is not a name (letters, digits and '_')")
            if axis in named:
                raise GridError(f"grid axis {axis} is named twice")
            named.add(axis)
        shown = axes[0] if len(axes) == 1 else "(" + ", ".join(axes) + ")"
        if not isinstance(values, list | tuple) or not values:
            raise GridError(f"grid axis {shown} is {values!r}; expected a non-empty list of values, e.g. [{values!r}]")
        if len(axes) == 1 and not isinstance(key, tuple):
            found.append((axes, [(value,) for value in values]))
            continue
        for value in values:
            if not isinstance(value, list | tuple) or len(value) != len(axes):
                raise GridError(f"grid axes {shown}: {value!r} is not a list of {len(axes)} values, one per axis")
        found.append((axes, [tuple(value) for value in values]))
    return found


def _point_name(axes: Sequence[str], texts: Sequence[str], values: Sequence[Any]) -> str:
    """A point's folder name from its axes' texts; cut and ended with the point's hash past MAX_NAME."""
    name = ",".join(f"{axis}={text}" for axis, text in zip(axes, texts, strict=True))
    if len(name) <= MAX_NAME:
        return name
    point = canonical(dict(zip(axes, values, strict=True)))
    return f"{name[: MAX_NAME - 2 - LONG_NAME_DIGITS]}~~{_digest(point)[:LONG_NAME_DIGITS]}"


def expand(grid: Mapping[Any, Sequence[Any]]) -> tuple[Point, ...]:
    """The points of `grid`, in order, each with its folder name (module docstring).

    GridError for a grid `groups` refuses, a value that is not a JSON value, or a value (of linked axes:
    a tuple of values) listed twice.
    """
    found = groups(grid)
    member_texts: list[list[dict[str, str]]] = []  # per group, per axis: canonical value -> text
    for axes, values in found:
        seen: dict[str, Any] = {}
        for value in values:
            for axis, item in zip(axes, value, strict=True):
                _check_value(axis, item)
            key = canonical(list(value))
            if key in seen:
                shown = value[0] if len(axes) == 1 else value
                also = "" if repr(seen[key]) == repr(shown) else f" (as {seen[key]!r} too)"
                raise GridError(f"grid axis {', '.join(axes)} lists {shown!r} twice{also}")
            seen[key] = value if len(axes) > 1 else value[0]
        texts = []
        for position in range(len(axes)):
            distinct = {canonical(value[position]): value[position] for value in values}
            texts.append(dict(zip(distinct, axis_texts(list(distinct.values())), strict=True)))
        member_texts.append(texts)
    all_axes = [axis for axes, _ in found for axis in axes]
    points = []
    for combination in itertools.product(*(range(len(values)) for _, values in found)):
        flat: list[Any] = []
        texts: list[str] = []
        for (_, values), group_texts, index in zip(found, member_texts, combination, strict=True):
            flat += values[index]
            texts += [text[canonical(item)] for text, item in zip(group_texts, values[index], strict=True)]
        points.append(
            Point(
                values=MappingProxyType(dict(zip(all_axes, flat, strict=True))),
                folder=_point_name(all_axes, texts, flat),
            )
        )
    if len({point.folder.lower() for point in points}) != len(points):
        raise AssertionError(f"two points of a grid have one {LONG_NAME_DIGITS}-digit hash: {all_axes!r}")
    return tuple(points)
