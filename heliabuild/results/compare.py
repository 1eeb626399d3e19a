"""`heliabuild compare BASE NEW`: two result bundles, or two Vela outputs' segments.json, side by side.

Each side is read and checked first: a bundle (its folder or its result.json) with
heliabuild.results.reader.load_result, which verifies it; a segments.json as a bounded JSON document
validated against its schema. Both sides must be of one kind.

The comparison holds, in this order:

- the options that differ: `backend`, `runtime`, `fences` and `policy.<key>` of a bundle, with
  `accelerator`, `system_config`, `memory_mode` and `vela_version` from its `vela` record; the same four
  and `fences` of a segments.json. An option a side does not record is None (`-`); only options whose two
  values differ are listed.
- the outcome (bundles): each side's verification verdict and input source (heliabuild.results.verdict);
- the estimates: Vela's estimated cycles per segment (a bundle's `segments[].estimated_cycles`, a
  segments.json's `segments[].op_cycles`) and their total, paired by operator range;
- the memory: Vela's SRAM and off-chip flash allocation of the compiled model, in KiB (a segments.json's,
  or a bundle's `vela` record, read from its runner's segments.json; `-` where a side does not record it):
  Vela's compile-time figures, shown, not counted by `max_regression`;
- the measurements (bundles only): every known measured figure (heliabuild.results.figures), with its
  median, mean, min, max and spread on each side, paired by name. Estimates and measurements are never in
  one table.

Each pair has a delta (new - base) and a percent (100 * delta / base; None when the base is 0 or a side
lacks the figure). The compared value of a measured figure is its median.

Two segment layouts (operator ranges) are compared by the totals and by the segments that line up (the
same operator range on both sides): estimates are paired by range, and so are per-segment measured figures,
named `<figure>[ops a..b]` (`instructions.segment[ops 7..8]`); a segment of one side only is shown with `-`
on the other. Two sides are not comparable when they are of another model: with one layout, a bundle's
`run_identity.model_sha256` (or a segments.json's `source_sha256`, or its `model_sha256` without one)
differs; with two, whose fenced models differ by their fences anyway, the segments.json's `source_sha256`
differ, or else the operators the layouts cover. Not comparable is a CompareError unless `force` is given;
then the refusals are listed and the comparison goes on.

With `max_regression` (a percent), the gate (heliabuild.results.gate) judges every compared value: Vela's
estimates and the deterministic measured figures (QEMU instructions, FVP NPU cycles and beats) regress
when they grew by more than that percent, or grew from 0; noisy figures (host time) only with `gate_noisy`,
by a bootstrap test; a figure whose spread is flagged is reported, never gated. Every figure counts as a
cost: cycles, instructions, latency, traffic and energy all regress when they grow.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from heliabuild.errors import ResultError
from heliabuild.results.figures import Figure, figure_values, measured_figures, segment_figure
from heliabuild.results.gate import DEFAULT_CONFIDENCE, Judgement, judge_estimate, judge_measured, scope_of
from heliabuild.results.verdict import input_source, verdict

FORMATS = ("text", "md", "json")
BUNDLE = "bundle"
SEGMENTS = "segments"
_KIND_NAMES = {BUNDLE: "a result bundle", SEGMENTS: "a Vela segments.json"}
MEMORY_FIGURES = ("sram_memory_used_kib", "off_chip_flash_memory_used_kib")
"""Vela's memory use of the compiled model, as a segments.json records it (absent from an older one)."""
_VELA_OPTIONS = (
    ("accelerator", "accelerator"),
    ("system_config", "system_config"),
    ("memory_mode", "memory_mode"),
    ("vela_version", "version"),
)
"""The options a comparison reads from Vela's record (a segments.json's or a bundle's `vela`): name, key."""


OUTCOME = ("verification", "inputs")
"""The outcome rows of two bundles: the verification verdict and the input source."""


class CompareError(ResultError):
    """Two inputs `compare` cannot compare: of two kinds, of another model or another segment layout."""


@dataclass(frozen=True)
class Side:
    """What one input of a comparison gives."""

    path: Path
    kind: str
    model_sha256: str | None
    ranges: tuple[tuple[int, int], ...]
    estimates: tuple[int | None, ...]
    options: dict[str, str | None]
    figures: tuple[Figure, ...] = ()
    memory: dict[str, float | None] = field(default_factory=dict)
    outcome: dict[str, str] = field(default_factory=dict)
    """A bundle's verification verdict and input source (heliabuild.results.verdict), by name."""
    scopes: dict[str, Any] = field(default_factory=dict)
    """A bundle's `scopes`: how each figure was measured (heliabuild.results.gate.scope_of)."""
    values: dict[str, tuple[float, ...] | None] = field(default_factory=dict)
    """Each figure's value in every sample, by figure name (for the gate's statistical test)."""
    source_sha256: str | None = None
    """The unfenced model a segments.json's fenced model was cut from, when it records it."""

    def range_of(self, name: str) -> tuple[int, int] | None:
        """The operator range of per-segment figure `name` (`instructions.segment.2`), or None."""
        located = segment_figure(name)
        if located is None or located[1] >= len(self.ranges):
            return None
        return self.ranges[located[1]]


@dataclass(frozen=True)
class Pair:
    """One compared value: `base` and `new` (None where the side lacks it), their delta and percent."""

    name: str
    base: float | None
    new: float | None

    @property
    def delta(self) -> float | None:
        return None if self.base is None or self.new is None else self.new - self.base

    @property
    def percent(self) -> float | None:
        delta = self.delta
        if delta is None or self.base == 0:
            return None
        assert self.base is not None
        return 100.0 * delta / abs(self.base)

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "base": self.base, "new": self.new, "delta": self.delta, "percent": self.percent}


@dataclass(frozen=True)
class Comparison:
    """The comparison of `base` and `new` (module docstring)."""

    base: Side
    new: Side
    refusals: tuple[str, ...]
    options: tuple[tuple[str, str | None, str | None], ...]
    estimates: tuple[Pair, ...]
    measurements: tuple[tuple[str, Figure | None, Figure | None], ...]
    memory: tuple[Pair, ...] = ()
    max_regression: float | None = None
    regressions: tuple[Pair, ...] = ()
    layout: str | None = None
    """The note on two segment layouts (compared by the totals and the segments that line up), or None."""
    judgements: tuple[Judgement, ...] = ()
    """The gate's decision on each compared value (heliabuild.results.gate), with `max_regression`."""
    gate_noisy: bool = False
    confidence: float = DEFAULT_CONFIDENCE

    def measured_pairs(self) -> list[Pair]:
        """Each measured figure's medians as a Pair."""
        return [
            Pair(name, None if base is None else base.median, None if new is None else new.median)
            for name, base, new in self.measurements
        ]

    def to_json(self) -> dict[str, Any]:
        def figure(value: Figure | None) -> dict[str, Any] | None:
            return None if value is None else value.to_json()

        return {
            "base": {"path": str(self.base.path), "kind": self.base.kind, "model_sha256": self.base.model_sha256},
            "new": {"path": str(self.new.path), "kind": self.new.kind, "model_sha256": self.new.model_sha256},
            "comparable": not self.refusals,
            "refusals": list(self.refusals),
            "options": [{"name": name, "base": base, "new": new} for name, base, new in self.options],
            "estimates": [pair.to_json() for pair in self.estimates],
            "memory": [pair.to_json() for pair in self.memory],
            "measurements": [
                {
                    "name": pair.name,
                    "base": figure(base),
                    "new": figure(new),
                    "delta": pair.delta,
                    "percent": pair.percent,
                }
                for pair, (_, base, new) in zip(self.measured_pairs(), self.measurements, strict=True)
            ],
            "max_regression": self.max_regression,
            "regressions": [pair.to_json() for pair in self.regressions],
            "layout": self.layout,
            "gate": {
                "noisy": self.gate_noisy,
                "confidence": self.confidence if self.gate_noisy else None,
                "judgements": [judgement.to_json() for judgement in self.judgements],
            },
            "outcome": [
                {"name": name, "base": self.base.outcome.get(name), "new": self.new.outcome.get(name)}
                for name in OUTCOME
                if name in self.base.outcome or name in self.new.outcome
            ],
        }


def _range_name(start: int, end: int) -> str:
    return f"ops {start}..{end}"


def _fences(ranges: tuple[tuple[int, int], ...]) -> str:
    return ",".join(str(end) for _, end in ranges[:-1]) or "none"


def _option_text(value: Any) -> str | None:
    if value is None:
        return None
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True)


def _bundle_side(path: Path) -> Side:
    from heliabuild.results.reader import load_result

    result = load_result(path)
    identity = result.document["run_identity"]
    ranges = tuple((s["op_range_start"], s["op_range_end"]) for s in result.segments)
    options: dict[str, str | None] = {
        "backend": identity["backend"],
        "runtime": result.runtime,
        "fences": _fences(ranges),
    }
    vela = result.vela or {}
    options.update({name: vela.get(key) for name, key in _VELA_OPTIONS})
    for key, value in sorted(identity["policy"].items()):
        options[f"policy.{key}"] = _option_text(value)
    return Side(
        path=result.path,
        kind=BUNDLE,
        model_sha256=identity["model_sha256"],
        ranges=ranges,
        estimates=tuple(s["estimated_cycles"] for s in result.segments),
        options=options,
        figures=(figures := tuple(measured_figures(result))),
        memory={name: vela.get(name) for name in MEMORY_FIGURES} if vela else {},
        outcome={"verification": verdict(identity, result.samples).text(), "inputs": input_source(identity)}
        if result.executed
        else {},
        scopes=dict(result.document.get("scopes") or {}),
        values=figure_values(result, [figure.name for figure in figures]),
    )


def _segments_side(path: Path) -> Side:
    from heliabuild.vela.segments import read_segments_document

    document = read_segments_document(path, error=CompareError)
    vela = document["vela"]
    ranges = tuple((s["op_range_start"], s["op_range_end"]) for s in document["segments"])
    return Side(
        path=path,
        kind=SEGMENTS,
        model_sha256=document.get("source_sha256") or document["model_sha256"],
        ranges=ranges,
        estimates=tuple(s["op_cycles"] for s in document["segments"]),
        options={**{name: vela[key] for name, key in _VELA_OPTIONS}, "fences": _fences(ranges)},
        memory={name: vela.get(name) for name in MEMORY_FIGURES},
        source_sha256=document.get("source_sha256"),
    )


def read_side(path: str | os.PathLike[str]) -> Side:
    """One input: a bundle folder or result.json (verified), or a segments.json; CompareError for anything
    else."""
    given = Path(path)
    if given.is_dir() or given.name == "result.json":
        return _bundle_side(given)
    if given.suffix == ".json":
        return _segments_side(given)
    raise CompareError(
        f"{given}: not a result bundle (a folder or its result.json) nor a Vela segments.json",
        hint="compare two bundles, e.g. results/kws.previous results/kws, or two <stem>_segments.json",
    )


def _refusals(base: Side, new: Side) -> list[str]:
    """Why the two sides are of another model. With one segment layout, their model hashes differ. With
    two, the fenced models differ by their fences anyway: the source models' hashes differ (segments.json
    that record them), or else the operators the layouts cover."""
    if base.ranges == new.ranges:
        if base.model_sha256 == new.model_sha256:
            return []
        return [
            f"another model: {base.path} is of model sha256 {base.model_sha256}, "
            f"{new.path} of model sha256 {new.model_sha256}"
        ]
    if base.source_sha256 is not None and new.source_sha256 is not None:
        if base.source_sha256 == new.source_sha256:
            return []
        return [
            f"another model: {base.path} was cut from model sha256 {base.source_sha256}, "
            f"{new.path} from model sha256 {new.source_sha256}"
        ]
    covered = [_range_name(side.ranges[0][0], side.ranges[-1][1]) if side.ranges else "none" for side in (base, new)]
    if covered[0] != covered[1]:
        return [f"another model: {base.path} covers {covered[0]}, {new.path} covers {covered[1]}"]
    return []


def _layout(base: Side, new: Side) -> str | None:
    """The note on two segment layouts (None for one): both, and the segments that line up."""
    if base.ranges == new.ranges:
        return None
    shown = [", ".join(_range_name(*r) for r in side.ranges) or "none" for side in (base, new)]
    aligned = ", ".join(_range_name(*r) for r in base.ranges if r in new.ranges) or "none"
    return (
        f"another segment layout: {base.path} has {shown[0]}, {new.path} has {shown[1]}; compared by the totals "
        f"and the segments that line up ({aligned})"
    )


def _measurement_rows(base: Side, new: Side) -> list[tuple[str, Figure | None, Figure | None]]:
    """Each measured figure of either side with its counterpart: by name, or, for a per-segment figure of two
    segment layouts, by operator range, named `<figure>[ops a..b]` (`instructions.segment[ops 7..8]`)."""
    rows: dict[Any, list[Any]] = {}
    for position, side in enumerate((base, new)):
        for figure in side.figures:
            key: Any = figure.name
            label = figure.name
            where = side.range_of(figure.name) if base.ranges != new.ranges else None
            if where is not None:
                key = (figure.name.rpartition(".")[0], where)
                label = f"{key[0]}[{_range_name(*where)}]"
            rows.setdefault(key, [label, None, None])[1 + position] = figure
    return [(label, before, after) for label, before, after in rows.values()]


def _estimate_pairs(base: Side, new: Side) -> list[Pair]:
    """One Pair per operator range of either side (in order of the range), then the total where both sides
    know every segment's estimate."""
    by_range = [dict(zip(side.ranges, side.estimates, strict=True)) for side in (base, new)]
    pairs = [
        Pair(_range_name(*key), _real(by_range[0].get(key)), _real(by_range[1].get(key)))
        for key in sorted(set(by_range[0]) | set(by_range[1]))
    ]
    totals = [
        None if None in side.estimates else sum(e for e in side.estimates if e is not None) for side in (base, new)
    ]
    if base.estimates or new.estimates:
        pairs.append(Pair("total", _real(totals[0]), _real(totals[1])))
    return pairs


def _real(value: int | None) -> float | None:
    return None if value is None else float(value)


def compare(
    base_path: str | os.PathLike[str],
    new_path: str | os.PathLike[str],
    *,
    force: bool = False,
    max_regression: float | None = None,
    gate_noisy: bool = False,
    confidence: float = DEFAULT_CONFIDENCE,
) -> Comparison:
    """Compare the two inputs (module docstring). Raises CompareError for inputs of two kinds, and, unless
    `force`, for two that are not comparable, naming both paths and what differs. `gate_noisy` (with
    `max_regression`) also gates noisy figures, with the bootstrap test at `confidence`
    (heliabuild.results.gate)."""
    if gate_noisy and max_regression is None:
        raise CompareError("--gate-noisy gates with --max-regression PERCENT; give both")
    if not 0.5 <= confidence < 1:
        raise CompareError(f"--confidence: found {confidence!r}, expected a fraction from 0.5 to below 1, e.g. 0.95")
    base, new = read_side(base_path), read_side(new_path)
    if base.kind != new.kind:
        raise CompareError(
            f"{base.path} is {_KIND_NAMES[base.kind]} and {new.path} {_KIND_NAMES[new.kind]}; compare two of one kind",
        )
    refusals = _refusals(base, new)
    if refusals and not force:
        raise CompareError(f"not comparable: {refusals[0]}", hint="--force compares them anyway")
    names = {name: None for name in [*base.options, *new.options]}
    options = tuple(
        (name, base.options.get(name), new.options.get(name))
        for name in names
        if base.options.get(name) != new.options.get(name)
    )
    measurements = tuple(_measurement_rows(base, new))
    comparison = Comparison(
        base=base,
        new=new,
        refusals=tuple(refusals),
        options=options,
        estimates=tuple(_estimate_pairs(base, new)),
        measurements=measurements,
        memory=tuple(Pair(name, base.memory.get(name), new.memory.get(name)) for name in new.memory or base.memory),
        max_regression=max_regression,
        layout=_layout(base, new),
        gate_noisy=gate_noisy,
        confidence=confidence,
    )
    if max_regression is None:
        return comparison
    judged = [(pair, judge_estimate(pair.name, pair.base, pair.new, max_regression)) for pair in comparison.estimates]
    for pair, (_, before, after) in zip(comparison.measured_pairs(), measurements, strict=True):
        sides = ((base, before), (new, after))
        scopes = tuple(None if figure is None else scope_of(figure.name, side.scopes) for side, figure in sides)
        values = tuple(None if figure is None else side.values.get(figure.name) for side, figure in sides)
        judgement = judge_measured(
            pair.name,
            before,
            after,
            (scopes[0], scopes[1]),
            (values[0], values[1]),
            max_regression,
            gate_noisy=gate_noisy,
            confidence=confidence,
        )
        judged.append((pair, judgement))
    return replace(
        comparison,
        judgements=tuple(judgement for _, judgement in judged),
        regressions=tuple(pair for pair, judgement in judged if judgement.regressed),
    )
