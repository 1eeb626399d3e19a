"""The typed measurement policy (docs/runner.md, "The policy").

    defaults:
      fvp:
        enabled: true
        acquisition: {state: carry, warmup_invokes: 2, measured_invokes: 3}
        tensor_io: {inputs: [{index: 0, file: input0.bin}]}

`load_policy(path)` reads YAML or JSON; `Policy.from_json(document, source)` takes a parsed document. Every
rejection is one PolicyError naming the source and the field. The policy is validated against
schemas/policy.schema.json after the rules stated here, which give the clearer message first.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jsonschema
import yaml

from heliabuild.errors import PolicyError
from heliabuild.schema_files import load_schema

STATES = ("carry", "single")
UNSUPPORTED = ("bus_tracing", "per_layer_fencing")
_KEYS: dict[str, tuple[str, ...]] = {
    "": ("defaults",),
    "defaults": ("fvp",),
    "defaults.fvp": ("enabled", "acquisition", "tensor_io", *UNSUPPORTED),
    "defaults.fvp.acquisition": ("state", "warmup_invokes", "measured_invokes"),
    "defaults.fvp.tensor_io": ("inputs",),
}


@dataclass(frozen=True)
class TensorInput:
    """Fixed bytes for graph input `index`, read from `file` (relative to the policy's folder)."""

    index: int
    file: str


@dataclass(frozen=True)
class Policy:
    """An acquisition policy. `warmup_invokes` None means automatic (see `warmups_for`)."""

    state: str = "carry"
    warmup_invokes: int | None = None
    measured_invokes: int = 1
    tensor_io: tuple[TensorInput, ...] | None = None
    fvp_enabled: bool = True
    source: str = "<default policy>"
    base_dir: Path | None = None

    @classmethod
    def from_json(cls, document: Any, source: str = "<policy>", base_dir: Path | None = None) -> Policy:
        """The policy a parsed document describes; PolicyError naming `source` and the field otherwise."""
        if document is None:
            document = {}
        _check_keys(document, "", source)
        defaults = document.get("defaults", {})
        _check_keys(defaults, "defaults", source)
        fvp = defaults.get("fvp", {})
        _check_keys(fvp, "defaults.fvp", source)
        acquisition = fvp.get("acquisition", {})
        _check_keys(acquisition, "defaults.fvp.acquisition", source)
        where = "defaults.fvp.acquisition"

        for name in UNSUPPORTED:
            if name in fvp:
                value = fvp[name]
                if not isinstance(value, bool):
                    raise PolicyError(f"{source}: defaults.fvp.{name}: found {value!r}, expected true or false")
                if value:
                    raise PolicyError(
                        f"{source}: defaults.fvp.{name}: explicit {name.replace('_', ' ')} is not supported "
                        "by this acquisition protocol",
                        hint=f"remove defaults.fvp.{name} or set it to false",
                    )
        enabled = fvp.get("enabled", True)
        if not isinstance(enabled, bool):
            raise PolicyError(f"{source}: defaults.fvp.enabled: found {enabled!r}, expected true or false")
        state = acquisition.get("state", "carry")
        if state not in STATES:
            raise PolicyError(f"{source}: {where}.state: found {state!r}, expected one of {', '.join(STATES)}")
        warmups = acquisition.get("warmup_invokes")
        if warmups is not None:
            _check_count(warmups, f"{where}.warmup_invokes", source)
        measured = acquisition.get("measured_invokes", 1)
        _check_count(measured, f"{where}.measured_invokes", source)
        if measured < 1:
            raise PolicyError(f"{source}: {where}.measured_invokes: found {measured}, expected at least 1")
        if state == "single" and warmups is not None and warmups > 0:
            raise PolicyError(
                f"{source}: {where}.warmup_invokes: found {warmups} with state single, which permits no warmup",
                hint="use state carry to warm up, or set warmup_invokes to 0",
            )
        if state == "single" and measured != 1:
            raise PolicyError(
                f"{source}: {where}.measured_invokes: found {measured} with state single, which measures "
                "exactly one invoke",
                hint="use state carry for several measured invokes",
            )
        tensor_io = _tensor_io(fvp, source) if "tensor_io" in fvp else None
        _validate_schema(document, source)
        return cls(
            state=state,
            warmup_invokes=warmups,
            measured_invokes=measured,
            tensor_io=tensor_io,
            fvp_enabled=enabled,
            source=source,
            base_dir=base_dir,
        )

    def warmups_for(self, *, call_once_present: bool | None, aot: bool = False) -> int:
        """The warmup count to run: the explicit count, else 1 for an interpreter model holding CALL_ONCE,
        0 otherwise and 0 for AOT (single state never warms up)."""
        if self.warmup_invokes is not None:
            return self.warmup_invokes
        if self.state == "single" or aot:
            return 0
        return 1 if call_once_present else 0

    @property
    def warmup_source(self) -> str:
        return "automatic" if self.warmup_invokes is None else "explicit"

    def input_path(self, entry: TensorInput) -> Path:
        """Where `entry.file` lies: relative to the policy file's folder (the working folder for a dict)."""
        path = Path(entry.file)
        return path if path.is_absolute() or self.base_dir is None else self.base_dir / path


def load_policy(path: str | os.PathLike[str]) -> Policy:
    """Read a YAML or JSON policy file."""
    source = Path(path)
    try:
        text = source.read_text(encoding="utf-8")
    except OSError as error:
        raise PolicyError(f"{source}: cannot read the policy: {error.strerror or error}") from None
    try:
        document = yaml.safe_load(text)
    except yaml.YAMLError as error:
        raise PolicyError(f"{source}: not a YAML or JSON policy: {str(error).splitlines()[0]}") from None
    return Policy.from_json(document, str(source), base_dir=source.parent)


def _check_keys(document: Any, where: str, source: str) -> None:
    label = where or "(top level)"
    if not isinstance(document, dict):
        raise PolicyError(f"{source}: {label}: found {type(document).__name__}, expected a mapping")
    allowed = _KEYS[where]
    for key in document:
        if key not in allowed:
            field = f"{where}.{key}" if where else str(key)
            raise PolicyError(f"{source}: {field}: unknown key; {label} accepts {', '.join(allowed)}")


def _check_count(value: Any, field: str, source: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise PolicyError(f"{source}: {field}: found {value!r}, expected a non-negative integer")
    if value < 0:
        raise PolicyError(f"{source}: {field}: found {value}, expected a non-negative integer")


def _tensor_io(fvp: dict[str, Any], source: str) -> tuple[TensorInput, ...]:
    block = fvp["tensor_io"]
    _check_keys(block, "defaults.fvp.tensor_io", source)
    entries = block.get("inputs")
    if not isinstance(entries, list):
        raise PolicyError(f"{source}: defaults.fvp.tensor_io.inputs: found {entries!r}, expected a list")
    result: list[TensorInput] = []
    seen: set[int] = set()
    for position, entry in enumerate(entries):
        field = f"defaults.fvp.tensor_io.inputs[{position}]"
        if not isinstance(entry, dict):
            raise PolicyError(f"{source}: {field}: found {entry!r}, expected {{index, file}}")
        for key in entry:
            if key not in ("index", "file"):
                raise PolicyError(f"{source}: {field}.{key}: unknown key; an input accepts index, file")
        index = entry.get("index")
        _check_count(index, f"{field}.index", source)
        if index in seen:
            raise PolicyError(f"{source}: {field}.index: input {index} is given twice")
        seen.add(index)
        file = entry.get("file")
        if not isinstance(file, str) or not file:
            raise PolicyError(f"{source}: {field}.file: found {file!r}, expected a file name")
        result.append(TensorInput(index=index, file=file))
    return tuple(sorted(result, key=lambda e: e.index))


def _validate_schema(document: Any, source: str) -> None:
    validator = jsonschema.Draft202012Validator(load_schema("policy"))
    error = jsonschema.exceptions.best_match(validator.iter_errors(document))
    if error is not None:
        where = ".".join(str(part) for part in error.absolute_path) or "(top level)"
        raise PolicyError(f"{source}: {where}: {error.message} (schema policy)")
