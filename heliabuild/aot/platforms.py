"""The platform table: the targets the AOT plan stage plans for, as data.

The `platforms` of heliabuild's target table (`heliabuild/targets.json`, read by heliabuild.targets;
validated by `schemas/platforms.schema.json`) list each platform's CPU, capabilities (`MCU`, `DSP`, `MVE`,
`FP16`, `NPU`), for
a platform with the NPU capability the accelerator configurations its Ethos-U runs (`npu`, e.g.
`{"ethos-u55": [32, 64, 128, 256]}`: the plan stage refuses a command stream Vela compiled for another),
memories with their sizes and DMA boundaries, the memory constants are stored
in by default, the minimum alignment of a constant and, per (source,
destination) memory pair, the transfer engines (`cpu`, `dma`) that copy
between them. `heliabuild aot-plan --list-platforms` prints the table.

A `Platform` can also be built in Python (tests add a target without FP16
that way) or read from another file with `load_platforms(path)`. Memory names
match in any letter case, as the plan document compares them; the platform's
own spelling is what heliabuild writes.

The SConscripts read the shipped table through heliabuild.aot.shipped
(names, raw entries, the default platform), which needs none of these records.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from heliabuild.aot.shipped import PlatformError
from heliabuild.documents import read_json, shown
from heliabuild.targets import TABLE_FILE, shipped_platforms_document, table

if TYPE_CHECKING:
    from heliabuild.kernels.operators.admission import TargetCapabilities

SCHEMA_NAME = "platforms"
CAPABILITIES = ("DSP", "FP16", "MCU", "MVE", "NPU")
"""Every capability a platform may have: FP16 is half-precision arithmetic, NPU runs `ethos-u` command streams."""
ENGINES = ("cpu", "dma")
NPU_MACS: dict[str, tuple[int, ...]] = dict(table().npus)
"""Every Ethos-U product and the MAC configurations it comes in (an FVP's `ethosu.num_macs`; the target table's)."""


@dataclass(frozen=True)
class Memory:
    """One memory of a platform: its `name`, size in `bytes`, and the `dma_boundary` at whose multiples
    (counted from the stream pool's base) the report's pieces split a unit."""

    name: str
    bytes: int
    dma_boundary: int


@dataclass(frozen=True)
class Transfer:
    """The engines that copy from memory `source` to memory `destination`."""

    source: str
    destination: str
    engines: tuple[str, ...]


@dataclass(frozen=True)
class Platform:
    """A target: see the module docstring. `capabilities` is kept sorted; the constructor checks the
    references between fields and raises PlatformError naming the platform and the field."""

    name: str
    cpu: str
    capabilities: tuple[str, ...]
    memories: tuple[Memory, ...]
    constant_memory: str
    alignment: int = 16
    transfers: tuple[Transfer, ...] = ()
    description: str = ""
    npu: tuple[str, ...] = ()
    _by_name: dict[str, Memory] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "capabilities", tuple(sorted(set(self.capabilities))))
        object.__setattr__(self, "memories", tuple(self.memories))
        object.__setattr__(self, "transfers", tuple(self.transfers))
        object.__setattr__(self, "npu", tuple(self.npu))
        where = f"platform {shown(self.name)}"
        unknown = [c for c in self.capabilities if c not in CAPABILITIES]
        if unknown:
            raise PlatformError(
                f"{where}: capability {shown(unknown[0])} is unknown; expected some of {list(CAPABILITIES)}"
            )
        by_name: dict[str, Memory] = {}
        for memory in self.memories:
            key = memory.name.upper()
            if key in by_name:
                raise PlatformError(f"{where}: memory {shown(memory.name)} is listed twice (names match in any case)")
            if memory.bytes < 1 or memory.dma_boundary < 1:
                raise PlatformError(f"{where}: memory {shown(memory.name)} needs positive bytes and dma_boundary")
            by_name[key] = memory
        object.__setattr__(self, "_by_name", by_name)
        if self.alignment < 1 or self.alignment & (self.alignment - 1):
            raise PlatformError(f"{where}: alignment {self.alignment} is not a power of two")
        names = [m.name for m in self.memories]
        if self.constant_memory.upper() not in by_name:
            raise PlatformError(
                f"{where}: constant_memory {shown(self.constant_memory)} is not one of its memories {shown(names)}"
            )
        object.__setattr__(self, "constant_memory", by_name[self.constant_memory.upper()].name)
        seen: set[tuple[str, str]] = set()
        canonical: list[Transfer] = []
        for transfer in self.transfers:
            ends = []
            for role in ("source", "destination"):
                value = getattr(transfer, role)
                if value.upper() not in by_name:
                    raise PlatformError(
                        f"{where}: transfer {role} {shown(value)} is not one of its memories {shown(names)}"
                    )
                ends.append(by_name[value.upper()].name)
            pair = (ends[0], ends[1])
            if pair in seen:
                raise PlatformError(f"{where}: the transfer {shown(pair[0])} -> {shown(pair[1])} is listed twice")
            seen.add(pair)
            bad = [e for e in transfer.engines if e not in ENGINES]
            if bad or not transfer.engines:
                raise PlatformError(f"{where}: transfer {pair[0]} -> {pair[1]} engines {list(transfer.engines)}")
            canonical.append(Transfer(pair[0], pair[1], tuple(e for e in ENGINES if e in transfer.engines)))
        object.__setattr__(self, "transfers", tuple(canonical))
        known = [f"{product}-{macs}" for product, configs in NPU_MACS.items() for macs in configs]
        bad_npu = [config for config in self.npu if config not in known]
        if bad_npu:
            raise PlatformError(
                f"{where}: npu {shown(bad_npu[0])} is not an Ethos-U configuration; expected some of {known}"
            )
        if self.has_npu != bool(self.npu):
            raise PlatformError(
                f"{where}: npu lists {list(self.npu)} but capabilities are {list(self.capabilities)}; a platform with "
                "the NPU capability lists the accelerator configurations its NPU runs, and only such a platform does"
            )

    @property
    def supports_fp16(self) -> bool:
        return "FP16" in self.capabilities

    @property
    def has_npu(self) -> bool:
        return "NPU" in self.capabilities

    def runs_accelerator(self, accelerator: str) -> bool:
        """Whether the platform's NPU runs command streams Vela compiled for `accelerator` (e.g. ethos-u55-128)."""
        return accelerator in self.npu

    def memory(self, name: str) -> Memory | None:
        """The memory called `name` in any letter case, or None."""
        return self._by_name.get(name.upper())

    def engines(self, source: str, destination: str) -> tuple[str, ...]:
        """The engines that copy from `source` to `destination` (names in any case); () when none does."""
        src, dst = self.memory(source), self.memory(destination)
        if src is None or dst is None:
            return ()
        for transfer in self.transfers:
            if transfer.source == src.name and transfer.destination == dst.name:
                return transfer.engines
        return ()

    def dma_boundary(self, memory: str) -> int | None:
        found = self.memory(memory)
        return None if found is None else found.dma_boundary

    def admission_target(self) -> TargetCapabilities:
        """What the operator contracts' admission checks need to know of the target."""
        from heliabuild.kernels.operators.admission import TargetCapabilities

        return TargetCapabilities(f"{self.name} ({self.cpu})", fp16=self.supports_fp16)

    def to_plan(self) -> dict[str, Any]:
        """The plan's `platform` section."""
        return {
            "name": self.name,
            "cpu": self.cpu,
            "capabilities": list(self.capabilities),
            "supports_fp16": self.supports_fp16,
        }

    def to_json(self) -> dict[str, Any]:
        """The platform's entry in a platforms file (without its name, which is the key)."""
        entry: dict[str, Any] = {
            "cpu": self.cpu,
            "capabilities": list(self.capabilities),
            "alignment": self.alignment,
            "constant_memory": self.constant_memory,
            "memories": {m.name: {"bytes": m.bytes, "dma_boundary": m.dma_boundary} for m in self.memories},
            "transfers": [
                {"source": t.source, "destination": t.destination, "engines": list(t.engines)} for t in self.transfers
            ],
        }
        if self.npu:
            entry["npu"] = {
                product: [macs for macs in configs if f"{product}-{macs}" in self.npu]
                for product, configs in NPU_MACS.items()
                if any(config.startswith(f"{product}-") for config in self.npu)
            }
        if self.description:
            entry["description"] = self.description
        return entry

    @classmethod
    def from_json(cls, name: str, entry: Mapping[str, Any]) -> Platform:
        return cls(
            name=name,
            cpu=entry["cpu"],
            capabilities=tuple(entry["capabilities"]),
            memories=tuple(
                Memory(memory, int(spec["bytes"]), int(spec["dma_boundary"]))
                for memory, spec in entry["memories"].items()
            ),
            constant_memory=entry["constant_memory"],
            alignment=int(entry["alignment"]),
            transfers=tuple(
                Transfer(t["source"], t["destination"], tuple(t["engines"])) for t in entry.get("transfers", ())
            ),
            description=entry.get("description", ""),
            npu=tuple(f"{product}-{macs}" for product, configs in entry.get("npu", {}).items() for macs in configs),
        )


def platforms_document(platforms: Iterable[Platform]) -> dict[str, Any]:
    """A platforms file holding `platforms` (what load_platforms reads back)."""
    return {"schema_version": 1, "platforms": {p.name: p.to_json() for p in platforms}}


def load_platforms(path: str | os.PathLike[str] | None = None) -> dict[str, Platform]:
    """The platforms of a platforms file (default: heliabuild's own table), validated, by name."""
    if path is None:
        return dict(_shipped_platforms())
    return _load(Path(path))


@cache
def _shipped_platforms() -> tuple[tuple[str, Platform], ...]:
    return tuple(_validated(shipped_platforms_document(), TABLE_FILE).items())


def _load(path: Path) -> dict[str, Platform]:
    return _validated(read_json(path, "platform table", error=PlatformError), path)


def _validated(document: Any, path: Path) -> dict[str, Platform]:
    from heliabuild.errors import SchemaError
    from heliabuild.schema_files import validate

    try:
        validate(document, SCHEMA_NAME, str(path))
    except SchemaError as error:
        raise PlatformError(error.message) from None
    try:
        return {name: Platform.from_json(name, entry) for name, entry in document["platforms"].items()}
    except PlatformError as error:  # a platform's own rule: name the file too
        raise PlatformError(f"{path}: {error.message}", error.hint) from None


def get_platform(platform: str | Platform, platforms: Mapping[str, Platform] | None = None) -> Platform:
    """`platform` itself when it is a Platform, else the platform of that name (in `platforms`, by default
    heliabuild's table); PlatformError naming the known ones for an unknown name."""
    if isinstance(platform, Platform):
        return platform
    table = load_platforms() if platforms is None else platforms
    found = table.get(platform)
    if found is None:
        raise PlatformError(
            f"platform {shown(platform)} is unknown; expected one of {', '.join(sorted(table))}",
            hint="heliabuild aot-plan --list-platforms prints the table",
        )
    return found


def platforms_table(platforms: Mapping[str, Platform] | None = None) -> str:
    """The table `heliabuild aot-plan --list-platforms` prints: one block per platform."""
    table = load_platforms() if platforms is None else platforms
    lines: list[str] = []
    for name in sorted(table):
        p = table[name]
        lines.append(f"{name}: {p.cpu}, capabilities {', '.join(p.capabilities)}")
        if p.npu:
            lines.append(f"  NPU runs {', '.join(p.npu)}")
        if p.description:
            lines.append(f"  {p.description}")
        lines.append(f"  constants in {p.constant_memory}, minimum alignment {p.alignment} bytes")
        for m in p.memories:
            lines.append(f"  memory {m.name:<6} {m.bytes:>10} bytes  DMA boundary {m.dma_boundary}")
        for t in p.transfers:
            lines.append(f"  transfer {t.source} -> {t.destination}: {', '.join(t.engines)}")
    return "\n".join(lines) + "\n"
