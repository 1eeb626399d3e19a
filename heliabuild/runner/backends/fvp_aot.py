"""The `fvp-aot` backend: heliabuild's AOT firmware of Vela's output on an Arm Corstone FVP, linked with the
user's Ethos-U core driver (docs/runner.md, "The AOT firmware").

- Build: the module of Vela's compiled model is generated from its AOT plan (its `ethos-u` operators become
  Ethos-U driver calls, the arena follows Vela's OfflineMemoryAllocation), the frozen policy compiled in, and
  linked with the firmware library of target `corstone300` and the driver named by `HELIA_ETHOSU_DRIVER_DIR`
  (heliabuild.firmware.driver: no driver folder, or one lacking what the build needs, is one error naming what
  is missing, before anything is compiled). runner.json's `fvp.firmware` records it (`source`
  `heliabuild-aot`), the ELF and layout are copied as `fvp/firmware.elf` and `fvp/firmware_layout.json`.
- Measure: the ELF runs in one job with the full lifecycle (warmups, carry): the UART log is read by
  core-platform's ending (heliabuild.fvp.log.read_log), then its record stream is checked against the frozen
  runner (heliabuild.firmware.protocol.read_stream), the outputs are compared with LiteRT
  (heliabuild.runner.verification), and each segment's PMU counts become the sample's figures
  (heliabuild.fvp.aot_firmware.sample_figures).
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import Any

from heliabuild.errors import FvpError
from heliabuild.fvp.aot_firmware import ELF_FILE, EVENTS, LAYOUT_FILE, PREFIX, TARGET, check_platform, sample_figures
from heliabuild.fvp.command import recorded_command
from heliabuild.fvp.targets import TargetConfig
from heliabuild.runner.backend import BackendBuild, BackendDefaults, BuildRequest
from heliabuild.runner.backends.fvp_common import (
    SCOPES,
    build_target,
    figures_of,
    host_bound,
    keep_log,
    target_record,
)
from heliabuild.runner.firmware import default_library_dir, expectation_of, firmware_from_files, firmware_policy
from heliabuild.runner.measurement import MeasuredSample, Measurement, Sanity
from heliabuild.runner.record import AotFirmwareRecord, DriverRecord, FvpSection, RunnerPolicy
from heliabuild.runner.verification import verify_firmware_samples

NAME = "fvp-aot"
RUNTIME = "aot"
INITIALIZATION = "before_measurement"


def build_aot_firmware(
    *,
    vela_model: Path,
    plan: Path | None,
    policy: RunnerPolicy,
    input_fills: list[bytes | None],
    config: TargetConfig,
    driver_dir: str | os.PathLike[str] | None,
    source: str,
    library: Path | None = None,
) -> tuple[AotFirmwareRecord, dict[str, bytes]]:
    """Build the firmware (module docstring): its record and its files; FvpError or FirmwareError before
    anything is written. `library` is the firmware library of target `corstone300` when the caller built it
    (SCons); by default it is built in the user's cache (heliabuild.runner.firmware.default_library_dir)."""
    from heliabuild.codegen.module import generate_module
    from heliabuild.firmware.build import build_library, check_memory_fit, link_firmware
    from heliabuild.firmware.config import CONFIG_SOURCE, firmware_config_source
    from heliabuild.firmware.driver import find_driver
    from heliabuild.firmware.toolchain import toolchain_version

    check_platform(config.target.platform, source)
    if plan is None:
        raise FvpError(
            f"{source}: the AOT firmware is generated from the AOT plan of Vela's compiled model; none was given",
            hint="heliabuild aot-plan M_vela.tflite --platform corstone300_ethos_u55, then --aot-plan",
        )
    driver = find_driver(driver_dir, config.target.npu, source)
    toolchain_version()  # a missing toolchain is refused before anything is compiled
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
    record = AotFirmwareRecord(
        image=built.image(TARGET, ELF_FILE, LAYOUT_FILE),
        driver=DriverRecord.from_json(driver.to_json()),
        npu_events=EVENTS[config.target.npu],
    )
    return record, {ELF_FILE: built.elf, LAYOUT_FILE: built.layout}


class FvpAotBackend(BackendDefaults):
    """The fvp-aot backend (module docstring)."""

    name = NAME
    scopes = SCOPES
    runtime = RUNTIME
    compiled = True

    def build(self, request: BuildRequest) -> BackendBuild:
        """runner.json's `fvp` section and the firmware's files (module docstring)."""
        source = request.source
        options = request.options
        config, limit = build_target(
            request.segments_document, request.vela_model_bytes, options.fvp_target, options.fvp_timelimit_s, source
        )
        assert request.vela_model is not None  # build_target
        firmware, files = build_aot_firmware(
            vela_model=request.vela_model,
            plan=request.aot_plan,
            policy=request.policy,
            input_fills=request.input_fills,
            config=config,
            driver_dir=options.ethosu_driver_dir,
            source=source,
            library=options.firmware_library,
        )
        if firmware.image.segments != len(request.cut.segments):
            raise FvpError(
                f"{source}: the Vela model has {firmware.image.segments} segments between its fences, the model "
                f"{len(request.cut.segments)}"
            )
        section = FvpSection(
            target=target_record(config),
            firmware=firmware,
            timelimit_s=limit,
            command=tuple(recorded_command(config, limit, with_model=False)),
            segments=(),
        )
        return BackendBuild(files=files, fvp=section)

    def measure(self, runner: Any, timeout_s: float | None, result_dir: Path | None) -> Measurement:
        """One job, the whole lifecycle, the receipt the firmware wrote (module docstring). FvpError or
        FirmwareError for a run the host cannot trust; VerificationError when an output differs from the
        reference by more than the policy's `verification.max_abs_diff`."""
        from heliabuild import __version__
        from heliabuild.firmware.protocol import read_stream, stream_failure
        from heliabuild.fvp.aot_firmware import SOURCE
        from heliabuild.fvp.command import command_from_record
        from heliabuild.fvp.launch import run_job
        from heliabuild.fvp.locate import find_fvp, fvp_version
        from heliabuild.fvp.log import CORE_PLATFORM, UnreadLog, read_log

        segments = tuple(runner.segment_records())
        section = runner.record.fvp
        firmware = section.firmware
        assert isinstance(firmware, AotFirmwareRecord)  # the registry's row: fvp.firmware.source heliabuild-aot
        target = section.target
        executable = find_fvp(target.executable)
        command = command_from_record(list(section.command), executable, runner.folder / firmware.image.elf.file, "")
        source = f"{runner.path}: {target.executable}"
        vela_model = runner.record.inputs.vela_model
        assert vela_model is not None  # a runner of this backend is built from Vela's model
        expectation, fills = expectation_of(runner, firmware.image, vela_model.sha256, firmware.npu_events)
        try:
            log = read_log(run_job(command, host_bound(section, timeout_s)), source, endings=(CORE_PLATFORM,))
        except UnreadLog as error:
            raise keep_log(error, result_dir, "firmware") from None
        if log.exit_code != 0:
            raise FvpError(stream_failure(log.text, log.exit_code, source))
        run = read_stream(log.text, expectation, source)
        verified = verify_firmware_samples(
            runner, runner.backend, fills, expectation.warmup_invokes, [sample.outputs for sample in run.samples]
        )
        names = firmware.image.output_names
        samples = []
        for sample, checks in zip(run.samples, verified, strict=True):
            figures = figures_of(sample_figures(sample.segment_counters))
            sanity = Sanity(outputs_finite=checks.outputs_finite, counter_overflow=figures.sanity.counter_overflow)
            samples.append(
                MeasuredSample(
                    replace(figures, sanity=sanity, verification=checks.checks),
                    tuple(zip(names, sample.outputs, strict=True)),
                )
            )
        return Measurement(
            state=run.receipt.state,
            warmup_invokes=run.receipt.warmup_invokes,
            measured_invokes=run.receipt.measured_invokes,
            initialization=INITIALIZATION,
            call_once_present=None,
            samples=tuple(samples),
            segments=segments,
            scopes=self.scopes,
            provider_versions={
                target.executable: fvp_version(executable),
                SOURCE: __version__,
                "arm-none-eabi-gcc": firmware.image.toolchain,
            },
        )


BACKEND = FvpAotBackend()
