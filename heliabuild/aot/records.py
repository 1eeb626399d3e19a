"""Typed records of heliaAOT-format optimization plans and reports, read by the document's rules.

`OptimizationPlan` and `OptimizationReport` (frozen dataclasses of small
nested records) read `<prefix>_plan.json` and `<prefix>_report.json` as the
plan document's "Schema versions" section asks (docs/aot-plan.md, "Plan and
report schemas"):

- a field a record does not know is ignored;
- a knob, knob value or enum member it does not know is kept as the string
  written (known ones are `StrEnum` members, which compare equal to their
  strings);
- only `schema_version` other than 1 is a rejection by version (a
  `PlanReadError` naming the file and both versions); a known field of the
  wrong JSON type or a missing required field is a `PlanReadError` naming the
  field path;
- `platform.core` (heliaAOT 0.30 and earlier) reads as `platform.cpu`;
- under `context=APPLIED` (a plan read as input with `optimization.plan`), an
  unknown field under `schedule`, `schedule.pool` or `schedule.units[i]` is
  rejected with the document's message and hint, and every read error starts
  `optimization.plan <path> is not an optimization plan this release reads:`.

`to_json()` writes back every field the record knows: a known field absent
from the file reads as its default and stays absent, so for a plan heliabuild
wrote (or any file without unknown fields, save `core`)
`to_json(from_json(document)) == document`.

The plan's `schedule` section reuses the records of `heliabuild.aot.schedule`
(`Schedule`, `SchedulePool`, `Unit`); a unit's derived fields that the file does
not state are None and are not written back. This module is the one reader of
that section (`read_schedule` reads it alone); `Schedule.to_json` (through
`dump_schedule`) is its one writer.

The parts live in their own modules: the dataclass/JSON binding (heliabuild.aot.binding), the enumerations
(heliabuild.aot.enums), the plan's records (heliabuild.aot.plan_records) and the report's
(heliabuild.aot.report_records); every name of them is importable from here, the reader API.

Readers do not validate against the JSON Schemas: `validate_plan_document` and
`validate_report_document` check a document against `schemas/plan-schema.json`
and `schemas/report-schema.json`, which list exactly what heliabuild writes.
"""

from __future__ import annotations

from typing import Any

from heliabuild.aot.binding import APPLIED, SCHEMA_VERSION, ValidationContext, known_member
from heliabuild.aot.enums import (
    KNOB_VALUES,
    AccumulationValue,
    Engine,
    Goal,
    HintKind,
    IdSource,
    KernelValue,
    KnobName,
    Requantization,
    Residency,
    ResolvedBy,
    ScheduleSource,
    SetBy,
    SourceKind,
)
from heliabuild.aot.plan_records import (
    APPLIED_UNKNOWN_HINT,
    FixedChoice,
    KernelChoice,
    KnobChoice,
    KnobRule,
    KnobSource,
    OptimizationPlan,
    PlanGenerator,
    PlanModel,
    PlanOperator,
    PlanOptimization,
    PlanPlatform,
    PlanTensor,
    dump_schedule,
    load_plan,
    read_schedule,
)
from heliabuild.aot.report_records import (
    ConstantFact,
    Fp16Overflow,
    Hint,
    KernelCalls,
    KnobAlternative,
    OptimizationReport,
    ReportKernelCall,
    ReportKnob,
    ReportOperator,
    ReportSpan,
    ReportStreamPool,
    load_report,
)
from heliabuild.errors import SchemaError

PLAN_SCHEMA_FILE = "plan-schema.json"


REPORT_SCHEMA_FILE = "report-schema.json"


def load_json_schema(file_name: str) -> dict[str, Any]:
    """The schema `schemas/<file_name>` as shipped with the package (PLAN_SCHEMA_FILE, REPORT_SCHEMA_FILE)."""
    from heliabuild.schema_files import load_schema_file

    return load_schema_file(file_name)


def _validate(document: Any, file_name: str, source: str) -> None:
    from heliabuild.schema_files import first_error

    error = first_error(document, file_name)
    if error is not None:
        where = "/".join(str(part) for part in error.absolute_path) or "(top level)"
        raise SchemaError(f"{source}: {where}: {error.message} (schema {file_name})")


def validate_plan_document(document: Any, source: str = "<plan document>") -> None:
    """Raise SchemaError naming `source` and the first failing field unless `document` validates against
    `schemas/plan-schema.json` (what heliabuild writes)."""
    _validate(document, PLAN_SCHEMA_FILE, source)


def validate_report_document(document: Any, source: str = "<report document>") -> None:
    """Raise SchemaError naming `source` and the first failing field unless `document` validates against
    `schemas/report-schema.json` (what heliabuild writes)."""
    _validate(document, REPORT_SCHEMA_FILE, source)


__all__ = [
    "APPLIED",
    "APPLIED_UNKNOWN_HINT",
    "KNOB_VALUES",
    "PLAN_SCHEMA_FILE",
    "REPORT_SCHEMA_FILE",
    "SCHEMA_VERSION",
    "AccumulationValue",
    "ConstantFact",
    "Engine",
    "FixedChoice",
    "Fp16Overflow",
    "Goal",
    "Hint",
    "HintKind",
    "IdSource",
    "KernelCalls",
    "KernelChoice",
    "KernelValue",
    "KnobAlternative",
    "KnobChoice",
    "KnobName",
    "KnobRule",
    "KnobSource",
    "OptimizationPlan",
    "OptimizationReport",
    "PlanGenerator",
    "PlanModel",
    "PlanOperator",
    "PlanOptimization",
    "PlanPlatform",
    "PlanTensor",
    "ReportKernelCall",
    "ReportKnob",
    "ReportOperator",
    "ReportSpan",
    "ReportStreamPool",
    "Requantization",
    "Residency",
    "ResolvedBy",
    "ScheduleSource",
    "SetBy",
    "SourceKind",
    "ValidationContext",
    "dump_schedule",
    "known_member",
    "load_json_schema",
    "load_plan",
    "load_report",
    "read_schedule",
    "validate_plan_document",
    "validate_report_document",
]
