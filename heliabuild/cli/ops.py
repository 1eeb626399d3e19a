"""`heliabuild ops MODEL [--vela-per-layer CSV] [--format text|json]`: a model's operators (and Vela's estimate
of each), to choose fences."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def add_command(commands: argparse._SubParsersAction) -> None:
    ops = commands.add_parser("ops", help="list a model's operators (and Vela's estimate of each) to choose fences")
    ops.add_argument("model", type=Path, metavar="MODEL", help="the .tflite model, fenced or not")
    ops.add_argument(
        "--vela-per-layer", type=Path, metavar="CSV", help="Vela's per-layer CSV of MODEL: adds cycles and placement"
    )
    ops.add_argument("--format", choices=("text", "json"), default="text", help="the terminal table or JSON")
    ops.set_defaults(run=run_command)


def run_command(args: argparse.Namespace) -> int:
    from heliabuild.vela.ops_table import format_table, operator_table

    sys.stdout.write(format_table(operator_table(args.model, args.vela_per_layer), args.format))
    return 0
