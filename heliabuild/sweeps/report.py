"""A sweep's HTML report: one self-contained page (inline CSS and SVG, no script, no external resource).

The page (`<name>_sweep.html`) holds, for the table of heliabuild.sweeps.table:

- `#estimates`: Vela's estimated cycles per segment by point, a horizontal stacked bar per point (one
  `rect.segment` per segment, coloured by segment index, its value in its tooltip; the total after the
  bar), on an axis from 0, labelled by the point's pipeline and its values' short texts (bar_labels);
- `#measured-<quantity>`, one per measured quantity some point has (cycles, instructions, latency): a
  scatter of the measured median (y, in the quantity's unit and scope) against Vela's estimate (x) of each
  segment where both exist (one `circle.measured` each; a point whose backend measured only a total has
  one circle for its total, estimated as the sum of its segments); without any, a note says so;
- `#sweep-table`: the comparison table, one `tbody tr` per point, its pipeline first.

Estimates are labelled as Vela's; a measured figure always carries its unit and scope. The same table
gives the same bytes (no time, no path outside the table's folder).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from html import escape

from heliabuild.sweeps.grid import axis_texts, canonical
from heliabuild.sweeps.table import QUANTITIES, SweepRow, SweepTable, measured_text, option_text
from heliabuild.units import kib_text

PALETTE = ("#4477aa", "#ee6677", "#228833", "#ccbb44", "#66ccee", "#aa3377", "#bbbbbb", "#332288")
"""Segment colours (Paul Tol's bright scheme, readable with colour-blindness), cycled past eight segments."""

WIDTH = 1180
ROW_HEIGHT = 22
LABEL_CHARACTERS = 80
"""Bar labels longer than this are cut with `…` (the full label is in the tooltip)."""
CHARACTER_WIDTH = 6.6
"""About the width of one character of a 12px sans-serif label, in pixels, to size the labels' margin."""

STYLE = """
body { font-family: sans-serif; margin: 24px; color: #222; background: #fff; }
h1 { font-size: 22px; } h2 { font-size: 18px; margin-top: 28px; } h3 { font-size: 15px; }
p.note { color: #555; max-width: 70em; }
table { border-collapse: collapse; font-size: 13px; }
th, td { border: 1px solid #ccc; padding: 4px 8px; text-align: left; vertical-align: top; }
th { background: #eef; } td.number { text-align: right; font-variant-numeric: tabular-nums; }
td.path { word-break: break-all; min-width: 16em; }
svg text { font-size: 12px; fill: #222; }
.legend { font-size: 13px; margin: 4px 0; }
.swatch { display: inline-block; width: 12px; height: 12px; margin: 0 4px 0 12px; vertical-align: middle; }
"""


TICKS = 4
"""About this many steps from 0 to the peak of a linear axis."""


def axis_ticks(peak: float) -> list[float]:
    """Round tick values from 0 up to the first at or above `peak`: steps of 1, 2, 2.5 or 5 times a power
    of ten, about TICKS of them (0 and 1 for an axis with nothing above 0)."""
    if not peak > 0:
        return [0.0, 1.0]
    raw = peak / TICKS
    power = 10.0 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 2.5, 5, 10) if m * power >= raw * (1 - 1e-9))
    return [round(step * k, 12) for k in range(math.ceil(peak / step - 1e-9) + 1)]


def _colour(segment: int) -> str:
    return PALETTE[segment % len(PALETTE)]


def _number(value: float) -> str:
    if float(value).is_integer():
        return f"{int(value):,}"
    return f"{value:.3g}"


def _label(row: SweepRow, axes: Sequence[str]) -> str:
    """A point's full label, for tooltips: its value on each axis, as `axis=value`, joined by `, `."""
    return ", ".join(f"{axis}={option_text(row.point.values[axis])}" for axis in axes)


def bar_labels(table: SweepTable) -> list[str]:
    """Each row's bar label: its pipeline, then its value's text (heliabuild.sweeps.grid.axis_texts: short, and
    distinct within an axis) on each axis, in the table's axis order, joined by `, `."""
    texts: dict[str, dict[str, str]] = {}
    for axis in table.axes:
        distinct = {canonical(row.point.values[axis]): row.point.values[axis] for row in table.rows}
        texts[axis] = dict(zip(distinct, axis_texts(list(distinct.values())), strict=True))
    return [
        f"{row.pipeline}  " + ", ".join(texts[axis][canonical(row.point.values[axis])] for axis in table.axes)
        for row in table.rows
    ]


def _cut(text: str) -> str:
    return text if len(text) <= LABEL_CHARACTERS else text[: LABEL_CHARACTERS - 1] + "…"


def _legend(segments: int) -> str:
    swatches = "".join(
        f'<span class="swatch" style="background:{_colour(k)}"></span>segment {k}' for k in range(segments)
    )
    return f'<div class="legend">{swatches}</div>'


def estimates_svg(table: SweepTable) -> str:
    """The stacked bars of Vela's estimated cycles per segment, one bar per point (module docstring)."""
    labels = [_cut(label) for label in bar_labels(table)]
    left, right, top = 12 + CHARACTER_WIDTH * max(len(label) for label in labels), 90, 10
    height = top + ROW_HEIGHT * len(table.rows) + 40
    totals = [sum(row.estimated_cycles) for row in table.rows]
    ticks = axis_ticks(float(max(totals, default=0)))
    peak = ticks[-1]
    span = WIDTH - left - right
    parts = [
        f'<svg id="estimates" xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" '
        f'role="img" aria-label="Vela estimated cycles per segment by point">'
    ]
    base = top + ROW_HEIGHT * len(table.rows)
    for tick in ticks:
        x = left + span * tick / peak
        parts.append(f'<line x1="{x:.1f}" y1="{top}" x2="{x:.1f}" y2="{base}" stroke="#ddd"/>')
        parts.append(f'<text x="{x:.1f}" y="{base + 16}" text-anchor="middle">{_number(tick)}</text>')
    parts.append(
        f'<text x="{left + span / 2:.1f}" y="{base + 34}" text-anchor="middle">'
        "estimated cycles (Vela's estimate, per segment, stacked)</text>"
    )
    for index, (row, total, shown) in enumerate(zip(table.rows, totals, labels, strict=True)):
        y = top + index * ROW_HEIGHT
        label = _label(row, table.axes)
        parts.append(
            f'<text x="{left - 8:.1f}" y="{y + 15}" text-anchor="end"><title>{escape(label)}</title>'
            f"{escape(shown)}</text>"
        )
        x = float(left)
        for segment, cycles in enumerate(row.estimated_cycles):
            width = span * cycles / peak
            parts.append(
                f'<rect class="segment" x="{x:.1f}" y="{y + 3}" width="{width:.1f}" height="{ROW_HEIGHT - 6}" '
                f'fill="{_colour(segment)}"><title>{escape(label)}: segment {segment}, '
                f"{_number(cycles)} estimated cycles (Vela)</title></rect>"
            )
            x += width
        parts.append(f'<text x="{x + 6:.1f}" y="{y + 15}">{_number(total)}</text>')
    parts.append(f'<line x1="{left}" y1="{top}" x2="{left}" y2="{base}" stroke="#222"/>')
    parts.append("</svg>")
    return "".join(parts)


def _pairs(table: SweepTable, quantity: str) -> list[tuple[float, float, int | None, SweepRow]]:
    """(estimated, measured, segment or None for a total, row) of each segment where both are known."""
    pairs: list[tuple[float, float, int | None, SweepRow]] = []
    for row in table.rows:
        measured = row.measured[quantity]
        if measured is None:
            continue
        per_segment = [
            (float(estimate), float(value), segment)
            for segment, (estimate, value) in enumerate(zip(row.estimated_cycles, measured.segments, strict=True))
            if value is not None
        ]
        if per_segment:
            pairs += [(estimate, value, segment, row) for estimate, value, segment in per_segment]
        elif measured.median is not None:
            pairs.append((float(sum(row.estimated_cycles)), float(measured.median), None, row))
    return pairs


@dataclass(frozen=True)
class Scale:
    """A plot axis from `low` to `high`: logarithmic when the values are all positive and span more than
    LOG_SPAN (a cold first invoke beside warm ones, or small beside large segments), linear from 0 otherwise."""

    low: float
    high: float
    log: bool

    @classmethod
    def of(cls, values: Sequence[float]) -> Scale:
        smallest, largest = min(values), max(values)
        if smallest > 0 and largest / smallest > LOG_SPAN:
            return cls(10.0 ** math.floor(math.log10(smallest)), 10.0 ** math.ceil(math.log10(largest)), True)
        return cls(0.0, axis_ticks(largest)[-1], False)

    def fraction(self, value: float) -> float:
        """Where `value` lies between low (0) and high (1)."""
        if self.log:
            return math.log10(value / self.low) / math.log10(self.high / self.low)
        return (value - self.low) / (self.high - self.low)

    def ticks(self) -> list[float]:
        if not self.log:
            return axis_ticks(self.high)
        decades = round(math.log10(self.high / self.low))
        steps = (1, 2, 5) if decades <= 3 else (1,)
        return [
            self.low * 10.0**d * m for d in range(decades + 1) for m in steps if self.low * 10.0**d * m <= self.high
        ]


LOG_SPAN = 20.0
"""A scatter axis whose values span more than this factor is logarithmic."""

DISPLAY_UNITS = {"s": ("us", 1e6)}
"""Units plotted at another scale: seconds as microseconds (a segment takes microseconds on the host)."""


def scatter_svg(table: SweepTable, quantity: str, unit: str) -> str:
    """The scatter of measured against Vela's estimate for `quantity` (module docstring); '' without pairs."""
    pairs = _pairs(table, quantity)
    if not pairs:
        return ""
    shown_unit, factor = DISPLAY_UNITS.get(unit, (unit, 1.0))
    scopes = sorted({str(row.measured[quantity].scope) for row in table.rows if row.measured[quantity] is not None})
    left, bottom, top, right, height = 90, 50, 10, 30, 420
    plot_width, plot_height = WIDTH - left - right, height - top - bottom
    x_scale = Scale.of([pair[0] for pair in pairs])
    y_scale = Scale.of([pair[1] * factor for pair in pairs])
    base = top + plot_height

    def x_of(value: float) -> float:
        return left + plot_width * x_scale.fraction(value)

    def y_of(value: float) -> float:
        return base - plot_height * y_scale.fraction(value)

    logs = [name for name, scale in (("x", x_scale), ("y", y_scale)) if scale.log]
    note = f", log {' and '.join(logs)}" if logs else ""
    title = f"measured {quantity} ({shown_unit}, {', '.join(scopes)}) against Vela's estimated cycles{note}"
    parts = [
        f'<svg id="measured-{quantity}" xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" '
        f'role="img" aria-label="{escape(title)}">'
    ]
    for tick in x_scale.ticks():
        x = x_of(tick)
        parts.append(f'<line x1="{x:.1f}" y1="{top}" x2="{x:.1f}" y2="{base}" stroke="#eee"/>')
        parts.append(f'<text x="{x:.1f}" y="{base + 16}" text-anchor="middle">{_number(tick)}</text>')
    for tick in y_scale.ticks():
        y = y_of(tick)
        parts.append(f'<line x1="{left}" y1="{y:.1f}" x2="{WIDTH - right}" y2="{y:.1f}" stroke="#eee"/>')
        parts.append(f'<text x="{left - 6}" y="{y + 4:.1f}" text-anchor="end">{_number(tick)}</text>')
    parts.append(f'<line x1="{left}" y1="{base}" x2="{WIDTH - right}" y2="{base}" stroke="#222"/>')
    parts.append(f'<line x1="{left}" y1="{top}" x2="{left}" y2="{base}" stroke="#222"/>')
    parts.append(
        f'<text x="{left + plot_width / 2:.1f}" y="{base + 36}" text-anchor="middle">'
        "estimated cycles (Vela's estimate)</text>"
    )
    middle = top + plot_height / 2
    parts.append(
        f'<text x="16" y="{middle:.1f}" text-anchor="middle" transform="rotate(-90 16 {middle:.1f})">'
        f"measured {escape(quantity)} ({escape(shown_unit)})</text>"
    )
    for estimate, value, segment, row in pairs:
        colour = "#222" if segment is None else _colour(segment)
        which = "total" if segment is None else f"segment {segment}"
        parts.append(
            f'<circle class="measured" cx="{x_of(estimate):.1f}" cy="{y_of(value * factor):.1f}" r="5" '
            f'fill="{colour}" fill-opacity="0.8" stroke="#fff"><title>{escape(_label(row, table.axes))}: {which}, '
            f"{_number(estimate)} estimated cycles, {value * factor:.6g} {escape(shown_unit)} measured</title></circle>"
        )
    parts.append("</svg>")
    return f"<h3>{escape(title)}</h3>{_legend(max(row.segment_count for row in table.rows))}" + "".join(parts)


_CLASSES = {"": "", "number": ' class="number"', "path": ' class="path"'}


def _table_html(table: SweepTable) -> str:
    header = ["pipeline", *table.axes, "segments", "Vela est. cycles/segment", "measured median"]
    header += ["Vela SRAM", "Vela flash", "bundle"]
    lines = ['<table id="sweep-table"><thead><tr>', *(f"<th>{escape(cell)}</th>" for cell in header)]
    lines.append("</tr></thead><tbody>")
    for row in table.rows:
        cells = [(row.pipeline, "")]
        cells += [(option_text(row.point.values[axis]), "") for axis in table.axes]
        cells.append((str(row.segment_count), "number"))
        cells.append((" / ".join(_number(c) for c in row.estimated_cycles), "number"))
        cells.append((measured_text(row), ""))
        for kib in (row.vela_sram_used_kib, row.vela_off_chip_flash_used_kib):
            cells.append((kib_text(kib), "number"))
        cells.append((row.bundle, "path"))
        lines.append("<tr>")
        lines += [f"<td{_CLASSES[kind]}>{escape(text)}</td>" for text, kind in cells]
        lines.append("</tr>")
    lines.append("</tbody></table>")
    return "".join(lines)


def sweep_html(table: SweepTable) -> str:
    """The report page of `table` (module docstring)."""
    segments = max((row.segment_count for row in table.rows), default=0)
    scatters = [scatter_svg(table, quantity, unit) for quantity, unit, *_ in QUANTITIES]
    measured = "".join(scatters) or (
        '<p class="note" id="no-measurements">No point has a measured figure that can be set against Vela\'s '
        "estimate (a backend that does not run, or runs that measured nothing).</p>"
    )
    title = f"Sweep {table.name}: {len(table.rows)} points over {', '.join(table.axes)}"
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{escape(title)}</title><style>{STYLE}</style></head><body>"
        f"<h1>{escape(title)}</h1>"
        '<p class="note">Estimated cycles are Vela\'s compile-time estimate, not measurements. Measured figures '
        "are medians over the measured invokes, each with its unit and the scope the run names. "
        "SRAM and flash are Vela's compile-time figures.</p>"
        "<h2>Vela's estimated cycles per segment</h2>"
        f'<p class="note">Each bar is a point: its pipeline, then its {escape(", ".join(table.axes))}.</p>'
        f"{_legend(segments)}{estimates_svg(table)}"
        f"<h2>Measured against estimated</h2>{measured}"
        f"<h2>Table</h2>{_table_html(table)}"
        "</body></html>\n"
    )
