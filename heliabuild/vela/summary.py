"""Vela's network summary CSV (`<stem>_summary_<system config>.csv`) as a typed record."""

from __future__ import annotations

import csv
import io
import math
import os
from dataclasses import dataclass
from typing import Any

from heliabuild.documents import read_text, shown
from heliabuild.errors import VelaError

_TEXT = {
    "accelerator_configuration": "accelerator",
    "system_config": "system_config",
    "memory_mode": "memory_mode",
}
_NUMBERS = {
    "core_clock": "core_clock_hz",
    "inference_time": "inference_time_s",
    "nn_macs": "nn_macs",
    "cycles_npu": "cycles_npu",
    "cycles_total": "cycles_total",
    "sram_memory_used": "sram_memory_used_kib",
    "off_chip_flash_memory_used": "off_chip_flash_memory_used_kib",
}
_RATES = {"inferences_per_second": "inferences_per_second"}
"""Columns Vela computes as 1 / inference time: `nan` for a model it places wholly on the CPU (no NPU time),
read as None (not known), never as a number."""


@dataclass(frozen=True)
class VelaSummary:
    """The figures of Vela's network summary that heliabuild uses; `fields`
    keeps every column as written."""

    accelerator: str
    system_config: str
    memory_mode: str
    core_clock_hz: float
    inference_time_s: float
    inferences_per_second: float | None
    nn_macs: float
    cycles_npu: float
    cycles_total: float
    sram_memory_used_kib: float
    off_chip_flash_memory_used_kib: float
    fields: dict[str, str]

    def to_json(self) -> dict[str, Any]:
        return {
            "accelerator": self.accelerator,
            "system_config": self.system_config,
            "memory_mode": self.memory_mode,
            "core_clock_hz": self.core_clock_hz,
            "inference_time_s": self.inference_time_s,
            "inferences_per_second": self.inferences_per_second,
            "nn_macs": self.nn_macs,
            "cycles_npu": self.cycles_npu,
            "cycles_total": self.cycles_total,
            "sram_memory_used_kib": self.sram_memory_used_kib,
            "off_chip_flash_memory_used_kib": self.off_chip_flash_memory_used_kib,
        }


def read_summary(path: str | os.PathLike[str]) -> VelaSummary:
    """Read a summary CSV (as heliabuild.documents says: a regular file, bounded, UTF-8); VelaError otherwise."""
    return parse_summary(read_text(path, "summary CSV", error=VelaError), str(path))


def parse_summary(text: str, source: str = "summary CSV") -> VelaSummary:
    """The one data row of the summary CSV `text` (from `source`); VelaError naming the column otherwise."""
    if text and not text.endswith(("\n", "\r")):
        raise VelaError(f"{source}: the summary is cut short: the file ends inside a line, without a line end")
    try:
        rows = list(csv.DictReader(io.StringIO(text)))
    except csv.Error as error:
        raise VelaError(f"{source}: not a Vela summary CSV: {error}") from None
    if len(rows) != 1:
        raise VelaError(f"{source}: a Vela summary CSV has one data row, this one has {len(rows)}")
    row = rows[0]
    missing = [column for column in (*_TEXT, *_NUMBERS, *_RATES) if row.get(column) is None]
    if missing:
        raise VelaError(f"{source}: not a Vela summary CSV: missing column(s) {shown(missing)}")
    values: dict[str, Any] = {field: row[column] for column, field in _TEXT.items()}
    for column, field in (*_NUMBERS.items(), *_RATES.items()):
        try:
            values[field] = float(row[column])
        except ValueError:
            raise VelaError(f"{source}: column {column!r} is {shown(row[column])}, not a number") from None
        if column in _RATES and math.isnan(values[field]):
            values[field] = None
        elif not math.isfinite(values[field]):
            raise VelaError(f"{source}: column {column!r} is {shown(row[column])}, not a finite number")
    return VelaSummary(**values, fields=dict(row))
