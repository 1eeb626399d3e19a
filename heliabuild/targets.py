"""The target table: every fact heliabuild knows of the machines it builds for and runs on, as data
(`heliabuild/targets.json`), read here once; the AOT plan stage, the firmware build, the FVP adapter and the
runner's backends all read it, as Vela reads its architecture_features and vela.ini (docs/layout.md, "The target
table").

- `npus`: each Ethos-U product and the MAC counts it comes in (an FVP's `ethosu.num_macs`).
- `machines`: what a firmware runs on: its CPU, its memory map (each region's origin and bytes, which the
  linker script under heliabuild/firmware/c/ states again and a test compares), the firmware's startup, linker
  script, harness sources, where the arena and the constants go, the stack and the harness's own data in
  DTCM, whether it drives an Ethos-U; the QEMU machine that models it, or the Corstone FVP platform.
- `fvp`: each FVP executable by its Corstone platform and NPU, and the platform run when none is chosen.
- `platforms`: the AOT plan's platforms (heliabuild.aot.platforms, the format of schemas/platforms.schema.json),
  each with the machine whose memory map gives its memories' sizes (`memory_map`) and the FVP platform that
  models it (`fvp`), where there are such.

Importing it loads neither numpy nor the TFLite schema (the SCons emitters read it while SConscripts are read).
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from heliabuild.documents import read_json
from heliabuild.errors import HeliaError

TABLE_FILE = Path(__file__).with_name("targets.json")
"""The target table shipped with heliabuild."""
_ORIGIN = re.compile(r"^0x[0-9a-f]{1,8}$")


class TargetTableError(HeliaError):
    """A target table that breaks its rules; the message names the field."""


@dataclass(frozen=True)
class Region:
    """One memory of a machine's map: its name (the linker script's region), `origin` address and `bytes`."""

    name: str
    origin: int
    bytes: int


@dataclass(frozen=True)
class FirmwareFacts:
    """How heliabuild's firmware is built for a machine (files under heliabuild/firmware/c/)."""

    startup: str
    linker_script: str
    harness: tuple[str, ...]
    arena_memory: str
    constant_memory: str
    stack_bytes: int
    harness_data_bytes: int
    npu: bool


@dataclass(frozen=True)
class Machine:
    """A machine a firmware runs on (module docstring)."""

    name: str
    description: str
    cpu: str
    memories: tuple[Region, ...]
    firmware: FirmwareFacts | None
    qemu_machine: str | None
    fvp_platform: str | None

    def memory(self, name: str) -> Region:
        """The region called `name`; TargetTableError when the map has none."""
        for region in self.memories:
            if region.name == name:
                return region
        raise TargetTableError(f"{TABLE_FILE.name}: machine {self.name!r} has no memory {name!r}")


@dataclass(frozen=True)
class FvpExecutable:
    """One FVP executable: the Corstone `platform` it models (`corstone-300`) and its `npu` (`ethos-u55`)."""

    executable: str
    platform: str
    npu: str


@dataclass(frozen=True)
class TargetTable:
    """The table as read (module docstring); `platforms` holds the AOT platforms' entries in the platforms
    file format, their memories' sizes filled in from their machine's map."""

    npus: Mapping[str, tuple[int, ...]]
    machines: Mapping[str, Machine]
    fvp_executables: tuple[FvpExecutable, ...]
    fvp_default_platform: Mapping[str, str]
    platforms: Mapping[str, Mapping[str, Any]]
    platform_fvp: Mapping[str, str]
    platform_memory_map: Mapping[str, str]

    def qemu_machine(self) -> Machine:
        """The machine QEMU models (the qemu-m55 backend's)."""
        (machine,) = (m for m in self.machines.values() if m.qemu_machine is not None)
        return machine

    def fvp_firmware_machines(self) -> tuple[Machine, ...]:
        """The machines modelled by an FVP that heliabuild's own firmware is built for."""
        return tuple(m for m in self.machines.values() if m.fvp_platform is not None and m.firmware is not None)


def _field(entry: Mapping[str, Any], key: str, kind: type, where: str) -> Any:
    value = entry.get(key)
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise TargetTableError(f"{TABLE_FILE.name}: {where}.{key} is {value!r}; expected a {kind.__name__}")
    return value


def _firmware(entry: Mapping[str, Any], where: str) -> FirmwareFacts:
    harness = _field(entry, "harness", list, where)
    if not all(isinstance(source, str) for source in harness):
        raise TargetTableError(f"{TABLE_FILE.name}: {where}.harness holds a name that is not a string")
    return FirmwareFacts(
        startup=_field(entry, "startup", str, where),
        linker_script=_field(entry, "linker_script", str, where),
        harness=tuple(harness),
        arena_memory=_field(entry, "arena_memory", str, where),
        constant_memory=_field(entry, "constant_memory", str, where),
        stack_bytes=_field(entry, "stack_bytes", int, where),
        harness_data_bytes=_field(entry, "harness_data_bytes", int, where),
        npu=_field(entry, "npu", bool, where),
    )


def _machine(name: str, entry: Mapping[str, Any]) -> Machine:
    where = f"machines.{name}"
    regions = []
    for memory, spec in _field(entry, "memories", dict, where).items():
        origin = _field(spec, "origin", str, f"{where}.memories.{memory}")
        if not _ORIGIN.match(origin):
            raise TargetTableError(f"{TABLE_FILE.name}: {where}.memories.{memory}.origin {origin!r} is not 0x<hex>")
        regions.append(Region(memory, int(origin, 16), _field(spec, "bytes", int, f"{where}.memories.{memory}")))
    machine = Machine(
        name=name,
        description=_field(entry, "description", str, where),
        cpu=_field(entry, "cpu", str, where),
        memories=tuple(regions),
        firmware=None if "firmware" not in entry else _firmware(_field(entry, "firmware", dict, where), where),
        qemu_machine=entry.get("qemu_machine"),
        fvp_platform=entry.get("fvp_platform"),
    )
    if machine.firmware is not None:
        for memory in (machine.firmware.arena_memory, machine.firmware.constant_memory, "DTCM"):
            machine.memory(memory)
    return machine


def _platform(name: str, entry: Mapping[str, Any], machines: Mapping[str, Machine]) -> dict[str, Any]:
    """The platforms-file entry of an AOT platform: without `memory_map` and `fvp`, its memories' `bytes`
    taken from the machine `memory_map` names (a memory of a platform without one states its own)."""
    platform = {key: value for key, value in entry.items() if key not in ("memory_map", "fvp")}
    source = entry.get("memory_map")
    if source is None:
        return platform
    if source not in machines:
        raise TargetTableError(f"{TABLE_FILE.name}: platforms.{name}.memory_map {source!r} is not a machine")
    memories = _field(entry, "memories", dict, f"platforms.{name}")
    stated = next((memory for memory, spec in memories.items() if "bytes" in spec), None)
    if stated is not None:
        raise TargetTableError(
            f"{TABLE_FILE.name}: platforms.{name}.memories.{stated} states bytes; machine {source!r} gives them"
        )
    platform["memories"] = {
        memory: {"bytes": machines[source].memory(memory).bytes, **spec} for memory, spec in memories.items()
    }
    return platform


@cache
def table() -> TargetTable:
    """heliabuild's target table, read once per process (TargetTableError for a table that breaks its rules)."""
    document = read_json(TABLE_FILE, "target table", error=TargetTableError)
    if not isinstance(document, dict) or document.get("schema_version") != 1:
        raise TargetTableError(f"{TABLE_FILE.name}: expected an object with schema_version 1")
    machines = {name: _machine(name, entry) for name, entry in _field(document, "machines", dict, "").items()}
    fvp = _field(document, "fvp", dict, "")
    platforms = _field(document, "platforms", dict, "")
    return TargetTable(
        npus={npu: tuple(macs) for npu, macs in _field(document, "npus", dict, "").items()},
        machines=machines,
        fvp_executables=tuple(
            FvpExecutable(executable, _field(spec, "platform", str, executable), _field(spec, "npu", str, executable))
            for executable, spec in _field(fvp, "executables", dict, "fvp").items()
        ),
        fvp_default_platform=dict(_field(fvp, "default_platform", dict, "fvp")),
        platforms={name: _platform(name, entry, machines) for name, entry in platforms.items()},
        platform_fvp={name: entry["fvp"] for name, entry in platforms.items() if "fvp" in entry},
        platform_memory_map={name: entry["memory_map"] for name, entry in platforms.items() if "memory_map" in entry},
    )


def shipped_platforms_document() -> dict[str, Any]:
    """The AOT platforms as a platforms file holds them (schemas/platforms.schema.json), a copy the caller owns."""
    return {"schema_version": 1, "platforms": copy.deepcopy(dict(table().platforms))}
