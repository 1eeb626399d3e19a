"""The `dask` executor: heavy stages sent to a dask.distributed scheduler (the extra `heliabuild[dask]`).

`DaskExecutor("tcp://host:port", shared=...)` connects on its first job. For each job it

1. checks that some worker of the scheduler has the job's resources (`qemu`, `fvp`): a job no worker can
   take is one ExecutorError naming the resources and the workers there are, never a task left waiting;
2. sends the job with the client's versions of its tools and its input bytes; an input inside the shared
   folder (a folder every worker sees at the same path) is sent by path instead, and the worker checks its
   SHA-256;
3. waits, and while waiting checks every POLL_S that the scheduler still answers and that a worker able
   to take the job is still there; after `timeout_s` the job is cancelled and reported.

On the worker, `remote_execute` runs heliabuild.executor.worker.execute in a private folder, after
comparing the tool versions. A worker that dies running a job makes the scheduler give it to another
worker (its `allowed-failures` bounds how often: then KilledWorker is one ExecutorError); since a job only
writes its private folder and the client writes the outputs, a dead worker leaves nothing behind. The task
key is the job's key, so a job already running on the cluster is not run twice.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from heliabuild.documents import read_regular_file
from heliabuild.executor.job import ExecutorError, Job, JobResult, SchedulerUnreachable
from heliabuild.executor.stages import Files
from heliabuild.executor.versions import tool_versions
from heliabuild.executor.worker import MAX_INPUT_BYTES, Inputs, execute

SCHEME = "dask://"
POLL_S = 0.5
"""How often a waiting client checks the scheduler and its workers."""
DEFAULT_TIMEOUT_S = 3600.0
"""How long a job may take on the cluster, waiting included."""
CONNECT_TIMEOUT_S = 10.0
"""How long connecting to (or reaching again) the scheduler may take before the build stops."""
START_HINT = "start one with `dask scheduler --port PORT`, and workers with `dask worker tcp://HOST:PORT`"


def scheduler_address(url: str) -> str:
    """The dask address `tcp://host:port` of a `dask://host:port` executor URL; ExecutorError otherwise."""
    if not url.startswith(SCHEME):
        raise ExecutorError(f"executor {url!r} is not `local` or {SCHEME}host:port")
    host, _, port = url.removeprefix(SCHEME).rstrip("/").rpartition(":")
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ExecutorError(f"executor {url!r}: expected {SCHEME}host:port, e.g. {SCHEME}127.0.0.1:8786")
    return f"tcp://{host}:{port}"


def remote_execute(document: Mapping[str, Any], client_versions: Mapping[str, str | None], inputs: Inputs) -> JobResult:
    """The task a worker runs: heliabuild.executor.worker.execute, naming this worker and its resources."""
    from distributed import get_worker

    worker = get_worker()
    return execute(
        document, client_versions, inputs, where=worker.address, resources=dict(worker.state.total_resources)
    )


def _able(workers: Mapping[str, Mapping[str, float]], needed: Mapping[str, float]) -> list[str]:
    return [address for address, has in workers.items() if all(has.get(k, 0) >= v for k, v in needed.items())]


class DaskExecutor:
    """Sends jobs to the dask.distributed scheduler of `url` (`dask://host:port`; module docstring)."""

    def __init__(self, url: str, shared: str | os.PathLike[str] | None = None, timeout_s: float = DEFAULT_TIMEOUT_S):
        self.address = url
        self.scheduler = scheduler_address(url)
        self.shared = None if shared is None else Path(os.path.realpath(shared))
        self.timeout_s = timeout_s
        self._client: Any = None
        self._lock = threading.Lock()

    def _unreachable(self, failure: BaseException | str) -> SchedulerUnreachable:
        from distributed.client import FutureCancelledError

        if isinstance(failure, FutureCancelledError):
            failure = "the connection to it was lost"
        text = failure if isinstance(failure, str) else f"{type(failure).__name__}: {failure}".rstrip(": ")
        why = text.strip().splitlines()[0] if text.strip() else "no reason given"
        return SchedulerUnreachable(f"the Dask scheduler at {self.address} cannot be reached ({why})", hint=START_HINT)

    def _connect(self) -> Any:
        with self._lock:
            if self._client is None:
                try:
                    import dask
                    from distributed import Client
                except ImportError:
                    raise ExecutorError(
                        f"executor {self.address} needs dask.distributed, which is not installed",
                        hint="pip install 'heliabuild[dask]'",
                    ) from None
                dask.config.set({"distributed.comm.timeouts.connect": f"{CONNECT_TIMEOUT_S}s"})
                # A lost scheduler is reported once, as an ExecutorError; the client's own log of its reconnection
                # attempts (tracebacks on stderr) would bury that line.
                logging.getLogger("distributed.client").setLevel(logging.CRITICAL)
                try:
                    self._client = Client(self.scheduler, timeout=CONNECT_TIMEOUT_S, set_as_default=False)
                except (OSError, TimeoutError) as failure:
                    raise self._unreachable(failure) from None
            return self._client

    def workers(self) -> dict[str, dict[str, float]]:
        """Each worker's address -> its resources, as the scheduler knows them now."""
        client = self._connect()
        if client.status != "running":
            raise self._unreachable("the connection to it was lost")
        try:
            info = client.scheduler_info(n_workers=-1)
        except (OSError, TimeoutError) as failure:
            raise self._unreachable(failure) from None
        return {address: dict(state.get("resources") or {}) for address, state in info["workers"].items()}

    def check_routable(self, job: Job) -> None:
        """ExecutorError unless some worker has the resources `job` needs (module docstring, 1)."""
        workers = self.workers()
        if _able(workers, job.resources):
            return
        needed = ", ".join(f"{name}={amount:g}" for name, amount in sorted(job.resources.items())) or "none"
        have = "; ".join(
            f"{address} with {', '.join(f'{k}={v:g}' for k, v in sorted(res.items())) or 'no resources'}"
            for address, res in sorted(workers.items())
        )
        raise ExecutorError(
            f"{job.title}: no worker of the Dask scheduler at {self.address} can take it: it needs the resources "
            f"{needed}, and the workers are {have or 'none'}",
            hint=f'start a worker with `dask worker {self.scheduler} --resources "{needed.replace(", ", ",")}"`',
        )

    def _inputs(self, job: Job, files: Files) -> Inputs:
        blobs: dict[str, bytes] = {}
        paths: dict[str, str] = {}
        for item in job.inputs:
            real = Path(os.path.realpath(files[item.name]))
            if self.shared is not None and real.is_relative_to(self.shared):
                paths[item.sha256] = str(real)
            else:
                blobs[item.sha256] = read_regular_file(real, f"job input {item.name}", limit=MAX_INPUT_BYTES)
        return Inputs(blobs=blobs, paths=paths)

    def run(self, job: Job, files: Files) -> JobResult:
        """Run `job` on the cluster (module docstring); its JobResult, or ExecutorError."""
        client = self._connect()
        self.check_routable(job)
        inputs = self._inputs(job, files)
        future = client.submit(
            remote_execute,
            job.to_json(),
            tool_versions(job.tools),
            inputs,
            key=f"heliabuild-{job.function}-{job.key}",
            resources=dict(job.resources) or None,
            pure=False,
        )
        try:
            self._wait(future, job)
            return self._result(future, job)
        finally:
            future.release()

    def _wait(self, future: Any, job: Job) -> None:
        done = threading.Event()
        future.add_done_callback(lambda _: done.set())
        deadline = time.monotonic() + self.timeout_s
        while not done.wait(POLL_S):
            self.check_routable(job)
            if time.monotonic() > deadline:
                future.cancel()
                raise ExecutorError(f"{job.title}: not done on {self.address} after {self.timeout_s:g} s; cancelled")

    def _result(self, future: Any, job: Job) -> JobResult:
        from distributed.client import FutureCancelledError
        from distributed.scheduler import KilledWorker

        try:
            return future.result()
        except KilledWorker as failure:
            raise ExecutorError(
                f"{job.title}: the workers of {self.address} running it died ({failure}); nothing of it was written"
            ) from None
        except (FutureCancelledError, OSError, TimeoutError) as failure:
            raise self._unreachable(failure) from None

    def close(self) -> None:
        """Close the connection to the scheduler (the cluster keeps running)."""
        with self._lock:
            if self._client is not None:
                self._client.close(timeout=CONNECT_TIMEOUT_S)
                self._client = None
