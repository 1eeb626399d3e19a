"""The acquisition lifecycle (../shared/spec/acquisition-lifecycle.md): running a runner and publishing its
result bundle.

`run_runner(runner_json, result_dir)` loads and verifies the runner (heliabuild.runner.freeze.load_runner),
measures with its backend, and writes the bundle with heliabuild.results.bundle.write_bundle, which publishes
nothing when any check fails. A policy with `fvp_enabled: false` executes nothing: the bundle is
`build_only` (no receipt, no samples).

Backends (docs/runner.md, "Backends"):

- `litert` (the host): ONE instance, one LiteRT interpreter per segment, allocated once (AllocateTensors
  runs before any invoke; CALL_ONCE initialization runs inside the first invoke). Warmups refill the inputs
  and invoke; each measured sample refills the inputs (zeros, or the policy's fixed bytes) outside the timer,
  then times each segment (its interpreter and its closing fence's copy) with time.perf_counter: host wall
  time, `segment_latency_s`, adding up to `latency_s`. The host counts no cycle: `cycles` is null.
- `qemu-m55`: the runner's firmware on QEMU (heliabuild.runner.qemu): instructions per segment and per
  invoke, outputs compared with LiteRT's reference kernels (refused on any difference unless the policy sets
  another bound); `cycles` and `latency_s` are null (QEMU models neither).

`carry` keeps the one instance across warmups and samples; `single` is one invoke on the initialized
instance without warmup. Filling inputs is not resetting state: resource variables persist. Vela's
estimate is never a sample figure: it is `segments[].estimated_cycles`, and Vela's memory allocation (SRAM,
off-chip flash) and options are result.json's `vela`, read from the runner's segments.json.
"""

from __future__ import annotations

import datetime
import os
from pathlib import Path
from typing import Any

import numpy as np

from heliabuild.errors import RunnerError
from heliabuild.progress import Activity, activity
from heliabuild.runner import qemu
from heliabuild.runner.freeze import Runner, load_runner
from heliabuild.runner.litert import LiteRTInstance, numpy_dtype
from heliabuild.runner.measurement import Measurement
from heliabuild.runner.segments import SegmentedModel, TensorInfo, cut_segments

INITIALIZATION = "interpreter_allocate_and_first_invoke"
HOST_WALL_CLOCK = "host_wall_clock"
LITERT_SCOPES = {
    "cycles": None,
    "instructions": None,
    "latency_s": HOST_WALL_CLOCK,
    "segment_latency_s": HOST_WALL_CLOCK,
    "instruction_resolution": None,
}
"""What the host backend's figures count: wall time on the host, no counter."""


def _input_values(runner: Runner, infos: list[TensorInfo]) -> list[np.ndarray]:
    values = []
    for index, info in enumerate(infos):
        dtype = numpy_dtype(info)
        path = runner.input_file(index)
        if path is None:
            values.append(np.zeros(info.shape, dtype=dtype))
        else:
            values.append(np.frombuffer(path.read_bytes(), dtype=dtype).reshape(info.shape).copy())
    return values


def _estimated_cycles(runner: Runner, count: int) -> list[int | None]:
    """Vela's per-segment op_cycles from segments.json (an estimate), or None each without it."""
    document = runner.segments_document()
    if document is None:
        return [None] * count
    entries = sorted(document["segments"], key=lambda s: s["index"])
    if len(entries) != count:
        raise RunnerError(f"{runner.path}: segments.json has {len(entries)} segments, the model {count}")
    return [int(e["op_cycles"]) for e in entries]


def _segments(runner: Runner, cut: SegmentedModel | None = None) -> list[dict[str, Any]]:
    """The bundle's segment records of the runner's model: from `cut`, the model as the run cut it, or else
    from cutting the model file again."""
    cut = cut if cut is not None else cut_segments(runner.model_path)
    estimates = _estimated_cycles(runner, len(cut.segments))
    return [
        {
            "index": segment.index,
            "op_range_start": segment.op_range_start,
            "op_range_end": segment.op_range_end,
            "estimated_cycles": estimates[segment.index],
        }
        for segment in cut.segments
    ]


def _lifecycle_counts(runner: Runner) -> tuple[str, int, int]:
    policy = runner.policy
    state = policy["state"]
    warmups = int(policy["warmup_invokes"])
    measured = int(policy["measured_invokes"])
    if state == "single" and (warmups != 0 or measured != 1):
        raise RunnerError(
            f"{runner.path}: policy: state single with {warmups} warmups and {measured} measured invokes; "
            "single is one invoke without warmup"
        )
    return state, warmups, measured


def measure(runner: Runner, timeout_s: float | None = None, result_dir: Path | None = None) -> Measurement:
    """Execute the lifecycle the runner's policy states with the runner's backend; what it measured.
    `timeout_s` bounds a run on a simulated target (default heliabuild.runner.qemu.DEFAULT_TIMEOUT_S). An fvp
    run that fails in a way its log reader does not know keeps the log beside `result_dir`
    (heliabuild.runner.fvp.keep_log)."""
    if runner.backend == "fvp":
        from heliabuild.runner.fvp import measurement

        return measurement(runner, timeout_s, _segments(runner), result_dir)
    if runner.backend == qemu.BACKEND:
        return _measure_qemu(runner, qemu.DEFAULT_TIMEOUT_S if timeout_s is None else timeout_s)
    if runner.backend != "litert":
        raise RunnerError(
            f"{runner.path}: backend {runner.backend} is not available here",
            hint="rebuild the runner with backend litert or qemu-m55",
        )
    state, warmups, measured = _lifecycle_counts(runner)
    instance = LiteRTInstance(runner.model_path)
    if instance.call_once_present != runner.call_once_present:
        raise RunnerError(
            f"{runner.path}: call_once_present is {runner.call_once_present}, but the model shows "
            f"{instance.call_once_present}"
        )
    values = _input_values(runner, instance.input_infos())
    names = [info.name or f"output_{k}" for k, info in enumerate(instance.output_infos())]

    with activity(f"run {runner.path.parent.name}: invoke", total=warmups + measured) as work:
        for done in range(warmups):
            instance.fill_inputs(values)
            instance.invoke()
            work.advance(done + 1)
        figures, outputs = _measured_invokes(instance, values, names, measured, work)
    verification = runner.policy.get("verification")
    if verification is not None:
        fills = [value.tobytes() for value in values]
        for figure, checks in zip(figures, _verify(runner, fills, warmups, outputs, verification), strict=True):
            figure["verification"] = checks
    return Measurement(
        state=state,
        warmup_invokes=warmups,
        measured_invokes=measured,
        initialization=INITIALIZATION,
        call_once_present=instance.call_once_present,
        figures=figures,
        outputs=outputs,
        segments=_segments(runner, instance.cut),
        scopes=dict(LITERT_SCOPES),
    )


def _measured_invokes(
    instance: LiteRTInstance, values: list[np.ndarray], names: list[str], measured: int, work: Activity
) -> tuple[list[dict[str, Any]], list[list[tuple[str, bytes]]]]:
    """The measured invokes on the warmed-up instance: each sample's figures and output bytes."""
    figures: list[dict[str, Any]] = []
    outputs: list[list[tuple[str, bytes]]] = []
    for _ in range(measured):
        instance.fill_inputs(values)
        segment_seconds = instance.invoke()
        arrays = instance.outputs()
        figures.append(
            {
                "latency_s": sum(segment_seconds),
                "segment_latency_s": segment_seconds,
                "sanity": {"outputs_finite": all(bool(np.isfinite(a).all()) for a in arrays if a.dtype.kind == "f")},
            }
        )
        outputs.append([(name, array.tobytes()) for name, array in zip(names, arrays, strict=True)])
        work.advance(work.done + 1)
    return figures, outputs


def _verify(
    runner: Runner,
    fills: list[bytes],
    warmups: int,
    outputs: list[list[tuple[str, bytes]]],
    verification: dict[str, Any],
) -> list[list[dict[str, Any]]]:
    """Each sample's outputs against LiteRT with the policy's resolver on the unfenced model run through the
    same invokes (heliabuild.runner.verification); VerificationError above the policy's bound."""
    from heliabuild.runner.verification import check_sample, compare_outputs, reference_outputs

    model = qemu.unfenced_model(runner.model_path)
    reference = reference_outputs(model, fills, warmups + len(outputs), verification["resolver"])
    return [
        check_sample(
            runner, index, compare_outputs(reference[warmups + index], [data for _, data in sample]), verification
        )
        for index, sample in enumerate(outputs)
    ]


def _measure_qemu(runner: Runner, timeout_s: float) -> Measurement:
    _lifecycle_counts(runner)
    with activity(f"run {runner.path.parent.name} on {qemu.BACKEND}"):
        run = qemu.measure_firmware(runner, timeout_s)
    names = [f"output_{k}" for k in range(len(run.outputs[0]) if run.outputs else 0)]
    names = runner.document["firmware"].get("output_names") or names
    figures = [
        {"instructions": counts, "verification": checks, "sanity": {"outputs_finite": finite}}
        for counts, checks, finite in zip(run.instructions, run.verification, run.outputs_finite, strict=True)
    ]
    return Measurement(
        state=run.state,
        warmup_invokes=run.warmup_invokes,
        measured_invokes=run.measured_invokes,
        initialization=qemu.INITIALIZATION,
        call_once_present=None,
        figures=figures,
        outputs=[list(zip(names, sample, strict=True)) for sample in run.outputs],
        segments=_segments(runner),
        scopes={
            "cycles": None,
            "instructions": qemu.COUNTER_SCOPE,
            "latency_s": None,
            "segment_latency_s": None,
            "instruction_resolution": qemu.RESOLUTION_INSTRUCTIONS,
        },
    )


def run_runner(
    runner_json: str | os.PathLike[str], result_dir: str | os.PathLike[str], *, timeout_s: float | None = None
) -> Path:
    """Run the runner and write its result bundle to `result_dir`; return the path of result.json. `timeout_s`
    bounds a run on a simulated target (measure)."""
    from importlib.metadata import PackageNotFoundError, version

    from heliabuild import __version__
    from heliabuild.results.bundle import Sample, signatures_of, write_bundle
    from heliabuild.results.receipt import Receipt

    runner = load_runner(runner_json)
    receipt: Receipt | None = None
    samples: list[Sample] = []
    output_bytes: list[list[tuple[str, bytes]]] = []
    scopes: dict[str, Any] | None = None
    extra_versions: dict[str, str | None] = {}
    if runner.policy["fvp_enabled"]:
        result = measure(runner, timeout_s, Path(result_dir))
        receipt = Receipt(
            state=result.state,
            warmup_invokes=result.warmup_invokes,
            measured_invokes=result.measured_invokes,
            initialization=result.initialization,
            call_once_present=result.call_once_present,
        )
        samples = [
            Sample(index=index, signatures=signatures_of(result.outputs[index]), **result.figures[index])
            for index in range(result.measured_invokes)
        ]
        output_bytes = result.outputs
        segments = result.segments
        scopes = result.scopes
        extra_versions = result.provider_versions
        stage = "executed"
    else:  # the execution stage is disabled: a build-only result, with no receipt and no samples
        segments = _segments(runner)
        stage = "build_only"
    provider_versions: dict[str, str | None] = {"heliabuild": __version__}
    try:
        provider_versions["ai-edge-litert"] = version("ai-edge-litert")
    except PackageNotFoundError:
        provider_versions["ai-edge-litert"] = None
    firmware = runner.document.get("firmware")
    if runner.backend == qemu.BACKEND and isinstance(firmware, dict):
        provider_versions["arm-none-eabi-gcc"] = firmware.get("toolchain")
        provider_versions["qemu-system-arm"] = _qemu_version()
    provider_versions.update(extra_versions)
    with activity(f"run {runner.path.parent.name}: writing the bundle of {len(samples)} samples"):
        return write_bundle(
            result_dir,
            runner_info={"sha256": runner.sha256, "format": runner.document["format"]},
            run_identity={
                "runner_sha256": runner.sha256,
                "model_sha256": runner.model_sha256,
                "backend": runner.backend,
                "policy": runner.policy,
            },
            receipt=receipt,
            samples=samples,
            output_bytes=output_bytes,
            segments=segments,
            provider_versions=provider_versions,
            created_at=datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
            stage=stage,
            runtime=_runtime(runner),
            scopes=scopes,
            vela=_vela_record(runner),
        )


VELA_RECORD = ("version", "accelerator", "system_config", "memory_mode")
VELA_MEMORY = ("sram_memory_used_kib", "off_chip_flash_memory_used_kib")


def _vela_record(runner: Runner) -> dict[str, Any] | None:
    """result.json's `vela`: Vela's options and memory allocation from the runner's segments.json (Vela's
    compile-time figures, None each where that segments.json does not record them), or None without one."""
    document = runner.segments_document()
    if document is None:
        return None
    vela = document["vela"]
    return {**{name: vela[name] for name in VELA_RECORD}, **{name: vela.get(name) for name in VELA_MEMORY}}


def _runtime(runner: Runner) -> str:
    """The runtime the runner executes (the result's `runtime`)."""
    if runner.backend == "fvp":
        from heliabuild.runner.fvp import runtime_of

        return runtime_of(runner)
    return qemu.RUNTIME if runner.backend == qemu.BACKEND else runner.backend


def _qemu_version() -> str | None:
    """The first line of `qemu-system-arm --version`, or None when it cannot be asked."""
    import subprocess

    from heliabuild.firmware.qemu import QEMU

    try:
        run = subprocess.run([QEMU, "--version"], capture_output=True, text=True, timeout=10, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    lines = run.stdout.splitlines()
    return lines[0].strip() if run.returncode == 0 and lines else None
