"""The acquisition lifecycle (../shared/spec/acquisition-lifecycle.md) on heliabuild's host backend.

`run_runner(runner_json, result_dir)`:

1. load and verify the runner (heliabuild.runner.freeze.load_runner);
2. create ONE instance: one LiteRT interpreter per segment, allocated once (AllocateTensors runs before
   any invoke; CALL_ONCE initialization runs inside the first invoke);
3. warmups: refill the inputs, invoke; nothing is recorded;
4. measured samples: refill the inputs (zeros, or the policy's fixed bytes) outside the timer, then time
   the segments' invokes and fence copies with time.perf_counter (`latency_s`); the counters of a sample
   are reset for it: its cycles are segments.json's per-segment `op_cycles` (counter scope
   `vela_estimate`), null without segments.json; output bytes are read after the timer stops;
5. the receipt states what ran; the bundle is written with heliabuild.results.bundle.write_bundle, which
   publishes nothing when any check fails.

`carry` keeps the one instance across warmups and samples; `single` is one invoke on the initialized
instance without warmup. Filling inputs is not resetting state: resource variables persist.

A policy with `fvp_enabled: false` executes nothing: the bundle is `build_only` (no receipt, no samples).
"""

from __future__ import annotations

import datetime
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from heliabuild.errors import RunnerError
from heliabuild.runner.freeze import Runner, load_runner
from heliabuild.runner.litert import LiteRTInstance, numpy_dtype
from heliabuild.runner.segments import TensorInfo, cut_segments

INITIALIZATION = "interpreter_allocate_and_first_invoke"
COUNTER_SCOPE = "vela_estimate"


@dataclass(frozen=True)
class Measurement:
    """What one run produced before it is written: per-sample figures and output bytes, and the receipt."""

    state: str
    warmup_invokes: int
    measured_invokes: int
    call_once_present: bool
    latencies: list[float]
    cycles: list[dict[str, Any] | None]
    outputs: list[list[tuple[str, bytes]]]
    finite: list[bool]
    segments: list[dict[str, Any]]


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


def _segment_cycles(runner: Runner, count: int) -> list[int | None]:
    """Vela's per-segment op_cycles from segments.json, or None each without it."""
    document = runner.segments_document()
    if document is None:
        return [None] * count
    entries = sorted(document["segments"], key=lambda s: s["index"])
    if len(entries) != count:
        raise RunnerError(f"{runner.path}: segments.json has {len(entries)} segments, the model {count}")
    return [int(e["op_cycles"]) for e in entries]


def measure(runner: Runner) -> Measurement:
    """Execute the lifecycle the runner's policy states and return what it measured."""
    if runner.backend != "litert":
        raise RunnerError(
            f"{runner.path}: backend {runner.backend} needs an Arm FVP, which is not available",
            hint="rebuild the runner with backend litert",
        )
    policy = runner.policy
    state = policy["state"]
    warmups = int(policy["warmup_invokes"])
    measured = int(policy["measured_invokes"])
    if state == "single" and (warmups != 0 or measured != 1):
        raise RunnerError(
            f"{runner.path}: policy: state single with {warmups} warmups and {measured} measured invokes; "
            "single is one invoke without warmup"
        )
    instance = LiteRTInstance(runner.model_path)
    if instance.call_once_present != runner.call_once_present:
        raise RunnerError(
            f"{runner.path}: call_once_present is {runner.call_once_present}, but the model shows "
            f"{instance.call_once_present}"
        )
    values = _input_values(runner, instance.input_infos())
    names = [info.name or f"output_{k}" for k, info in enumerate(instance.output_infos())]
    per_segment = _segment_cycles(runner, len(instance.cut.segments))

    for _ in range(warmups):
        instance.fill_inputs(values)
        instance.invoke()

    latencies: list[float] = []
    cycles: list[dict[str, Any] | None] = []
    outputs: list[list[tuple[str, bytes]]] = []
    finite: list[bool] = []
    for _ in range(measured):
        instance.fill_inputs(values)
        counters = list(per_segment)  # reset for this sample
        latencies.append(instance.invoke())
        arrays = instance.outputs()
        cycles.append(
            None if any(c is None for c in counters) else {"total": sum(counters), "segments": counters}  # type: ignore[arg-type]
        )
        outputs.append([(name, array.tobytes()) for name, array in zip(names, arrays, strict=True)])
        finite.append(all(bool(np.isfinite(a).all()) for a in arrays if a.dtype.kind == "f"))

    segments = [
        {
            "index": segment.index,
            "op_range_start": segment.op_range_start,
            "op_range_end": segment.op_range_end,
            "estimated_cycles": per_segment[segment.index],
        }
        for segment in instance.cut.segments
    ]
    return Measurement(
        state=state,
        warmup_invokes=warmups,
        measured_invokes=measured,
        call_once_present=instance.call_once_present,
        latencies=latencies,
        cycles=cycles,
        outputs=outputs,
        finite=finite,
        segments=segments,
    )


def run_runner(runner_json: str | os.PathLike[str], result_dir: str | os.PathLike[str]) -> Path:
    """Run the runner and write its result bundle to `result_dir`; return the path of result.json."""
    from importlib.metadata import PackageNotFoundError, version

    from heliabuild import __version__
    from heliabuild.results.bundle import Sample, signatures_of, write_bundle
    from heliabuild.results.receipt import Receipt

    runner = load_runner(runner_json)
    receipt: Receipt | None = None
    samples: list[Sample] = []
    output_bytes: list[list[tuple[str, bytes]]] = []
    if runner.policy["fvp_enabled"]:
        result = measure(runner)
        receipt = Receipt(
            state=result.state,
            warmup_invokes=result.warmup_invokes,
            measured_invokes=result.measured_invokes,
            initialization=INITIALIZATION,
            call_once_present=result.call_once_present,
        )
        samples = [
            Sample(
                index=index,
                cycles=result.cycles[index],
                latency_s=result.latencies[index],
                sanity={"outputs_finite": result.finite[index]},
                signatures=signatures_of(result.outputs[index]),
            )
            for index in range(result.measured_invokes)
        ]
        output_bytes = result.outputs
        segments = result.segments
        stage = "executed"
    else:  # the execution stage is disabled: a build-only result, with no receipt and no samples
        cut = cut_segments(runner.model_path)
        per_segment = _segment_cycles(runner, len(cut.segments))
        segments = [
            {
                "index": segment.index,
                "op_range_start": segment.op_range_start,
                "op_range_end": segment.op_range_end,
                "estimated_cycles": per_segment[segment.index],
            }
            for segment in cut.segments
        ]
        stage = "build_only"
    try:
        litert_version: str | None = version("ai-edge-litert")
    except PackageNotFoundError:
        litert_version = None
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
        provider_versions={"ai-edge-litert": litert_version, "heliabuild": __version__},
        created_at=datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        stage=stage,
        runtime=runner.backend,
    )
