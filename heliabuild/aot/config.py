"""The AOT plan stage's configuration: goal, knob rules, residency rules, stream pool, input plan.

A configuration comes from a YAML or JSON file (`load_config`), validated
against `schemas/aot-config.schema.json` with unknown keys rejected by name,
or from Python arguments (`AotConfig(...)`, validated the same way):

```yaml
optimization:
  goal: latency              # latency | balanced (default) | size | accuracy
  allow_approximate: false   # default false
  knobs: {kernel: generic}   # model-level knob values (source kind `model`)
  plan: previous_plan.json   # an input plan; relative to this file
operators:                   # knob rules; a later rule wins, knob by knob
  - {type: CONV_2D, knobs: {kernel: generic}}
  - {id: "0:conv2d_1/Relu", knobs: {kernel: auto}}
  - {index: 3, knobs: {kernel: specialized}}
memory:
  tensors:                   # residency rules for constants; merged field by field, a later rule wins
    - {pattern: "*", residency: stream}
    - {id: conv2d_1/weights, residency: pin, destination_memory: DTCM}
  stream_pool: {memory: DTCM, bytes: 65536, alignment: 16}
```

- An `operators` rule matches an operator when every selector it gives
  holds: `index` (the operator's position in execution order, the plan's
  `operators[].index`), `type` (operator type, any letter case) and `id`
  (the stable id or the node id). For each knob the last rule that matches
  and sets it wins; the plan records it as `source.rule`: the rule's
  `position` in the `operators` list, its `type` and its `id` (null where
  it gives none). Knob names and values are checked against the knob table
  when a plan is made.
- A `memory.tensors` rule matches constants by `id` (exactly) or `pattern`
  (shell-style, fnmatch, case-sensitive) and sets any of `residency`
  (`direct`, `pin`, `stream`), `memory` (where the bytes are stored) and
  `destination_memory` (for `pin`, where the copy is read from).
- `optimization.plan` in a file resolves relative to the file's folder; given
  as a Python argument (or by the CLI's `--plan`) relative to the working
  directory. The validated configuration stores it absolute.
"""

from __future__ import annotations

import fnmatch
import json
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import MappingProxyType
from typing import Any

from heliabuild.documents import check_json_values, parse_json, parse_yaml, read_text, shown
from heliabuild.errors import HeliaError

SCHEMA_NAME = "aot-config"
DEFAULT_GOAL = "balanced"
YAML_SUFFIXES = (".yaml", ".yml")


class ConfigError(HeliaError):
    """A configuration that cannot be read or breaks its schema."""


@dataclass(frozen=True)
class OperatorRule:
    """One `operators` entry: selectors (`index`, `type`, `id`; at least one) and the knob values it sets."""

    knobs: Mapping[str, str]
    index: int | None = None
    type: str | None = None
    id: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "knobs", MappingProxyType(dict(self.knobs)))

    def matches(self, index: int, op_type: str, ids: Iterable[str]) -> bool:
        """Whether every selector the rule gives holds for the operator at `index` (`ids`: its stable id
        and node id)."""
        if self.index is not None and self.index != index:
            return False
        if self.type is not None and self.type.upper() != op_type.upper():
            return False
        return self.id is None or self.id in ids

    def source_rule(self, position: int) -> dict[str, Any]:
        """The plan's `source.rule` of this rule at `position` in the `operators` list: that position,
        the rule's type and id (null where it gives none)."""
        return {"position": position, "type": self.type, "id": self.id}

    def to_json(self) -> dict[str, Any]:
        entry: dict[str, Any] = {}
        for name in ("index", "type", "id"):
            if getattr(self, name) is not None:
                entry[name] = getattr(self, name)
        entry["knobs"] = dict(self.knobs)
        return entry


@dataclass(frozen=True)
class TensorRule:
    """One `memory.tensors` entry: `id` (exact) or `pattern` (fnmatch), and what it sets."""

    id: str | None = None
    pattern: str | None = None
    residency: str | None = None
    memory: str | None = None
    destination_memory: str | None = None

    def matches(self, constant_id: str) -> bool:
        if self.id is not None:
            return constant_id == self.id
        return self.pattern is not None and fnmatch.fnmatchcase(constant_id, self.pattern)

    def to_json(self) -> dict[str, Any]:
        names = ("id", "pattern", "residency", "memory", "destination_memory")
        return {name: getattr(self, name) for name in names if getattr(self, name) is not None}


@dataclass(frozen=True)
class TensorRequest:
    """What the merged `memory.tensors` rules ask for one constant (None where no rule sets a field)."""

    residency: str | None = None
    memory: str | None = None
    destination_memory: str | None = None


@dataclass(frozen=True)
class StreamPool:
    """`memory.stream_pool`: the pool's memory, size and alignment (None: the platform's minimum)."""

    memory: str
    bytes: int
    alignment: int | None = None

    def to_json(self) -> dict[str, Any]:
        entry: dict[str, Any] = {"memory": self.memory, "bytes": self.bytes}
        if self.alignment is not None:
            entry["alignment"] = self.alignment
        return entry


@dataclass(frozen=True)
class AotConfig:
    """A validated configuration (see the module docstring).

    Rules may be given as OperatorRule / TensorRule objects or as the
    mappings a file holds; `stream_pool` as a StreamPool or a mapping;
    `plan` as a path, made absolute against the working directory. Raises
    ConfigError for anything the schema refuses, naming the field.
    `source` names where it came from in messages (a file, or `<python>`).
    """

    goal: str = DEFAULT_GOAL
    allow_approximate: bool = False
    knobs: Mapping[str, str] = field(default_factory=dict)
    operators: Sequence[OperatorRule | Mapping[str, Any]] = ()
    tensors: Sequence[TensorRule | Mapping[str, Any]] = ()
    stream_pool: StreamPool | Mapping[str, Any] | None = None
    plan: str | os.PathLike[str] | None = None
    source: str = "<python>"

    def __post_init__(self) -> None:
        document = _document_of(self)
        check_document(document, self.source)
        object.__setattr__(self, "knobs", MappingProxyType(dict(self.knobs)))
        object.__setattr__(self, "operators", tuple(_operator_rule(r) for r in document.get("operators", [])))
        memory = document.get("memory", {})
        object.__setattr__(self, "tensors", tuple(TensorRule(**r) for r in memory.get("tensors", [])))
        pool = memory.get("stream_pool")
        object.__setattr__(self, "stream_pool", None if pool is None else StreamPool(**pool))
        if self.plan is not None:
            object.__setattr__(self, "plan", Path(os.path.abspath(os.fspath(self.plan))))

    @property
    def plan_path(self) -> Path | None:
        """The input plan, absolute, or None."""
        return None if self.plan is None else Path(self.plan)

    def to_json(self) -> dict[str, Any]:
        """The configuration as a document (what a file would hold; the plan path absolute)."""
        return _document_of(self)

    def with_plan(self, plan: str | os.PathLike[str] | None) -> AotConfig:
        """This configuration with another input plan (relative to the working directory)."""
        return replace(self, plan=plan)

    def requested(self, constant_id: str) -> TensorRequest:
        """The merged `memory.tensors` rules for one constant: field by field, the last rule setting it wins."""
        merged: dict[str, str | None] = {"residency": None, "memory": None, "destination_memory": None}
        for rule in self.tensors:
            assert isinstance(rule, TensorRule)
            if rule.matches(constant_id):
                for name in merged:
                    value = getattr(rule, name)
                    if value is not None:
                        merged[name] = value
        return TensorRequest(**merged)


def _operator_rule(entry: Mapping[str, Any]) -> OperatorRule:
    return OperatorRule(knobs=entry["knobs"], index=entry.get("index"), type=entry.get("type"), id=entry.get("id"))


def _rule_json(rule: object) -> object:
    return rule.to_json() if isinstance(rule, OperatorRule | TensorRule | StreamPool) else rule


def _document_of(config: AotConfig) -> dict[str, Any]:
    optimization: dict[str, Any] = {"goal": config.goal, "allow_approximate": config.allow_approximate}
    if config.knobs:
        optimization["knobs"] = dict(config.knobs) if isinstance(config.knobs, Mapping) else config.knobs
    if config.plan is not None:
        optimization["plan"] = os.path.abspath(os.fspath(config.plan))
    document: dict[str, Any] = {"optimization": optimization}
    if config.operators:
        document["operators"] = [_rule_json(r) for r in config.operators]
    memory: dict[str, Any] = {}
    if config.tensors:
        memory["tensors"] = [_rule_json(r) for r in config.tensors]
    if config.stream_pool is not None:
        memory["stream_pool"] = _rule_json(config.stream_pool)
    if memory:
        document["memory"] = memory
    return json.loads(json.dumps(document, default=_not_json))


def _not_json(value: object) -> str:
    raise ConfigError(f"configuration value {shown(value)} is not a string, number, boolean, list or mapping")


def _rule_shapes(document: Mapping[str, Any], source: str) -> None:
    """ConfigError for a rule without a selector (or with both `id` and `pattern`), or one that sets nothing."""
    operators = document.get("operators")
    for index, rule in enumerate(operators if isinstance(operators, list) else []):
        if isinstance(rule, Mapping) and not any(key in rule for key in ("index", "type", "id")):
            raise ConfigError(
                f"{source}: operators.{index}: the rule selects no operator; give index, type or id (or several)"
            )
    memory = document.get("memory")
    tensors = memory.get("tensors") if isinstance(memory, Mapping) else None
    for index, rule in enumerate(tensors if isinstance(tensors, list) else []):
        if not isinstance(rule, Mapping):
            continue
        where = f"{source}: memory.tensors.{index}"
        if ("id" in rule) == ("pattern" in rule):
            raise ConfigError(f"{where}: give exactly one of id (a constant's id) or pattern (an fnmatch pattern)")
        if not any(key in rule for key in ("residency", "memory", "destination_memory")):
            raise ConfigError(f"{where}: the rule sets nothing; give residency, memory or destination_memory")


def check_document(document: object, source: str) -> None:
    """Raise ConfigError unless `document` is a valid configuration (unknown keys named first)."""
    from heliabuild.schema_files import check_keys, first_error, message_of

    if not isinstance(document, Mapping):
        raise ConfigError(f"{source}: a configuration is a mapping, found {type(document).__name__}")
    check_json_values(document, source, "configuration", error=ConfigError)
    check_keys(document, SCHEMA_NAME, source, error=ConfigError)
    _rule_shapes(document, source)
    error = first_error(document, f"{SCHEMA_NAME}.schema.json")
    if error is not None:
        where = ".".join(str(part) for part in error.absolute_path) or "(top level)"
        raise ConfigError(f"{source}: {where}: {message_of(error)}", hint="schemas/aot-config.schema.json")
    pool = document.get("memory", {}).get("stream_pool")
    alignment = None if pool is None else pool.get("alignment")
    if alignment is not None and alignment & (alignment - 1):
        raise ConfigError(f"{source}: memory.stream_pool.alignment: {alignment} is not a power of two")


def config_from_document(
    document: object, source: str = "<python>", base: str | os.PathLike[str] | None = None
) -> AotConfig:
    """An AotConfig from a parsed document; a relative `optimization.plan` resolves against `base`
    (default: the working directory)."""
    check_document(document, source)
    assert isinstance(document, Mapping)
    optimization = document.get("optimization", {})
    memory = document.get("memory", {})
    plan = optimization.get("plan")
    if plan is not None and base is not None:
        plan = os.path.join(os.fspath(base), os.path.expanduser(plan))
    return AotConfig(
        goal=optimization.get("goal", DEFAULT_GOAL),
        allow_approximate=optimization.get("allow_approximate", False),
        knobs=optimization.get("knobs", {}),
        operators=document.get("operators", ()),
        tensors=memory.get("tensors", ()),
        stream_pool=memory.get("stream_pool"),
        plan=plan,
        source=source,
    )


def load_config(path: str | os.PathLike[str]) -> AotConfig:
    """Read a YAML (`.yaml`, `.yml`) or JSON (any other name) configuration file.

    An empty file (for YAML, one of only comments) is the default
    configuration; a file whose value is null (`null`, YAML's `~` or a bare
    `---`) is refused. ConfigError names the file and what is wrong:
    unreadable, not YAML/JSON, unknown keys, a value the schema refuses, a
    NaN or Infinity (naming its field).
    """
    file = Path(path)
    text = read_text(file, "configuration", error=ConfigError)
    yaml = file.suffix.lower() in YAML_SUFFIXES
    if not any(line.strip() and not (yaml and line.lstrip().startswith("#")) for line in text.splitlines()):
        return config_from_document({}, str(file), base=file.resolve().parent)  # empty (YAML: or only comments)
    if yaml:
        document = parse_yaml(text, str(file), "configuration", error=ConfigError)
    else:
        try:
            document = parse_json(text, str(file), "configuration", error=ConfigError)
        except ConfigError as error:
            raise ConfigError(error.message, hint="name a YAML configuration .yaml or .yml") from None
    if document is None:
        raise ConfigError(
            f"{file}: the configuration is null; it must be a mapping of sections",
            hint="leave the file empty for the default configuration",
        )
    return config_from_document(document, str(file), base=file.resolve().parent)


def as_config(config: AotConfig | Mapping[str, Any] | str | os.PathLike[str] | None) -> AotConfig:
    """An AotConfig from an AotConfig (as is), a document, a file path, or None (the default)."""
    if config is None:
        return AotConfig()
    if isinstance(config, AotConfig):
        return config
    if isinstance(config, Mapping):
        return config_from_document(config)
    return load_config(config)
