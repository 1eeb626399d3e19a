"""The installed version of a distribution, read from its `.dist-info` folder without importing importlib.metadata.

An installed distribution is recorded as a folder `<name>-<version>.dist-info` on sys.path, its name
normalized (runs of `-`, `_` and `.` as one `_`), holding the core metadata file METADATA, whose header
has the `Version` field (the Python Packaging User Guide's "Recording installed projects" and "Core
metadata specifications"). `version(name)` gives that field of the first such folder in sys.path order,
as importlib.metadata.version does, and asks importlib.metadata itself for any other record (an .egg-info,
a zip, a custom finder). importlib.metadata costs about 10 ms of CPU to import (with the email parser it
reads METADATA through), more than a no-op SCons build of ten pipelines spends on anything else of
heliabuild's; tests/test_distributions.py checks both agree on every installed distribution.
"""

from __future__ import annotations

import os
import re
import sys
from functools import cache

METADATA = "METADATA"
MAX_HEADER_BYTES = 1 << 16
"""The most of METADATA read for its header (the fields come first, the long description after a blank line)."""
_SEPARATORS = re.compile(r"[-_.]+")


class NotInstalled(LookupError):
    """No installed distribution has the name."""


def normalized(name: str) -> str:
    """`name` as a `.dist-info` folder spells it: lower case, each run of `-`, `_` and `.` one `_`."""
    return _SEPARATORS.sub("_", name).lower()


@cache
def _entries(folder: str) -> tuple[str, ...]:
    try:
        return tuple(os.listdir(folder or "."))
    except OSError:
        return ()


def _record(name: str) -> str | None:
    """The path of the first metadata folder of `name` on sys.path (`.dist-info` or `.egg-info`), or None."""
    wanted = normalized(name)
    for folder in sys.path:
        for entry in _entries(folder):
            stem, dot, suffix = entry.rpartition(".")
            if dot and suffix in ("dist-info", "egg-info") and normalized(stem.partition("-")[0]) == wanted:
                return os.path.join(folder, entry)
    return None


def _header_version(path: str) -> str | None:
    """The `Version` field of the metadata file `path`'s header, or None when it has none."""
    try:
        with open(path, "rb") as file:
            header = file.read(MAX_HEADER_BYTES)
    except OSError:
        return None
    for line in header.decode("utf-8", errors="replace").splitlines():
        if not line.strip():
            break
        field, colon, value = line.partition(":")
        if colon and field.strip().lower() == "version":
            return value.strip()
    return None


@cache
def version(name: str) -> str:
    """The installed version of the distribution `name` (module docstring); NotInstalled when none is."""
    record = _record(name)
    if record is not None and record.endswith(".dist-info"):
        found = _header_version(os.path.join(record, METADATA))
        if found is not None:
            return found
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as metadata_version

    try:
        return metadata_version(name)
    except PackageNotFoundError:
        raise NotInstalled(name) from None
