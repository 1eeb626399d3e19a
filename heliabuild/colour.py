"""Colour for heliabuild's error and warning lines on a terminal.

`coloured(line, stream)` paints the word `error` (bold red) or `warning` (bold yellow) of a line that starts
`heliabuild: error:` or `heliabuild: warning:` (the `[k/n]` counter or the stage may stand between, as in
`heliabuild: vela warning:`), when `stream` is a terminal, `TERM` is not `dumb`, and `NO_COLOR` is unset or
empty (https://no-color.org). Anything else is returned as it is: a log, a pipe or a file gets plain text.
"""

from __future__ import annotations

import os
import re
from typing import TextIO

RED = "\x1b[1;31m"
YELLOW = "\x1b[1;33m"
RESET = "\x1b[0m"
_LEVEL = re.compile(r"^(heliabuild:(?: [^:]*?)?) (error|warning):")


def enabled(stream: TextIO) -> bool:
    """Whether lines written to `stream` are coloured (module docstring)."""
    if os.environ.get("NO_COLOR") or os.environ.get("TERM") == "dumb":
        return False
    isatty = getattr(stream, "isatty", None)
    try:
        return bool(isatty and isatty())
    except ValueError:  # a closed stream
        return False


def coloured(line: str, stream: TextIO) -> str:
    """`line` with its level word painted when `stream` takes colour (module docstring)."""
    if not enabled(stream):
        return line
    colour = {"error": RED, "warning": YELLOW}
    return _LEVEL.sub(lambda match: f"{match[1]} {colour[match[2]]}{match[2]}{RESET}:", line, count=1)
