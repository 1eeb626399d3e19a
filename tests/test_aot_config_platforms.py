"""The platform table: data validated by its schema, lookups, Python-built platforms, files of one's own."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from heliabuild.aot.platforms import (
    NPU_MACS,
    Memory,
    Platform,
    PlatformError,
    Transfer,
    get_platform,
    load_platforms,
    platforms_document,
    platforms_table,
)
from heliabuild.aot.shipped import DEFAULT_PLATFORM, default_platform, platform_names
from heliabuild.kernels.operators import TargetCapabilities
from heliabuild.schema_files import validate
from heliabuild.targets import TABLE_FILE, shipped_platforms_document


def test_the_shipped_table_validates_and_holds_the_two_platforms() -> None:
    document = shipped_platforms_document()
    validate(document, "platforms", str(TABLE_FILE))
    table = load_platforms()
    assert {"apollo510_evb", "corstone300_ethos_u55"} <= set(table)
    assert platform_names() == sorted(table)
    assert platforms_document(table.values()) == document  # the file is what the records write back


@pytest.mark.parametrize(
    "accelerator",
    [None, "ethos-u55-7", *(f"{product}-{macs}" for product, configs in NPU_MACS.items() for macs in configs)],
)
def test_the_default_platform_is_the_validated_tables_choice(accelerator: str | None) -> None:
    """default_platform reads the shipped table's `npu` lists without validating it (a no-op SCons build imports
    no schema validator); its choice is the one the validated table gives."""
    table = load_platforms()
    runs = sorted(name for name, platform in table.items() if accelerator and platform.runs_accelerator(accelerator))
    expected = DEFAULT_PLATFORM if accelerator is None or DEFAULT_PLATFORM in runs or not runs else runs[0]
    assert default_platform(accelerator) == expected


def test_apollo510_evb() -> None:
    apollo = get_platform("apollo510_evb")
    assert apollo.cpu == "cortex-m55" and apollo.capabilities == ("DSP", "FP16", "MCU", "MVE")
    assert {m.name: m.bytes for m in apollo.memories} == {
        "MRAM": 4128768,
        "SRAM": 3145728,
        "DTCM": 507904,
        "ITCM": 262144,
        "PSRAM": 67108864,
    }
    assert apollo.alignment == 16 and apollo.constant_memory == "MRAM"
    assert apollo.engines("MRAM", "DTCM") == ("cpu",) and apollo.engines("psram", "dtcm") == ("cpu", "dma")
    assert apollo.engines("SRAM", "DTCM") == () and apollo.engines("NOR", "DTCM") == ()
    assert all(apollo.dma_boundary(m.name) == 4096 for m in apollo.memories)
    assert apollo.supports_fp16 and not apollo.has_npu
    assert apollo.to_plan() == {
        "name": "apollo510_evb",
        "cpu": "cortex-m55",
        "capabilities": ["DSP", "FP16", "MCU", "MVE"],
        "supports_fp16": True,
    }
    assert apollo.admission_target() == TargetCapabilities("apollo510_evb (cortex-m55)", fp16=True)


def test_corstone300_ethos_u55_has_the_npu() -> None:
    corstone = get_platform("corstone300_ethos_u55")
    assert corstone.cpu == "cortex-m55" and corstone.has_npu and corstone.supports_fp16
    assert set(get_platform("apollo510_evb").capabilities) | {"NPU"} == set(corstone.capabilities)
    assert corstone.constant_memory == "DDR" and corstone.memory("dtcm").name == "DTCM"
    assert corstone.engines("DDR", "DTCM") == ("cpu", "dma")


def test_unknown_platform_names_the_known_ones() -> None:
    with pytest.raises(PlatformError) as caught:
        get_platform("apollo4")
    assert "apollo510_evb" in caught.value.message and "corstone300_ethos_u55" in caught.value.message
    assert "--list-platforms" in caught.value.hint


def test_a_platform_built_in_python_is_checked() -> None:
    memories = (Memory("FLASH", 1024, 256), Memory("SRAM", 512, 256))
    platform = Platform("t", "cortex-m4", ("MCU", "DSP"), memories, "flash", 8, (Transfer("flash", "sram", ("cpu",)),))
    assert platform.constant_memory == "FLASH" and platform.capabilities == ("DSP", "MCU")
    assert platform.transfers == (Transfer("FLASH", "SRAM", ("cpu",)),) and not platform.supports_fp16
    assert get_platform(platform) is platform
    for kwargs, fragment in (
        ({"capabilities": ("GPU",)}, "capability 'GPU' is unknown"),
        ({"constant_memory": "ROM"}, "constant_memory 'ROM' is not one of its memories"),
        ({"alignment": 12}, "alignment 12 is not a power of two"),
        ({"memories": (*memories, Memory("sram", 4, 4))}, "listed twice"),
        ({"transfers": (Transfer("FLASH", "DTCM", ("cpu",)),)}, "transfer destination 'DTCM'"),
        ({"transfers": (Transfer("FLASH", "SRAM", ("gpu",)),)}, "engines ['gpu']"),
    ):
        arguments = {
            "name": "t",
            "cpu": "cortex-m4",
            "capabilities": ("MCU",),
            "memories": memories,
            "constant_memory": "FLASH",
        }
        with pytest.raises(PlatformError, match=fragment.replace("[", r"\[").replace("]", r"\]")):
            Platform(**{**arguments, **kwargs})


def test_a_platforms_file_of_ones_own_is_validated(tmp_path: Path) -> None:
    path = tmp_path / "platforms.json"
    document = shipped_platforms_document()
    document["platforms"]["apollo510_evb"]["memories"]["MRAM"]["size"] = 3
    path.write_text(json.dumps(document), encoding="utf-8")
    with pytest.raises(PlatformError, match=str(path)):
        load_platforms(path)
    del document["platforms"]["apollo510_evb"]["memories"]["MRAM"]["size"]
    document["platforms"]["apollo510_evb"]["constant_memory"] = "FLASH"
    path.write_text(json.dumps(document), encoding="utf-8")
    with pytest.raises(PlatformError, match="constant_memory 'FLASH'"):
        load_platforms(path)
    path.write_text("{", encoding="utf-8")
    with pytest.raises(PlatformError, match="the platform table is not valid JSON"):
        load_platforms(path)


def test_the_printed_table_names_every_platform_memory_and_transfer() -> None:
    text = platforms_table()
    for platform in load_platforms().values():
        assert f"{platform.name}: {platform.cpu}" in text
        for memory in platform.memories:
            assert f"memory {memory.name}" in text
        for transfer in platform.transfers:
            assert f"transfer {transfer.source} -> {transfer.destination}: {', '.join(transfer.engines)}" in text
