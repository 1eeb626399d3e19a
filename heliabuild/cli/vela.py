"""`heliabuild vela MODEL -o OUTDIR [Vela options] [-- VELA_ARG ...]`: compile a model with Vela and estimate
each fence segment (docs/vela.md)."""

from __future__ import annotations

import argparse
from pathlib import Path

from heliabuild.cli.vela_options import add_vela_options, print_vela_warnings, vela_keywords


def add_command(commands: argparse._SubParsersAction) -> None:
    vela = commands.add_parser(
        "vela",
        help="compile a model with Vela and estimate each fence segment",
        epilog="Arguments after -- go to Vela as they are (heliabuild vela M -o OUT -- --arena-cache-size 1000), "
        "except the options heliabuild sets itself (heliabuild.vela.options.OWN_OPTIONS).",
    )
    vela.add_argument("model", type=Path, help="the .tflite model, fenced or not")
    vela.add_argument("-o", "--output", type=Path, required=True, metavar="OUTDIR", help="the folder to write into")
    add_vela_options(vela)
    vela.set_defaults(run=run_command)


def run_command(args: argparse.Namespace) -> int:
    from heliabuild.vela import compile

    result = compile(args.model, args.output, **vela_keywords(args), in_process=True)
    for path in (result.model, result.per_layer_csv, result.summary_csv, result.segments_json):
        print(f"heliabuild: vela {path}")
    print_vela_warnings(result.warnings)
    return 0
