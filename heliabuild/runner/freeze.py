"""runner.json format 2: building a runner folder from its inputs, and reading it back.

`build_runner(out_dir, model=..., policy=...)` checks that every input is bound to the model, resolves the
policy (automatic warmup from the observed CALL_ONCE), copies the files the backend needs into `out_dir`
(the model as `model.tflite`, the sidecar as `model.fenced_boundaries.json`, segments.json as
`segments.json`, fixed input bytes as `inputs/input_<index>.bin`) and writes `runner.json` with their
hashes. Inputs the backend does not need (the Vela model, the AOT plan) are recorded by file name and
hash only. The bytes are deterministic: no time, host or absolute path.

`load_runner(path)` refuses any format but 2 by name, validates against schemas/runner.schema.json and
verifies the hash of every copied file.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from heliabuild.errors import FenceError, PolicyError, RunnerError, SchemaError
from heliabuild.fence.sidecar import FenceBoundaries
from heliabuild.files import json_text, sha256_bytes, sha256_file, write_all_or_nothing
from heliabuild.model.io import load_model
from heliabuild.runner.policy import Policy, load_policy
from heliabuild.runner.segments import SegmentedModel, cut_segments
from heliabuild.schema_files import validate

RUNNER_FORMAT = 2
RUNNER_FILE = "runner.json"
BACKENDS = ("litert", "fvp")
MODEL_FILE = "model.tflite"
SIDECAR_FILE = "model.fenced_boundaries.json"
SEGMENTS_FILE = "segments.json"
INPUTS_DIR = "inputs"

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
        return json.loads((self.folder / entry["file"]).read_text(encoding="utf-8"))

    def input_file(self, index: int) -> Path | None:
        tensor_io = self.policy["tensor_io"]
        if tensor_io is None:
            return None
        for entry in tensor_io["inputs"]:
            if entry["index"] == index:
                return self.folder / entry["file"]
        return None


def _read_json(path: Path, what: str) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except OSError as error:
        raise RunnerError(f"{path}: cannot read the {what}: {error.strerror or error}") from None
    except json.JSONDecodeError as error:
        raise RunnerError(f"{path}: the {what} is not JSON: {error}") from None


def _read_bytes(path: Path, what: str) -> bytes:
    try:
        return path.read_bytes()
    except OSError as error:
        raise RunnerError(f"{path}: cannot read the {what}: {error.strerror or error}") from None


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
) -> Path:
    """Write `<out_dir>/runner.json` (format 2) and the files it names; return its path."""
    if backend == "fvp":
        raise RunnerError(
            "backend fvp needs an Arm FVP, which is not available",
            hint="use backend litert, heliabuild's host backend",
        )
    if backend not in BACKENDS:
        raise RunnerError(f"backend {backend!r} is not known; expected one of {', '.join(BACKENDS)}")
    resolved = _policy(policy)
    model_path = Path(model)
    model_bytes = _read_bytes(model_path, "model")
    loaded = load_model(model_bytes)
    loaded.name = str(model_path)
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
    for key, path in (("vela_model", vela_model), ("aot_plan", aot_plan)):
        if path is not None:
            data = _read_bytes(Path(path), key.replace("_", " "))
            inputs[key] = {"file": Path(path).name, "sha256": sha256_bytes(data), "copied": False}

    tensor_io = None
    if resolved.tensor_io is not None:
        entries = []
        for entry in resolved.tensor_io:
            data = _check_input_bytes(resolved, entry, cut)
            name = f"{INPUTS_DIR}/input_{entry.index}.bin"
            outputs[name] = data
            entries.append({"index": entry.index, "file": name, "sha256": sha256_bytes(data)})
        tensor_io = {"inputs": entries}

    from heliabuild import __version__

    document = {
        "format": RUNNER_FORMAT,
        "backend": backend,
        "heliabuild_version": __version__,
        "policy": {
            "state": resolved.state,
            "warmup_invokes": resolved.warmups_for(call_once_present=cut.call_once_present),
            "warmup_source": resolved.warmup_source,
            "measured_invokes": resolved.measured_invokes,
            "tensor_io": tensor_io,
            "fvp_enabled": resolved.fvp_enabled,
        },
        "inputs": inputs,
        "files": {name: sha256_bytes(data) for name, data in sorted(outputs.items())},
        "call_once_present": cut.call_once_present,
    }
    validate(document, "runner", RUNNER_FILE)
    folder = Path(out_dir)
    files = {folder / name: data for name, data in outputs.items()}
    files[folder / RUNNER_FILE] = json_text(document).encode("utf-8")
    write_all_or_nothing(files)
    return folder / RUNNER_FILE


def _policy(policy: Policy | PathLike | dict[str, Any] | None) -> Policy:
    if policy is None:
        return Policy()
    if isinstance(policy, Policy):
        return policy
    if isinstance(policy, dict):
        return Policy.from_json(policy, "<policy>")
    return load_policy(policy)


def _check_sidecar(path: Path, data: bytes, model_path: Path, model_hash: str, cut: SegmentedModel) -> None:
    try:
        boundaries = FenceBoundaries.from_json(json.loads(data), str(path))
    except json.JSONDecodeError as error:
        raise RunnerError(f"{path}: the sidecar is not JSON: {error}") from None
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
            f"{path}: boundary_after_ops is {list(boundaries.boundary_after_ops)}, but the model's fences follow "
            f"operators {list(cut.boundary_after_ops)}"
        )


def _check_segments(path: Path, data: bytes, model_path: Path, model_hash: str, cut: SegmentedModel) -> None:
    try:
        document = json.loads(data)
    except json.JSONDecodeError as error:
        raise RunnerError(f"{path}: segments.json is not JSON: {error}") from None
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


def _check_input_bytes(policy: Policy, entry: Any, cut: SegmentedModel) -> bytes:
    field = f"defaults.fvp.tensor_io.inputs (index {entry.index})"
    if entry.index >= len(cut.graph_inputs):
        raise PolicyError(
            f"{policy.source}: {field}: the model has {len(cut.graph_inputs)} graph inputs, no input {entry.index}"
        )
    path = policy.input_path(entry)
    try:
        data = path.read_bytes()
    except OSError as error:
        raise PolicyError(f"{policy.source}: {field}: cannot read {path}: {error.strerror or error}") from None
    info = cut.tensors[cut.graph_inputs[entry.index]]
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
    try:
        document = json.loads(raw)
    except json.JSONDecodeError as error:
        raise RunnerError(f"{runner_path}: the runner is not JSON: {error}") from None
    if not isinstance(document, dict) or "format" not in document:
        raise RunnerError(f"{runner_path}: format: missing; this is not a heliabuild runner.json")
    found = document["format"]
    if found != RUNNER_FORMAT or isinstance(found, bool):
        raise RunnerError(
            f"{runner_path}: runner format {found} is not supported; rebuild the runner",
            hint=f"this heliabuild reads runner format {RUNNER_FORMAT} only",
        )
    try:
        validate(document, "runner", str(runner_path))
    except SchemaError as error:
        raise RunnerError(error.message) from None
    folder = runner_path.parent
    for name, expected in sorted(document["files"].items()):
        file = folder / name
        if Path(name).is_absolute() or ".." in Path(name).parts:
            raise RunnerError(f"{runner_path}: files: {name!r} is not a path inside the runner folder")
        try:
            actual = sha256_file(file)
        except OSError as error:
            raise RunnerError(f"{file}: cannot read a runner file: {error.strerror or error}") from None
        if actual != expected:
            raise RunnerError(
                f"{file}: sha256 is {actual}, but {runner_path.name} records {expected}: the file changed "
                "after the runner was built",
                hint="rebuild the runner",
            )
    for key, entry in document["inputs"].items():
        if entry is not None and entry["copied"] and document["files"].get(entry["file"]) != entry["sha256"]:
            raise RunnerError(f"{runner_path}: inputs.{key}: {entry['file']} is not among the verified files")
    return Runner(path=runner_path, folder=folder, sha256=sha256_bytes(raw), document=document)
