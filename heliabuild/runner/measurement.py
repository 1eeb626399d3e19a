"""What one run of a runner measured, before the bundle is written (heliabuild.runner.lifecycle)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Measurement:
    """What one run produced before it is written: the lifecycle it ran, per-sample figures (as
    heliabuild.results.bundle.Sample keywords) and output bytes, the segments, and what the figures count."""

    state: str
    warmup_invokes: int
    measured_invokes: int
    initialization: str
    call_once_present: bool | None
    figures: list[dict[str, Any]]
    outputs: list[list[tuple[str, bytes]]]
    segments: list[dict[str, Any]]
    scopes: dict[str, Any]
    provider_versions: dict[str, str | None] = field(default_factory=dict)
