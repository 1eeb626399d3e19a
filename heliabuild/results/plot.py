"""`heliabuild show RESULT --plot FILE.svg|FILE.png`: one figure of bar panels drawn by matplotlib (the optional
`plot` extra) and saved as SVG or PNG by the same code.

The panels are the Vela NPU estimate per segment, then, for each figure the bundle's backend measures (its
`scopes`: NPU cycles and traffic beats on an FVP, instructions on qemu-m55, host time on litert), its value
per sample with a dashed median line, and its median per segment where the backend measures segments. No
panel for a figure the backend does not measure. Every panel has a title naming what measured it and n
(heliabuild.results.vocabulary) and both axis titles; counts are shown whole with thousands separators, times
in us, ms or s. Bars carry their value up to MAX_VALUE_LABELS bars; the x axis shows at most MAX_X_TICKS
round ticks, so labels do not overlap however many samples there are.

The files are deterministic: no date or software version in their metadata, SVG ids from a fixed salt, and
text kept as text in the SVG.
"""

from __future__ import annotations

import io
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from heliabuild.errors import ResultError
from heliabuild.files import write_atomic
from heliabuild.results.reader import Result
from heliabuild.results.show import SampleColumn, sample_columns
from heliabuild.results.statistics import median
from heliabuild.results.vocabulary import ESTIMATE, Quantity
from heliabuild.units import count_text, time_unit

PLOT_SUFFIXES = (".svg", ".png")
MAX_VALUE_LABELS = 12
"""Bars carry their value as a label up to this many bars per panel."""
MAX_X_TICKS = 10
"""At most this many x tick labels per panel (round sample or segment numbers)."""
WIDTH_INCHES, PANEL_INCHES, DPI = 8.0, 2.6, 100
ESTIMATE_COLOUR = "#4477aa"
MEASURED_COLOUR = "#cc6677"
SEGMENT_COLOUR = "#228833"
STYLE = {"svg.hashsalt": "heliabuild", "svg.fonttype": "none", "font.size": 9}
"""matplotlib settings that make the SVG deterministic and keep its text searchable."""


@dataclass(frozen=True)
class Panel:
    """One bar panel: its title, x axis (`sample` or `segment`) and y axis titles, one value per bar (None for a
    bar not known), whether it draws the median of its values, and the scale its values are shown at (times:
    the unit's size in seconds; 1 for counts)."""

    title: str
    x_title: str
    y_title: str
    values: tuple[float | None, ...]
    colour: str
    median_line: bool
    is_time: bool = False
    unit: str = ""
    """The unit the values are shown in, as the median's label names it (`us`, `instructions`)."""

    def known(self) -> list[float]:
        return [value for value in self.values if value is not None]


def _scaled(quantity: Quantity, values: Sequence[float | None]) -> tuple[tuple[float | None, ...], str, str]:
    """`values` in the unit the panel shows them in, the y axis title (`host time (us)`, `instructions`) and the
    unit's name (`us`, `instructions`)."""
    if not quantity.is_time:
        return tuple(values), quantity.name, quantity.unit
    size, name = time_unit(max((abs(v) for v in values if v is not None), default=None))
    return tuple(None if v is None else v / size for v in values), f"{quantity.name} ({name})", name


def panels(result: Result) -> list[Panel]:
    """The panels of `result` (module docstring), in order."""
    found = [
        Panel(
            f"{ESTIMATE} per segment (Vela's compile-time estimate, not measured)",
            "segment",
            "estimated NPU cycles",
            tuple(segment["estimated_cycles"] for segment in result.segments),
            ESTIMATE_COLOUR,
            median_line=False,
        )
    ]
    count = len(result.samples)
    segments: dict[str, list[SampleColumn]] = {}
    for column in sample_columns(result):
        named = column.quantity
        if column.segment is not None:
            segments.setdefault(named.name, []).append(column)
            continue
        values, y_title, unit = _scaled(named, column.values)
        title = f"{named.label(count)}: per sample"
        found.append(Panel(title, "sample", y_title, values, MEASURED_COLOUR, True, named.is_time, unit))
    for columns in segments.values():
        named = columns[0].quantity
        medians = [None if any(v is None for v in c.values) else median(list(c.values)) for c in columns]
        values, y_title, unit = _scaled(named, medians)
        title = f"{named.label(count)}: median per segment"
        found.append(Panel(title, "segment", y_title, values, SEGMENT_COLOUR, False, named.is_time, unit))
    return [panel for panel in found if panel.known()]


def value_label(value: float | None, is_time: bool) -> str:
    """A bar's label: a count whole with thousands separators, a time (already in the panel's unit) to four
    significant digits; `-` for a bar not known."""
    if value is None:
        return "-"
    if not is_time:
        return count_text(value)
    return f"{value:,.4g}"


def figure_of(result: Result) -> Any:
    """The matplotlib Figure of `result`'s panels (the caller closes it); ResultError, before anything is drawn,
    when matplotlib is not installed."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        from matplotlib import pyplot, ticker
    except ImportError:
        raise ResultError(
            "writing a plot needs matplotlib, which is not installed",
            hint="pip install 'heliabuild[plot]'",
        ) from None
    shown = panels(result)
    if not shown:
        raise ResultError(
            "nothing to plot: the bundle has no Vela estimate and no measured figure",
            hint="plot the bundle of a run that executed",
        )
    with matplotlib.rc_context(STYLE):  # fonts at draw time (plot saves in the same settings)
        figure, axes = pyplot.subplots(
            len(shown), 1, figsize=(WIDTH_INCHES, PANEL_INCHES * len(shown) + 0.3), dpi=DPI, squeeze=False
        )
        for axis, panel in zip(axes[:, 0], shown, strict=True):
            positions = list(range(len(panel.values)))
            heights = [0.0 if value is None else value for value in panel.values]
            bars = axis.bar(positions, heights, color=panel.colour, width=0.8 if len(positions) > 1 else 0.4)
            if len(positions) <= MAX_VALUE_LABELS:
                labels = [value_label(value, panel.is_time) for value in panel.values]
                axis.bar_label(bars, labels=labels, fontsize=7, padding=2)
            axis.xaxis.set_major_locator(ticker.MaxNLocator(nbins=MAX_X_TICKS, integer=True, min_n_ticks=1))
            axis.set_xlim(-0.6, len(positions) - 0.4)
            axis.yaxis.set_major_formatter(
                ticker.FuncFormatter(lambda v, _, is_time=panel.is_time: value_label(v, is_time))
            )
            title = panel.title
            if panel.median_line:
                middle = median(panel.known())
                axis.axhline(middle, color="black", linewidth=0.9, linestyle="--")
                title = f"{title}; dashed line: median {value_label(middle, panel.is_time)} {panel.unit}"
            axis.set_ylim(0, max(heights, default=0.0) * 1.18 or 1.0)
            axis.set_title(title, fontsize=9)
            axis.set_xlabel(panel.x_title)
            axis.set_ylabel(panel.y_title)
        figure.tight_layout()
    return figure


def plot(result: Result, path: str | os.PathLike[str]) -> Path:
    """Write `result`'s panels to `path`, an SVG or a PNG by its extension; ResultError for any other extension
    or without matplotlib, before anything is written. The file is written atomically."""
    target = Path(path)
    suffix = target.suffix.lower()
    if suffix not in PLOT_SUFFIXES:
        raise ResultError(
            f"{path}: cannot write a plot of type {suffix or '(no extension)'!r}; expected one of "
            f"{', '.join(PLOT_SUFFIXES)}",
            hint="name the plot FILE.svg or FILE.png",
        )
    try:
        figure = figure_of(result)
    except ResultError as missing:
        raise ResultError(f"{path}: {missing.message}", hint=missing.hint) from None
    import matplotlib
    from matplotlib import pyplot

    try:
        buffer = io.BytesIO()
        with matplotlib.rc_context(STYLE):
            if suffix == ".svg":
                figure.savefig(buffer, format="svg", metadata={"Date": None, "Creator": None})
            else:
                figure.savefig(buffer, format="png", metadata={"Software": None})
    finally:
        pyplot.close(figure)
    write_atomic(target, buffer.getvalue())
    return target
