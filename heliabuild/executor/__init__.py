"""Executors: where the heavy stages (Vela, plan-fences, the firmware link, QEMU and FVP runs) run.

Independent of SCons. A stage is described as a Job (heliabuild.executor.job: its function by name, its
inputs by SHA-256, its options, the tools whose versions matter and the resources it needs); an executor
runs it and gives back a JobResult (the outputs' bytes by name, the warnings, a failure, where it ran). The
caller writes the outputs into place atomically (heliabuild.files), so whoever ran the job, an interrupted
build leaves each output complete or absent.

- `local` (the default): in this process (heliabuild.executor.local).
- `dask://host:port`: on the workers of a dask.distributed scheduler (heliabuild.executor.remote; the
  optional extra `heliabuild[dask]`). Worker resources route jobs: a QEMU run needs a worker started with
  `--resources "qemu=1"`, an FVP run one with `fvp=1`.

`executor_for(url, shared)` picks one: `url` None means the environment variable HELIA_EXECUTOR, and
that unset means `local`. docs/scale.md is the user documentation.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Protocol

from heliabuild.lazy import lazy_exports

if TYPE_CHECKING:
    from heliabuild.executor.job import Job, JobResult
    from heliabuild.executor.stages import Files

LOCAL = "local"
"""The default executor's address: each job runs in this process (heliabuild.executor.local)."""
EXECUTOR_VARIABLE = "HELIA_EXECUTOR"
SHARED_VARIABLE = "HELIA_EXECUTOR_SHARED"
"""A folder every worker sees at the same path: inputs inside it are sent by path, not as bytes."""


class Executor(Protocol):
    """Runs jobs: `run(job, files)` with `files` mapping each input name to the client's file."""

    address: str

    def run(self, job: Job, files: Files) -> JobResult: ...

    def close(self) -> None: ...


def executor_for(url: str | None = None, shared: str | None = None, *, in_process: bool = False) -> Executor:
    """The executor `url` names (`local` or `dask://host:port`; None: $HELIA_EXECUTOR, else `local`), with
    the shared input folder `shared` (None: $HELIA_EXECUTOR_SHARED). ExecutorError for any other URL, or a
    shared folder that is not a folder. Connecting waits for the first job. `in_process` is the local
    executor's (heliabuild.executor.local): for a caller running one job at a time on its main thread."""
    from heliabuild.executor.job import ExecutorError
    from heliabuild.executor.local import LocalExecutor

    chosen = url if url is not None else os.environ.get(EXECUTOR_VARIABLE) or LOCAL
    if chosen == LOCAL:
        return LocalExecutor(in_process=in_process)
    folder = shared if shared is not None else os.environ.get(SHARED_VARIABLE) or None
    if folder is not None and not os.path.isdir(folder):
        raise ExecutorError(f"the shared input folder {folder} is not a folder")
    from heliabuild.executor.remote import DaskExecutor

    return DaskExecutor(chosen, shared=folder)


_EXPORTS = {
    "ExecutorError": "heliabuild.executor.job",
    "Failure": "heliabuild.executor.job",
    "Files": "heliabuild.executor.stages",
    "InputFile": "heliabuild.executor.job",
    "Job": "heliabuild.executor.job",
    "LocalExecutor": "heliabuild.executor.local",
    "JobResult": "heliabuild.executor.job",
}
"""Names importable from here that load their module on first use: a no-op build imports none of them."""
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

__all__ = [
    "EXECUTOR_VARIABLE",
    "LOCAL",
    "SHARED_VARIABLE",
    "Executor",
    "ExecutorError",
    "Failure",
    "InputFile",
    "Job",
    "JobResult",
    "LocalExecutor",
    "executor_for",
]
