"""A sweep's comparison table: one row per point of its grid (docs/sweeps.md, "The outputs").

A row is read from the point's Vela `<stem>_segments.json` (validated) and its result bundle (verified with
heliabuild.results.reader.load_result). It holds the point's options (its value on each axis), its
segment count, Vela's estimated cycles per segment (an estimate, never a measurement), the measured
figures the backend has (each the median over the measured invokes, in total and per segment, with its
unit and the scope the result names; null where the backend does not measure it) and Vela's SRAM and
off-chip flash use (Vela's compile-time figures from its summary CSV, null where it reported none), and the
bundle's verification verdict and input source (heliabuild.results.verdict).

The table is written as `<name>_sweep.json` (schemas/sweep.schema.json), `<name>_sweep.csv` (one line per
row; lists `/`-joined, null an empty cell) and printed as text (`SweepTable.to_text`). Paths in it are
relative to the table's folder, so it holds no absolute path and no time: the same inputs give the same
bytes.
"""

from __future__ import annotations

import csv
import io
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any

from heliabuild.documents import same_named
from heliabuild.errors import ResultError, SchemaError
from heliabuild.files import json_text
from heliabuild.results.figures import Figure, measured_figures
from heliabuild.results.reader import load_result
from heliabuild.results.summary import MeasuredFigure, estimate_text, measured_cells
from heliabuild.results.verdict import input_source, verdict
from heliabuild.results.vocabulary import ESTIMATE_COLUMN, Quantity, notes, scoped_quantity
from heliabuild.schema_files import validate
from heliabuild.sweeps.grid import Point, canonical
from heliabuild.tables import text_table
from heliabuild.units import kib_text

SWEEP_SCHEMA_VERSION = 2
SCHEMA = "sweep"
CSV_SUFFIX = "_sweep.csv"
JSON_SUFFIX = "_sweep.json"
HTML_SUFFIX = "_sweep.html"

QUANTITIES: tuple[tuple[str, str, str, str], ...] = (
    ("cycles", "cycles", "cycles.total", "cycles.segment.{k}"),
    ("traffic_beats", "beats", "traffic_beats", "segment_traffic_beats.{k}"),
    ("instructions", "instructions", "instructions.total", "instructions.segment.{k}"),
    ("latency", "s", "latency_s", "segment_latency_s.{k}"),
)
"""(quantity, unit, figure of the total, figure of segment k) of each measured quantity a row reports, the
first a backend measures being the one the text table shows (NPU cycles, instructions, host time)."""

_SCOPE_FIELDS = {
    "cycles": "cycles",
    "traffic_beats": "traffic_beats",
    "instructions": "instructions",
    "latency": "latency_s",
}
"""The field of the result's `scopes` that names each quantity's scope (and its sample field)."""


@dataclass(frozen=True)
class Measured:
    """One measured quantity of a run: the median per invoke in total and per segment (None where a segment
    is not measured), its unit, and what it counts (the result's scope, e.g. host_wall_clock)."""

    quantity: str
    unit: str
    scope: str | None
    median: float | None
    segments: tuple[float | None, ...]
    count: int | None = None
    """n: the measured invokes of the total (None without a total)."""
    min: float | None = None
    max: float | None = None
    """The total's least and greatest value over the measured invokes (None without a total)."""

    @property
    def named(self) -> Quantity:
        """What it counts, in heliabuild.results.vocabulary's words."""
        return scoped_quantity(_SCOPE_FIELDS[self.quantity], self.scope)

    def label(self) -> str:
        """`measured (host time, LiteRT, n=10)`; without a known n, `measured (host time, LiteRT)`."""
        return self.named.label(self.count) if self.count is not None else f"measured ({self.named.what})"

    def figure(self) -> MeasuredFigure | None:
        """The total as the build summary shows it (median, n, spread), or None without a known total."""
        if self.count is None or self.min is None or self.max is None:
            return None
        return MeasuredFigure(self.quantity, self.named, self.count, self.median, self.min, self.max)

    def to_json(self) -> dict[str, Any]:
        return {
            "unit": self.unit,
            "scope": self.scope,
            "median": self.median,
            "segments": list(self.segments),
            "n": self.count,
            "min": self.min,
            "max": self.max,
        }

    @classmethod
    def from_json(cls, quantity: str, document: Mapping[str, Any]) -> Measured:
        return cls(
            quantity=quantity,
            **same_named(document, "unit", "scope", "median", "min", "max"),
            segments=tuple(document["segments"]),
            count=document["n"],
        )


@dataclass(frozen=True)
class SweepRow:
    """One point of a sweep, as the table shows it (module docstring)."""

    pipeline: str
    point: Point
    estimated_cycles: tuple[int, ...]
    measured: Mapping[str, Measured | None]
    vela_sram_used_kib: float | None
    vela_off_chip_flash_used_kib: float | None
    bundle: str
    verification: str = "not compared"
    """The bundle's verification verdict in short (heliabuild.results.verdict.Verdict.short)."""
    inputs: str = "zeros"
    """The bundle's input source: `zeros` or the tensor_io files (heliabuild.results.verdict.input_source)."""
    vela_version: str | None = None
    """The version of Vela that compiled the point (its segments.json)."""
    heliabuild_version: str | None = None
    """The version of heliabuild that measured the point (the bundle's provider_versions)."""
    measured_at: str | None = None
    """When the bundle was measured (its `created_at`, UTC), None where it records no time."""

    def main(self) -> Measured | None:
        """The measured quantity the text table shows: the first of QUANTITIES with a known total."""
        return next((m for q, *_ in QUANTITIES if (m := self.measured[q]) is not None and m.median is not None), None)

    @property
    def segment_count(self) -> int:
        return len(self.estimated_cycles)

    def to_json(self) -> dict[str, Any]:
        return {
            "pipeline": self.pipeline,
            **self.point.to_json(),
            "segments": self.segment_count,
            "vela_estimated_cycles": list(self.estimated_cycles),
            "measured": {
                quantity: None if self.measured[quantity] is None else self.measured[quantity].to_json()
                for quantity, *_ in QUANTITIES
            },
            "vela_sram_used_kib": self.vela_sram_used_kib,
            "vela_off_chip_flash_used_kib": self.vela_off_chip_flash_used_kib,
            "bundle": self.bundle,
            "verification": self.verification,
            "inputs": self.inputs,
            "vela_version": self.vela_version,
            "heliabuild_version": self.heliabuild_version,
            "measured_at": self.measured_at,
        }

    @classmethod
    def from_json(cls, document: Mapping[str, Any]) -> SweepRow:
        measured = document["measured"]
        return cls(
            **same_named(
                document,
                "pipeline",
                "vela_sram_used_kib",
                "vela_off_chip_flash_used_kib",
                "bundle",
                "verification",
                "inputs",
                "vela_version",
                "heliabuild_version",
                "measured_at",
            ),
            point=Point.from_json(document),
            estimated_cycles=tuple(document["vela_estimated_cycles"]),
            measured=MappingProxyType(
                {q: None if measured[q] is None else Measured.from_json(q, measured[q]) for q, *_ in QUANTITIES}
            ),
        )


@dataclass(frozen=True)
class SweepTable:
    """The comparison table of the sweep `name`: its axes, in the grid's order, and one row per point."""

    name: str
    axes: tuple[str, ...]
    rows: tuple[SweepRow, ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "schema_version": SWEEP_SCHEMA_VERSION,
            "sweep": self.name,
            "axes": list(self.axes),
            "rows": [row.to_json() for row in self.rows],
        }

    @classmethod
    def from_json(cls, document: Any, source: str) -> SweepTable:
        """The table of a `<name>_sweep.json` document; ResultError naming `source` and the field otherwise."""
        try:
            validate(document, SCHEMA, source)
        except SchemaError as failure:
            raise ResultError(failure.message) from None
        return cls(
            name=document["sweep"],
            axes=tuple(document["axes"]),
            rows=tuple(SweepRow.from_json(row) for row in document["rows"]),
        )

    def to_csv(self) -> str:
        """The CSV text: a header, then one line per row (module docstring)."""
        header = ["pipeline", "point", *self.axes, "segments", "vela_estimated_cycles", "vela_estimated_cycles_total"]
        for quantity, *_ in QUANTITIES:
            parts = ("label", "median", "segments", "unit", "scope", "n", "min", "max")
            header += [f"measured_{quantity}_{part}" for part in parts]
        header += ["vela_sram_used_kib", "vela_off_chip_flash_used_kib", "bundle", "verification", "inputs"]
        header += ["vela_version", "heliabuild_version", "measured_at"]
        stream = io.StringIO()
        writer = csv.writer(stream, lineterminator="\n")
        writer.writerow(header)
        for row in self.rows:
            cells: list[object] = [row.pipeline, row.point.folder]
            cells += [option_text(row.point.values[axis]) for axis in self.axes]
            cells += [row.segment_count, _joined(row.estimated_cycles), sum(row.estimated_cycles)]
            for quantity, *_ in QUANTITIES:
                measured = row.measured[quantity]
                if measured is None:
                    cells += [""] * 8
                else:
                    cells += [measured.label(), _cell(measured.median), _joined(measured.segments), measured.unit]
                    cells += [_cell(measured.scope), _cell(measured.count), _cell(measured.min), _cell(measured.max)]
            cells += [_cell(row.vela_sram_used_kib), _cell(row.vela_off_chip_flash_used_kib), row.bundle]
            cells += [row.verification, row.inputs]
            cells += [_cell(row.vela_version), _cell(row.heliabuild_version), _cell(row.measured_at)]
            writer.writerow(cells)
        return stream.getvalue()

    def to_text(self) -> str:
        """The table printed after a build: one line per point, in columns, with the words and units of the build
        summary (heliabuild.results.summary): the main measured figure with what measured it, n, its median and
        spread; then a note for each figure not comparable with the NPU estimate."""
        header = ["point", "pipeline", "segments", ESTIMATE_COLUMN, "measured", "median", "spread", "verification"]
        header += ["inputs", "Vela SRAM", "Vela flash"]
        rows = []
        for row in self.rows:
            main = row.main()
            rows.append(
                [
                    row.point.folder,
                    row.pipeline,
                    str(row.segment_count),
                    estimate_text(row.estimated_cycles),
                    *measured_cells(None if main is None else main.figure()),
                    row.verification,
                    row.inputs,
                    kib_text(row.vela_sram_used_kib),
                    kib_text(row.vela_off_chip_flash_used_kib),
                ]
            )
        lines = [f"sweep {self.name}: {len(self.rows)} point{'' if len(self.rows) == 1 else 's'}"]
        lines.extend(text_table(header, rows, right={2, 5, 6}))
        lines.extend(notes(None if (main := row.main()) is None else main.named for row in self.rows))
        return "\n".join(lines) + "\n"

    def files(self) -> dict[str, bytes]:
        """The bytes of the CSV and JSON files, by suffix (CSV_SUFFIX, JSON_SUFFIX)."""
        return {CSV_SUFFIX: self.to_csv().encode("utf-8"), JSON_SUFFIX: json_text(self.to_json()).encode("utf-8")}


def option_text(value: Any) -> str:
    """An option as a CSV cell or label: a string as it is, anything else as its canonical JSON."""
    return value if isinstance(value, str) else canonical(value)


def _cell(value: object) -> str:
    return "" if value is None else str(value)


def _joined(values: Sequence[object]) -> str:
    return "/".join("-" if value is None else str(value) for value in values)


def _measured(result: Any) -> dict[str, Measured | None]:
    """Each quantity of QUANTITIES the result measured (a known total or segment), else None."""
    figures = {figure.name: figure for figure in measured_figures(result)}
    medians = {name: figure.median for name, figure in figures.items()}
    scopes = result.document.get("scopes") or {}
    count = len(result.segments)
    measured: dict[str, Measured | None] = {}
    for quantity, unit, total, segment in QUANTITIES:
        segments = tuple(medians.get(segment.format(k=k)) for k in range(count))
        median = medians.get(total)
        if median is None and all(value is None for value in segments):
            measured[quantity] = None
            continue
        scope = scopes.get(_SCOPE_FIELDS[quantity])
        whole = figures.get(total)
        measured[quantity] = Measured(
            quantity=quantity,
            unit=unit,
            scope=scope,
            median=_whole(whole, median),
            segments=tuple(_whole(figures.get(segment.format(k=k)), v) for k, v in enumerate(segments)),
            count=None if whole is None else whole.count,
            min=None if whole is None else _whole(whole, whole.min),
            max=None if whole is None else _whole(whole, whole.max),
        )
    return measured


def _whole(figure: Figure | None, value: float | None) -> float | None:
    """A counter's whole value as an integer (so the JSON holds `12345`, not `12345.0`)."""
    if value is not None and figure is not None and figure.kind == "counter" and float(value).is_integer():
        return int(value)
    return value


def read_row(
    pipeline: str,
    point: Point,
    segments_json: str | os.PathLike[str],
    bundle: str | os.PathLike[str],
    table_folder: str | os.PathLike[str],
) -> SweepRow:
    """The row of `point` (built as the pipeline `pipeline`) from its Vela segments.json and its result bundle;
    the row names the bundle relative to `table_folder`. ResultError (or the reader's error) naming the file
    that cannot be read, or a segments.json and bundle whose segment counts differ."""
    from heliabuild.vela.segments import read_segments_document

    segments = read_segments_document(segments_json, error=ResultError)
    result = load_result(bundle)
    if len(result.segments) != len(segments["segments"]):
        raise ResultError(
            f"{bundle}: the bundle has {len(result.segments)} segments, and {segments_json} "
            f"{len(segments['segments'])}: they are not of one pipeline"
        )
    vela = segments["vela"]
    return SweepRow(
        pipeline=pipeline,
        point=point,
        estimated_cycles=tuple(int(segment["op_cycles"]) for segment in segments["segments"]),
        measured=MappingProxyType(_measured(result)),
        vela_sram_used_kib=vela.get("sram_memory_used_kib"),
        vela_off_chip_flash_used_kib=vela.get("off_chip_flash_memory_used_kib"),
        bundle=Path(os.path.relpath(bundle, table_folder)).as_posix(),
        verification=verdict(result.document["run_identity"], result.samples).short(),
        inputs=input_source(result.document["run_identity"]),
        vela_version=vela.get("version"),
        heliabuild_version=result.document.get("provider_versions", {}).get("heliabuild"),
        measured_at=result.document.get("created_at"),
    )
