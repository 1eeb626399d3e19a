"""The AOT plan stage as a file-level step: read a model and a configuration, write the plan and the report.

    write_plan("build/kws_fenced_vela.tflite", "build", "kws", "corstone300_ethos_u55", "aot.yaml")

writes `build/kws_plan.json` and `build/kws_report.json`: both validated
against `schemas/plan-schema.json` and `schemas/report-schema.json` first,
then written as canonical JSON (`heliabuild.files.json_text`), atomically and
both or neither. A stage that fails on bad input (a HeliaError: an unreadable
model or configuration, an unknown platform, refused operators, an input plan
that does not describe this conversion) writes nothing and removes what an
earlier run of the same stage left under those names, so no stale plan
survives beside a model it does not describe.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from heliabuild.aot.config import AotConfig, as_config
from heliabuild.aot.platforms import Platform, get_platform
from heliabuild.aot.prefix import StageInputError, check_prefix
from heliabuild.documents import read_json
from heliabuild.errors import HeliaError
from heliabuild.files import json_text, remove_files, write_all_or_nothing

if TYPE_CHECKING:
    from heliabuild.model.io import Model

PLAN_SUFFIX = "_plan.json"
REPORT_SUFFIX = "_report.json"


def output_names(prefix: str) -> tuple[str, str]:
    """The file names of the plan and the report of module `prefix`."""
    return f"{prefix}{PLAN_SUFFIX}", f"{prefix}{REPORT_SUFFIX}"


def check_per_layer_binding(model: Model, per_layer: str | os.PathLike[str]) -> None:
    """StageInputError unless `per_layer` is Vela's per-layer CSV of `model`, bound by content
    (heliabuild.vela.binding.per_layer_binding_mismatch, whose message it carries)."""
    from heliabuild.vela.binding import per_layer_binding_mismatch

    mismatch = per_layer_binding_mismatch(model, per_layer)
    if mismatch is not None:
        raise StageInputError(mismatch, hint="pass the per-layer CSV Vela wrote with this model")


@dataclass(frozen=True)
class PlanOutputs:
    """What write_plan wrote: the two files, and the warnings of the conversion (one sentence each)."""

    plan: Path
    report: Path
    warnings: tuple[str, ...]


def write_plan(
    model_path: str | os.PathLike[str],
    out_dir: str | os.PathLike[str],
    prefix: str,
    platform: str | Platform,
    config: AotConfig | Mapping[str, Any] | str | os.PathLike[str] | None = None,
    vela_per_layer: str | os.PathLike[str] | None = None,
) -> PlanOutputs:
    """Plan `model_path` for `platform` and write `<out_dir>/<prefix>_plan.json` and `_report.json`.

    `config` is an AotConfig, a configuration document, a YAML/JSON file or
    None (the defaults); `vela_per_layer` Vela's per-layer CSV of the model,
    for the report's measurements, which must be bound to the model
    (check_per_layer_binding). Raises HeliaError for bad input, after
    removing an earlier plan and report at the output names, when they are
    recognisably heliabuild's (they validate against their schemas); a
    prefix that is not a C identifier names no output, and is refused before
    anything else.
    """
    from heliabuild.aot.planner import make_plan
    from heliabuild.aot.records import validate_plan_document, validate_report_document
    from heliabuild.model import load_model

    folder = Path(out_dir)
    plan_name, report_name = output_names(check_prefix(prefix))
    plan_path, report_path = folder / plan_name, folder / report_name
    try:
        resolved_platform = get_platform(platform)
        resolved_config = as_config(config)
        model = load_model(model_path)
        if vela_per_layer is not None:
            check_per_layer_binding(model, vela_per_layer)
        result = make_plan(
            model,
            resolved_platform,
            resolved_config,
            module_prefix=prefix,
            vela_per_layer=vela_per_layer,
        )
        validate_plan_document(result.plan, str(plan_path))
        validate_report_document(result.report, str(report_path))
        write_all_or_nothing(
            {
                plan_path: json_text(result.plan).encode("utf-8"),
                report_path: json_text(result.report).encode("utf-8"),
            }
        )
    except HeliaError:
        # No stale-but-plausible plan or report of an earlier run is left behind, but only a file that is
        # recognisably one (it validates against its schema) is removed: anything else is the user's.
        checks = ((plan_path, validate_plan_document), (report_path, validate_report_document))
        remove_files(path for path, check in checks if _is_earlier_output(path, check))
        raise
    return PlanOutputs(plan=plan_path, report=report_path, warnings=result.warnings)


def _is_earlier_output(path: Path, check: Callable[[Any, str], None]) -> bool:
    """Whether `path` is a file heliabuild wrote: JSON that `check` (its schema's validator) accepts."""
    try:
        check(read_json(path, "earlier output"), str(path))
    except HeliaError:
        return False
    return True
