"""`heliabuild unfence FENCED -o OUT.tflite`: remove the fences of a fenced model."""

from __future__ import annotations

import argparse
from pathlib import Path

from heliabuild.paths import check_outputs


def add_command(commands: argparse._SubParsersAction) -> None:
    unfence = commands.add_parser("unfence", help="remove the fences of a fenced model")
    unfence.add_argument("fenced", type=Path)
    unfence.add_argument("-o", "--output", type=Path, required=True)
    unfence.set_defaults(run=run_command)


def run_command(args: argparse.Namespace) -> int:
    from heliabuild.fence import strip_fences
    from heliabuild.model import save_model

    check_outputs([("unfenced model", args.output)], [("fenced model", args.fenced)])
    save_model(strip_fences(args.fenced), args.output)
    print(f"heliabuild: unfence {args.output}")
    return 0
