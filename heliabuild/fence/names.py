"""The fence stage's file names, kept free of heavy imports for the SCons emitters."""

from __future__ import annotations

import os
from pathlib import Path

SIDECAR_SUFFIX = ".fenced_boundaries.json"


def sidecar_path_for(fenced_model: str | os.PathLike[str]) -> Path:
    """`<dir>/<stem>.fenced_boundaries.json` for the fenced model `<dir>/<stem>.tflite`."""
    path = Path(fenced_model)
    return path.with_name(path.stem + SIDECAR_SUFFIX)
