"""What one run of a runner measured, before the bundle is written: the one record every backend returns
(heliabuild.runner.backend.Backend.measure), whatever it ran on.

A figure a backend does not measure is None, never invented; `Scopes` names how each measured figure was
counted (docs/runner.md, "The bundle": `scopes`), and the bundle writer refuses a figure without a scope
(heliabuild.results.scopes).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from heliabuild.runner.verification import OutputCheck


@dataclass(frozen=True)
class Counts:
    """A counter of one sample: its total over the invoke and its value per segment (adding up to the total)."""

    total: int
    segments: tuple[int, ...]

    def to_json(self) -> dict[str, Any]:
        return {"total": self.total, "segments": list(self.segments)}

    @classmethod
    def of_segments(cls, segments: Sequence[int]) -> Counts:
        return cls(total=sum(segments), segments=tuple(segments))


@dataclass(frozen=True)
class Sanity:
    """What the host checked of a sample: its floating outputs finite; on an FVP, whether a counter wrapped."""

    outputs_finite: bool = True
    counter_overflow: bool | None = None

    def to_json(self) -> dict[str, Any]:
        document: dict[str, Any] = {"outputs_finite": self.outputs_finite}
        if self.counter_overflow is not None:
            document["counter_overflow"] = self.counter_overflow
        return document


@dataclass(frozen=True)
class Figures:
    """One measured invoke's figures (as heliabuild.results.layout.Sample holds them), each None where the
    backend does not measure it."""

    cycles: Counts | None = None
    instructions: Counts | None = None
    traffic_beats: int | None = None
    segment_traffic_beats: tuple[int, ...] | None = None
    latency_s: float | None = None
    segment_latency_s: tuple[float, ...] | None = None
    sanity: Sanity = field(default_factory=Sanity)
    verification: tuple[OutputCheck, ...] | None = None

    def sample_fields(self) -> dict[str, Any]:
        """The keywords of heliabuild.results.layout.Sample for these figures."""
        return {
            "cycles": None if self.cycles is None else self.cycles.to_json(),
            "instructions": None if self.instructions is None else self.instructions.to_json(),
            "traffic_beats": self.traffic_beats,
            "segment_traffic_beats": None if self.segment_traffic_beats is None else list(self.segment_traffic_beats),
            "latency_s": self.latency_s,
            "segment_latency_s": None if self.segment_latency_s is None else list(self.segment_latency_s),
            "sanity": self.sanity.to_json(),
            "verification": None if self.verification is None else [check.to_json() for check in self.verification],
        }


@dataclass(frozen=True)
class Scopes:
    """How a backend's figures are counted (result.json's `scopes`): a scope per figure, None where the
    backend does not measure it, and the resolution of an instruction count."""

    cycles: str | None = None
    traffic_beats: str | None = None
    instructions: str | None = None
    latency_s: str | None = None
    segment_latency_s: str | None = None
    instruction_resolution: float | None = None

    def to_json(self) -> dict[str, Any]:
        document: dict[str, Any] = {
            "cycles": self.cycles,
            "instructions": self.instructions,
            "latency_s": self.latency_s,
            "segment_latency_s": self.segment_latency_s,
            "instruction_resolution": self.instruction_resolution,
        }
        if self.traffic_beats is not None:
            document["traffic_beats"] = self.traffic_beats
        return document

    def measured(self) -> dict[str, str]:
        """Figure -> scope of each figure these scopes count (heliabuild.results.scopes.MEASURED_BY's row)."""
        named = {
            "cycles": self.cycles,
            "traffic_beats": self.traffic_beats,
            "instructions": self.instructions,
            "latency_s": self.latency_s,
            "segment_latency_s": self.segment_latency_s,
        }
        return {figure: scope for figure, scope in named.items() if scope is not None}


@dataclass(frozen=True)
class MeasuredSample:
    """One measured invoke: its figures and its outputs (name, bytes), in graph-output order (none where the
    target prints no output)."""

    figures: Figures
    outputs: tuple[tuple[str, bytes], ...] = ()


@dataclass(frozen=True)
class Measurement:
    """What one run produced before it is written: the lifecycle it ran (the receipt's counts), its samples,
    the result's segments, what the figures count, and the versions of what ran."""

    state: str
    warmup_invokes: int
    measured_invokes: int
    initialization: str
    call_once_present: bool | None
    samples: tuple[MeasuredSample, ...]
    segments: tuple[dict[str, Any], ...]
    scopes: Scopes
    provider_versions: dict[str, str | None] = field(default_factory=dict)
