"""The TEST DOUBLE of Arm's Ethos-U core driver (tests/helpers/ethosu_driver_test_double/, which drives no NPU):
its PMU counters read back what the event each was programmed with counts, so a firmware that programs its
events in another order publishes other figures. Compiled with the host's gcc and called directly."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

DOUBLE = Path(__file__).parent / "helpers" / "ethosu_driver_test_double"
PROGRAM = r"""
#include <stdio.h>
#include "pmu_ethosu.h"

int main(int argc, char **argv)
{
    struct ethosu_driver drv = {0};
    uint32_t num;
    ETHOSU_PMU_Enable(&drv);
    for (num = 0; num + 1 < (uint32_t)argc; ++num) {
        ETHOSU_PMU_Set_EVTYPER(&drv, num, (enum ethosu_pmu_event_type)atoi(argv[num + 1]));
    }
    ETHOSU_PMU_CNTR_Enable(&drv, (1u << num) - 1u);
    ETHOSU_PMU_CNTR_Disable(&drv, (1u << num) - 1u);
    for (num = 0; num + 1 < (uint32_t)argc; ++num) {
        printf("%u\n", (unsigned)ETHOSU_PMU_Get_EVCNTR(&drv, num));
    }
    return 0;
}
"""
EVENTS = {  # the double's enum ethosu_pmu_event_type (include/pmu_ethosu.h)
    "NPU_ACTIVE": 1,
    "AXI0_RD_DATA_BEAT_RECEIVED": 2,
    "AXI0_WR_DATA_BEAT_WRITTEN": 3,
    "AXI1_RD_DATA_BEAT_RECEIVED": 4,
    "SRAM_RD_DATA_BEAT_RECEIVED": 5,
    "SRAM_WR_DATA_BEAT_WRITTEN": 6,
    "EXT_RD_DATA_BEAT_RECEIVED": 7,
    "EXT_WR_DATA_BEAT_WRITTEN": 8,
}


@pytest.fixture(scope="module")
def pmu(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if shutil.which("gcc") is None:
        if os.environ.get("CI"):
            pytest.fail("gcc is not on PATH under CI")
        pytest.skip("gcc is not on PATH")
    folder = tmp_path_factory.mktemp("pmu-double")
    (folder / "main.c").write_text("#include <stdlib.h>\n" + PROGRAM)
    program = folder / "pmu"
    sources = [str(folder / "main.c"), str(DOUBLE / "src" / "ethosu_pmu.c")]
    command = ["gcc", "-std=c99", "-Wall", "-Werror", f"-I{DOUBLE / 'include'}", *sources, "-o", str(program)]
    subprocess.run(command, check=True, timeout=120)
    return program


def _read(pmu: Path, *events: str) -> list[int]:
    run = subprocess.run([pmu, *(str(EVENTS[e]) for e in events)], capture_output=True, text=True, check=True)
    return [int(line) for line in run.stdout.split()]


def test_each_counter_reads_what_its_programmed_event_counts(pmu: Path) -> None:
    # heliabuild's U55/U65 order (firmware/c/npu/helia_ethosu.c): NPU_ACTIVE is the cycles, the rest the beats
    u55 = ("NPU_ACTIVE", "AXI0_RD_DATA_BEAT_RECEIVED", "AXI0_WR_DATA_BEAT_WRITTEN", "AXI1_RD_DATA_BEAT_RECEIVED")
    assert _read(pmu, *u55) == [1000, 200, 30, 4]
    u85 = ("NPU_ACTIVE", "SRAM_RD_DATA_BEAT_RECEIVED", "SRAM_WR_DATA_BEAT_WRITTEN", "EXT_RD_DATA_BEAT_RECEIVED")
    assert _read(pmu, *u85, "EXT_WR_DATA_BEAT_WRITTEN") == [1000, 200, 30, 4, 5]


def test_swapped_events_swap_the_counts(pmu: Path) -> None:
    """Counter 0 programmed with a beat event and counter 1 with NPU_ACTIVE: counter 0 is no longer the cycles."""
    swapped = ("AXI0_RD_DATA_BEAT_RECEIVED", "NPU_ACTIVE", "AXI0_WR_DATA_BEAT_WRITTEN", "AXI1_RD_DATA_BEAT_RECEIVED")
    assert _read(pmu, *swapped) == [200, 1000, 30, 4]
