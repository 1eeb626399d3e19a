"""The reader API users import (docs/runner.md).

from heliabuild.api import acquisition_facts, load_result, measurement_samples, measurement_statistics
from heliabuild.api import run_identity

result = load_result("results/my-run")          # verified: manifest, receipt, samples, statistics
facts = acquisition_facts(result)               # None only when the run stage did not execute
for sample in measurement_samples(result):      # index 0 is the first measured invoke
    print(sample.index, sample.cycles, sample.latency_s)
stats = measurement_statistics(result)          # None for an unexecuted result
total = stats.counters["cycles.total"]          # exact: total.mean.numerator / total.mean.denominator
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from heliabuild.results.bundle import Sample
from heliabuild.results.reader import Result, load_result
from heliabuild.results.receipt import AOT_INITIALIZATION, RECEIPT_PATH
from heliabuild.results.statistics import Statistics

__all__ = [
    "AcquisitionFacts",
    "Result",
    "RunIdentity",
    "acquisition_facts",
    "load_result",
    "measurement_samples",
    "measurement_statistics",
    "portable_view",
    "run_identity",
]

EXTENSION = "helia-estimator"

COUNTED = ("cycles", "instructions")
"""The counters whose scope is a run's `counter_scope`, in order: NPU cycles (FVP), instructions (QEMU)."""


@dataclass(frozen=True)
class AcquisitionFacts:
    """The verified lifecycle of an executed run, and the comparison facts derived from it."""

    state: str
    warmup_invokes: int
    measured_invokes: int
    initialization: str
    call_once_present: bool | None
    timing_scope: str
    first_invoke_initializer: bool
    first_invoke_window: str
    instance_boundary: str
    counter_scope: str | None
    """What the run's counters count, from the result's `scopes` (heliabuild.results.scopes): `npu_callbacks`
    on an FVP, `qemu_icount` on qemu-m55, None on the host, which counts nothing."""
    cpu_timing_scope: str

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class RunIdentity:
    """What the run was: the runner and model it used, the backend and the policy compiled into the runner."""

    runner_sha256: str
    model_sha256: str
    backend: str
    policy: dict[str, Any]


def acquisition_facts(result: Result) -> AcquisitionFacts | None:
    """The lifecycle facts of `result`; None only when the run stage did not execute."""
    receipt = result.receipt
    if not result.executed or receipt is None:
        return None
    if receipt.initialization == AOT_INITIALIZATION:
        first_invoke_initializer = False
    else:
        first_invoke_initializer = bool(receipt.call_once_present)
    scopes = result.document.get("scopes") or {}
    return AcquisitionFacts(
        state=receipt.state,
        warmup_invokes=receipt.warmup_invokes,
        measured_invokes=receipt.measured_invokes,
        initialization=receipt.initialization,
        call_once_present=receipt.call_once_present,
        timing_scope="invoke_only",
        first_invoke_initializer=first_invoke_initializer,
        first_invoke_window="warmup" if receipt.warmup_invokes > 0 else "measured",
        instance_boundary="boot",
        counter_scope=next((scopes[name] for name in COUNTED if scopes.get(name)), None),
        cpu_timing_scope="invoke_only",
    )


def run_identity(result: Result) -> RunIdentity:
    identity = result.document["run_identity"]
    return RunIdentity(
        runner_sha256=identity["runner_sha256"],
        model_sha256=identity["model_sha256"],
        backend=identity["backend"],
        policy=dict(identity["policy"]),
    )


def measurement_samples(result: Result) -> list[Sample]:
    """The measured samples, index 0 (the first measured invoke) first; empty for an unexecuted result."""
    return list(result.samples)


def measurement_statistics(result: Result) -> Statistics | None:
    """The verified statistics; None for an unexecuted result."""
    return result.statistics


def portable_view(result: Result) -> dict[str, Any]:
    """The portable draft: one observation per sample (sample_count 1, its native index, a source pointer),
    the native statistics and the verified acquisition facts kept under extensions["helia-estimator"]."""
    identity = run_identity(result)
    observations = []
    for sample in result.samples:
        observations.append(
            {
                "sample_count": 1,
                "sample_index": sample.index,
                "source": f"measurements.samples/{sample.index}",
                "metrics": {
                    "cycles.total": None if sample.cycles is None else sample.cycles["total"],
                    "latency_s": sample.latency_s,
                    "energy": sample.energy,
                },
                "signatures": dict(sample.signatures),
            }
        )
    facts = acquisition_facts(result)
    acquisition: dict[str, Any] | None = None
    if facts is not None:
        acquisition = {
            **facts.to_json(),
            "evidence": {
                "receipt": {
                    "path": RECEIPT_PATH,
                    "sha256": result.manifest[RECEIPT_PATH],
                    "manifest": "manifest.json",
                }
            },
        }
    omitted = []
    if len(result.samples) > 1:
        omitted.append(
            {
                "field": "per_layer_attribution",
                "reason": "multi-inference measured per-layer attribution needs an explicit sample selection",
            }
        )
    return {
        "run": {
            "runner_sha256": identity.runner_sha256,
            "model_sha256": identity.model_sha256,
            "backend": identity.backend,
            "stage": result.stage,
            "runtime": result.runtime,
        },
        "observations": observations,
        "omitted": omitted,
        "extensions": {
            EXTENSION: {
                "statistics": None if result.statistics is None else result.statistics.to_json(),
                "acquisition": acquisition,
            }
        },
    }
