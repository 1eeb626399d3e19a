"""runner.json format 2: building a runner folder from its inputs, and reading it back.

`build_runner(out_dir, model=..., policy=...)` checks that every input is bound to the model, resolves the
policy (automatic warmup from the observed CALL_ONCE), copies the files the backend needs into `out_dir`
(the model as `model.tflite`, the sidecar as `model.fenced_boundaries.json`, segments.json as
`segments.json`, fixed input bytes as `inputs/input_<index>.bin`) and writes `runner.json` with their
hashes. Inputs the backend does not need (the Vela model, the AOT plan) are recorded by file name and
hash only, once bound: the Vela model must be Vela's compilation of the model (its hash as segments.json
records it, else the names Vela keeps), and the AOT plan's `model.sha256` that of the Vela model (or of the
model, without one). The bytes are deterministic: no time, host or absolute path.

`load_runner(path)` refuses any format but 2 by name, validates against schemas/runner.schema.json and
verifies the hash of every copied file.
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from heliabuild.documents import MAX_DOCUMENT_BYTES, parse_json, read_json, read_regular_file, shown
from heliabuild.errors import FenceError, PolicyError, RunnerError, SchemaError
from heliabuild.fence.sidecar import FenceBoundaries
from heliabuild.files import json_text, sha256_bytes, write_all_or_nothing
from heliabuild.model.io import Model, load_model
from heliabuild.runner import qemu
from heliabuild.runner.policy import Policy, load_policy
from heliabuild.runner.qemu import FirmwareBuild
from heliabuild.runner.segments import SegmentedModel, cut_segments
from heliabuild.schema_files import validate

RUNNER_FORMAT = 2
RUNNER_FILE = "runner.json"
BACKENDS = ("litert", "qemu-m55", "fvp")
MODEL_FILE = "model.tflite"
SIDECAR_FILE = "model.fenced_boundaries.json"
SEGMENTS_FILE = "segments.json"
INPUTS_DIR = "inputs"
MAX_MODEL_BYTES = 1 << 31
"""The largest model read: a FlatBuffer cannot address more than 2 GiB."""
MAX_FILE_NAME = 255
"""The longest name runner.json's `files` may give (the runner's own names are short and fixed)."""

PathLike = str | os.PathLike[str]


@dataclass(frozen=True)
class Runner:
    """A loaded, verified runner.json: `folder` holds it and its copied files."""

    path: Path
    folder: Path
    sha256: str
    document: dict[str, Any]

    @property
    def backend(self) -> str:
        return self.document["backend"]

    @property
    def policy(self) -> dict[str, Any]:
        return self.document["policy"]

    @property
    def model_path(self) -> Path:
        return self.folder / self.document["inputs"]["model"]["file"]

    @property
    def model_sha256(self) -> str:
        return self.document["inputs"]["model"]["sha256"]

    @property
    def call_once_present(self) -> bool:
        return self.document["call_once_present"]

    def segments_document(self) -> dict[str, Any] | None:
        entry = self.document["inputs"]["segments"]
        if entry is None:
            return None
        return read_json(self.folder / entry["file"], "segments.json", error=RunnerError)

    def input_file(self, index: int) -> Path | None:
        tensor_io = self.policy["tensor_io"]
        if tensor_io is None:
            return None
        for entry in tensor_io["inputs"]:
            if entry["index"] == index:
                return self.folder / entry["file"]
        return None


def _read_bytes(path: Path, what: str, limit: int = MAX_DOCUMENT_BYTES) -> bytes:
    """The bytes of the regular file `path` (heliabuild.documents.read_regular_file), RunnerError otherwise."""
    return read_regular_file(path, what, error=RunnerError, limit=limit)


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

    Backend `qemu-m55` needs `aot_plan`, the plan of `model` itself made for `mps3_an547`: the firmware is
    generated from them with the policy compiled in (heliabuild.runner.qemu.build_firmware), unless SCons
    built it and passes it as `firmware`; its ELF and layout are copied beside runner.json.

    Backend `fvp` needs `vela_model` and `segments`: Vela's output, copied as `fvp/model_vela.tflite`, is cut
    into per-segment sub-models, recorded by hash and size, for the FVP named by its accelerator config and
    `fvp_target` (heliabuild.runner.fvp.build_fvp), `--timelimit` `fvp_timelimit_s` (default 600). With
    `fvp_firmware='aot'` the firmware is heliabuild's AOT firmware of Vela's model and `aot_plan`, linked with
    the Ethos-U driver in `ethosu_driver_dir` (default: `$HELIA_ETHOSU_DRIVER_DIR`), the policy's whole
    lifecycle in one job (heliabuild.fvp.aot_firmware), and with the firmware library `firmware_library` when
    the caller built it (SCons)."""
    if backend == "fvp" and fvp_firmware not in ("prebuilt", "aot"):
        raise RunnerError(f"fvp firmware {fvp_firmware!r} is not known; expected 'prebuilt' or 'aot'")
    fvp_aot = backend == "fvp" and fvp_firmware == "aot"
    if backend not in BACKENDS:
        raise RunnerError(f"backend {backend!r} is not known; expected one of {', '.join(BACKENDS)}")
    aot = backend == qemu.BACKEND
    if aot and aot_plan is None:
        raise RunnerError(
            "backend qemu-m55 runs the firmware generated from the model's AOT plan, and no AOT plan was given",
            hint=f"pass the plan of this model made for platform {qemu.TARGET} (heliabuild aot-plan)",
        )
    resolved = _policy(policy)
    model_path = Path(model)
    model_bytes = _read_bytes(model_path, "model", MAX_MODEL_BYTES)
    loaded = load_model(model_bytes, name=str(model_path))
    model_hash = sha256_bytes(model_bytes)
    cut = cut_segments(loaded)  # refuses models the host backend cannot run, before anything is written

    outputs: dict[str, bytes] = {MODEL_FILE: model_bytes}
    inputs: dict[str, Any] = {
        "model": {"file": MODEL_FILE, "sha256": model_hash, "copied": True},
        "sidecar": None,
        "vela_model": None,
        "segments": None,
        "aot_plan": None,
    }
    if sidecar is not None:
        data = _read_bytes(Path(sidecar), "sidecar")
        _check_sidecar(Path(sidecar), data, model_path, model_hash, cut)
        outputs[SIDECAR_FILE] = data
        inputs["sidecar"] = {"file": SIDECAR_FILE, "sha256": sha256_bytes(data), "copied": True}
    if segments is not None:
        data = _read_bytes(Path(segments), "segments.json")
        _check_segments(Path(segments), data, model_path, model_hash, cut)
        outputs[SEGMENTS_FILE] = data
        inputs["segments"] = {"file": SEGMENTS_FILE, "sha256": sha256_bytes(data), "copied": True}
    recorded: dict[str, bytes] = {}
    for key, path in (("vela_model", vela_model), ("aot_plan", aot_plan)):
        if path is not None:
            data = _read_bytes(
                Path(path), key.replace("_", " "), MAX_MODEL_BYTES if key == "vela_model" else MAX_DOCUMENT_BYTES
            )
            recorded[key] = data
            inputs[key] = {"file": Path(path).name, "sha256": sha256_bytes(data), "copied": False}
    plan_subject = (model_path, model_hash)
    if vela_model is not None and not aot:
        plan_subject = (Path(vela_model), sha256_bytes(recorded["vela_model"]))
    if vela_model is not None:
        _check_vela_model(Path(vela_model), recorded["vela_model"], model_path, loaded, segments, outputs)
    if aot_plan is not None:
        _check_aot_plan(Path(aot_plan), recorded["aot_plan"], *plan_subject, platform=qemu.TARGET if aot else None)

    _check_bundle_size(resolved, len(cut.graph_outputs))
    frozen = _freeze_policy(resolved, cut, aot or fvp_aot, backend, compares=aot or fvp_aot)
    outputs.update(frozen.input_files)

    from heliabuild import __version__

    document = {
        "format": RUNNER_FORMAT,
        "backend": backend,
        "heliabuild_version": __version__,
        "policy": frozen.document,
        "inputs": inputs,
        "files": {name: sha256_bytes(data) for name, data in sorted(outputs.items())},
        "call_once_present": cut.call_once_present,
    }
    if aot:
        assert aot_plan is not None
        if firmware is None:
            firmware = qemu.build_firmware(model_path, Path(aot_plan), frozen.document, frozen.fills(cut))
        outputs[qemu.ELF_FILE] = firmware.elf
        outputs[qemu.LAYOUT_FILE] = firmware.layout
        document["files"] = {name: sha256_bytes(data) for name, data in sorted(outputs.items())}
        document["firmware"] = firmware.to_json()
    if backend == "fvp":
        from heliabuild.runner.fvp import COMPILED_FILE, AotRequest, build_fvp

        request = None
        if fvp_aot and vela_model is not None:
            request = AotRequest(
                vela_model=Path(vela_model),
                aot_plan=None if aot_plan is None else Path(aot_plan),
                input_fills=frozen.fills(cut),
                driver_dir=None if ethosu_driver_dir is None else os.fspath(ethosu_driver_dir),
                library=None if firmware_library is None else Path(firmware_library),
            )
        section, fvp_files = build_fvp(
            vela_model=recorded.get("vela_model"),
            segments_document=parse_json(outputs[SEGMENTS_FILE], str(segments), "segments.json", error=RunnerError)
            if segments
            else None,
            segment_count=len(cut.segments),
            policy=frozen.document,
            fvp_target=fvp_target,
            timelimit_s=fvp_timelimit_s,
            source=str(model_path),
            aot=request,
        )
        outputs.update(fvp_files)
        if COMPILED_FILE in fvp_files:  # the prebuilt runner's jobs are cut from the runner's copy at run time
            inputs["vela_model"] = {"file": COMPILED_FILE, "sha256": inputs["vela_model"]["sha256"], "copied": True}
        document["files"] = {name: sha256_bytes(data) for name, data in sorted(outputs.items())}
        document["fvp"] = section
    validate(document, "runner", RUNNER_FILE)
    folder = Path(out_dir)
    earlier = check_runner_target(folder)
    files = {folder / name: data for name, data in outputs.items()}
    files[folder / RUNNER_FILE] = json_text(document).encode("utf-8")
    write_all_or_nothing(files)
    for name in sorted(set(earlier) - set(outputs)):  # the earlier runner's own files this one does not keep
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
    return list(earlier.document["files"])


@dataclass(frozen=True)
class FrozenPolicy:
    """A policy as a runner freezes it: runner.json's `policy` section and the input files it copies
    (`inputs/input_<index>.bin` -> bytes)."""

    document: dict[str, Any]
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


def _freeze_policy(resolved: Policy, cut: SegmentedModel, aot: bool, backend: str, *, compares: bool) -> FrozenPolicy:
    """runner.json's `policy` and the input files it copies. `compares`: the backend compares every run's
    outputs (qemu-m55, the fvp AOT firmware), so `verification` is resolved even without the policy's block."""
    from heliabuild.runner.verification import resolve_verification

    tensor_io = None
    files: dict[str, bytes] = {}
    if resolved.tensor_io is not None:
        entries = []
        for entry in resolved.tensor_io:
            data = _check_input_bytes(resolved, entry, cut)
            name = f"{INPUTS_DIR}/input_{entry.index}.bin"
            files[name] = data
            entries.append(
                {"index": entry.index, "file": name, "sha256": sha256_bytes(data), "source": Path(entry.file).name}
            )
        tensor_io = {"inputs": entries}
    document: dict[str, Any] = {
        "state": resolved.state,
        "warmup_invokes": resolved.warmups_for(call_once_present=cut.call_once_present, aot=aot),
        "warmup_source": resolved.warmup_source,
        "measured_invokes": resolved.measured_invokes,
        "tensor_io": tensor_io,
        "fvp_enabled": resolved.fvp_enabled,
    }
    verification = resolve_verification(resolved.verification, backend, compares_always=compares)
    if verification is not None:
        document["verification"] = verification
    return FrozenPolicy(document, files)


def firmware_config(
    model: PathLike, policy: Policy | PathLike | dict[str, Any] | None, prefix: str = qemu.MODULE_PREFIX
) -> bytes:
    """`helia_firmware.c` for `model` under `policy`, frozen exactly as build_runner freezes it for the
    qemu-m55 backend (SCons generates it as a target of its own; heliabuild.scons.firmware)."""
    from heliabuild.firmware.config import firmware_config_source

    model_path = Path(model)
    loaded = load_model(_read_bytes(model_path, "model", MAX_MODEL_BYTES), name=str(model_path))
    cut = cut_segments(loaded)
    frozen = _freeze_policy(_policy(policy), cut, aot=True, backend=qemu.BACKEND, compares=True)
    return firmware_config_source(prefix, qemu.firmware_policy(frozen.document), frozen.fills(cut))


def _policy(policy: Policy | PathLike | dict[str, Any] | None) -> Policy:
    if policy is None:
        return Policy()
    if isinstance(policy, Policy):
        return policy
    if isinstance(policy, dict):
        return Policy.from_json(policy, "<policy>")
    return load_policy(policy)


def _check_sidecar(path: Path, data: bytes, model_path: Path, model_hash: str, cut: SegmentedModel) -> None:
    document = parse_json(data, str(path), "sidecar", error=RunnerError)
    try:
        boundaries = FenceBoundaries.from_json(document, str(path))
    except (SchemaError, FenceError) as error:
        raise RunnerError(f"{path}: not a fence sidecar: {error.message}") from None
    if boundaries.fenced_sha256 != model_hash:
        raise RunnerError(
            f"{path}: fenced_sha256 is {boundaries.fenced_sha256}, but the model {model_path.name} has sha256 "
            f"{model_hash}: the sidecar belongs to another model",
            hint="pass the sidecar written beside this fenced model",
        )
    if tuple(boundaries.boundary_after_ops) != cut.boundary_after_ops:
        raise RunnerError(
            f"{path}: boundary_after_ops is {shown(list(boundaries.boundary_after_ops))}, but the model's fences "
            f"follow operators {shown(list(cut.boundary_after_ops))}"
        )
    _check_ranges(path, boundaries.num_segments, [s.to_json() for s in boundaries.segments], cut)


def _check_segments(path: Path, data: bytes, model_path: Path, model_hash: str, cut: SegmentedModel) -> None:
    document = parse_json(data, str(path), "segments.json", error=RunnerError)
    try:
        validate(document, "segments", str(path))
    except SchemaError as error:
        raise RunnerError(error.message) from None
    if document["model_sha256"] != model_hash:
        raise RunnerError(
            f"{path}: model_sha256 is {document['model_sha256']}, but the model {model_path.name} has sha256 "
            f"{model_hash}: Vela compiled another model than the one this runner runs",
            hint="pass the segments.json Vela wrote for this fenced model",
        )
    count = len(document["segments"])
    if count != len(cut.segments):
        raise RunnerError(f"{path}: segments: found {count} entries, but the model has {len(cut.segments)} segments")
    _check_ranges(path, count, document["segments"], cut)


def _check_ranges(path: Path, count: int, segments: list[dict[str, Any]], cut: SegmentedModel) -> None:
    """RunnerError unless `count` and each of `segments` (index, op_range_start, op_range_end) are the model's."""
    if count != len(cut.segments) or len(segments) != len(cut.segments):
        raise RunnerError(
            f"{path}: num_segments: found {count} with {len(segments)} segments, but the model has "
            f"{len(cut.segments)} segments"
        )
    for number, (entry, segment) in enumerate(zip(segments, cut.segments, strict=True)):
        found = (entry["index"], entry["op_range_start"], entry["op_range_end"])
        expected = (segment.index, segment.op_range_start, segment.op_range_end)
        if found != expected:
            raise RunnerError(
                f"{path}: segments[{number}]: index {found[0]} covers operators {found[1]}..{found[2]}, but the "
                f"model's segment {expected[0]} covers {expected[1]}..{expected[2]}"
            )


def _check_vela_model(
    path: Path,
    data: bytes,
    model_path: Path,
    model: Model,
    segments: PathLike | None,
    outputs: dict[str, bytes],
) -> None:
    """RunnerError unless the Vela model `path` is Vela's compilation of `model`: by hash when segments.json
    (already bound to the model) records `compiled_sha256`, else by the names Vela keeps
    (heliabuild.vela.binding.compilation_mismatch)."""
    from heliabuild.vela.binding import compilation_mismatch

    vela_hash = sha256_bytes(data)
    document = parse_json(outputs[SEGMENTS_FILE], str(segments), "segments.json", error=RunnerError) if segments else {}
    compiled_sha256 = document.get("compiled_sha256")
    if compiled_sha256 is not None:
        if compiled_sha256 != vela_hash:
            raise RunnerError(
                f"{path}: sha256 is {vela_hash}, but {segments} records compiled_sha256 {compiled_sha256} for the "
                f"model {model_path.name}: the Vela model is the compilation of another model",
                hint="pass the Vela model written with this segments.json",
            )
        return
    mismatch = compilation_mismatch(model, load_model(data))
    if mismatch is not None:
        raise RunnerError(
            f"{path}: not Vela's compilation of the model {model_path.name}: {mismatch}",
            hint="pass the Vela model compiled from this model",
        )


def _check_aot_plan(path: Path, data: bytes, subject: Path, subject_hash: str, *, platform: str | None) -> None:
    """RunnerError unless the AOT plan `path` records `model.sha256` equal to `subject_hash`, the hash of
    the model it must be the plan of (`subject`: the Vela model, or the model when there is none, or for the
    qemu-m55 backend the model itself), and, given a `platform`, `platform.name` equal to it."""
    document = parse_json(data, str(path), "AOT plan", error=RunnerError)
    plan_model = document.get("model") if isinstance(document, dict) else None
    plan_hash = plan_model.get("sha256") if isinstance(plan_model, dict) else None
    if not isinstance(plan_hash, str):
        raise RunnerError(f"{path}: model.sha256: missing; this is not an AOT plan")
    if plan_hash != subject_hash:
        raise RunnerError(
            f"{path}: model.sha256 is {shown(plan_hash)}, but {subject.name} has sha256 {subject_hash}: the plan "
            "was made for another model",
            hint=f"pass the AOT plan made from {subject.name}",
        )
    plan_platform = document.get("platform")
    name = plan_platform.get("name") if isinstance(plan_platform, dict) else None
    if platform is not None and name != platform:
        raise RunnerError(
            f"{path}: platform.name is {shown(name)}, but the qemu-m55 firmware runs on {platform}",
            hint=f"make the plan with --platform {platform}",
        )


def _check_input_bytes(policy: Policy, entry: Any, cut: SegmentedModel) -> bytes:
    field = f"defaults.fvp.tensor_io.inputs (index {entry.index})"
    if entry.index >= len(cut.graph_inputs):
        raise PolicyError(
            f"{policy.source}: {field}: the model has {len(cut.graph_inputs)} graph inputs, no input {entry.index}"
        )
    path = policy.input_path(entry)
    info = cut.tensors[cut.graph_inputs[entry.index]]
    data = policy.read_input(entry, limit=max(info.byte_length, MAX_DOCUMENT_BYTES))
    if len(data) != info.byte_length:
        raise PolicyError(
            f"{policy.source}: {field}: {path.name} holds {len(data)} bytes, but input {entry.index} "
            f"({info.name!r}) takes exactly {info.byte_length}"
        )
    return data


def load_runner(path: PathLike) -> Runner:
    """Read and verify a runner.json; RunnerError for another format, a schema violation or a changed file."""
    runner_path = Path(path)
    if runner_path.is_dir():
        runner_path = runner_path / RUNNER_FILE
    raw = _read_bytes(runner_path, "runner")
    document = parse_json(raw, str(runner_path), "runner", error=RunnerError)
    if not isinstance(document, dict) or "format" not in document:
        raise RunnerError(f"{runner_path}: format: missing; this is not a heliabuild runner.json")
    found = document["format"]
    if found != RUNNER_FORMAT or isinstance(found, bool):
        raise RunnerError(
            f"{runner_path}: runner format {shown(found)} is not supported; rebuild the runner",
            hint=f"this heliabuild reads runner format {RUNNER_FORMAT} only",
        )
    try:
        validate(document, "runner", str(runner_path))
    except SchemaError as error:
        raise RunnerError(error.message) from None
    folder = runner_path.parent
    for name, expected in sorted(document["files"].items()):
        file = folder / name
        if not name or len(name) > MAX_FILE_NAME or Path(name).is_absolute() or ".." in Path(name).parts:
            raise RunnerError(f"{runner_path}: files: {shown(name)} is not a path inside the runner folder")
        try:
            actual = sha256_bytes(_read_bytes(file, "runner file", MAX_MODEL_BYTES))
        except RunnerError as error:
            raise RunnerError(f"{runner_path}: files: {error.message}", hint="rebuild the runner") from None
        if actual != expected:
            raise RunnerError(
                f"{file}: sha256 is {actual}, but {runner_path.name} records {expected}: the file changed "
                "after the runner was built",
                hint="rebuild the runner",
            )
    for key, entry in document["inputs"].items():
        if entry is not None and entry["copied"] and document["files"].get(entry["file"]) != entry["sha256"]:
            raise RunnerError(f"{runner_path}: inputs.{key}: {shown(entry['file'])} is not among the verified files")
    return Runner(path=runner_path, folder=folder, sha256=sha256_bytes(raw), document=document)
