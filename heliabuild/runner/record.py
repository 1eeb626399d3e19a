"""runner.json format 2 as typed records: the reader and the writer beside schemas/runner.schema.json.

`read_runner_record(path)` reads runner.json (a file, or the folder holding it) bounded and never through a
symlink, refuses another `format` by name, validates the document against the schema (each backend's own
section included) and only then builds the `RunnerRecord`: no field of a hand-edited runner.json reaches
the code as a raw dict. `runner_json_bytes(record)` is the writer's side: the record as JSON, validated
against the same schema, as deterministic bytes (sorted keys, 2-space indent, final newline). The copied
files are not verified here (heliabuild.runner.freeze.load_runner does that). docs/runner.md, "runner.json
(format 2)".
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from heliabuild.documents import parse_json, read_regular_file, same_named, shown
from heliabuild.errors import RunnerError, SchemaError
from heliabuild.files import json_text
from heliabuild.schema_files import validate

RUNNER_FORMAT = 2
RUNNER_FILE = "runner.json"
AOT_FIRMWARE_SOURCE = "heliabuild-aot"
"""`fvp.firmware.source` of heliabuild's AOT firmware (heliabuild.fvp.aot_firmware.SOURCE)."""
PREBUILT_FIRMWARE_SOURCE = "mlia-ethos-u"
"""`fvp.firmware.source` of Arm's prebuilt runner (heliabuild.fvp.firmware.SOURCE)."""

PathLike = str | os.PathLike[str]


@dataclass(frozen=True)
class FileRecord:
    """A file of the runner folder and its SHA-256."""

    file: str
    sha256: str

    def to_json(self) -> dict[str, Any]:
        return {"file": self.file, "sha256": self.sha256}

    @classmethod
    def from_json(cls, value: Mapping[str, Any]) -> FileRecord:
        return cls(**same_named(value, "file", "sha256"))


@dataclass(frozen=True)
class InputRecord:
    """`inputs.<name>`: copied into the runner folder (`file` inside it) or only recorded (`file` its name)."""

    file: str
    sha256: str
    copied: bool

    def to_json(self) -> dict[str, Any]:
        return {"file": self.file, "sha256": self.sha256, "copied": self.copied}

    @classmethod
    def from_json(cls, value: Mapping[str, Any] | None) -> InputRecord | None:
        return None if value is None else cls(**same_named(value, "file", "sha256", "copied"))


@dataclass(frozen=True)
class RunnerInputs:
    """`inputs`: every input the runner was built from; all but the model optional."""

    model: InputRecord
    sidecar: InputRecord | None = None
    vela_model: InputRecord | None = None
    segments: InputRecord | None = None
    aot_plan: InputRecord | None = None

    def items(self) -> list[tuple[str, InputRecord | None]]:
        """(name, record) of every input, in schema order."""
        return [
            ("model", self.model),
            ("sidecar", self.sidecar),
            ("vela_model", self.vela_model),
            ("segments", self.segments),
            ("aot_plan", self.aot_plan),
        ]

    def to_json(self) -> dict[str, Any]:
        return {name: None if entry is None else entry.to_json() for name, entry in self.items()}

    @classmethod
    def from_json(cls, value: Mapping[str, Any]) -> RunnerInputs:
        model = InputRecord.from_json(value["model"])
        assert model is not None  # the schema requires an object
        return cls(
            model=model,
            sidecar=InputRecord.from_json(value["sidecar"]),
            vela_model=InputRecord.from_json(value["vela_model"]),
            segments=InputRecord.from_json(value["segments"]),
            aot_plan=InputRecord.from_json(value["aot_plan"]),
        )


@dataclass(frozen=True)
class TensorInputRecord:
    """`policy.tensor_io.inputs[]`: the fixed bytes of graph input `index`, copied as `file`."""

    index: int
    file: str
    sha256: str
    source: str | None = None

    def to_json(self) -> dict[str, Any]:
        document: dict[str, Any] = {"index": self.index, "file": self.file, "sha256": self.sha256}
        if self.source is not None:
            document["source"] = self.source
        return document

    @classmethod
    def from_json(cls, value: Mapping[str, Any]) -> TensorInputRecord:
        return cls(index=value["index"], file=value["file"], sha256=value["sha256"], source=value.get("source"))


@dataclass(frozen=True)
class Verification:
    """`policy.verification`: outputs compared with LiteRT running `resolver`, bounded by `max_abs_diff`
    (None: recorded, not bounded) (heliabuild.runner.verification)."""

    reference: str
    resolver: str
    max_abs_diff: int | float | None
    max_abs_diff_source: str

    def to_json(self) -> dict[str, Any]:
        return {
            "reference": self.reference,
            "resolver": self.resolver,
            "max_abs_diff": self.max_abs_diff,
            "max_abs_diff_source": self.max_abs_diff_source,
        }

    @classmethod
    def from_json(cls, value: Mapping[str, Any] | None) -> Verification | None:
        if value is None:
            return None
        return cls(**same_named(value, "reference", "resolver", "max_abs_diff", "max_abs_diff_source"))


@dataclass(frozen=True)
class RunnerPolicy:
    """`policy`: the acquisition policy as the runner froze it (warmups resolved)."""

    state: str
    warmup_invokes: int
    warmup_source: str
    measured_invokes: int
    tensor_io: tuple[TensorInputRecord, ...] | None
    fvp_enabled: bool
    verification: Verification | None = None

    def to_json(self) -> dict[str, Any]:
        document: dict[str, Any] = {
            "state": self.state,
            "warmup_invokes": self.warmup_invokes,
            "warmup_source": self.warmup_source,
            "measured_invokes": self.measured_invokes,
            "tensor_io": None if self.tensor_io is None else {"inputs": [entry.to_json() for entry in self.tensor_io]},
            "fvp_enabled": self.fvp_enabled,
        }
        if self.verification is not None:
            document["verification"] = self.verification.to_json()
        return document

    @classmethod
    def from_json(cls, value: Mapping[str, Any]) -> RunnerPolicy:
        tensor_io = value["tensor_io"]
        return cls(
            **same_named(value, "state", "warmup_invokes", "warmup_source", "measured_invokes", "fvp_enabled"),
            tensor_io=None if tensor_io is None else tuple(TensorInputRecord.from_json(e) for e in tensor_io["inputs"]),
            verification=Verification.from_json(value.get("verification")),
        )

    def tensor_input(self, index: int) -> TensorInputRecord | None:
        """The fixed bytes' entry of graph input `index`, or None (zeros)."""
        return next((entry for entry in self.tensor_io or () if entry.index == index), None)


@dataclass(frozen=True)
class FirmwareImage:
    """What the two AOT firmwares (qemu-m55's `firmware`, the fvp AOT firmware's `fvp.firmware`) record alike:
    the ELF and the layout it was generated with, the toolchain, and the interface the host checks the record
    stream against."""

    target: str
    elf: FileRecord
    layout: FileRecord
    toolchain: str
    arena_bytes: int
    input_bytes: tuple[int, ...]
    output_bytes: tuple[int, ...]
    output_names: tuple[str, ...]
    segments: int

    def to_json(self) -> dict[str, Any]:
        return {
            "target": self.target,
            "elf": self.elf.to_json(),
            "layout": self.layout.to_json(),
            "toolchain": self.toolchain,
            "arena_bytes": self.arena_bytes,
            "input_bytes": list(self.input_bytes),
            "output_bytes": list(self.output_bytes),
            "output_names": list(self.output_names),
            "segments": self.segments,
        }

    @classmethod
    def from_json(cls, value: Mapping[str, Any]) -> FirmwareImage:
        return cls(
            **same_named(value, "target", "toolchain", "arena_bytes", "segments"),
            elf=FileRecord.from_json(value["elf"]),
            layout=FileRecord.from_json(value["layout"]),
            input_bytes=tuple(value["input_bytes"]),
            output_bytes=tuple(value["output_bytes"]),
            output_names=tuple(value["output_names"]),
        )


@dataclass(frozen=True)
class DriverRecord:
    """`fvp.firmware.driver`: the Ethos-U driver files the AOT firmware was linked with (no path)."""

    sha256: str
    sources: tuple[str, ...]
    define: str

    def to_json(self) -> dict[str, Any]:
        return {"sha256": self.sha256, "sources": list(self.sources), "define": self.define}

    @classmethod
    def from_json(cls, value: Mapping[str, Any]) -> DriverRecord:
        return cls(sha256=value["sha256"], sources=tuple(value["sources"]), define=value["define"])


@dataclass(frozen=True)
class AotFirmwareRecord:
    """`fvp.firmware` of heliabuild's AOT firmware on an FVP: the image, the driver, the PMU events counted."""

    image: FirmwareImage
    driver: DriverRecord
    npu_events: int
    source: str = AOT_FIRMWARE_SOURCE

    def to_json(self) -> dict[str, Any]:
        return {
            **self.image.to_json(),
            "source": self.source,
            "driver": self.driver.to_json(),
            "npu_events": self.npu_events,
        }

    @classmethod
    def from_json(cls, value: Mapping[str, Any]) -> AotFirmwareRecord:
        return cls(
            image=FirmwareImage.from_json(value),
            driver=DriverRecord.from_json(value["driver"]),
            npu_events=value["npu_events"],
            source=value["source"],
        )


@dataclass(frozen=True)
class PrebuiltFirmwareRecord:
    """`fvp.firmware` of Arm's prebuilt runner: its file in the installed `mlia-ethos-u` and its SHA-256."""

    package_version: str
    file: str
    sha256: str
    source: str = PREBUILT_FIRMWARE_SOURCE

    def to_json(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "package_version": self.package_version,
            "file": self.file,
            "sha256": self.sha256,
        }

    @classmethod
    def from_json(cls, value: Mapping[str, Any]) -> PrebuiltFirmwareRecord:
        return cls(**same_named(value, "package_version", "file", "sha256", "source"))


@dataclass(frozen=True)
class FvpTargetRecord:
    """`fvp.target`: the FVP and the NPU configuration it models."""

    executable: str
    platform: str
    npu: str
    num_macs: int
    accelerator: str

    def to_json(self) -> dict[str, Any]:
        return {
            "executable": self.executable,
            "platform": self.platform,
            "npu": self.npu,
            "num_macs": self.num_macs,
            "accelerator": self.accelerator,
        }

    @classmethod
    def from_json(cls, value: Mapping[str, Any]) -> FvpTargetRecord:
        return cls(**same_named(value, "executable", "platform", "npu", "num_macs", "accelerator"))


@dataclass(frozen=True)
class FvpSegment:
    """`fvp.segments[]`: what the sub-model of one segment the run cuts must be (the prebuilt runner's job)."""

    index: int
    sha256: str
    bytes: int
    command_streams: int

    def to_json(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "sha256": self.sha256,
            "bytes": self.bytes,
            "command_streams": self.command_streams,
        }

    @classmethod
    def from_json(cls, value: Mapping[str, Any]) -> FvpSegment:
        return cls(**same_named(value, "index", "sha256", "bytes", "command_streams"))


@dataclass(frozen=True)
class FvpSection:
    """`fvp`: the target, the firmware, the FVP's `--timelimit`, the recorded command line (machine paths as
    placeholders) and, for the prebuilt runner, one entry per segment job."""

    target: FvpTargetRecord
    firmware: PrebuiltFirmwareRecord | AotFirmwareRecord
    timelimit_s: int
    command: tuple[str, ...]
    segments: tuple[FvpSegment, ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "target": self.target.to_json(),
            "firmware": self.firmware.to_json(),
            "timelimit_s": self.timelimit_s,
            "command": list(self.command),
            "segments": [segment.to_json() for segment in self.segments],
        }

    @classmethod
    def from_json(cls, value: Mapping[str, Any]) -> FvpSection:
        firmware = value["firmware"]
        return cls(
            target=FvpTargetRecord.from_json(value["target"]),
            firmware=AotFirmwareRecord.from_json(firmware)
            if firmware["source"] == AOT_FIRMWARE_SOURCE
            else PrebuiltFirmwareRecord.from_json(firmware),
            timelimit_s=value["timelimit_s"],
            command=tuple(value["command"]),
            segments=tuple(FvpSegment.from_json(entry) for entry in value["segments"]),
        )


@dataclass(frozen=True)
class RunnerRecord:
    """A runner.json: the backend, the frozen policy, the inputs by hash, the copied files, and the backend's
    own section (`firmware` for qemu-m55, `fvp` for fvp, neither for litert)."""

    backend: str
    heliabuild_version: str
    policy: RunnerPolicy
    inputs: RunnerInputs
    files: Mapping[str, str]
    call_once_present: bool
    firmware: FirmwareImage | None = None
    fvp: FvpSection | None = None
    format: int = RUNNER_FORMAT

    def to_json(self) -> dict[str, Any]:
        document: dict[str, Any] = {
            "format": self.format,
            "backend": self.backend,
            "heliabuild_version": self.heliabuild_version,
            "policy": self.policy.to_json(),
            "inputs": self.inputs.to_json(),
            "files": dict(sorted(self.files.items())),
            "call_once_present": self.call_once_present,
        }
        if self.firmware is not None:
            document["firmware"] = self.firmware.to_json()
        if self.fvp is not None:
            document["fvp"] = self.fvp.to_json()
        return document

    @classmethod
    def from_json(cls, value: Mapping[str, Any], source: str = RUNNER_FILE) -> RunnerRecord:
        """The record of a document that validates against schemas/runner.schema.json (read_runner_record
        validates first); RunnerError for what the schema lets through but no runner holds."""
        firmware = value.get("firmware")
        if value["backend"] == "qemu-m55" and firmware is None:
            raise RunnerError(
                f"{source}: firmware: null; a runner of backend qemu-m55 records its firmware there",
                hint="rebuild the runner",
            )
        fvp = value.get("fvp")
        return cls(
            format=value["format"],
            backend=value["backend"],
            heliabuild_version=value["heliabuild_version"],
            policy=RunnerPolicy.from_json(value["policy"]),
            inputs=RunnerInputs.from_json(value["inputs"]),
            files=dict(value["files"]),
            call_once_present=value["call_once_present"],
            firmware=None if firmware is None else FirmwareImage.from_json(firmware),
            fvp=None if fvp is None else FvpSection.from_json(fvp),
        )


def runner_json_bytes(record: RunnerRecord) -> bytes:
    """runner.json's bytes of `record`, validated against the schema (a SchemaError is heliabuild's fault)."""
    document = record.to_json()
    validate(document, "runner", RUNNER_FILE)
    return json_text(document).encode("utf-8")


def runner_json_path(path: PathLike) -> Path:
    """The runner.json `path` names: itself, or the runner.json in it when it is a folder."""
    runner_path = Path(path)
    return runner_path / RUNNER_FILE if runner_path.is_dir() else runner_path


def check_no_symlink(folder: Path, name: str) -> None:
    """RunnerError when `folder/name` or a folder on the way to it below `folder` is a symlink: a runner
    folder holds only regular files and folders, so nothing read, replaced or removed in it is elsewhere."""
    path = folder
    for part in Path(name).parts:
        path = path / part
        if path.is_symlink():
            raise RunnerError(
                f"{path}: a symlink inside the runner folder; a runner holds only regular files and folders",
                hint="rebuild the runner into a new folder",
            )


def read_runner_record(path: PathLike) -> tuple[RunnerRecord, bytes]:
    """runner.json at `path` (module docstring) and its bytes. RunnerError naming the file for a symlink, a
    file that is no JSON, another format or a schema violation."""
    runner_path = runner_json_path(path)
    check_no_symlink(runner_path.parent, runner_path.name)
    raw = read_regular_file(runner_path, "runner", error=RunnerError, follow_symlinks=False)
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
    return RunnerRecord.from_json(document, str(runner_path)), raw
