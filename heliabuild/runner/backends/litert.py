"""The `litert` backend: the fenced model on the host (docs/runner.md, "Backends").

ONE instance (heliabuild.runner.litert.LiteRTInstance), one LiteRT interpreter per segment, allocated once
(AllocateTensors runs before any invoke; CALL_ONCE initialization runs inside the first invoke). Warmups refill
the inputs and invoke; each measured sample refills the inputs (zeros, or the policy's fixed bytes) outside the
timer, then times each segment (its interpreter and its closing fence's copy) with time.perf_counter: host
wall time, `segment_latency_s`, adding up to `latency_s`. The host counts no cycle: `cycles` is null. With the
policy's `verification`, the outputs are compared with LiteRT (heliabuild.runner.verification).

The runner holds only the copied model (no section of its own).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from heliabuild.errors import RunnerError
from heliabuild.progress import Activity, activity
from heliabuild.results.scopes import HOST_WALL_CLOCK
from heliabuild.runner.backend import BackendBuild, BackendDefaults, BuildRequest
from heliabuild.runner.litert import LiteRTInstance, numpy_dtype
from heliabuild.runner.measurement import Figures, MeasuredSample, Measurement, Sanity, Scopes
from heliabuild.runner.policy import Policy
from heliabuild.runner.segments import TensorInfo
from heliabuild.runner.verification import verify_samples

INITIALIZATION = "interpreter_allocate_and_first_invoke"
DEFAULT_POLICY = Policy(warmup_invokes=1, measured_invokes=10, source="<default policy of litert>")
"""The policy of a litert runner given none: host time varies run to run, so one warmup and ten measured
invokes, enough for a median and a spread. The deterministic backends (qemu-m55 counts instructions, an FVP
counts NPU cycles) keep Policy()'s single invoke: another sample would repeat the first."""


def _input_values(runner: Any, infos: list[TensorInfo]) -> list[np.ndarray]:
    values = []
    for index, info in enumerate(infos):
        dtype = numpy_dtype(info)
        data = runner.input_data(index, int(np.prod(info.shape)) * np.dtype(dtype).itemsize)
        if data is None:
            values.append(np.zeros(info.shape, dtype=dtype))
        else:
            values.append(np.frombuffer(data, dtype=dtype).reshape(info.shape).copy())
    return values


def _measured_invokes(
    instance: LiteRTInstance, values: list[np.ndarray], names: list[str], measured: int, work: Activity
) -> list[MeasuredSample]:
    """The measured invokes on the warmed-up instance: each sample's figures and output bytes."""
    samples = []
    for _ in range(measured):
        instance.fill_inputs(values)
        segment_seconds = instance.invoke()
        arrays = instance.outputs()
        figures = Figures(
            latency_s=sum(segment_seconds),
            segment_latency_s=tuple(segment_seconds),
            sanity=Sanity(outputs_finite=all(bool(np.isfinite(a).all()) for a in arrays if a.dtype.kind == "f")),
        )
        outputs = tuple((name, array.tobytes()) for name, array in zip(names, arrays, strict=True))
        samples.append(MeasuredSample(figures, outputs))
        work.advance(work.done + 1)
    return samples


class LiteRTBackend(BackendDefaults):
    """The litert backend (module docstring)."""

    name = "litert"
    scopes = Scopes(latency_s=HOST_WALL_CLOCK, segment_latency_s=HOST_WALL_CLOCK)
    runtime = "litert"

    def default_policy(self) -> Policy:
        return DEFAULT_POLICY

    def build(self, request: BuildRequest) -> BackendBuild:
        return BackendBuild()

    def measure(self, runner: Any, timeout_s: float | None, result_dir: Path | None) -> Measurement:
        state, warmups, measured = runner.lifecycle_counts()
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
            samples = _measured_invokes(instance, values, names, measured, work)
        verification = runner.policy.verification
        if verification is not None:
            fills: list[bytes | None] = [value.tobytes() for value in values]
            verified = verify_samples(
                str(runner.path),
                runner.model_path,
                fills,
                warmups,
                [[data for _, data in sample.outputs] for sample in samples],
                verification,
            )
            samples = [
                MeasuredSample(replace(sample.figures, verification=checks.checks), sample.outputs)
                for sample, checks in zip(samples, verified, strict=True)
            ]
        return Measurement(
            state=state,
            warmup_invokes=warmups,
            measured_invokes=measured,
            initialization=INITIALIZATION,
            call_once_present=instance.call_once_present,
            samples=tuple(samples),
            segments=tuple(runner.segment_records(instance.cut)),
            scopes=self.scopes,
        )


BACKEND = LiteRTBackend()
