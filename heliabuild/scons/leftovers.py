"""Removing what a killed stage left beside its targets.

heliabuild writes every file through a temporary file in the target's folder
(`.<target name>.<random>.tmp`, see heliabuild.files.write_atomic) and runs
Vela in a work folder (`.<model stem>.vela-<random>`, removed by
heliabuild.vela.compile itself on its next run, unless a live run holds it). A
stage killed by SIGKILL cannot remove its temporary files; its targets are
complete or absent, but the temporaries stay. Each stage action therefore
removes its own targets' leftover temporaries before it runs, so the next
build leaves a folder as a clean build would. No other build is writing them
meanwhile: a build holds the project's build lock
(heliabuild.scons.wiring.lock_the_build) while it runs.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Sequence

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
