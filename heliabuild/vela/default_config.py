"""Vela's warnings about its own defaults, said once in heliabuild's words.

Given no configuration file, system config or memory mode, Vela prints one warning for each, the first with
the absolute path of its packaged file (inside the user's virtual environment):

    Warning: No configuration file specified. Using a default of ['<...>/ethosu/config_files/Arm/vela.ini']. ...
    Warning: No system configuration specified. Using a default of Ethos_U55_High_End_Embedded. ...
    Warning: No memory mode specified. Using a default of Shared_Sram. Compilation may be invalid or non-optimal.

`explained(warnings, platform)` puts in their place one warning that says what Vela chose, what that means
(Vela's estimate is for that reference system, not for the platform the pipeline plans for) and how to choose
(system_config=, memory_mode=, vela_config=), naming the packaged file as Vela's help does (`Arm/vela.ini`);
every other warning passes through as it is, in order. The library's results keep Vela's own lines
(heliabuild.vela.run): only what is printed is rewritten.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

_DEFAULT = re.compile(
    r"^(?:Warning: )?No (configuration file|system configuration|memory mode) specified\. "
    r"Using a default of (.+?)\. Compilation may be invalid or non-optimal\.$"
)


def _config_name(value: str) -> str:
    """`['<...>/config_files/Arm/vela.ini']` as Vela's help names it: `Arm/vela.ini`."""
    path = Path(value.strip("[]'\""))
    parts = path.parts
    return "/".join(parts[parts.index("config_files") + 1 :]) if "config_files" in parts else path.name


def explained(warnings: Sequence[str], platform: str | None = None) -> list[str]:
    """`warnings` with Vela's default-config warnings replaced by one of heliabuild's (module docstring)."""
    chosen: dict[str, str] = {}
    others: list[str] = []
    at = None
    for warning in warnings:
        match = _DEFAULT.match(warning.strip())
        if match is None:
            others.append(warning)
            continue
        at = len(others) if at is None else at
        chosen[match[1]] = _config_name(match[2]) if match[1] == "configuration file" else match[2]
    if at is None:
        return list(warnings)
    names = {"configuration file": "the configuration file", "system configuration": "the system config"}
    used = [
        f"{names.get(kind, kind)} {chosen[kind]}"
        for kind in ("configuration file", "system configuration", "memory mode")
        if kind in chosen
    ]
    target = f"platform {platform}" if platform else "your board"
    sentence = (
        f"Vela chose its own defaults for what was not given: {', '.join(used)} (Vela's packaged files); its "
        f"cycle and memory estimates are for that reference system, not for {target}; to choose, set "
        "system_config= and memory_mode= (with vela_config= naming your own .ini, or Vela's 'Arm/vela.ini') on the "
        "pipeline, or --system-config, --memory-mode and --config for heliabuild vela"
    )
    return [*others[:at], sentence, *others[at:]]
