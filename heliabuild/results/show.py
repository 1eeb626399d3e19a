"""`heliabuild show`: a verified result bundle as readable tables (or, `--format json`, one JSON document), and
a Vela output's segments.json as tables.

Every view names Vela's estimate and each measured figure in heliabuild.results.vocabulary's words, and shows
only the figures the bundle's backend measures (its `scopes`): instructions in total and per segment on
qemu-m55, NPU cycles and traffic beats on an FVP, host time on litert. Counts are whole numbers with thousands
separators, times are in us or ms (heliabuild.units).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from heliabuild.results.figures import SPREAD_LIMIT, Figure, measured_figures, segment_figure
from heliabuild.results.layout import Sample
from heliabuild.results.reader import Result, load_result
from heliabuild.results.verdict import input_source, verdict
from heliabuild.results.vocabulary import ESTIMATE, Quantity, notes, quantity
from heliabuild.tables import text_table
from heliabuild.units import UNKNOWN, count_text, kib_text, time_text, time_unit


@dataclass(frozen=True)
class SampleColumn:
    """One measured figure of every sample: its column title, its Quantity, the segment it is of (None for a
    total or a figure of the whole invoke) and its value in each sample (None where not known)."""

    title: str
    quantity: Quantity
    segment: int | None
    values: tuple[float | None, ...]

    def cells(self) -> list[str]:
        if self.quantity.is_time:
            unit = time_unit(max((abs(v) for v in self.values if v is not None), default=None))
            return [time_text(value, unit) for value in self.values]
        return [count_text(value) for value in self.values]


_SAMPLE_FIELDS = (
    ("cycles", "total"),
    ("cycles", "segments"),
    ("traffic_beats", None),
    ("segment_traffic_beats", "list"),
    ("instructions", "total"),
    ("instructions", "segments"),
    ("latency_s", None),
    ("segment_latency_s", "list"),
)
"""The sample fields `show` tabulates, in order, and where the value is: the field itself (None), its `total`,
each of its `segments`, or each entry of the list it is."""


def sample_columns(result: Result) -> list[SampleColumn]:
    """The measured figures of every sample, one column each (total, then per segment), for the fields some
    sample of `result` holds; none for a figure no sample has (the backend does not measure it)."""
    scopes = result.document.get("scopes")
    samples = result.samples
    columns: list[SampleColumn] = []
    for field, where in _SAMPLE_FIELDS:
        values = [getattr(sample, field) for sample in samples]
        if all(value is None for value in values):
            continue
        named = quantity(field, scopes)
        if where is None:
            columns.append(SampleColumn(named.name, named, None, tuple(values)))
        elif where == "total":
            totals = tuple(_part(v, "total") for v in values)
            columns.append(SampleColumn(f"{named.name} total", named, None, totals))
        else:
            count = max(len(_entries(value, where)) for value in values)
            for k in range(count):
                entries = tuple(_at(_entries(value, where), k) for value in values)
                columns.append(SampleColumn(f"{named.name} seg {k}", named, k, entries))
    return columns


def _part(value: Any, key: str) -> float | None:
    return value.get(key) if isinstance(value, dict) else None


def _entries(value: Any, where: str) -> list[Any]:
    entries = value.get("segments") if where == "segments" and isinstance(value, dict) else value
    return entries if isinstance(entries, list) else []


def _at(entries: Sequence[Any], k: int) -> float | None:
    return entries[k] if k < len(entries) else None


def _figure_cells(figure: Figure, named: Quantity) -> list[str]:
    """median, mean, min, max and spread of `figure` in its unit (times in the unit of the median)."""
    values = (figure.median, figure.mean, figure.min, figure.max, figure.spread)
    if named.is_time:
        unit = time_unit(abs(figure.median) if figure.median is not None else abs(figure.max))
        return [time_text(value, unit) for value in values]
    if figure.kind == "counter":
        return [count_text(value) for value in values]
    return [UNKNOWN if value is None else f"{value:.6g}" for value in values]


def _per_segment(result: Result) -> dict[str, dict[int, Figure]]:
    """Each per-segment measured figure's field -> segment index -> its Figure."""
    per_segment: dict[str, dict[int, Figure]] = {}
    for figure in measured_figures(result):
        located = segment_figure(figure.name)
        if located is not None:
            per_segment.setdefault(located[0], {})[located[1]] = figure
    return per_segment


def _segment_lines(result: Result) -> list[str]:
    scopes = result.document.get("scopes")
    per_segment = _per_segment(result)
    named = {field: quantity(field, scopes) for field in per_segment}
    lines = [
        f"segments ({ESTIMATE}: Vela's estimated NPU cycles, not a measurement"
        + "".join(f"; {named[field].name} median: {named[field].label(_count(f))}" for field, f in per_segment.items())
        + ")"
    ]
    columns: list[list[str]] = []
    for field, by_index in per_segment.items():
        figures = [by_index.get(segment["index"]) for segment in result.segments]
        medians = [None if figure is None else figure.median for figure in figures]
        if named[field].is_time:
            unit = time_unit(max((abs(v) for v in medians if v is not None), default=None))
            columns.append([time_text(value, unit) for value in medians])
        else:
            columns.append([count_text(value) for value in medians])
    rows = [
        [
            str(segment["index"]),
            f"{segment['op_range_start']}..{segment['op_range_end']}",
            count_text(segment["estimated_cycles"]),
            *(column[position] for column in columns),
        ]
        for position, segment in enumerate(result.segments)
    ]
    header = ["segment", "ops", f"{ESTIMATE} (cycles)", *(f"{named[field].name} median" for field in per_segment)]
    lines.extend(text_table(header, rows, right=range(len(header))) if rows else ["  (none)"])
    return lines


def _count(by_index: Mapping[int, Figure]) -> int:
    return min(figure.count for figure in by_index.values())


def show_result(result: Result) -> str:
    """The readable tables of `result`: its identity, acquisition, verification verdict and input source; Vela's
    options and memory allocation (Vela's figures, from the runner's segments.json; absent from a bundle of a
    runner without one); per segment, the Vela NPU estimate and the median of each measured per-segment figure
    in columns of their own; every measured figure, labelled with what measured it and n, with its median,
    mean, min, max and spread, flagged `!` when the spread exceeds SPREAD_LIMIT of the median; and every sample
    with the figures its backend measures."""
    document = result.document
    identity = document["run_identity"]
    lines = [
        f"result {result.path}",
        f"  stage {result.stage}, runtime {result.runtime}, backend {identity['backend']}",
        f"  runner {identity['runner_sha256'][:12]}, model {identity['model_sha256'][:12]}",
    ]
    if result.receipt is not None:
        receipt = result.receipt
        call_once = UNKNOWN if receipt.call_once_present is None else str(receipt.call_once_present)
        lines.append(
            f"  acquisition {receipt.state}: {receipt.warmup_invokes} warmup, {receipt.measured_invokes} measured, "
            f"initialization {receipt.initialization}, call_once_present {call_once}"
        )
    if result.executed:
        lines.append(f"  verification: {verdict(identity, result.samples).text()}")
        lines.append(f"  inputs: {input_source(identity)}")
    if result.vela is not None:
        lines.extend(vela_lines(result.vela))
    lines.append("")
    lines.extend(_segment_lines(result))
    lines.append("")
    lines.append(
        f"measurements (over the samples; spread = max - min, ! where it exceeds {SPREAD_LIMIT:.0%} of the median)"
    )
    figures = measured_figures(result)
    scopes = document.get("scopes")
    if not figures:
        lines.append("  (no figure was measured)" if result.executed else "  (the run stage did not execute)")
    else:
        rows = []
        for figure in figures:
            named = quantity(figure.name, scopes)
            fraction = figure.spread_fraction
            rows.append(
                [
                    figure.name,
                    named.label(figure.count),
                    *_figure_cells(figure, named),
                    UNKNOWN if fraction is None else f"{fraction:.1%}",
                    "!" if figure.unsteady else "",
                ]
            )
        header = ["figure", "measured", "median", "mean", "min", "max", "spread", "of median", "flag"]
        lines.extend(text_table(header, rows, right=range(2, 8)))
    lines.extend(notes(quantity(figure.name, scopes) for figure in figures))
    lines.append("")
    lines.append("samples")
    if not result.samples:
        lines.append("  (the run stage did not execute)")
    else:
        columns = sample_columns(result)
        cells = [column.cells() for column in columns]
        rows = [
            [f"sample {sample.index}", *(column[position] for column in cells), _signatures(sample)]
            for position, sample in enumerate(result.samples)
        ]
        header = ["sample", *(column.title for column in columns), "signatures"]
        lines.extend(text_table(header, rows, right=range(1, 1 + len(columns))))
    return "\n".join(lines) + "\n"


def _signatures(sample: Sample) -> str:
    return ", ".join(f"{name}:{digest[:8]}" for name, digest in sorted(sample.signatures.items())) or UNKNOWN


def show_document(result: Result) -> dict[str, Any]:
    """`show --format json`: what the tables show, as data. Counts are integers and times seconds, each
    measured figure with its label, what it counts, its scope and unit; the verification verdict in words and
    in numbers; the input source; Vela's record; the segments with the Vela NPU estimate and each per-segment
    median; the samples as the bundle holds them."""
    document = result.document
    identity = document["run_identity"]
    scopes = document.get("scopes")
    checked = verdict(identity, result.samples)
    per_segment = _per_segment(result)
    return {
        "result": str(result.path),
        "stage": result.stage,
        "runtime": result.runtime,
        "backend": identity["backend"],
        "runner_sha256": identity["runner_sha256"],
        "model_sha256": identity["model_sha256"],
        "acquisition": None if result.receipt is None else result.receipt.to_json(),
        "verification": {
            "text": checked.text(),
            "compared": checked.compared,
            "reference": checked.reference,
            "resolver": checked.resolver,
            "bound": checked.bound,
            "largest_difference": checked.largest if checked.compared else None,
            "differing_elements": checked.differing,
            "unbounded_elements": checked.unbounded,
            "elements": checked.elements,
            "samples": checked.samples,
            "samples_differing": checked.samples_differing,
        }
        if result.executed
        else None,
        "inputs": input_source(identity) if result.executed else None,
        "vela": result.vela,
        "segments": [
            {
                "index": segment["index"],
                "op_range_start": segment["op_range_start"],
                "op_range_end": segment["op_range_end"],
                "vela_npu_estimate_cycles": segment["estimated_cycles"],
                "measured_median": {
                    field: _number(by_index[segment["index"]])
                    for field, by_index in per_segment.items()
                    if segment["index"] in by_index
                },
            }
            for segment in result.segments
        ],
        "figures": [
            {
                **figure.to_json(),
                **{key: _number(figure, key) for key in ("median", "mean", "min", "max", "spread")},
                "label": quantity(figure.name, scopes).label(figure.count),
                **quantity(figure.name, scopes).to_json(),
            }
            for figure in measured_figures(result)
        ],
        "samples": [sample.to_json() for sample in result.samples],
    }


def _number(figure: Figure, part: str = "median") -> float | None:
    """A summary value of `figure`; a count's whole value as an integer."""
    value = figure.median if part == "median" else getattr(figure, part)
    if value is not None and figure.kind == "counter" and float(value).is_integer():
        return int(value)
    return value


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
        f"segments ({ESTIMATE}: Vela's estimate, not a measurement)",
    ]
    rows = [
        [str(segment["index"]), f"{segment['op_range_start']}..{segment['op_range_end']}"]
        + [count_text(segment[name]) for name in _SEGMENT_FIGURES]
        for segment in document["segments"]
    ]
    header = ["segment", "ops", *_SEGMENT_FIGURES]
    lines.extend(text_table(header, rows, right=range(len(header))) if rows else ["  (none)"])
    return "\n".join(lines) + "\n"


def show(result_dir: str | os.PathLike[str]) -> str:
    """`heliabuild show RESULT`: the verified bundle as readable tables; every sample labelled."""
    return show_result(load_result(result_dir))
