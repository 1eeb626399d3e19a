"""The layout of a result bundle (docs/runner.md, "The bundle"): its file names, the sample record, the
output file names, the manifest's HMAC and `run_summary.csv`. Shared by the writer (heliabuild.results.bundle)
and the reader (heliabuild.results.reader), which both build on this module and not on each other's.
"""

from __future__ import annotations

import csv
import hashlib
import hmac
import io
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from heliabuild.files import sha256_bytes

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
    segment_traffic_beats: list[int] | None = None
    """Each segment's traffic beats (the fvp backend); their sum is `traffic_beats`. Written only when known."""

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
        if self.segment_traffic_beats is not None:
            set_field(self, "segment_traffic_beats", [int(v) for v in self.segment_traffic_beats])
        if self.port_utilization is not None:
            set_field(self, "port_utilization", {str(k): float(v) for k, v in self.port_utilization.items()})
        if self.verification is not None:
            set_field(self, "verification", [dict(check) for check in self.verification])
        set_field(self, "sanity", dict(self.sanity))
        set_field(self, "signatures", {str(k): str(v) for k, v in self.signatures.items()})

    def to_json(self) -> dict[str, Any]:
        def counts(value: dict[str, Any] | None) -> dict[str, Any] | None:
            return None if value is None else {"total": value["total"], "segments": list(value["segments"])}

        beats = (
            {} if self.segment_traffic_beats is None else {"segment_traffic_beats": list(self.segment_traffic_beats)}
        )
        return beats | {
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
        if self.segment_traffic_beats is not None:
            if len(self.segment_traffic_beats) != segment_count:
                found = len(self.segment_traffic_beats)
                return f"segment_traffic_beats: found {found} entries, expected one per segment ({segment_count})"
            if sum(self.segment_traffic_beats) != self.traffic_beats:
                return (
                    f"segment_traffic_beats: add up to {sum(self.segment_traffic_beats)}, "
                    f"not traffic_beats {self.traffic_beats}"
                )
        if self.segment_latency_s is not None and len(self.segment_latency_s) != segment_count:
            found = len(self.segment_latency_s)
            return f"segment_latency_s: found {found} entries, expected one per segment ({segment_count})"
        return None

    def verification_problem(self) -> str | None:
        """Why the sample's `verification` contradicts itself (`verification[k].<field>: ...`), or None: per
        output, the unbounded elements are among the differing ones, which are among its elements, and
        `max_abs_diff` is null exactly when some element differs without bound (0 when none differs)."""
        for position, check in enumerate(self.verification or ()):
            where = f"verification[{position}]"
            unbounded = int(check.get("unbounded_elements", 0))
            differing, elements, largest = (
                int(check["differing_elements"]),
                int(check["elements"]),
                check["max_abs_diff"],
            )
            if not unbounded <= differing <= elements:
                return (
                    f"{where}.differing_elements: {differing} of {elements} elements, {unbounded} of them unbounded: "
                    "not a count of this output's elements"
                )
            if (largest is None) != (unbounded > 0):
                return f"{where}.max_abs_diff: {largest!r} with {unbounded} unbounded elements"
            if differing == 0 and largest not in (0, None):
                return f"{where}.max_abs_diff: {largest!r} with no differing element"
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
            segment_traffic_beats=document.get("segment_traffic_beats"),
        )


def summary_csv(samples: Sequence[Sample], segment_count: int) -> str:
    """`run_summary.csv`: one indexed row per sample; an unknown figure is an empty cell. Columns: index,
    cycles_total, latency_s, energy, cycles_segment_<k>..., then instructions_total, instructions_segment_<k>...,
    segment_latency_s_<k>..., and traffic_beats_total, traffic_beats_segment_<k>... (the AXI or SRAM and
    external beats where the backend measured them: the fvp backend; empty otherwise)."""

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
            "traffic_beats_total",
            *(f"traffic_beats_segment_{k}" for k in range(segment_count)),
        ]
    )
    for sample in samples:
        total = None if sample.cycles is None else sample.cycles["total"]
        instructions = None if sample.instructions is None else sample.instructions["total"]
        latencies = [None] * segment_count if sample.segment_latency_s is None else list(sample.segment_latency_s)
        row = [sample.index, total, sample.latency_s, sample.energy, *per_segment(sample.cycles)]
        beats = [None] * segment_count if sample.segment_traffic_beats is None else list(sample.segment_traffic_beats)
        row += [instructions, *per_segment(sample.instructions), *latencies, sample.traffic_beats, *beats]
        writer.writerow([cell(v) for v in row])
    return buffer.getvalue()
