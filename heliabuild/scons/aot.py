"""The HeliaAotPlan builder: the AOT plan and report of a model for a platform (docs/scons.md, "HeliaAotPlan").

    env.HeliaAotPlan('build/kws_plan.json', 'build/kws_fenced_vela.tflite', HELIA_AOT_PLATFORM='corstone300_ethos_u55')
    env.HeliaAotPlan('build/kws_plan.json', ['build/kws_fenced_vela.tflite', 'build/kws_fenced_per-layer.csv'],
                     HELIA_AOT_CONFIG='aot.yaml')

Contract:

- Sources: the `.tflite` model (normally Vela's output), then optionally Vela's per-layer CSV of it.
- Targets: `<prefix>_plan.json` (given; its name is the module prefix, which HELIA_AOT_PREFIX must agree
  with) and `<prefix>_report.json` beside it, written by heliabuild.aot.stage.write_plan, both or neither.
- Options: HELIA_AOT_PLATFORM, HELIA_AOT_PREFIX, HELIA_AOT_CONFIG (a file or a mapping) and
  HELIA_AOT_INPUT_PLAN (defaults in DEFAULTS) go into one Value node with the platform's table entry; the
  configuration file and the input plan are dependencies.
- Prints `$HELIA_AOTPLANCOMSTR` and the conversion's warnings once per SCons run; a HeliaError is one
  `heliabuild: error:` line and leaves neither target.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import Any

from SCons.Builder import Builder
from SCons.Environment import Base as Environment
from SCons.Node import Node

from heliabuild.aot.shipped import platform_entries
from heliabuild.documents import parse_json, parse_yaml, read_text
from heliabuild.errors import HeliaError
from heliabuild.scons.leftovers import remove_leftovers
from heliabuild.scons.messages import configuration_error, node_path, stage_comstr, stage_failed, stage_warnings
from heliabuild.scons.progress import stage_action
from heliabuild.scons.signatures import add_stage_dependencies

BUILDER_NAME = "HeliaAotPlan"
STAGE = "aot-plan"
PLATFORM = "HELIA_AOT_PLATFORM"
PREFIX = "HELIA_AOT_PREFIX"
CONFIG = "HELIA_AOT_CONFIG"
INPUT_PLAN = "HELIA_AOT_INPUT_PLAN"
COMSTR = "HELIA_AOTPLANCOMSTR"
DEFAULT_PLATFORM = "corstone300_ethos_u55"
MODEL_SUFFIX = ".tflite"
CSV_SUFFIX = ".csv"
AOT_PLAN_SUFFIX = "_plan.json"
REPORT_SUFFIX = "_report.json"
YAML_SUFFIXES = (".yaml", ".yml")

DEFAULTS: dict[str, object] = {
    PLATFORM: DEFAULT_PLATFORM,
    PREFIX: None,
    CONFIG: None,
    INPUT_PLAN: None,
    COMSTR: stage_comstr(STAGE),
}
"""Construction variables the tool sets with env.SetDefault."""

_REQUEST = "helia_aot_request"
"""Attribute of the first target's `attributes`: what the action needs, resolved by the emitter."""


def is_c_identifier(text: str) -> bool:
    return bool(text) and (text[0].isalpha() or text[0] == "_") and all(c.isalnum() or c == "_" for c in text)


def _platform_entry(name: object, target: Node) -> dict[str, Any]:
    """The platform's entry in heliabuild's table (read without validating: the action validates; the table
    is package data, and upgrading heliabuild, which is in every signature, is what changes it)."""
    table = platform_entries()
    if not isinstance(name, str) or name not in table:
        raise configuration_error(
            BUILDER_NAME, target, f"{PLATFORM} is {name!r}; expected one of {', '.join(sorted(table))}"
        )
    return table[name]


def _file(env: Environment, value: object, name: str, target: Node, example: str) -> Node | None:
    if value is None:
        return None
    if isinstance(value, str | Node):
        return env.File(value)
    raise configuration_error(BUILDER_NAME, target, f"{name} is {value!r}; expected None or a path, e.g. {example}")


def _plan_named_by(config: Node) -> str | None:
    """The absolute `optimization.plan` a configuration file in the source tree names, or None.

    Read while the SConscripts are read, so only a file that exists there (not
    one a builder makes) is looked into; a file that cannot be read is the
    action's to report.
    """
    source = config.srcnode()
    if config.has_builder() or not source.exists():
        return None
    path = source.get_abspath()
    parse = parse_yaml if path.lower().endswith(YAML_SUFFIXES) else parse_json
    try:
        document = parse(read_text(path, "configuration"), path, "configuration")
    except HeliaError:  # unreadable, not JSON or YAML, too large, nested too deep: the action reports it
        return None
    plan = document.get("optimization", {}).get("plan") if isinstance(document, Mapping) else None
    if not isinstance(plan, str) or not plan:
        return None
    return os.path.normpath(os.path.join(os.path.dirname(path), os.path.expanduser(plan)))


def _real_path(node: Node) -> str:
    """Where the file of `node` is read from: its build path when a builder makes it, else its source path
    (in a variant dir without duplication, the file in the source tree)."""
    return node.get_abspath() if node.is_derived() else node.srcnode().get_abspath()


def _inline_config(env: Environment, value: Mapping[str, Any]) -> tuple[dict[str, Any], Node | None]:
    """A configuration mapping as a document, its relative `optimization.plan` resolved where the builder is called."""
    document = json.loads(json.dumps(value))
    optimization = document.get("optimization")
    plan = optimization.get("plan") if isinstance(optimization, dict) else None
    if isinstance(plan, str) and plan:
        node = env.File(plan)
        optimization["plan"] = _real_path(node)
        return document, node
    return document, None


def aot_emitter(target: list[Node], source: list[Node], env: Environment) -> tuple[list[Node], list[Node]]:
    """Check the call, add the report target, the option Value node and the file dependencies."""
    if len(target) != 1:
        raise configuration_error(BUILDER_NAME, target, "give one target, <prefix>_plan.json; the report is added")
    plan = target[0]
    names = [node.name for node in source]
    shaped = len(names) in (1, 2) and names[0].endswith(MODEL_SUFFIX)
    if not shaped or (len(names) == 2 and not names[1].endswith(CSV_SUFFIX)):
        raise configuration_error(
            BUILDER_NAME,
            plan,
            f"sources are {[node_path(s) for s in source]}; expected the {MODEL_SUFFIX} model, "
            f"optionally followed by Vela's per-layer {CSV_SUFFIX} of it",
        )
    if not plan.name.endswith(AOT_PLAN_SUFFIX):
        raise configuration_error(BUILDER_NAME, plan, f"the target is {plan.name}; expected <prefix>{AOT_PLAN_SUFFIX}")
    prefix = plan.name[: -len(AOT_PLAN_SUFFIX)]
    given_prefix = env.get(PREFIX)
    if given_prefix is not None and given_prefix != prefix:
        raise configuration_error(
            BUILDER_NAME, plan, f"{PREFIX} is {given_prefix!r} but the target names prefix {prefix!r}; make them agree"
        )
    if not is_c_identifier(prefix):
        raise configuration_error(
            BUILDER_NAME, plan, f"module prefix {prefix!r} is not a C identifier (letters, digits and '_')"
        )
    platform = env.get(PLATFORM)
    entry = _platform_entry(platform, plan)

    dependencies: list[Node] = []
    config_value = env.get(CONFIG)
    config_path: str | None = None
    config_document: dict[str, Any] | None = None
    shown_config: object = None
    if isinstance(config_value, Mapping):
        config_document, named = _inline_config(env, config_value)
        if named is not None:
            dependencies.append(named)
            config_document_shown = json.loads(json.dumps(config_document))
            config_document_shown["optimization"]["plan"] = node_path(named)
            shown_config = config_document_shown
        else:
            shown_config = config_document
    else:
        config_node = _file(env, config_value, CONFIG, plan, "'aot.yaml'")
        if config_node is not None:
            dependencies.append(config_node)
            config_path = _real_path(config_node)
            shown_config = node_path(config_node)
            named_plan = _plan_named_by(config_node)
            if named_plan is not None:
                dependencies.append(env.File(named_plan))
    input_node = _file(env, env.get(INPUT_PLAN), INPUT_PLAN, plan, "'previous_plan.json'")
    input_plan: str | None = None
    if input_node is not None:
        dependencies.append(input_node)
        input_plan = _real_path(input_node)

    targets = [plan, plan.dir.File(f"{prefix}{REPORT_SUFFIX}")]
    setattr(
        plan.attributes,
        _REQUEST,
        {"prefix": prefix, "config_path": config_path, "config_document": config_document, "input_plan": input_plan},
    )
    options = {
        "platform": platform,
        "platform_entry": entry,
        "prefix": prefix,
        "config": shown_config,
        "input_plan": None if input_node is None else node_path(input_node),
    }
    env.Depends(targets, env.Value(f"{STAGE} options {json.dumps(options, sort_keys=True)}"))
    present = [node for node in dependencies if node.has_builder() or node.srcnode().exists()]
    if present:
        env.Depends(targets, present)
    add_stage_dependencies(env, targets)
    return targets, list(source)


def aot_action(target: list[Node], source: list[Node], env: Environment) -> int:
    """Plan `source[0]` and write `target[0]` (plan) and `target[1]` (report), both or neither.

    Returns 0, or EXIT_BAD_INPUT after printing one `heliabuild: error:`
    line for a HeliaError.
    """
    # Imported here, not at module level: reading the SConscripts must not pay for numpy and the schema.
    from heliabuild.aot.config import AotConfig, config_from_document, load_config
    from heliabuild.aot.stage import write_plan

    remove_leftovers(target)
    request = getattr(target[0].attributes, _REQUEST)
    per_layer = str(source[1]) if len(source) > 1 else None
    try:
        if request["config_path"] is not None:
            config = load_config(request["config_path"])
        elif request["config_document"] is not None:
            config = config_from_document(request["config_document"], f"{CONFIG} of {node_path(target[0])}")
        else:
            config = AotConfig()
        if request["input_plan"] is not None:
            config = config.with_plan(request["input_plan"])
        outputs = write_plan(
            str(source[0]),
            os.path.dirname(target[0].get_abspath()),
            request["prefix"],
            env[PLATFORM],
            config,
            per_layer,
        )
    except HeliaError as error:
        return stage_failed(error, target)
    written = [os.path.abspath(outputs.plan), os.path.abspath(outputs.report)]
    if written != [node.get_abspath() for node in target]:
        raise RuntimeError(f"{BUILDER_NAME}: wrote {written}, but the declared targets are {target}")
    stage_warnings(STAGE, target[0], outputs.warnings)
    return 0


def aot_builder() -> Builder:
    """A new HeliaAotPlan builder (see the module docstring for its contract)."""
    return Builder(
        action=stage_action(aot_action, COMSTR, [PLATFORM, PREFIX]),
        emitter=aot_emitter,
        suffix=AOT_PLAN_SUFFIX,
        src_suffix=MODEL_SUFFIX,
    )
