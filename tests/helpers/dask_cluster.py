"""A real dask.distributed cluster on 127.0.0.1 for tests and benchmarks: `dask scheduler` and `dask worker`
processes (random free ports, no dashboard, one thread each, no nanny, so killing a worker kills it), each
killed when the cluster stops."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

START_TIMEOUT_S = 60.0


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _dask(*arguments: str) -> list[str]:
    return [sys.executable, "-m", "dask", *arguments]


@dataclass
class Cluster:
    """A scheduler at `address` and its workers by name; `folder` holds their logs and scratch space."""

    folder: Path
    port: int = field(default_factory=free_port)
    scheduler: subprocess.Popen[bytes] | None = None
    workers: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)

    @property
    def address(self) -> str:
        return f"tcp://127.0.0.1:{self.port}"

    @property
    def url(self) -> str:
        """The executor URL heliabuild takes: `dask://127.0.0.1:<port>`."""
        return f"dask://127.0.0.1:{self.port}"

    def _spawn(
        self, name: str, command: list[str], environment: dict[str, str] | None = None
    ) -> subprocess.Popen[bytes]:
        self.folder.mkdir(parents=True, exist_ok=True)
        log = open(self.folder / f"{name}.log", "ab")  # noqa: SIM115 - the process owns it until it ends
        return subprocess.Popen(
            command, cwd=self.folder, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
            env={**os.environ, **(environment or {})},
        )  # fmt: skip

    def start_scheduler(self) -> None:
        command = _dask("scheduler", "--host", "127.0.0.1", "--port", str(self.port), "--no-dashboard")
        self.scheduler = self._spawn("scheduler", command)
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", self.port), timeout=1):
                return
            assert self.scheduler.poll() is None, (self.folder / "scheduler.log").read_text()
            assert time.monotonic() < deadline, "the scheduler did not start"
            time.sleep(0.1)

    def start_worker(self, name: str, resources: str | None = None, environment: dict[str, str] | None = None) -> None:
        """Start worker `name` (with `--resources`, e.g. "qemu=1", and `environment` added to this process's)
        and wait until the scheduler has it."""
        command = _dask(
            "worker", self.address, "--name", name, "--host", "127.0.0.1", "--nthreads", "1", "--no-dashboard",
            "--no-nanny", "--local-directory", str(self.folder / f"scratch-{name}"),
        )  # fmt: skip
        if resources:
            command += ["--resources", resources]
        self.workers[name] = self._spawn(f"worker-{name}", command, environment)
        deadline = time.monotonic() + START_TIMEOUT_S
        while name not in self.worker_addresses():
            assert self.workers[name].poll() is None, (self.folder / f"worker-{name}.log").read_text()
            assert time.monotonic() < deadline, f"worker {name} did not register"
            time.sleep(0.2)

    def worker_addresses(self) -> dict[str, str]:
        """Worker name -> its address, as the scheduler knows them now."""
        from distributed import Client

        with Client(self.address, timeout=10, set_as_default=False) as client:
            info = client.scheduler_info(n_workers=-1)
        return {str(state["name"]): address for address, state in info["workers"].items()}

    def processing(self) -> dict[str, int]:
        """Worker name -> how many tasks it is processing now."""
        from distributed import Client

        with Client(self.address, timeout=10, set_as_default=False) as client:
            names = {
                address: str(state["name"]) for address, state in client.scheduler_info(n_workers=-1)["workers"].items()
            }
            return {names[address]: len(keys) for address, keys in client.processing().items() if address in names}

    def kill(self, process: subprocess.Popen[bytes] | None) -> None:
        if process is not None and process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=30)

    def kill_worker(self, name: str) -> None:
        self.kill(self.workers.pop(name))

    def stop(self) -> None:
        for name in list(self.workers):
            self.kill_worker(name)
        self.kill(self.scheduler)
        self.scheduler = None


@contextlib.contextmanager
def running_cluster(folder: Path, workers: dict[str, str | None]):
    """A started Cluster with `workers` (name -> resources or None), stopped when the block ends."""
    cluster = Cluster(folder)
    try:
        cluster.start_scheduler()
        for name, resources in workers.items():
            cluster.start_worker(name, resources)
        yield cluster
    finally:
        cluster.stop()
