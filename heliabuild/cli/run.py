"""`heliabuild run RUNNER_JSON -o RESULT_DIR` and `heliabuild run-build RUNNER_JSON -o RESULT_DIR`: one execution
path on a retained runner, publishing its result bundle (docs/runner.md)."""

from __future__ import annotations

import argparse
from pathlib import Path

from heliabuild.cli.arguments import positive_seconds
from heliabuild.paths import check_outputs

VERBS = (
    ("run", "run a runner and write its result bundle"),
    (
        "run-build",
        "rerun a retained runner without rebuilding it and check its receipt (the same execution path as run)",
    ),
)


def add_command(commands: argparse._SubParsersAction) -> None:
    for name, text in VERBS:
        run = commands.add_parser(name, help=text)
        run.add_argument("runner", type=Path, metavar="RUNNER_JSON", help="RUNNER_DIR/runner.json")
        run.add_argument("-o", "--output", type=Path, required=True, metavar="RESULT_DIR", help="the bundle folder")
        run.add_argument(
            "--timeout",
            type=positive_seconds,
            metavar="SECONDS",
            help="the wall-clock limit of a run on a simulated target (qemu-m55; default 120)",
        )
        run.set_defaults(run=run_command)


def run_command(args: argparse.Namespace) -> int:
    """`run` and `run-build`: the same execution path (heliabuild.runner.lifecycle.run_runner) on a retained
    runner, which is verified (format, schema, file hashes) and never rebuilt; the receipt is checked
    before the bundle is published, and an earlier bundle at RESULT_DIR is kept as RESULT_DIR.previous."""
    from heliabuild.results.bundle import check_publish_target, previous_path
    from heliabuild.results.reader import load_result
    from heliabuild.results.verdict import input_source, verdict
    from heliabuild.runner.lifecycle import run_runner

    runner_folder = args.runner if args.runner.is_dir() else args.runner.parent
    check_outputs(
        [("result bundle", args.output), ("previous bundle", previous_path(args.output))],
        [("runner", args.runner), ("runner folder", runner_folder)],
    )
    check_publish_target(args.output)  # again when the bundle is published, after the run
    result_json = run_runner(args.runner, args.output, timeout_s=args.timeout)
    print(f"heliabuild: {args.command} {result_json}")
    result = load_result(result_json.parent)
    if result.receipt is not None:
        receipt = result.receipt
        print(
            f"heliabuild: {args.command} receipt: {receipt.state}, {receipt.warmup_invokes} warmup, "
            f"{receipt.measured_invokes} measured"
        )
        identity = result.document["run_identity"]
        print(
            f"heliabuild: {args.command} verification: {verdict(identity, result.samples).text()}; "
            f"inputs: {input_source(identity)}"
        )
    return 0
