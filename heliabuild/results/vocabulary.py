"""The words every view uses for Vela's estimate and for each measured figure (`show`, `show --plot`, the build
summary, the sweep table and its HTML report; docs/runner.md, "Scopes").

Vela's estimated cycles are the "Vela NPU estimate". A measured figure is labelled by what measured it and
over how many invokes: `measured (QEMU M55 instructions, CPU only, n=3)`, `measured (host time, LiteRT,
n=10)`, `measured (NPU cycles, FVP, n=1)`. A figure is named by the result's `scopes` (heliabuild.results.
scopes): the scope rule lets each figure have one scope per backend, so the label follows from the figure
and its scope.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from heliabuild.results.scopes import FIGURE_SCOPES, HOST_WALL_CLOCK, NPU_CALLBACKS, QEMU_ICOUNT
from heliabuild.units import count_text, time_text
from heliabuild.vela.names import ESTIMATE

ESTIMATE_COLUMN = f"{ESTIMATE} (cycles per segment)"
"""The column of Vela's estimate per segment in the summary and sweep tables."""


@dataclass(frozen=True)
class Quantity:
    """What one measured figure counts: `what` it is and where (`QEMU M55 instructions, CPU only`), a short
    `name` for a column (`instructions`), its `unit` (`instructions`, `cycles`, `beats`, `s`) and, where it
    could be read as comparable with Vela's NPU estimate but is not, a `note` saying why."""

    field: str
    scope: str | None
    what: str
    name: str
    unit: str
    note: str | None = None

    @property
    def is_time(self) -> bool:
        return self.unit == "s"

    def label(self, count: int) -> str:
        """`measured (QEMU M55 instructions, CPU only, n=3)`."""
        return f"measured ({self.what}, n={count})"

    def text(self, value: float | None, unit: tuple[float, str] | None = None) -> str:
        """`value` in this quantity's unit: `46,072,071 instructions`, `612.1 us` (heliabuild.units)."""
        if self.is_time:
            return time_text(value, unit)
        shown = count_text(value)
        return shown if value is None or not self.unit else f"{shown} {self.unit}"

    def to_json(self) -> dict[str, Any]:
        return {"what": self.what, "unit": self.unit, "scope": self.scope}


QEMU_NOTE = (
    "qemu-m55 counts the Cortex-M55's instructions with every operator on the CPU (no NPU): not comparable with "
    "Vela's NPU estimate"
)
HOST_NOTE = "host time is LiteRT on this machine's CPU: not comparable with Vela's NPU estimate"

QUANTITIES: dict[tuple[str, str], Quantity] = {
    (q.field, q.scope): q
    for q in (
        Quantity(
            "instructions", QEMU_ICOUNT, "QEMU M55 instructions, CPU only", "instructions", "instructions", QEMU_NOTE
        ),
        Quantity("cycles", NPU_CALLBACKS, "NPU cycles, FVP", "NPU cycles", "cycles"),
        Quantity("traffic_beats", NPU_CALLBACKS, "NPU traffic beats, FVP", "NPU beats", "beats"),
        Quantity("latency_s", HOST_WALL_CLOCK, "host time, LiteRT", "host time", "s", HOST_NOTE),
        Quantity("segment_latency_s", HOST_WALL_CLOCK, "host time, LiteRT", "host time", "s", HOST_NOTE),
        Quantity("segment_traffic_beats", NPU_CALLBACKS, "NPU traffic beats, FVP", "NPU beats", "beats"),
    )
}
"""(sample field, scope) -> what it counts, for every figure a backend measures (scopes.MEASURED_BY)."""


def quantity(figure: str, scopes: Mapping[str, Any] | None) -> Quantity:
    """The Quantity of the figure named `figure` (`instructions.total`, `segment_latency_s.2`, `latency_s`;
    heliabuild.results.figures) under the result's `scopes`; a figure of no known backend is named by its
    field and scope (`energy, no scope`)."""
    field = figure.partition(".")[0]
    return scoped_quantity(field, (scopes or {}).get(FIGURE_SCOPES.get(field, field)))


def scoped_quantity(field: str, scope: str | None) -> Quantity:
    """The Quantity of the sample field `field` (`instructions`, `latency_s`) measured by `scope`."""
    known = QUANTITIES.get((field, scope))
    if known is not None:
        return known
    unit = "s" if field.endswith("_s") else ""
    return Quantity(field, scope, f"{field}, {scope or 'no scope'}", field, unit)


def notes(quantities: Iterable[Quantity | None]) -> list[str]:
    """A `note: ...` line for each of `quantities` that is not comparable with Vela's NPU estimate, once each."""
    found = {named.note for named in quantities if named is not None and named.note}
    return [f"note: {note}" for note in sorted(found)]
