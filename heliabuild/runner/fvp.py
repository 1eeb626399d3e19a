"""The `fvp` backend: Vela's output on an Arm Corstone FVP, run by Arm's prebuilt runner (docs/runner.md,
"Running on an FVP").

- `build_fvp(...)` is the runner build's part (heliabuild.runner.freeze.build_runner dispatches to it). It
  resolves the target from the Vela accelerator config segments.json records and the `fvp_target` choice
  (heliabuild.fvp.targets; refused before anything is written when the target cannot run it), locates the
  prebuilt runner (heliabuild.fvp.firmware), checks that the policy is one the runner can honour, and cuts
  Vela's compiled model at its fences into one sub-model per segment (heliabuild.runner.segments,
  `compiled=True`): each holds that segment's command stream. The sub-models are cut in memory and only
  recorded (`fvp.segments[k]`: SHA-256, size, command streams); the file copied is Vela's compiled model
  itself (`fvp/model_vela.tflite`), so the runner's files do not depend on the segment count, which a build
  system does not know before the fence stage has run (docs/runner.md, "Running on an FVP").
- `measure_fvp(runner, timeout_s)` is the run stage's part (heliabuild.runner.lifecycle.measure dispatches to
  it): the sub-models are cut again from the runner's copy and each checked against runner.json
  (`segment_models`), written into a private temporary folder, and run as one FVP job per segment, in
  parallel, each log read strictly (heliabuild.fvp.log), the jobs' counters merged into one sample
  (heliabuild.fvp.counters). The temporary folder is removed whatever the outcome.

With `fvp_firmware='aot'` (docs/runner.md, "The AOT firmware"), `build_aot_firmware` generates the module of
Vela's compiled model from its AOT plan (its `ethos-u` operators become Ethos-U driver calls, the arena follows
Vela's OfflineMemoryAllocation), compiles the frozen policy in and links it with the firmware library of target
`corstone300` and the driver named by `HELIA_ETHOSU_DRIVER_DIR` (heliabuild.firmware.driver: no driver folder,
or one lacking what the build needs, is one error naming what is missing, before anything is compiled).
`measure_aot` runs the ELF in one job with the full lifecycle (warmups, carry): the UART log is read by
core-platform's ending (heliabuild.fvp.log.read_log), then its record stream is checked against the frozen runner
(heliabuild.firmware.protocol.read_stream), the outputs are compared with LiteRT's reference kernels, and each
segment's PMU counts become the sample's figures (heliabuild.fvp.aot_firmware.sample_figures).

Policy: the prebuilt runner boots, allocates, runs one inference and stops; it fills the inputs itself and
prints no output tensor. So a runner is built only for `warmup_invokes` 0 and `measured_invokes` 1, without
`tensor_io` or `verification`; anything else is refused by name rather than measured as something else.
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from heliabuild.errors import FvpError
from heliabuild.files import sha256_bytes, write_atomic
from heliabuild.fvp.aot_firmware import ELF_FILE, EVENTS, LAYOUT_FILE, PREFIX, TARGET, check_platform, sample_figures
from heliabuild.fvp.aot_firmware import SOURCE as AOT_SOURCE
from heliabuild.fvp.command import DEFAULT_TIMELIMIT_S, MAX_MODEL_BYTES, MAX_TIMELIMIT_S, recorded_command
from heliabuild.fvp.targets import TargetConfig, resolve_target

BACKEND = "fvp"
AOT_RUNTIME = "aot"
AOT_INITIALIZATION = "before_measurement"
RUNTIME = "tflm"
"""The runtime an fvp run executes: TFLite Micro in Arm's prebuilt runner (an interpreter)."""
INITIALIZATION = "interpreter_allocate_and_first_invoke"
COUNTER_SCOPE = "npu_callbacks"
COMPILED_FILE = "fvp/model_vela.tflite"
"""The prebuilt runner's copy of Vela's compiled model, from which the run cuts the segment sub-models."""
MAX_COMPILED_BYTES = 1 << 31
"""The largest compiled model the run reads: what the runner build reads of a model."""
SEGMENT_FILE = "segment_{index}.tflite"
"""A segment sub-model's name in the run's private temporary folder."""
SCOPES = {
    "cycles": COUNTER_SCOPE,
    "traffic_beats": COUNTER_SCOPE,
    "instructions": None,
    "latency_s": None,
    "segment_latency_s": None,
    "instruction_resolution": None,
}
"""What an fvp run's figures count: NPU cycles and beats in the driver's callbacks of the measured invoke."""


def _check_policy(policy: dict[str, Any], source: str) -> None:
    problems = []
    if policy["warmup_invokes"] != 0:
        problems.append(f"warmup_invokes {policy['warmup_invokes']} (the runner cannot warm up; it needs 0)")
    if policy["measured_invokes"] != 1:
        problems.append(f"measured_invokes {policy['measured_invokes']} (one inference per boot; it needs 1)")
    if policy["tensor_io"] is not None:
        problems.append("tensor_io (the runner fills its inputs itself)")
    if policy.get("verification") is not None:
        problems.append("verification (the runner prints no output tensor to compare)")
    if problems:
        raise FvpError(
            f"{source}: the fvp backend's prebuilt runner boots, runs one inference and stops, so it cannot "
            f"honour {'; '.join(problems)}",
            hint="set defaults.fvp.acquisition to {state: single, warmup_invokes: 0, measured_invokes: 1}",
        )


@dataclass(frozen=True)
class AotRequest:
    """What the AOT firmware is built from besides the Vela model: its files, the input fills, the driver."""

    vela_model: Path
    aot_plan: Path | None
    input_fills: list[bytes | None]
    driver_dir: str | None
    library: Path | None = None


def build_fvp(
    *,
    vela_model: bytes | None,
    segments_document: dict[str, Any] | None,
    segment_count: int,
    policy: dict[str, Any],
    fvp_target: str | None = None,
    timelimit_s: int | None = None,
    source: str = "runner",
    aot: AotRequest | None = None,
) -> tuple[dict[str, Any], dict[str, bytes]]:
    """runner.json's `fvp` section and the files to copy (module docstring). `segment_count` is the fenced
    model's segment count, which the Vela model's cut must equal. With `aot` the firmware is heliabuild's AOT
    firmware (heliabuild.fvp.aot_firmware), one job for the whole lifecycle."""
    from heliabuild.fvp.firmware import prebuilt_runner

    if vela_model is None or segments_document is None:
        raise FvpError(
            f"{source}: backend fvp runs Vela's compiled model and reads its accelerator config from "
            "segments.json; pass both the Vela model and its segments.json",
            hint="heliabuild runner --vela-model M_vela.tflite --segments M_segments.json --backend fvp",
        )
    limit = DEFAULT_TIMELIMIT_S if timelimit_s is None else timelimit_s
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_TIMELIMIT_S:
        raise FvpError(f"{source}: FVP time limit {limit!r} is not a whole number of seconds in 1..{MAX_TIMELIMIT_S}")
    config = resolve_target(segments_document["vela"]["accelerator"], fvp_target, source=source)
    if aot is not None:
        built = build_aot_firmware(
            vela_model=aot.vela_model,
            plan=aot.aot_plan,
            policy=policy,
            input_fills=aot.input_fills,
            config=config,
            driver_dir=aot.driver_dir,
            source=source,
            library=aot.library,
        )
        if built.record["segments"] != segment_count:
            raise FvpError(
                f"{source}: the Vela model has {built.record['segments']} segments between its fences, the model "
                f"{segment_count}"
            )
        section = {
            "target": config.to_json(),
            "firmware": built.record,
            "timelimit_s": limit,
            "command": recorded_command(config, limit, with_model=False),
            "segments": [],
        }
        return section, {ELF_FILE: built.elf, LAYOUT_FILE: built.layout}
    _check_policy(policy, source)
    firmware = prebuilt_runner(config.target)
    models = _sub_models(vela_model, source)
    if len(models) != segment_count:
        raise FvpError(
            f"{source}: the Vela model has {len(models)} segments between its fences, the model {segment_count}"
        )
    entries = []
    for index, model in enumerate(models):
        if len(model) > MAX_MODEL_BYTES:
            raise FvpError(
                f"{source}: segment {index}'s sub-model is {len(model)} bytes; the prebuilt runner reads at most "
                f"{MAX_MODEL_BYTES} at 0x90000000"
            )
        entries.append({**_identity(model), "index": index, "command_streams": _command_streams(model)})
    section = {
        "target": config.to_json(),
        "firmware": firmware.to_json(),
        "timelimit_s": limit,
        "command": recorded_command(config, limit),
        "segments": entries,
    }
    return section, {COMPILED_FILE: vela_model}


def _sub_models(vela_model: bytes, source: str) -> list[bytes]:
    """The per-segment sub-models of Vela's compiled model, in segment order (deterministic: the same bytes for
    the same model and heliabuild)."""
    from heliabuild.errors import RunnerError
    from heliabuild.runner.segments import cut_segments

    try:
        cut = cut_segments(vela_model, compiled=True)
    except RunnerError as error:
        raise FvpError(f"{source}: the Vela model cannot be cut into per-segment sub-models: {error.message}") from None
    return [segment.model_bytes for segment in cut.segments]


def _identity(model: bytes) -> dict[str, Any]:
    """What runner.json records of a sub-model, and what the run checks the one it cuts against."""
    return {"sha256": sha256_bytes(model), "bytes": len(model)}


def _command_streams(model: bytes) -> int:
    from heliabuild.model.io import load_model
    from heliabuild.runner.segments import ETHOS_U_OPERATOR

    sub = load_model(model)
    return sum(
        1
        for op in sub.subgraphs[0].operators or []
        if sub.operator_codes[op.opcodeIndex].customCode in (ETHOS_U_OPERATOR, ETHOS_U_OPERATOR.encode())
    )


def segment_models(runner: Any, source: str) -> list[bytes]:
    """The sub-models of the runner's jobs, cut from its copy of Vela's compiled model (`fvp/model_vela.tflite`)
    and each checked against `fvp.segments` (SHA-256 and size) before anything runs. FvpError naming the segment
    when a sub-model differs or the count does not match: the runner was changed after it was built (or was built
    by a heliabuild that cuts differently), and a measurement of other bytes would be published as its."""
    from heliabuild.documents import read_regular_file

    recorded = runner.document["inputs"]["vela_model"]
    if recorded is None or not recorded["copied"] or recorded["file"] != COMPILED_FILE:
        raise FvpError(
            f"{source}: inputs.vela_model: the runner holds no copy of Vela's compiled model ({COMPILED_FILE}) to "
            "cut its jobs' sub-models from",
            hint="rebuild the runner with heliabuild runner --backend fvp",
        )
    data = read_regular_file(
        runner.folder / COMPILED_FILE, "Vela's compiled model", error=FvpError, limit=MAX_COMPILED_BYTES
    )
    if sha256_bytes(data) != recorded["sha256"]:
        raise FvpError(f"{source}: {COMPILED_FILE} changed after the runner was verified", hint="rebuild the runner")
    entries = runner.document["fvp"]["segments"]
    models = _sub_models(data, source)
    if len(models) != len(entries):
        raise FvpError(
            f"{source}: {COMPILED_FILE} cuts into {len(models)} segment sub-models, but fvp.segments records "
            f"{len(entries)}: the runner was changed after it was built",
            hint="rebuild the runner",
        )
    for index, (entry, model) in enumerate(zip(entries, models, strict=True)):
        cut = _identity(model)
        if entry["index"] != index or cut != {"sha256": entry["sha256"], "bytes": entry["bytes"]}:
            raise FvpError(
                f"{source}: fvp.segments[{index}]: the sub-model of segment {index} cut from {COMPILED_FILE} is "
                f"{cut['bytes']} bytes with sha256 {cut['sha256']}, but runner.json records segment {entry['index']}, "
                f"{entry['bytes']} bytes with sha256 {entry['sha256']}: the runner was changed after it was built",
                hint="rebuild the runner",
            )
    return models


@dataclass(frozen=True)
class FvpMeasurement:
    """One verified run: per sample its figures and per-segment beats; the FVP that ran and its version."""

    figures: list[dict[str, Any]]
    segment_beats: list[list[int | None]]
    fvp: str
    fvp_version: str | None
    firmware_version: str


def keep_log(error: Any, result_dir: Path | None, job: str) -> FvpError:
    """The FvpError to raise for `error` (a heliabuild.fvp.log.UnreadLog: a log its reader does not know), after
    keeping the job's UART log in the failed run's own folder: a new folder beside `result_dir` named
    `<result>.failed-<random>` (created for this run, so no file of the user's is touched), the log in it as
    `<job>.uart.log`, the bytes the FVP wrote. The message names the file."""
    if result_dir is None:
        return FvpError(error.message, hint=error.hint)
    parent = result_dir.parent
    try:
        parent.mkdir(parents=True, exist_ok=True)
        folder = Path(tempfile.mkdtemp(prefix=f"{result_dir.name}.failed-", dir=parent))
        path = folder / f"{job}.uart.log"
        write_atomic(path, error.output)
    except OSError as failure:
        return FvpError(f"{error.message} (the UART log could not be kept: {failure.strerror})", hint=error.hint)
    return FvpError(f"{error.message}; the UART log is kept in {path}", hint=error.hint)


def measure_fvp(runner: Any, timeout_s: float | None = None, result_dir: Path | None = None) -> FvpMeasurement:
    """Run the runner's jobs on its FVP and read them (module docstring). `timeout_s` lowers the host's bound
    on each job (default: the recorded `--timelimit` plus heliabuild.fvp.launch.GRACE_S). FvpError for any job
    the log does not show succeed; then nothing is published (a log its reader does not know is kept beside
    `result_dir`: keep_log)."""
    from heliabuild.fvp.command import command_from_record
    from heliabuild.fvp.counters import sample_figures, segment_beats
    from heliabuild.fvp.firmware import installed_runner
    from heliabuild.fvp.launch import GRACE_S, run_jobs
    from heliabuild.fvp.locate import find_fvp, fvp_version
    from heliabuild.fvp.log import UnreadLog, read_job

    source = str(runner.path)
    section = runner.document.get("fvp")
    if not isinstance(section, dict):
        raise FvpError(
            f"{source}: fvp: missing; a runner of backend fvp records its target and jobs there",
            hint="rebuild the runner with heliabuild runner --backend fvp",
        )
    if section["firmware"]["source"] == AOT_SOURCE:
        raise FvpError(f"{source}: the runner's firmware is heliabuild's AOT firmware, measured by measurement()")
    _check_policy(runner.policy, source)
    models = segment_models(runner, source)
    target = section["target"]
    executable = find_fvp(target["executable"])
    application = installed_runner(section["firmware"], source)
    bound = float(section["timelimit_s"]) + GRACE_S
    if timeout_s is not None:
        bound = min(bound, max(float(timeout_s), 0.001))
    figures = []
    beats = []
    with tempfile.TemporaryDirectory(prefix="heliabuild-fvp-") as work:
        commands = []
        for entry, model in zip(section["segments"], models, strict=True):
            path = Path(work) / SEGMENT_FILE.format(index=entry["index"])
            path.write_bytes(model)
            commands.append(command_from_record(section["command"], executable, application.path, str(path)))
        for _ in range(int(runner.policy["measured_invokes"])):
            runs = run_jobs(commands, bound)
            jobs = []
            for run, entry in zip(runs, section["segments"], strict=True):
                try:
                    jobs.append(
                        read_job(run, target["npu"], f"{source}: segment {entry['index']} ({target['executable']})")
                    )
                except UnreadLog as error:
                    raise keep_log(error, result_dir, f"segment_{entry['index']}") from None
            figures.append(sample_figures(jobs))
            beats.append(segment_beats(jobs))
    return FvpMeasurement(
        figures=figures,
        segment_beats=beats,
        fvp=target["executable"],
        fvp_version=fvp_version(executable),
        firmware_version=application.package_version,
    )


def measurement(
    runner: Any, timeout_s: float | None, segments: list[dict[str, Any]], result_dir: Path | None = None
) -> Any:
    """The heliabuild.runner.lifecycle.Measurement of one fvp run of `runner` (`segments`: the result's
    segments with Vela's estimates; `result_dir`: where the failed run's own folder goes, keep_log). No output
    tensor is printed by the runner, so a sample has no outputs."""
    from heliabuild.runner.measurement import Measurement

    if runner.document["fvp"]["firmware"]["source"] == AOT_SOURCE:
        return _aot_measurement(runner, timeout_s, segments, result_dir)
    run = measure_fvp(runner, timeout_s, result_dir)
    policy = runner.policy
    return Measurement(
        state=policy["state"],
        warmup_invokes=int(policy["warmup_invokes"]),
        measured_invokes=int(policy["measured_invokes"]),
        initialization=INITIALIZATION,
        call_once_present=runner.call_once_present,
        figures=run.figures,
        outputs=[[] for _ in run.figures],
        segments=segments,
        scopes=dict(SCOPES),
        provider_versions={run.fvp: run.fvp_version, "mlia-ethos-u": run.firmware_version},
    )


def _aot_measurement(
    runner: Any, timeout_s: float | None, segments: list[dict[str, Any]], result_dir: Path | None
) -> Any:
    """The Measurement of one run of heliabuild's AOT firmware on the FVP (heliabuild.fvp.aot_firmware): one job,
    the whole lifecycle, the receipt the firmware wrote; runtime `aot`, initialization before_measurement."""
    from heliabuild import __version__
    from heliabuild.fvp.command import command_from_record
    from heliabuild.fvp.launch import GRACE_S
    from heliabuild.fvp.locate import find_fvp, fvp_version
    from heliabuild.runner.measurement import Measurement

    section = runner.document["fvp"]
    target = section["target"]
    executable = find_fvp(target["executable"])
    bound = float(section["timelimit_s"]) + GRACE_S
    if timeout_s is not None:
        bound = min(bound, max(float(timeout_s), 0.001))
    elf = runner.folder / section["firmware"]["elf"]["file"]
    command = command_from_record(section["command"], executable, elf, "")
    source = f"{runner.path}: {target['executable']}"
    run = measure_aot(runner, command, bound, source, result_dir)
    names = list(section["firmware"]["output_names"])
    return Measurement(
        state=run.state,
        warmup_invokes=run.warmup_invokes,
        measured_invokes=run.measured_invokes,
        initialization=AOT_INITIALIZATION,
        call_once_present=None,
        figures=[
            {**figures, "verification": checks} for figures, checks in zip(run.figures, run.verification, strict=True)
        ],
        outputs=[list(zip(names, sample, strict=True)) for sample in run.outputs],
        segments=segments,
        scopes=dict(SCOPES),
        provider_versions={
            target["executable"]: fvp_version(executable),
            AOT_SOURCE: __version__,
            "arm-none-eabi-gcc": section["firmware"]["toolchain"],
        },
    )


def runtime_of(runner: Any) -> str:
    """The runtime an fvp runner executes: `aot` for heliabuild's AOT firmware, `tflm` for the prebuilt runner."""
    section = runner.document.get("fvp")
    firmware = section.get("firmware") if isinstance(section, dict) else None
    return AOT_RUNTIME if isinstance(firmware, dict) and firmware.get("source") == AOT_SOURCE else RUNTIME


@dataclass(frozen=True)
class AotFirmware:
    """A linked AOT firmware: the ELF and layout bytes and what runner.json records of them."""

    elf: bytes
    layout: bytes
    record: dict[str, Any]


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
        "source": AOT_SOURCE,
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


def measure_aot(
    runner: Any, command: list[str], bound_s: float, source: str, result_dir: Path | None = None
) -> AotMeasurement:
    """Run the job `command` (the recorded command with this machine's paths) and verify what the firmware
    reports (module docstring). FvpError or FirmwareError for a run the host cannot trust; VerificationError
    when an output differs from the reference by more than the policy's `verification.max_abs_diff`."""
    from heliabuild.firmware.protocol import read_stream, stream_failure
    from heliabuild.fvp.launch import run_job
    from heliabuild.fvp.log import CORE_PLATFORM, UnreadLog, read_log
    from heliabuild.runner.qemu import expectation_of, verified_samples

    firmware = runner.document["fvp"]["firmware"]
    vela_sha256 = runner.document["inputs"]["vela_model"]["sha256"]
    expectation, fills = expectation_of(runner, firmware, vela_sha256, int(firmware["npu_events"]))
    try:
        log = read_log(run_job(command, bound_s), source, endings=(CORE_PLATFORM,))
    except UnreadLog as error:
        raise keep_log(error, result_dir, "firmware") from None
    if log.exit_code != 0:
        raise FvpError(stream_failure(log.text, log.exit_code, source))
    run = read_stream(log.text, expectation, source)
    verified = verified_samples(runner, run, expectation, fills)
    figures = [sample_figures(sample.segment_counters) for sample in run.samples]
    for figure, (_, finite) in zip(figures, verified, strict=True):
        figure["sanity"] = {**figure["sanity"], "outputs_finite": finite}  # read from the outputs' bytes
    return AotMeasurement(
        state=run.receipt.state,
        warmup_invokes=run.receipt.warmup_invokes,
        measured_invokes=run.receipt.measured_invokes,
        figures=figures,
        outputs=[list(sample.outputs) for sample in run.samples],
        verification=[checks for checks, _ in verified],
    )
