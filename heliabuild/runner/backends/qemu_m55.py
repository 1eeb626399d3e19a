"""The `qemu-m55` backend: heliabuild's AOT firmware on QEMU's mps3-an547 (docs/firmware.md, docs/runner.md).

- Build: the module generated from the fenced model and its AOT plan (made for `mps3_an547`), the frozen
  policy compiled in, linked with the firmware library into `firmware.elf` (`build_firmware`); runner.json
  records it as `firmware` and copies the ELF and its layout. SCons builds the same files through its own
  nodes (heliabuild.scons.firmware) and passes them in.
- Measure: QEMU runs the ELF with `-icount shift=0` under a wall-clock timeout, the record stream is checked
  against the frozen runner (heliabuild.firmware.protocol), each sample's outputs are compared with LiteRT's
  reference kernels on the unfenced model (heliabuild.runner.verification), and the counts become
  instructions; `cycles` and `latency_s` are null (QEMU models neither).

Instructions: the firmware counts SysTick ticks, 31.25 instructions each under `-icount shift=0`. The counts
are made from the cumulative readings (instructions at a reading = floor(ticks x 31.25)), so a sample's
segment counts add up to its invoke's count exactly; the resolution is one tick, 31.25 instructions.
"""

from __future__ import annotations

import itertools
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from heliabuild.errors import RunnerError
from heliabuild.progress import activity
from heliabuild.results.scopes import QEMU_ICOUNT
from heliabuild.runner.backend import BackendBuild, BackendDefaults, BuildRequest
from heliabuild.runner.firmware import (
    MODULE_PREFIX,
    FirmwareBuild,
    default_library_dir,
    expectation_of,
    firmware_from_files,
    firmware_policy,
)
from heliabuild.runner.measurement import Counts, Figures, MeasuredSample, Measurement, Sanity, Scopes
from heliabuild.runner.record import RunnerPolicy
from heliabuild.runner.verification import verify_firmware_samples
from heliabuild.targets import table

NAME = "qemu-m55"
RUNTIME = "aot"
"""The runtime a qemu-m55 run executes: generated AOT code (the receipt's initialization is before_measurement)."""
TARGET = table().qemu_machine().name
ELF_FILE = "firmware.elf"
LAYOUT_FILE = "firmware_layout.json"
INSTRUCTIONS_PER_TICK_NUMERATOR = 125
INSTRUCTIONS_PER_TICK_DENOMINATOR = 4
RESOLUTION_INSTRUCTIONS = 31.25
DEFAULT_TIMEOUT_S = 120.0
INITIALIZATION = "before_measurement"


def build_firmware(
    model: Path,
    plan: Path,
    policy: RunnerPolicy,
    input_fills: Sequence[bytes | None],
    *,
    library_dir: Path | None = None,
) -> FirmwareBuild:
    """Generate, compile and link the firmware of `model` and its `plan` under `policy` (module docstring).
    The library is built in `library_dir` (default: a folder of the user's cache, shared by runner builds)."""
    from heliabuild.codegen.module import generate_module
    from heliabuild.firmware.build import build_library, check_memory_fit, link_firmware
    from heliabuild.firmware.config import CONFIG_SOURCE, firmware_config_source
    from heliabuild.firmware.toolchain import toolchain_version

    toolchain_version()  # a missing toolchain is refused before anything is written
    with tempfile.TemporaryDirectory(prefix="heliabuild-firmware-") as name:
        work = Path(name)
        module = generate_module(model, plan, MODULE_PREFIX, work / "module")
        check_memory_fit(module.layout, TARGET, str(model))
        if len(input_fills) != len(module.layout.inputs):
            raise RunnerError(f"{model}: {len(input_fills)} input fills for {len(module.layout.inputs)} model inputs")
        config = work / "module" / CONFIG_SOURCE
        config.write_bytes(firmware_config_source(MODULE_PREFIX, firmware_policy(policy), input_fills))
        library = build_library(library_dir or default_library_dir(), TARGET)
        elf = link_firmware(library, [module.source, config], [module.source.parent], work / ELF_FILE, TARGET)
        return firmware_from_files(model, elf, module.layout_json)


def instructions_of(segment_ticks: Sequence[int]) -> Counts:
    """The instruction counts of one sample from its per-segment ticks (module docstring)."""
    marks = [0]
    for ticks in segment_ticks:
        marks.append(marks[-1] + int(ticks))
    counts = [m * INSTRUCTIONS_PER_TICK_NUMERATOR // INSTRUCTIONS_PER_TICK_DENOMINATOR for m in marks]
    return Counts(total=counts[-1], segments=tuple(b - a for a, b in itertools.pairwise(counts)))


def qemu_version() -> str | None:
    """The first line of `qemu-system-arm --version`, or None when it cannot be asked."""
    from heliabuild.firmware.qemu import QEMU

    try:
        run = subprocess.run([QEMU, "--version"], capture_output=True, text=True, timeout=10, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    lines = run.stdout.splitlines()
    return lines[0].strip() if run.returncode == 0 and lines else None


class QemuM55Backend(BackendDefaults):
    """The qemu-m55 backend (module docstring)."""

    name = NAME
    scopes = Scopes(instructions=QEMU_ICOUNT, instruction_resolution=RESOLUTION_INSTRUCTIONS)
    runtime = RUNTIME
    compiled = True
    plan_platform = TARGET

    def check_request(self, *, aot_plan: Path | None, vela_model: Path | None, segments: Path | None) -> None:
        if aot_plan is None:
            raise RunnerError(
                "backend qemu-m55 runs the firmware generated from the model's AOT plan, and no AOT plan was given",
                hint=f"pass the plan of this model made for platform {TARGET} (heliabuild aot-plan)",
            )

    def build(self, request: BuildRequest) -> BackendBuild:
        assert request.aot_plan is not None  # check_request
        firmware = request.options.firmware
        if firmware is None:
            firmware = build_firmware(request.model_path, request.aot_plan, request.policy, request.input_fills)
        return BackendBuild(
            files={ELF_FILE: firmware.elf, LAYOUT_FILE: firmware.layout},
            firmware=firmware.image(TARGET, ELF_FILE, LAYOUT_FILE),
        )

    def measure(self, runner: Any, timeout_s: float | None, result_dir: Path | None) -> Measurement:
        """Run the runner's firmware on QEMU and verify what it reports (module docstring). FirmwareError for a
        run the host cannot trust; VerificationError when an output differs from the reference by more than the
        policy's `verification.max_abs_diff`."""
        from heliabuild.firmware.protocol import read_run
        from heliabuild.firmware.qemu import run_on_qemu

        runner.lifecycle_counts()
        firmware = runner.record.firmware
        expectation, fills = expectation_of(runner, firmware, runner.model_sha256)
        with activity(f"run {runner.path.parent.name} on {NAME}"):
            run = read_run(
                run_on_qemu(
                    runner.folder / firmware.elf.file, timeout_s=DEFAULT_TIMEOUT_S if timeout_s is None else timeout_s
                ),
                expectation,
                str(runner.path),
            )
        verified = verify_firmware_samples(
            runner, runner.backend, fills, expectation.warmup_invokes, [sample.outputs for sample in run.samples]
        )
        names = firmware.output_names or tuple(f"output_{k}" for k in range(len(firmware.output_bytes)))
        samples = tuple(
            MeasuredSample(
                Figures(
                    instructions=instructions_of(sample.segment_ticks),
                    verification=checks.checks,
                    sanity=Sanity(outputs_finite=checks.outputs_finite),
                ),
                tuple(zip(names, sample.outputs, strict=True)),
            )
            for sample, checks in zip(run.samples, verified, strict=True)
        )
        return Measurement(
            state=run.receipt.state,
            warmup_invokes=run.receipt.warmup_invokes,
            measured_invokes=run.receipt.measured_invokes,
            initialization=INITIALIZATION,
            call_once_present=None,
            samples=samples,
            segments=tuple(runner.segment_records()),
            scopes=self.scopes,
        )

    def provider_versions(self, runner: Any) -> dict[str, str | None]:
        firmware = runner.record.firmware
        return {
            "arm-none-eabi-gcc": None if firmware is None else firmware.toolchain,
            "qemu-system-arm": qemu_version(),
        }


BACKEND = QemuM55Backend()
