"""The binding of frozen dataclasses to JSON that the plan and report records use (heliabuild.aot.records).

A `_Record` is a frozen, keyword-only dataclass whose fields carry their parser in their metadata
(`_required(parse)`, `_optional(parse)`): `from_json` reads a document by the rules heliabuild.aot.records
states (unknown fields ignored, a known one of the wrong type a PlanReadError naming its path), `to_json`
writes back every field it knows. The parsers (`_string`, `_integer`, `_array(...)`, `_member(Enum)`,
`_record(Record)`, `_nullable(...)`) check one JSON value each; `known_member` keeps an unknown enum member as
the string written. `_check_version` refuses a `schema_version` other than SCHEMA_VERSION.
"""

from __future__ import annotations

import copy
import json
import os
from collections.abc import Callable
from dataclasses import MISSING, Field, dataclass, field, fields
from enum import Enum, StrEnum
from functools import cache
from typing import Any, NoReturn, Self, TypeVar

from heliabuild.documents import read_json
from heliabuild.errors import PlanReadError

SCHEMA_VERSION = 1
"""The `schema_version` this release reads and writes."""


VERSION_HINT = (
    "Read the file with the heliaAOT or heliabuild release that wrote it (its generator field names it), "
    "or write it again with this one."
)


class ValidationContext(StrEnum):
    """How strictly a plan is read; `APPLIED`: the plan is read as input and its schedule applied."""

    APPLIED = "applied"


APPLIED = ValidationContext.APPLIED


_E = TypeVar("_E", bound=StrEnum)


def known_member(kind: type[_E] | None, value: str) -> _E | str:
    """`value` as a member of `kind` when it is one, else the string itself."""
    if kind is not None:
        member = kind._value2member_map_.get(value)
        if member is not None:
            return member  # type: ignore[return-value]
    return value


@dataclass(frozen=True)
class _Reader:
    """The file being read (`source`, as given), the validation context and what the file should be."""

    source: str
    context: ValidationContext | None
    kind: str

    def fail(self, path: str, detail: str, hint: str | None = None) -> NoReturn:
        where = f"optimization.plan {self.source}" if self.context is APPLIED else self.source
        location = f"{path}: " if path else ""
        raise PlanReadError(f"{where} is not an {self.kind} this release reads: {location}{detail}", hint)


Parse = Callable[[Any, _Reader, str], Any]
"""A field reader: (JSON value, reader, field path) -> the record's value; fails through the reader."""


_PARSE = "heliabuild.parse"


_DUMP = "heliabuild.dump"


_OPTIONAL = "heliabuild.optional"


def _join(path: str, key: str | int) -> str:
    return f"{path}.{key}" if path else str(key)


def _show(value: Any) -> str:
    text = json.dumps(_plain(value), sort_keys=True)
    return text if len(text) <= 80 else text[:77] + "..."


def _plain(value: Any) -> Any:
    """`value` as plain JSON data: records as documents, enum members as their strings, tuples as lists."""
    if isinstance(value, _Record):
        return value.to_json()
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, (tuple, list)):
        return [_plain(item) for item in value]
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    return value


def _mapping(value: Any, reader: _Reader, path: str) -> dict[str, Any]:
    if isinstance(value, dict):
        return value
    reader.fail(path, f"expected an object, found {_show(value)}.")


def _string(value: Any, reader: _Reader, path: str) -> str:
    if isinstance(value, str):
        return value
    reader.fail(path, f"expected a string, found {_show(value)}.")


def _integer(value: Any, reader: _Reader, path: str) -> int:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    reader.fail(path, f"expected an integer, found {_show(value)}.")


def _boolean(value: Any, reader: _Reader, path: str) -> bool:
    if isinstance(value, bool):
        return value
    reader.fail(path, f"expected true or false, found {_show(value)}.")


def _number(value: Any, reader: _Reader, path: str) -> int | float:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return value
    reader.fail(path, f"expected a number, found {_show(value)}.")


def _json(value: Any, reader: _Reader, path: str) -> Any:
    """Any JSON value, copied."""
    return copy.deepcopy(value)


def _free_object(value: Any, reader: _Reader, path: str) -> dict[str, Any]:
    """A free-form JSON object, copied."""
    return copy.deepcopy(_mapping(value, reader, path))


def _nullable(parse: Parse) -> Parse:
    def read(value: Any, reader: _Reader, path: str) -> Any:
        return None if value is None else parse(value, reader, path)

    return read


def _array(parse: Parse) -> Parse:
    def read(value: Any, reader: _Reader, path: str) -> tuple[Any, ...]:
        if not isinstance(value, list):
            reader.fail(path, f"expected an array, found {_show(value)}.")
        return tuple(parse(item, reader, _join(path, position)) for position, item in enumerate(value))

    return read


def _member(kind: type[StrEnum]) -> Parse:
    def read(value: Any, reader: _Reader, path: str) -> StrEnum | str:
        return known_member(kind, _string(value, reader, path))

    return read


def _record(cls: type[_Record]) -> Parse:
    def read(value: Any, reader: _Reader, path: str) -> _Record:
        return cls.read_json(value, reader, path)

    return read


def _required(parse: Parse, *, dump: Callable[[Any], Any] | None = None) -> dict[str, Any]:
    """Field metadata of a field every file of schema version 1 has (absent is a read error): `parse` reads the
    JSON value, `dump` (default: plain JSON of the value) writes it."""
    return {_PARSE: parse, _DUMP: dump}


def _optional(parse: Parse, *, dump: Callable[[Any], Any] | None = None) -> dict[str, Any]:
    """Field metadata of a field a file may leave out: absent reads as the field's default and is written back
    absent."""
    return {_PARSE: parse, _DUMP: dump, _OPTIONAL: True}


@cache
def _json_fields(cls: type) -> tuple[Field[Any], ...]:
    return tuple(item for item in fields(cls) if _PARSE in item.metadata)


def _default_of(item: Field[Any]) -> Any:
    if item.default is not MISSING:
        return item.default
    if item.default_factory is not MISSING:
        return item.default_factory()
    return MISSING


@dataclass(frozen=True, kw_only=True)
class _Record:
    """A record read from a JSON object: its fields with `_PARSE` metadata are the object's fields, by name.

    `omitted` names the optional fields the file left out, so `to_json` leaves
    them out again while they keep their default value.
    """

    omitted: frozenset[str] = field(default=frozenset(), compare=False, repr=False)

    @classmethod
    def _prepare(cls, document: dict[str, Any]) -> dict[str, Any]:
        """Rename fields of older files before reading (identity unless a record overrides it)."""
        return document

    @classmethod
    def read_json(cls, value: Any, reader: _Reader, path: str, **extra: Any) -> Self:
        """Read the record from JSON `value` at field path `path`; `extra` sets fields that are not in the object."""
        document = cls._prepare(_mapping(value, reader, path))
        values: dict[str, Any] = {}
        omitted: set[str] = set()
        for item in _json_fields(cls):
            if item.name in document:
                values[item.name] = item.metadata[_PARSE](document[item.name], reader, _join(path, item.name))
            elif item.metadata.get(_OPTIONAL):
                omitted.add(item.name)
            else:
                reader.fail(path, f"missing field {item.name!r}.")
        return cls(**values, **extra, omitted=frozenset(omitted))

    def to_json(self) -> dict[str, Any]:
        """The JSON object of every known field, leaving out optional fields the file left out (at their default)."""
        document: dict[str, Any] = {}
        for item in _json_fields(type(self)):
            value = getattr(self, item.name)
            if item.name in self.omitted and value == _default_of(item):
                continue
            dump = item.metadata[_DUMP]
            document[item.name] = dump(value) if dump is not None else _plain(value)
        return document


def _check_version(document: Any, reader: _Reader) -> dict[str, Any]:
    """The document as an object whose `schema_version` is this release's, else a PlanReadError."""
    if not isinstance(document, dict):
        reader.fail("", f"expected a JSON object, found {_show(document)}.")
    if "schema_version" not in document:
        reader.fail("", f"missing field 'schema_version' (this release reads schema_version {SCHEMA_VERSION}).")
    found = document["schema_version"]
    if type(found) is not int or found != SCHEMA_VERSION:
        reader.fail(
            "schema_version",
            f"the file has schema_version {_show(found)}; this release reads schema_version {SCHEMA_VERSION}.",
            VERSION_HINT,
        )
    return document


def _read_json_file(path: str | os.PathLike[str], reader: _Reader) -> Any:
    """The JSON document in the file `path`, read as heliabuild.documents says; PlanReadError through
    `reader` when the file is not a bounded regular file of UTF-8 JSON values."""
    try:
        return read_json(path, "file", error=PlanReadError)
    except PlanReadError as error:
        reader.fail("", f"{error.message.removeprefix(f'{os.fspath(path)}: ')}.")
