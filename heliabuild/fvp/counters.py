"""Merging the per-segment jobs of one sample into its figures.

The prebuilt runner reports whole-inference counters, so the fvp backend runs one job per segment and merges
them: `sample_figures(jobs)` gives `cycles` `{"total": sum, "segments": [NPU ACTIVE per segment]}`,
`segment_traffic_beats` each segment's AXI beats, `traffic_beats` their sum, and `sanity.counter_overflow`.
When any segment's counters may have wrapped (heliabuild.fvp.log.JobCounters.overflow) the sample's `cycles`
and beats are null and `counter_overflow` is true: a possibly wrapped count is never published. CPU cycles
are not reported (the FVP's CPU timing is not meaningful). A sample has no outputs (the runner prints none),
so `outputs_finite` holds vacuously.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from heliabuild.fvp.log import JobCounters


def sample_figures(jobs: Sequence[JobCounters]) -> dict[str, Any]:
    """The figures of one sample (heliabuild.results.bundle.Sample keywords) from its jobs, segment order."""
    overflow = any(job.overflow for job in jobs)
    cycles = None
    beats = None
    if not overflow:
        segments = [int(job.cycles) for job in jobs if job.cycles is not None]
        cycles = {"total": sum(segments), "segments": segments}
        beats = [int(job.traffic_beats) for job in jobs if job.traffic_beats is not None]
    return {
        "cycles": cycles,
        "traffic_beats": None if beats is None else sum(beats),
        "segment_traffic_beats": beats,
        "sanity": {"outputs_finite": True, "counter_overflow": overflow},
    }


def segment_beats(jobs: Sequence[JobCounters]) -> list[int | None]:
    """Each segment's AXI beats (None where its counters may have wrapped)."""
    return [job.traffic_beats for job in jobs]
