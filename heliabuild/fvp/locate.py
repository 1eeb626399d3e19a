"""Finding an FVP executable and asking its version.

`find_fvp(name)` looks in `$HELIA_FVP_DIR` first (the folder holding the executable, or its `models/<host>/`
install folder: the first match of `<dir>/<name>`, `<dir>/*/<name>`, `<dir>/*/*/<name>`), then on PATH. A
missing FVP is one FvpError saying what to install. `fvp_version(path)` is the version `<fvp> --version`
prints as `Fast Models [11.27.25 (<build date>)]` (then a copyright line; the word "version" appears nowhere),
`11.27.25`, or None when the FVP does not say so within 30 seconds.
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

from heliabuild.errors import FvpError

FVP_DIR_VARIABLE = "HELIA_FVP_DIR"
VERSION_TIMEOUT_S = 30.0
_VERSION = re.compile(r"^Fast Models \[([0-9]+(?:\.[0-9]+)+)[ \]]")
_DOWNLOAD = "https://developer.arm.com/Tools%20and%20Software/Fixed%20Virtual%20Platforms"


def find_fvp(name: str) -> Path:
    """The path of the FVP executable `name` (module docstring); FvpError when it is nowhere."""
    folder = os.environ.get(FVP_DIR_VARIABLE)
    if folder:
        base = Path(folder)
        for pattern in (name, f"*/{name}", f"*/*/{name}"):
            for candidate in sorted(base.glob(pattern)):
                if candidate.is_file() and os.access(candidate, os.X_OK):
                    return candidate
    found = shutil.which(name)
    if found is not None:
        return Path(found)
    where = f"in ${FVP_DIR_VARIABLE} ({folder}) or " if folder else ""
    raise FvpError(
        f"{name} is not {where}on PATH, so the fvp backend cannot run",
        hint=f"install Arm's {name} Fixed Virtual Platform ({_DOWNLOAD}) and put it on PATH or set "
        f"{FVP_DIR_VARIABLE} to its folder",
    )


def fvp_version(path: Path) -> str | None:
    """The Fast Models version `path --version` prints, or None (module docstring)."""
    from heliabuild.subprocesses import run_bounded

    try:
        run = run_bounded([os.fspath(path), "--version"], timeout_s=VERSION_TIMEOUT_S, max_output=1 << 16)
    except OSError:
        return None
    if run.exit_status != 0:
        return None
    for line in run.console.splitlines():
        found = _VERSION.match(line.strip())
        if found is not None:
            return found.group(1)
    return None
