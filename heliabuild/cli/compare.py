"""`heliabuild compare BASE NEW [--format text|md|json] [--force] [--max-regression PERCENT]`: two result bundles
(or two Vela segments.json) side by side, and the regression gate (docs/cli.md, "compare")."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from heliabuild.cli.arguments import percent
from heliabuild.cli.statuses import EXIT_REGRESSION


def add_command(commands: argparse._SubParsersAction) -> None:
    compare = commands.add_parser(
        "compare", help="compare two result bundles (or two Vela segments.json): estimates, measurements, options"
    )
    compare.add_argument("base", type=Path, metavar="BASE", help="the earlier bundle folder or segments.json")
    compare.add_argument("new", type=Path, metavar="NEW", help="the later one, of the same kind")
    compare.add_argument(
        "--format",
        choices=("text", "md", "json"),
        default="text",
        help="the terminal, Markdown for a CI comment, or JSON",
    )
    compare.add_argument(
        "--force", action="store_true", help="compare another model or segment layout anyway (listing why not)"
    )
    compare.add_argument(
        "--max-regression",
        type=percent,
        metavar="PERCENT",
        help=f"exit {EXIT_REGRESSION} when an estimate or a measured median grew by more than PERCENT",
    )
    compare.set_defaults(run=run_command)


def run_command(args: argparse.Namespace) -> int:
    """The comparison on stdout; exit EXIT_REGRESSION when --max-regression finds a regression."""
    from heliabuild.results.compare import compare, format_comparison

    comparison = compare(args.base, args.new, force=args.force, max_regression=args.max_regression)
    sys.stdout.write(format_comparison(comparison, args.format))
    return EXIT_REGRESSION if comparison.regressions else 0
