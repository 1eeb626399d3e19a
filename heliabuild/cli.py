"""The `heliabuild` command.

Exit status (docs/cli.md, "Exit statuses"): 0 on success, 1 for an internal fault (an uncaught exception),
2 for bad input or configuration (one line on stderr, nothing written), 3 when a run's outputs differ from
its verification reference by more than the policy's bound (nothing published), 4 when `compare
--max-regression` finds a regression, 130 when interrupted.
Every command refuses an output path that is, contains or (for a folder read
whole, such as a result bundle) lies inside one of its inputs
(heliabuild.paths.check_outputs), before it writes anything.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import NoReturn

from heliabuild import doctor, manual
from heliabuild.colour import coloured
from heliabuild.errors import HeliaError, VerificationError
from heliabuild.paths import check_outputs

EXIT_INTERNAL_FAULT = 1  # Python's own status for an uncaught exception
EXIT_BAD_INPUT = 2
EXIT_VERIFICATION = 3  # a run's outputs differ from the reference by more than the policy's bound
EXIT_REGRESSION = 4  # compare --max-regression found a figure that regressed by more than the limit
EXIT_INTERRUPTED = 130  # 128 + SIGINT, as a shell reports it


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


def _positions(text: str) -> list[int]:
    try:
        positions = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a comma-separated list of operator indices") from None
    if not positions:
        raise argparse.ArgumentTypeError("no operator index given; name at least one, e.g. 3,7")
    return positions


def _named(what: str, paths: Sequence[Path] | None) -> list[tuple[str, Path]]:
    """Each of `paths` (a repeatable option) named `what`, for heliabuild.paths.check_outputs."""
    return [(what, path) for path in paths or ()]


def _command_fence(args: argparse.Namespace) -> int:
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

    check_outputs([("unfenced model", args.output)], [("fenced model", args.fenced)])
    save_model(strip_fences(args.fenced), args.output)
    print(f"heliabuild: unfence {args.output}")
    return 0


def _command_synth(args: argparse.Namespace) -> int:
    from heliabuild.model import save_model
    from heliabuild.synth import synthesize

    save_model(synthesize(args.kind, seed=args.seed), args.output)
    print(f"heliabuild: synth {args.output}")
    return 0


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of cycles") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive number of cycles")
    return value


def _positive_seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not 0 < value <= 86400:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds from 0 to 86400")
    return value


def _fraction(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a fraction from 0 to 1")
    return value


def _vela_keywords(args: argparse.Namespace) -> dict[str, object]:
    """The Vela options of the `vela` and `plan-fences` commands, as heliabuild.vela.compile keywords."""
    return {
        "accelerator": args.accelerator_config or VELA_DEFAULT_ACCELERATOR,
        "system_config": args.system_config,
        "memory_mode": args.memory_mode,
        "config": args.config or (),
        "optimise": args.optimise,
        "extra_args": args.vela_args,
    }


def _print_vela_warnings(warnings: Sequence[str]) -> None:
    """Vela's warnings (and heliabuild's about the command streams), each once, on stderr, without
    Vela's leading `Warning: ` and its warnings about its defaults said as one (as the SCons builders print
    them: heliabuild.vela.default_config)."""
    from heliabuild.vela.default_config import explained

    for text in dict.fromkeys(warning.removeprefix("Warning: ").strip() for warning in explained(warnings)):
        print(coloured(f"heliabuild: vela warning: {text}", sys.stderr), file=sys.stderr)


def _command_vela(args: argparse.Namespace) -> int:
    from heliabuild.vela import compile

    result = compile(args.model, args.output, **_vela_keywords(args), in_process=True)
    for path in (result.model, result.per_layer_csv, result.summary_csv, result.segments_json):
        print(f"heliabuild: vela {path}")
    _print_vela_warnings(result.warnings)
    return 0


_VELA_OPTIONS = ("accelerator_config", "system_config", "memory_mode", "config", "optimise", "vela_args")


def _command_plan_fences(args: argparse.Namespace) -> int:
    from heliabuild.files import write_json
    from heliabuild.planning import plan_fences
    from heliabuild.vela import compile

    check_outputs(
        [("fence plan", args.output)],
        [("model", args.model), ("per-layer CSV", args.per_layer), *_named("Vela configuration", args.config)],
    )
    warnings: tuple[str, ...] = ()
    if args.per_layer is not None:
        given = [name for name in _VELA_OPTIONS if getattr(args, name)]
        if given:
            option = "-- ARG..." if given[0] == "vela_args" else "--" + given[0].replace("_", "-")
            raise HeliaError(
                f"{option} is not used with --per-layer: the per-layer CSV already holds Vela's estimate",
                hint="Give either --per-layer or the Vela options, not both.",
            )
        plan = plan_fences(args.model, args.per_layer, args.budget_cycles, min_coverage=args.min_coverage)
    else:
        with tempfile.TemporaryDirectory(prefix="heliabuild-plan-fences-") as folder:
            result = compile(args.model, folder, **_vela_keywords(args))
            plan = plan_fences(args.model, result.per_layer_csv, args.budget_cycles, min_coverage=args.min_coverage)
            warnings = result.warnings
    write_json(args.output, plan.to_json())
    coverage = plan.coverage
    share = f", coverage {coverage.fraction:.2%}" if coverage is not None else ""
    print(f"heliabuild: plan-fences {args.output}: {len(plan.fences)} fences, {len(plan.fences) + 1} segments{share}")
    _print_vela_warnings(warnings)
    return 0


def _default_prefix(model: Path) -> str:
    """The module prefix SCons's pipeline gives MODEL's plan: the file stem without Vela's `_vela` and then
    the fence stage's `_fenced` suffix (kws_fenced_vela.tflite -> kws), made a C identifier as
    heliabuild.aot.prefix.prefix_of makes a pipeline's name one, as SCons does."""
    from heliabuild.aot.prefix import prefix_of

    return prefix_of(model.stem.removesuffix("_vela").removesuffix("_fenced"))


def _default_platform(model: Path) -> str:
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


def _command_aot_plan(args: argparse.Namespace) -> int:
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
        args.prefix = _default_prefix(args.model)
    if args.platform is None:
        args.platform = _default_platform(args.model)
    if args.platform == QEMU_PLATFORM:  # the qemu-m55 firmware's plan: refuse what its generator refuses
        from heliabuild.codegen.module import check_admission

        check_admission(args.model)

    from heliabuild.aot.config import AotConfig, load_config
    from heliabuild.aot.stage import output_names, write_plan

    config = load_config(args.config) if args.config is not None else AotConfig()
    if args.plan is not None:  # relative to the working directory, made absolute by the configuration
        config = config.with_plan(args.plan)
    check_outputs(
        _named("plan or report", [args.output / name for name in output_names(args.prefix)]),
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


def _command_runner(args: argparse.Namespace) -> int:
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
            *_named("tensor input", tensor_inputs),
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


def _command_run(args: argparse.Namespace) -> int:
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


def _command_show(args: argparse.Namespace) -> int:
    """A result bundle (its folder or result.json) as tables, optionally plotted; any other .json file as
    Vela's segments.json (heliabuild.results.export.show_segments)."""
    from heliabuild.results.export import plot, show_result, show_segments
    from heliabuild.results.reader import load_result

    if args.result.suffix == ".json" and args.result.name != "result.json":
        if args.plot is not None:
            raise HeliaError(
                f"{args.result}: --plot plots a result bundle, not a segments.json",
                hint="show the segments.json without --plot, or plot the bundle of a run",
            )
        sys.stdout.write(show_segments(args.result))
        return 0
    result = load_result(args.result)
    text = show_result(result)
    if args.plot is not None:
        check_outputs([("plot", args.plot)], [], [("result bundle", result.path)])
        plot(result, args.plot)
    sys.stdout.write(text)
    if args.plot is not None:
        print(f"heliabuild: plot {args.plot}")
    return 0


def _command_export(args: argparse.Namespace) -> int:
    from heliabuild.results.export import export

    sys.stdout.write(export(args.result, args.fields, args.format))
    return 0


def _command_module(args: argparse.Namespace) -> int:
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


def _command_ops(args: argparse.Namespace) -> int:
    from heliabuild.vela.ops_table import format_table, operator_table

    sys.stdout.write(format_table(operator_table(args.model, args.vela_per_layer), args.format))
    return 0


def _command_compare(args: argparse.Namespace) -> int:
    """The comparison on stdout; exit EXIT_REGRESSION when --max-regression finds a regression."""
    from heliabuild.results.compare import compare, format_comparison

    comparison = compare(args.base, args.new, force=args.force, max_regression=args.max_regression)
    sys.stdout.write(format_comparison(comparison, args.format))
    return EXIT_REGRESSION if comparison.regressions else 0


def _percent(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of percent") from None
    if not value >= 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"{text!r} is not a finite, non-negative percent")
    return value


# heliabuild.vela's DEFAULT_ACCELERATOR and OPTIMISE_CHOICES, spelled out so that building the parser
# does not import Vela's stage (tests check they agree).
VELA_DEFAULT_ACCELERATOR = "ethos-u55-128"
VELA_OPTIMISE_CHOICES = ("Size", "Performance")
# heliabuild.scons.aot.DEFAULT_PLATFORM, spelled out for the same reason (tests check they agree).
AOT_DEFAULT_PLATFORM = "corstone300_ethos_u55"  # heliabuild.aot.shipped.DEFAULT_PLATFORM
QEMU_PLATFORM = "mps3_an547"  # heliabuild.runner.backends.qemu_m55.TARGET, the qemu-m55 backend's platform


def _add_vela_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--accelerator-config",
        help=f"the Ethos-U configuration, e.g. ethos-u85-256 (default {VELA_DEFAULT_ACCELERATOR})",
    )
    parser.add_argument("--system-config", help="a [System_Config.*] section (default: the one Vela picks)")
    parser.add_argument("--memory-mode", help="a [Memory_Mode.*] section (default: the one Vela picks)")
    parser.add_argument(
        "--config",
        action="append",
        type=Path,
        metavar="FILE",
        help="a Vela configuration .ini file, or one Vela packages by the name its help gives (Arm/vela.ini); "
        "repeatable; needs --system-config and --memory-mode",
    )
    parser.add_argument("--optimise", choices=VELA_OPTIMISE_CHOICES, help="Vela's optimisation goal (default: Vela's)")


VELA_PASS_THROUGH = ("vela", "plan-fences")
"""The commands that pass the arguments after `--` to Vela (main)."""


def _split_vela_args(argv: Sequence[str]) -> tuple[list[str], tuple[str, ...]]:
    """heliabuild's arguments, and the ones after the first `--`, which go to Vela as they are."""
    if "--" not in argv:
        return list(argv), ()
    at = list(argv).index("--")
    return list(argv[:at]), tuple(argv[at + 1 :])


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="heliabuild", description="Build TFLite models for Arm Ethos-U NPUs.")
    parser.add_argument("--version", action=doctor.VersionAction)
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

    fence = commands.add_parser("fence", help="insert ETHOS_U_STREAM_SPLIT fences and write the sidecar")
    fence.add_argument("model", type=Path, help="the unfenced .tflite model")
    fence.add_argument("-o", "--output", type=Path, required=True, help="the fenced .tflite to write")
    where = fence.add_mutually_exclusive_group(required=True)
    where.add_argument("--after-ops", type=_positions, help="original operator indices, e.g. 3,7")
    where.add_argument("--plan", type=Path, help="a fence-plan JSON bound to the model")
    fence.add_argument(
        "--backend",
        choices=("litert", "qemu-m55", "fvp"),
        help="the backend the fenced model is for: with qemu-m55, a model its module generator refuses is "
        "refused before anything is written",
    )
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

    vela = commands.add_parser(
        "vela",
        help="compile a model with Vela and estimate each fence segment",
        epilog="Arguments after -- go to Vela as they are (heliabuild vela M -o OUT -- --arena-cache-size 1000), "
        "except the options heliabuild sets itself (heliabuild.vela.run.OWN_OPTIONS).",
    )
    vela.add_argument("model", type=Path, help="the .tflite model, fenced or not")
    vela.add_argument("-o", "--output", type=Path, required=True, metavar="OUTDIR", help="the folder to write into")
    _add_vela_options(vela)
    vela.set_defaults(run=_command_vela)

    plan = commands.add_parser(
        "plan-fences",
        help="plan fences from Vela's estimate and a cycle budget",
        epilog="Without --per-layer, arguments after -- go to Vela as they are, as for the vela command.",
    )
    plan.add_argument("model", type=Path, help="the unfenced .tflite model")
    plan.add_argument("--budget-cycles", type=_positive_int, required=True, metavar="N", help="cycles per segment")
    plan.add_argument(
        "--min-coverage",
        type=_fraction,
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
    _add_vela_options(plan)
    plan.add_argument("-o", "--output", type=Path, required=True, metavar="PLAN.json", help="the fence plan to write")
    plan.set_defaults(run=_command_plan_fences)

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
    aot.set_defaults(run=_command_aot_plan)

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
        choices=("litert", "qemu-m55", "fvp"),
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
        choices=("prebuilt", "aot"),
        default="prebuilt",
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
    runner.set_defaults(run=_command_runner)

    for name, text in (
        ("run", "run a runner and write its result bundle"),
        (
            "run-build",
            "rerun a retained runner without rebuilding it and check its receipt (the same execution path as run)",
        ),
    ):
        run = commands.add_parser(name, help=text)
        run.add_argument("runner", type=Path, metavar="RUNNER_JSON", help="RUNNER_DIR/runner.json")
        run.add_argument("-o", "--output", type=Path, required=True, metavar="RESULT_DIR", help="the bundle folder")
        run.add_argument(
            "--timeout",
            type=_positive_seconds,
            metavar="SECONDS",
            help="the wall-clock limit of a run on a simulated target (qemu-m55; default 120)",
        )
        run.set_defaults(run=_command_run)

    show = commands.add_parser("show", help="print a verified result bundle (or a Vela segments.json) as tables")
    show.add_argument(
        "result", type=Path, metavar="RESULT", help="the result bundle folder, or Vela's <stem>_segments.json"
    )
    show.add_argument(
        "--plot",
        type=Path,
        metavar="FILE.svg|FILE.png",
        help="also write a plot: SVG (no dependency) or PNG (with the optional matplotlib extra)",
    )
    show.set_defaults(run=_command_show)

    export = commands.add_parser("export", help="export a verified result bundle's statistics or samples")
    export.add_argument("result", type=Path, metavar="RESULT", help="the result bundle folder")
    export.add_argument("--fields", choices=("statistics", "samples"), default="statistics")
    export.add_argument("--format", choices=("json", "csv"), default="json")
    export.set_defaults(run=_command_export)

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
    module.set_defaults(run=_command_module)

    ops = commands.add_parser("ops", help="list a model's operators (and Vela's estimate of each) to choose fences")
    ops.add_argument("model", type=Path, metavar="MODEL", help="the .tflite model, fenced or not")
    ops.add_argument(
        "--vela-per-layer", type=Path, metavar="CSV", help="Vela's per-layer CSV of MODEL: adds cycles and placement"
    )
    ops.add_argument("--format", choices=("text", "json"), default="text", help="the terminal table or JSON")
    ops.set_defaults(run=_command_ops)

    compare = commands.add_parser(
        "compare", help="compare two result bundles (or two Vela segments.json): estimates, measurements, options"
    )
    compare.add_argument("base", type=Path, metavar="BASE", help="the earlier bundle folder or segments.json")
    compare.add_argument("new", type=Path, metavar="NEW", help="the later one, of the same kind")
    compare.add_argument(
        "--format",
        choices=("text", "md", "json"),
        default="text",
        help="the terminal, Markdown for a CI comment, or JSON",
    )
    compare.add_argument(
        "--force", action="store_true", help="compare another model or segment layout anyway (listing why not)"
    )
    compare.add_argument(
        "--max-regression",
        type=_percent,
        metavar="PERCENT",
        help=f"exit {EXIT_REGRESSION} when an estimate or a measured median grew by more than PERCENT",
    )
    compare.set_defaults(run=_command_compare)
    doctor.add_command(commands)
    manual.add_command(commands)
    return parser


def _complete(parser: argparse.ArgumentParser) -> None:
    """Shell completion through argcomplete: inside a completion request (the shell hook
    `eval "$(register-python-argcomplete heliabuild)"` sets _ARGCOMPLETE) it prints the candidates and
    exits; otherwise it returns at once, without importing argcomplete (a twentieth of a small Vela run)."""
    if "_ARGCOMPLETE" not in os.environ:
        return
    import argcomplete

    argcomplete.autocomplete(parser)


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
        # An output the user named cannot be written (a folder, no permission, disk full).
        where = error.filename2 if error.filename2 is not None else error.filename
        line = f"heliabuild: error: {where}: cannot write: {error.strerror or error}"
        print(coloured(line, sys.stderr), file=sys.stderr)
        return EXIT_BAD_INPUT


if __name__ == "__main__":
    sys.exit(main())
