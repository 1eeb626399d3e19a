"""Vela's options as heliabuild passes them: `VelaOptions` (the accelerator, system and memory mode, the
optimisation strategy, the configuration file and the other options, checked before Vela runs), the
accelerators this Vela knows, its version and the configuration file shipped with it (heliabuild.vela.run
runs Vela with them)."""

from __future__ import annotations

import configparser
import difflib
import os
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from heliabuild.distributions import version
from heliabuild.documents import read_text
from heliabuild.errors import VelaError
from heliabuild.vela.configs import packaged_accelerators, packaged_config_folder, resolve_config
from heliabuild.vela.names import DEFAULT_ACCELERATOR, default_memory_mode, default_system_config

OPTIMISE_CHOICES = ("Size", "Performance")


DEFAULT_CONFIG = "Arm/vela.ini"
"""The packaged configuration file Vela reads when it is given none (Vela 4 and 5)."""


OWN_OPTIONS = (
    "--accelerator-config",
    "--system-config",
    "--memory-mode",
    "--config",
    "--optimise",
    "--output-dir",
    "--output-format",
    "--verbose-performance",
)
"""Vela's options heliabuild sets itself (VelaOptions.arguments, _run_vela): never among `extra_args`."""


@cache
def vela_version() -> str:
    return version("ethos-u-vela")


@cache
def accelerators() -> tuple[str, ...]:
    """Every accelerator configuration the installed Vela knows: read from its package
    (configs.packaged_accelerators) without importing it, else from Vela itself."""
    known = packaged_accelerators()
    if known is not None:
        return known
    from ethosu.vela.architecture_features import Accelerator

    return tuple(Accelerator.member_list())


@dataclass(frozen=True)
class VelaOptions:
    """What Vela is asked to do; None means Vela's own default."""

    accelerator: str = DEFAULT_ACCELERATOR
    system_config: str | None = None
    memory_mode: str | None = None
    config: tuple[str, ...] = ()
    optimise: str | None = None
    extra_args: tuple[str, ...] = ()

    @property
    def resolved_system_config(self) -> str:
        return self.system_config or default_system_config(self.accelerator)

    @property
    def resolved_memory_mode(self) -> str:
        return self.memory_mode or default_memory_mode(self.accelerator)

    def check(self, model: str) -> None:
        """Raise VelaError, before Vela runs, for an option Vela would refuse: an unknown accelerator or
        optimisation goal, a configuration file that is missing or not an .ini, a system config or memory mode
        the files (or, given none, Vela's DEFAULT_CONFIG) do not define (listing the ones they do and suggesting
        the nearest), and an extra argument that is, or abbreviates, one of OWN_OPTIONS."""
        for argument in self.extra_args:
            name = argument.partition("=")[0]
            owned = [
                option for option in OWN_OPTIONS if name.startswith("--") and len(name) > 2 and option.startswith(name)
            ]
            if owned:
                raise VelaError(
                    f"{model}: the extra Vela argument {argument!r} sets {owned[0]}, which heliabuild sets itself",
                    hint="Give it through heliabuild's own option (e.g. --accelerator-config, --config; in SCons "
                    "HELIA_VELA_ACCELERATOR, HELIA_VELA_CONFIG); extra arguments carry Vela's other options.",
                )
        if self.accelerator not in accelerators():
            raise VelaError(
                f"{model}: unknown accelerator {self.accelerator!r}; Vela {vela_version()} knows "
                + ", ".join(accelerators())
            )
        if self.optimise is not None and self.optimise not in OPTIMISE_CHOICES:
            raise VelaError(f"{model}: optimise is {self.optimise!r}; expected one of {', '.join(OPTIMISE_CHOICES)}")
        if self.config and (self.system_config is None or self.memory_mode is None):
            raise VelaError(
                f"{model}: a Vela configuration file needs an explicit system config and memory mode",
                hint="Name the [System_Config.*] and [Memory_Mode.*] sections of the file to use.",
            )
        files = self.config or _default_config()
        sections = {section for path in files for section in _ini_sections(path)}
        for option, kind, name in (
            ("system config", "System_Config", self.system_config),
            ("memory mode", "Memory_Mode", self.memory_mode),
        ):
            if name is not None and files and f"{kind}.{name}" not in sections:
                known = sorted(s.partition(".")[2] for s in sections if s.startswith(f"{kind}."))
                nearest = [k for k in known if k.lower().startswith(name.lower())]
                nearest = nearest or difflib.get_close_matches(name, known, n=1, cutoff=0.5)
                raise VelaError(
                    f"{', '.join(files)}: no [{kind}.{name}] section for the {option} {name!r}; "
                    f"the file defines {', '.join(known) or f'no {kind} section'}"
                    + (f"; did you mean {nearest[0]!r}?" if nearest else "")
                )

    def arguments(self) -> list[str]:
        arguments = ["--accelerator-config", self.accelerator, "--verbose-performance"]
        if self.system_config is not None:
            arguments += ["--system-config", self.system_config]
        if self.memory_mode is not None:
            arguments += ["--memory-mode", self.memory_mode]
        packaged = packaged_config_folder()
        for path in self.config:
            # Vela resolves a relative "folder/file.ini" inside its own package (and warns when it is given one
            # of its packaged files by another path): pass a packaged file by that name, any other absolute.
            resolved = Path(path).resolve()
            inside = packaged is not None and resolved.is_relative_to(packaged.resolve())
            arguments += ["--config", resolved.relative_to(packaged.resolve()).as_posix() if inside else str(resolved)]
        if self.optimise is not None:
            arguments += ["--optimise", self.optimise]
        return [*arguments, *self.extra_args]


def _default_config() -> tuple[str, ...]:
    """The configuration file Vela reads when it is given none (its packaged DEFAULT_CONFIG), when installed."""
    path = resolve_config(DEFAULT_CONFIG)
    return (str(path),) if path.is_absolute() and path.is_file() else ()


def _ini_sections(path: str) -> list[str]:
    """The section names of the Vela configuration file `path`, read as Vela reads it (configparser)."""
    if not os.path.lexists(path):
        raise VelaError(f"{path}: the Vela configuration file does not exist")
    parser = configparser.ConfigParser()
    try:
        parser.read_string(read_text(path, "Vela configuration file", error=VelaError), source=path)
    except configparser.Error as error:
        raise VelaError(f"{path}: not a Vela configuration file: {' '.join(str(error).split())}") from None
    return parser.sections()
