"""The target table (heliabuild/targets.json, heliabuild.targets): one answer to "what is corstone300". The linker
scripts state each machine's memory map again, so they are compared with the table region by region; the AOT
plan's platforms, the firmware build, the FVP adapter and the runner's backends read their facts from it and
agree with each other; a broken table is refused with one sentence naming the field."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from heliabuild import targets
from heliabuild.aot.platforms import NPU_MACS, get_platform, load_platforms
from heliabuild.firmware import C_SOURCE_DIR
from heliabuild.firmware.build import TARGETS as FIRMWARE_TARGETS
from heliabuild.fvp import aot_firmware
from heliabuild.fvp.targets import MAC_COUNTS, PLATFORM_TARGETS, resolve_target
from heliabuild.runner.backends import qemu_m55 as qemu_backend
from heliabuild.schema_files import load_schema

TABLE = targets.table()
_REGION = re.compile(r"^\s*(\w+)\s*\((\w+)\)\s*:\s*ORIGIN\s*=\s*(0x[0-9A-Fa-f]+)\s*,\s*LENGTH\s*=\s*(\d+)([KM]?)\s*$")
_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20}


def linker_regions(script: Path) -> list[tuple[str, int, int]]:
    """The MEMORY block of a GNU ld script: (region, origin, bytes) in the script's order."""
    text = script.read_text(encoding="utf-8")
    block = re.search(r"^MEMORY\s*\{(.*?)^\}", text, re.S | re.M)
    assert block is not None, f"{script}: no MEMORY block"
    regions = []
    for line in block.group(1).strip().splitlines():
        match = _REGION.match(line)
        assert match is not None, f"{script}: a MEMORY line this test cannot read: {line!r}"
        name, _, origin, length, unit = match.groups()
        regions.append((name, int(origin, 16), int(length) * _UNITS[unit]))
    return regions


FIRMWARE_MACHINES = [machine for machine in TABLE.machines.values() if machine.firmware is not None]


@pytest.mark.parametrize("machine", FIRMWARE_MACHINES, ids=lambda m: m.name)
def test_the_linker_script_states_the_tables_memory_map(machine: targets.Machine) -> None:
    assert machine.firmware is not None
    script = C_SOURCE_DIR / machine.firmware.linker_script
    assert linker_regions(script) == [(r.name, r.origin, r.bytes) for r in machine.memories]
    stack = re.search(r"^STACK_SIZE\s*=\s*(0x[0-9A-Fa-f]+|\d+);", script.read_text(encoding="utf-8"), re.M)
    assert stack is not None and int(stack.group(1), 0) == machine.firmware.stack_bytes
    for source in (machine.firmware.startup, *machine.firmware.harness):
        assert (C_SOURCE_DIR / source).is_file(), source


def test_the_firmware_targets_are_the_tables_machines() -> None:
    assert set(FIRMWARE_TARGETS) == {m.name for m in FIRMWARE_MACHINES} == {"mps3_an547", "corstone300"}
    for machine in FIRMWARE_MACHINES:
        target = FIRMWARE_TARGETS[machine.name]
        assert target.arena_bytes == machine.memory(target.arena_memory).bytes
        assert target.constant_bytes == machine.memory(target.constant_memory).bytes
        assert target.data_bytes == (512 - 32 - 16) << 10  # DTCM less the stack and the harness's data
    assert FIRMWARE_TARGETS["corstone300"].npu and not FIRMWARE_TARGETS["mps3_an547"].npu


def test_a_platform_plans_over_its_machines_memories() -> None:
    """The plan's memory sizes are the ones the firmware links against: one memory map per machine."""
    platforms = load_platforms()
    assert set(TABLE.platform_memory_map) >= {"mps3_an547", "corstone300_ethos_u55", "corstone300_ethos_u65"}
    for name, machine_name in TABLE.platform_memory_map.items():
        machine = TABLE.machines[machine_name]
        for memory in platforms[name].memories:
            assert memory.bytes == machine.memory(memory.name).bytes, (name, memory.name)
    qemu_platform = get_platform(qemu_backend.TARGET)
    assert qemu_platform.constant_memory == FIRMWARE_TARGETS[qemu_backend.TARGET].constant_memory


def test_the_fvp_facts_agree_with_the_platforms() -> None:
    assert aot_firmware.TARGET == "corstone300" and aot_firmware.PLATFORMS == ("corstone-300",)
    assert TABLE.machines[aot_firmware.TARGET].fvp_platform == "corstone-300"
    assert qemu_backend.TARGET == "mps3_an547" and TABLE.machines["mps3_an547"].qemu_machine == "mps3-an547"
    for name, fvp_platform in PLATFORM_TARGETS.items():
        platform = get_platform(name)
        for accelerator in platform.npu:
            assert resolve_target(accelerator, fvp_platform).target.platform == fvp_platform


def test_the_npus_are_one_list() -> None:
    """The plan's, the FVP adapter's and the platforms schema's MAC counts are the table's."""
    assert NPU_MACS == MAC_COUNTS == TABLE.npus
    schema = load_schema("platforms")
    enums = {
        npu: tuple(spec["items"]["enum"])
        for npu, spec in schema["$defs"]["platform"]["properties"]["npu"]["properties"].items()
    }
    assert enums == TABLE.npus


def _broken(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, edit) -> str:
    document = json.loads(targets.TABLE_FILE.read_text(encoding="utf-8"))
    edit(document)
    path = tmp_path / "targets.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    monkeypatch.setattr(targets, "TABLE_FILE", path)
    targets.table.cache_clear()
    try:
        with pytest.raises(targets.TargetTableError) as caught:
            targets.table()
    finally:
        targets.table.cache_clear()
    assert "\n" not in caught.value.message
    return caught.value.message


@pytest.mark.parametrize(
    ("edit", "fragment"),
    [
        (
            lambda d: d["machines"]["corstone300"]["memories"]["DDR"].update(origin="7000"),
            "origin '7000' is not 0x<hex>",
        ),
        (lambda d: d["machines"]["corstone300"]["memories"]["DDR"].update(bytes="32M"), "memories.DDR.bytes is '32M'"),
        (lambda d: d["machines"]["corstone300"]["firmware"].update(arena_memory="PSRAM"), "has no memory 'PSRAM'"),
        (lambda d: d["platforms"]["mps3_an547"].update(memory_map="mps4"), "memory_map 'mps4' is not a machine"),
        (
            lambda d: d["platforms"]["mps3_an547"]["memories"].update(FLASH={"dma_boundary": 16}),
            "has no memory 'FLASH'",
        ),
        (lambda d: d["platforms"]["mps3_an547"]["memories"]["QSPI"].update(bytes=1), "QSPI states bytes"),
        (lambda d: d.update(schema_version=2), "schema_version 1"),
    ],
)
def test_a_broken_table_is_refused_naming_the_field(tmp_path, monkeypatch, edit, fragment: str) -> None:
    assert fragment in _broken(tmp_path, monkeypatch, edit)


def test_a_table_that_is_not_json_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "targets.json"
    path.write_bytes(b"{\xff")
    monkeypatch.setattr(targets, "TABLE_FILE", path)
    targets.table.cache_clear()
    try:
        with pytest.raises(targets.TargetTableError, match="target table"):
            targets.table()
    finally:
        targets.table.cache_clear()
