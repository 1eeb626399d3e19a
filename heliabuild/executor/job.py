"""The records of the executor: a Job (one heavy stage, described by content) and its JobResult.

A Job names the stage function to run (heliabuild.executor.stages.FUNCTIONS), its input files by name and
SHA-256, its options (JSON values, naming files by their input or output names), the names of the outputs
it must return, the tools whose versions must match between the client and the machine that runs it, and
the worker resources it needs (`{"qemu": 1}`). Its `key` is the SHA-256 of its canonical JSON, so two jobs
with the same key produce the same outputs. The input bytes are not part of the Job: an executor ships
them beside it (heliabuild.executor.worker.Inputs) or the worker reads them from a shared path.

File names are relative paths (the client's paths relative to its working folder, the SCons top folder),
so a worker lays the files out in a private folder exactly as the client sees them, and what a stage
writes or says names the same paths on every machine. An output name ending in `/` is a folder: every file
the stage writes under it is returned.
"""

from __future__ import annotations

import base64
import hashlib
import posixpath
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from heliabuild.errors import HeliaError
from heliabuild.files import json_text

JOB_FORMAT = 1


class ExecutorError(HeliaError):
    """A job that could not run where it was sent: no worker can take it, the scheduler is gone, a worker's
    tools differ from the client's, a worker died running it, or it timed out."""


class SchedulerUnreachable(ExecutorError):
    """The scheduler cannot be reached (never was, or went away during the build)."""


def check_name(name: str, what: str) -> str:
    """`name` when it is a relative POSIX path inside a job's folder; ExecutorError otherwise."""
    normal = posixpath.normpath(name.rstrip("/")) if name else ""
    if not name or name.startswith("/") or normal in (".", "") or normal.split("/")[0] == ".." or "\\" in name:
        raise ExecutorError(f"job {what} {name!r} is not a relative path inside the job's folder")
    return name


@dataclass(frozen=True)
class InputFile:
    """One input of a job: its relative name and the SHA-256 of its bytes."""

    name: str
    sha256: str

    def to_json(self) -> dict[str, str]:
        return {"name": self.name, "sha256": self.sha256}

    @classmethod
    def from_json(cls, document: Mapping[str, Any]) -> InputFile:
        return cls(name=check_name(str(document["name"]), "input"), sha256=str(document["sha256"]))


@dataclass(frozen=True)
class Job:
    """A content-addressed description of one heavy stage (module docstring)."""

    function: str
    inputs: tuple[InputFile, ...]
    options: Mapping[str, Any]
    outputs: tuple[str, ...]
    tools: tuple[str, ...] = ()
    resources: Mapping[str, float] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "format": JOB_FORMAT,
            "function": self.function,
            "inputs": [item.to_json() for item in sorted(self.inputs, key=lambda item: item.name)],
            "options": dict(self.options),
            "outputs": list(self.outputs),
            "tools": sorted(self.tools),
            "resources": dict(sorted(self.resources.items())),
        }

    @classmethod
    def from_json(cls, document: Mapping[str, Any]) -> Job:
        if document.get("format") != JOB_FORMAT:
            raise ExecutorError(
                f"job format {document.get('format')!r} is not {JOB_FORMAT}: the worker's heliabuild differs"
            )
        return cls(
            function=str(document["function"]),
            inputs=tuple(InputFile.from_json(item) for item in document["inputs"]),
            options=dict(document["options"]),
            outputs=tuple(check_name(str(name), "output") for name in document["outputs"]),
            tools=tuple(str(name) for name in document["tools"]),
            resources={str(name): float(amount) for name, amount in document["resources"].items()},
        )

    @property
    def key(self) -> str:
        """The SHA-256 of the job's canonical JSON: equal keys, equal outputs."""
        return hashlib.sha256(json_text(self.to_json()).encode("utf-8")).hexdigest()

    @property
    def title(self) -> str:
        """What messages call the job: its function and its first output."""
        return f"{self.function} {self.outputs[0] if self.outputs else self.key[:12]}"


@dataclass(frozen=True)
class Failure:
    """A HeliaError a stage raised, carried back to the client: its class name, message and hint."""

    kind: str
    message: str
    hint: str | None = None

    def to_json(self) -> dict[str, str | None]:
        return {"kind": self.kind, "message": self.message, "hint": self.hint}

    @classmethod
    def from_json(cls, document: Mapping[str, Any]) -> Failure:
        return cls(kind=str(document["kind"]), message=str(document["message"]), hint=document.get("hint"))


@dataclass(frozen=True)
class JobResult:
    """What running a job gave: each output file's bytes by name (empty on failure), what the stage said (its
    warnings, the log a caller prints), the failure (None on success), and where it ran: `local` or the
    worker's address, that worker's resources, its versions of the job's tools (none when the client ran the
    job itself) and the seconds the job took there (none of which goes into any output)."""

    outputs: Mapping[str, bytes]
    warnings: tuple[str, ...] = ()
    failure: Failure | None = None
    worker: str = "local"
    resources: Mapping[str, float] = field(default_factory=dict)
    versions: Mapping[str, str | None] = field(default_factory=dict)
    seconds: float = 0.0

    def to_json(self) -> dict[str, Any]:
        return {
            "outputs": {name: base64.b64encode(data).decode("ascii") for name, data in sorted(self.outputs.items())},
            "warnings": list(self.warnings),
            "failure": None if self.failure is None else self.failure.to_json(),
            "worker": self.worker,
            "resources": dict(self.resources),
            "versions": dict(self.versions),
            "seconds": self.seconds,
        }

    @classmethod
    def from_json(cls, document: Mapping[str, Any]) -> JobResult:
        failure = document.get("failure")
        return cls(
            outputs={
                check_name(str(name), "output"): base64.b64decode(data) for name, data in document["outputs"].items()
            },
            warnings=tuple(str(text) for text in document["warnings"]),
            failure=None if failure is None else Failure.from_json(failure),
            worker=str(document["worker"]),
            resources={str(name): float(amount) for name, amount in document["resources"].items()},
            versions={str(name): None if value is None else str(value) for name, value in document["versions"].items()},
            seconds=float(document["seconds"]),
        )
