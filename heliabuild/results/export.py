"""`heliabuild export RESULT --fields statistics|samples --format json|csv`: a verified result bundle's samples or
statistics as data."""

from __future__ import annotations

import csv
import io
import os

from heliabuild.errors import ResultError
from heliabuild.files import json_text
from heliabuild.results.bundle import summary_csv
from heliabuild.results.reader import Result, load_result

FIELDS = ("statistics", "samples")
FORMATS = ("json", "csv")


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
