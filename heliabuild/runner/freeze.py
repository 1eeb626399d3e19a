"""runner.json format 2: building a runner folder from its inputs, and reading it back.

`build_runner(out_dir, model=..., policy=..., backend=...)` binds every input to the model
(heliabuild.runner.binding), resolves the policy (automatic warmup from the observed CALL_ONCE) and freezes
it, asks the backend the registry names (heliabuild.runner.backends) for its part (runner.json's section of
its own and the files it copies), and writes the folder: the model as `model.tflite`, the sidecar as
`model.fenced_boundaries.json`, segments.json as `segments.json`, fixed input bytes as
`inputs/input_<index>.bin`, the backend's files, and `runner.json` (heliabuild.runner.record) with their
hashes. The bytes are deterministic: no time, host or absolute path.

`load_runner(path)` reads runner.json through heliabuild.runner.record.read_runner_record (another format
refused by name, then the schema) and verifies the hash of every copied file.
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from heliabuild.documents import read_json, shown
from heliabuild.errors import PolicyError, RunnerError
from heliabuild.files import sha256_bytes, write_all_or_nothing
from heliabuild.model.io import load_model
from heliabuild.runner.backend import Backend, BackendBuild, BuildOptions, BuildRequest
from heliabuild.runner.backends import BACKENDS, backend_for
from heliabuild.runner.binding import (
    MAX_MODEL_BYTES,
    MODEL_FILE,
    SEGMENTS_FILE,
    SIDECAR_FILE,
    BoundInputs,
    bind_inputs,
    check_input_bytes,
    read_bytes,
)
from heliabuild.runner.firmware import MODULE_PREFIX, FirmwareBuild
from heliabuild.runner.policy import Policy, load_policy
from heliabuild.runner.record import (
    RUNNER_FILE,
    RUNNER_FORMAT,
    RunnerPolicy,
    RunnerRecord,
    TensorInputRecord,
    Verification,
    check_no_symlink,
    read_runner_record,
    runner_json_bytes,
    runner_json_path,
)
from heliabuild.runner.segments import SegmentedModel, cut_segments

__all__ = [
    "BACKENDS",
    "MODEL_FILE",
    "RUNNER_FILE",
    "RUNNER_FORMAT",
    "SEGMENTS_FILE",
    "SIDECAR_FILE",
    "Runner",
    "build_runner",
    "check_runner_target",
    "firmware_config",
    "load_runner",
]
INPUTS_DIR = "inputs"
MAX_FILE_NAME = 255
"""The longest name runner.json's `files` may give (the runner's own names are short and fixed)."""

PathLike = str | os.PathLike[str]


@dataclass(frozen=True)
class Runner:
    """A loaded, verified runner.json: `folder` holds it and its copied files; `record` is what it says."""

    path: Path
    folder: Path
    sha256: str
    record: RunnerRecord

    @property
    def document(self) -> dict[str, Any]:
        """runner.json as JSON (the record's to_json)."""
        return self.record.to_json()

    @property
    def backend(self) -> str:
        return self.record.backend

    @property
    def policy(self) -> RunnerPolicy:
        return self.record.policy

    @property
    def model_path(self) -> Path:
        return self.folder / self.record.inputs.model.file

    @property
    def model_sha256(self) -> str:
        return self.record.inputs.model.sha256

    @property
    def call_once_present(self) -> bool:
        return self.record.call_once_present

    def lifecycle_counts(self) -> tuple[str, int, int]:
        """(state, warmups, measured invokes) of the frozen policy; RunnerError for `single` with warmups or
        more than one measured invoke."""
        policy = self.policy
        if policy.state == "single" and (policy.warmup_invokes != 0 or policy.measured_invokes != 1):
            raise RunnerError(
                f"{self.path}: policy: state single with {policy.warmup_invokes} warmups and "
                f"{policy.measured_invokes} measured invokes; single is one invoke without warmup"
            )
        return policy.state, policy.warmup_invokes, policy.measured_invokes

    def segment_records(self, cut: SegmentedModel | None = None) -> list[dict[str, Any]]:
        """The bundle's segment records of the runner's model, with Vela's estimated cycles from segments.json
        (None each without it): from `cut`, the model as the run cut it, or else from cutting the model again."""
        cut = cut if cut is not None else cut_segments(self.model_path)
        count = len(cut.segments)
        document = self.segments_document()
        estimates: list[int | None] = [None] * count
        if document is not None:
            entries = sorted(document["segments"], key=lambda s: s["index"])
            if len(entries) != count:
                raise RunnerError(f"{self.path}: segments.json has {len(entries)} segments, the model {count}")
            estimates = [int(e["op_cycles"]) for e in entries]
        return [
            {
                "index": segment.index,
                "op_range_start": segment.op_range_start,
                "op_range_end": segment.op_range_end,
                "estimated_cycles": estimates[segment.index],
            }
            for segment in cut.segments
        ]

    def segments_document(self) -> dict[str, Any] | None:
        entry = self.record.inputs.segments
        if entry is None:
            return None
        return read_json(self.folder / entry.file, "segments.json", error=RunnerError)

    def input_data(self, index: int, byte_length: int) -> bytes | None:
        """The fixed bytes of graph input `index` (None: zeros), which must be exactly `byte_length` bytes, the
        input tensor's size; RunnerError naming the file otherwise."""
        path = self.input_file(index)
        if path is None:
            return None
        data = read_bytes(path, "tensor input file", byte_length + 1, follow_symlinks=False)
        if len(data) != byte_length:
            raise RunnerError(
                f"{self.path}: policy.tensor_io.inputs (index {index}): {path.name} holds {len(data)} bytes, but "
                f"input {index} takes exactly {byte_length}",
                hint="rebuild the runner",
            )
        return data

    def input_file(self, index: int) -> Path | None:
        entry = self.policy.tensor_input(index)
        return None if entry is None else self.folder / entry.file


def build_runner(
    out_dir: PathLike,
    *,
    model: PathLike,
    policy: Policy | PathLike | dict[str, Any] | None,
    sidecar: PathLike | None = None,
    vela_model: PathLike | None = None,
    segments: PathLike | None = None,
    aot_plan: PathLike | None = None,
    backend: str = "litert",
    firmware: FirmwareBuild | None = None,
    fvp_target: str | None = None,
    fvp_timelimit_s: int | None = None,
    fvp_firmware: str = "prebuilt",
    ethosu_driver_dir: PathLike | None = None,
    firmware_library: PathLike | None = None,
) -> Path:
    """Write `<out_dir>/runner.json` (format 2) and the files it names; return its path.

    `backend` and, for `fvp`, `fvp_firmware` name the backend (heliabuild.runner.backends.backend_for), which
    builds its part from the bound inputs and its options (docs/runner.md, "Backends"):

    - `qemu-m55` needs `aot_plan`, the plan of `model` itself made for `mps3_an547`: the firmware is generated
      from them with the policy compiled in, unless SCons built it and passes it as `firmware` (a
      heliabuild.runner.firmware.FirmwareBuild); its ELF and layout are copied beside runner.json.
    - `fvp` needs `vela_model` and `segments`, for the FVP named by Vela's accelerator config and `fvp_target`,
      `--timelimit` `fvp_timelimit_s` (default 600). `fvp_firmware='prebuilt'` (fvp-prebuilt): Vela's output is
      copied as `fvp/model_vela.tflite` and cut into per-segment sub-models, recorded by hash and size.
      `fvp_firmware='aot'` (fvp-aot): heliabuild's AOT firmware of Vela's model and `aot_plan`, linked with the
      Ethos-U driver in `ethosu_driver_dir` (default: `$HELIA_ETHOSU_DRIVER_DIR`) and with the firmware library
      `firmware_library` when the caller built it (SCons)."""
    chosen = backend_for(backend, fvp_firmware)
    chosen.check_request(
        aot_plan=None if aot_plan is None else Path(aot_plan),
        vela_model=None if vela_model is None else Path(vela_model),
        segments=None if segments is None else Path(segments),
    )
    resolved = _policy(policy, chosen)
    bound = bind_inputs(
        model,
        sidecar=sidecar,
        vela_model=vela_model,
        segments=segments,
        aot_plan=aot_plan,
        plan_platform=chosen.plan_platform,
    )
    _check_bundle_size(resolved, len(bound.cut.graph_outputs))
    frozen = _freeze_policy(resolved, bound.cut, chosen, backend)
    options = BuildOptions(
        firmware=firmware,
        fvp_target=fvp_target,
        fvp_timelimit_s=fvp_timelimit_s,
        ethosu_driver_dir=None if ethosu_driver_dir is None else os.fspath(ethosu_driver_dir),
        firmware_library=None if firmware_library is None else Path(firmware_library),
    )
    built = chosen.build(_request(bound, frozen, vela_model, aot_plan, options))
    files = {**bound.files, **frozen.input_files, **built.files}
    return _write_runner(Path(out_dir), _record(backend, bound, frozen, built, files), files)


def _request(
    bound: BoundInputs,
    frozen: FrozenPolicy,
    vela_model: PathLike | None,
    aot_plan: PathLike | None,
    options: BuildOptions,
) -> BuildRequest:
    """What the backend builds its part from."""
    return BuildRequest(
        model_path=bound.model_path,
        cut=bound.cut,
        policy=frozen.policy,
        input_fills=frozen.fills(bound.cut),
        vela_model=None if vela_model is None else Path(vela_model),
        vela_model_bytes=bound.vela_model_bytes,
        segments_document=bound.segments_document,
        aot_plan=None if aot_plan is None else Path(aot_plan),
        options=options,
    )


def _record(
    backend: str, bound: BoundInputs, frozen: FrozenPolicy, built: BackendBuild, files: dict[str, bytes]
) -> RunnerRecord:
    """runner.json's record of a runner of `backend` holding `files`."""
    from dataclasses import replace

    from heliabuild import __version__

    inputs = bound.inputs if built.vela_model is None else replace(bound.inputs, vela_model=built.vela_model)
    return RunnerRecord(
        backend=backend,
        heliabuild_version=__version__,
        policy=frozen.policy,
        inputs=inputs,
        files={name: sha256_bytes(data) for name, data in sorted(files.items())},
        call_once_present=bound.cut.call_once_present,
        firmware=built.firmware,
        fvp=built.fvp,
    )


def _write_runner(folder: Path, record: RunnerRecord, files: dict[str, bytes]) -> Path:
    """Write the runner folder all or nothing: `files` and runner.json, replacing only an earlier runner
    (check_runner_target) and removing the earlier runner's own files this one does not keep."""
    document = runner_json_bytes(record)
    earlier = check_runner_target(folder)
    for name in [*files, RUNNER_FILE]:
        check_no_symlink(folder, name)
    written = {folder / name: data for name, data in files.items()}
    written[folder / RUNNER_FILE] = document
    write_all_or_nothing(written)
    for name in sorted(set(earlier) - set(files)):  # the earlier runner's own files this one does not keep
        with contextlib.suppress(FileNotFoundError):
            (folder / name).unlink()
    return folder / RUNNER_FILE


def check_runner_target(folder: Path) -> list[str]:
    """Where a runner may be built: a new path or an empty folder (no earlier files), or the folder of an earlier
    runner that verifies (its files, by name). RunnerError naming the folder for anything else: a runner
    build replaces only what is recognisably an earlier runner, never a user's files."""
    if folder.is_symlink() or (folder.exists() and not folder.is_dir()):
        raise RunnerError(f"{folder}: the runner folder exists and is not a folder; choose another -o")
    if not folder.exists() or not any(folder.iterdir()):
        return []
    if not (folder / RUNNER_FILE).is_file():
        raise RunnerError(
            f"{folder}: the folder is not empty and holds no {RUNNER_FILE}; a runner build replaces only an earlier "
            "runner",
            hint="choose another -o, or an empty or new folder",
        )
    try:
        earlier = load_runner(folder / RUNNER_FILE)
    except RunnerError as error:
        raise RunnerError(
            f"{folder}: the folder is not empty and is not a runner that verifies ({error.message}); a runner build "
            "replaces only an earlier runner",
            hint="choose another -o, or an empty or new folder",
        ) from None
    return list(earlier.record.files)


@dataclass(frozen=True)
class FrozenPolicy:
    """A policy as a runner freezes it: runner.json's `policy` and the input files it copies
    (`inputs/input_<index>.bin` -> bytes)."""

    policy: RunnerPolicy
    input_files: dict[str, bytes]

    def fills(self, cut: SegmentedModel) -> list[bytes | None]:
        """The bytes each graph input is filled with before every invoke (None: zeros)."""
        return [self.input_files.get(f"{INPUTS_DIR}/input_{index}.bin") for index in range(len(cut.graph_inputs))]


BUNDLE_FIXED_ENTRIES = 16
"""Files and folders of a bundle besides the samples' (result, manifest, receipt, summary, their folders)."""


def _check_bundle_size(policy: Policy, outputs: int) -> None:
    """PolicyError, before anything runs, when the bundle of `policy.measured_invokes` samples of `outputs`
    outputs each would hold more entries than the bundle reader reads (heliabuild.results.reader)."""
    from heliabuild.results.reader import MAX_BUNDLE_ENTRIES

    entries = policy.measured_invokes * (outputs + 1) + BUNDLE_FIXED_ENTRIES
    if entries > MAX_BUNDLE_ENTRIES:
        raise PolicyError(
            f"{policy.source}: defaults.fvp.acquisition.measured_invokes: {policy.measured_invokes} samples of "
            f"{outputs} outputs make a bundle of {entries} files and folders, more than the {MAX_BUNDLE_ENTRIES} "
            "a bundle reader reads",
            hint="measure fewer invokes",
        )


def _freeze_policy(resolved: Policy, cut: SegmentedModel, chosen: Backend, backend: str) -> FrozenPolicy:
    """runner.json's `policy` and the input files it copies. A backend whose policy is compiled into its
    firmware (`chosen.compiled`) compares every run's outputs, so `verification` is resolved even without the
    policy's block."""
    from heliabuild.runner.verification import resolve_verification

    tensor_io = None
    files: dict[str, bytes] = {}
    if resolved.tensor_io is not None:
        entries = []
        for entry in resolved.tensor_io:
            data = check_input_bytes(resolved, entry, cut)
            name = f"{INPUTS_DIR}/input_{entry.index}.bin"
            files[name] = data
            entries.append(TensorInputRecord(entry.index, name, sha256_bytes(data), source=Path(entry.file).name))
        tensor_io = tuple(entries)
    verification = resolve_verification(resolved.verification, backend, compares_always=chosen.compiled)
    frozen = RunnerPolicy(
        state=resolved.state,
        warmup_invokes=resolved.warmups_for(call_once_present=cut.call_once_present, aot=chosen.compiled),
        warmup_source=resolved.warmup_source,
        measured_invokes=resolved.measured_invokes,
        tensor_io=tensor_io,
        fvp_enabled=resolved.fvp_enabled,
        verification=Verification.from_json(verification),
    )
    return FrozenPolicy(frozen, files)


def firmware_config(
    model: PathLike, policy: Policy | PathLike | dict[str, Any] | None, prefix: str = MODULE_PREFIX
) -> bytes:
    """`helia_firmware.c` for `model` under `policy`, frozen exactly as build_runner freezes it for the
    qemu-m55 backend (SCons generates it as a target of its own; heliabuild.scons.firmware)."""
    from heliabuild.firmware.config import firmware_config_source
    from heliabuild.runner.firmware import firmware_policy

    model_path = Path(model)
    loaded = load_model(read_bytes(model_path, "model", MAX_MODEL_BYTES), name=str(model_path))
    cut = cut_segments(loaded)
    chosen = backend_for("qemu-m55")
    frozen = _freeze_policy(_policy(policy, chosen), cut, chosen, "qemu-m55")
    return firmware_config_source(prefix, firmware_policy(frozen.policy), frozen.fills(cut))


def _policy(policy: Policy | PathLike | dict[str, Any] | None, chosen: Backend) -> Policy:
    if policy is None:
        return chosen.default_policy()
    if isinstance(policy, Policy):
        return policy
    if isinstance(policy, dict):
        return Policy.from_json(policy, "<policy>")
    return load_policy(policy)


def load_runner(path: PathLike) -> Runner:
    """Read and verify a runner.json; RunnerError for another format, a schema violation or a changed file."""
    runner_path = runner_json_path(path)
    record, raw = read_runner_record(runner_path)
    folder = runner_path.parent
    for name, expected in sorted(record.files.items()):
        file = folder / name
        if not name or len(name) > MAX_FILE_NAME or Path(name).is_absolute() or ".." in Path(name).parts:
            raise RunnerError(f"{runner_path}: files: {shown(name)} is not a path inside the runner folder")
        check_no_symlink(folder, name)
        try:
            actual = sha256_bytes(read_bytes(file, "runner file", MAX_MODEL_BYTES, follow_symlinks=False))
        except RunnerError as error:
            raise RunnerError(f"{runner_path}: files: {error.message}", hint="rebuild the runner") from None
        if actual != expected:
            raise RunnerError(
                f"{file}: sha256 is {actual}, but {runner_path.name} records {expected}: the file changed "
                "after the runner was built",
                hint="rebuild the runner",
            )
    for key, entry in record.inputs.items():
        if entry is not None and entry.copied and record.files.get(entry.file) != entry.sha256:
            raise RunnerError(f"{runner_path}: inputs.{key}: {shown(entry.file)} is not among the verified files")
    for tensor in record.policy.tensor_io or ():
        if record.files.get(tensor.file) != tensor.sha256:
            raise RunnerError(
                f"{runner_path}: policy.tensor_io.inputs (index {tensor.index}): {shown(tensor.file)} is not "
                "among the verified files"
            )
    return Runner(path=runner_path, folder=folder, sha256=sha256_bytes(raw), record=record)
