"""Writing a result bundle (docs/runner.md, "The bundle").

    results/<name>/
      result.json                         schema 4: identity, stage, runtime, samples, statistics, segments, vela
      manifest.json                       {"files": {relative path: sha256}} over every other file
      signature.json                      only with HELIA_BUNDLE_KEY set: the HMAC-SHA256 of manifest.json
      run_summary.csv                     one indexed row per sample
      artifacts/acquisition.json          the helx.acquisition receipt
      artifacts/samples/<i>/<output>.bin  the output bytes of measured sample i

The bundle is written to a temporary folder beside the target, verified as a reader would verify it, and
renamed into place; a failure publishes nothing and leaves no temporary folder behind. The target must be
new, an empty folder or an earlier bundle that verifies (`check_bundle_target`): nothing else is replaced.
The earlier bundle is kept as the sibling `<name>.previous/` (`previous_path`), so `heliabuild compare
results/<name>.previous results/<name>` has a base; the `.previous` it replaces must itself be new, empty or a
bundle that verifies, and of that one only the files its manifest lists are deleted.
"""

from __future__ import annotations

import contextlib
import math
import os
import shutil
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from heliabuild.errors import ResultError
from heliabuild.files import errors_naming, json_text, make_folders, remove_folders, sha256_bytes
from heliabuild.results import reader
from heliabuild.results.layout import (
    KEY_VARIABLE,
    MANIFEST_FILE,
    RESULT_FILE,
    RESULT_SCHEMA_VERSION,
    SAMPLES_DIR,
    SIGNATURE_ALGORITHM,
    SIGNATURE_FILE,
    SUMMARY_FILE,
    Sample,
    bundle_key,
    manifest_hmac,
    output_files,
    sanitize_output_name,
    signatures_of,
    summary_csv,
)
from heliabuild.results.receipt import RECEIPT_PATH, Receipt
from heliabuild.results.scopes import scope_problem
from heliabuild.results.statistics import compute_statistics
from heliabuild.schema_files import validate

__all__ = [
    "KEY_VARIABLE",
    "MANIFEST_FILE",
    "PREVIOUS_SUFFIX",
    "RESULT_FILE",
    "RESULT_SCHEMA_VERSION",
    "SAMPLES_DIR",
    "SIGNATURE_FILE",
    "SUMMARY_FILE",
    "Sample",
    "build_bundle_files",
    "check_bundle_target",
    "check_publish_target",
    "discard_bundle",
    "output_files",
    "previous_path",
    "publish_bundle",
    "sanitize_output_name",
    "signatures_of",
    "summary_csv",
    "write_bundle",
]
"""Public names, those of heliabuild.results.layout included (the writer's callers import them from here)."""

PREVIOUS_SUFFIX = ".previous"


def _check_samples(
    samples: Sequence[Sample], output_bytes: Sequence[Sequence[tuple[str, bytes]]], segment_count: int
) -> None:
    if len(output_bytes) != len(samples):
        raise ResultError(f"output_bytes: found {len(output_bytes)} sample entries, expected {len(samples)}")
    for position, (sample, outputs) in enumerate(zip(samples, output_bytes, strict=True)):
        where = f"measurements.samples[{position}]"
        if sample.index != position:
            raise ResultError(f"{where}.index: found {sample.index}, expected {position} (index 0 first, in order)")
        problem = sample.segment_problem(segment_count) or sample.verification_problem()
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
    vela: Mapping[str, Any] | None = None,
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
    if vela is not None:
        document["vela"] = dict(vela)
    validate(document, "result", RESULT_FILE)
    problem = scope_problem(document["run_identity"]["backend"], scopes, samples)
    if problem is not None:
        raise ResultError(f"{RESULT_FILE}: {problem}")
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
    vela: Mapping[str, Any] | None = None,
) -> Path:
    """Write and verify the bundle in a temporary folder beside `result_dir`, then rename it into place.
    `result_dir` must be new, an empty folder or an earlier bundle that verifies (`check_bundle_target`);
    an earlier bundle is renamed to `previous_path(result_dir)`, which must then be new, an empty folder or
    a bundle that verifies too (whose own files alone are then deleted), and the new one renamed in.
    Returns the path of `result.json`. Raises ResultError (or ReceiptError, SchemaError) and then
    publishes nothing, leaves the target and its `.previous` as they were and no temporary or created
    folder behind."""
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
        vela=vela,
    )
    return publish_bundle(target, files)


def publish_bundle(result_dir: str | os.PathLike[str], files: Mapping[str, bytes]) -> Path:
    """Publish the bundle `files` (relative path -> bytes, as build_bundle_files gives them, here or on
    another machine) at `result_dir` as write_bundle does: verified in a temporary folder, then renamed into
    place, an earlier bundle kept as `previous_path(result_dir)`. Returns the path of `result.json`."""
    target = Path(result_dir)
    check_publish_target(target)  # before anything is written; again just before the earlier bundle is moved
    with errors_naming(target):
        old, oldest = _publish(target, dict(files))
    if old is not None:
        _remove_bundle(old, oldest)
    return target / RESULT_FILE


def previous_path(result_dir: str | os.PathLike[str]) -> Path:
    """Where write_bundle keeps the bundle it replaces at `result_dir`: the sibling `<name>.previous`."""
    target = Path(result_dir)
    return target.with_name(target.name + PREVIOUS_SUFFIX)


def check_publish_target(result_dir: str | os.PathLike[str]) -> None:
    """Raise ResultError, as write_bundle would, unless a bundle may be published at `result_dir`: it passes
    check_bundle_target and, when it holds an earlier bundle, so does `previous_path(result_dir)`. A command
    calls it before a long run, so that a refusal comes first."""
    if check_bundle_target(result_dir) is not None:
        _check_previous_target(Path(result_dir))


def _check_previous_target(target: Path) -> list[str] | None:
    """check_bundle_target for `previous_path(target)`, the refusal saying why that folder matters."""
    previous = previous_path(target)
    try:
        return check_bundle_target(previous)
    except ResultError as error:
        raise ResultError(
            f"{target}: the bundle there would be kept as {previous}, but {error.message}",
            hint=f"move {previous} away; heliabuild replaces only an earlier bundle there",
        ) from None


def _publish(target: Path, files: dict[str, bytes]) -> tuple[Path | None, list[str]]:
    """Stage `files` beside `target`, verify them and rename them into place, the earlier bundle (if any)
    onto `previous_path(target)`; the folder the bundle that was there was renamed to (None when there was
    none) and that bundle's files, to delete. On failure nothing is left and both folders are as they were."""
    created = make_folders(target.parent)
    previous = previous_path(target)
    staging: Path | None = None
    old: Path | None = None
    kept = False
    try:
        staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent))
        for relative, data in files.items():
            path = staging / relative
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
        os.chmod(staging, 0o755)
        reader.verify_bundle(staging)
        oldest = None
        try:
            if check_bundle_target(target) is not None:
                oldest = _check_previous_target(target)
                if oldest is not None:
                    older = Path(tempfile.mkdtemp(prefix=f".{previous.name}.", suffix=".old", dir=target.parent))
                    os.rmdir(older)
                    os.replace(previous, older)
                    old = older
                os.replace(target, previous)  # onto nothing, an empty folder, or (renamed away) the older bundle
                kept = True
            os.replace(staging, target)  # onto nothing, an empty folder, or (kept) the earlier bundle
        except BaseException:
            if kept:
                os.replace(previous, target)
            if old is not None:
                os.replace(old, previous)
            raise
    except BaseException:
        if staging is not None:
            shutil.rmtree(staging, ignore_errors=True)
        remove_folders(created)
        raise
    return old, oldest or []


def check_bundle_target(result_dir: str | os.PathLike[str]) -> list[str] | None:
    """Where a bundle may be written: None when `result_dir` does not exist or is an empty folder, the
    files of the earlier bundle (every relative path it may hold, manifest.json last) when it is a bundle
    folder that verifies as one. Raises ResultError naming `result_dir` for anything else (a file, a
    symlink, a folder holding anything but a verified bundle, a bundle that was tampered with, a path
    inside a bundle): a bundle replaces only what is recognisably an earlier bundle."""
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
        earlier = reader.verify_bundle(target)
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
