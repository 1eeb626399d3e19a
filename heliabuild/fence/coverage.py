"""FenceCoverage: how much of Vela's estimate a cost-based fence plan could attribute."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class UnmatchedRow:
    """A per-layer row attributed to no operator: its position among the rows and what Vela called it."""

    index: int
    name: str
    original_operator: str
    nng_operator: str
    op_cycles: int

    def to_json(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "name": self.name,
            "original_operator": self.original_operator,
            "nng_operator": self.nng_operator,
            "op_cycles": self.op_cycles,
        }

    @classmethod
    def from_json(cls, document: dict[str, Any]) -> UnmatchedRow:
        return cls(
            **{key: document[key] for key in ("index", "name", "original_operator", "nng_operator", "op_cycles")}
        )


@dataclass(frozen=True)
class FenceCoverage:
    """The denominator (sum of `Op Cycles` over all Vela rows), the part
    attributed to original operators or fences, and the rows left unmatched.

    A coverage below 100% records uncertainty; it does not make a budget a
    latency bound.
    """

    total_cycles: int
    matched_cycles: int
    row_count: int
    unmatched_rows: tuple[UnmatchedRow, ...]

    @property
    def fraction(self) -> float:
        """matched / total; with zero total cycles, 1.0 unless a row is unmatched."""
        if self.total_cycles == 0:
            return 0.0 if self.unmatched_rows else 1.0
        return self.matched_cycles / self.total_cycles

    def to_json(self) -> dict[str, Any]:
        return {
            "total_cycles": self.total_cycles,
            "matched_cycles": self.matched_cycles,
            "fraction": self.fraction,
            "row_count": self.row_count,
            "unmatched_rows": [row.to_json() for row in self.unmatched_rows],
        }

    @classmethod
    def from_json(cls, document: dict[str, Any]) -> FenceCoverage:
        return cls(
            total_cycles=document["total_cycles"],
            matched_cycles=document["matched_cycles"],
            row_count=document["row_count"],
            unmatched_rows=tuple(UnmatchedRow.from_json(row) for row in document["unmatched_rows"]),
        )
