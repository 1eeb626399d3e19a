"""The `heliabuild` command.

Exit status: 0 on success, 2 for bad input or configuration (one line on
stderr, nothing written), 1 for an internal fault.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import NoReturn

from heliabuild import __version__
from heliabuild.errors import HeliaError

EXIT_BAD_INPUT = 2


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_BAD_INPUT, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def _positions(text: str) -> list[int]:
    try:
        positions = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a comma-separated list of operator indices") from None
    if not positions:
        raise argparse.ArgumentTypeError("no operator index given; name at least one, e.g. 3,7")
    return positions


def _command_fence(args: argparse.Namespace) -> int:
    from heliabuild.fence import fence_model, load_plan, rewrite_model_with_fences

    if args.plan is not None:
        result = fence_model(args.model, load_plan(args.plan))
    else:
        result = rewrite_model_with_fences(args.model, args.after_ops)
    sidecar = result.save(args.output)
    print(f"heliabuild: fence {args.output}: {result.num_segments} segments, sidecar {sidecar}")
    return 0


def _command_verify(args: argparse.Namespace) -> int:
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


def _command_unfence(args: argparse.Namespace) -> int:
    from heliabuild.fence import strip_fences
    from heliabuild.model import save_model

    save_model(strip_fences(args.fenced), args.output)
    print(f"heliabuild: unfence {args.output}")
    return 0


def _command_synth(args: argparse.Namespace) -> int:
    from heliabuild.model import save_model
    from heliabuild.synth import synthesize

    save_model(synthesize(args.kind, seed=args.seed), args.output)
    print(f"heliabuild: synth {args.output}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="heliabuild", description="Build TFLite models for Arm Ethos-U NPUs.")
    parser.add_argument("--version", action="version", version=f"heliabuild {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    fence = commands.add_parser("fence", help="insert ETHOS_U_STREAM_SPLIT fences and write the sidecar")
    fence.add_argument("model", type=Path, help="the unfenced .tflite model")
    fence.add_argument("-o", "--output", type=Path, required=True, help="the fenced .tflite to write")
    where = fence.add_mutually_exclusive_group(required=True)
    where.add_argument("--after-ops", type=_positions, help="original operator indices, e.g. 3,7")
    where.add_argument("--plan", type=Path, help="a fence-plan JSON bound to the model")
    fence.set_defaults(run=_command_fence)

    verify = commands.add_parser("verify-fenced", help="check a fenced model against the fence contract")
    verify.add_argument("fenced", type=Path)
    verify.add_argument("--sidecar", type=Path, help="its <stem>.fenced_boundaries.json")
    verify.add_argument("--source", type=Path, help="the unfenced model it was cut from")
    verify.set_defaults(run=_command_verify)

    unfence = commands.add_parser("unfence", help="remove the fences of a fenced model")
    unfence.add_argument("fenced", type=Path)
    unfence.add_argument("-o", "--output", type=Path, required=True)
    unfence.set_defaults(run=_command_unfence)

    synth = commands.add_parser("synth", help="generate a deterministic synthetic model")
    synth.add_argument("kind", help="the kind of model (see heliabuild.synth.KINDS)")
    synth.add_argument("-o", "--output", type=Path, required=True)
    synth.add_argument("--seed", type=int, default=0)
    synth.set_defaults(run=_command_synth)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.run(args)
    except HeliaError as error:
        hint = f" (hint: {error.hint})" if error.hint else ""
        print(f"heliabuild: error: {error.message}{hint}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except OSError as error:
        # An output the user named cannot be written (a folder, no permission, disk full).
        where = error.filename2 if error.filename2 is not None else error.filename
        print(f"heliabuild: error: {where}: cannot write: {error.strerror or error}", file=sys.stderr)
        return EXIT_BAD_INPUT


if __name__ == "__main__":
    sys.exit(main())
