"""Running one job where it was sent: in a private temporary folder, after comparing tool versions.

`execute` is what every executor ends in, the local one in the client's own process and the Dask one on a
worker. It refuses a job whose tools differ from the client's (heliabuild.executor.versions.mismatches),
lays out the inputs at their names in a new temporary folder (each checked against its SHA-256), runs the
stage function, and returns the declared outputs' bytes; the folder is removed whatever happens. A
HeliaError of the stage comes back as the JobResult's failure, its message naming the files as the client
names them (the private folder is cut out), so the client reports it as a local run would. Nothing is
written outside the private folder: writing the outputs into place is the client's.
"""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from heliabuild.documents import read_regular_file
from heliabuild.errors import HeliaError
from heliabuild.executor.job import ExecutorError, Failure, Job, JobResult
from heliabuild.executor.stages import stage_function
from heliabuild.executor.versions import mismatches, tool_versions
from heliabuild.files import sha256_bytes

MAX_INPUT_BYTES = 1 << 31
"""The largest input file a job reads (a FlatBuffer cannot address more than 2 GiB)."""


@dataclass(frozen=True)
class Inputs:
    """How a job's input bytes reach the machine running it: `blobs` (SHA-256 -> bytes) travel with the job;
    `paths` (SHA-256 -> path) are read there (a shared folder, or the client's own files when it runs the job
    itself)."""

    blobs: Mapping[str, bytes] = field(default_factory=dict)
    paths: Mapping[str, str] = field(default_factory=dict)


def _input_bytes(sha256: str, name: str, inputs: Inputs) -> bytes:
    if sha256 in inputs.blobs:
        data = inputs.blobs[sha256]
    elif sha256 in inputs.paths:
        data = read_regular_file(inputs.paths[sha256], f"job input {name}", error=ExecutorError, limit=MAX_INPUT_BYTES)
    else:
        raise ExecutorError(f"job input {name} ({sha256}) was neither shipped nor given by path")
    found = sha256_bytes(data)
    if found != sha256:
        where = inputs.paths.get(sha256, "the bytes shipped")
        raise ExecutorError(
            f"job input {name}: {where} has sha256 {found}, the job names {sha256}: the file changed after the "
            "job was described",
            hint="rebuild; files in the shared folder must not change while a build runs",
        )
    return data


def _outputs(folder: Path, job: Job) -> dict[str, bytes]:
    outputs: dict[str, bytes] = {}
    for name in job.outputs:
        path = folder / name
        if name.endswith("/"):
            files = sorted(item for item in path.rglob("*") if item.is_file()) if path.is_dir() else []
            outputs.update({item.relative_to(folder).as_posix(): item.read_bytes() for item in files})
        elif path.is_file():
            outputs[name] = path.read_bytes()
        else:
            raise ExecutorError(f"{job.title}: the stage did not write {name}")
    return outputs


def _client_text(text: str | None, folder: Path) -> str | None:
    """`text` with the private folder cut out of every path, so it names the client's paths."""
    if text is None:
        return None
    for prefix in {str(folder), os.path.realpath(folder)}:
        text = text.replace(prefix + os.sep, "").replace(prefix, ".")
    return text


def execute(
    document: Mapping[str, Any],
    client_versions: Mapping[str, str | None],
    inputs: Inputs,
    *,
    where: str = "local",
    resources: Mapping[str, float] | None = None,
    in_process: bool = False,
) -> JobResult:
    """Run the job of `document` (Job.to_json) here (module docstring); `client_versions` are the versions of
    the job's tools on the client (empty: the client runs it itself, so nothing is compared and the JobResult
    names no versions; asking them costs a digest of heliabuild's files). `in_process`: this
    is the client's own process, running one job at a time on its main thread, and the stage may run its
    tool inside it (heliabuild.executor.stages)."""
    started = time.perf_counter()
    job = Job.from_json(document)
    versions = tool_versions(job.tools) if client_versions else {}
    shown = {"worker": where, "resources": dict(resources or {}), "versions": versions}
    differ = mismatches({name: client_versions[name] for name in job.tools if name in client_versions}, versions)
    if differ:
        failure = Failure(
            ExecutorError.__name__,
            f"{job.title}: refused by worker {where}, whose tools differ from the client's: {'; '.join(differ)}",
            "install the same versions on the client and every worker: outputs must be byte-identical whichever "
            "machine built them",
        )
        return JobResult(outputs={}, failure=failure, seconds=time.perf_counter() - started, **shown)
    function = stage_function(job.function)
    with tempfile.TemporaryDirectory(prefix="heliabuild-job-") as private:
        folder = Path(private)
        try:
            for item in job.inputs:
                path = folder / item.name
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_bytes(_input_bytes(item.sha256, item.name, inputs))
            warnings = function(folder, job.options, in_process)
            outputs = _outputs(folder, job)
        except HeliaError as error:
            failure = Failure(
                type(error).__name__, str(_client_text(error.message, folder)), _client_text(error.hint, folder)
            )
            return JobResult(outputs={}, failure=failure, seconds=time.perf_counter() - started, **shown)
        warnings = tuple(str(_client_text(text, folder)) for text in warnings)
    return JobResult(outputs=outputs, warnings=warnings, seconds=time.perf_counter() - started, **shown)
