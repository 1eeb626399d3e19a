"""Target qualification of the stream-split and Detess C kernels: their test vectors run on QEMU's Cortex-M55
(mps3-an547), built with the Arm toolchain, and every status, failing pair and output byte must equal what the
Python references give on the host. These results qualify execution on the Cortex-M55 as QEMU models it; they
are reported apart from the host tests (docs/kernels.md, "Target qualification") and say nothing of latency."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from conftest import require_firmware_tools
from helpers.target_vectors import detess_cases, qualification_program, split_cases

from heliabuild.firmware.build import link_firmware
from heliabuild.firmware.qemu import run_on_qemu
from heliabuild.firmware.records import read_records

SPLIT_CASES = 150
DETESS_CASES = 60


@pytest.fixture(scope="module")
def target_results(firmware_library: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, list]:
    require_firmware_tools()
    rng = random.Random(20261201)
    splits, detess = split_cases(rng, SPLIT_CASES), detess_cases(rng, DETESS_CASES)
    folder = tmp_path_factory.mktemp("qualification")
    source = folder / "vectors.c"
    source.write_text(qualification_program(splits, detess))
    elf = link_firmware(firmware_library, [source], [], folder / "vectors.elf")
    run = run_on_qemu(elf, timeout_s=120)
    assert run.exit_status == 0, run.diagnostics
    records = read_records(run.console, "qualification").of_kind("case")
    expected = {0: [case.expected()[:2] for case in splits], 1: [(case.status, -1) for case in detess]}
    found: dict[str, list] = {"stream_split": [], "detess": []}
    for record in records:
        kernel, index, status, pair, match = record.fields
        name = "stream_split" if kernel == 0 else "detess"
        found[name].append((index, (status, pair), expected[kernel][index], match))  # type: ignore[index]
    return found


def test_stream_split_vectors_on_cortex_m55(target_results: dict[str, list]) -> None:
    cases = target_results["stream_split"]
    assert len(cases) == SPLIT_CASES
    refused = sum(1 for _, got, _, _ in cases if got[0] != 0)
    assert 0 < refused < SPLIT_CASES, "the vectors cover both copies and refusals"
    failures = [(index, got, want) for index, got, want, match in cases if got != want or match != 1]
    assert failures == []


def test_detess_vectors_on_cortex_m55(target_results: dict[str, list]) -> None:
    cases = target_results["detess"]
    assert len(cases) == DETESS_CASES
    failures = [(index, got, want) for index, got, want, match in cases if got != want or match != 1]
    assert failures == []
