"""`heliabuild runner --model M [...] -o RUNNER_DIR`: build a runner folder (runner.json and the files it names)
from a fenced model (docs/runner.md)."""

from __future__ import annotations

import argparse
from pathlib import Path

from heliabuild.cli.arguments import named
from heliabuild.paths import check_outputs
from heliabuild.runner.backends import BACKENDS, FVP_FIRMWARES


def add_command(commands: argparse._SubParsersAction) -> None:
    runner = commands.add_parser(
        "runner", help="build a runner folder (runner.json and the files it names) from a fenced model (docs/runner.md)"
    )
    runner.add_argument("--model", type=Path, required=True, help="the (fenced) .tflite model to run")
    runner.add_argument("--sidecar", type=Path, help="its <stem>.fenced_boundaries.json")
    runner.add_argument("--vela-model", type=Path, help="Vela's compiled model of it (recorded by hash)")
    runner.add_argument("--segments", type=Path, metavar="JSON", help="Vela's <stem>_segments.json of it")
    runner.add_argument("--aot-plan", type=Path, metavar="PLAN", help="the AOT plan of Vela's model (recorded by hash)")
    runner.add_argument("--policy", type=Path, metavar="FILE", help="a YAML/JSON measurement policy (default: none)")
    runner.add_argument(
        "--backend",
        choices=BACKENDS,
        default="litert",
        help="litert: the host (default); qemu-m55: heliabuild's AOT firmware on QEMU's Cortex-M55 "
        "(needs --aot-plan made for mps3_an547 from MODEL); fvp: Vela's model on an Arm Corstone FVP "
        '(needs --vela-model and --segments; docs/runner.md, "Running on an FVP")',
    )
    runner.add_argument(
        "--fvp-target",
        metavar="TARGET",
        help="fvp: corstone-300, corstone-310 or corstone-320, optionally with the NPU configuration "
        "(corstone-300/ethos-u55-128); default: the platform of the Vela accelerator config's NPU",
    )
    runner.add_argument(
        "--fvp-timelimit", type=int, metavar="SECONDS", help="fvp: the FVP's --timelimit of each job (default 600)"
    )
    runner.add_argument(
        "--fvp-firmware",
        choices=FVP_FIRMWARES,
        default=FVP_FIRMWARES[0],
        help="fvp: Arm's prebuilt runner from mlia-ethos-u, one job per segment (default), or heliabuild's AOT "
        "firmware of Vela's model and --aot-plan with the Ethos-U driver, the whole lifecycle in one job",
    )
    runner.add_argument(
        "--ethosu-driver-dir",
        type=Path,
        metavar="DIR",
        help="fvp, --fvp-firmware aot: a checkout of Arm's Ethos-U core driver (default: $HELIA_ETHOSU_DRIVER_DIR)",
    )
    runner.add_argument("-o", "--output", type=Path, required=True, metavar="RUNNER_DIR", help="the runner folder")
    runner.set_defaults(run=run_command)


def run_command(args: argparse.Namespace) -> int:
    from heliabuild.runner.freeze import build_runner
    from heliabuild.runner.policy import load_policy

    policy = load_policy(args.policy) if args.policy is not None else None
    tensor_inputs = [] if policy is None else [policy.input_path(entry) for entry in policy.tensor_io or ()]
    check_outputs(
        [("runner folder", args.output)],
        [
            ("model", args.model),
            ("sidecar", args.sidecar),
            ("Vela model", args.vela_model),
            ("segments JSON", args.segments),
            ("AOT plan", args.aot_plan),
            ("policy", args.policy),
            *named("tensor input", tensor_inputs),
        ],
    )
    runner_json = build_runner(
        args.output,
        model=args.model,
        policy=policy,
        sidecar=args.sidecar,
        vela_model=args.vela_model,
        segments=args.segments,
        aot_plan=args.aot_plan,
        backend=args.backend,
        **(
            {
                "fvp_target": args.fvp_target,
                "fvp_timelimit_s": args.fvp_timelimit,
                "fvp_firmware": args.fvp_firmware,
                "ethosu_driver_dir": args.ethosu_driver_dir,
            }
            if args.backend == "fvp"
            else {}
        ),
    )
    print(f"heliabuild: runner {runner_json}")
    return 0
