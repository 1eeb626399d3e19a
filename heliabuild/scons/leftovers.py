"""Removing what a killed stage left beside its targets, and what `scons -c` would leave.

heliabuild writes every file through a temporary file in the target's folder
(`.<target name>.<random>.tmp`, see heliabuild.files.write_atomic) and runs
Vela in a work folder (`.<model stem>.vela-<random>`, removed by
heliabuild.vela.compile itself on its next run, when it holds heliabuild's marker
and no live run holds it). A
stage killed by SIGKILL cannot remove its temporary files; its targets are
complete or absent, but the temporaries stay. Each stage action therefore
removes its own targets' leftover temporaries before it runs, so the next
build leaves a folder as a clean build would. No other build is writing them
meanwhile: a build holds the project's build lock
(heliabuild.scons.process.lock_the_build) while it runs.

`scons -c` removes declared targets and what env.Clean names, nothing else.
So that it leaves a project as it was before the build, a stage whose file
names depend on an option declares for cleaning the files an earlier value
of that option wrote (clean_earlier, e.g. Vela's `<stem>_summary_<system
config>.csv`), and once the cleaning is over the folders of heliabuild's
targets, and their parents up to the top folder, are removed while they are
empty (remove_empty_folders, installed as an exit hook by keep_folder_of).
"""

from __future__ import annotations

import atexit
import contextlib
import fnmatch
import os
from collections.abc import Sequence

from SCons.Environment import Base as Environment
from SCons.Node import Node

TEMPORARY_SUFFIX = ".tmp"


def remove_leftovers(targets: Sequence[Node]) -> None:
    """Remove `.<name>.*.tmp` files beside each of `targets` (what an interrupted atomic write leaves)."""
    for target in targets:
        folder, name = os.path.split(target.get_abspath())
        try:
            entries = os.listdir(folder)
        except FileNotFoundError:
            continue
        prefix = f".{name}."
        for entry in entries:
            if entry.startswith(prefix) and entry.endswith(TEMPORARY_SUFFIX):
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(os.path.join(folder, entry))


_folders: set[str] = set()
"""The absolute folders of heliabuild's targets, collected while a `scons -c` reads the SConscripts."""


def cleaning() -> bool:
    """Whether this SCons run removes files: `-c` without `-n`."""
    from SCons.Script import GetOption

    return bool(GetOption("clean")) and not GetOption("no_exec")


def clean_earlier(env: Environment, targets: Sequence[Node], folder: Node, pattern: str) -> None:
    """While cleaning, have `scons -c` of `targets` also remove the files in `folder` that match the
    fnmatch `pattern` (what the stage wrote under earlier options); otherwise do nothing."""
    if not cleaning():
        return
    try:
        entries = sorted(os.listdir(folder.get_abspath()))
    except OSError:
        return
    earlier = [folder.File(entry) for entry in entries if fnmatch.fnmatchcase(entry, pattern)]
    if earlier:
        env.Clean(list(targets), earlier)


def keep_folder_of(targets: Sequence[Node]) -> None:
    """While cleaning, note the folders of `targets` for remove_empty_folders (installed once); otherwise
    do nothing."""
    if not cleaning():
        return
    if not _folders:
        atexit.register(remove_empty_folders)
    _folders.update(os.path.dirname(node.get_abspath()) for node in targets)


def remove_empty_folders() -> None:
    """Remove each noted folder, then its parents up to (not including) the top folder, while they are empty."""
    from SCons.Script import Dir

    top = Dir("#").get_abspath()
    for folder in sorted(_folders, key=len, reverse=True):
        while folder.startswith(top + os.sep):
            try:
                os.rmdir(folder)
            except OSError:  # not empty (or gone already)
                if os.path.isdir(folder):
                    break
            folder = os.path.dirname(folder)
