"""Statistics reproduce their samples exactly: counters as exact rationals, latency/energy as floats."""

from __future__ import annotations

import math
import statistics
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from heliabuild.errors import ResultError
from heliabuild.results.bundle import Sample
from heliabuild.results.statistics import (
    CounterStatistic,
    FloatStatistic,
    Statistics,
    compute_statistics,
    counter_statistic,
    float_statistic,
    median,
)

integers = st.lists(st.integers(min_value=-(10**15), max_value=10**15), min_size=1, max_size=30)


@settings(max_examples=200, deadline=None)
@given(integers)
def test_counter_statistics_reproduce_their_samples_exactly(values: list[int]) -> None:
    statistic = counter_statistic(values)
    assert statistic is not None
    n = len(values)
    mean = sum(Fraction(v) for v in values) / n
    variance = sum((Fraction(v) - mean) ** 2 for v in values) / n
    assert (statistic.count, statistic.sum, statistic.min, statistic.max) == (n, sum(values), min(values), max(values))
    assert statistic.mean == mean and statistic.variance == variance
    assert math.gcd(statistic.mean.numerator, statistic.mean.denominator) == 1
    assert math.gcd(statistic.variance.numerator, statistic.variance.denominator) == 1
    assert statistic.std_approx == math.sqrt(float(variance))
    assert statistic.mean * n == sum(values)
    assert CounterStatistic.from_json(statistic.to_json(), "s") == statistic


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(min_value=0, max_value=10**9), min_size=1, max_size=20))
def test_float_statistics_of_integer_samples(values: list[int]) -> None:
    statistic = float_statistic([v / 1000 for v in values])
    assert statistic is not None
    reals = [v / 1000 for v in values]
    assert statistic.count == len(values) and statistic.min == min(reals) and statistic.max == max(reals)
    exact_mean = Fraction(sum(values), 1000 * len(values))
    assert math.isclose(statistic.mean, float(exact_mean), rel_tol=1e-12, abs_tol=1e-12)
    assert statistic.variance >= 0 and statistic.std == math.sqrt(statistic.variance)
    assert FloatStatistic.from_json(statistic.to_json(), "s") == statistic


@settings(max_examples=50, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 10**6), st.integers(0, 10**6)), min_size=1, max_size=8))
def test_statistics_json_round_trip(pairs: list[tuple[int, int]]) -> None:
    samples = [
        Sample(index=i, cycles={"total": a + b, "segments": [a, b]}, latency_s=a / 7, energy=None)
        for i, (a, b) in enumerate(pairs)
    ]
    statistics = compute_statistics(samples, 2)
    assert Statistics.from_json(statistics.to_json(), "s") == statistics
    assert statistics.counters["cycles.segment.1"].sum == sum(b for _, b in pairs)
    assert statistics.floats["energy"] is None and statistics.counters["traffic_beats"] is None


def test_missing_metric_makes_the_statistic_unavailable() -> None:
    assert counter_statistic([1, None, 3]) is None
    assert float_statistic([0.5, None]) is None
    assert counter_statistic([]) is None


def test_one_sample_has_zero_deviation() -> None:
    counter = counter_statistic([7])
    real = float_statistic([0.1])
    assert counter is not None and counter.variance == 0 and counter.std_approx == 0.0 and counter.mean == 7
    assert real is not None and real.variance == 0.0 and real.std == 0.0 and real.mean == 0.1


def test_mean_is_in_lowest_terms() -> None:
    counter = counter_statistic([1, 2, 2, 3, 4, 6])
    assert counter is not None
    assert counter.to_json()["mean"] == {"numerator": 3, "denominator": 1}
    assert counter.to_json()["variance"] == {"numerator": 8, "denominator": 3}


def test_fraction_not_in_lowest_terms_is_refused() -> None:
    document = counter_statistic([1, 2]).to_json()
    document["mean"] = {"numerator": 6, "denominator": 4}
    with pytest.raises(ResultError, match=r"s\.mean: 6/4 is not in lowest terms"):
        CounterStatistic.from_json(document, "s")


@settings(max_examples=200)
@given(
    st.one_of(
        st.lists(st.integers(-(1 << 40), 1 << 40), min_size=1, max_size=9),
        st.lists(st.floats(allow_nan=False, allow_infinity=False, width=32), min_size=1, max_size=9),
    )
)
def test_the_median_is_the_standard_librarys(values: list[float]) -> None:
    """The summary table's median (heliabuild's own, so a no-op build need not import `statistics`) is
    statistics.median's, to the bit."""
    assert median(values) == statistics.median(values)
    assert type(median(values)) is type(statistics.median(values))
