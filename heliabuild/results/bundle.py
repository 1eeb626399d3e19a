"""Writing a result bundle (docs/runner.md, "The bundle").

    results/<name>/
      result.json                         schema 4: identity, stage, runtime, samples, statistics, segments
      manifest.json                       {"files": {relative path: sha256}} over every other file
      run_summary.csv                     one indexed row per sample
      artifacts/acquisition.json          the helx.acquisition receipt
      artifacts/samples/<i>/<output>.bin  the output bytes of measured sample i

The bundle is written to a temporary folder beside the target, verified as a reader would verify it, and
renamed into place; a failure publishes nothing and leaves no temporary folder behind.
"""

from __future__ import annotations

import contextlib
import csv
import io
import math
import os
import re
import shutil
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from heliabuild.errors import ResultError
from heliabuild.files import json_text, sha256_bytes
from heliabuild.results.receipt import RECEIPT_PATH, Receipt
from heliabuild.results.statistics import compute_statistics
from heliabuild.schema_files import validate

RESULT_SCHEMA_VERSION = 4
RESULT_FILE = "result.json"
MANIFEST_FILE = "manifest.json"
SUMMARY_FILE = "run_summary.csv"
SAMPLES_DIR = "artifacts/samples"

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def sanitize_output_name(name: str) -> str:
    """A file-name stem for an output tensor name: runs of characters outside [A-Za-z0-9._-] become `_`,
    leading dots are dropped, and an empty result becomes `output`."""
    stem = _UNSAFE.sub("_", name).lstrip(".")
    return stem or "output"


def output_files(names: Sequence[str]) -> dict[str, str]:
    """Output name -> file name inside `artifacts/samples/<i>/`, decided from the sorted names alone so a
    reader can recompute it from a sample's signatures; names that sanitize alike get `-<k>` suffixes
    (k counting within the sorted names)."""
    files: dict[str, str] = {}
    taken: set[str] = set()
    for k, name in enumerate(sorted(names)):
        stem = sanitize_output_name(name)
        candidate = f"{stem}.bin"
        if candidate.lower() in taken:
            candidate = f"{stem}-{k}.bin"
        taken.add(candidate.lower())
        files[name] = candidate
    return files


def signatures_of(outputs: Sequence[tuple[str, bytes]]) -> dict[str, str]:
    """The `signatures` of a sample: output name -> sha256 of its bytes (a fingerprint, not a verdict)."""
    return {name: sha256_bytes(data) for name, data in outputs}


@dataclass(frozen=True)
class Sample:
    """One measured invoke: `measurements.samples[index]`. A figure that is not known is None."""

    index: int
    cycles: dict[str, Any] | None  # {"total": int, "segments": [int, ...]}: Vela's estimate (vela_estimate)
    traffic_beats: int | None = None
    latency_s: float | None = None
    port_utilization: dict[str, float] | None = None
    utilization_fraction: float | None = None
    energy: float | None = None
    sanity: dict[str, Any] = field(default_factory=lambda: {"outputs_finite": True})
    signatures: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        # Normalize numbers (numpy scalars, ints for reals) so JSON, CSV and statistics agree after a round trip.
        def real(value: Any) -> float | None:
            return None if value is None else float(value)

        def integer(value: Any) -> int | None:
            return None if value is None else int(value)

        set_field = object.__setattr__
        set_field(self, "index", int(self.index))
        if self.cycles is not None:
            cycles = {"total": int(self.cycles["total"]), "segments": [int(v) for v in self.cycles["segments"]]}
            set_field(self, "cycles", cycles)
        set_field(self, "traffic_beats", integer(self.traffic_beats))
        for name in ("latency_s", "utilization_fraction", "energy"):
            set_field(self, name, real(getattr(self, name)))
        if self.port_utilization is not None:
            set_field(self, "port_utilization", {str(k): float(v) for k, v in self.port_utilization.items()})
        set_field(self, "sanity", dict(self.sanity))
        set_field(self, "signatures", {str(k): str(v) for k, v in self.signatures.items()})

    def to_json(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "cycles": None
            if self.cycles is None
            else {"total": self.cycles["total"], "segments": list(self.cycles["segments"])},
            "traffic_beats": self.traffic_beats,
            "latency_s": self.latency_s,
            "port_utilization": None if self.port_utilization is None else dict(self.port_utilization),
            "utilization_fraction": self.utilization_fraction,
            "energy": self.energy,
            "sanity": dict(self.sanity),
            "signatures": dict(self.signatures),
        }

    @classmethod
    def from_json(cls, document: Mapping[str, Any]) -> Sample:
        """A sample from an already schema-validated `measurements.samples[i]`."""

        def real(value: Any) -> float | None:
            return None if value is None else float(value)

        cycles = document["cycles"]
        return cls(
            index=document["index"],
            cycles=None if cycles is None else {"total": cycles["total"], "segments": list(cycles["segments"])},
            traffic_beats=document["traffic_beats"],
            latency_s=real(document["latency_s"]),
            port_utilization=None
            if document["port_utilization"] is None
            else {name: float(value) for name, value in document["port_utilization"].items()},
            utilization_fraction=real(document["utilization_fraction"]),
            energy=real(document["energy"]),
            sanity=dict(document["sanity"]),
            signatures=dict(document["signatures"]),
        )


def summary_csv(samples: Sequence[Sample], segment_count: int) -> str:
    """`run_summary.csv`: one indexed row per sample; an unknown figure is an empty cell."""

    def cell(value: Any) -> str:
        return "" if value is None else repr(value) if isinstance(value, float) else str(value)

    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(
        ["index", "cycles_total", "latency_s", "energy", *(f"cycles_segment_{k}" for k in range(segment_count))]
    )
    for sample in samples:
        segments = [None] * segment_count if sample.cycles is None else list(sample.cycles["segments"])
        total = None if sample.cycles is None else sample.cycles["total"]
        writer.writerow([cell(v) for v in (sample.index, total, sample.latency_s, sample.energy, *segments)])
    return buffer.getvalue()


def _check_samples(
    samples: Sequence[Sample], output_bytes: Sequence[Sequence[tuple[str, bytes]]], segment_count: int
) -> None:
    if len(output_bytes) != len(samples):
        raise ResultError(f"output_bytes: found {len(output_bytes)} sample entries, expected {len(samples)}")
    for position, (sample, outputs) in enumerate(zip(samples, output_bytes, strict=True)):
        where = f"measurements.samples[{position}]"
        if sample.index != position:
            raise ResultError(f"{where}.index: found {sample.index}, expected {position} (index 0 first, in order)")
        if sample.cycles is not None and len(sample.cycles["segments"]) != segment_count:
            raise ResultError(
                f"{where}.cycles.segments: found {len(sample.cycles['segments'])} entries, "
                f"expected one per segment ({segment_count})"
            )
        for name in ("latency_s", "energy", "utilization_fraction"):
            value = getattr(sample, name)
            if value is not None and not math.isfinite(value):
                raise ResultError(f"{where}.{name}: found {value!r}, expected a finite number or null")
        names = [name for name, _ in outputs]
        if len(set(names)) != len(names):
            raise ResultError(f"output_bytes[{position}]: an output name appears twice in {names}")
        if signatures_of(outputs) != dict(sample.signatures):
            raise ResultError(
                f"{where}.signatures: do not match the sha256 of the output bytes given for the sample",
                hint="build them with heliabuild.results.bundle.signatures_of(outputs)",
            )


def build_bundle_files(
    *,
    runner_info: Mapping[str, Any],
    run_identity: Mapping[str, Any],
    receipt: Receipt | None,
    samples: Sequence[Sample],
    output_bytes: Sequence[Sequence[tuple[str, bytes]]],
    segments: Sequence[Mapping[str, Any]],
    provider_versions: Mapping[str, str | None],
    created_at: str | None,
    stage: str = "executed",
    runtime: str | None = None,
) -> dict[str, bytes]:
    """Every file of a bundle, by relative path (the manifest last), checked but not yet verified as read."""
    runtime = runtime if runtime is not None else run_identity.get("backend")
    executed = stage == "executed"
    if executed and receipt is None:
        raise ResultError("artifacts/acquisition.json: missing acquisition receipt for an executed run")
    if not executed and (receipt is not None or samples):
        raise ResultError(f"stage {stage!r}: a run that did not execute has no receipt and no samples")
    segment_list = [dict(segment) for segment in segments]
    _check_samples(samples, output_bytes, len(segment_list))
    if receipt is not None:
        receipt.check(source=RECEIPT_PATH, sample_count=len(samples), runtime=runtime)
    measurements = None
    if executed:
        measurements = {
            "samples": [sample.to_json() for sample in samples],
            "statistics": compute_statistics(samples, len(segment_list)).to_json(),
        }
    document = {
        "schema_version": RESULT_SCHEMA_VERSION,
        "runner": dict(runner_info),
        "run_identity": dict(run_identity),
        "stage": stage,
        "runtime": runtime,
        "measurements": measurements,
        "segments": segment_list,
        "created_at": created_at,
        "provider_versions": dict(provider_versions),
    }
    validate(document, "result", RESULT_FILE)
    files: dict[str, bytes] = {RESULT_FILE: json_text(document).encode("utf-8")}
    if receipt is not None:
        receipt_document = receipt.to_json()
        validate(receipt_document, "acquisition-receipt", RECEIPT_PATH)
        files[RECEIPT_PATH] = json_text(receipt_document).encode("utf-8")
    if executed:
        files[SUMMARY_FILE] = summary_csv(samples, len(segment_list)).encode("utf-8")
    for sample, outputs in zip(samples, output_bytes, strict=True):
        names = output_files([name for name, _ in outputs])
        for name, data in outputs:
            files[f"{SAMPLES_DIR}/{sample.index}/{names[name]}"] = bytes(data)
    manifest = {"files": {path: sha256_bytes(data) for path, data in sorted(files.items())}}
    validate(manifest, "manifest", MANIFEST_FILE)
    files[MANIFEST_FILE] = json_text(manifest).encode("utf-8")
    return files


def write_bundle(
    result_dir: str | os.PathLike[str],
    *,
    runner_info: Mapping[str, Any],
    run_identity: Mapping[str, Any],
    receipt: Receipt | None,
    samples: Sequence[Sample],
    output_bytes: Sequence[Sequence[tuple[str, bytes]]],
    segments: Sequence[Mapping[str, Any]],
    provider_versions: Mapping[str, str | None],
    created_at: str | None,
    stage: str = "executed",
    runtime: str | None = None,
) -> Path:
    """Write and verify the bundle in a temporary folder beside `result_dir`, then rename it into place
    (an earlier bundle is renamed away, the new one renamed in, the old one deleted). Returns the path of
    `result.json`. Raises ResultError (or ReceiptError, SchemaError) and publishes nothing on failure."""
    from heliabuild.results.reader import verify_bundle

    target = Path(result_dir)
    files = build_bundle_files(
        runner_info=runner_info,
        run_identity=run_identity,
        receipt=receipt,
        samples=samples,
        output_bytes=output_bytes,
        segments=segments,
        provider_versions=provider_versions,
        created_at=created_at,
        stage=stage,
        runtime=runtime,
    )
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent))
    old: Path | None = None
    try:
        for relative, data in files.items():
            path = staging / relative
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
        os.chmod(staging, 0o755)
        verify_bundle(staging)
        if target.exists() or target.is_symlink():
            old = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".old", dir=target.parent))
            os.rmdir(old)
            os.replace(target, old)
        try:
            os.replace(staging, target)
        except BaseException:
            if old is not None:
                os.replace(old, target)
                old = None
            raise
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    if old is not None:
        with contextlib.suppress(OSError):
            if old.is_dir() and not old.is_symlink():
                shutil.rmtree(old)
            else:
                old.unlink()
    return target / RESULT_FILE
