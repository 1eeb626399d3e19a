"""Running ethos-u-vela: compile a model and collect everything it wrote.

Vela runs as a subprocess (heliabuild.vela.in_process.command, which is
Vela's command line), or, for the CLI and a one-job-at-a-time SCons build,
in this process (the same module), with `--verbose-performance`, in a
temporary folder inside the output folder;
only when it succeeded and its outputs were read back are they moved into
place, one `os.replace` each, so an interrupted or failed run leaves each
output complete or absent, never cut off.
"""

from __future__ import annotations

import contextlib
import glob
import os
import re
import shutil
import signal
import subprocess
import tempfile
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from heliabuild import sessions
from heliabuild.documents import read_json, read_regular_file
from heliabuild.errors import HeliaError, VelaError
from heliabuild.fence.contract import is_fence_name
from heliabuild.fence.names import sidecar_path_for
from heliabuild.fence.sidecar import load_sidecar
from heliabuild.files import make_folders, remove_files, remove_folders, sha256_file, write_atomic, write_json
from heliabuild.locks import acquire, is_held, locked
from heliabuild.model.graph import indices, tensor_name
from heliabuild.model.io import Model, load_model, model_sha256
from heliabuild.paths import check_outputs
from heliabuild.progress import activity
from heliabuild.schema_files import validate
from heliabuild.vela import in_process as in_process_vela
from heliabuild.vela.configs import resolve_config
from heliabuild.vela.names import DEFAULT_ACCELERATOR, output_names
from heliabuild.vela.options import VelaOptions, vela_version
from heliabuild.vela.per_layer import read_per_layer
from heliabuild.vela.segments import SegmentsReport, estimate_segments, fence_after_ops
from heliabuild.vela.streams import CommandStreams, command_streams
from heliabuild.vela.summary import read_summary

WORK_PREFIX = ".vela-"
"""Vela's work folders are `.<model stem>.vela-<random letters, digits or _>` in the output folder."""


WORK_LOCK = ".lock"
"""The lock file in a work folder, held while the folder is in use."""


WORK_LOCK_SUFFIX = ".vela.lock"
"""The model's lock `.<model stem>.vela.lock`, held while work folders are created or removed."""


WORK_MARKER = ".heliabuild-vela-work"
"""The file heliabuild writes first into each work folder it makes: no folder without it is ever removed."""


WORK_MARKER_TEXT = b"a work folder of heliabuild's Vela stage; its next run removes it once no run holds .lock\n"


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
    in_process: bool = False,
) -> VelaResult:
    """Compile `model` (a .tflite file, fenced or not) with Vela into `out_dir`.

    Writes `<stem>_vela.tflite`, `<stem>_per-layer.csv`,
    `<stem>_summary_<system config>.csv` and `<stem>_segments.json`. A fenced
    model's sidecar, when it lies beside the model, must belong to it; its
    `source_sha256` is carried into segments.json. Raises VelaError quoting
    Vela's message when Vela fails; then none of the four files is left in
    `out_dir`, not even from an earlier run, and `out_dir` itself (with its
    parents) is removed again when this call created it. Refuses, before
    writing anything, an output file that is the model, its sidecar or a
    configuration file (heliabuild.paths.check_outputs). A `config` entry
    is a path or the name of one of Vela's packaged files, as Vela's help
    gives it (`Arm/vela.ini`; heliabuild.vela.configs.resolve_config); the
    files must hold the named system config and memory mode sections.
    `extra_args` are passed to Vela after heliabuild's own, and may not set
    one of OWN_OPTIONS. Vela runs in
    a locked work folder (_new_work_folder), so compiles at once into one
    folder never remove each other's work; segments.json records the compiled
    model's SHA-256 (`compiled_sha256`), which binds it to the model.
    `in_process` runs Vela in this process (heliabuild.vela.in_process), for
    a caller that runs one thing at a time on its main thread and owns its
    standard streams (the CLI; SCons at -j1 with the local executor); else,
    or when Vela cannot be captured here, as a subprocess. Both give the
    same files and warnings.
    """
    options = VelaOptions(
        accelerator=accelerator,
        system_config=system_config,
        memory_mode=memory_mode,
        config=tuple(str(resolve_config(path)) for path in config),
        optimise=optimise,
        extra_args=tuple(extra_args),
    )
    source = Path(model)
    loaded = load_model(source)
    if not loaded.subgraphs or not loaded.subgraphs[0].operators:
        raise VelaError(f"{source}: the model has no operators, so Vela has nothing to compile or estimate")
    options.check(str(source))
    source_sha256 = _source_sha256(source, loaded)
    target = Path(out_dir)
    names = output_names(source, options.resolved_system_config)
    check_outputs(
        [(f"Vela output {name}", target / name) for name in names.values()],
        [("model", source), ("sidecar", sidecar_path_for(source))]
        + [("Vela configuration", path) for path in options.config],
    )
    created = make_folders(target)
    try:
        work, work_lock = _new_work_folder(target, source.stem)
    except BaseException:
        remove_folders(created)
        raise
    moved: list[Path] = []
    earlier: list[Path] | None = None
    try:
        output = _run_vela(source, work, options, in_process)
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
        earlier = _earlier_outputs(target, names, source)
        for role, name in names.items():
            _move(produced[role], target / name)
            moved.append(target / name)
    except BaseException as failure:
        remove_files(moved)  # this call's own outputs: complete or absent
        if isinstance(failure, HeliaError):
            # A failed stage leaves no stale-but-plausible output from an earlier run behind, but removes
            # only what is recognisably an earlier run's (_earlier_outputs).
            remove_files(earlier if earlier is not None else _earlier_outputs(target, names, source))
        _remove_work(work, work_lock)
        remove_folders(created)  # only the folders this call created, and only while empty
        raise
    _remove_work(work, work_lock)
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


def _new_work_folder(folder: Path, stem: str) -> tuple[Path, int]:
    """A new work folder for Vela on the model `stem` in `folder`, and the descriptor of its held lock.

    A work folder is `.<stem>.vela-<random letters, digits or _>`, holding
    heliabuild's marker WORK_MARKER and the lock file `.lock` its run holds
    until the folder is removed (_remove_work). A killed run's lock is
    released by the kernel, so its folder is stale, and the stale folders of
    the model are removed first: only folders that carry the marker
    (_is_work_folder), so a folder of the user's that merely has the name
    is never touched. Creating a folder and
    taking its lock, and removing stale folders, happen under the model's
    lock `.<stem>.vela.lock`, so no process ever sees a live folder before
    it is locked: two runs at once never remove each other's work.
    """
    work: Path | None = None
    lock: int | None = None
    try:  # an interrupt anywhere once the folder exists (releasing the model's lock included) removes it
        with locked(folder / f".{stem}{WORK_LOCK_SUFFIX}"):
            pattern = re.compile(rf"\.{re.escape(stem)}{re.escape(WORK_PREFIX)}[a-z0-9_]+")
            for stale in folder.glob(f".{glob.escape(stem)}{WORK_PREFIX}*"):
                if pattern.fullmatch(stale.name) and _is_work_folder(stale) and not is_held(stale / WORK_LOCK):
                    shutil.rmtree(stale, ignore_errors=True)
            with _interrupts_deferred():  # so `work` and `lock` always name what exists, for the cleanup below
                try:
                    work = Path(tempfile.mkdtemp(prefix=f".{stem}{WORK_PREFIX}", dir=folder))
                except OSError as error:
                    raise VelaError(f"{folder}: cannot create Vela's work folder: {error.strerror or error}") from None
                write_atomic(work / WORK_MARKER, WORK_MARKER_TEXT)
                lock = acquire(work / WORK_LOCK)
        return work, lock
    except BaseException:
        if lock is not None:
            os.close(lock)
        if work is not None:
            shutil.rmtree(work, ignore_errors=True)
        raise


@contextlib.contextmanager
def _interrupts_deferred() -> Iterator[None]:
    """Hold a SIGINT back for the block, on the main thread (the only one Python raises KeyboardInterrupt in):
    one that came meanwhile is raised again as the block ends. The block must not wait on anything."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    came: list[int] = []
    previous = signal.signal(signal.SIGINT, lambda number, frame: came.append(number))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
        if came:
            signal.raise_signal(signal.SIGINT)


def _is_work_folder(folder: Path) -> bool:
    """Whether `folder` is a work folder heliabuild made: a real folder (no symlink) holding WORK_MARKER, a
    regular file with WORK_MARKER_TEXT."""
    if folder.is_symlink() or not folder.is_dir():
        return False
    try:
        marker = read_regular_file(
            folder / WORK_MARKER, "work folder marker", limit=len(WORK_MARKER_TEXT), follow_symlinks=False
        )
    except HeliaError:
        return False
    return marker == WORK_MARKER_TEXT


def _earlier_outputs(target: Path, names: dict[str, str], source: Path) -> list[Path]:
    """The files of an earlier compile of `source` into `target`, when they are recognisably ours: its
    segments.json is heliabuild's (it validates) and names this model, and the compiled model beside it has
    the hash it records. Anything else at those names is the user's and is not listed."""
    segments = target / names["segments"]
    compiled = target / names["model"]
    try:
        document = read_json(segments, "segments.json", error=VelaError)
        validate(document, "segments", str(segments))
        if document.get("model") != source.name or document.get("compiled_sha256") != sha256_file(compiled):
            return []
    except (HeliaError, OSError):
        return []
    return [target / name for name in names.values()]


def _remove_work(work: Path, lock: int) -> None:
    """Remove the work folder `work`, then release its lock `lock` (from _new_work_folder)."""
    try:
        shutil.rmtree(work, ignore_errors=True)
    finally:
        os.close(lock)


def _move(produced: Path, destination: Path) -> None:
    """Move one of Vela's outputs into place; VelaError naming it instead of a bare OSError."""
    try:
        os.replace(produced, destination)
    except OSError as error:
        raise VelaError(f"{destination}: cannot move Vela's output into place: {error.strerror or error}") from None


def _run_vela(model: Path, work: Path, options: VelaOptions, in_process: bool) -> str:
    arguments = [str(model.resolve()), "--output-dir", str(work.resolve()), *options.arguments()]
    with activity(f"vela {model.name}"):
        if in_process and in_process_vela.available():
            returncode, output = in_process_vela.run_vela(arguments, cwd=work)
        else:
            returncode, output = _vela_subprocess(model, work, arguments)
    if returncode < 0:
        raise VelaError(f"{model}: Vela was stopped by signal {-returncode} before it finished")
    if returncode != 0:
        raise VelaError(f"{model}: Vela failed: {_vela_message(output)}")
    return output


def _vela_subprocess(model: Path, work: Path, arguments: list[str]) -> tuple[int, str]:
    """Vela as a subprocess: its exit status and its output. It runs in a session of its own, counted as running
    (heliabuild.sessions), so an interrupt of this process on any thread (an SCons build's, which only the
    scons process may receive) ends it; an exception here (Ctrl-C of the `heliabuild` command) kills it."""
    try:
        process = sessions.start(
            in_process_vela.command(arguments), cwd=work, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
    except OSError as error:
        raise VelaError(f"{model}: cannot start Vela: {error}") from None
    try:
        with process:
            stdout, stderr = process.communicate()
    finally:
        if process.returncode is None:
            sessions.kill(process)
            process.wait()
        sessions.release(process)
    return process.returncode, stdout + stderr


def _vela_message(output: str) -> str:
    """Vela's own message: the last line it printed, without the exception's class name."""
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    if not lines:
        return "no message"
    last = lines[-1]
    head, sep, rest = last.partition(": ")
    if sep and head.startswith("ethosu.") and " " not in head:
        last = rest
    quoted = len(last) > 1 and last[0] == last[-1] and last[0] in "'\""
    return last[1:-1] if quoted else last


def _report(
    model: Path, loaded: Model, source_sha256: str | None, produced: dict[str, Path], options: VelaOptions
) -> SegmentsReport:
    try:
        compiled = load_model(produced["model"])
    except HeliaError as error:
        raise VelaError(f"{model}: Vela wrote a model heliabuild cannot read: {error.message}") from None
    try:
        rows = read_per_layer(produced["per_layer"])
        summary = read_summary(produced["summary"])
    except VelaError as error:  # named by the output it would have become, not the vanished work folder
        raise VelaError(
            f"{model}: Vela wrote a CSV heliabuild cannot read: {_without_work_folder(error.message, produced)}",
            error.hint,
        ) from None
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
        compiled_sha256=model_sha256(compiled),
        sram_memory_used_kib=summary.sram_memory_used_kib,
        off_chip_flash_memory_used_kib=summary.off_chip_flash_memory_used_kib,
    )


def _without_work_folder(message: str, produced: dict[str, Path]) -> str:
    """`message` with each work-folder path of `produced` shortened to its file name."""
    for path in produced.values():
        message = message.replace(str(path), path.name)
    return message


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
