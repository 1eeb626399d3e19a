"""`heliabuild compare BASE NEW [--format text|md|json] [--force] [--max-regression PERCENT]`: two result bundles
(or two Vela segments.json) side by side, and the regression gate (docs/cli.md, "compare")."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from heliabuild.cli.arguments import fraction, percent
from heliabuild.cli.statuses import EXIT_REGRESSION
from heliabuild.errors import HeliaError

DEFAULT_CONFIDENCE = 0.95  # heliabuild.results.gate.DEFAULT_CONFIDENCE, spelled out so that the parser imports no numpy


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
        "--force", action="store_true", help="compare two models anyway, listing why they are not comparable"
    )
    compare.add_argument(
        "--max-regression",
        type=percent,
        metavar="PERCENT",
        help=f"exit {EXIT_REGRESSION} when a Vela estimate or a deterministic measured median (QEMU instructions, "
        "FVP NPU cycles and beats) grew by more than PERCENT; a figure with a flagged spread is never gated "
        '(docs/cli.md, "The regression gate")',
    )
    compare.add_argument(
        "--gate-noisy",
        action="store_true",
        help="with --max-regression, also gate noisy figures (host time): a regression when the bootstrap "
        "interval of the median ratio new/base lies wholly above 1 + PERCENT/100 (5 samples a side at least)",
    )
    compare.add_argument(
        "--confidence",
        type=fraction,
        metavar="F",
        help=f"--gate-noisy: the interval's confidence, from 0.5 to below 1 (default {DEFAULT_CONFIDENCE})",
    )
    compare.set_defaults(run=run_command)


def run_command(args: argparse.Namespace) -> int:
    """The comparison on stdout; exit EXIT_REGRESSION when --max-regression finds a regression."""
    from heliabuild.results.compare import compare
    from heliabuild.results.compare_text import format_comparison

    if args.confidence is not None and not args.gate_noisy:
        raise HeliaError("--confidence is the confidence of --gate-noisy's test; give --gate-noisy too")
    comparison = compare(
        args.base,
        args.new,
        force=args.force,
        max_regression=args.max_regression,
        gate_noisy=args.gate_noisy,
        confidence=DEFAULT_CONFIDENCE if args.confidence is None else args.confidence,
    )
    sys.stdout.write(format_comparison(comparison, args.format))
    return EXIT_REGRESSION if comparison.regressions else 0
