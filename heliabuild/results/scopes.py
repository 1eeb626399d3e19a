"""The scope rule (docs/runner.md, "Scopes"): a sample's figure is non-null only where the result's `scopes`
name how it was measured, and a scope is only one the result's backend measures with. So on `qemu-m55` and
`litert` `cycles` is null (neither counts a cycle: Vela's estimate stays in `segments[].estimated_cycles`), and
`latency_s` is null wherever no clock measured it. Enforced by the writer (heliabuild.results.bundle) and the
reader (heliabuild.results.reader), on every bundle, whoever wrote it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from heliabuild.results.layout import Sample

HOST_WALL_CLOCK = "host_wall_clock"
QEMU_ICOUNT = "qemu_icount"
NPU_CALLBACKS = "npu_callbacks"

MEASURED_BY: dict[str, dict[str, str]] = {
    "litert": {"latency_s": HOST_WALL_CLOCK, "segment_latency_s": HOST_WALL_CLOCK},
    "qemu-m55": {"instructions": QEMU_ICOUNT},
    "fvp": {"cycles": NPU_CALLBACKS, "traffic_beats": NPU_CALLBACKS},
}
"""Backend -> the scope of each figure it measures: a host clock on litert, QEMU's instruction count on
qemu-m55, the NPU's PMU counters within the driver's callbacks on an FVP. No backend measures energy or
utilization."""

FIGURE_SCOPES = {
    "cycles": "cycles",
    "instructions": "instructions",
    "latency_s": "latency_s",
    "segment_latency_s": "segment_latency_s",
    "traffic_beats": "traffic_beats",
    "segment_traffic_beats": "traffic_beats",
    "energy": "energy",
    "port_utilization": "port_utilization",
    "utilization_fraction": "utilization_fraction",
}
"""A sample's figure -> the key of `scopes` that names how it was measured."""

NOT_FIGURES = ("instruction_resolution",)
"""Keys of `scopes` that qualify a figure rather than name a scope."""


def scope_problem(backend: str, scopes: Mapping[str, Any] | None, samples: Sequence[Sample]) -> str | None:
    """Why the samples of a `backend` run with `scopes` break the scope rule (`<field>: ...`, the field
    relative to result.json), or None."""
    scopes = scopes or {}
    measured = MEASURED_BY.get(backend, {})
    for key, name in sorted(scopes.items()):
        if key in NOT_FIGURES or name is None:
            continue
        if measured.get(key) != name:
            how = ", ".join(f"{k} {v}" for k, v in sorted(measured.items())) or "nothing"
            return (
                f"scopes.{key}: {name!r} is not a scope of backend {backend}, which measures {how}; a figure is "
                "non-null only where its scope names how it was measured"
            )
    for position, sample in enumerate(samples):
        for figure, key in FIGURE_SCOPES.items():
            if getattr(sample, figure) is not None and scopes.get(key) is None:
                return (
                    f"measurements.samples[{position}].{figure}: a figure with no scope (scopes.{key} is null) on "
                    f"backend {backend}; a figure is non-null only where its scope names how it was measured"
                )
    return None
