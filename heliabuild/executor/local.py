"""The `local` executor, the default: each job runs in this process, as a local build always has.

The job still runs in a private temporary folder (heliabuild.executor.worker.execute), reading the
client's files by path, so a local build and a build on any worker run the very same code on the very
same file layout, and their outputs are byte-identical by construction. Tool versions are neither asked
nor compared (the JobResult names none): client and worker are one process.

A caller that runs one job at a time on its main thread and owns its standard streams (SCons at -j1:
heliabuild.scons.executor) makes it with `in_process=True`: then Vela runs inside this process too
(heliabuild.vela.in_process) instead of as a subprocess, with the same outputs and warnings.
"""

from __future__ import annotations

import os

from heliabuild.executor import LOCAL
from heliabuild.executor.job import Job, JobResult
from heliabuild.executor.stages import Files
from heliabuild.executor.worker import Inputs, execute


class LocalExecutor:
    """Runs each job in this process (module docstring)."""

    address = LOCAL

    def __init__(self, in_process: bool = False) -> None:
        self.in_process = in_process

    def run(self, job: Job, files: Files) -> JobResult:
        """Run `job`, whose input names map to the client's files `files`; its JobResult."""
        by_hash = {item.sha256: os.fspath(files[item.name]) for item in job.inputs}
        return execute(job.to_json(), {}, Inputs(paths=by_hash), where=LOCAL, in_process=self.in_process)

    def close(self) -> None:
        """Nothing to release."""
