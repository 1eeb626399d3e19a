"""Argument types the verbs share: each turns one command-line word into a value, or says (in argparse's
ArgumentTypeError, an exit 2) what the word should have been."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path


def positions(text: str) -> list[int]:
    """A comma-separated list of operator indices (`3,7`)."""
    try:
        found = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a comma-separated list of operator indices") from None
    if not found:
        raise argparse.ArgumentTypeError("no operator index given; name at least one, e.g. 3,7")
    return found


def positive_int(text: str) -> int:
    """A positive whole number of cycles."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of cycles") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive number of cycles")
    return value


def positive_seconds(text: str) -> float:
    """A number of seconds above 0, at most a day."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not 0 < value <= 86400:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds from 0 to 86400")
    return value


def fraction(text: str) -> float:
    """A number from 0 to 1."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a fraction from 0 to 1")
    return value


def percent(text: str) -> float:
    """A finite, non-negative percent."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of percent") from None
    if not value >= 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"{text!r} is not a finite, non-negative percent")
    return value


def named(what: str, paths: Sequence[Path] | None) -> list[tuple[str, Path]]:
    """Each of `paths` (a repeatable option) named `what`, for heliabuild.paths.check_outputs."""
    return [(what, path) for path in paths or ()]
