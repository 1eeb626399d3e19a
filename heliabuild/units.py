"""Figures as text, in one style for every view (`show`, the build summary, the sweep table and report):
counts as whole numbers with thousands separators (`46,072,071`), memory in KiB to one decimal
(`72.7 KiB`), times in the unit that shows them in ones to thousands (`612.1 us`, `6.97 ms`), and `-` for a
figure that is not known."""

from __future__ import annotations

UNKNOWN = "-"

TIME_UNITS = ((1.0, "s"), (1e-3, "ms"), (1e-6, "us"))
"""(size in seconds, name) of each unit a time is shown in, largest first."""


def kib_text(value: float | None) -> str:
    """A memory figure given in KiB: `72.7 KiB`, `1,024.0 KiB`; `-` when not known."""
    return UNKNOWN if value is None else f"{value:,.1f} KiB"


def count_text(value: float | None) -> str:
    """A count (cycles, instructions, beats): `46,072,071`; a count that is not whole (a median of an even
    number of counts) to one decimal, `12,345.5`; `-` when not known."""
    if value is None:
        return UNKNOWN
    if float(value).is_integer():
        return f"{int(value):,}"
    return f"{value:,.1f}"


def time_unit(peak: float | None) -> tuple[float, str]:
    """The unit (its size in seconds, its name) that shows times up to `peak` seconds in ones to thousands:
    microseconds below a millisecond (and without a peak), milliseconds below a second, seconds above."""
    return next(((size, name) for size, name in TIME_UNITS if peak is not None and peak >= size), TIME_UNITS[-1])


def time_text(seconds: float | None, unit: tuple[float, str] | None = None) -> str:
    """A time given in seconds, in `unit` (default: the one time_unit gives for it), to four significant
    digits: `612.1 us`, `6.971 ms`, `1.500 s`; `-` when not known."""
    if seconds is None:
        return UNKNOWN
    size, name = unit if unit is not None else time_unit(abs(seconds))
    return f"{_significant(seconds / size)} {name}"


def _significant(value: float) -> str:
    """`value` to four significant digits in fixed notation (never an exponent): 612.1, 6.971, 1,500."""
    magnitude = abs(value)
    decimals = 3 if magnitude < 10 else 2 if magnitude < 100 else 1 if magnitude < 1000 else 0
    return f"{value:,.{decimals}f}"
