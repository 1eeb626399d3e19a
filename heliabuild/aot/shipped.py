"""heliabuild's own platform table as the SConscripts read it: raw entries, names and the default platform.

While the SConscripts are read, every pipeline asks for a default platform and the AOT emitter for a
platform's entry; these readers take the target table's platforms (heliabuild.targets) as they are,
unvalidated by the schema and without the records of heliabuild.aot.platforms (whose import alone would cost
a small project's no-op build more than the reading does). The stage that plans for a platform loads the
validated table (get_platform), so a broken table is still refused before anything is planned with it.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache
from typing import Any

from heliabuild.errors import HeliaError
from heliabuild.targets import table

DEFAULT_PLATFORM = "corstone300_ethos_u55"
"""The platform a plan of Vela's output is for when none is named (SCons's HELIA_AOT_PLATFORM, the CLI's)."""


class PlatformError(HeliaError):
    """An unknown platform name, or a platform table that breaks its rules."""


def platform_entries() -> Mapping[str, Any]:
    """The shipped table's platforms by name, read once per process, unvalidated by the schema; only read."""
    return table().platforms


def platform_names() -> list[str]:
    """The names in heliabuild's own table."""
    return sorted(platform_entries())


def default_platform(accelerator: str | None) -> str:
    """The platform to plan for when none is named: DEFAULT_PLATFORM when its NPU runs `accelerator` (or
    `accelerator` is None), else the first platform of heliabuild's table (by name) whose NPU does, else
    DEFAULT_PLATFORM (whose plan then names the mismatch)."""
    if accelerator is None:
        return DEFAULT_PLATFORM
    runs = _shipped_npus()
    if accelerator in runs.get(DEFAULT_PLATFORM, ()):
        return DEFAULT_PLATFORM
    return next((name for name, npus in sorted(runs.items()) if accelerator in npus), DEFAULT_PLATFORM)


@cache
def _shipped_npus() -> dict[str, tuple[str, ...]]:
    """Each platform's `npu` list as accelerator configurations (`ethos-u55-128`)."""
    return {
        name: tuple(f"{product}-{macs}" for product, configs in npu.items() for macs in configs)
        for name, entry in platform_entries().items()
        if isinstance(entry, dict) and isinstance(npu := entry.get("npu", {}), dict)
    }
