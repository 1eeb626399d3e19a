"""`heliabuild aot-plan MODEL [--prefix P] [--platform NAME] [--config FILE] [--plan INPUT_PLAN]
[--vela-per-layer CSV] -o OUTDIR`, or `--list-platforms`: the heliaAOT plan and report of a model
(docs/aot-plan.md)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from heliabuild.cli.arguments import named
from heliabuild.errors import HeliaError
from heliabuild.paths import check_outputs
from heliabuild.targets import table

# heliabuild.scons.aot.DEFAULT_PLATFORM, spelled out so that building the parser does not import the AOT
# stage (tests check they agree).
AOT_DEFAULT_PLATFORM = "corstone300_ethos_u55"  # heliabuild.aot.shipped.DEFAULT_PLATFORM
QEMU_PLATFORM = table().qemu_machine().name  # the qemu-m55 backend's platform (qemu_m55.TARGET too)


def add_command(commands: argparse._SubParsersAction) -> None:
    aot = commands.add_parser(
        "aot-plan", help="write the heliaAOT plan and report of a model for a platform (docs/aot-plan.md)"
    )
    aot.add_argument("model", type=Path, nargs="?", help="the .tflite model (normally Vela's output)")
    aot.add_argument(
        "--prefix",
        help="the module prefix, a C identifier; names <prefix>_plan.json and _report.json "
        "(default: as SCons, the model's stem without _vela and _fenced, e.g. kws for kws_fenced_vela.tflite)",
    )
    aot.add_argument(
        "--platform",
        metavar="NAME",
        help=f"the target (see --list-platforms; default: as SCons, {AOT_DEFAULT_PLATFORM}, or for Vela's output "
        "compiled for another NPU the first platform whose NPU runs it)",
    )
    aot.add_argument("--config", type=Path, metavar="FILE", help="a YAML or JSON configuration (docs/aot-plan.md)")
    aot.add_argument(
        "--plan",
        type=Path,
        metavar="INPUT_PLAN",
        help="a plan to read as input (optimization.plan; relative to the working directory): its schedule is applied",
    )
    aot.add_argument("--vela-per-layer", type=Path, metavar="CSV", help="Vela's per-layer CSV of MODEL, for the report")
    aot.add_argument("-o", "--output", type=Path, metavar="OUTDIR", help="the folder to write into")
    aot.add_argument("--list-platforms", action="store_true", help="print the platform table and exit")
    aot.set_defaults(run=run_command)


def default_prefix(model: Path) -> str:
    """The module prefix SCons's pipeline gives MODEL's plan: the file stem without Vela's `_vela` and then
    the fence stage's `_fenced` suffix (kws_fenced_vela.tflite -> kws), made a C identifier as
    heliabuild.aot.prefix.prefix_of makes a pipeline's name one, as SCons does."""
    from heliabuild.aot.prefix import prefix_of

    return prefix_of(model.stem.removesuffix("_vela").removesuffix("_fenced"))


def default_platform(model: Path) -> str:
    """`aot-plan`'s platform when none is given, as SCons chooses it: for Vela's output, the platform whose
    NPU runs the accelerator Vela compiled it for (heliabuild.aot.shipped.default_platform)."""
    from heliabuild.aot.shipped import default_platform
    from heliabuild.model.io import load_model
    from heliabuild.model.opcodes import operator_type
    from heliabuild.vela.streams import NPU_OPERATOR, stream_accelerator

    loaded = load_model(model)
    codes = loaded.operator_codes
    operators = loaded.subgraphs[0].operators or []
    streams = [op for op in operators if operator_type(codes[op.opcodeIndex]) == NPU_OPERATOR]
    return default_platform(next((stream_accelerator(loaded, op) for op in streams), None))


def run_command(args: argparse.Namespace) -> int:
    from heliabuild.aot.platforms import platforms_table

    if args.list_platforms:
        names = ("model", "prefix", "platform", "config", "plan", "vela_per_layer", "output")
        extra = [name for name in names if getattr(args, name) is not None]
        if extra:
            option = "MODEL" if extra[0] == "model" else "--" + extra[0].replace("_", "-")
            raise HeliaError(f"--list-platforms takes no other argument (got {option})")
        sys.stdout.write(platforms_table())
        return 0
    missing = [name for name, value in (("MODEL", args.model), ("-o OUTDIR", args.output)) if value is None]
    if missing:
        raise HeliaError(
            f"aot-plan needs {', '.join(missing)}",
            hint="heliabuild aot-plan MODEL [--prefix P] [--platform NAME] -o OUTDIR, or --list-platforms",
        )
    if args.prefix is None:
        args.prefix = default_prefix(args.model)
    if args.platform is None:
        args.platform = default_platform(args.model)
    if args.platform == QEMU_PLATFORM:  # the qemu-m55 firmware's plan: refuse what its generator refuses
        from heliabuild.codegen.module import check_admission

        check_admission(args.model)

    from heliabuild.aot.config import AotConfig, load_config
    from heliabuild.aot.stage import output_names, write_plan

    config = load_config(args.config) if args.config is not None else AotConfig()
    if args.plan is not None:  # relative to the working directory, made absolute by the configuration
        config = config.with_plan(args.plan)
    check_outputs(
        named("plan or report", [args.output / name for name in output_names(args.prefix)]),
        [
            ("model", args.model),
            ("configuration", args.config),
            ("input plan", config.plan_path),
            ("per-layer CSV", args.vela_per_layer),
        ],
    )
    outputs = write_plan(args.model, args.output, args.prefix, args.platform, config, args.vela_per_layer)
    print(f"heliabuild: aot-plan {outputs.plan}")
    print(f"heliabuild: aot-plan {outputs.report}")
    for warning in dict.fromkeys(outputs.warnings):
        print(f"heliabuild: aot-plan warning: {warning}", file=sys.stderr)
    return 0
