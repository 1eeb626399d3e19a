"""Running ethos-u-vela: compile a model and collect everything it wrote.

Vela runs as a subprocess (`python -m ethosu.vela`) with
`--verbose-performance`, in a temporary folder inside the output folder;
only when it succeeded and its outputs were read back are they moved into
place, one `os.replace` each, so an interrupted or failed run leaves each
output complete or absent, never cut off.
"""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from importlib.metadata import version
from pathlib import Path

from heliabuild.errors import HeliaError, VelaError
from heliabuild.fence.contract import is_fence_name
from heliabuild.fence.names import sidecar_path_for
from heliabuild.fence.sidecar import load_sidecar
from heliabuild.files import write_json
from heliabuild.model.graph import indices, tensor_name
from heliabuild.model.io import Model, load_model, model_sha256
from heliabuild.schema_files import validate
from heliabuild.vela.names import DEFAULT_ACCELERATOR, default_memory_mode, default_system_config, output_names
from heliabuild.vela.per_layer import read_per_layer
from heliabuild.vela.segments import SegmentsReport, estimate_segments, fence_after_ops
from heliabuild.vela.streams import CommandStreams, command_streams
from heliabuild.vela.summary import read_summary

OPTIMISE_CHOICES = ("Size", "Performance")


@cache
def vela_version() -> str:
    return version("ethos-u-vela")


@cache
def accelerators() -> tuple[str, ...]:
    """Every accelerator configuration the installed Vela knows."""
    from ethosu.vela.architecture_features import Accelerator

    return tuple(Accelerator.member_list())


@dataclass(frozen=True)
class VelaOptions:
    """What Vela is asked to do; None means Vela's own default."""

    accelerator: str = DEFAULT_ACCELERATOR
    system_config: str | None = None
    memory_mode: str | None = None
    config: tuple[str, ...] = ()
    optimise: str | None = None
    extra_args: tuple[str, ...] = ()

    @property
    def resolved_system_config(self) -> str:
        return self.system_config or default_system_config(self.accelerator)

    @property
    def resolved_memory_mode(self) -> str:
        return self.memory_mode or default_memory_mode(self.accelerator)

    def check(self, model: str) -> None:
        """Raise VelaError for an option Vela would refuse, before Vela runs."""
        if self.accelerator not in accelerators():
            raise VelaError(
                f"{model}: unknown accelerator {self.accelerator!r}; Vela {vela_version()} knows "
                + ", ".join(accelerators())
            )
        if self.optimise is not None and self.optimise not in OPTIMISE_CHOICES:
            raise VelaError(f"{model}: optimise is {self.optimise!r}; expected one of {', '.join(OPTIMISE_CHOICES)}")
        for path in self.config:
            if not Path(path).is_file():
                raise VelaError(f"{path}: the Vela configuration file does not exist")
        if self.config and (self.system_config is None or self.memory_mode is None):
            raise VelaError(
                f"{model}: a Vela configuration file needs an explicit system config and memory mode",
                hint="Name the [System_Config.*] and [Memory_Mode.*] sections of the file to use.",
            )

    def arguments(self) -> list[str]:
        arguments = ["--accelerator-config", self.accelerator, "--verbose-performance"]
        if self.system_config is not None:
            arguments += ["--system-config", self.system_config]
        if self.memory_mode is not None:
            arguments += ["--memory-mode", self.memory_mode]
        for path in self.config:
            # Vela resolves a relative "folder/file.ini" inside its own package; pass absolute paths.
            arguments += ["--config", str(Path(path).resolve())]
        if self.optimise is not None:
            arguments += ["--optimise", self.optimise]
        return [*arguments, *self.extra_args]


@dataclass(frozen=True)
class VelaResult:
    """What one Vela run produced, with the per-segment estimates."""

    model: Path
    per_layer_csv: Path
    summary_csv: Path
    segments_json: Path
    vela_version: str
    options: VelaOptions
    report: SegmentsReport
    warnings: tuple[str, ...]

    @property
    def command_streams(self) -> CommandStreams:
        return self.report.streams

    @property
    def cpu_operators(self) -> list[str]:
        return [f"{op.op_type} at {op.position} ({op.output_name})" for op in self.report.cpu_operators]


def compile(
    model: str | os.PathLike[str],
    out_dir: str | os.PathLike[str],
    accelerator: str = DEFAULT_ACCELERATOR,
    system_config: str | None = None,
    memory_mode: str | None = None,
    config: Sequence[str | os.PathLike[str]] = (),
    optimise: str | None = None,
    extra_args: Sequence[str] = (),
) -> VelaResult:
    """Compile `model` (a .tflite file, fenced or not) with Vela into `out_dir`.

    Writes `<stem>_vela.tflite`, `<stem>_per-layer.csv`,
    `<stem>_summary_<system config>.csv` and `<stem>_segments.json`. A fenced
    model's sidecar, when it lies beside the model, must belong to it; its
    `source_sha256` is carried into segments.json. Raises VelaError quoting
    Vela's message when Vela fails; then none of the four files is left in
    `out_dir`, not even from an earlier run.
    """
    options = VelaOptions(
        accelerator=accelerator,
        system_config=system_config,
        memory_mode=memory_mode,
        config=tuple(str(path) for path in config),
        optimise=optimise,
        extra_args=tuple(extra_args),
    )
    source = Path(model)
    loaded = load_model(source)
    options.check(str(source))
    source_sha256 = _source_sha256(source, loaded)
    target = Path(out_dir)
    target.mkdir(parents=True, exist_ok=True)
    names = output_names(source, options.resolved_system_config)
    _remove_stale_work(target, source.stem)
    work = Path(tempfile.mkdtemp(prefix=f".{source.stem}.vela-", dir=target))
    try:
        output = _run_vela(source, work, options)
        produced = {role: work / name for role, name in names.items()}
        for role in ("model", "per_layer", "summary"):
            if not produced[role].is_file():
                found = sorted(p.name for p in work.iterdir())
                raise VelaError(f"{source}: Vela did not write {names[role]} (it wrote {found})")
        report = _report(source, loaded, source_sha256, produced, options)
        document = report.to_json()
        validate(document, "segments", str(target / names["segments"]))
        write_json(produced["segments"], document)
        warnings = _warnings(output, report, _fence_outputs(loaded))
        for role, name in names.items():
            os.replace(produced[role], target / name)
    except HeliaError:
        # A failed stage leaves no stale-but-plausible output from an earlier run behind.
        for name in names.values():
            (target / name).unlink(missing_ok=True)
        raise
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return VelaResult(
        model=target / names["model"],
        per_layer_csv=target / names["per_layer"],
        summary_csv=target / names["summary"],
        segments_json=target / names["segments"],
        vela_version=vela_version(),
        options=options,
        report=report,
        warnings=warnings,
    )


def _source_sha256(model: Path, loaded: Model) -> str | None:
    """The hash of the unfenced source: the sidecar's when the model is fenced, else the model's own."""
    after_ops, _ = fence_after_ops(loaded)
    sidecar_path = sidecar_path_for(model)
    if not sidecar_path.is_file():
        return None if after_ops else model_sha256(loaded)
    sidecar = load_sidecar(sidecar_path)
    actual = model_sha256(loaded)
    if sidecar.fenced_sha256 != actual:
        raise VelaError(
            f"{sidecar_path}: the sidecar describes a fenced model with SHA-256 {sidecar.fenced_sha256}, "
            f"but {model} has {actual}",
            hint="Re-run the fence stage so the model and its sidecar are written together.",
        )
    return sidecar.source_sha256


def _remove_stale_work(folder: Path, stem: str) -> None:
    """Remove work folders a killed run of this model left behind."""
    for stale in folder.glob(f".{glob.escape(stem)}.vela-*"):
        shutil.rmtree(stale, ignore_errors=True)


def _run_vela(model: Path, work: Path, options: VelaOptions) -> str:
    command = [sys.executable, "-m", "ethosu.vela", str(model.resolve()), "--output-dir", str(work.resolve())]
    command += options.arguments()
    try:
        run = subprocess.run(command, cwd=work, capture_output=True, text=True, check=False)
    except OSError as error:
        raise VelaError(f"{model}: cannot start Vela: {error}") from None
    output = run.stdout + run.stderr
    if run.returncode < 0:
        raise VelaError(f"{model}: Vela was stopped by signal {-run.returncode} before it finished")
    if run.returncode != 0:
        raise VelaError(f"{model}: Vela failed: {_vela_message(output)}")
    return output


def _vela_message(output: str) -> str:
    """Vela's own message: the last line it printed, without the exception's class name."""
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    if not lines:
        return "no message"
    last = lines[-1]
    head, sep, rest = last.partition(": ")
    if sep and head.startswith("ethosu.") and " " not in head:
        last = rest
    return last.strip("'\"")


def _report(
    model: Path, loaded: Model, source_sha256: str | None, produced: dict[str, Path], options: VelaOptions
) -> SegmentsReport:
    try:
        compiled = load_model(produced["model"])
    except HeliaError as error:
        raise VelaError(f"{model}: Vela wrote a model heliabuild cannot read: {error.message}") from None
    rows = read_per_layer(produced["per_layer"])
    summary = read_summary(produced["summary"])
    segments, coverage, attributions = estimate_segments(loaded, rows)
    after_ops, _ = fence_after_ops(loaded)
    return SegmentsReport(
        model=model.name,
        model_sha256=model_sha256(loaded),
        source_sha256=source_sha256,
        vela_version=vela_version(),
        accelerator=options.accelerator,
        system_config=summary.system_config,
        memory_mode=summary.memory_mode,
        boundary_after_ops=tuple(after_ops),
        segments=tuple(segments),
        coverage=coverage,
        attributions=tuple(attributions),
        streams=command_streams(compiled),
    )


def _warnings(output: str, report: SegmentsReport, fence_outputs: frozenset[str]) -> tuple[str, ...]:
    """Vela's warnings, each once, and heliabuild's own about the command streams.

    Vela warns that every fence is an unsupported CPU operator; that is the
    fence's purpose, so the warnings naming a fence's output are left out.
    """
    lines = output.splitlines()
    found: dict[str, None] = {}
    for number, line in enumerate(lines):
        if not line.startswith("Warning"):
            continue
        text = line.strip()
        if text.startswith("Warning (supported operators)"):
            _, _, ofm = text.partition("ofm: ")
            if ofm.strip("'") in fence_outputs:
                continue
            reason = lines[number + 1].strip() if number + 1 < len(lines) else ""
            text = f"{text} {reason}".strip()
        found[text] = None
    if report.boundary_after_ops and not report.streams_match_segments:
        streams = report.streams
        cpu = ", ".join(f"{op.op_type} at {op.position} ({op.output_name!r})" for op in streams.cpu_operators)
        found[
            f"Vela produced {streams.count} command streams for {len(report.segments)} segments; "
            f"operators on the CPU besides the fences: {cpu or 'none'}"
        ] = None
    return tuple(found)


def _fence_outputs(model: Model) -> frozenset[str]:
    subgraph = model.subgraphs[0]
    names: set[str] = set()
    for op in subgraph.operators or []:
        if is_fence_name(model.operator_codes[op.opcodeIndex]):
            names.update(tensor_name(subgraph.tensors[t]) for t in indices(op.outputs))
    return frozenset(names)
