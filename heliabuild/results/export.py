"""`show` tables, `export` (json/csv) and a dependency-free SVG plot of a verified result bundle."""

from __future__ import annotations

import csv
import io
import os
from html import escape
from pathlib import Path
from typing import Any

from heliabuild.errors import ResultError
from heliabuild.files import json_text, write_atomic
from heliabuild.results.bundle import summary_csv
from heliabuild.results.reader import Result, load_result

FIELDS = ("statistics", "samples")
FORMATS = ("json", "csv")


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    widths = [max(len(cell) for cell in column) for column in zip(header, *rows, strict=True)]
    lines = ["  ".join(cell.rjust(width) for cell, width in zip(header, widths, strict=True)).rstrip()]
    lines.append("  ".join("-" * width for width in widths))
    lines.extend("  ".join(c.rjust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in rows)
    return lines


def _real(value: Any) -> float | None:
    return None if value is None else float(value)


def _text(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.6g}"
    return str(value)


def show_result(result: Result) -> str:
    """The readable tables of `result`: its identity, per-segment estimates, and every measured sample."""
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
    lines.append("")
    lines.append("segments (estimated cycles: Vela's estimate, not a measurement)")
    segment_rows = [
        [
            str(segment["index"]),
            f"{segment['op_range_start']}..{segment['op_range_end']}",
            _text(segment["estimated_cycles"]),
        ]
        for segment in result.segments
    ]
    lines.extend(_table(["segment", "ops", "estimated_cycles"], segment_rows) if segment_rows else ["  (none)"])
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


def plot_svg(result: Result, path: str | os.PathLike[str]) -> Path:
    """A small dependency-free SVG: bars of per-segment estimated cycles, and measured latency per sample."""
    width, bar_area, gap = 640, 200, 40
    segments = result.segments
    samples = result.samples
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{2 * bar_area + 3 * gap}" '
        'font-family="sans-serif" font-size="11">'
    ]

    def bars(title: str, values: list[tuple[str, float | None]], top: int, color: str) -> None:
        parts.append(f'<text x="10" y="{top - 8}" font-size="13">{escape(title)}</text>')
        known = [value for _, value in values if value is not None]
        peak = max(known, default=0.0) or 1.0
        step = (width - 20) / max(len(values), 1)
        for k, (label, value) in enumerate(values):
            x = 10 + k * step
            height = 0.0 if value is None else (bar_area - 20) * value / peak
            y = top + bar_area - 20 - height
            parts.append(
                f'<rect x="{x + 2:.1f}" y="{y:.1f}" width="{max(step - 4, 1):.1f}" height="{height:.1f}" '
                f'fill="{color}"><title>{escape(label)}: {escape(_text(value))}</title></rect>'
            )
            parts.append(f'<text x="{x + 2:.1f}" y="{top + bar_area - 6}">{escape(label)}</text>')

    bars(
        "estimated cycles per segment (Vela)",
        [(f"seg {s['index']}", _real(s["estimated_cycles"])) for s in segments],
        gap,
        "#4477aa",
    )
    bars(
        "measured latency per sample (s)",
        [(f"sample {s.index}", s.latency_s) for s in samples],
        2 * gap + bar_area,
        "#cc6677",
    )
    parts.append("</svg>")
    target = Path(path)
    write_atomic(target, ("\n".join(parts) + "\n").encode("utf-8"))
    return target
