"""The measured figures of a verified result bundle, summarised for `show` and `compare`.

A figure is one entry of `measurements.statistics` (a counter such as `cycles.total` or
`instructions.segment.2`, or a float such as `latency_s`) that is known, i.e. every sample has it. Its
count, mean, min and max are the stored statistics; its median is computed from the samples, where the
figure's name says where a sample holds it: `<field>` is the sample's `<field>`, `<field>.total` its
`<field>.total`, `<field>.segment.<k>` its `<field>.segments[k]` and `<field>.<k>` the k-th entry of its
list `<field>`. A figure whose values the samples do not hold under that rule has no median (None). A new
counter of a backend is summarised without a change here.

The spread is max - min; a figure is `unsteady` when its spread exceeds SPREAD_LIMIT of its median.
Vela's estimates are not figures: they are `segments[].estimated_cycles` (`estimates`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from heliabuild.results.reader import Result
from heliabuild.results.statistics import median

SPREAD_LIMIT = 0.10
"""A spread above this share of the median is flagged."""


@dataclass(frozen=True)
class Figure:
    """The summary of one measured figure over the samples of a run."""

    name: str
    kind: str  # "counter" (an integer count) or "float"
    count: int
    median: float | None
    mean: float
    min: float
    max: float

    @property
    def spread(self) -> float:
        return self.max - self.min

    @property
    def spread_fraction(self) -> float | None:
        """The spread as a share of the median; None without a median or with a median of 0."""
        if self.median is None or self.median == 0:
            return None
        return self.spread / abs(self.median)

    @property
    def unsteady(self) -> bool:
        fraction = self.spread_fraction
        return fraction is not None and fraction > SPREAD_LIMIT

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "kind": self.kind,
            "count": self.count,
            "median": self.median,
            "mean": self.mean,
            "min": self.min,
            "max": self.max,
            "spread": self.spread,
            "spread_fraction": self.spread_fraction,
            "unsteady": self.unsteady,
        }


def _value(sample: dict[str, Any], name: str) -> Any:
    """The value `name` denotes in the sample document (module docstring); None where it holds none."""
    field, _, rest = name.partition(".")
    value = sample.get(field)
    if rest == "":
        return value
    if rest == "total":
        return value.get("total") if isinstance(value, dict) else None
    located = segment_figure(name)
    if located is None:
        return None
    entries = value.get("segments") if isinstance(value, dict) else value
    if not isinstance(entries, list) or located[1] >= len(entries):
        return None
    return entries[located[1]]


def _median(samples: Sequence[dict[str, Any]], name: str, count: int) -> float | None:
    values = [_value(sample, name) for sample in samples]
    numbers = [v for v in values if isinstance(v, int | float) and not isinstance(v, bool)]
    if len(numbers) != len(values) or len(numbers) != count:
        return None
    return float(median(numbers))


def measured_figures(result: Result) -> list[Figure]:
    """Every known measured figure of `result`, counters first, each kind in the order the statistics list
    them; empty for a run that did not execute."""
    if result.statistics is None:
        return []
    samples = [sample.to_json() for sample in result.samples]
    figures: list[Figure] = []
    for name, counter in result.statistics.counters.items():
        if counter is not None:
            figures.append(
                Figure(
                    name=name,
                    kind="counter",
                    count=counter.count,
                    median=_median(samples, name, counter.count),
                    mean=float(counter.mean),
                    min=float(counter.min),
                    max=float(counter.max),
                )
            )
    for name, real in result.statistics.floats.items():
        if real is not None:
            figures.append(
                Figure(
                    name=name,
                    kind="float",
                    count=real.count,
                    median=_median(samples, name, real.count),
                    mean=real.mean,
                    min=real.min,
                    max=real.max,
                )
            )
    return figures


def segment_figure(name: str) -> tuple[str, int] | None:
    """(`<field>`, k) for a per-segment figure, named `<field>.segment.<k>` or `<field>.<k>`; None for any
    other name."""
    field, _, rest = name.partition(".")
    position = rest.removeprefix("segment.")
    if field and position.isdigit() and position.isascii():
        return field, int(position)
    return None


def figure_values(result: Result, names: Sequence[str]) -> dict[str, tuple[float, ...] | None]:
    """Each figure of `names` with its value in every sample of `result`, where the module docstring's rule
    finds it; None for a figure some sample holds no number of (the compare gate's statistical test reads
    them)."""
    samples = [sample.to_json() for sample in result.samples]
    found: dict[str, tuple[float, ...] | None] = {}
    for name in names:
        values = [_value(sample, name) for sample in samples]
        numbers = all(isinstance(v, int | float) and not isinstance(v, bool) for v in values)
        found[name] = tuple(float(v) for v in values) if values and numbers else None
    return found
