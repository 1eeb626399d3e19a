"""Vela's per-layer performance CSV (`<stem>_per-layer.csv`) as typed rows.

Vela writes one row per NNG operation (the operations it lowers original
TFLite operators into), in execution order, with `--verbose-performance`.
The columns heliabuild reads are looked up by header name, so a column Vela
adds or moves does not break the reader; a missing one is a clear error.
"""

from __future__ import annotations

import csv
import io
import math
import os
from dataclasses import dataclass
from typing import Any

from heliabuild.documents import read_text, shown
from heliabuild.errors import VelaError

# header -> attribute, for every column heliabuild reads
_COLUMNS = {
    "Original Operator": "original_operator",
    "NNG Operator": "nng_operator",
    "Target": "target",
    "Op Cycles": "op_cycles",
    "NPU": "npu_cycles",
    "SRAM AC": "sram_access_cycles",
    "DRAM AC": "dram_access_cycles",
    "OnFlash AC": "on_flash_access_cycles",
    "OffFlash AC": "off_flash_access_cycles",
    "MAC Count": "mac_count",
    "Name": "name",
}
_INTEGER_FIELDS = (
    "op_cycles",
    "npu_cycles",
    "sram_access_cycles",
    "dram_access_cycles",
    "on_flash_access_cycles",
    "off_flash_access_cycles",
    "mac_count",
)


@dataclass(frozen=True)
class PerLayerRow:
    """One row of the per-layer CSV; `index` is its position among the data rows.

    Cycle and access figures are Vela's estimates; `name` is the output tensor
    name of the NNG operation, which for an operator Vela did not decompose
    is the original operator's output name.
    """

    index: int
    original_operator: str
    nng_operator: str
    target: str
    op_cycles: int
    npu_cycles: int
    sram_access_cycles: int
    dram_access_cycles: int
    on_flash_access_cycles: int
    off_flash_access_cycles: int
    mac_count: int
    name: str

    def to_json(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "original_operator": self.original_operator,
            "nng_operator": self.nng_operator,
            "target": self.target,
            "op_cycles": self.op_cycles,
            "npu_cycles": self.npu_cycles,
            "sram_access_cycles": self.sram_access_cycles,
            "dram_access_cycles": self.dram_access_cycles,
            "on_flash_access_cycles": self.on_flash_access_cycles,
            "off_flash_access_cycles": self.off_flash_access_cycles,
            "mac_count": self.mac_count,
            "name": self.name,
        }


def read_per_layer(path: str | os.PathLike[str]) -> list[PerLayerRow]:
    """Read a per-layer CSV (as heliabuild.documents says: a regular file, bounded, UTF-8); VelaError naming the
    file, row and column on anything malformed."""
    return parse_per_layer(read_text(path, "per-layer CSV", error=VelaError), str(path))


def parse_per_layer(text: str, source: str = "per-layer CSV") -> list[PerLayerRow]:
    """The rows of the per-layer CSV `text` (from `source`); VelaError naming the row and column otherwise."""
    try:
        return _parse_rows(text, source)
    except csv.Error as error:
        raise VelaError(f"{source}: not a Vela per-layer CSV: {error}") from None


def _parse_rows(text: str, source: str) -> list[PerLayerRow]:
    reader = csv.DictReader(io.StringIO(text))
    # Vela ends every line; a file that stops inside a line was cut short (in the Name column, say).
    cut_short = bool(text) and not text.endswith(("\n", "\r"))
    header = reader.fieldnames or []
    missing = [column for column in _COLUMNS if column not in header]
    if missing:
        raise VelaError(
            f"{source}: not a Vela per-layer CSV: missing column(s) {shown(missing)}",
            hint="Produce it with vela --verbose-performance.",
        )
    rows: list[PerLayerRow] = []
    for number, record in enumerate(reader):
        values: dict[str, Any] = {"index": number}
        for column, field in _COLUMNS.items():
            raw = record.get(column)
            if raw is None:
                raise VelaError(f"{source}: row {number + 1} is cut short: no value for column {column!r}")
            values[field] = _integer(raw, source, number, column) if field in _INTEGER_FIELDS else raw
        rows.append(PerLayerRow(**values))
    if cut_short:
        where = f"row {len(rows)}" if rows else "the header"
        raise VelaError(f"{source}: {where} is cut short: the file ends inside it, without a line end")
    return rows


def _integer(raw: str, source: str, number: int, column: str) -> int:
    try:
        value = float(raw)
    except ValueError:
        raise VelaError(f"{source}: row {number + 1} column {column!r} is {shown(raw)}, not a number") from None
    if not math.isfinite(value) or value < 0 or value != int(value):
        raise VelaError(f"{source}: row {number + 1} column {column!r} is {shown(raw)}; expected a whole count >= 0")
    return int(value)
