"""The regression gate of `heliabuild compare --max-regression PERCENT` (docs/cli.md, "The regression gate").

Each compared value is of one nature:

- `estimate`: Vela's estimated cycles (per segment and in total): a compile-time figure, the same for the
  same model and options;
- `deterministic`: a measured figure whose scope repeats exactly run after run: QEMU's instruction count
  (`qemu_icount`, `-icount shift=0`: identical counts run after run, targets/qemu-mps3-an547.md) and an FVP's
  NPU cycles and AXI beats (`npu_callbacks`: the FVP models the NPU cycle-approximately, with no host timing);
- `noisy`: any other scope, which is host time (`host_wall_clock`) today and any scope heliabuild does not
  know to repeat.

By default the gate judges estimates and deterministic figures only: one regresses when its compared value
(a measured figure's median) grew by more than PERCENT, or grew from 0. A noisy figure is gated only on
request (`gate_noisy`), and then only by a statistical test that states its n and its confidence: a
percentile bootstrap interval of the ratio of the medians (new / base), from RESAMPLES resamples of each
side drawn with a fixed seed, so that the same bundles always get the same verdict. It regresses when the
whole interval lies above 1 + PERCENT/100, and it needs MIN_SAMPLES samples on each side. A figure whose
spread is flagged (heliabuild.results.figures.SPREAD_LIMIT) on either side is reported, never gated; so is a
value only one side has.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from heliabuild.results.figures import SPREAD_LIMIT, Figure
from heliabuild.results.scopes import FIGURE_SCOPES, NPU_CALLBACKS, QEMU_ICOUNT

ESTIMATE = "estimate"
DETERMINISTIC = "deterministic"
NOISY = "noisy"
DETERMINISTIC_SCOPES = (QEMU_ICOUNT, NPU_CALLBACKS)
"""The scopes whose figures repeat exactly (module docstring)."""

DEFAULT_CONFIDENCE = 0.95
RESAMPLES = 2000
SEED = 0
MIN_SAMPLES = 5
"""The fewest samples a side of a noisy figure needs to be gated: fewer give a bootstrap interval of the
median that says little (with 3, a resampled median takes at most 3 values)."""
_CHUNK_ELEMENTS = 1 << 22
"""The most resampled values held at once (32 MiB of float64): larger runs are resampled in chunks."""


def scope_of(name: str, scopes: dict[str, Any]) -> str | None:
    """The scope that measured figure `name` (`cycles.total`, `segment_latency_s.2`, ...) of a bundle with
    `scopes` (its result.json's)."""
    field = name.partition(".")[0]
    return scopes.get(FIGURE_SCOPES.get(field, field))


def nature_of(scope: str | None) -> str:
    """The nature of a figure measured in `scope`: deterministic or noisy (module docstring)."""
    return DETERMINISTIC if scope in DETERMINISTIC_SCOPES else NOISY


@dataclass(frozen=True)
class Interval:
    """A percentile bootstrap interval of the ratio of the medians, new / base (module docstring)."""

    confidence: float
    low: float
    high: float
    base_count: int
    new_count: int
    resamples: int
    seed: int

    def text(self) -> str:
        return (
            f"{100 * self.confidence:g}% bootstrap interval of the median ratio new/base "
            f"{self.low:.4f}..{self.high:.4f}, n={self.base_count} base and {self.new_count} new, "
            f"{self.resamples} resamples, seed {self.seed}"
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "method": "bootstrap percentile interval of the median ratio new/base",
            "confidence": self.confidence,
            "low": self.low,
            "high": self.high,
            "base_count": self.base_count,
            "new_count": self.new_count,
            "resamples": self.resamples,
            "seed": self.seed,
        }


def _resampled_medians(values: Sequence[float], count: int, raw: Any) -> Any:
    """The medians of `count` resamples (with replacement) of `values`, indices taken from the uint64 words
    `raw` (count * len(values) of them)."""
    import numpy as np

    data = np.asarray(values, dtype=np.float64)
    indices = (raw % np.uint64(len(data))).astype(np.intp).reshape(count, len(data))
    return np.median(data[indices], axis=1)


def median_ratio_interval(
    base: Sequence[float],
    new: Sequence[float],
    confidence: float = DEFAULT_CONFIDENCE,
    *,
    resamples: int = RESAMPLES,
    seed: int = SEED,
) -> Interval:
    """The bootstrap interval of median(new) / median(base) at `confidence`, over `resamples` resamples of
    each side. The resample indices come from numpy's PCG64 bit generator seeded with `seed`: its docstring
    guarantees that a fixed seed always produces the same integer stream, across numpy versions (numpy's
    random compatibility policy gives Generator's methods no such promise), so the interval is a function of
    its arguments. Every base value must be above 0 and both sides non-empty."""
    import numpy as np

    if not base or not new or min(base) <= 0:
        raise ValueError("a median ratio needs samples on both sides and base values above 0")
    bits = np.random.PCG64(seed)
    ratios = np.empty(resamples, dtype=np.float64)
    chunk = max(1, _CHUNK_ELEMENTS // max(len(base), len(new)))
    for start in range(0, resamples, chunk):
        count = min(chunk, resamples - start)
        base_medians = _resampled_medians(base, count, bits.random_raw(count * len(base)))
        new_medians = _resampled_medians(new, count, bits.random_raw(count * len(new)))
        ratios[start : start + count] = new_medians / base_medians
    tail = (1.0 - confidence) / 2
    low, high = np.quantile(ratios, [tail, 1.0 - tail])
    return Interval(
        confidence=confidence,
        low=float(low),
        high=float(high),
        base_count=len(base),
        new_count=len(new),
        resamples=resamples,
        seed=seed,
    )


@dataclass(frozen=True)
class Judgement:
    """The gate's decision on one compared value: whether it was gated, and if so whether it regressed; why
    not, when it was not; and for a noisy figure the interval that decided."""

    name: str
    nature: str
    scope: str | None
    gated: bool
    regressed: bool
    percent: float | None
    reason: str | None = None
    interval: Interval | None = None

    def text(self) -> str:
        """One line: `name: +20.00%` and how it was judged."""
        percent = "-" if self.percent is None else f"{self.percent:+.2f}%"
        if not self.gated:
            return f"{self.name}: {percent}, not gated: {self.reason}"
        how = self.nature if self.interval is None else f"{self.nature}: {self.interval.text()}"
        return f"{self.name}: {percent} ({how})"

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "nature": self.nature,
            "scope": self.scope,
            "gated": self.gated,
            "regressed": self.regressed,
            "percent": self.percent,
            "reason": self.reason,
            "interval": None if self.interval is None else self.interval.to_json(),
        }


def _grew(base: float, new: float, limit: float) -> bool:
    """Whether `new` exceeds `base` by more than `limit` percent (or grew from 0)."""
    if base == 0:
        return new > 0
    return 100.0 * (new - base) / abs(base) > limit


def _percent(base: float | None, new: float | None) -> float | None:
    if base is None or new is None or base == 0:
        return None
    return 100.0 * (new - base) / abs(base)


def judge_estimate(name: str, base: float | None, new: float | None, limit: float) -> Judgement:
    """An estimate is gated whenever both sides have it."""
    percent = _percent(base, new)
    if base is None or new is None:
        return Judgement(name, ESTIMATE, None, False, False, percent, "only one side has it")
    return Judgement(name, ESTIMATE, None, True, _grew(base, new, limit), percent)


def _spread_reason(base: Figure, new: Figure) -> str | None:
    flagged = [(side, figure) for side, figure in (("base", base), ("new", new)) if figure.unsteady]
    if not flagged:
        return None
    shares = ", ".join(f"{100 * (figure.spread_fraction or 0):.1f}% on {side}" for side, figure in flagged)
    return f"spread (max - min) above {100 * SPREAD_LIMIT:g}% of the median: {shares}"


def judge_measured(
    name: str,
    base: Figure | None,
    new: Figure | None,
    scopes: tuple[str | None, str | None],
    values: tuple[Sequence[float] | None, Sequence[float] | None],
    limit: float,
    *,
    gate_noisy: bool = False,
    confidence: float = DEFAULT_CONFIDENCE,
) -> Judgement:
    """A measured figure (module docstring): `scopes` and `values` are each side's scope of it and its
    per-sample values."""
    scope, new_scope = scopes
    nature = nature_of(scope)
    base_median = None if base is None else base.median
    new_median = None if new is None else new.median
    percent = _percent(base_median, new_median)

    def not_gated(reason: str) -> Judgement:
        return Judgement(name, nature, scope, False, False, percent, reason)

    if base is None or new is None or base_median is None or new_median is None:
        return not_gated("only one side has it")
    if scope != new_scope:
        return not_gated(f"measured in another scope on each side ({scope} and {new_scope})")
    spread = _spread_reason(base, new)
    if spread is not None:
        return not_gated(spread)
    if nature == DETERMINISTIC:
        return Judgement(name, nature, scope, True, _grew(base_median, new_median, limit), percent)
    if not gate_noisy:
        return not_gated(f"{scope}, a noisy scope: gated only with --gate-noisy")
    base_values, new_values = values
    if base_values is None or new_values is None:
        return not_gated("the samples do not hold its values")
    fewest = min(len(base_values), len(new_values))
    if fewest < MIN_SAMPLES:
        return not_gated(
            f"n={len(base_values)} base and {len(new_values)} new; the bootstrap test needs {MIN_SAMPLES} on each side"
        )
    if min(base_values) <= 0:
        return not_gated("a base sample of 0 or below: no median ratio")
    interval = median_ratio_interval(base_values, new_values, confidence)
    regressed = interval.low > 1.0 + limit / 100.0
    return Judgement(name, nature, scope, True, regressed, percent, interval=interval)
