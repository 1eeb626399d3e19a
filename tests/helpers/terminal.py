"""Reading what a process wrote to a pseudo-terminal (the `pty` module)."""

from __future__ import annotations

import os


def read_to_the_end(controller: int) -> bytes:
    """Everything written to the pseudo-terminal whose controller side is `controller`, until every writer has
    closed it; closes `controller`."""
    written = bytearray()
    while True:
        try:
            chunk = os.read(controller, 65536)
        except OSError:  # EIO: every writer has closed the terminal
            break
        if not chunk:
            break
        written += chunk
    os.close(controller)
    return bytes(written)
