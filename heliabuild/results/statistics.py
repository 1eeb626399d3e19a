"""Statistics over the measured samples (docs/runner.md, "The bundle").

Counters (integers such as cycles) get exact rational statistics: count, sum, min, max, the mean and the
population variance as numerator/denominator pairs in lowest terms, and an approximate population standard
deviation. Latency and energy get floating-point population statistics. A metric that any sample lacks has
no statistic (None): no sample is dropped. One sample has zero deviation.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from heliabuild.errors import ResultError

if TYPE_CHECKING:
    from fractions import Fraction


def _fraction_json(value: Fraction) -> dict[str, int]:
    return {"numerator": value.numerator, "denominator": value.denominator}


def _fraction_from_json(document: Any, source: str) -> Fraction:
    if not isinstance(document, Mapping) or set(document) != {"numerator", "denominator"}:
        raise ResultError(f"{source}: found {document!r}, expected {{numerator, denominator}}")
    numerator, denominator = document["numerator"], document["denominator"]
    for name, value in (("numerator", numerator), ("denominator", denominator)):
        if isinstance(value, bool) or not isinstance(value, int):
            raise ResultError(f"{source}.{name}: found {value!r}, expected an integer")
    if denominator < 1 or math.gcd(numerator, denominator) != 1:
        raise ResultError(
            f"{source}: {numerator}/{denominator} is not in lowest terms with a positive denominator",
        )
    from fractions import Fraction

    return Fraction(numerator, denominator)


@dataclass(frozen=True)
class CounterStatistic:
    """Exact statistics of an integer counter over the samples."""

    count: int
    sum: int
    min: int
    max: int
    mean: Fraction
    variance: Fraction
    std_approx: float

    def to_json(self) -> dict[str, Any]:
        return {
            "count": self.count,
            "sum": self.sum,
            "min": self.min,
            "max": self.max,
            "mean": _fraction_json(self.mean),
            "variance": _fraction_json(self.variance),
            "std_approx": self.std_approx,
        }

    @classmethod
    def from_json(cls, document: Any, source: str) -> CounterStatistic:
        fields = ("count", "sum", "min", "max", "mean", "variance", "std_approx")
        if not isinstance(document, Mapping) or set(document) != set(fields):
            raise ResultError(f"{source}: expected exactly the fields {', '.join(fields)}")
        for name in ("count", "sum", "min", "max"):
            if isinstance(document[name], bool) or not isinstance(document[name], int):
                raise ResultError(f"{source}.{name}: found {document[name]!r}, expected an integer")
        std = document["std_approx"]
        if isinstance(std, bool) or not isinstance(std, int | float):
            raise ResultError(f"{source}.std_approx: found {std!r}, expected a number")
        return cls(
            count=document["count"],
            sum=document["sum"],
            min=document["min"],
            max=document["max"],
            mean=_fraction_from_json(document["mean"], f"{source}.mean"),
            variance=_fraction_from_json(document["variance"], f"{source}.variance"),
            std_approx=float(std),
        )


@dataclass(frozen=True)
class FloatStatistic:
    """Floating-point population statistics of a real-valued metric over the samples."""

    count: int
    mean: float
    variance: float
    std: float
    min: float
    max: float

    def to_json(self) -> dict[str, Any]:
        return {
            "count": self.count,
            "mean": self.mean,
            "variance": self.variance,
            "std": self.std,
            "min": self.min,
            "max": self.max,
        }

    @classmethod
    def from_json(cls, document: Any, source: str) -> FloatStatistic:
        fields = ("count", "mean", "variance", "std", "min", "max")
        if not isinstance(document, Mapping) or set(document) != set(fields):
            raise ResultError(f"{source}: expected exactly the fields {', '.join(fields)}")
        for name in fields:
            value = document[name]
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise ResultError(f"{source}.{name}: found {value!r}, expected a number")
        if not isinstance(document["count"], int):
            raise ResultError(f"{source}.count: found {document['count']!r}, expected an integer")
        return cls(
            count=document["count"],
            **{name: float(document[name]) for name in fields[1:]},
        )


def median(values: Sequence[float]) -> float:
    """The median of `values` (at least one): the middle value, or the mean of the two middle ones, as
    statistics.median gives it (not imported for this: the summary table of every no-op build asks)."""
    ordered = sorted(values)
    middle = len(ordered) // 2
    return ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2


def counter_statistic(values: Sequence[int | None]) -> CounterStatistic | None:
    """Exact statistics of `values`; None when there are none or any is missing."""
    if not values or any(value is None for value in values):
        return None
    from fractions import Fraction  # here: a no-op build reads LiteRT bundles, which have no counters

    integers = [int(value) for value in values if value is not None]
    count = len(integers)
    total = sum(integers)
    mean = Fraction(total, count)
    variance = sum(((value - mean) ** 2 for value in integers), Fraction(0)) / count
    return CounterStatistic(
        count=count,
        sum=total,
        min=min(integers),
        max=max(integers),
        mean=mean,
        variance=variance,
        std_approx=math.sqrt(float(variance)),
    )


def float_statistic(values: Sequence[float | None]) -> FloatStatistic | None:
    """Population statistics of `values`; None when there are none or any is missing."""
    if not values or any(value is None for value in values):
        return None
    reals = [float(value) for value in values if value is not None]
    count = len(reals)
    mean = math.fsum(reals) / count
    variance = 0.0 if count == 1 else math.fsum((value - mean) ** 2 for value in reals) / count
    return FloatStatistic(
        count=count,
        mean=mean,
        variance=variance,
        std=math.sqrt(variance),
        min=min(reals),
        max=max(reals),
    )


@dataclass(frozen=True)
class Statistics:
    """`measurements.statistics`: counters by name (`cycles.total`, `cycles.segment.<k>`, `traffic_beats`)
    and float metrics by name (`latency_s`, `energy`); a value of None is an unavailable statistic."""

    counters: dict[str, CounterStatistic | None]
    floats: dict[str, FloatStatistic | None]

    def to_json(self) -> dict[str, Any]:
        return {
            "counters": {name: None if value is None else value.to_json() for name, value in self.counters.items()},
            "float": {name: None if value is None else value.to_json() for name, value in self.floats.items()},
        }

    @classmethod
    def from_json(cls, document: Any, source: str) -> Statistics:
        if not isinstance(document, Mapping) or set(document) != {"counters", "float"}:
            raise ResultError(f"{source}: expected exactly the fields counters, float")
        counters: dict[str, CounterStatistic | None] = {}
        for name, value in document["counters"].items():
            counters[name] = None if value is None else CounterStatistic.from_json(value, f"{source}.counters.{name}")
        floats: dict[str, FloatStatistic | None] = {}
        for name, value in document["float"].items():
            floats[name] = None if value is None else FloatStatistic.from_json(value, f"{source}.float.{name}")
        return cls(counters=counters, floats=floats)


def compute_statistics(samples: Sequence[Any], segment_count: int) -> Statistics:
    """The statistics of `samples` (heliabuild.results.bundle.Sample records) for `segment_count` segments:
    counters `cycles.total`, `cycles.segment.<k>`, `traffic_beats`, and, when a sample counts them,
    `instructions.total` and `instructions.segment.<k>`; floats `latency_s`, `energy` and, when a sample
    times segments, `segment_latency_s.<k>`."""

    def segment(counts: dict[str, Any] | None, k: int) -> int | None:
        if counts is None or k >= len(counts["segments"]):
            return None
        return counts["segments"][k]

    counters: dict[str, CounterStatistic | None] = {
        "cycles.total": counter_statistic([None if s.cycles is None else s.cycles["total"] for s in samples]),
    }
    for k in range(segment_count):
        counters[f"cycles.segment.{k}"] = counter_statistic([segment(s.cycles, k) for s in samples])
    counters["traffic_beats"] = counter_statistic([s.traffic_beats for s in samples])
    if any(s.segment_traffic_beats is not None for s in samples):
        for k in range(segment_count):
            beats = [None if s.segment_traffic_beats is None else s.segment_traffic_beats[k] for s in samples]
            counters[f"segment_traffic_beats.{k}"] = counter_statistic(beats)
    if any(s.instructions is not None for s in samples):
        totals = [None if s.instructions is None else s.instructions["total"] for s in samples]
        counters["instructions.total"] = counter_statistic(totals)
        for k in range(segment_count):
            counters[f"instructions.segment.{k}"] = counter_statistic([segment(s.instructions, k) for s in samples])
    floats = {
        "latency_s": float_statistic([s.latency_s for s in samples]),
        "energy": float_statistic([s.energy for s in samples]),
    }
    if any(s.segment_latency_s is not None for s in samples):
        for k in range(segment_count):
            floats[f"segment_latency_s.{k}"] = float_statistic(
                [None if s.segment_latency_s is None else s.segment_latency_s[k] for s in samples]
            )
    return Statistics(counters=counters, floats=floats)
