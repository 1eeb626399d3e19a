"""Bounded reading of the documents a user hands heliabuild (JSON, YAML, CSV, models).

Every read of a user's file goes through here, so that no input can hang a command or exhaust memory:

- only a regular file is read: a FIFO, a device (a symlink to /dev/zero) or a folder is refused without
  blocking, and a read never goes past `limit` bytes;
- text is strict UTF-8; a byte that is not is reported with its offset;
- a parsed document holds only JSON values: objects with string keys, arrays, strings (Unicode text: no
  lone surrogate), finite numbers, integers within 64 bits, booleans and null, nested at most `MAX_DEPTH`
  levels;
- YAML anchors and aliases are refused (an alias bomb of a few hundred bytes expands to gigabytes in any
  code that walks it), and so are YAML's non-JSON types (timestamps, binary, sets);
- a message quotes a user's value through `shown`, which bounds it (a long string or list is cut).

Each failure is one error of the caller's class (a HeliaError) naming the file.
"""

from __future__ import annotations

import json
import os
import reprlib
import stat
from collections.abc import Mapping
from typing import Any

from heliabuild.errors import HeliaError

MAX_DOCUMENT_BYTES = 64 << 20
"""The largest JSON, YAML or CSV document read (64 MiB): far above any heliabuild writes or reads."""

MAX_DEPTH = 64
"""The deepest nesting of arrays and objects admitted in a document."""

_INT64 = 1 << 63

_KINDS = (
    (stat.S_ISDIR, "a folder"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def _kind(mode: int) -> str:
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def read_regular_file(
    path: str | os.PathLike[str],
    what: str,
    *,
    error: type[HeliaError] = HeliaError,
    limit: int = MAX_DOCUMENT_BYTES,
    follow_symlinks: bool = True,
) -> bytes:
    """The bytes of the regular file `path`, the `what` of the command (e.g. "policy").

    Raises `error` naming `path` when it is missing, unreadable, not a regular file (never blocking on a
    FIFO), a symlink while `follow_symlinks` is false, or larger than `limit` bytes (checked before and
    while reading, so a file that grows is caught too)."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    if not follow_symlinks:
        flags |= getattr(os, "O_NOFOLLOW", 0)
    try:
        descriptor = os.open(path, flags)
    except FileNotFoundError:
        raise error(f"{path}: cannot read the {what}: it does not exist") from None
    except IsADirectoryError:
        raise error(f"{path}: the {what} is a folder, expected a file") from None
    except ValueError:  # a NUL byte, or a lone surrogate that no file name can hold
        raise error(f"{shown(os.fspath(path))}: cannot read the {what}: not a usable file name") from None
    except OSError as failure:
        if not follow_symlinks and os.path.islink(path):
            raise error(f"{path}: the {what} is a symlink; only regular files are read here") from None
        raise error(f"{path}: cannot read the {what}: {failure.strerror or failure}") from None
    try:
        status = os.fstat(descriptor)
        if not stat.S_ISREG(status.st_mode):
            raise error(f"{path}: the {what} is {_kind(status.st_mode)}, expected a regular file")
        if status.st_size > limit:
            raise error(f"{path}: the {what} is {status.st_size} bytes, more than the {limit} bytes read here")
        chunks: list[bytes] = []
        remaining = limit + 1
        while remaining > 0:
            chunk = os.read(descriptor, min(remaining, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            remaining -= len(chunk)
        if remaining <= 0:
            raise error(f"{path}: the {what} grew past the {limit} bytes read here while it was read")
        return b"".join(chunks)
    except OSError as failure:
        raise error(f"{path}: cannot read the {what}: {failure.strerror or failure}") from None
    finally:
        os.close(descriptor)


def decode_text(data: bytes, source: str, what: str, *, error: type[HeliaError] = HeliaError) -> str:
    """`data` as strict UTF-8 text; `error` names `source` and the offset of the first bad byte."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as failure:
        raise error(
            f"{source}: the {what} is not UTF-8 text: byte 0x{data[failure.start]:02x} at offset {failure.start}"
        ) from None


def check_json_values(document: Any, source: str, what: str, *, error: type[HeliaError] = HeliaError) -> Any:
    """`document` itself when it holds only JSON values (module docstring), each container once (a YAML
    alias shares one); otherwise `error` naming `source` and the path of the first offending value.

    A first walk only answers whether the document is clean (every document read is checked, most are);
    only a document it finds an offence in is walked again, keeping the path of each value, to name it."""
    if _holds_only_json(document):
        return document
    seen: set[int] = set()
    stack: list[tuple[Any, str, int]] = [(document, "", 0)]
    while stack:
        value, where, depth = stack.pop()
        at = where if len(where) <= 100 else "..." + where[-97:]
        at = at or "(top level)"
        if isinstance(value, dict | list):
            if depth >= MAX_DEPTH:
                raise error(f"{source}: the {what} nests deeper than {MAX_DEPTH} levels")
            if id(value) in seen:
                raise error(f"{source}: {at}: the {what} repeats a node (a YAML alias); write each value out")
            seen.add(id(value))
            children: list[tuple[Any, str, int]] = []
            if isinstance(value, dict):
                for key, item in value.items():
                    if not isinstance(key, str):
                        raise error(f"{source}: {at}: key {shown(key)} is not a string")
                    if not _is_unicode(key):
                        raise error(f"{source}: {at}: key {shown(key)} holds a lone surrogate, not Unicode text")
                    children.append((item, f"{where}.{key}" if where else key, depth + 1))
            else:
                children.extend((item, f"{where}[{k}]", depth + 1) for k, item in enumerate(value))
            stack.extend(reversed(children))  # popped in document order: the first offence is the one named
        elif isinstance(value, str):
            if not _is_unicode(value):
                raise error(f"{source}: {at}: {shown(value)} holds a lone surrogate, not Unicode text")
        elif isinstance(value, bool) or value is None:
            continue
        elif isinstance(value, int):
            if not -_INT64 <= value < _INT64:
                raise error(f"{source}: {at}: the integer is out of range (more than 64 bits)")
        elif isinstance(value, float):
            if value != value or value in (float("inf"), float("-inf")):
                raise error(f"{source}: {at}: {value!r} is not a finite number")
        else:
            raise error(f"{source}: {at}: a {type(value).__name__} value is not JSON; write it as a string")
    return document


def _holds_only_json(document: Any) -> bool:
    """Whether check_json_values finds nothing to refuse in `document` (the same rules, no paths kept).

    Every document read passes through here, so it walks one level of nesting at a time, testing the exact
    type of each value first (what a JSON or YAML parser makes); a subclass takes the slower tests."""
    seen: set[int] = set()
    level: list[Any] = [document]
    depth = 0
    while level:
        below: list[Any] = []
        for value in level:
            kind = type(value)
            if kind is str:
                if not value.isascii() and not _is_unicode(value):
                    return False
            elif kind in _EXACT_SCALARS:
                if kind is int and not -_INT64 <= value < _INT64:
                    return False
                if kind is float and (value != value or value in (_INFINITY, -_INFINITY)):
                    return False
            elif kind is dict or kind is list or isinstance(value, dict | list):
                if depth >= MAX_DEPTH or id(value) in seen:
                    return False
                seen.add(id(value))
                if isinstance(value, dict):
                    for key in value:
                        if type(key) is not str or not (key.isascii() or _is_unicode(key)):
                            return False
                    below.extend(value.values())
                else:
                    below.extend(value)
            elif not _holds_only_json_scalar(value):
                return False
        level = below
        depth += 1
    return True


_EXACT_SCALARS = frozenset({int, float, bool, type(None)})
_INFINITY = float("inf")


def _holds_only_json_scalar(value: Any) -> bool:
    """Whether a value of a subclass of str, bool, int or float holds what its base type may."""
    if isinstance(value, str):
        return _is_unicode(value)
    if isinstance(value, bool):
        return True
    if isinstance(value, int):
        return -_INT64 <= value < _INT64
    if isinstance(value, float):
        return not (value != value or value in (_INFINITY, -_INFINITY))
    return False


def _is_unicode(text: str) -> bool:
    """Whether `text` is Unicode text: no lone surrogate (JSON's "\\ud800" escape), which no file, name or
    UTF-8 output can hold."""
    if text.isascii():
        return True
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


class _IntegerTooLong(ValueError):
    """An integer literal of more digits than any 64-bit integer has."""


def _parse_int(literal: str) -> int:
    """`literal` as an int, refused before conversion when it is longer than any 64-bit integer (converting a
    huge literal costs quadratic time, and Python refuses more than 4300 digits)."""
    if len(literal.lstrip("-")) > 19:
        raise _IntegerTooLong(literal)
    return int(literal)


def parse_json(data: bytes | str, source: str, what: str, *, error: type[HeliaError] = HeliaError) -> Any:
    """The JSON document in `data` (bytes are decoded as UTF-8), checked by `check_json_values`."""
    text = decode_text(data, source, what, error=error) if isinstance(data, bytes | bytearray) else data
    try:
        # NaN and Infinity, which are not JSON, parse as floats here, so that check_json_values names the field
        document = json.loads(text, parse_int=_parse_int)
    except _IntegerTooLong as failure:
        raise error(
            f"{source}: the {what} holds an integer of {len(str(failure).lstrip('-'))} digits, out of range "
            "(more than 64 bits)"
        ) from None
    except json.JSONDecodeError as failure:
        raise error(f"{source}: the {what} is not valid JSON: {failure}") from None
    except RecursionError:
        raise error(f"{source}: the {what} nests deeper than {MAX_DEPTH} levels") from None
    except ValueError as failure:
        raise error(f"{source}: the {what} is not valid JSON: {failure}") from None
    return check_json_values(document, source, what, error=error)


def _yaml_loader() -> type:
    import yaml

    return getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def parse_yaml(text: str, source: str, what: str, *, error: type[HeliaError] = HeliaError) -> Any:
    """The YAML document in `text` (with libyaml where installed), checked by `check_json_values`: no
    aliases, no non-JSON types. An empty document is None."""
    import yaml

    if "*" in text or "&" in text:
        _refuse_aliases(text, source, what, error)
    try:
        document = yaml.load(text, Loader=_yaml_loader())  # a safe loader (CSafeLoader or SafeLoader)
    except yaml.YAMLError as failure:
        raise error(f"{source}: the {what} is not valid YAML: {_yaml_problem(failure)}") from None
    except RecursionError:
        raise error(f"{source}: the {what} nests deeper than {MAX_DEPTH} levels") from None
    except (ValueError, OverflowError) as failure:  # an integer of over 4300 digits, a date such as 2001-02-30
        raise error(f"{source}: the {what} holds a value YAML cannot convert: {str(failure)[:120]}") from None
    return check_json_values(document, source, what, error=error)


def _refuse_aliases(text: str, source: str, what: str, error: type[HeliaError]) -> None:
    """Refuse an anchor or alias before anything is built from it (events only, no expansion)."""
    import yaml

    try:
        for event in yaml.parse(text, Loader=_yaml_loader()):
            if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None) is not None:
                line = event.start_mark.line + 1 if event.start_mark is not None else "?"
                raise error(
                    f"{source}: line {line}: the {what} uses a YAML anchor or alias; heliabuild does not "
                    "read them (write each value out)"
                )
    except yaml.YAMLError as failure:
        raise error(f"{source}: the {what} is not valid YAML: {_yaml_problem(failure)}") from None


def _yaml_problem(failure: Exception) -> str:
    """What a YAML parser reports, with its line and column, in at most about 200 characters."""
    mark = getattr(failure, "problem_mark", None)
    problem = getattr(failure, "problem", None) or " ".join(str(failure).split())
    where = f" at line {mark.line + 1} column {mark.column + 1}" if mark is not None else ""
    text = f"{problem}{where}"
    return text if len(text) <= 200 else text[:197] + "..."


def read_json(
    path: str | os.PathLike[str],
    what: str,
    *,
    error: type[HeliaError] = HeliaError,
    limit: int = MAX_DOCUMENT_BYTES,
) -> Any:
    """The JSON document in the regular file `path`, read and checked as this module says."""
    return parse_json(read_regular_file(path, what, error=error, limit=limit), str(path), what, error=error)


def read_yaml(
    path: str | os.PathLike[str],
    what: str,
    *,
    error: type[HeliaError] = HeliaError,
    limit: int = MAX_DOCUMENT_BYTES,
) -> Any:
    """The YAML document (JSON reads as YAML too) in the regular file `path`, read and checked as this module
    says; None for an empty document."""
    return parse_yaml(read_text(path, what, error=error, limit=limit), str(path), what, error=error)


class _ShortRepr(reprlib.Repr):
    """reprlib's bounded repr, with integers of any size (Python's repr refuses more than 4300 digits)."""

    def repr_int(self, x: int, level: int) -> str:
        if -_INT64 <= x < _INT64:
            return repr(x)
        return f"<an integer of {x.bit_length()} bits>"


_SHORT = _ShortRepr()
_SHORT.maxlevel = 3
_SHORT.maxdict = _SHORT.maxlist = _SHORT.maxtuple = _SHORT.maxset = 6
_SHORT.maxstring = _SHORT.maxother = 72  # a SHA-256 in hex stays whole


def shown(value: object) -> str:
    """The repr of a user's `value` for a message, at most 100 characters (a long value is cut, with "..."),
    computed without walking the whole value: a message never carries an unbounded value."""
    text = _SHORT.repr(value)
    return text if len(text) <= 100 else text[:97] + "..."


def read_text(
    path: str | os.PathLike[str],
    what: str,
    *,
    error: type[HeliaError] = HeliaError,
    limit: int = MAX_DOCUMENT_BYTES,
) -> str:
    """The UTF-8 text of the regular file `path` (a CSV, a YAML document), read as this module says."""
    return decode_text(read_regular_file(path, what, error=error, limit=limit), str(path), what, error=error)


def same_named(document: Mapping[str, Any], *names: str) -> dict[str, Any]:
    """The value of each key of `names` in a validated `document`, by that name (a missing key: KeyError),
    for a record whose fields are named as the document's keys: `Record(**same_named(document, "a", "b"))`."""
    return {name: document[name] for name in names}
