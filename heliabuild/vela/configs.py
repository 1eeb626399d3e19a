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
import re
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


ACCELERATOR_SOURCE = ("vela", "architecture_features.py")
"""Where Vela defines `class Accelerator(enum.Enum)`, inside its package folder."""
_MEMBER = re.compile(r'^    [A-Za-z_][A-Za-z0-9_]* = "(ethos-u[0-9a-z-]+)"$')


@cache
def packaged_accelerators() -> tuple[str, ...] | None:
    """The accelerator configurations the installed Vela defines, read from the source of its `Accelerator`
    enum without importing Vela (importing it imports numpy and Vela's compiler: most of a small compile's
    cost); None when they cannot be read that way (the caller then asks Vela itself)."""
    spec = importlib.util.find_spec(VELA_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations))).joinpath(*ACCELERATOR_SOURCE)
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
        start = lines.index("class Accelerator(enum.Enum):") + 1
    except (OSError, UnicodeDecodeError, ValueError):
        return None
    members = []
    for line in lines[start:]:
        found = _MEMBER.match(line)
        if found is None:
            break
        members.append(found.group(1))
    return tuple(members) or None


OPERATOR_MAP_SOURCE = ("vela", "tflite_mapping.py")
"""Where Vela maps each TFLite builtin operator to its own operator type (`builtin_operator_map`)."""
_MAP_ENTRY = re.compile(r"\n    BuiltinOperator\.([A-Z0-9_]+): \(\s*Op\.([A-Za-z0-9_]+)")


@cache
def packaged_operator_names() -> dict[str, str] | None:
    """Vela's operator type name for each TFLite builtin operator name (`ADD` -> `Add`), read from the source
    of Vela's `builtin_operator_map` without importing Vela; None when it cannot be read that way (the caller
    then asks Vela itself)."""
    spec = importlib.util.find_spec(VELA_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations))).joinpath(*OPERATOR_MAP_SOURCE)
    try:
        text = path.read_text(encoding="utf-8")
        start = text.index("\nbuiltin_operator_map = {")
        end = text.index("\n}", start)
    except (OSError, UnicodeDecodeError, ValueError):
        return None
    names = dict(_MAP_ENTRY.findall(text[start:end]))
    return names or None


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
