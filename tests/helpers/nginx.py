"""A real nginx serving WebDAV PUT and GET on 127.0.0.1, for the remote cache tests and bench.

Debian's nginx runs in the foreground (`daemon off;`, `master_process off;`: one process, so killing it
really takes the server away) as the current user, with its configuration, pid, logs, temporary files and
document root all inside one folder. Besides the cache at `/`, it serves `/failing/` (every request
answers 500), `/slow/` (answers trickle at one byte per second, `limit_rate 1`) and `/trickle/` (the
first 2 KiB of an answer come at once, the rest at one byte per second) and `/brief/` (a kept-alive
connection is closed after one idle second).
"""

from __future__ import annotations

import contextlib
import grp
import os
import pwd
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

NGINX_CANDIDATES = ("/usr/sbin/nginx",)

CONFIG = """\
{user}
daemon off;
master_process off;
worker_processes 1;
pid {folder}/nginx.pid;
error_log {folder}/error.log warn;
events {{
    worker_connections 256;
}}
http {{
    access_log {folder}/access.log;
    client_body_temp_path {folder}/client_body;
    proxy_temp_path {folder}/proxy;
    fastcgi_temp_path {folder}/fastcgi;
    uwsgi_temp_path {folder}/uwsgi;
    scgi_temp_path {folder}/scgi;
    client_max_body_size 0;
    server {{
        listen 127.0.0.1:{port};
        root {folder}/root;
        location / {{
            dav_methods PUT;
            create_full_put_path on;
            dav_access user:rw;
        }}
        location /failing/ {{
            return 500;
        }}
        location /slow/ {{
            limit_rate 1;
        }}
        location /brief/ {{
            keepalive_timeout 1s;
            dav_methods PUT;
            create_full_put_path on;
        }}
        location /trickle/ {{
            limit_rate_after 2k;
            limit_rate 1;
            dav_methods PUT;
            create_full_put_path on;
        }}
    }}
}}
"""


def nginx_binary() -> str | None:
    """The nginx executable: on PATH, else Debian's /usr/sbin/nginx; None when not installed."""
    found = shutil.which("nginx")
    if found:
        return found
    return next((path for path in NGINX_CANDIDATES if os.access(path, os.X_OK)), None)


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@dataclass
class Nginx:
    """A running nginx: its URL (`http://127.0.0.1:<port>`), document root and process."""

    url: str
    root: Path
    folder: Path
    process: subprocess.Popen[bytes]

    def stop(self) -> None:
        """Kill the server (SIGKILL: gone at once, as a crashed server) and wait for it."""
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(timeout=10)

    def files(self, kind: str, prefix: str = "") -> dict[str, bytes]:
        """The entries of `kind` ('cas' or 'ac') stored under the URL path `prefix`, by key."""
        folder = self.root / prefix.strip("/") / kind
        return {path.name: path.read_bytes() for path in sorted(folder.glob("*"))} if folder.is_dir() else {}


def start_nginx(folder: Path, binary: str) -> Nginx:
    """Start nginx with a configuration written into `folder` on a free port; wait until it accepts."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "root").mkdir(exist_ok=True)
    user = ""
    if os.geteuid() == 0:  # as root, nginx would otherwise switch to `nobody`
        user = f"user {pwd.getpwuid(os.getuid()).pw_name} {grp.getgrgid(os.getgid()).gr_name};"
    for _ in range(5):  # another process may take the port between free_port and nginx's bind
        port = free_port()
        config = folder / "nginx.conf"
        config.write_text(CONFIG.format(user=user, folder=folder, port=port), encoding="utf-8")
        log = open(folder / "stderr.log", "wb")  # noqa: SIM115 - the server writes to it until it ends
        process = subprocess.Popen(
            [binary, "-p", str(folder), "-e", str(folder / "error.log"), "-c", str(config)],
            stdout=log,
            stderr=log,
            start_new_session=True,
        )
        log.close()
        if _accepting(port, process):
            return Nginx(f"http://127.0.0.1:{port}", folder / "root", folder, process)
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=10)
    raise RuntimeError(f"nginx did not start: {(folder / 'stderr.log').read_text(errors='replace')}")


def _accepting(port: int, process: subprocess.Popen[bytes], seconds: float = 10.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if process.poll() is not None:
            return False
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return True
        except OSError:
            time.sleep(0.05)
    return False


def require_nginx() -> str:
    """The nginx executable; without one, the test fails under CI (env CI set: .ci/run installs Debian's
    nginx) and skips with the reason elsewhere."""

    from helpers.skips import missing

    binary = nginx_binary()
    if binary is None:
        missing("nginx is not installed (Debian package nginx); the remote cache tests need a real server")
    return binary


@contextlib.contextmanager
def running_nginx(folder: Path) -> Iterator[Nginx]:
    """A started nginx (start_nginx; the test skips or fails as require_nginx says without one), killed
    when the block ends."""
    server = start_nginx(folder, require_nginx())
    try:
        yield server
    finally:
        server.stop()
