"""The inputs of a runner build bound to its model (docs/runner.md, "Runner decisions", "Bindings checked at
build").

`bind_inputs(...)` reads the model (cut into its segments: a model the host backend cannot run is refused
here, before anything is written) and every optional input, and refuses any that belongs to another model:
the sidecar's `fenced_sha256`, fences and segment ranges; segments.json's schema, `model_sha256` and ranges;
the Vela model as Vela's compilation of the model (by `compiled_sha256`, else by the names Vela keeps); the AOT
plan's `model.sha256` (and `platform.name` where the backend requires one). Each refusal names both hashes or
what does not match. The sidecar and segments.json are copied into the runner; the Vela model and the AOT plan
are recorded by file name and hash (`BoundInputs`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from heliabuild.documents import MAX_DOCUMENT_BYTES, parse_json, read_regular_file, shown
from heliabuild.errors import FenceError, PolicyError, RunnerError, SchemaError
from heliabuild.fence.sidecar import FenceBoundaries
from heliabuild.files import sha256_bytes
from heliabuild.model.io import Model, load_model
from heliabuild.runner.policy import Policy, TensorInput
from heliabuild.runner.record import InputRecord, RunnerInputs
from heliabuild.runner.segments import SegmentedModel, cut_segments
from heliabuild.schema_files import validate

MODEL_FILE = "model.tflite"
SIDECAR_FILE = "model.fenced_boundaries.json"
SEGMENTS_FILE = "segments.json"
MAX_MODEL_BYTES = 1 << 31
"""The largest model read: a FlatBuffer cannot address more than 2 GiB."""

PathLike = str | os.PathLike[str]


def read_bytes(path: Path, what: str, limit: int = MAX_DOCUMENT_BYTES, *, follow_symlinks: bool = True) -> bytes:
    """The bytes of the regular file `path` (heliabuild.documents.read_regular_file), RunnerError otherwise."""
    return read_regular_file(path, what, error=RunnerError, limit=limit, follow_symlinks=follow_symlinks)


@dataclass(frozen=True)
class BoundInputs:
    """A runner build's inputs, each bound to the model: the model read and cut, the files to copy (name in the
    runner folder -> bytes), runner.json's `inputs`, and what a backend builds from (Vela's model, segments.json)."""

    model_path: Path
    model: Model
    cut: SegmentedModel
    files: dict[str, bytes]
    inputs: RunnerInputs
    vela_model_bytes: bytes | None
    segments_document: dict[str, Any] | None


def bind_inputs(
    model: PathLike,
    *,
    sidecar: PathLike | None,
    vela_model: PathLike | None,
    segments: PathLike | None,
    aot_plan: PathLike | None,
    plan_platform: str | None,
) -> BoundInputs:
    """Read and bind every input (module docstring). `plan_platform`: the platform the AOT plan must be made
    for, the plan being the model's own (qemu-m55); None: the plan is that of the Vela model (or of the model,
    without one)."""
    model_path = Path(model)
    model_bytes = read_bytes(model_path, "model", MAX_MODEL_BYTES)
    loaded = load_model(model_bytes, name=str(model_path))
    model_hash = sha256_bytes(model_bytes)
    cut = cut_segments(loaded)  # refuses models the host backend cannot run, before anything is written
    files: dict[str, bytes] = {MODEL_FILE: model_bytes}
    sidecar_record = segments_record = None
    segments_document = None
    if sidecar is not None:
        data = read_bytes(Path(sidecar), "sidecar")
        _check_sidecar(Path(sidecar), data, model_path, model_hash, cut)
        files[SIDECAR_FILE] = data
        sidecar_record = InputRecord(SIDECAR_FILE, sha256_bytes(data), copied=True)
    if segments is not None:
        data = read_bytes(Path(segments), "segments.json")
        segments_document = _check_segments(Path(segments), data, model_path, model_hash, cut)
        files[SEGMENTS_FILE] = data
        segments_record = InputRecord(SEGMENTS_FILE, sha256_bytes(data), copied=True)
    vela_bytes = None if vela_model is None else read_bytes(Path(vela_model), "vela model", MAX_MODEL_BYTES)
    plan_bytes = None if aot_plan is None else read_bytes(Path(aot_plan), "aot plan", MAX_DOCUMENT_BYTES)
    plan_subject = (model_path, model_hash)
    if vela_model is not None and vela_bytes is not None:
        if plan_platform is None:
            plan_subject = (Path(vela_model), sha256_bytes(vela_bytes))
        _check_vela_model(
            Path(vela_model),
            vela_bytes,
            model_path,
            loaded,
            None if segments is None else Path(segments),
            segments_document,
        )
    if aot_plan is not None and plan_bytes is not None:
        _check_aot_plan(Path(aot_plan), plan_bytes, *plan_subject, platform=plan_platform)
    inputs = RunnerInputs(
        model=InputRecord(MODEL_FILE, model_hash, copied=True),
        sidecar=sidecar_record,
        vela_model=None if vela_bytes is None else _recorded(vela_model, vela_bytes),
        segments=segments_record,
        aot_plan=None if plan_bytes is None else _recorded(aot_plan, plan_bytes),
    )
    return BoundInputs(model_path, loaded, cut, files, inputs, vela_bytes, segments_document)


def _recorded(path: PathLike | None, data: bytes) -> InputRecord:
    """An input recorded, not copied: its file name (no folder) and hash."""
    assert path is not None
    return InputRecord(Path(path).name, sha256_bytes(data), copied=False)


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


def _check_segments(path: Path, data: bytes, model_path: Path, model_hash: str, cut: SegmentedModel) -> dict[str, Any]:
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
    return document


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
    segments: Path | None,
    segments_document: dict[str, Any] | None,
) -> None:
    """RunnerError unless the Vela model `path` is Vela's compilation of `model`: by hash when segments.json
    (already bound to the model) records `compiled_sha256`, else by the names Vela keeps
    (heliabuild.vela.binding.compilation_mismatch)."""
    from heliabuild.vela.binding import compilation_mismatch

    vela_hash = sha256_bytes(data)
    compiled_sha256 = (segments_document or {}).get("compiled_sha256")
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


def check_input_bytes(policy: Policy, entry: TensorInput, cut: SegmentedModel) -> bytes:
    """The bytes of the policy's tensor input `entry`; PolicyError unless they are exactly its tensor's size."""
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
