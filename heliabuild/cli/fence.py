"""`heliabuild fence MODEL -o OUT.tflite --after-ops 3,7 | --plan PLAN.json`: insert the fences, write the sidecar."""

from __future__ import annotations

import argparse
from pathlib import Path

from heliabuild.cli.arguments import positions
from heliabuild.paths import check_outputs
from heliabuild.runner.backends import BACKENDS


def add_command(commands: argparse._SubParsersAction) -> None:
    fence = commands.add_parser("fence", help="insert ETHOS_U_STREAM_SPLIT fences and write the sidecar")
    fence.add_argument("model", type=Path, help="the unfenced .tflite model")
    fence.add_argument("-o", "--output", type=Path, required=True, help="the fenced .tflite to write")
    where = fence.add_mutually_exclusive_group(required=True)
    where.add_argument("--after-ops", type=positions, help="original operator indices, e.g. 3,7")
    where.add_argument("--plan", type=Path, help="a fence-plan JSON bound to the model")
    fence.add_argument(
        "--backend",
        choices=BACKENDS,
        help="the backend the fenced model is for: with qemu-m55, a model its module generator refuses is "
        "refused before anything is written",
    )
    fence.set_defaults(run=run_command)


def run_command(args: argparse.Namespace) -> int:
    from heliabuild.fence import fence_model, load_plan, rewrite_model_with_fences
    from heliabuild.fence.names import sidecar_path_for

    check_outputs(
        [("fenced model", args.output), ("sidecar", sidecar_path_for(args.output))],
        [("model", args.model), ("fence plan", args.plan)],
    )
    if args.backend == "qemu-m55":
        from heliabuild.codegen.module import check_admission

        check_admission(args.model)
    if args.plan is not None:
        result = fence_model(args.model, load_plan(args.plan))
    else:
        result = rewrite_model_with_fences(args.model, args.after_ops)
    sidecar = result.save(args.output)
    print(f"heliabuild: fence {args.output}: {result.num_segments} segments, sidecar {sidecar}")
    return 0
