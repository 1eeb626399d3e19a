"""Round axis ticks for the sweep report's hand-drawn SVG axes (heliabuild.results.sweep_report)."""

from __future__ import annotations

import math

TICKS = 4
"""About this many steps from 0 to the peak."""


def axis_ticks(peak: float) -> list[float]:
    """Round tick values from 0 up to the first at or above `peak`: steps of 1, 2, 2.5 or 5 times a power
    of ten, about TICKS of them (0 and 1 for an axis with nothing above 0)."""
    if not peak > 0:
        return [0.0, 1.0]
    raw = peak / TICKS
    power = 10.0 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 2.5, 5, 10) if m * power >= raw * (1 - 1e-9))
    return [round(step * k, 12) for k in range(math.ceil(peak / step - 1e-9) + 1)]
