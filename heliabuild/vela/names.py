"""The Vela stage's defaults and file names, and the name every view gives Vela's estimate.

Kept free of heavy imports (numpy, the TFLite schema, Vela itself), so the
SCons emitters that declare a stage's targets can use them on every build.
"""

from __future__ import annotations

import os
from pathlib import PurePath

DEFAULT_ACCELERATOR = "ethos-u55-128"

ESTIMATE = "Vela NPU estimate"
"""Vela's compile-time estimate of a segment's (or an operator's) NPU cycles, as `show`, `ops`, the build
summary and the sweep table and report name it: never a measurement (heliabuild.results.vocabulary)."""


def default_system_config(accelerator: str) -> str:
    """The system configuration Vela picks when none is given (Vela 4 and 5)."""
    if accelerator.startswith("ethos-u85"):
        return "Ethos_U85_SYS_DRAM_Mid"
    if accelerator.startswith("ethos-u65"):
        return "Ethos_U65_Client_Server"
    return "Ethos_U55_High_End_Embedded"


def default_memory_mode(accelerator: str) -> str:
    """The memory mode Vela picks when none is given (Vela 4 and 5)."""
    if accelerator.startswith(("ethos-u85", "ethos-u65")):
        return "Dedicated_Sram_384KB"
    return "Shared_Sram"


def output_names(model: str | os.PathLike[str], system_config: str) -> dict[str, str]:
    """The file names Vela and heliabuild write for `model` in the output folder.

    Keys, in order: `model`, `per_layer`, `summary`, `segments`.
    """
    stem = PurePath(model).stem
    return {
        "model": f"{stem}_vela.tflite",
        "per_layer": f"{stem}_per-layer.csv",
        "summary": f"{stem}_summary_{system_config}.csv",
        "segments": f"{stem}_segments.json",
    }
