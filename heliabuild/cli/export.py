"""`heliabuild export RESULT --fields statistics|samples --format json|csv`: a verified bundle's statistics or
samples on stdout."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def add_command(commands: argparse._SubParsersAction) -> None:
    export = commands.add_parser("export", help="export a verified result bundle's statistics or samples")
    export.add_argument("result", type=Path, metavar="RESULT", help="the result bundle folder")
    export.add_argument("--fields", choices=("statistics", "samples"), default="statistics")
    export.add_argument("--format", choices=("json", "csv"), default="json")
    export.set_defaults(run=run_command)


def run_command(args: argparse.Namespace) -> int:
    from heliabuild.results.export import export

    sys.stdout.write(export(args.result, args.fields, args.format))
    return 0
