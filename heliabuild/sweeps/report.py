"""A sweep's HTML report: one self-contained page (inline CSS and SVG, no script, no external resource).

The page (`<name>_sweep.html`) holds, for the table of heliabuild.sweeps.table, in heliabuild.results.
vocabulary's words:

- `#provenance`: the heliabuild and Vela versions the points record and the dates of their bundles'
  `created_at` (the measurements' dates: the page itself records no time, so the same bundles give the
  same bytes);
- `#estimates`: the Vela NPU estimate per segment by point, a horizontal stacked bar per point (one
  `rect.segment` per segment, coloured by segment index, its value in its tooltip; the total after the
  bar), on an axis from 0, labelled by the point's pipeline and its values' short texts (bar_labels);
- `#measured-<quantity>`, one panel per measured quantity some point has (cycles, traffic_beats,
  instructions, latency), each with its own axis in its unit (never shared with the estimate or another
  scope: host time against NPU cycles would imply a relation that does not exist): one row per point
  that measured it, labelled as in `#estimates`, its median a `circle.measured` in the point's colour, a
  `line.spread` from its min to its max, then its value, n and spread as text; without any, a note says so;
- `#sweep-table`: the comparison table, one `tbody tr` per point, its pipeline first, its bundle linked
  (`<bundle>/result.json`, relative to the page).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from html import escape

from heliabuild.results.summary import estimate_text, spread_text
from heliabuild.results.vocabulary import ESTIMATE, ESTIMATE_COLUMN, notes
from heliabuild.sweeps.grid import axis_texts, canonical
from heliabuild.sweeps.table import QUANTITIES, SweepRow, SweepTable, option_text
from heliabuild.units import UNKNOWN, kib_text, time_unit

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
    """The stacked bars of the Vela NPU estimate per segment, one bar per point (module docstring)."""
    labels = [_cut(label) for label in bar_labels(table)]
    left, right, top = 12 + CHARACTER_WIDTH * max(len(label) for label in labels), 90, 10
    height = top + ROW_HEIGHT * len(table.rows) + 40
    totals = [sum(row.estimated_cycles) for row in table.rows]
    ticks = axis_ticks(float(max(totals, default=0)))
    peak = ticks[-1]
    span = WIDTH - left - right
    parts = [
        f'<svg id="estimates" xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" '
        f'role="img" aria-label="Vela NPU estimate per segment by point">'
    ]
    base = top + ROW_HEIGHT * len(table.rows)
    for tick in ticks:
        x = left + span * tick / peak
        parts.append(f'<line x1="{x:.1f}" y1="{top}" x2="{x:.1f}" y2="{base}" stroke="#ddd"/>')
        parts.append(f'<text x="{x:.1f}" y="{base + 16}" text-anchor="middle">{_number(tick)}</text>')
    parts.append(
        f'<text x="{left + span / 2:.1f}" y="{base + 34}" text-anchor="middle">{ESTIMATE_COLUMN}, stacked</text>'
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
                f"{_number(cycles)} cycles ({ESTIMATE})</title></rect>"
            )
            x += width
        parts.append(f'<text x="{x + 6:.1f}" y="{y + 15}">{_number(total)}</text>')
    parts.append(f'<line x1="{left}" y1="{top}" x2="{left}" y2="{base}" stroke="#222"/>')
    parts.append("</svg>")
    return "".join(parts)


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

POINT_PALETTE = ("#332288", "#117733", "#44aa99", "#88ccee", "#ddcc77", "#cc6677", "#aa4499", "#882255")
"""Point colours of the measured panels (Paul Tol's muted scheme), cycled past eight points."""


def point_colour(index: int) -> str:
    return POINT_PALETTE[index % len(POINT_PALETTE)]


def measured_svg(table: SweepTable, quantity: str) -> str:
    """The panel of one measured quantity (module docstring): one row per point with a known total, its median
    as a `circle.measured` in the point's colour with a line from min to max, and its value, n and spread after
    it; '' when no point measured it. Its own x axis: it shares none with Vela's estimate or another scope."""
    rows = [(index, row) for index, row in enumerate(table.rows) if _total(row, quantity) is not None]
    if not rows:
        return ""
    first = table.rows[rows[0][0]].measured[quantity]
    assert first is not None
    named = first.named
    values = [v for _, row in rows for v in _spread_of(row, quantity)]
    size, unit = time_unit(max(abs(v) for v in values)) if named.is_time else (1.0, named.unit)
    labels = [_cut(label) for label in bar_labels(table)]
    texts = [_value_text(row, quantity) for _, row in rows]
    left = 12 + CHARACTER_WIDTH * max(len(labels[index]) for index, _ in rows)
    right = 16 + CHARACTER_WIDTH * max(len(text) for text in texts)
    top, height = 10, 10 + ROW_HEIGHT * len(rows) + 44
    span = WIDTH - left - right
    scale = Scale.of([v / size for v in values])
    base = top + ROW_HEIGHT * len(rows)

    def x_of(value: float) -> float:
        return left + span * scale.fraction(value / size)

    axis = f"{named.name} ({unit}{', log scale' if scale.log else ''})"
    parts = [
        f'<svg id="measured-{quantity}" class="measured-panel" xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" '
        f'height="{height}" role="img" aria-label="{escape(named.what)}: median per point">'
    ]
    for tick in scale.ticks():
        x = left + span * scale.fraction(tick)
        parts.append(f'<line x1="{x:.1f}" y1="{top}" x2="{x:.1f}" y2="{base}" stroke="#ddd"/>')
        parts.append(f'<text x="{x:.1f}" y="{base + 16}" text-anchor="middle">{_number(tick)}</text>')
    parts.append(f'<text x="{left + span / 2:.1f}" y="{base + 36}" text-anchor="middle">{escape(axis)}</text>')
    for position, ((index, row), text) in enumerate(zip(rows, texts, strict=True)):
        y = top + position * ROW_HEIGHT + ROW_HEIGHT / 2
        low, high = _spread_of(row, quantity)
        median = _total(row, quantity)
        assert median is not None
        label = _label(row, table.axes)
        colour = point_colour(index)
        parts.append(
            f'<text x="{left - 8:.1f}" y="{y + 4:.1f}" text-anchor="end"><title>{escape(label)}</title>'
            f"{escape(labels[index])}</text>"
        )
        parts.append(
            f'<line class="spread" x1="{x_of(low):.1f}" y1="{y:.1f}" x2="{x_of(high):.1f}" y2="{y:.1f}" '
            f'stroke="{colour}" stroke-width="2"/>'
        )
        parts.append(
            f'<circle class="measured" cx="{x_of(median):.1f}" cy="{y:.1f}" r="5" fill="{colour}" stroke="#fff">'
            f"<title>{escape(label)}: {escape(text)}</title></circle>"
        )
        parts.append(f'<text class="value" x="{WIDTH - right + 8:.1f}" y="{y + 4:.1f}">{escape(text)}</text>')
    parts.append(f'<line x1="{left}" y1="{top}" x2="{left}" y2="{base}" stroke="#222"/>')
    parts.append("</svg>")
    title = f"measured ({named.what}): the median of each point, a line from its min to its max"
    note = "".join(f'<p class="note">{escape(line.removeprefix("note: "))}.</p>' for line in notes([named]))
    return f"<h3>{escape(title)}</h3>{note}" + "".join(parts)


def _total(row: SweepRow, quantity: str) -> float | None:
    measured = row.measured[quantity]
    return None if measured is None else measured.median


def _spread_of(row: SweepRow, quantity: str) -> tuple[float, float]:
    """(min, max) of the row's total, the median for both where the row records no spread."""
    measured = row.measured[quantity]
    assert measured is not None and measured.median is not None
    low = measured.median if measured.min is None else measured.min
    high = measured.median if measured.max is None else measured.max
    return low, high


def _value_text(row: SweepRow, quantity: str) -> str:
    """`612.1 us, n=10, spread 29.00 us (4.7%)`: the median in its unit, n and the spread (heliabuild.units)."""
    measured = row.measured[quantity]
    assert measured is not None
    figure = measured.figure()
    shown = measured.named.text(measured.median)
    return shown if figure is None else f"{shown}, n={figure.count}, spread {spread_text(figure)}"


def provenance(table: SweepTable) -> str:
    """What made the measurements: `heliabuild 0.1.0, Vela 4.2.0, measured 2026-12-02 (UTC)`, each version as
    the points record it (several when they differ), the dates of the bundles' `created_at` (first to last)."""
    heliabuild = sorted({row.heliabuild_version for row in table.rows if row.heliabuild_version})
    vela = sorted({row.vela_version for row in table.rows if row.vela_version})
    dates = sorted({row.measured_at for row in table.rows if row.measured_at})
    days = sorted({date[:10] for date in dates})
    when = "no time recorded" if not days else days[0] if len(days) == 1 else f"{days[0]} to {days[-1]}"
    return (
        f"heliabuild {', '.join(heliabuild) or UNKNOWN}, Vela {', '.join(vela) or UNKNOWN}, measured {when} "
        "(UTC, the bundles' created_at)"
    )


_CLASSES = {"": "", "number": ' class="number"', "path": ' class="path"'}


def _table_html(table: SweepTable) -> str:
    header = ["pipeline", *table.axes, "segments", ESTIMATE_COLUMN, "measured", "median", "spread"]
    header += ["verification", "inputs", "Vela SRAM", "Vela flash", "bundle"]
    lines = ['<table id="sweep-table"><thead><tr>', *(f"<th>{escape(cell)}</th>" for cell in header)]
    lines.append("</tr></thead><tbody>")
    for row in table.rows:
        cells = [(escape(row.pipeline), "")]
        cells += [(escape(option_text(row.point.values[axis])), "") for axis in table.axes]
        cells.append((str(row.segment_count), "number"))
        cells.append((escape(estimate_text(row.estimated_cycles)), "number"))
        measured = [m for q, *_ in QUANTITIES if (m := row.measured[q]) is not None and m.median is not None]
        figures = [m.figure() for m in measured]
        cells.append(("<br>".join(escape(m.label()) for m in measured) or UNKNOWN, ""))
        cells.append(("<br>".join(escape(m.named.text(m.median)) for m in measured) or UNKNOWN, "number"))
        spreads = [UNKNOWN if f is None else spread_text(f) for f in figures]
        cells.append(("<br>".join(escape(s) for s in spreads) or UNKNOWN, "number"))
        cells += [(escape(row.verification), ""), (escape(row.inputs), "")]
        for kib in (row.vela_sram_used_kib, row.vela_off_chip_flash_used_kib):
            cells.append((escape(kib_text(kib)), "number"))
        link = escape(f"{row.bundle}/result.json", quote=True)
        cells.append((f'<a href="{link}">{escape(row.bundle)}</a>', "path"))
        lines.append("<tr>")
        lines += [f"<td{_CLASSES[kind]}>{html}</td>" for html, kind in cells]
        lines.append("</tr>")
    lines.append("</tbody></table>")
    return "".join(lines)


def sweep_html(table: SweepTable) -> str:
    """The report page of `table` (module docstring)."""
    segments = max((row.segment_count for row in table.rows), default=0)
    panels = [measured_svg(table, quantity) for quantity, *_ in QUANTITIES]
    measured = "".join(panels) or (
        '<p class="note" id="no-measurements">No point has a measured figure (a backend that does not run, or '
        "runs that measured nothing).</p>"
    )
    title = f"Sweep {table.name}: {len(table.rows)} points over {', '.join(table.axes)}"
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{escape(title)}</title><style>{STYLE}</style></head><body>"
        f"<h1>{escape(title)}</h1>"
        f'<p class="note" id="provenance">{escape(provenance(table))}.</p>'
        f'<p class="note">The {ESTIMATE} is Vela\'s compile-time estimate of NPU cycles, not a measurement. '
        "Each measured figure is named by what measured it and n, the measured invokes: its median, and its "
        "spread (max - min, with its share of the median, ! above 10%). Each scope has its own panel and axis. "
        "SRAM and flash are Vela's compile-time figures.</p>"
        f"<h2>{ESTIMATE} per segment</h2>"
        f'<p class="note">Each bar is a point: its pipeline, then its {escape(", ".join(table.axes))}.</p>'
        f"{_legend(segments)}{estimates_svg(table)}"
        f"<h2>Measured, one panel per scope</h2>{measured}"
        f"<h2>Table</h2>{_table_html(table)}"
        "</body></html>\n"
    )
