"""`heliabuild synth KIND -o OUT.tflite [--seed N]`: a deterministic synthetic model (docs/synth.md)."""

from __future__ import annotations

import argparse
from pathlib import Path


def add_command(commands: argparse._SubParsersAction) -> None:
    synth = commands.add_parser("synth", help="generate a deterministic synthetic model")
    synth.add_argument("kind", help="the kind of model (see heliabuild.synth.KINDS)")
    synth.add_argument("-o", "--output", type=Path, required=True)
    synth.add_argument("--seed", type=int, default=0)
    synth.set_defaults(run=run_command)


def run_command(args: argparse.Namespace) -> int:
    from heliabuild.model import save_model
    from heliabuild.synth import synthesize

    save_model(synthesize(args.kind, seed=args.seed), args.output)
    print(f"heliabuild: synth {args.output}")
    return 0
