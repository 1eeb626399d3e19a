"""Per-segment estimates: Vela's per-layer figures summed over each fence segment.

`<stem>_segments.json` (schemas/segments.schema.json) records, for the model
Vela compiled, each segment's original operator range with the estimated
cycles, MACs and memory-access cycles of the rows attributed to it, how every
row was attributed, the coverage of the attribution, and the command streams
Vela produced.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from heliabuild.errors import HeliaError
from heliabuild.fence.contract import is_fence_name
from heliabuild.model.io import Model
from heliabuild.vela.attribution import FenceCoverage, RowAttribution, attribute_rows, coverage_of
from heliabuild.vela.per_layer import PerLayerRow
from heliabuild.vela.streams import CommandStreams, CompiledOperator

SEGMENTS_SCHEMA_VERSION = 1
_FIGURES = (
    "op_cycles",
    "npu_cycles",
    "mac_count",
    "sram_access_cycles",
    "dram_access_cycles",
    "on_flash_access_cycles",
    "off_flash_access_cycles",
)


@dataclass(frozen=True)
class SegmentEstimate:
    """Vela's estimate for original operators `op_range_start`..`op_range_end`
    (inclusive), summed over `rows`; the closing fence's rows count here too."""

    index: int
    op_range_start: int
    op_range_end: int
    op_cycles: int
    npu_cycles: int
    mac_count: int
    sram_access_cycles: int
    dram_access_cycles: int
    on_flash_access_cycles: int
    off_flash_access_cycles: int
    rows: tuple[int, ...]

    def to_json(self) -> dict[str, Any]:
        document: dict[str, Any] = {
            "index": self.index,
            "op_range_start": self.op_range_start,
            "op_range_end": self.op_range_end,
            "rows": list(self.rows),
        }
        document.update({figure: getattr(self, figure) for figure in _FIGURES})
        return document


@dataclass(frozen=True)
class SegmentsReport:
    """Everything `<stem>_segments.json` holds.

    `source_sha256` is the unfenced source's hash: the sidecar's for a fenced
    model, the model's own for an unfenced one, None for a fenced model
    without its sidecar beside it. `compiled_sha256` is the hash of Vela's
    compiled model written with it, which binds that file to the model.
    `sram_memory_used_kib` and `off_chip_flash_memory_used_kib` are the
    memory use Vela's summary CSV reports for the compiled model (None, and
    absent from the JSON, where no summary was read).
    """

    model: str
    model_sha256: str
    source_sha256: str | None
    vela_version: str
    accelerator: str
    system_config: str
    memory_mode: str
    boundary_after_ops: tuple[int, ...]
    segments: tuple[SegmentEstimate, ...]
    coverage: FenceCoverage
    attributions: tuple[RowAttribution, ...]
    streams: CommandStreams
    compiled_sha256: str | None = None
    sram_memory_used_kib: float | None = None
    off_chip_flash_memory_used_kib: float | None = None

    @property
    def streams_match_segments(self) -> bool:
        return self.streams.count == len(self.segments) and self.streams.alternates_with_fences()

    @property
    def cpu_operators(self) -> tuple[CompiledOperator, ...]:
        return self.streams.cpu_operators

    def to_json(self) -> dict[str, Any]:
        return {
            "schema_version": SEGMENTS_SCHEMA_VERSION,
            "model": self.model,
            "model_sha256": self.model_sha256,
            "compiled_sha256": self.compiled_sha256,
            "source_sha256": self.source_sha256,
            "vela": {
                "version": self.vela_version,
                "accelerator": self.accelerator,
                "system_config": self.system_config,
                "memory_mode": self.memory_mode,
                **{
                    name: value
                    for name, value in (
                        ("sram_memory_used_kib", self.sram_memory_used_kib),
                        ("off_chip_flash_memory_used_kib", self.off_chip_flash_memory_used_kib),
                    )
                    if value is not None
                },
            },
            "boundary_after_ops": list(self.boundary_after_ops),
            "segments": [segment.to_json() for segment in self.segments],
            "coverage": self.coverage.to_json(),
            "rows": [
                {"row": a.row, "operator": a.operator, "fence": a.fence, "rule": a.rule} for a in self.attributions
            ],
            "command_streams": {
                "count": self.streams.count,
                "operator_types": list(self.streams.operator_types),
                "matches_segments": self.streams_match_segments,
                "cpu_operators": [op.to_json() for op in self.streams.cpu_operators],
            },
        }


def read_segments_document(path: str | os.PathLike[str], *, error: type[HeliaError] = HeliaError) -> dict[str, Any]:
    """The `<stem>_segments.json` at `path`, read bounded (heliabuild.documents.read_json) and validated
    against schemas/segments.schema.json; `error` (a HeliaError subclass) naming the file and the field
    otherwise."""
    from heliabuild.documents import read_json
    from heliabuild.errors import SchemaError
    from heliabuild.schema_files import validate

    document = read_json(path, "segments JSON", error=error)
    try:
        validate(document, "segments", str(path))
    except SchemaError as failure:
        raise error(failure.message) from None
    return document


def fence_after_ops(model: Model) -> tuple[list[int], int]:
    """The original indices the model's fences follow, and its original operator count."""
    after_ops: list[int] = []
    operators = model.subgraphs[0].operators or []
    for position, op in enumerate(operators):
        if is_fence_name(model.operator_codes[op.opcodeIndex]):
            after_ops.append(position - len(after_ops) - 1)
    return after_ops, len(operators) - len(after_ops)


def estimate_segments(
    model: Model, rows: Sequence[PerLayerRow]
) -> tuple[list[SegmentEstimate], FenceCoverage, list[RowAttribution]]:
    """Sum the attributed rows per segment of `model`, the model Vela compiled."""
    after_ops, operator_count = fence_after_ops(model)
    attributions = attribute_rows(model, rows)
    ends = [*after_ops, operator_count - 1]
    members: list[list[PerLayerRow]] = [[] for _ in ends]
    for row, where in zip(rows, attributions, strict=True):
        if where.fence is not None:
            members[where.fence].append(row)
        elif where.operator is not None:
            members[_segment_of(where.operator, after_ops)].append(row)
    segments: list[SegmentEstimate] = []
    start = 0
    for index, (end, attributed) in enumerate(zip(ends, members, strict=True)):
        totals = {figure: sum(getattr(row, figure) for row in attributed) for figure in _FIGURES}
        segments.append(
            SegmentEstimate(
                index=index,
                op_range_start=start,
                op_range_end=end,
                rows=tuple(row.index for row in attributed),
                **totals,
            )
        )
        start = end + 1
    return segments, coverage_of(rows, attributions), attributions


def _segment_of(operator: int, after_ops: list[int]) -> int:
    for index, after_op in enumerate(after_ops):
        if operator <= after_op:
            return index
    return len(after_ops)
