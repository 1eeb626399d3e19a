"""Bounded subprocesses: a simulator (QEMU, an Arm FVP) or a tool run so that it cannot hang the host or
exhaust its memory.

`run_bounded(command, timeout_s=..., max_output=...)` runs one argument vector in a session of its own, with
no standard input, until it exits, its wall-clock timeout passes, or one of its streams passes `max_output`
bytes; then its whole session is killed (and an interrupt on another thread ends it: heliabuild.sessions).
What it left is a `BoundedRun`.
"""

from __future__ import annotations

import os
import selectors
import subprocess
import time
from dataclasses import dataclass

from heliabuild import sessions


@dataclass(frozen=True)
class BoundedRun:
    """What one bounded run left: the exit status (None when it was killed), the console text, whether the timeout or
    the output limit stopped it, and the program's own diagnostics (its standard error, bounded); `output` is the
    console's bytes as the simulator wrote them (empty when the run was made from text)."""

    exit_status: int | None
    console: str
    timed_out: bool
    output_overflow: bool
    diagnostics: str
    output: bytes = b""


def run_bounded(
    command: list[str],
    *,
    timeout_s: float,
    max_output: int,
    env: dict[str, str] | None = None,
) -> BoundedRun:
    """Run `command` (in its own session, no standard input) until it exits, `timeout_s` of wall time pass, or
    one of its streams passes `max_output` bytes; then its whole session is killed. Every simulator
    heliabuild drives runs through it (QEMU: heliabuild.firmware.qemu; the Arm FVPs: heliabuild.fvp.launch)."""
    process = sessions.start(command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    try:  # until reaped, an interrupt on another thread ends it (heliabuild.sessions)
        return _collect(process, timeout_s, max_output)
    finally:
        if process.returncode is None:  # an exception (Ctrl-C of the `heliabuild` command) ended the reading
            sessions.kill(process)
            process.wait()
        sessions.release(process)


def _collect(process: subprocess.Popen[bytes], timeout_s: float, max_output: int) -> BoundedRun:
    """run_bounded's reading of `process` until it exits, times out or overflows, and its reaping."""
    assert process.stdout is not None and process.stderr is not None
    chunks: dict[int, list[bytes]] = {process.stdout.fileno(): [], process.stderr.fileno(): []}
    sizes = dict.fromkeys(chunks, 0)
    deadline = time.monotonic() + timeout_s
    timed_out = overflow = False
    with selectors.DefaultSelector() as selector:
        for stream in (process.stdout, process.stderr):
            selector.register(stream, selectors.EVENT_READ)
        open_streams = 2
        try:
            while open_streams:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    timed_out = True
                    break
                for key, _ in selector.select(timeout=remaining):
                    data = os.read(key.fd, 1 << 16)
                    if not data:
                        selector.unregister(key.fileobj)
                        open_streams -= 1
                        continue
                    sizes[key.fd] += len(data)
                    if sizes[key.fd] > max_output:
                        overflow = True
                        break
                    chunks[key.fd].append(data)
                if overflow:
                    break
        finally:
            if timed_out or overflow or open_streams:
                sessions.kill(process)
            status = process.wait()
            process.stdout.close()
            process.stderr.close()
    output = b"".join(chunks[next(iter(chunks))])
    stderr = b"".join(list(chunks.values())[1]).decode("utf-8", errors="replace")
    return BoundedRun(
        exit_status=None if (timed_out or overflow) else status,
        console=output.decode("utf-8", errors="replace"),
        timed_out=timed_out,
        output_overflow=overflow,
        diagnostics=stderr[-4000:],
        output=output,
    )
