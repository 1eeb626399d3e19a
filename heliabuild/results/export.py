"""`show` tables, `export` (json/csv) and plots (SVG, or PNG with matplotlib) of a verified result bundle,
and `show` of a Vela output's segments.json."""

from __future__ import annotations

import csv
import io
import math
import os
from html import escape
from pathlib import Path
from typing import Any

from heliabuild.errors import ResultError
from heliabuild.files import json_text, write_atomic
from heliabuild.results.bundle import summary_csv
from heliabuild.results.figures import SPREAD_LIMIT, Figure, measured_figures, segment_figure
from heliabuild.results.reader import Result, load_result
from heliabuild.results.statistics import median
from heliabuild.results.verdict import input_source, verdict
from heliabuild.tables import text_table
from heliabuild.units import kib_text

FIELDS = ("statistics", "samples")
FORMATS = ("json", "csv")


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    return text_table(header, rows, right=range(len(header)))


def _real(value: Any) -> float | None:
    return None if value is None else float(value)


def _text(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.6g}"
    return str(value)


def _figure_text(figure: Figure | None, part: str) -> str:
    """One summary value (`median`, `mean`, `min`, `max`, `spread`) of `figure`; `-` when not known."""
    if figure is None:
        return "-"
    value = getattr(figure, part)
    if value is not None and figure.kind == "counter" and float(value).is_integer():
        return str(int(value))
    return _text(value)


def show_result(result: Result) -> str:
    """The readable tables of `result`: its identity; Vela's options and memory allocation (Vela's figures,
    from the runner's segments.json; absent from a bundle of a runner without one); per segment, Vela's
    estimate and (in columns of their own) the median of each measured per-segment figure; every measured
    figure's median, mean, min, max and spread, flagged `!` when the spread exceeds SPREAD_LIMIT of the
    median; and every sample, labelled."""
    document = result.document
    identity = document["run_identity"]
    lines = [
        f"result {result.path}",
        f"  stage {result.stage}, runtime {result.runtime}, backend {identity['backend']}",
        f"  runner {identity['runner_sha256'][:12]}, model {identity['model_sha256'][:12]}",
    ]
    if result.receipt is not None:
        receipt = result.receipt
        lines.append(
            f"  acquisition {receipt.state}: {receipt.warmup_invokes} warmup, {receipt.measured_invokes} measured, "
            f"initialization {receipt.initialization}, call_once_present {_text(receipt.call_once_present)}"
        )
    if result.executed:
        lines.append(f"  verification: {verdict(identity, result.samples).text()}")
        lines.append(f"  inputs: {input_source(identity)}")
    if result.vela is not None:
        lines.extend(vela_lines(result.vela))
    figures = measured_figures(result)
    per_segment: dict[str, dict[int, Figure]] = {}
    for figure in figures:
        located = segment_figure(figure.name)
        if located is not None:
            per_segment.setdefault(located[0], {})[located[1]] = figure
    lines.append("")
    lines.append(
        "segments (estimated cycles: Vela's estimate, not a measurement"
        + "".join(f"; {name} median: measured" for name in per_segment)
        + ")"
    )
    segment_rows = [
        [
            str(segment["index"]),
            f"{segment['op_range_start']}..{segment['op_range_end']}",
            _text(segment["estimated_cycles"]),
            *(_figure_text(by_index.get(segment["index"]), "median") for by_index in per_segment.values()),
        ]
        for segment in result.segments
    ]
    header = ["segment", "ops", "estimated_cycles", *(f"{name} median" for name in per_segment)]
    lines.extend(_table(header, segment_rows) if segment_rows else ["  (none)"])
    lines.append("")
    lines.append(
        f"measurements (over the samples; spread = max - min, ! where it exceeds {SPREAD_LIMIT:.0%} of the median)"
    )
    if not figures:
        lines.append("  (no figure was measured)" if result.executed else "  (the run stage did not execute)")
    else:
        rows = [
            [
                figure.name,
                str(figure.count),
                *(_figure_text(figure, part) for part in ("median", "mean", "min", "max", "spread")),
                "-" if figure.spread_fraction is None else f"{figure.spread_fraction:.1%}",
                "!" if figure.unsteady else "",
            ]
            for figure in figures
        ]
        lines.extend(_table(["figure", "count", "median", "mean", "min", "max", "spread", "of median", "flag"], rows))
    lines.append("")
    lines.append("samples")
    if not result.samples:
        lines.append("  (the run stage did not execute)")
    else:
        rows = []
        for sample in result.samples:
            signatures = ", ".join(f"{name}:{digest[:8]}" for name, digest in sorted(sample.signatures.items()))
            rows.append(
                [
                    f"sample {sample.index}",
                    _text(None if sample.cycles is None else sample.cycles["total"]),
                    _text(sample.latency_s),
                    signatures or "-",
                ]
            )
        lines.extend(_table(["sample", "cycles_total", "latency_s", "signatures"], rows))
    return "\n".join(lines) + "\n"


def vela_lines(vela: dict[str, Any]) -> list[str]:
    """The two lines that show Vela's options and its memory allocation (Vela's figures, not measured)."""
    return [
        f"  vela {vela['version']}: accelerator {vela['accelerator']}, system config {vela['system_config']}, "
        f"memory mode {vela['memory_mode']}",
        f"  memory (Vela's allocation, not measured): SRAM used {kib_text(vela.get('sram_memory_used_kib'))}, "
        f"off-chip flash used {kib_text(vela.get('off_chip_flash_memory_used_kib'))}",
    ]


_SEGMENT_FIGURES = (
    "op_cycles",
    "npu_cycles",
    "mac_count",
    "sram_access_cycles",
    "dram_access_cycles",
    "on_flash_access_cycles",
    "off_flash_access_cycles",
)


def show_segments(path: str | os.PathLike[str]) -> str:
    """`heliabuild show SEGMENTS.json`: Vela's output of one model as tables: the model, Vela's options, the
    SRAM and off-chip flash the compiled model uses (`-` where an older segments.json does not record them),
    the command streams, the attribution's coverage, and each segment's estimated figures. Every figure is
    Vela's; the file is read bounded and validated against its schema first."""
    from heliabuild.vela.segments import read_segments_document

    document = read_segments_document(path)
    vela = document["vela"]
    streams = document["command_streams"]
    coverage = document["coverage"]
    source = document["source_sha256"]

    lines = [
        f"segments {path}",
        f"  model {document['model']} {document['model_sha256'][:12]}, source {'-' if source is None else source[:12]}",
        *vela_lines(vela),
        f"  command streams {streams['count']} ({'' if streams['matches_segments'] else 'not '}one per segment), "
        f"attribution coverage {coverage['fraction']:.2%} of {coverage['row_count']} rows",
        "",
        "segments (Vela's estimate, not a measurement)",
    ]
    rows = [
        [str(segment["index"]), f"{segment['op_range_start']}..{segment['op_range_end']}"]
        + [str(segment[name]) for name in _SEGMENT_FIGURES]
        for segment in document["segments"]
    ]
    lines.extend(_table(["segment", "ops", *_SEGMENT_FIGURES], rows) if rows else ["  (none)"])
    return "\n".join(lines) + "\n"


def show(result_dir: str | os.PathLike[str]) -> str:
    """`heliabuild show RESULT`: the verified bundle as readable tables; every sample labelled."""
    return show_result(load_result(result_dir))


def _statistics_csv(result: Result) -> str:
    assert result.statistics is not None
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(
        [
            "metric",
            "kind",
            "count",
            "sum",
            "min",
            "max",
            "mean_numerator",
            "mean_denominator",
            "mean",
            "variance_numerator",
            "variance_denominator",
            "variance",
            "std",
        ]
    )
    for name, counter in result.statistics.counters.items():
        if counter is None:
            writer.writerow([name, "counter", *[""] * 11])
            continue
        writer.writerow(
            [
                name,
                "counter",
                counter.count,
                counter.sum,
                counter.min,
                counter.max,
                counter.mean.numerator,
                counter.mean.denominator,
                repr(float(counter.mean)),
                counter.variance.numerator,
                counter.variance.denominator,
                repr(float(counter.variance)),
                repr(counter.std_approx),
            ]
        )
    for name, real in result.statistics.floats.items():
        if real is None:
            writer.writerow([name, "float", *[""] * 11])
            continue
        writer.writerow(
            [
                name,
                "float",
                real.count,
                "",
                repr(real.min),
                repr(real.max),
                "",
                "",
                repr(real.mean),
                "",
                "",
                repr(real.variance),
                repr(real.std),
            ]
        )
    return buffer.getvalue()


def export_result(result: Result, fields: str = "statistics", fmt: str = "json") -> str:
    if fields not in FIELDS:
        raise ResultError(f"export --fields: found {fields!r}, expected one of {', '.join(FIELDS)}")
    if fmt not in FORMATS:
        raise ResultError(f"export --format: found {fmt!r}, expected one of {', '.join(FORMATS)}")
    segment_count = len(result.segments)
    if fields == "samples":
        if fmt == "csv":
            return summary_csv(result.samples, segment_count)
        return json_text([sample.to_json() for sample in result.samples])
    if result.statistics is None:
        if fmt == "json":
            return json_text(None)
        raise ResultError(
            f"{result.path}: stage {result.stage!r}: the run did not execute, so it has no statistics to export"
        )
    if fmt == "json":
        return json_text(result.statistics.to_json())
    return _statistics_csv(result)


def export(result_dir: str | os.PathLike[str], fields: str = "statistics", fmt: str = "json") -> str:
    """`heliabuild export RESULT --fields statistics|samples --format json|csv` of the verified bundle:
    samples are one indexed row (csv) or object (json) per sample; statistics are the native statistics."""
    return export_result(load_result(result_dir), fields, fmt)


PLOT_SUFFIXES = (".svg", ".png")
MAX_X_LABELS = 20
"""At most this many x labels per panel: with more bars, every k-th bar is labelled."""
MAX_VALUE_LABELS = 40
"""Bars carry their value as a label up to this many bars per panel (beyond, in each bar's tooltip only)."""
_TICKS = 4


_TIME_UNITS = ((1.0, "s"), (1e-3, "ms"), (1e-6, "us"))


def _time_unit(peak: float | None) -> tuple[float, str]:
    """The unit (its size in seconds, its name) that shows times up to `peak` seconds in ones to thousands."""
    return next(((size, name) for size, name in _TIME_UNITS if peak is not None and peak >= size), _TIME_UNITS[-1])


def _panels(result: Result) -> list[tuple[str, str, list[tuple[str, float | None]], str]]:
    """(title, x axis name, [(x label, value)], colour) of each panel: Vela's estimate per segment, and the
    measured latency per sample in the unit that suits its largest value (s, ms or us)."""
    latencies = [s.latency_s for s in result.samples]
    size, unit = _time_unit(max((value for value in latencies if value is not None), default=None))
    return [
        (
            "estimated cycles per segment (Vela's estimate)",
            "segment",
            [(f"seg {s['index']}", _real(s["estimated_cycles"])) for s in result.segments],
            "#4477aa",
        ),
        (
            f"measured latency per sample ({unit})",
            "sample",
            [(f"sample {s.index}", None if s.latency_s is None else s.latency_s / size) for s in result.samples],
            "#cc6677",
        ),
    ]


def _value_label(value: float | None) -> str:
    """A bar's value label: a whole number in full (Vela's cycles), anything else to 3 significant digits."""
    if value is None:
        return "-"
    if float(value).is_integer() and abs(value) >= 1:
        return str(int(value))
    return f"{value:.3g}"


def axis_ticks(peak: float) -> list[float]:
    """Round tick values from 0 up to the first at or above `peak`: steps of 1, 2, 2.5 or 5 times a power
    of ten, about _TICKS of them (0 and 1 for a panel with nothing above 0)."""
    if not peak > 0:
        return [0.0, 1.0]
    raw = peak / _TICKS
    power = 10.0 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 2.5, 5, 10) if m * power >= raw * (1 - 1e-9))
    return [round(step * k, 12) for k in range(math.ceil(peak / step - 1e-9) + 1)]


def _label_step(count: int) -> int:
    """Label every k-th bar so that at most MAX_X_LABELS labels show."""
    return max(1, -(-count // MAX_X_LABELS))


def plot_svg(result: Result, path: str | os.PathLike[str]) -> Path:
    """A dependency-free SVG of two bar panels (`_panels`), each with a y axis of tick values from 0 to its
    largest value, a value label on each bar (up to MAX_VALUE_LABELS bars), x labels thinned to at most
    MAX_X_LABELS, and every value in its bar's tooltip; a value not known is a missing bar, labelled `-`."""
    width, left, bar_area, gap = 680, 70, 200, 50
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{2 * bar_area + 3 * gap}" '
        'font-family="sans-serif" font-size="11">'
    ]
    for number, (title, _, values, color) in enumerate(_panels(result)):
        top = gap + number * (bar_area + gap)
        base = top + bar_area - 20  # the x axis
        plot_height = bar_area - 40
        parts.append(f'<text x="10" y="{top - 18}" font-size="13">{escape(title)}</text>')
        ticks = axis_ticks(max((value for _, value in values if value is not None), default=0.0))
        peak = ticks[-1]
        parts.append(f'<line x1="{left}" y1="{base}" x2="{width - 10}" y2="{base}" stroke="black"/>')
        parts.append(f'<line x1="{left}" y1="{base}" x2="{left}" y2="{base - plot_height}" stroke="black"/>')
        for tick in ticks:
            y = base - plot_height * tick / peak
            parts.append(f'<line x1="{left - 4}" y1="{y:.1f}" x2="{left}" y2="{y:.1f}" stroke="black"/>')
            parts.append(f'<text x="{left - 6}" y="{y + 4:.1f}" text-anchor="end">{escape(_text(tick))}</text>')
        step = (width - 10 - left) / max(len(values), 1)
        every = _label_step(len(values))
        for k, (label, value) in enumerate(values):
            x = left + k * step
            height = 0.0 if value is None else plot_height * value / peak
            parts.append(
                f'<rect x="{x + 1:.1f}" y="{base - height:.1f}" width="{max(step - 2, 0.5):.1f}" '
                f'height="{height:.1f}" fill="{color}"><title>{escape(label)}: {escape(_text(value))}</title></rect>'
            )
            middle = x + step / 2
            if len(values) <= MAX_VALUE_LABELS:
                parts.append(
                    f'<text x="{middle:.1f}" y="{base - height - 3:.1f}" text-anchor="middle" font-size="9">'
                    f"{escape(_value_label(value))}</text>"
                )
            if k % every == 0:
                parts.append(f'<text x="{middle:.1f}" y="{base + 14}" text-anchor="middle">{escape(label)}</text>')
    parts.append("</svg>")
    target = Path(path)
    write_atomic(target, ("\n".join(parts) + "\n").encode("utf-8"))
    return target


def plot_png(result: Result, path: str | os.PathLike[str]) -> Path:
    """The same two panels as a PNG through matplotlib (the optional `plot` extra); ResultError, before
    anything is written, when matplotlib is not installed. Written with no date in its metadata."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        from matplotlib import pyplot, ticker
    except ImportError:
        raise ResultError(
            f"{path}: writing a PNG plot needs matplotlib, which is not installed",
            hint="pip install 'heliabuild[plot]', or plot to FILE.svg (no dependency)",
        ) from None
    panels = _panels(result)
    figure, axes = pyplot.subplots(len(panels), 1, figsize=(8, 6.5))
    try:
        for axis, (title, x_name, values, color) in zip(axes, panels, strict=True):
            positions = list(range(len(values)))
            heights = [0.0 if value is None else value for _, value in values]
            if len(values) <= MAX_VALUE_LABELS:
                bars = axis.bar(positions, heights, color=color)
                axis.bar_label(bars, labels=[_value_label(value) for _, value in values], fontsize=7, padding=2)
                axis.set_xticks(positions, [label.split()[-1] for label, _ in values])
            else:  # too many bars to see each: a line through every value, and round x ticks
                axis.plot(positions, heights, color=color, linewidth=0.7)
                axis.xaxis.set_major_locator(ticker.MaxNLocator(nbins=10, integer=True))
            known = [value for _, value in values if value is not None]
            if x_name == "sample" and known:
                middle = median(known)
                axis.axhline(middle, color="black", linewidth=0.8, linestyle="--")
                title = f"{title}; dashed: median {_value_label(middle)}"
            axis.set_xlabel(x_name)
            axis.set_ylim(0, max(heights, default=0.0) * 1.15 or 1.0)
            axis.margins(x=0.01)
            axis.set_title(title)
        figure.tight_layout()
        buffer = io.BytesIO()
        figure.savefig(buffer, format="png", metadata={"Software": None})
    finally:
        pyplot.close(figure)
    target = Path(path)
    write_atomic(target, buffer.getvalue())
    return target


def plot(result: Result, path: str | os.PathLike[str]) -> Path:
    """`show --plot FILE`: an SVG (`plot_svg`) or a PNG (`plot_png`) by the file's extension; ResultError
    for any other extension, before anything is written."""
    suffix = Path(path).suffix.lower()
    if suffix == ".svg":
        return plot_svg(result, path)
    if suffix == ".png":
        return plot_png(result, path)
    raise ResultError(
        f"{path}: cannot write a plot of type {suffix or '(no extension)'!r}; expected one of "
        f"{', '.join(PLOT_SUFFIXES)}",
        hint="name the plot FILE.svg (no dependency) or FILE.png (with matplotlib)",
    )
