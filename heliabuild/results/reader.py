"""Reading and verifying a result bundle (docs/runner.md, "The bundle").

`load_result` accepts a bundle only when every check passes, in this order:

1. result.json is JSON with `schema_version` 4 (an earlier schema is refused by name);
2. an executed result has its receipt `artifacts/acquisition.json`; an unexecuted one has none;
3. manifest.json lists every file of the bundle but itself, each with the sha256 of its bytes;
4. result.json validates against its schema;
5. exactly one receipt, supported, consistent with the stage, the runtime and the number of samples;
6. the samples are in order (index 0 first), their output files match their signatures, run_summary.csv
   matches them, and the stored statistics reproduce them exactly.

Every failure is a ResultError (ReceiptError for the receipt) naming the file and the field.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from heliabuild.errors import ReceiptError, ResultError, SchemaError
from heliabuild.files import sha256_bytes
from heliabuild.results.bundle import (
    MANIFEST_FILE,
    RESULT_FILE,
    RESULT_SCHEMA_VERSION,
    SAMPLES_DIR,
    SUMMARY_FILE,
    Sample,
    output_files,
    summary_csv,
)
from heliabuild.results.receipt import RECEIPT_PATH, SCHEMA_ID, Receipt
from heliabuild.results.statistics import Statistics, compute_statistics
from heliabuild.schema_files import validate


@dataclass(frozen=True)
class Result:
    """A verified result bundle."""

    path: Path
    document: dict[str, Any]
    manifest: dict[str, str]
    receipt: Receipt | None
    samples: tuple[Sample, ...]
    statistics: Statistics | None

    @property
    def stage(self) -> str:
        return self.document["stage"]

    @property
    def runtime(self) -> str:
        return self.document["runtime"]

    @property
    def executed(self) -> bool:
        return self.stage == "executed"

    @property
    def segments(self) -> list[dict[str, Any]]:
        return self.document["segments"]


def _read_json(path: Path, relative: str) -> Any:
    try:
        return json.loads(path.read_bytes())
    except FileNotFoundError:
        raise ResultError(f"{path.parent}: {relative} is missing") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ResultError(f"{relative}: not valid JSON ({error})") from None


def _bundle_files(root: Path) -> set[str]:
    found: set[str] = set()
    for folder, _dirs, names in os.walk(root):
        for name in names:
            found.add((Path(folder) / name).relative_to(root).as_posix())
    return found


def _check_manifest(root: Path, manifest: dict[str, str]) -> dict[str, bytes]:
    present = _bundle_files(root) - {MANIFEST_FILE}
    unlisted = sorted(present - set(manifest))
    if unlisted:
        raise ResultError(f"{MANIFEST_FILE}: file {unlisted[0]} is in the bundle but not listed in the manifest")
    missing = sorted(set(manifest) - present)
    if missing:
        raise ResultError(f"{MANIFEST_FILE}: file {missing[0]} is listed but missing from the bundle")
    contents: dict[str, bytes] = {}
    for relative, expected in sorted(manifest.items()):
        data = (root / relative).read_bytes()
        found = sha256_bytes(data)
        if found != expected:
            raise ResultError(
                f"{relative}: sha256 {found} does not match manifest.json files[{relative!r}] {expected}; "
                "the bundle was modified after it was written"
            )
        contents[relative] = data
    return contents


def _receipt_files(contents: dict[str, bytes]) -> list[str]:
    """Every bundle file that holds a helx.acquisition receipt (or entries of one)."""
    found = []
    for relative, data in contents.items():
        if not relative.endswith(".json") or relative in (RESULT_FILE, MANIFEST_FILE):
            continue
        if relative == RECEIPT_PATH or Path(relative).name.startswith("acquisition"):
            found.append(relative)
            continue
        try:
            document = json.loads(data)
        except (UnicodeDecodeError, json.JSONDecodeError):
            continue
        entries = document if isinstance(document, list) else [document]
        if any(isinstance(entry, dict) and entry.get("schema") == SCHEMA_ID for entry in entries):
            found.append(relative)
    return sorted(found)


def verify_bundle(path: str | os.PathLike[str]) -> Result:
    """Read the bundle folder `path` and verify it (module docstring); the verified Result."""
    root = Path(path)
    if not root.is_dir():
        raise ResultError(f"{root}: not a result bundle folder")
    document = _read_json(root / RESULT_FILE, RESULT_FILE)
    if not isinstance(document, dict):
        raise ResultError(f"{RESULT_FILE}: found {type(document).__name__}, expected an object")
    version = document.get("schema_version")
    if version != RESULT_SCHEMA_VERSION or isinstance(version, bool):
        raise ResultError(
            f"{RESULT_FILE}: schema_version: result schema {version} is not supported; create a new capture",
            hint=f"this heliabuild reads result schema {RESULT_SCHEMA_VERSION} only",
        )
    executed = document.get("stage") == "executed"
    if executed and not (root / RECEIPT_PATH).is_file():
        raise ReceiptError(f"{RECEIPT_PATH}: missing acquisition receipt of an executed result")
    manifest_document = _read_json(root / MANIFEST_FILE, MANIFEST_FILE)
    try:
        validate(manifest_document, "manifest", MANIFEST_FILE)
        validate(document, "result", RESULT_FILE)
    except SchemaError as error:
        raise ResultError(error.message) from None
    manifest: dict[str, str] = manifest_document["files"]
    contents = _check_manifest(root, manifest)

    receipts = _receipt_files(contents)
    receipt: Receipt | None = None
    if executed:
        if receipts != [RECEIPT_PATH]:
            others = [name for name in receipts if name != RECEIPT_PATH]
            raise ReceiptError(
                f"{others[0]}: duplicate acquisition receipt beside {RECEIPT_PATH}; expected exactly one receipt"
            )
        receipt = Receipt.from_json(_read_json(root / RECEIPT_PATH, RECEIPT_PATH), RECEIPT_PATH)
    elif receipts:
        raise ReceiptError(
            f"{receipts[0]}: an acquisition receipt in a result whose stage is {document['stage']!r} "
            "(the run did not execute)"
        )

    segment_count = len(document["segments"])
    samples: tuple[Sample, ...] = ()
    statistics: Statistics | None = None
    measurements = document["measurements"]
    if executed and measurements is None:
        raise ResultError(f"{RESULT_FILE}: measurements: null in an executed result, expected samples")
    if not executed and measurements is not None:
        raise ResultError(f"{RESULT_FILE}: measurements: present in a result whose stage is {document['stage']!r}")
    if measurements is not None:
        samples = tuple(Sample.from_json(item) for item in measurements["samples"])
        assert receipt is not None
        receipt.check(source=RECEIPT_PATH, sample_count=len(samples), runtime=document["runtime"])
        expected_files: set[str] = set()
        for position, sample in enumerate(samples):
            where = f"{RESULT_FILE}: measurements.samples[{position}]"
            if sample.index != position:
                raise ResultError(f"{where}.index: found {sample.index}, expected {position}")
            if sample.cycles is not None and len(sample.cycles["segments"]) != segment_count:
                raise ResultError(
                    f"{where}.cycles.segments: found {len(sample.cycles['segments'])} entries, "
                    f"expected one per segment ({segment_count})"
                )
            for name, file_name in output_files(list(sample.signatures)).items():
                relative = f"{SAMPLES_DIR}/{position}/{file_name}"
                expected_files.add(relative)
                if relative not in contents:
                    raise ResultError(f"{where}.signatures[{name!r}]: output file {relative} is missing")
                if sha256_bytes(contents[relative]) != sample.signatures[name]:
                    raise ResultError(f"{where}.signatures[{name!r}]: does not match the bytes of {relative}")
        extra = sorted(name for name in contents if name.startswith(f"{SAMPLES_DIR}/") and name not in expected_files)
        if extra:
            raise ResultError(f"{extra[0]}: an output file no sample's signatures name")
        summary = contents.get(SUMMARY_FILE)
        if summary is None:
            raise ResultError(f"{SUMMARY_FILE}: missing from an executed result")
        if summary.decode("utf-8", errors="replace") != summary_csv(samples, segment_count):
            raise ResultError(f"{SUMMARY_FILE}: does not match {RESULT_FILE} measurements.samples")
        stored = measurements["statistics"]
        statistics = Statistics.from_json(stored, f"{RESULT_FILE}: measurements.statistics")
        recomputed = compute_statistics(samples, segment_count).to_json()
        for kind in ("counters", "float"):
            names = sorted(set(stored[kind]) | set(recomputed[kind]))
            for name in names:
                if stored[kind].get(name, "absent") != recomputed[kind].get(name, "absent"):
                    raise ResultError(
                        f"{RESULT_FILE}: measurements.statistics.{kind}[{name!r}]: found {stored[kind].get(name)!r}, "
                        f"the samples give {recomputed[kind].get(name)!r}"
                    )
    return Result(
        path=root,
        document=document,
        manifest=dict(manifest),
        receipt=receipt,
        samples=samples,
        statistics=statistics,
    )


def load_result(path: str | os.PathLike[str]) -> Result:
    """The verified result bundle at `path` (its folder, or its result.json)."""
    root = Path(path)
    if root.name == RESULT_FILE and root.is_file():
        root = root.parent
    return verify_bundle(root)
