"""The typed measurement policy (docs/runner.md, "The policy").

    defaults:
      fvp:
        enabled: true
        acquisition: {state: carry, warmup_invokes: 2, measured_invokes: 3}
        tensor_io: {inputs: [{index: 0, file: input0.bin}]}
        verification: {reference: litert, resolver: BUILTIN_REF, max_abs_diff: 0}   # outputs against LiteRT

`load_policy(path)` reads YAML or JSON (as heliabuild.documents says: a regular file, bounded, UTF-8, no YAML
aliases); `Policy.from_json(document, source)` takes a parsed document. Every rejection is one PolicyError naming
the source and the field. The policy is validated against schemas/policy.schema.json after the rules stated
here, which give the clearer message first.

A policy file's `tensor_io` files must lie in the policy's folder (or below it), symlinks resolved, unless the
policy sets `tensor_io.allow_outside_policy_folder: true`: the bytes are copied into the runner, so a policy
from elsewhere cannot pull in any file of the machine unasked. A dict policy is the caller's code and is not
restricted.
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from heliabuild.documents import (
    MAX_DOCUMENT_BYTES,
    check_json_values,
    parse_yaml,
    read_regular_file,
    read_text,
    read_yaml,
    shown,
)
from heliabuild.errors import HeliaError, PolicyError
from heliabuild.runner.backends import REGISTRY
from heliabuild.schema_files import check_keys, first_error, message_of

SCHEMA_NAME = "policy"
BACKEND_NAMES = tuple(dict.fromkeys(name for row in REGISTRY for name in (row.backend, *row.aliases)))
"""What a user may write under `defaults` for a backend: the registry's backends and their `aliases` (`qemu` for
qemu-m55), `("litert", "qemu-m55", "qemu", "fvp")`."""
STATES = ("carry", "single")
UNSUPPORTED = ("bus_tracing", "per_layer_fencing")
MAX_WARMUP_INVOKES = 1000
MAX_MEASURED_INVOKES = 10_000
"""At most 10000 measured invokes: the bundle keeps every sample's outputs as files (heliabuild.results.reader
reads at most MAX_BUNDLE_ENTRIES entries; the runner build checks the product with the model's outputs)."""
MAX_INPUT_INDEX = 65535
VERIFICATION_KEYS = ("reference", "resolver", "max_abs_diff")
"""The keys of `defaults.fvp.verification`, kept as given: an explicit `max_abs_diff: null` opts out of the
backend's default bound (heliabuild.runner.verification.resolve_verification)."""
OUTSIDE_OPT_IN = "allow_outside_policy_folder"
"""The `tensor_io` key that lets a policy file name input files outside its folder."""


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
    inputs_outside_allowed: bool = False
    verification: dict[str, Any] | None = None

    @classmethod
    def from_json(cls, document: Any, source: str = "<policy>", base_dir: Path | None = None) -> Policy:
        """The policy a parsed document describes; PolicyError naming `source` and the field otherwise."""
        if document is None:
            document = {}
        check_json_values(document, source, "policy", error=PolicyError)
        check_policy_keys(document, source)
        defaults = _mapping(document.get("defaults", {}), "defaults", source)
        fvp = _mapping(defaults.get("fvp", {}), "defaults.fvp", source)
        acquisition = _mapping(fvp.get("acquisition", {}), "defaults.fvp.acquisition", source)
        where = "defaults.fvp.acquisition"

        for name in UNSUPPORTED:
            if name in fvp:
                value = fvp[name]
                if not isinstance(value, bool):
                    raise PolicyError(f"{source}: defaults.fvp.{name}: found {shown(value)}, expected true or false")
                if value:
                    raise PolicyError(
                        f"{source}: defaults.fvp.{name}: explicit {name.replace('_', ' ')} is not supported "
                        "by this acquisition protocol",
                        hint=f"remove defaults.fvp.{name} or set it to false",
                    )
        enabled = fvp.get("enabled", True)
        if not isinstance(enabled, bool):
            raise PolicyError(f"{source}: defaults.fvp.enabled: found {shown(enabled)}, expected true or false")
        state = acquisition.get("state", "carry")
        if state not in STATES:
            raise PolicyError(f"{source}: {where}.state: found {shown(state)}, expected one of {', '.join(STATES)}")
        warmups = acquisition.get("warmup_invokes")
        if warmups is not None:
            _check_count(warmups, f"{where}.warmup_invokes", source, MAX_WARMUP_INVOKES)
        measured = acquisition.get("measured_invokes", 1)
        _check_count(measured, f"{where}.measured_invokes", source, MAX_MEASURED_INVOKES)
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
        outside = fvp.get("tensor_io", {}).get(OUTSIDE_OPT_IN, False) if tensor_io is not None else False
        if not isinstance(outside, bool):
            raise PolicyError(
                f"{source}: defaults.fvp.tensor_io.{OUTSIDE_OPT_IN}: found {shown(outside)}, expected true or false"
            )
        verification = fvp.get("verification")
        if verification is not None:
            _mapping(verification, "defaults.fvp.verification", source)
        _validate_schema(document, source)
        return cls(
            state=state,
            warmup_invokes=warmups,
            measured_invokes=measured,
            tensor_io=tensor_io,
            fvp_enabled=enabled,
            source=source,
            base_dir=base_dir,
            inputs_outside_allowed=outside,
            verification=None
            if verification is None
            else {key: verification[key] for key in VERIFICATION_KEYS if key in verification},
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

    def read_input(self, entry: TensorInput, limit: int = MAX_DOCUMENT_BYTES) -> bytes:
        """The bytes of `entry`'s file (see `input_path`), at most `limit` of them. PolicyError naming the
        policy, the field and the file when the file is not a regular file, cannot be read, is larger, or (for
        a policy file without `allow_outside_policy_folder: true`) resolves outside the policy's folder."""
        field = f"defaults.fvp.tensor_io.inputs (index {entry.index})"
        path = self.input_path(entry)
        if self.base_dir is not None and not self.inputs_outside_allowed:
            folder = Path(os.path.realpath(self.base_dir))  # realpath: a symlink loop is not an error here
            if not Path(os.path.realpath(path)).is_relative_to(folder):
                raise PolicyError(
                    f"{self.source}: {field}: {entry.file} lies outside the policy's folder {folder}",
                    hint=f"move the file beside the policy, or set tensor_io.{OUTSIDE_OPT_IN}: true",
                )
        try:
            return read_regular_file(path, "input file", error=PolicyError, limit=limit)
        except PolicyError as error:
            raise PolicyError(f"{self.source}: {field}: {error.message}") from None


def check_policy_keys(document: Any, source: str) -> None:
    """PolicyError for the first key the policy schema does not allow where it stands, with a did-you-mean
    (heliabuild.schema_files.check_keys); a backend's name under `defaults` (`defaults.litert`) is refused
    saying that the spec's `defaults.fvp` holds the policy of every backend."""
    defaults = _mapping(document, "", source).get("defaults")
    if isinstance(defaults, dict):
        for key in defaults:
            if key != "fvp" and key in BACKEND_NAMES:
                raise PolicyError(
                    f"{source}: defaults: unknown key {key!r}: the policy of every backend (litert, qemu-m55 and "
                    "fvp alike) is under defaults.fvp, the one key the policy spec gives",
                    hint=f"move defaults.{key}'s settings under defaults.fvp",
                )
    check_keys(_mapping(document, "", source), SCHEMA_NAME, source, error=PolicyError, index_format="[{}]")


def load_policy(path: str | os.PathLike[str]) -> Policy:
    """Read a YAML or JSON policy file (see the module docstring); PolicyError naming the file otherwise."""
    source = Path(path)
    document = read_yaml(source, "policy", error=PolicyError)
    return Policy.from_json(document, str(source), base_dir=source.parent)


def _mapping(document: Any, where: str, source: str) -> dict[str, Any]:
    """`document` itself when it is a mapping; PolicyError naming the field otherwise (its keys are checked
    against the schema by heliabuild.schema_files.check_keys)."""
    if not isinstance(document, dict):
        raise PolicyError(f"{source}: {where or '(top level)'}: found {type(document).__name__}, expected a mapping")
    return document


def _check_count(value: Any, field: str, source: str, maximum: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise PolicyError(f"{source}: {field}: found {shown(value)}, expected a non-negative integer")
    if not 0 <= value <= maximum:
        raise PolicyError(f"{source}: {field}: found {shown(value)}, expected an integer from 0 to {maximum}")


def _tensor_io(fvp: dict[str, Any], source: str) -> tuple[TensorInput, ...]:
    block = _mapping(fvp["tensor_io"], "defaults.fvp.tensor_io", source)
    entries = block.get("inputs")
    if not isinstance(entries, list):
        raise PolicyError(f"{source}: defaults.fvp.tensor_io.inputs: found {shown(entries)}, expected a list")
    result: list[TensorInput] = []
    seen: set[int] = set()
    for position, entry in enumerate(entries):
        field = f"defaults.fvp.tensor_io.inputs[{position}]"
        if not isinstance(entry, dict):
            raise PolicyError(f"{source}: {field}: found {shown(entry)}, expected {{index, file}}")
        index = entry.get("index")
        _check_count(index, f"{field}.index", source, MAX_INPUT_INDEX)
        if index in seen:
            raise PolicyError(f"{source}: {field}.index: input {index} is given twice")
        seen.add(index)
        file = entry.get("file")
        if not isinstance(file, str) or not file or "\0" in file:
            raise PolicyError(f"{source}: {field}.file: found {shown(file)}, expected a file name")
        result.append(TensorInput(index=index, file=file))
    return tuple(sorted(result, key=lambda e: e.index))


def _validate_schema(document: Any, source: str) -> None:
    error = first_error(document, f"{SCHEMA_NAME}.schema.json")
    if error is not None:
        where = ".".join(str(part) for part in error.absolute_path) or "(top level)"
        raise PolicyError(f"{source}: {where}: {message_of(error)} (schema policy)")


# --- the facts a build reads before any stage runs ---------------------------------------------------------------

SCANNED_KEYS = ("tensor_io", "enabled")
"""The only keys of a policy file read before the policy is loaded (scan_policy_file): its input files and
whether it executes."""


def scan_policy_file(path: str) -> Any:
    """The parsed policy file at `path` (read as heliabuild.documents reads YAML: bounded, no aliases), or None
    when it cannot be read now (load_policy later says why) or names none of SCANNED_KEYS. The file is read at
    every call and parsed once per distinct content. Nothing is checked: the document is load_policy's to judge.

    YAML writes a key's characters out unless it escapes one with a backslash: folding a line inserts a space
    or a line break, never joins two pieces of text. So a text with no backslash holds a key only where the
    key's own characters stand in a row, and a text without any of SCANNED_KEYS needs no parse (nor PyYAML's
    import, most of a small project's no-op SCons build beyond SCons's own: bench/README.md)."""
    try:
        text = read_text(path, "policy")
        if "\\" not in text and not any(key in text for key in SCANNED_KEYS):
            return None
        return _parsed_policy(text)
    except HeliaError:
        return None


@functools.lru_cache(maxsize=64)
def _parsed_policy(text: str) -> Any:
    return parse_yaml(text, "policy", "policy")


def _scanned_fvp(document: Any) -> Mapping[str, Any]:
    defaults = document.get("defaults") if isinstance(document, Mapping) else None
    fvp = defaults.get("fvp") if isinstance(defaults, Mapping) else None
    return fvp if isinstance(fvp, Mapping) else {}


def scanned_inputs(document: Any) -> list[dict[str, Any]]:
    """The well-formed `tensor_io.inputs` entries (`{index: int, file: str}`) of a scanned or given policy
    document, as the document's own dicts; malformed ones are left for load_policy to refuse."""
    tensor_io = _scanned_fvp(document).get("tensor_io")
    inputs = tensor_io.get("inputs") if isinstance(tensor_io, Mapping) else None
    return [
        entry
        for entry in (inputs if isinstance(inputs, list) else [])
        if isinstance(entry, dict)
        and isinstance(entry.get("index"), int)
        and not isinstance(entry.get("index"), bool)
        and isinstance(entry.get("file"), str)
    ]


def scanned_executes(document: Any) -> bool:
    """Whether a scanned or given policy document executes (`enabled` is not false; None: the default policy)."""
    return _scanned_fvp(document).get("enabled", True) is not False


_KEY_LIKE = re.compile(r"([A-Za-z_][A-Za-z0-9_-]*)[\"']?\s*:(?:\s|$)")
"""A word followed by a colon, quoted or not: what may be a key of a YAML or JSON policy."""


@functools.cache
def _schema_keys() -> frozenset[str]:
    """Every property name anywhere in the policy schema."""
    from heliabuild.schema_files import load_schema

    found: set[str] = set()

    def walk(schema: Any) -> None:
        if isinstance(schema, dict):
            found.update(schema.get("properties", {}))
            for value in schema.values():
                walk(value)
        elif isinstance(schema, list):
            for value in schema:
                walk(value)

    walk(load_schema(SCHEMA_NAME))
    return frozenset(found)


def scan_policy_keys(policy: Any, path: str | None, source: str = "policy") -> PolicyError | None:
    """The PolicyError check_policy_keys gives for `policy` when it is a mapping, else for the policy file at
    `path` (None: no file to read now), named `source`; None when its keys are allowed, or it cannot be read or
    parsed now (load_policy later says why). A file with no backslash whose every word followed by a colon is
    a key of the policy schema is not parsed (nor PyYAML imported): its keys are the schema's."""
    if isinstance(policy, Mapping):
        document: Any = policy
        source = "policy"
    elif path is not None:
        try:
            text = read_text(path, "policy")
            if "\\" not in text and set(_KEY_LIKE.findall(text)) <= _schema_keys():
                return None
            document = parse_yaml(text, source, "policy")
        except HeliaError:
            return None
    else:
        return None
    try:
        check_policy_keys(document, source)
    except PolicyError as error:
        return error
    return None
