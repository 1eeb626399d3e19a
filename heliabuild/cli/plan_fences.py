"""`heliabuild plan-fences MODEL --budget-cycles N [--min-coverage F] [--per-layer CSV | Vela options] -o
PLAN.json`: plan fences from Vela's estimate and a cycle budget (docs/plan-fences.md)."""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from heliabuild.cli.arguments import fraction, named, positive_int
from heliabuild.cli.vela_options import VELA_OPTIONS, add_vela_options, print_vela_warnings, vela_keywords
from heliabuild.errors import HeliaError
from heliabuild.paths import check_outputs


def add_command(commands: argparse._SubParsersAction) -> None:
    plan = commands.add_parser(
        "plan-fences",
        help="plan fences from Vela's estimate and a cycle budget",
        epilog="Without --per-layer, arguments after -- go to Vela as they are, as for the vela command.",
    )
    plan.add_argument("model", type=Path, help="the unfenced .tflite model")
    plan.add_argument("--budget-cycles", type=positive_int, required=True, metavar="N", help="cycles per segment")
    plan.add_argument(
        "--min-coverage",
        type=fraction,
        default=1.0,
        metavar="F",
        help="the share of Vela's cycles that must be attributed to operators (default 1.0)",
    )
    plan.add_argument(
        "--per-layer",
        type=Path,
        metavar="CSV",
        help="Vela's per-layer CSV of MODEL; without it, Vela runs on MODEL first (with the Vela options)",
    )
    add_vela_options(plan)
    plan.add_argument("-o", "--output", type=Path, required=True, metavar="PLAN.json", help="the fence plan to write")
    plan.set_defaults(run=run_command)


def run_command(args: argparse.Namespace) -> int:
    from heliabuild.files import write_json
    from heliabuild.planning import plan_fences
    from heliabuild.vela import compile

    check_outputs(
        [("fence plan", args.output)],
        [("model", args.model), ("per-layer CSV", args.per_layer), *named("Vela configuration", args.config)],
    )
    warnings: tuple[str, ...] = ()
    if args.per_layer is not None:
        given = [name for name in VELA_OPTIONS if getattr(args, name)]
        if given:
            option = "-- ARG..." if given[0] == "vela_args" else "--" + given[0].replace("_", "-")
            raise HeliaError(
                f"{option} is not used with --per-layer: the per-layer CSV already holds Vela's estimate",
                hint="Give either --per-layer or the Vela options, not both.",
            )
        plan = plan_fences(args.model, args.per_layer, args.budget_cycles, min_coverage=args.min_coverage)
    else:
        with tempfile.TemporaryDirectory(prefix="heliabuild-plan-fences-") as folder:
            result = compile(args.model, folder, **vela_keywords(args))
            plan = plan_fences(args.model, result.per_layer_csv, args.budget_cycles, min_coverage=args.min_coverage)
            warnings = result.warnings
    write_json(args.output, plan.to_json())
    coverage = plan.coverage
    share = f", coverage {coverage.fraction:.2%}" if coverage is not None else ""
    print(f"heliabuild: plan-fences {args.output}: {len(plan.fences)} fences, {len(plan.fences) + 1} segments{share}")
    print_vela_warnings(warnings)
    return 0
