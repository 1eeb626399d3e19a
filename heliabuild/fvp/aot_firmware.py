"""The facts of the fvp backend's second firmware: heliabuild's own AOT firmware of Vela's output, built for a
Corstone FVP with the user's Ethos-U core driver (docs/runner.md, "The AOT firmware"; docs/firmware.md,
"Corstone-300 and the Ethos-U driver"). heliabuild.runner.backends.fvp_aot builds and measures it.

- where it is built for (`check_platform`: Corstone-300, its U55 and U65 FVPs; Corstone-310 and 320 are refused
  by name, their memory maps and peripheral addresses not being among the facts it was written from), its files
  in the runner folder, and how many PMU events it counts per NPU;
- `sample_figures(counters, npu)`: a sample's figures from its per-segment PMU counts.

runner.json's `fvp.firmware.source` is `heliabuild-aot` (the prebuilt runner's is `mlia-ethos-u`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from heliabuild.errors import FvpError
from heliabuild.targets import table

SOURCE = "heliabuild-aot"
"""runner.json's `fvp.firmware.source` for heliabuild's AOT firmware."""
(_MACHINE,) = table().fvp_firmware_machines()
TARGET = _MACHINE.name
PLATFORMS = (_MACHINE.fvp_platform,)
ELF_FILE = "fvp/firmware.elf"
LAYOUT_FILE = "fvp/firmware_layout.json"
PREFIX = "model"
EVENTS = {"ethos-u55": 4, "ethos-u65": 4, "ethos-u85": 5}
"""How many PMU events helia_ethosu.c counts per NPU: NPU_ACTIVE first, then the beats."""


def check_platform(platform: str, source: str) -> None:
    """FvpError for an FVP platform (`corstone-310`) the AOT firmware is not built for (module docstring)."""
    if platform not in PLATFORMS:
        raise FvpError(
            f"{source}: heliabuild's AOT firmware is built for {', '.join(PLATFORMS)} only; {platform}'s memory "
            "map and peripheral addresses are not among the facts it was written from",
            hint="use the prebuilt runner (HELIA_FVP_FIRMWARE='prebuilt', the default) on this target",
        )


def sample_figures(counters: Sequence[Any]) -> dict[str, Any]:
    """A sample's figures from its per-segment counters (heliabuild.firmware.protocol.SegmentCounters), merged
    as the prebuilt runner's jobs are (heliabuild.fvp.counters.sample_figures): `cycles` the NPU active cycles
    per segment and their total, `segment_traffic_beats` each segment's beats (U55/U65: AXI0 read and write,
    AXI1 read; U85: SRAM and external read and write), `traffic_beats` their sum. A counter that overflowed in
    any segment makes the sample's counts null and flags `sanity.counter_overflow`: a wrapped count is never
    published."""
    from heliabuild.fvp import counters as merge
    from heliabuild.fvp.log import JobCounters

    jobs = [
        JobCounters(
            cycles=None if segment.overflow else int(segment.counts[0]),
            traffic_beats=None if segment.overflow else int(sum(segment.counts[1:])),
            overflow=segment.overflow,
            metrics={},
        )
        for segment in counters
    ]
    return merge.sample_figures(jobs)
