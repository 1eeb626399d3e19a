"""The Vela options `vela` and `plan-fences` share: their arguments, their heliabuild.vela.compile keywords and
the printing of Vela's warnings."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from heliabuild.colour import coloured

# heliabuild.vela's DEFAULT_ACCELERATOR and OPTIMISE_CHOICES, spelled out so that building the parser
# does not import Vela's stage (tests check they agree).
VELA_DEFAULT_ACCELERATOR = "ethos-u55-128"
VELA_OPTIMISE_CHOICES = ("Size", "Performance")
VELA_OPTIONS = ("accelerator_config", "system_config", "memory_mode", "config", "optimise", "vela_args")
"""The argument names of the Vela options (`vela_args`: the arguments after `--`)."""


def add_vela_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--accelerator-config",
        help=f"the Ethos-U configuration, e.g. ethos-u85-256 (default {VELA_DEFAULT_ACCELERATOR})",
    )
    parser.add_argument("--system-config", help="a [System_Config.*] section (default: the one Vela picks)")
    parser.add_argument("--memory-mode", help="a [Memory_Mode.*] section (default: the one Vela picks)")
    parser.add_argument(
        "--config",
        action="append",
        type=Path,
        metavar="FILE",
        help="a Vela configuration .ini file, or one Vela packages by the name its help gives (Arm/vela.ini); "
        "repeatable; needs --system-config and --memory-mode",
    )
    parser.add_argument("--optimise", choices=VELA_OPTIMISE_CHOICES, help="Vela's optimisation goal (default: Vela's)")


def vela_keywords(args: argparse.Namespace) -> dict[str, object]:
    """The Vela options of the `vela` and `plan-fences` commands, as heliabuild.vela.compile keywords."""
    return {
        "accelerator": args.accelerator_config or VELA_DEFAULT_ACCELERATOR,
        "system_config": args.system_config,
        "memory_mode": args.memory_mode,
        "config": args.config or (),
        "optimise": args.optimise,
        "extra_args": args.vela_args,
    }


def print_vela_warnings(warnings: Sequence[str]) -> None:
    """Vela's warnings (and heliabuild's about the command streams), each once, on stderr, without
    Vela's leading `Warning: ` and its warnings about its defaults said as one (as the SCons builders print
    them: heliabuild.vela.default_config)."""
    from heliabuild.vela.default_config import explained

    for text in dict.fromkeys(warning.removeprefix("Warning: ").strip() for warning in explained(warnings)):
        print(coloured(f"heliabuild: vela warning: {text}", sys.stderr), file=sys.stderr)
