"""Snapshots of folder trees, to assert that a command left a user's files intact byte for byte."""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path


def snapshot(root: Path) -> dict[str, str]:
    """Every entry under `root` (not following symlinks) by relative path: a regular file by its sha256, a
    folder as `dir`, a symlink by its target, anything else by its kind."""
    entries: dict[str, str] = {}
    for folder, folders, names in os.walk(root):
        for name in [*folders, *names]:
            path = Path(folder) / name
            relative = path.relative_to(root).as_posix()
            mode = os.lstat(path).st_mode
            if stat.S_ISLNK(mode):
                entries[relative] = f"link -> {os.readlink(path)}"
            elif stat.S_ISDIR(mode):
                entries[relative] = "dir"
            elif stat.S_ISREG(mode):
                entries[relative] = hashlib.sha256(path.read_bytes()).hexdigest()
            else:
                entries[relative] = f"special {stat.S_IFMT(mode):o}"
    return entries
