"""`heliabuild show RESULT [--format text|json] [--plot FILE.svg|FILE.png]`: a verified result bundle (or a Vela
segments.json) as tables or as one JSON document, optionally plotted."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from heliabuild.errors import HeliaError
from heliabuild.paths import check_outputs

FORMATS = ("text", "json")


def add_command(commands: argparse._SubParsersAction) -> None:
    show = commands.add_parser("show", help="print a verified result bundle (or a Vela segments.json) as tables")
    show.add_argument(
        "result", type=Path, metavar="RESULT", help="the result bundle folder, or Vela's <stem>_segments.json"
    )
    show.add_argument(
        "--plot",
        type=Path,
        metavar="FILE.svg|FILE.png",
        help="also write a plot, SVG or PNG by the extension (with the optional matplotlib extra)",
    )
    show.add_argument(
        "--format",
        choices=FORMATS,
        default="text",
        help="text tables (the default), or one JSON document of what they show (heliabuild.results.show)",
    )
    show.set_defaults(run=run_command)


def run_command(args: argparse.Namespace) -> int:
    """A result bundle (its folder or result.json) as tables or JSON, optionally plotted; any other .json file as
    Vela's segments.json (heliabuild.results.show.show_segments; with `--format json`, the validated document).
    With `--format json` stdout holds the JSON document only: the plot's line goes to stderr."""
    from heliabuild.files import json_text
    from heliabuild.results.plot import plot
    from heliabuild.results.reader import load_result
    from heliabuild.results.show import show_document, show_result, show_segments
    from heliabuild.vela.segments import read_segments_document

    as_json = args.format == "json"

    if args.result.suffix == ".json" and args.result.name != "result.json":
        if args.plot is not None:
            raise HeliaError(
                f"{args.result}: --plot plots a result bundle, not a segments.json",
                hint="show the segments.json without --plot, or plot the bundle of a run",
            )
        shown = json_text(read_segments_document(args.result)) if as_json else show_segments(args.result)
        sys.stdout.write(shown)
        return 0
    result = load_result(args.result)
    text = json_text(show_document(result)) if as_json else show_result(result)
    if args.plot is not None:
        check_outputs([("plot", args.plot)], [], [("result bundle", result.path)])
        plot(result, args.plot)
    sys.stdout.write(text)
    if args.plot is not None:
        print(f"heliabuild: plot {args.plot}", file=sys.stderr if as_json else sys.stdout)
    return 0
