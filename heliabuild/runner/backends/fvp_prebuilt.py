"""The `fvp-prebuilt` backend: Vela's output on an Arm Corstone FVP, run by Arm's prebuilt runner from
`mlia-ethos-u`, one job per segment (docs/runner.md, "Running on an FVP").

- Build: the target is resolved from the Vela accelerator config segments.json records and the `fvp_target`
  choice (heliabuild.fvp.targets; refused before anything is written when the target cannot run it), the
  prebuilt runner is located (heliabuild.fvp.firmware), the policy checked to be one the runner can honour, and
  Vela's compiled model cut at its fences into one sub-model per segment (heliabuild.runner.segments,
  `compiled=True`): each holds that segment's command stream. The sub-models are cut in memory and only
  recorded (`fvp.segments[k]`: SHA-256, size, command streams); the file copied is Vela's compiled model
  itself (`fvp/model_vela.tflite`), so the runner's files do not depend on the segment count, which a build
  system does not know before the fence stage has run.
- Measure: the sub-models are cut again from the runner's copy and each checked against runner.json
  (`segment_models`), written into a private temporary folder, and run as one FVP job per segment, in
  parallel, each log read strictly (heliabuild.fvp.log), the jobs' counters merged into one sample
  (heliabuild.fvp.counters). The temporary folder is removed whatever the outcome.

Policy: the prebuilt runner boots, allocates, runs one inference and stops; it fills the inputs itself and
prints no output tensor. So a runner is built only for `warmup_invokes` 0 and `measured_invokes` 1, without
`tensor_io` or `verification`; anything else is refused by name rather than measured as something else.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from heliabuild.errors import FvpError
from heliabuild.files import sha256_bytes
from heliabuild.fvp.command import MAX_MODEL_BYTES, recorded_command
from heliabuild.runner.backend import BackendBuild, BackendDefaults, BuildRequest
from heliabuild.runner.backends.fvp_common import (
    SCOPES,
    build_target,
    figures_of,
    host_bound,
    keep_log,
    target_record,
)
from heliabuild.runner.measurement import MeasuredSample, Measurement
from heliabuild.runner.record import FvpSection, FvpSegment, InputRecord, PrebuiltFirmwareRecord, RunnerPolicy

NAME = "fvp-prebuilt"
RUNTIME = "tflm"
"""The runtime the prebuilt runner executes: TFLite Micro (an interpreter)."""
INITIALIZATION = "interpreter_allocate_and_first_invoke"
COMPILED_FILE = "fvp/model_vela.tflite"
"""The prebuilt runner's copy of Vela's compiled model, from which the run cuts the segment sub-models."""
MAX_COMPILED_BYTES = 1 << 31
"""The largest compiled model the run reads: what the runner build reads of a model."""
SEGMENT_FILE = "segment_{index}.tflite"
"""A segment sub-model's name in the run's private temporary folder."""


def check_policy(policy: RunnerPolicy, source: str) -> None:
    """FvpError naming every setting of `policy` the prebuilt runner cannot honour (module docstring)."""
    problems = []
    if policy.warmup_invokes != 0:
        problems.append(f"warmup_invokes {policy.warmup_invokes} (the runner cannot warm up; it needs 0)")
    if policy.measured_invokes != 1:
        problems.append(f"measured_invokes {policy.measured_invokes} (one inference per boot; it needs 1)")
    if policy.tensor_io is not None:
        problems.append("tensor_io (the runner fills its inputs itself)")
    if policy.verification is not None:
        problems.append("verification (the runner prints no output tensor to compare)")
    if problems:
        raise FvpError(
            f"{source}: the fvp backend's prebuilt runner boots, runs one inference and stops, so it cannot "
            f"honour {'; '.join(problems)}",
            hint="set defaults.fvp.acquisition to {state: single, warmup_invokes: 0, measured_invokes: 1}",
        )


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

    recorded = runner.record.inputs.vela_model
    if recorded is None or not recorded.copied or recorded.file != COMPILED_FILE:
        raise FvpError(
            f"{source}: inputs.vela_model: the runner holds no copy of Vela's compiled model ({COMPILED_FILE}) to "
            "cut its jobs' sub-models from",
            hint="rebuild the runner with heliabuild runner --backend fvp",
        )
    data = read_regular_file(
        runner.folder / COMPILED_FILE, "Vela's compiled model", error=FvpError, limit=MAX_COMPILED_BYTES
    )
    if sha256_bytes(data) != recorded.sha256:
        raise FvpError(f"{source}: {COMPILED_FILE} changed after the runner was verified", hint="rebuild the runner")
    entries = runner.record.fvp.segments
    models = _sub_models(data, source)
    if len(models) != len(entries):
        raise FvpError(
            f"{source}: {COMPILED_FILE} cuts into {len(models)} segment sub-models, but fvp.segments records "
            f"{len(entries)}: the runner was changed after it was built",
            hint="rebuild the runner",
        )
    for index, (entry, model) in enumerate(zip(entries, models, strict=True)):
        cut = {"sha256": sha256_bytes(model), "bytes": len(model)}
        if entry.index != index or cut != {"sha256": entry.sha256, "bytes": entry.bytes}:
            raise FvpError(
                f"{source}: fvp.segments[{index}]: the sub-model of segment {index} cut from {COMPILED_FILE} is "
                f"{cut['bytes']} bytes with sha256 {cut['sha256']}, but runner.json records segment {entry.index}, "
                f"{entry.bytes} bytes with sha256 {entry.sha256}: the runner was changed after it was built",
                hint="rebuild the runner",
            )
    return models


class FvpPrebuiltBackend(BackendDefaults):
    """The fvp-prebuilt backend (module docstring)."""

    name = NAME
    scopes = SCOPES
    runtime = RUNTIME

    def build(self, request: BuildRequest) -> BackendBuild:
        """runner.json's `fvp` section and the copy of Vela's model (module docstring). The Vela model's cut
        must have the fenced model's segment count."""
        from heliabuild.fvp.firmware import prebuilt_runner

        source = request.source
        options = request.options
        config, limit = build_target(
            request.segments_document, request.vela_model_bytes, options.fvp_target, options.fvp_timelimit_s, source
        )
        check_policy(request.policy, source)
        firmware = prebuilt_runner(config.target)
        vela_model = request.vela_model_bytes
        assert vela_model is not None  # build_target
        models = _sub_models(vela_model, source)
        if len(models) != len(request.cut.segments):
            raise FvpError(
                f"{source}: the Vela model has {len(models)} segments between its fences, the model "
                f"{len(request.cut.segments)}"
            )
        entries = []
        for index, model in enumerate(models):
            if len(model) > MAX_MODEL_BYTES:
                raise FvpError(
                    f"{source}: segment {index}'s sub-model is {len(model)} bytes; the prebuilt runner reads at most "
                    f"{MAX_MODEL_BYTES} at 0x90000000"
                )
            entries.append(FvpSegment(index, sha256_bytes(model), len(model), _command_streams(model)))
        section = FvpSection(
            target=target_record(config),
            firmware=PrebuiltFirmwareRecord.from_json(firmware.to_json()),
            timelimit_s=limit,
            command=tuple(recorded_command(config, limit)),
            segments=tuple(entries),
        )
        # the run cuts the jobs' sub-models from the runner's copy of Vela's model
        copied = InputRecord(COMPILED_FILE, sha256_bytes(vela_model), copied=True)
        return BackendBuild(files={COMPILED_FILE: vela_model}, fvp=section, vela_model=copied)

    def measure(self, runner: Any, timeout_s: float | None, result_dir: Path | None) -> Measurement:
        """Run the runner's jobs on its FVP and read them (module docstring). `timeout_s` lowers the host's bound
        on each job (default: the recorded `--timelimit` plus heliabuild.fvp.launch.GRACE_S). FvpError for any
        job the log does not show succeed; then nothing is published (a log its reader does not know is kept
        beside `result_dir`: keep_log). The runner prints no output tensor, so a sample has no outputs."""
        from heliabuild.fvp.command import command_from_record
        from heliabuild.fvp.counters import sample_figures
        from heliabuild.fvp.firmware import installed_runner
        from heliabuild.fvp.launch import run_jobs
        from heliabuild.fvp.locate import find_fvp, fvp_version
        from heliabuild.fvp.log import UnreadLog, read_job

        segments = tuple(runner.segment_records())
        source = str(runner.path)
        section = runner.record.fvp
        policy = runner.policy
        check_policy(policy, source)
        models = segment_models(runner, source)
        target = section.target
        executable = find_fvp(target.executable)
        application = installed_runner(section.firmware.to_json(), source)
        bound = host_bound(section, timeout_s)
        samples = []
        with tempfile.TemporaryDirectory(prefix="heliabuild-fvp-") as work:
            commands = []
            for entry, model in zip(section.segments, models, strict=True):
                path = Path(work) / SEGMENT_FILE.format(index=entry.index)
                path.write_bytes(model)
                commands.append(command_from_record(list(section.command), executable, application.path, str(path)))
            for _ in range(policy.measured_invokes):
                runs = run_jobs(commands, bound)
                jobs = []
                for run, entry in zip(runs, section.segments, strict=True):
                    try:
                        jobs.append(read_job(run, target.npu, f"{source}: segment {entry.index} ({target.executable})"))
                    except UnreadLog as error:
                        raise keep_log(error, result_dir, f"segment_{entry.index}") from None
                samples.append(MeasuredSample(figures_of(sample_figures(jobs))))
        return Measurement(
            state=policy.state,
            warmup_invokes=policy.warmup_invokes,
            measured_invokes=policy.measured_invokes,
            initialization=INITIALIZATION,
            call_once_present=runner.call_once_present,
            samples=tuple(samples),
            segments=segments,
            scopes=self.scopes,
            provider_versions={target.executable: fvp_version(executable), "mlia-ethos-u": application.package_version},
        )


BACKEND = FvpPrebuiltBackend()
