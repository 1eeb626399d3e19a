"""Vela configuration files named as Vela names them.

Vela ships its own configuration files inside its package (`ethosu/config_files/<vendor>/<name>.ini`) and its
help and warnings name them by that relative name, e.g. `Arm/vela.ini`. `resolve_config(name)` gives the file a
`--config` value means: the path itself when such a file exists, else Vela's packaged file of that relative name
when there is one, else the path as given (the caller reports it missing). Finding the package does not import
Vela, so SCons can resolve names while the SConscripts are read.
"""

from __future__ import annotations

import importlib.util
import os
from functools import cache
from pathlib import Path

VELA_PACKAGE = "ethosu"
CONFIG_FOLDER = "config_files"


@cache
def packaged_config_folder() -> Path | None:
    """The folder of Vela's packaged configuration files, or None when Vela is not installed."""
    spec = importlib.util.find_spec(VELA_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        return None
    folder = Path(next(iter(spec.submodule_search_locations))) / CONFIG_FOLDER
    return folder if folder.is_dir() else None


def packaged_configs() -> list[str]:
    """The relative names of Vela's packaged configuration files (`Arm/vela.ini`, ...), sorted."""
    folder = packaged_config_folder()
    if folder is None:
        return []
    return sorted(path.relative_to(folder).as_posix() for path in folder.rglob("*.ini"))


def resolve_config(name: str | os.PathLike[str]) -> Path:
    """The configuration file `name` means (module docstring)."""
    path = Path(name)
    if path.exists() or path.is_absolute():
        return path
    folder = packaged_config_folder()
    if folder is not None and ".." not in path.parts:
        packaged = folder / path
        if packaged.is_file():
            return packaged
    return path
