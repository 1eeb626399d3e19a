"""The `heliabuild` command: one module per verb (its `add_command`, which adds its parser, and its
`run_command`), and here the parser of them all, `main` and the handling of errors every verb shares.

Exit status (docs/cli.md, "Exit statuses"; heliabuild.cli.statuses): 0 on success, 1 for an internal fault (an
uncaught exception), 2 for bad input or configuration (one line on stderr, nothing written), 3 when a run's
outputs differ from its verification reference by more than the policy's bound (nothing published), 4 when
`compare --max-regression` finds a regression, 130 when interrupted.
Every command refuses an output path that is, contains or (for a folder read
whole, such as a result bundle) lies inside one of its inputs
(heliabuild.paths.check_outputs), before it writes anything.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from collections.abc import Sequence
from typing import NoReturn

from heliabuild import doctor, manual
from heliabuild.cli import (
    aot_plan,
    compare,
    export,
    fence,
    module,
    ops,
    plan_fences,
    run,
    runner,
    show,
    synth,
    unfence,
    vela,
    verify_fenced,
)
from heliabuild.cli.statuses import (
    EXIT_BAD_INPUT,
    EXIT_INTERNAL_FAULT,
    EXIT_INTERRUPTED,
    EXIT_REGRESSION,
    EXIT_VERIFICATION,
)
from heliabuild.colour import coloured
from heliabuild.errors import HeliaError, VerificationError
from heliabuild.files import failed_operation

__all__ = [
    "EXIT_BAD_INPUT",
    "EXIT_INTERNAL_FAULT",
    "EXIT_INTERRUPTED",
    "EXIT_REGRESSION",
    "EXIT_VERIFICATION",
    "build_parser",
    "main",
]

VERBS = (
    fence,
    verify_fenced,
    unfence,
    synth,
    vela,
    plan_fences,
    aot_plan,
    runner,
    run,
    show,
    export,
    module,
    ops,
    compare,
    doctor,
    manual,
)
"""The modules of the verbs, in the order `heliabuild --help` lists them; each has `add_command(commands)`."""

VELA_PASS_THROUGH = ("vela", "plan-fences")
"""The commands that pass the arguments after `--` to Vela (main)."""

_INVALID_CHOICE = re.compile(r"invalid choice: '([^']*)' \(choose from (.*)\)$")


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        """Exit 2 with one line; a misspelt command or choice gets the nearest ones as a did-you-mean."""
        invalid = _INVALID_CHOICE.search(message)
        if invalid is not None:
            import difflib

            close = difflib.get_close_matches(invalid[1], re.findall(r"'([^']*)'", invalid[2]), n=2)
            if close:
                mean = " or ".join(repr(choice) for choice in close)
                message = f"{message[: invalid.end(1) + 1]}; did you mean {mean}? (choose from {invalid[2]})"
        line = coloured(f"{self.prog}: error: {message} (see {self.prog} --help)", sys.stderr)
        self.exit(EXIT_BAD_INPUT, line + "\n")


def build_parser() -> argparse.ArgumentParser:
    """The parser of every verb (VERBS); each verb's parser sets `run`, its handler."""
    parser = _Parser(prog="heliabuild", description="Build TFLite models for Arm Ethos-U NPUs.")
    parser.add_argument("--version", action=doctor.VersionAction)
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for verb in VERBS:
        verb.add_command(commands)
    return parser


def _split_vela_args(argv: Sequence[str]) -> tuple[list[str], tuple[str, ...]]:
    """heliabuild's arguments, and the ones after the first `--`, which go to Vela as they are."""
    if "--" not in argv:
        return list(argv), ()
    at = list(argv).index("--")
    return list(argv[:at]), tuple(argv[at + 1 :])


def _complete(parser: argparse.ArgumentParser) -> None:
    """Shell completion through argcomplete: inside a completion request (the shell hook
    `eval "$(register-python-argcomplete heliabuild)"` sets _ARGCOMPLETE) it prints the candidates and
    exits; otherwise it returns at once, without importing argcomplete (a twentieth of a small Vela run)."""
    if "_ARGCOMPLETE" not in os.environ:
        return
    import argcomplete

    argcomplete.autocomplete(parser)


def os_error_line(error: OSError) -> str:
    """The one error line of an OSError no verb turned into a HeliaError: what failed, from the exception.
    That is the path (or the two paths of a call on two, such as os.replace: `SOURCE -> TARGET`), the
    operation when heliabuild noted it (heliabuild.files.failed_operation: `cannot write` for every output
    written through heliabuild.files) and the system's reason (`Permission denied`, `No space left on
    device`)."""
    reason = error.strerror or str(error)
    paths = [os.fsdecode(path) for path in (error.filename, error.filename2) if path is not None]
    operation = failed_operation(error)
    parts = [" -> ".join(paths)] if paths else []
    if operation is not None:
        parts.append(f"cannot {operation}")
    return "heliabuild: error: " + ": ".join([*parts, reason])


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; its exit status (module docstring). Arguments after the first `--` go to Vela
    (VELA_PASS_THROUGH). An interrupt (SIGINT) prints one line and exits 130; every stage cleans up its
    temporary files on the way out, so nothing partial is left."""
    try:
        parser = build_parser()
        _complete(parser)
        own, vela_args = _split_vela_args(sys.argv[1:] if argv is None else argv)
        args = parser.parse_args(own)
        if args.command is None:  # bare `heliabuild`: what it can do
            sys.stdout.write(parser.format_help())
            return 0
        if vela_args and args.command not in VELA_PASS_THROUGH:
            raise HeliaError(
                f"{args.command} passes nothing to Vela: the arguments after -- ({' '.join(vela_args)}) are not used",
                hint=f"only {' and '.join(VELA_PASS_THROUGH)} pass arguments after -- to Vela",
            )
        args.vela_args = vela_args
        return args.run(args)
    except KeyboardInterrupt:
        print("heliabuild: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except HeliaError as error:
        hint = f" (hint: {error.hint})" if error.hint else ""
        print(coloured(f"heliabuild: error: {error.message}{hint}", sys.stderr), file=sys.stderr)
        return EXIT_VERIFICATION if isinstance(error, VerificationError) else EXIT_BAD_INPUT
    except OSError as error:
        print(coloured(os_error_line(error), sys.stderr), file=sys.stderr)
        return EXIT_BAD_INPUT
