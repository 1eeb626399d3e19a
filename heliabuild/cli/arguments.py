"""Argument types the verbs share: each turns one command-line word into a value, or says (in argparse's
ArgumentTypeError, an exit 2) what the word should have been."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TypeVar

Number = TypeVar("Number", int, float)


def positions(text: str) -> list[int]:
    """A comma-separated list of operator indices (`3,7`)."""
    try:
        found = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a comma-separated list of operator indices") from None
    if not found:
        raise argparse.ArgumentTypeError("no operator index given; name at least one, e.g. 3,7")
    return found


def _bounded_number(
    text: str, convert: Callable[[str], Number], kind: str, within: Callable[[Number], bool], bound: str
) -> Number:
    """`convert(text)` when `within` holds of it; ArgumentTypeError `'<text>' is not <kind>` when `convert`
    raises ValueError, `'<text>' is not <bound>` when the value is out of bounds."""
    try:
        value = convert(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not {kind}") from None
    if not within(value):
        raise argparse.ArgumentTypeError(f"{text!r} is not {bound}")
    return value


def positive_int(text: str) -> int:
    """A positive whole number of cycles."""
    return _bounded_number(
        text, int, "a whole number of cycles", lambda value: value > 0, "a positive number of cycles"
    )


def positive_seconds(text: str) -> float:
    """A number of seconds above 0, at most a day."""
    return _bounded_number(
        text, float, "a number of seconds", lambda value: 0 < value <= 86400, "a number of seconds from 0 to 86400"
    )


def fraction(text: str) -> float:
    """A number from 0 to 1."""
    return _bounded_number(text, float, "a number", lambda value: 0.0 <= value <= 1.0, "a fraction from 0 to 1")


def percent(text: str) -> float:
    """A finite, non-negative percent."""
    return _bounded_number(
        text,
        float,
        "a number of percent",
        lambda value: value >= 0 and value != float("inf"),
        "a finite, non-negative percent",
    )


def named(what: str, paths: Sequence[Path] | None) -> list[tuple[str, Path]]:
    """Each of `paths` (a repeatable option) named `what`, for heliabuild.paths.check_outputs."""
    return [(what, path) for path in paths or ()]
