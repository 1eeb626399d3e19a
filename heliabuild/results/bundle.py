"""Writing a result bundle (docs/runner.md, "The bundle").

    results/<name>/
      result.json                         schema 4: identity, stage, runtime, samples, statistics, segments
      manifest.json                       {"files": {relative path: sha256}} over every other file
      signature.json                      only with HELIA_BUNDLE_KEY set: the HMAC-SHA256 of manifest.json
      run_summary.csv                     one indexed row per sample
      artifacts/acquisition.json          the helx.acquisition receipt
      artifacts/samples/<i>/<output>.bin  the output bytes of measured sample i

The bundle is written to a temporary folder beside the target, verified as a reader would verify it, and
renamed into place; a failure publishes nothing and leaves no temporary folder behind. The target must be
new, an empty folder or an earlier bundle that verifies (`check_bundle_target`): nothing else is replaced,
and of an earlier bundle only the files its manifest lists are deleted.
"""

from __future__ import annotations

import contextlib
import csv
import hashlib
import hmac
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
from heliabuild.files import errors_naming, json_text, make_folders, remove_folders, sha256_bytes
from heliabuild.results.receipt import RECEIPT_PATH, Receipt
from heliabuild.results.statistics import compute_statistics
from heliabuild.schema_files import validate

RESULT_SCHEMA_VERSION = 4
RESULT_FILE = "result.json"
MANIFEST_FILE = "manifest.json"
SUMMARY_FILE = "run_summary.csv"
SAMPLES_DIR = "artifacts/samples"
SIGNATURE_FILE = "signature.json"
KEY_VARIABLE = "HELIA_BUNDLE_KEY"
SIGNATURE_ALGORITHM = "hmac-sha256"

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


def bundle_key() -> bytes | None:
    """The bundle signing key: the UTF-8 bytes of the environment variable HELIA_BUNDLE_KEY, or None when it
    is unset or empty (then bundles are written unsigned and read without checking a signature)."""
    value = os.environ.get(KEY_VARIABLE)
    return value.encode("utf-8") if value else None


def manifest_hmac(manifest: bytes, key: bytes) -> str:
    """The hex HMAC-SHA256 of the exact bytes of manifest.json under `key`."""
    return hmac.new(key, manifest, hashlib.sha256).hexdigest()


def signatures_of(outputs: Sequence[tuple[str, bytes]]) -> dict[str, str]:
    """The `signatures` of a sample: output name -> sha256 of its bytes (a fingerprint, not a verdict)."""
    return {name: sha256_bytes(data) for name, data in outputs}


@dataclass(frozen=True)
class Sample:
    """One measured invoke: `measurements.samples[index]`. A figure that is not known is None, never invented.

    `cycles` and `instructions` are counts measured on the target, each `{"total": n, "segments": [...]}`
    (their scopes are the result's `scopes`); `latency_s` and `segment_latency_s` are measured wall times;
    `verification` compares each output with the reference. Vela's estimate is never a sample figure: it is
    `segments[].estimated_cycles`."""

    index: int
    cycles: dict[str, Any] | None = None
    traffic_beats: int | None = None
    latency_s: float | None = None
    port_utilization: dict[str, float] | None = None
    utilization_fraction: float | None = None
    energy: float | None = None
    sanity: dict[str, Any] = field(default_factory=lambda: {"outputs_finite": True})
    signatures: dict[str, str] = field(default_factory=dict)
    instructions: dict[str, Any] | None = None
    segment_latency_s: list[float] | None = None
    verification: list[dict[str, Any]] | None = None

    def __post_init__(self) -> None:
        # Normalize numbers (numpy scalars, ints for reals) so JSON, CSV and statistics agree after a round trip.
        def real(value: Any) -> float | None:
            return None if value is None else float(value)

        def integer(value: Any) -> int | None:
            return None if value is None else int(value)

        def counts(value: dict[str, Any] | None) -> dict[str, Any] | None:
            if value is None:
                return None
            return {"total": int(value["total"]), "segments": [int(v) for v in value["segments"]]}

        set_field = object.__setattr__
        set_field(self, "index", int(self.index))
        set_field(self, "cycles", counts(self.cycles))
        set_field(self, "instructions", counts(self.instructions))
        set_field(self, "traffic_beats", integer(self.traffic_beats))
        for name in ("latency_s", "utilization_fraction", "energy"):
            set_field(self, name, real(getattr(self, name)))
        if self.segment_latency_s is not None:
            set_field(self, "segment_latency_s", [float(v) for v in self.segment_latency_s])
        if self.port_utilization is not None:
            set_field(self, "port_utilization", {str(k): float(v) for k, v in self.port_utilization.items()})
        if self.verification is not None:
            set_field(self, "verification", [dict(check) for check in self.verification])
        set_field(self, "sanity", dict(self.sanity))
        set_field(self, "signatures", {str(k): str(v) for k, v in self.signatures.items()})

    def to_json(self) -> dict[str, Any]:
        def counts(value: dict[str, Any] | None) -> dict[str, Any] | None:
            return None if value is None else {"total": value["total"], "segments": list(value["segments"])}

        return {
            "index": self.index,
            "cycles": counts(self.cycles),
            "traffic_beats": self.traffic_beats,
            "latency_s": self.latency_s,
            "port_utilization": None if self.port_utilization is None else dict(self.port_utilization),
            "utilization_fraction": self.utilization_fraction,
            "energy": self.energy,
            "sanity": dict(self.sanity),
            "signatures": dict(self.signatures),
            "instructions": counts(self.instructions),
            "segment_latency_s": None if self.segment_latency_s is None else list(self.segment_latency_s),
            "verification": None if self.verification is None else [dict(check) for check in self.verification],
        }

    def segment_problem(self, segment_count: int) -> str | None:
        """Why the sample's per-segment figures do not fit `segment_count` segments (`<field>: ...`), or None:
        each list has one entry per segment, and instruction counts add up to their total."""
        for name in ("cycles", "instructions"):
            counts = getattr(self, name)
            if counts is not None and len(counts["segments"]) != segment_count:
                found = len(counts["segments"])
                return f"{name}.segments: found {found} entries, expected one per segment ({segment_count})"
        if self.instructions is not None and sum(self.instructions["segments"]) != self.instructions["total"]:
            return (
                f"instructions.segments: add up to {sum(self.instructions['segments'])}, "
                f"not the total {self.instructions['total']}"
            )
        if self.segment_latency_s is not None and len(self.segment_latency_s) != segment_count:
            found = len(self.segment_latency_s)
            return f"segment_latency_s: found {found} entries, expected one per segment ({segment_count})"
        return None

    @classmethod
    def from_json(cls, document: Mapping[str, Any]) -> Sample:
        """A sample from an already schema-validated `measurements.samples[i]`."""

        def real(value: Any) -> float | None:
            return None if value is None else float(value)

        return cls(
            index=document["index"],
            cycles=document["cycles"],
            traffic_beats=document["traffic_beats"],
            latency_s=real(document["latency_s"]),
            port_utilization=None
            if document["port_utilization"] is None
            else {name: float(value) for name, value in document["port_utilization"].items()},
            utilization_fraction=real(document["utilization_fraction"]),
            energy=real(document["energy"]),
            sanity=dict(document["sanity"]),
            signatures=dict(document["signatures"]),
            instructions=document.get("instructions"),
            segment_latency_s=document.get("segment_latency_s"),
            verification=document.get("verification"),
        )


def summary_csv(samples: Sequence[Sample], segment_count: int) -> str:
    """`run_summary.csv`: one indexed row per sample; an unknown figure is an empty cell. Columns: index,
    cycles_total, latency_s, energy, cycles_segment_<k>..., then instructions_total, instructions_segment_<k>...
    and segment_latency_s_<k>..."""

    def cell(value: Any) -> str:
        return "" if value is None else repr(value) if isinstance(value, float) else str(value)

    def per_segment(counts: dict[str, Any] | None) -> list[Any]:
        return [None] * segment_count if counts is None else list(counts["segments"])

    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(
        [
            "index",
            "cycles_total",
            "latency_s",
            "energy",
            *(f"cycles_segment_{k}" for k in range(segment_count)),
            "instructions_total",
            *(f"instructions_segment_{k}" for k in range(segment_count)),
            *(f"segment_latency_s_{k}" for k in range(segment_count)),
        ]
    )
    for sample in samples:
        total = None if sample.cycles is None else sample.cycles["total"]
        instructions = None if sample.instructions is None else sample.instructions["total"]
        latencies = [None] * segment_count if sample.segment_latency_s is None else list(sample.segment_latency_s)
        row = [sample.index, total, sample.latency_s, sample.energy, *per_segment(sample.cycles)]
        row += [instructions, *per_segment(sample.instructions), *latencies]
        writer.writerow([cell(v) for v in row])
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
        problem = sample.segment_problem(segment_count)
        if problem is not None:
            raise ResultError(f"{where}.{problem}")
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
    scopes: Mapping[str, Any] | None = None,
) -> dict[str, bytes]:
    """Every file of a bundle, by relative path (the manifest, then its signature when HELIA_BUNDLE_KEY is
    set, last), checked but not yet verified as read."""
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
    if scopes is not None:
        document["scopes"] = dict(scopes)
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
    key = bundle_key()
    if key is not None:
        signature = {
            "algorithm": SIGNATURE_ALGORITHM,
            "signed": MANIFEST_FILE,
            "hmac": manifest_hmac(files[MANIFEST_FILE], key),
        }
        validate(signature, "bundle-signature", SIGNATURE_FILE)
        files[SIGNATURE_FILE] = json_text(signature).encode("utf-8")
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
    scopes: Mapping[str, Any] | None = None,
) -> Path:
    """Write and verify the bundle in a temporary folder beside `result_dir`, then rename it into place.
    `result_dir` must be new, an empty folder or an earlier bundle that verifies (`check_bundle_target`);
    an earlier bundle is renamed away, the new one renamed in, and only the earlier bundle's own files are
    deleted. Returns the path of `result.json`. Raises ResultError (or ReceiptError, SchemaError) and then
    publishes nothing, leaves the target as it was and no temporary or created folder behind."""
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
        scopes=scopes,
    )
    check_bundle_target(target)  # before anything is written; again just before the earlier bundle is moved
    with errors_naming(target):
        old, earlier = _publish(target, files)
    if old is not None:
        _remove_bundle(old, earlier)
    return target / RESULT_FILE


def _publish(target: Path, files: dict[str, bytes]) -> tuple[Path | None, list[str]]:
    """Stage `files` beside `target`, verify them and rename them into place; the folder the earlier bundle
    was renamed to (None when there was none) and that bundle's files. On failure nothing is left."""
    from heliabuild.results.reader import verify_bundle

    created = make_folders(target.parent)
    staging: Path | None = None
    old: Path | None = None
    try:
        staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent))
        for relative, data in files.items():
            path = staging / relative
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
        os.chmod(staging, 0o755)
        verify_bundle(staging)
        earlier = check_bundle_target(target)
        if earlier is not None:
            old = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".old", dir=target.parent))
            os.rmdir(old)
            os.replace(target, old)
        try:
            os.replace(staging, target)  # onto nothing, an empty folder, or (renamed away) the earlier bundle
        except BaseException:
            if old is not None:
                os.replace(old, target)
            raise
    except BaseException:
        if staging is not None:
            shutil.rmtree(staging, ignore_errors=True)
        remove_folders(created)
        raise
    return old, earlier or []


def check_bundle_target(result_dir: str | os.PathLike[str]) -> list[str] | None:
    """Where a bundle may be written: None when `result_dir` does not exist or is an empty folder, the
    files of the earlier bundle (every relative path it may hold, manifest.json last) when it is a bundle
    folder that verifies as one. Raises ResultError naming `result_dir` for anything else (a file, a
    symlink, a folder holding anything but a verified bundle, a bundle that was tampered with, a path
    inside a bundle): a bundle replaces only what is recognisably an earlier bundle."""
    from heliabuild.results.reader import verify_bundle

    target = Path(result_dir)
    for parent in Path(os.path.realpath(target)).parents:
        if (parent / MANIFEST_FILE).is_file() and (parent / RESULT_FILE).is_file():
            raise ResultError(
                f"{target}: lies inside the result bundle {parent}; a bundle is never written into another",
                hint="choose an -o outside every bundle",
            )
    if target.is_symlink():
        raise ResultError(f"{target}: the bundle folder is a symlink; heliabuild replaces only an earlier bundle")
    if not target.exists():
        return None
    if not target.is_dir():
        raise ResultError(
            f"{target}: exists and is not a folder; heliabuild replaces only an earlier result bundle",
            hint="choose another -o, or move the file away yourself",
        )
    if not any(target.iterdir()):
        return None
    if not (target / RESULT_FILE).is_file() or not (target / MANIFEST_FILE).is_file():
        raise ResultError(
            f"{target}: the folder is not empty and is not a result bundle (it has no {RESULT_FILE} and "
            f"{MANIFEST_FILE}); heliabuild replaces only an earlier bundle",
            hint="choose another -o, or an empty or new folder",
        )
    try:
        earlier = verify_bundle(target)
    except ResultError as error:
        raise ResultError(
            f"{target}: the folder is not empty and is not a result bundle that verifies ({error.message}); "
            "heliabuild replaces only an earlier bundle",
            hint="choose another -o, or an empty or new folder",
        ) from None
    return [*earlier.manifest, SIGNATURE_FILE, MANIFEST_FILE]


def discard_bundle(result_dir: str | os.PathLike[str]) -> None:
    """Delete the bundle at `result_dir` when it verifies as one (only the files its manifest lists, then
    its folders while empty), or the folder when it is empty; leave anything else (a folder of the user's
    files, a tampered bundle, a file) exactly as it is."""
    try:
        files = check_bundle_target(result_dir)
    except ResultError:
        return
    if Path(result_dir).is_dir():
        _remove_bundle(Path(result_dir), files or [])


def _remove_bundle(folder: Path, files: Sequence[str]) -> None:
    """Delete the earlier bundle renamed to `folder`: its own `files`, then its folders while empty. Anything
    else found there (put in after it was verified) is left, and so is `folder` with it."""
    for relative in files:
        with contextlib.suppress(OSError):
            (folder / relative).unlink()
    for current, _folders, _names in os.walk(folder, topdown=False):
        with contextlib.suppress(OSError):
            os.rmdir(current)
