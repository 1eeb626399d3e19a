"""Where each job ran: one JSON line per job, appended by the client to a file beside the build.

The journal is a record for people and tests (which worker ran which stage, with which resources, how
long), never an input or output of any stage and never content-hashed; it is the only place a worker's
address or a duration is written.
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

from heliabuild.documents import read_text
from heliabuild.executor.job import Job, JobResult

MAX_JOURNAL_BYTES = 64 << 20
"""The largest journal read_journal reads."""

_lock = threading.Lock()


def record(path: str | os.PathLike[str], job: Job, result: JobResult, executor: str) -> None:
    """Append the line of `job` run by `executor` with `result` to the journal at `path`."""
    line = {
        "function": job.function,
        "key": job.key,
        "outputs": sorted(job.outputs),
        "required_resources": dict(job.resources),
        "executor": executor,
        "worker": result.worker,
        "worker_resources": dict(result.resources),
        "worker_versions": dict(result.versions),
        "seconds": round(result.seconds, 6),
        "failed": result.failure is not None,
    }
    with _lock, open(Path(path), "a", encoding="utf-8") as stream:
        stream.write(json.dumps(line, sort_keys=True) + "\n")


def read_journal(path: str | os.PathLike[str]) -> list[dict[str, object]]:
    """Every line of the journal at `path`, parsed ([] when there is none)."""
    if not Path(path).exists():
        return []
    text = read_text(path, "executor journal", limit=MAX_JOURNAL_BYTES)
    return [json.loads(line) for line in text.splitlines() if line.strip()]
