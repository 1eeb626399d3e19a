"""The acquisition lifecycle (../shared/spec/acquisition-lifecycle.md): running a runner and publishing its
result bundle.

`run_runner(runner_json, result_dir)` loads and verifies the runner (heliabuild.runner.freeze.load_runner),
measures with its backend (`measure`: the backend the registry names for it, heliabuild.runner.backends), and
writes the bundle with heliabuild.results.bundle.write_bundle, which publishes nothing when any check fails. A
policy with `fvp_enabled: false` executes nothing: the bundle is `build_only` (no receipt, no samples).

`carry` keeps the one instance across warmups and samples; `single` is one invoke on the initialized
instance without warmup. Filling inputs is not resetting state: resource variables persist. Vela's
estimate is never a sample figure: it is `segments[].estimated_cycles`, and Vela's memory allocation (SRAM,
off-chip flash) and options are result.json's `vela`, read from the runner's segments.json. What each backend
runs and measures: docs/runner.md, "Backends".
"""

from __future__ import annotations

import datetime
import os
from pathlib import Path
from typing import Any

from heliabuild.progress import activity
from heliabuild.runner.backends import backend_of
from heliabuild.runner.freeze import Runner, load_runner
from heliabuild.runner.measurement import Measurement


def measure(runner: Runner, timeout_s: float | None = None, result_dir: Path | None = None) -> Measurement:
    """Execute the lifecycle the runner's policy states with the runner's backend; what it measured.
    `timeout_s` bounds a run on a simulated target (default: the backend's). A run that fails in a way its log
    reader does not know keeps the log beside `result_dir` (heliabuild.runner.backends.fvp_common.keep_log)."""
    return backend_of(runner.record).measure(runner, timeout_s, result_dir)


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
    backend = backend_of(runner.record)
    receipt: Receipt | None = None
    samples: list[Sample] = []
    output_bytes: list[list[tuple[str, bytes]]] = []
    scopes: dict[str, Any] | None = None
    extra_versions: dict[str, str | None] = {}
    if runner.policy.fvp_enabled:
        result = measure(runner, timeout_s, Path(result_dir))
        receipt = Receipt(
            state=result.state,
            warmup_invokes=result.warmup_invokes,
            measured_invokes=result.measured_invokes,
            initialization=result.initialization,
            call_once_present=result.call_once_present,
        )
        samples = [
            Sample(index=index, signatures=signatures_of(list(sample.outputs)), **sample.figures.sample_fields())
            for index, sample in enumerate(result.samples)
        ]
        output_bytes = [list(sample.outputs) for sample in result.samples]
        segments = list(result.segments)
        scopes = result.scopes.to_json()
        extra_versions = result.provider_versions
        stage = "executed"
    else:  # the execution stage is disabled: a build-only result, with no receipt and no samples
        segments = runner.segment_records()
        stage = "build_only"
    provider_versions: dict[str, str | None] = {"heliabuild": __version__}
    try:
        provider_versions["ai-edge-litert"] = version("ai-edge-litert")
    except PackageNotFoundError:
        provider_versions["ai-edge-litert"] = None
    provider_versions.update(backend.provider_versions(runner))
    provider_versions.update(extra_versions)
    with activity(f"run {runner.path.parent.name}: writing the bundle of {len(samples)} samples"):
        return write_bundle(
            result_dir,
            runner_info={"sha256": runner.sha256, "format": runner.record.format},
            run_identity={
                "runner_sha256": runner.sha256,
                "model_sha256": runner.model_sha256,
                "backend": runner.backend,
                "policy": runner.policy.to_json(),
            },
            receipt=receipt,
            samples=samples,
            output_bytes=output_bytes,
            segments=segments,
            provider_versions=provider_versions,
            created_at=datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
            stage=stage,
            runtime=backend.runtime,
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
