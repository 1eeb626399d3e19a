"""The facts a build's summary shows of one verified result bundle (heliabuild.scons.summary prints them as a
table and writes them as JSON and CSV; heliabuild.scons.runner keeps the facts of a bundle its integrity check
verified). Every figure is named in heliabuild.results.vocabulary's words."""

from __future__ import annotations

import csv
import io
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from heliabuild.results.figures import SPREAD_LIMIT, Figure, measured_figures
from heliabuild.results.verdict import input_source, verdict
from heliabuild.results.vocabulary import ESTIMATE_COLUMN, Quantity, notes, quantity
from heliabuild.tables import text_table
from heliabuild.units import UNKNOWN, count_text, kib_text, time_text, time_unit

if TYPE_CHECKING:
    from heliabuild.results.reader import Result

MAIN_FIGURES = ("cycles.total", "instructions.total", "latency_s")
"""The figure a row shows, the first its backend measured: NPU cycles (fvp), instructions (qemu-m55), host time
(litert)."""


@dataclass(frozen=True)
class MeasuredFigure:
    """The main measured figure of a run: its name, what it counts, and its median, min and max over the n
    measured invokes (`count`)."""

    figure: str
    quantity: Quantity
    count: int
    median: float | None
    min: float
    max: float

    @classmethod
    def of(cls, figure: Figure, scopes: Mapping[str, Any] | None) -> MeasuredFigure:
        def number(value: float | None) -> float | None:  # a count as an integer, in JSON too
            whole = value is not None and figure.kind == "counter" and float(value).is_integer()
            return int(value) if whole else value

        return cls(
            figure.name,
            quantity(figure.name, scopes),
            figure.count,
            number(figure.median),
            number(figure.min),
            number(figure.max),
        )

    @property
    def spread_fraction(self) -> float | None:
        """max - min as a share of the median; None without a median or with a median of 0."""
        return None if not self.median else (self.max - self.min) / abs(self.median)

    def label(self) -> str:
        return self.quantity.label(self.count)

    def to_json(self) -> dict[str, Any]:
        return {
            "figure": self.figure,
            "label": self.label(),
            **self.quantity.to_json(),
            "n": self.count,
            "median": self.median,
            "min": self.min,
            "max": self.max,
            "spread": self.max - self.min,
            "spread_fraction": self.spread_fraction,
        }


@dataclass(frozen=True)
class BundleFacts:
    """What the summary shows of a verified bundle: its backend; Vela's NPU estimate per segment; Vela's SRAM
    and off-chip flash allocation of the compiled model (Vela's compile-time figures, None where the bundle
    has none); the main measured figure (None where the run measured none); the verification verdict in short
    (heliabuild.results.verdict) and the input source (`zeros` or the tensor_io files)."""

    backend: str
    estimated_cycles: tuple[int | None, ...]
    vela_sram_used_kib: float | None
    vela_off_chip_flash_used_kib: float | None
    measured: MeasuredFigure | None
    verification: str
    inputs: str

    def to_json(self) -> dict[str, Any]:
        return {
            "backend": self.backend,
            "segments": len(self.estimated_cycles),
            "vela_npu_estimate_cycles": list(self.estimated_cycles),
            "vela_sram_used_kib": self.vela_sram_used_kib,
            "vela_off_chip_flash_used_kib": self.vela_off_chip_flash_used_kib,
            "measured": None if self.measured is None else self.measured.to_json(),
            "verification": self.verification,
            "inputs": self.inputs,
        }


def bundle_facts(result: Result) -> BundleFacts:
    """The BundleFacts of a verified bundle."""
    figures = {figure.name: figure for figure in measured_figures(result)}
    main = next((figures[name] for name in MAIN_FIGURES if name in figures), None)
    identity = result.document["run_identity"]
    vela = result.vela or {}
    return BundleFacts(
        backend=identity["backend"],
        estimated_cycles=tuple(segment["estimated_cycles"] for segment in result.segments),
        vela_sram_used_kib=vela.get("sram_memory_used_kib"),
        vela_off_chip_flash_used_kib=vela.get("off_chip_flash_memory_used_kib"),
        measured=None if main is None else MeasuredFigure.of(main, result.document.get("scopes")),
        verification=verdict(identity, result.samples).short(),
        inputs=input_source(identity),
    )


@dataclass(frozen=True)
class SummaryRow:
    """One pipeline of a build's summary: its name, the facts of its bundle, the bundle's folder (relative to
    the build's top folder)."""

    pipeline: str
    facts: BundleFacts
    bundle: str

    def to_json(self) -> dict[str, Any]:
        return {"pipeline": self.pipeline, **self.facts.to_json(), "bundle": self.bundle}


SUMMARY_SCHEMA_VERSION = 1
SUMMARY_SCHEMA = "summary"

HEADER = (
    "pipeline",
    "backend",
    "segments",
    ESTIMATE_COLUMN,
    "Vela SRAM",
    "Vela flash",
    "measured",
    "median",
    "spread",
    "verification",
    "inputs",
    "bundle",
)
_RIGHT = frozenset({2, 7, 8})
"""The columns of figures (segments, median, spread), aligned to the right."""

CSV_HEADER = (
    "pipeline",
    "backend",
    "segments",
    "vela_npu_estimate_cycles",
    "vela_npu_estimate_cycles_total",
    "vela_sram_used_kib",
    "vela_off_chip_flash_used_kib",
    "measured_figure",
    "measured_label",
    "measured_what",
    "measured_scope",
    "measured_unit",
    "measured_n",
    "measured_median",
    "measured_min",
    "measured_max",
    "measured_spread",
    "measured_spread_fraction",
    "verification",
    "inputs",
    "bundle",
)


def spread_text(measured: MeasuredFigure) -> str:
    """`21.0 us (3.4%)`, `0 (0.0%)`, flagged ` !` above SPREAD_LIMIT of the median."""
    spread = measured.max - measured.min
    shown = time_text(spread, time_unit(measured.median)) if measured.quantity.is_time else count_text(spread)
    fraction = measured.spread_fraction
    if fraction is None:
        return shown
    return f"{shown} ({fraction:.1%}){' !' if fraction > SPREAD_LIMIT else ''}"


def measured_cells(measured: MeasuredFigure | None) -> list[str]:
    """The `measured`, `median` and `spread` cells of a table row; `-` each without a measured figure."""
    if measured is None:
        return [UNKNOWN] * 3
    return [measured.label(), measured.quantity.text(measured.median), spread_text(measured)]


def estimate_text(cycles: Sequence[int | None]) -> str:
    """Vela's NPU estimate per segment, `/`-joined, with thousands separators: `26,295/28,908/7,395`."""
    return "/".join(count_text(value) for value in cycles) or UNKNOWN


def summary_text(rows: Sequence[SummaryRow]) -> str:
    """The table a build prints: a header, a rule, one line per row, then a note for each measured figure
    that is not comparable with Vela's NPU estimate beside it."""
    cells = []
    for row in rows:
        facts, measured = row.facts, row.facts.measured
        cells.append(
            [
                row.pipeline,
                facts.backend,
                str(len(facts.estimated_cycles)),
                estimate_text(facts.estimated_cycles),
                kib_text(facts.vela_sram_used_kib),
                kib_text(facts.vela_off_chip_flash_used_kib),
                *measured_cells(measured),
                facts.verification,
                facts.inputs,
                row.bundle,
            ]
        )
    lines = text_table(HEADER, cells, right=_RIGHT)
    lines += notes(None if row.facts.measured is None else row.facts.measured.quantity for row in rows)
    return "\n".join(lines) + "\n"


def summary_document(rows: Sequence[SummaryRow], sweeps: Sequence[Mapping[str, Any]] = ()) -> dict[str, Any]:
    """The summary as heliabuild-summary.json holds it (schemas/summary.schema.json): the rows, then each sweep
    table the build printed (`{"sweep", "json", "csv", "html"}`, paths relative to the top folder)."""
    return {
        "schema_version": SUMMARY_SCHEMA_VERSION,
        "pipelines": [row.to_json() for row in rows],
        "sweeps": [dict(sweep) for sweep in sweeps],
    }


def summary_csv(rows: Sequence[SummaryRow]) -> str:
    """The summary as heliabuild-summary.csv holds it: CSV_HEADER, then one line per row; a list `/`-joined,
    null an empty cell, numbers as JSON writes them (no thousands separator, no unit)."""
    stream = io.StringIO()
    writer = csv.writer(stream, lineterminator="\n")
    writer.writerow(CSV_HEADER)
    for row in rows:
        facts, measured = row.facts, row.facts.measured
        known = [value for value in facts.estimated_cycles if value is not None]
        total = sum(known) if len(known) == len(facts.estimated_cycles) else None
        cells: list[object] = [row.pipeline, facts.backend, len(facts.estimated_cycles)]
        cells += ["/".join("" if value is None else str(value) for value in facts.estimated_cycles), _cell(total)]
        cells += [_cell(facts.vela_sram_used_kib), _cell(facts.vela_off_chip_flash_used_kib)]
        if measured is None:
            cells += [""] * 11
        else:
            figure = measured.to_json()
            cells += [_cell(figure[name]) for name in ("figure", "label", "what", "scope", "unit", "n", "median")]
            cells += [_cell(figure[name]) for name in ("min", "max", "spread", "spread_fraction")]
        cells += [facts.verification, facts.inputs, row.bundle]
        writer.writerow(cells)
    return stream.getvalue()


def _cell(value: object) -> str:
    return "" if value is None else str(value)


def holds_summary(path: Path) -> bool:
    """Whether `path` is a summary file this module writes: a regular file (not a symlink) holding either a
    JSON object of exactly the summary's keys (summary_document) or a CSV whose first line is CSV_HEADER. Read
    bounded; not validated against the schema, so that a no-op build imports no validator."""
    from heliabuild.documents import parse_json, read_regular_file
    from heliabuild.errors import HeliaError

    try:
        data = read_regular_file(path, "summary", follow_symlinks=False)
        if path.suffix == ".csv":
            return data.split(b"\n", 1)[0] == ",".join(CSV_HEADER).encode("utf-8")
        document = parse_json(data, str(path), "summary")
    except HeliaError:
        return False
    return isinstance(document, dict) and sorted(document) == ["pipelines", "schema_version", "sweeps"]
