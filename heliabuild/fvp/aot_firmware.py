"""The fvp backend's second firmware: heliabuild's own AOT firmware of Vela's output, built for a Corstone FVP
with the user's Ethos-U core driver (docs/runner.md, "Running on an FVP"; docs/firmware.md, "Corstone-300 and
the Ethos-U driver").

- `build_aot_firmware(...)` generates the module of Vela's compiled model from its AOT plan (its `ethos-u`
  operators become Ethos-U driver calls, the arena follows Vela's OfflineMemoryAllocation), compiles the frozen
  policy in and links it with the firmware library of target `corstone300` and the driver named by
  `HELIA_ETHOSU_DRIVER_DIR` (heliabuild.firmware.driver). No driver folder, or one that lacks what the build
  needs, is one error naming what is missing, before anything is compiled.
- `measure_aot(runner, section, timeout_s)` runs the ELF in one FVP job with the full lifecycle (warmups,
  carry). The UART log is read as for the prebuilt runner (heliabuild.fvp.log.read_log: no stop reason, no
  failure line, one exit code, EOT), then its record stream is checked against the frozen runner
  (heliabuild.firmware.protocol.read_stream), the outputs are compared with LiteRT's reference kernels on the
  unfenced model, and each segment's PMU counts become the sample's figures.

runner.json's `fvp.firmware.source` is `heliabuild-aot` (the prebuilt runner's is `mlia-ethos-u`). Only
Corstone-300 (its U55 and U65 FVPs) has a memory map and peripheral addresses here; Corstone-310 and 320 are
refused by name.
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from heliabuild.errors import FvpError
from heliabuild.fvp.targets import TargetConfig

SOURCE = "heliabuild-aot"
"""runner.json's `fvp.firmware.source` for heliabuild's AOT firmware."""
TARGET = "corstone300"
PLATFORMS = ("corstone-300",)
ELF_FILE = "fvp/firmware.elf"
LAYOUT_FILE = "fvp/firmware_layout.json"
PREFIX = "model"
EVENTS = {"ethos-u55": 4, "ethos-u65": 4, "ethos-u85": 5}
"""How many PMU events helia_ethosu.c counts per NPU: NPU_ACTIVE first, then the beats."""


@dataclass(frozen=True)
class AotFirmware:
    """A linked AOT firmware: the ELF and layout bytes and what runner.json records of them."""

    elf: bytes
    layout: bytes
    record: dict[str, Any]


def check_platform(platform: str, source: str) -> None:
    """FvpError for an FVP platform (`corstone-310`) the AOT firmware is not built for (module docstring)."""
    if platform not in PLATFORMS:
        raise FvpError(
            f"{source}: heliabuild's AOT firmware is built for {', '.join(PLATFORMS)} only; {platform}'s memory "
            "map and peripheral addresses are not among the facts it was written from",
            hint="use the prebuilt runner (HELIA_FVP_FIRMWARE='prebuilt', the default) on this target",
        )


def build_aot_firmware(
    *,
    vela_model: Path,
    plan: Path | None,
    policy: dict[str, Any],
    input_fills: list[bytes | None],
    config: TargetConfig,
    driver_dir: str | os.PathLike[str] | None,
    source: str,
    library: Path | None = None,
) -> AotFirmware:
    """Build the firmware (module docstring); FvpError or FirmwareError before anything is written. `library`
    is the firmware library of target `corstone300` when the caller built it (SCons); by default it is built in
    the user's cache (heliabuild.runner.qemu.default_library_dir)."""
    from heliabuild.codegen.module import generate_module
    from heliabuild.files import sha256_bytes
    from heliabuild.firmware.build import build_library, check_memory_fit, link_firmware
    from heliabuild.firmware.config import CONFIG_SOURCE, firmware_config_source
    from heliabuild.firmware.driver import find_driver
    from heliabuild.firmware.toolchain import toolchain_version
    from heliabuild.runner.qemu import default_library_dir, firmware_from_files, firmware_policy

    check_platform(config.target.platform, source)
    if plan is None:
        raise FvpError(
            f"{source}: the AOT firmware is generated from the AOT plan of Vela's compiled model; none was given",
            hint="heliabuild aot-plan M_vela.tflite --platform corstone300_ethos_u55, then --aot-plan",
        )
    driver = find_driver(driver_dir, config.target.npu, source)
    toolchain = toolchain_version()
    with tempfile.TemporaryDirectory(prefix="heliabuild-fvp-firmware-") as name:
        work = Path(name)
        module = generate_module(vela_model, plan, PREFIX, work / "module", npu=True)
        check_memory_fit(module.layout, TARGET, source)
        if len(input_fills) != len(module.layout.inputs):
            raise FvpError(f"{source}: {len(input_fills)} input fills for {len(module.layout.inputs)} model inputs")
        config_source = work / "module" / CONFIG_SOURCE
        config_source.write_bytes(firmware_config_source(PREFIX, firmware_policy(policy), input_fills))
        archive = library if library is not None else build_library(default_library_dir(), TARGET)
        elf = link_firmware(
            archive,
            [module.source, config_source],
            [module.source.parent],
            work / "firmware.elf",
            TARGET,
            driver=driver,
        )
        built = firmware_from_files(vela_model, elf, module.layout_json)
    record = {
        "source": SOURCE,
        "target": TARGET,
        "elf": {"file": ELF_FILE, "sha256": sha256_bytes(built.elf)},
        "layout": {"file": LAYOUT_FILE, "sha256": sha256_bytes(built.layout)},
        "toolchain": toolchain,
        "driver": driver.to_json(),
        "npu_events": EVENTS[config.target.npu],
        "arena_bytes": built.arena_bytes,
        "input_bytes": list(built.input_bytes),
        "output_bytes": list(built.output_bytes),
        "output_names": list(built.output_names),
        "segments": built.segments,
    }
    return AotFirmware(elf=built.elf, layout=built.layout, record=record)


def sample_figures(counters: Any, npu: str) -> dict[str, Any]:
    """A sample's figures from its per-segment counters (heliabuild.firmware.protocol.SegmentCounters):
    `cycles` the NPU active cycles per segment and their total, `segment_traffic_beats` each segment's beats
    (U55/U65: AXI0 read and write, AXI1 read; U85: SRAM and external read and write), `traffic_beats` their
    sum. A counter that overflowed in any segment makes the sample's counts null and flags
    `sanity.counter_overflow`: a wrapped count is never published."""
    overflow = any(segment.overflow for segment in counters)
    cycles = beats = None
    if not overflow:
        segments = [int(segment.counts[0]) for segment in counters]
        cycles = {"total": sum(segments), "segments": segments}
        beats = [int(sum(segment.counts[1:])) for segment in counters]
    return {
        "cycles": cycles,
        "traffic_beats": None if beats is None else sum(beats),
        "segment_traffic_beats": beats,
        "sanity": {"outputs_finite": True, "counter_overflow": overflow},
    }


@dataclass(frozen=True)
class AotMeasurement:
    """One verified run of the AOT firmware: the receipt's counts, per sample the figures, outputs and their
    comparison with the reference."""

    state: str
    warmup_invokes: int
    measured_invokes: int
    figures: list[dict[str, Any]]
    outputs: list[list[bytes]]
    verification: list[list[dict[str, Any]]]


def measure_aot(runner: Any, command: list[str], npu: str, bound_s: float, source: str) -> AotMeasurement:
    """Run the job `command` (the recorded command with this machine's paths) and verify what the firmware
    reports (module docstring). FvpError or FirmwareError for a run the host cannot trust; RunnerError when
    an output differs from the reference by more than the policy's `verification.max_abs_diff`."""
    from heliabuild.firmware.protocol import read_stream, stream_failure
    from heliabuild.fvp.launch import run_job
    from heliabuild.fvp.log import read_log
    from heliabuild.runner.qemu import expectation_of, verify_samples

    firmware = runner.document["fvp"]["firmware"]
    vela_sha256 = runner.document["inputs"]["vela_model"]["sha256"]
    expectation, fills = expectation_of(runner, firmware, vela_sha256, int(firmware["npu_events"]))
    log, code = read_log(run_job(command, bound_s), source)
    if code != 0:
        raise FvpError(stream_failure(log, code, source))
    run = read_stream(log, expectation, source)
    checks = verify_samples(runner, run, expectation, fills)
    return AotMeasurement(
        state=run.receipt.state,
        warmup_invokes=run.receipt.warmup_invokes,
        measured_invokes=run.receipt.measured_invokes,
        figures=[sample_figures(sample.segment_counters, npu) for sample in run.samples],
        outputs=[list(sample.outputs) for sample in run.samples],
        verification=checks,
    )
