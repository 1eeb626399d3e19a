"""The report's records (`<prefix>_report.json`): `OptimizationReport` and the records it nests, and
`load_report` (the rules: heliabuild.aot.records)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from typing import Any

from heliabuild.aot.binding import (
    _array,
    _boolean,
    _check_version,
    _free_object,
    _integer,
    _join,
    _json,
    _mapping,
    _member,
    _nullable,
    _number,
    _optional,
    _read_json_file,
    _Reader,
    _Record,
    _record,
    _required,
    _string,
    known_member,
)
from heliabuild.aot.enums import KNOB_VALUES, HintKind, KnobName
from heliabuild.aot.plan_records import PlanGenerator, PlanModel, PlanPlatform


@dataclass(frozen=True, kw_only=True)
class KnobAlternative(_Record):
    """One alternative value of a knob for an operator: whether it applies on this target and, if not, why."""

    value: str = field(metadata=_required(_string))
    applies: bool = field(metadata=_required(_boolean))
    reason: str | None = field(default=None, metadata=_optional(_nullable(_string)))


@dataclass(frozen=True)
class ReportKnob:
    """The alternatives of knob `name` (`operators[].knobs.<name>` of the report)."""

    name: KnobName | str
    alternatives: tuple[KnobAlternative, ...]


def _report_knobs(value: Any, reader: _Reader, path: str) -> tuple[ReportKnob, ...]:
    document = _mapping(value, reader, path)
    knobs: list[ReportKnob] = []
    for name in sorted(document):
        values = KNOB_VALUES.get(name)
        alternatives = _array(_record(KnobAlternative))(document[name], reader, _join(path, name))
        typed = tuple(replace(item, value=known_member(values, item.value)) for item in alternatives)
        knobs.append(ReportKnob(name=known_member(KnobName, name), alternatives=typed))
    return tuple(knobs)


def _dump_report_knobs(knobs: tuple[ReportKnob, ...]) -> dict[str, Any]:
    return {str(knob.name): [item.to_json() for item in knob.alternatives] for knob in knobs}


@dataclass(frozen=True, kw_only=True)
class ConstantFact(_Record):
    """A constant an operator reads (`operators[].constants[]`): whether it could be staged into a stream pool,
    and why not."""

    id: str = field(metadata=_required(_string))
    bytes: int = field(metadata=_required(_integer))
    stageable: bool = field(metadata=_required(_boolean))
    reason: str | None = field(default=None, metadata=_optional(_nullable(_string)))


@dataclass(frozen=True, kw_only=True)
class ReportOperator(_Record):
    """One report `operators[]` entry; `knobs` are sorted by name."""

    id: str = field(metadata=_required(_string))
    index: int | None = field(default=None, metadata=_optional(_nullable(_integer)))
    node_id: str | None = field(default=None, metadata=_optional(_nullable(_string)))
    op_type: str | None = field(default=None, metadata=_optional(_nullable(_string)))
    entry: str | None = field(default=None, metadata=_optional(_nullable(_string)))
    macs: int | None = field(default=None, metadata=_optional(_nullable(_integer)))
    knobs: tuple[ReportKnob, ...] = field(default=(), metadata=_optional(_report_knobs, dump=_dump_report_knobs))
    constants: tuple[ConstantFact, ...] = field(default=(), metadata=_optional(_array(_record(ConstantFact))))


@dataclass(frozen=True, kw_only=True)
class ReportSpan(_Record):
    """A span of the stream pool (`stream_pool.layout[]`, `stream_pool.pieces[]`): unit, offset in the pool, bytes."""

    unit: int = field(metadata=_required(_integer))
    offset: int = field(metadata=_required(_integer))
    bytes: int = field(metadata=_required(_integer))


@dataclass(frozen=True, kw_only=True)
class ReportStreamPool(_Record):
    """`stream_pool`: the pool's memory, bytes and alignment, each unit's span and the pieces of the units."""

    memory: str = field(metadata=_required(_string))
    bytes: int = field(metadata=_required(_integer))
    alignment: int = field(metadata=_required(_integer))
    layout: tuple[ReportSpan, ...] = field(default=(), metadata=_optional(_array(_record(ReportSpan))))
    pieces: tuple[ReportSpan, ...] = field(default=(), metadata=_optional(_array(_record(ReportSpan))))


@dataclass(frozen=True, kw_only=True)
class ReportKernelCall(_Record):
    """One CORE function the generated source calls, and the operators calling it."""

    symbol: str = field(metadata=_required(_string))
    operator_ids: tuple[str, ...] = field(metadata=_required(_array(_string)))


@dataclass(frozen=True, kw_only=True)
class KernelCalls(_Record):
    """`kernel_calls`: the calls, sorted by symbol, and the operators without call coverage."""

    calls: tuple[ReportKernelCall, ...] = field(metadata=_required(_array(_record(ReportKernelCall))))
    unrecorded_operator_ids: tuple[str, ...] = field(default=(), metadata=_optional(_array(_string)))


@dataclass(frozen=True, kw_only=True)
class Hint(_Record):
    """One hint the results print: its kind, message, the operators it names and free-form facts."""

    kind: HintKind | str = field(metadata=_required(_member(HintKind)))
    message: str = field(metadata=_required(_string))
    operator_ids: tuple[str, ...] = field(default=(), metadata=_optional(_array(_string)))
    facts: dict[str, Any] = field(default_factory=dict, metadata=_optional(_free_object))


@dataclass(frozen=True, kw_only=True)
class Fp16Overflow(_Record):
    """One `fp16_overflow[]` entry: a packed FP16 layer fed from a model input, and its overflow threshold."""

    operator: str = field(metadata=_required(_string))
    entry: str = field(metadata=_required(_string))
    model_input: str = field(metadata=_required(_string))
    path: tuple[str, ...] = field(metadata=_required(_array(_string)))
    threshold: int | float = field(metadata=_required(_number))
    channel: int = field(metadata=_required(_integer))
    block: int = field(metadata=_required(_integer))
    weight_sum: int | float = field(metadata=_required(_number))
    bias: int | float = field(metadata=_required(_number))


@dataclass(frozen=True, kw_only=True)
class OptimizationReport(_Record):
    """`<prefix>_report.json` (see the module docstring for the reading rules). Its content may change between
    releases, so every field but `schema_version` is optional; `kernel_calls` absent reads as None, which
    differs from an empty, covered call list."""

    schema_version: int = field(metadata=_required(_integer))
    generator: PlanGenerator | None = field(default=None, metadata=_optional(_nullable(_record(PlanGenerator))))
    model: PlanModel | None = field(default=None, metadata=_optional(_nullable(_record(PlanModel))))
    module_prefix: str | None = field(default=None, metadata=_optional(_nullable(_string)))
    platform: PlanPlatform | None = field(default=None, metadata=_optional(_nullable(_record(PlanPlatform))))
    operators: tuple[ReportOperator, ...] = field(default=(), metadata=_optional(_array(_record(ReportOperator))))
    stream_pool: ReportStreamPool | None = field(default=None, metadata=_optional(_nullable(_record(ReportStreamPool))))
    kernel_calls: KernelCalls | None = field(default=None, metadata=_optional(_nullable(_record(KernelCalls))))
    hints: tuple[Hint, ...] = field(default=(), metadata=_optional(_array(_record(Hint))))
    folded_variables: tuple[Any, ...] = field(default=(), metadata=_optional(_array(_json)))
    fp16_overflow: tuple[Fp16Overflow, ...] = field(default=(), metadata=_optional(_array(_record(Fp16Overflow))))
    origin: str | None = field(default=None, compare=False)

    @classmethod
    def from_json(cls, document: Any, source: str = "<report document>") -> OptimizationReport:
        """Read a report document; `source` names it in errors. Raises PlanReadError."""
        reader = _Reader(source, None, "optimization report")
        return cls.read_json(_check_version(document, reader), reader, "", origin=source)


def load_report(path: str | os.PathLike[str]) -> OptimizationReport:
    """Read the report file at `path` (named in errors as given). Raises PlanReadError."""
    source = os.fspath(path)
    document = _read_json_file(path, _Reader(source, None, "optimization report"))
    return OptimizationReport.from_json(document, source)
