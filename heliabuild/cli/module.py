"""`heliabuild module MODEL PLAN -o OUTDIR [--layout L] [--prefix P] [--arena-section NAME]`: a model and its AOT
plan as a self-contained C module folder a firmware links (docs/module.md)."""

from __future__ import annotations

import argparse
import os
from pathlib import Path


def add_command(commands: argparse._SubParsersAction) -> None:
    module = commands.add_parser(
        "module",
        help="export a model and its AOT plan as a self-contained C module folder a firmware links (docs/module.md)",
    )
    module.add_argument("model", type=Path, metavar="MODEL", help="the .tflite model (fenced or not) the plan is of")
    module.add_argument("plan", type=Path, metavar="PLAN", help="its <prefix>_plan.json")
    module.add_argument("-o", "--output", type=Path, required=True, metavar="OUTDIR", help="the module folder")
    module.add_argument(
        "--layout",
        choices=("plain", "cmake", "zephyr", "cmsis-pack"),
        help="the build files to add (default: $HELIA_MODULE_LAYOUT, else plain)",
    )
    module.add_argument("--prefix", help="the C prefix of the module's symbols (default: the plan's module prefix)")
    module.add_argument(
        "--arena-section",
        metavar="NAME",
        help="define the arena in this linker section (default: the caller defines <prefix>_model_arena)",
    )
    module.set_defaults(run=run_command)


def run_command(args: argparse.Namespace) -> int:
    from heliabuild.module.export import export_module
    from heliabuild.module.layouts import DEFAULT_LAYOUT, LAYOUT_VARIABLE

    layout = args.layout or os.environ.get(LAYOUT_VARIABLE) or DEFAULT_LAYOUT
    export = export_module(
        args.model, args.plan, args.output, layout=layout, prefix=args.prefix, arena_section=args.arena_section
    )
    files = export.manifest["files"]
    assert isinstance(files, dict)
    print(f"heliabuild: module {export.folder} ({export.layout}, {len(files) + 1} files)")
    return 0
