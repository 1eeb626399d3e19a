"""Scanners: the files a heliabuild input refers to without naming them as sources.

A fenced model has a sidecar, `<stem>.fenced_boundaries.json` beside it, that
a stage reading the model also reads (Vela checks that the sidecar belongs to
the model and carries its `source_sha256` into segments.json). The sidecar
scanner makes that sidecar an implicit dependency of the stage's targets, so
a changed sidecar reruns the stage and `scons` builds the sidecar first.

The scanner only looks at names, never into files, so it costs a lookup per
source on a no-op build.
"""

from __future__ import annotations

from SCons.Environment import Base as Environment
from SCons.Node import Node
from SCons.Scanner import ScannerBase

from heliabuild.fence.names import sidecar_path_for

SIDECAR_SCANNER_NAME = "HeliaSidecar"


def sidecar_of(model: Node) -> Node | None:
    """The sidecar node of `model` when one is built (a target) or exists (in the source tree); else None.

    A sidecar that is neither is no dependency: an unfenced model has none,
    and a fenced model without one is reported by the stage itself.
    """
    sidecar = model.dir.File(sidecar_path_for(model.name).name)
    if sidecar.has_builder() or sidecar.srcnode().exists():
        return sidecar
    return None


def scan_sidecar(node: Node, env: Environment, path: tuple[object, ...] = ()) -> list[Node]:
    """Scanner function: `[sidecar]` of the model `node` (see sidecar_of), or `[]`."""
    sidecar = sidecar_of(node)
    return [] if sidecar is None else [sidecar]


def sidecar_scanner() -> ScannerBase:
    """A scanner for a builder's model sources that adds each model's sidecar."""
    return ScannerBase(scan_sidecar, name=SIDECAR_SCANNER_NAME)
