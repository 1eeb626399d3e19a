"""Reading and verifying a result bundle (docs/runner.md, "The bundle").

`load_result` accepts a bundle only when every check passes, in this order:

0. the bundle holds only regular files and folders (no symlink to anything, no FIFO or device), at most
   MAX_BUNDLE_ENTRIES of them; each file is read once, at most MAX_FILE_BYTES of it and MAX_BUNDLE_BYTES of
   all of them, and its JSON is strict UTF-8 nested at most heliabuild.documents.MAX_DEPTH levels;
1. result.json is JSON with `schema_version` 4 (an earlier schema is refused by name);
2. an executed result has its receipt `artifacts/acquisition.json`; an unexecuted one has none;
3. with HELIA_BUNDLE_KEY set, signature.json holds the HMAC-SHA256 of manifest.json under that key; manifest.json
   lists every file of the bundle but itself (and signature.json), each with the sha256 of its bytes;
4. result.json validates against its schema;
5. exactly one receipt, supported, consistent with the stage, the runtime and the number of samples;
6. the samples are in order (index 0 first), each figure is non-null only where the result's `scopes` name
   how the backend measured it (heliabuild.results.scopes), their output files match their signatures,
   run_summary.csv matches them, and the stored statistics reproduce them exactly.

Every failure is a ResultError (ReceiptError for the receipt) naming the file and the field.
"""

from __future__ import annotations

import hmac
import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from heliabuild.documents import MAX_DOCUMENT_BYTES, parse_json, read_regular_file
from heliabuild.errors import ReceiptError, ResultError, SchemaError
from heliabuild.files import sha256_bytes
from heliabuild.results.layout import (
    KEY_VARIABLE,
    MANIFEST_FILE,
    RESULT_FILE,
    RESULT_SCHEMA_VERSION,
    SAMPLES_DIR,
    SIGNATURE_FILE,
    SUMMARY_FILE,
    Sample,
    bundle_key,
    manifest_hmac,
    output_files,
    summary_csv,
)
from heliabuild.results.receipt import RECEIPT_PATH, SCHEMA_ID, Receipt
from heliabuild.results.scopes import scope_problem
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

    @property
    def vela(self) -> dict[str, Any] | None:
        """What Vela reported compiling the model (its options and memory allocation, Vela's figures, not
        measured), or None for a bundle whose runner had no segments.json."""
        return self.document.get("vela")


MAX_FILE_BYTES = MAX_DOCUMENT_BYTES
"""The largest file of a bundle read (64 MiB)."""

MAX_BUNDLE_BYTES = 256 << 20
"""The most bytes read from one bundle, all files together (256 MiB)."""

MAX_BUNDLE_ENTRIES = 1 << 18
"""The most files and folders walked in one bundle."""


class _BundleFiles:
    """The regular files of a bundle folder: found without following a symlink, each read at most once,
    every read bounded by MAX_FILE_BYTES and all of them together by MAX_BUNDLE_BYTES."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.names = self._walk()
        self._remaining = MAX_BUNDLE_BYTES
        self._read: dict[str, bytes] = {}

    def _walk(self) -> set[str]:
        """Every file under the root by relative path; ResultError for a symlink (to anything), a FIFO, a
        device or a socket inside the bundle, or more than MAX_BUNDLE_ENTRIES entries."""
        found: set[str] = set()
        count = 0
        pending = [("", os.fspath(self.root))]
        while pending:
            prefix, folder = pending.pop()
            try:
                with os.scandir(folder) as entries:  # read as walked: the entry count stops a huge folder
                    for entry in entries:
                        count += 1
                        if count > MAX_BUNDLE_ENTRIES:
                            raise ResultError(f"{self.root}: holds more than {MAX_BUNDLE_ENTRIES} files and folders")
                        mode = entry.stat(follow_symlinks=False).st_mode
                        if stat.S_ISLNK(mode):
                            raise ResultError(
                                f"{entry.path}: a symlink inside the result bundle; a bundle holds only regular "
                                "files and folders"
                            )
                        if stat.S_ISDIR(mode):
                            pending.append((prefix + entry.name + "/", entry.path))
                        elif stat.S_ISREG(mode):
                            found.add(prefix + entry.name)
                        else:
                            raise ResultError(
                                f"{entry.path}: not a regular file; a bundle holds only regular files and folders"
                            )
            except OSError as error:
                raise ResultError(f"{folder}: cannot read the bundle folder: {error.strerror or error}") from None
        return found

    def read(self, relative: str) -> bytes:
        """The bytes of the bundle file `relative`; ResultError when it is missing or too large."""
        if relative in self._read:
            return self._read[relative]
        if relative not in self.names:
            raise ResultError(f"{self.root}: {relative} is missing")
        if self._remaining <= 0:
            raise ResultError(f"{self.root}: the bundle holds more than the {MAX_BUNDLE_BYTES} bytes read")
        data = read_regular_file(
            self.root / relative,
            "bundle file",
            error=ResultError,
            limit=min(MAX_FILE_BYTES, self._remaining),
            follow_symlinks=False,
        )
        self._remaining -= len(data)
        self._read[relative] = data
        return data

    def read_json(self, relative: str) -> Any:
        return parse_json(self.read(relative), relative, "bundle file", error=ResultError)


def _check_signature(files: _BundleFiles, key: bytes) -> None:
    """With a key set, the bundle must carry signature.json holding the HMAC of manifest.json's bytes."""
    if SIGNATURE_FILE not in files.names:
        raise ResultError(
            f"{SIGNATURE_FILE}: missing, and {KEY_VARIABLE} is set: only a bundle signed with that key is read",
            hint=f"unset {KEY_VARIABLE} to read an unsigned bundle (then only its integrity is checked)",
        )
    document = files.read_json(SIGNATURE_FILE)
    try:
        validate(document, "bundle-signature", SIGNATURE_FILE)
    except SchemaError as error:
        raise ResultError(error.message) from None
    if not hmac.compare_digest(document["hmac"], manifest_hmac(files.read(MANIFEST_FILE), key)):
        raise ResultError(
            f"{SIGNATURE_FILE}: the HMAC of {MANIFEST_FILE} under the key in {KEY_VARIABLE} does not match; "
            "the bundle was signed with another key or changed after it was signed"
        )


def _check_manifest(files: _BundleFiles, manifest: dict[str, str]) -> dict[str, bytes]:
    present = files.names - {MANIFEST_FILE, SIGNATURE_FILE}
    unlisted = sorted(present - set(manifest))
    if unlisted:
        raise ResultError(f"{MANIFEST_FILE}: file {unlisted[0]} is in the bundle but not listed in the manifest")
    missing = sorted(set(manifest) - present)
    if missing:
        raise ResultError(f"{MANIFEST_FILE}: file {missing[0]} is listed but missing from the bundle")
    contents: dict[str, bytes] = {}
    for relative, expected in sorted(manifest.items()):
        data = files.read(relative)
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
            document = parse_json(data, relative, "bundle file", error=ResultError)
        except ResultError:
            continue
        entries = document if isinstance(document, list) else [document]
        if any(isinstance(entry, dict) and entry.get("schema") == SCHEMA_ID for entry in entries):
            found.append(relative)
    return sorted(found)


def verify_bundle(path: str | os.PathLike[str], *, known_valid: frozenset[str] = frozenset()) -> Result:
    """Read the bundle folder `path` and verify it (module docstring); the verified Result.

    `known_valid` names those of result.json and manifest.json whose bytes the caller knows are ones that
    validated against their schemas (SCons's integrity check: the content signature SCons stored when
    heliabuild wrote them, and write_bundle validates both before writing); their schema validation (check 4)
    is skipped, and every other check runs."""
    root = Path(path)
    if not root.is_dir():
        raise ResultError(f"{root}: not a result bundle folder")
    if not os.path.lexists(root / RESULT_FILE):  # before walking what may be any folder of the user's
        raise ResultError(f"{root}: {RESULT_FILE} is missing")
    files = _BundleFiles(root)
    document = files.read_json(RESULT_FILE)
    if not isinstance(document, dict):
        raise ResultError(f"{RESULT_FILE}: found {type(document).__name__}, expected an object")
    version = document.get("schema_version")
    if version != RESULT_SCHEMA_VERSION or isinstance(version, bool):
        raise ResultError(
            f"{RESULT_FILE}: schema_version: result schema {version} is not supported; create a new capture",
            hint=f"this heliabuild reads result schema {RESULT_SCHEMA_VERSION} only",
        )
    executed = document.get("stage") == "executed"
    if executed and RECEIPT_PATH not in files.names:
        raise ReceiptError(f"{RECEIPT_PATH}: missing acquisition receipt of an executed result")
    manifest_document = files.read_json(MANIFEST_FILE)
    key = bundle_key()
    if key is not None:
        _check_signature(files, key)
    try:
        if MANIFEST_FILE not in known_valid:
            validate(manifest_document, "manifest", MANIFEST_FILE)
        if RESULT_FILE not in known_valid:
            validate(document, "result", RESULT_FILE)
    except SchemaError as error:
        raise ResultError(error.message) from None
    manifest: dict[str, str] = manifest_document["files"]
    contents = _check_manifest(files, manifest)

    receipts = _receipt_files(contents)
    receipt: Receipt | None = None
    if executed:
        if receipts != [RECEIPT_PATH]:
            others = [name for name in receipts if name != RECEIPT_PATH]
            raise ReceiptError(
                f"{others[0]}: duplicate acquisition receipt beside {RECEIPT_PATH}; expected exactly one receipt"
            )
        receipt = Receipt.from_json(files.read_json(RECEIPT_PATH), RECEIPT_PATH)
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
            problem = sample.segment_problem(segment_count) or sample.verification_problem()
            if problem is not None:
                raise ResultError(f"{where}.{problem}")
            for name, file_name in output_files(list(sample.signatures)).items():
                relative = f"{SAMPLES_DIR}/{position}/{file_name}"
                expected_files.add(relative)
                if relative not in contents:
                    raise ResultError(f"{where}.signatures[{name!r}]: output file {relative} is missing")
                if sha256_bytes(contents[relative]) != sample.signatures[name]:
                    raise ResultError(f"{where}.signatures[{name!r}]: does not match the bytes of {relative}")
        problem = scope_problem(document["run_identity"]["backend"], document.get("scopes"), samples)
        if problem is not None:
            raise ResultError(f"{RESULT_FILE}: {problem}")
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
