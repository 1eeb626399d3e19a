"""`heliabuild verify-fenced FENCED [--sidecar S] [--source MODEL]`: check a fenced model against the fence
contract; every violation listed, exit 2 if there is one."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from heliabuild.cli.statuses import EXIT_BAD_INPUT


def add_command(commands: argparse._SubParsersAction) -> None:
    verify = commands.add_parser("verify-fenced", help="check a fenced model against the fence contract")
    verify.add_argument("fenced", type=Path)
    verify.add_argument("--sidecar", type=Path, help="its <stem>.fenced_boundaries.json")
    verify.add_argument("--source", type=Path, help="the unfenced model it was cut from")
    verify.set_defaults(run=run_command)


def run_command(args: argparse.Namespace) -> int:
    from heliabuild.fence import verify_fenced_model

    violations = verify_fenced_model(args.fenced, sidecar=args.sidecar, source=args.source)
    if violations:
        count = len(violations)
        print(f"heliabuild: error: {args.fenced} breaks the fence contract in {count} places:", file=sys.stderr)
        for violation in violations:
            print(f"  {violation}", file=sys.stderr)
        return EXIT_BAD_INPUT
    print(f"heliabuild: {args.fenced} satisfies ETHOS_U_STREAM_SPLIT contract version 1")
    return 0
