"""The HeliaRunner and HeliaRun builders: a runner folder from a fenced model, and its result bundle.

    env.HeliaRunner('runner/kws/runner.json',
                    ['kws_fenced.tflite', 'kws_fenced.fenced_boundaries.json', 'kws_fenced_vela.tflite',
                     'kws_fenced_segments.json', 'kws_plan.json'], HELIA_POLICY='policy.yaml')
    env.HeliaRun('results/kws/result.json', 'runner/kws/runner.json')

Contract (docs/scons.md, "HeliaRunner" and "HeliaRun"; docs/runner.md):

- HeliaRunner: sources the model to run first, then any of SOURCE_KINDS once each, all dependencies by
  content; targets `<dir>/runner.json` (given) and the files heliabuild.runner.freeze.build_runner copies
  beside it. HELIA_POLICY (None, a policy file, a dependency with the input files it names, or a mapping)
  and HELIA_BACKEND (with the fvp options of heliabuild.scons.fvp; qemu-m55 adds the firmware link) are
  dependencies.
- HeliaRun: source one runner.json; targets the bundle's `result.json` (given) and the files it always
  holds; the bundle folder is env.Clean'ed, never cached, and Precious; result.json's integrity check
  verifies the whole bundle, and a damaged bundle is moved aside whole before the run.
- Both print `$HELIA_RUNNERCOMSTR` / `$HELIA_RUNCOMSTR`; a HeliaError is one `heliabuild: error:` line and
  leaves no output of the stage (a failed run removes an earlier bundle that verifies, and nothing else).
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from SCons.Builder import Builder
from SCons.Environment import Base as Environment
from SCons.Node import Node

from heliabuild.errors import HeliaError
from heliabuild.runner.policy import scan_policy_file, scanned_executes, scanned_inputs
from heliabuild.scons.aot import PLATFORM
from heliabuild.scons.fvp import (
    ETHOSU_DRIVER_DIR,
    FVP_BACKEND,
    FVP_FIRMWARE,
    FVP_TIMELIMIT,
    fvp_nodes,
)
from heliabuild.scons.integrity import as_stored, set_verifier
from heliabuild.scons.leftovers import remove_leftovers
from heliabuild.scons.messages import configuration_error, node_path, stage_comstr, stage_failed, stage_warnings
from heliabuild.scons.progress import stage_action
from heliabuild.scons.signatures import add_stage_dependencies

if TYPE_CHECKING:
    from heliabuild.results.summary import BundleFacts

RUNNER_BUILDER_NAME = "HeliaRunner"
RUN_BUILDER_NAME = "HeliaRun"
RUNNER_STAGE = "runner"
RUN_STAGE = "run"
POLICY = "HELIA_POLICY"
BACKEND = "HELIA_BACKEND"
RUNNER_COMSTR = "HELIA_RUNNERCOMSTR"
RUN_COMSTR = "HELIA_RUNCOMSTR"
DEFAULT_BACKEND = "litert"

# heliabuild.runner.freeze and heliabuild.results.bundle names, restated so that reading the SConscripts
# imports neither (tests check they agree).
RUNNER_FILE = "runner.json"
MODEL_FILE = "model.tflite"
SIDECAR_FILE = "model.fenced_boundaries.json"
SEGMENTS_FILE = "segments.json"
INPUTS_DIR = "inputs"
RESULT_FILE = "result.json"
MANIFEST_FILE = "manifest.json"
SUMMARY_FILE = "run_summary.csv"
RECEIPT_FILE = "artifacts/acquisition.json"
QEMU_BACKEND = "qemu-m55"
FIRMWARE_FILE = "firmware.elf"
LAYOUT_FILE = "firmware_layout.json"
CONFIG_SOURCE = "helia_firmware.c"
PREVIOUS_SUFFIX = ".previous"
"""The library keeps the bundle a rerun replaced beside it, as `<bundle>.previous/`; `scons -c` removes it."""

MODEL_SUFFIX = ".tflite"
SOURCE_KINDS = (
    ("sidecar", ".fenced_boundaries.json"),
    ("vela_model", "_vela.tflite"),
    ("segments", "_segments.json"),
    ("aot_plan", "_plan.json"),
    ("firmware_module", "_model.c"),
)
"""build_runner keyword -> the file-name ending that identifies a further HeliaRunner source."""

DEFAULTS: dict[str, object] = {
    POLICY: None,
    BACKEND: DEFAULT_BACKEND,
    FVP_FIRMWARE: "prebuilt",
    FVP_TIMELIMIT: None,
    ETHOSU_DRIVER_DIR: None,
    RUNNER_COMSTR: stage_comstr(RUNNER_STAGE),
    RUN_COMSTR: stage_comstr(RUN_STAGE),
}
"""Construction variables the tool sets with env.SetDefault."""

_REQUEST = "helia_runner_request"
"""Attribute of runner.json's `attributes`: what the action needs, resolved by the emitter."""
_VERIFIED = "helia_verified_bundle"
"""Attribute of result.json's `attributes`: (its node info, the summary facts of the bundle it verified)."""
_EXECUTES = "helia_runner_executes"
"""Attribute of runner.json's `attributes`: whether its policy executes (HeliaRun's emitter reads it)."""


def _real_path(node: Node) -> str:
    """Where the file of `node` is read from, relative to the top folder (the folder actions run in), as
    error messages name it: its build path when built, else its place in the source tree."""
    return node_path(node)


def _classify(source: Sequence[Node], target: Node) -> dict[str, Node]:
    names = [node_path(node) for node in source]
    if not source or not source[0].name.endswith(MODEL_SUFFIX) or source[0].name.endswith("_vela.tflite"):
        raise configuration_error(
            RUNNER_BUILDER_NAME,
            target,
            f"sources are {names}; expected the {MODEL_SUFFIX} model to run first (the fenced model, not Vela's)",
        )
    found: dict[str, Node] = {"model": source[0]}
    for node in source[1:]:
        kind = next((kind for kind, ending in SOURCE_KINDS if node.name.endswith(ending)), None)
        if kind is None:
            endings = ", ".join(f"*{ending}" for _, ending in SOURCE_KINDS)
            raise configuration_error(
                RUNNER_BUILDER_NAME, target, f"source {node_path(node)} is none of {endings} (sources are {names})"
            )
        if kind in found:
            raise configuration_error(RUNNER_BUILDER_NAME, target, f"two {kind} sources given (sources are {names})")
        found[kind] = node
    return found


def runner_emitter(target: list[Node], source: list[Node], env: Environment) -> tuple[list[Node], list[Node]]:
    """Check the call, add the copied files as targets and the policy as a dependency."""
    if len(target) != 1 or target[0].name != RUNNER_FILE:
        raise configuration_error(
            RUNNER_BUILDER_NAME, target, f"give one target, <folder>/{RUNNER_FILE}; the files it names are added"
        )
    runner_json = target[0]
    kinds = _classify(source, runner_json)
    backend = env.get(BACKEND)
    if not isinstance(backend, str) or not backend:
        raise configuration_error(RUNNER_BUILDER_NAME, runner_json, f"{BACKEND} is {backend!r}; expected 'litert'")
    folder = runner_json.dir
    targets = [runner_json, folder.File(MODEL_FILE)]
    if "sidecar" in kinds:
        targets.append(folder.File(SIDECAR_FILE))
    if "segments" in kinds:
        targets.append(folder.File(SEGMENTS_FILE))

    dependencies: list[Node] = []
    value = env.get(POLICY)
    request: dict[str, Any] = {"policy_path": None, "policy_document": None}
    document: Any = None
    shown: object = None
    inputs: list[tuple[int, Node]] = []
    if isinstance(value, Mapping):
        document = json.loads(json.dumps(value))
        shown = json.loads(json.dumps(value))
        for entry, shown_entry in zip(scanned_inputs(document), scanned_inputs(shown), strict=True):
            node = env.File(entry["file"])
            inputs.append((entry["index"], node))
            entry["file"] = _real_path(node)  # for the action: relative to the calling SConscript's folder
            shown_entry["file"] = node_path(node)  # for the signature: no absolute path
        request["policy_document"] = document
    elif isinstance(value, str | Node):
        policy_node = env.File(value)
        dependencies.append(policy_node)
        request["policy_path"] = _real_path(policy_node)
        shown = node_path(policy_node)
        if not policy_node.has_builder() and policy_node.srcnode().exists():
            document = scan_policy_file(policy_node.srcnode().get_abspath())
            for entry in scanned_inputs(document):
                inputs.append((entry["index"], policy_node.srcnode().dir.File(entry["file"])))
    elif value is not None:
        raise configuration_error(
            RUNNER_BUILDER_NAME, runner_json, f"{POLICY} is {value!r}; expected None, a policy file or a mapping"
        )
    for index, node in sorted(inputs, key=lambda item: item[0]):
        dependencies.append(node)
        targets.append(folder.File(f"{INPUTS_DIR}/input_{index}.bin"))

    # Only a regular file is a dependency: SCons would block hashing a FIFO or read a device forever; the
    # action refuses such an input file with the policy's own message.
    present = [node for node in dependencies if node.has_builder() or os.path.isfile(node.srcnode().get_abspath())]
    request["shown"] = json.dumps(shown, sort_keys=True)
    options: tuple[str, ...] = (BACKEND,)
    if backend == QEMU_BACKEND:
        targets += _firmware_nodes(env, runner_json, kinds, request, present)
    if backend == FVP_BACKEND:
        targets += fvp_nodes(env, runner_json, kinds, request)
        options += (PLATFORM, FVP_FIRMWARE, FVP_TIMELIMIT)
    request["sources"] = {kind: _real_path(node) for kind, node in kinds.items()}
    setattr(runner_json.attributes, _REQUEST, request)
    setattr(runner_json.attributes, _EXECUTES, scanned_executes(document))
    env.Depends(targets, env.Value(f"{RUNNER_STAGE} policy {request['shown']}"))
    if present:
        env.Depends(targets, present)
    add_stage_dependencies(env, targets, options=options)
    return targets, list(source)


def _firmware_folder(runner_json: Node) -> Node:
    """Where the qemu-m55 firmware of a runner is built: beside the runner folder, `<folder>.firmware/`."""
    return runner_json.dir.up().Dir(f"{runner_json.dir.name}.firmware")


def _firmware_nodes(
    env: Environment, runner_json: Node, kinds: dict[str, Node], request: dict[str, Any], policy: list[Node]
) -> list[Node]:
    """The qemu-m55 firmware of a runner: its policy source (generated from the policy, as the runner build
    freezes it), linked with the generated module and the shared firmware library into `firmware.elf`;
    runner.json depends on the ELF and copies it. Returns the runner folder's extra targets."""
    from heliabuild.scons import firmware

    module = kinds.get("firmware_module")
    if module is None or "aot_plan" not in kinds:
        raise configuration_error(
            RUNNER_BUILDER_NAME,
            runner_json,
            "backend qemu-m55 needs the AOT plan and the generated module (<prefix>_model.c) among the sources",
        )
    folder = _firmware_folder(runner_json)
    config = env.Command(
        folder.File(CONFIG_SOURCE),
        [kinds["model"], *policy],
        stage_action(_firmware_config_action, firmware.FIRMWARE_COMSTR),
    )[0]
    setattr(config.attributes, _REQUEST, request)
    env.Depends(config, env.Value(f"{RUNNER_STAGE} firmware policy {request.get('shown')}"))
    add_stage_dependencies(env, [config])
    elf = firmware.link_firmware(env, folder.File(FIRMWARE_FILE), [module, config], firmware.firmware_library(env))
    layout = module.dir.File(module.name.removesuffix("_model.c") + "_layout.json")
    request["firmware"] = {"elf": _real_path(elf), "layout": _real_path(layout)}
    env.Depends(runner_json, [elf, layout])
    return [runner_json.dir.File(FIRMWARE_FILE), runner_json.dir.File(LAYOUT_FILE)]


def _firmware_config_action(target: list[Node], source: list[Node], env: Environment) -> int:
    """Write `helia_firmware.c`: the runner's policy frozen as build_runner freezes it (heliabuild.runner.freeze)."""
    from heliabuild.files import write_atomic
    from heliabuild.runner.freeze import firmware_config

    request = getattr(target[0].attributes, _REQUEST)
    policy = request["policy_path"] if request["policy_path"] is not None else request["policy_document"]
    try:
        prefix = env.subst("$HELIA_FIRMWARE_PREFIX") or "model"
        write_atomic(target[0].get_abspath(), firmware_config(source[0].get_abspath(), policy, prefix))
    except HeliaError as error:
        return stage_failed(error, target)
    return 0


def runner_action(target: list[Node], source: list[Node], env: Environment) -> int:
    """Build the runner folder of `target[0]` with heliabuild.runner.freeze.build_runner."""
    from heliabuild.runner.freeze import build_runner

    remove_leftovers(target)
    folder = os.path.dirname(target[0].get_abspath())
    # SCons made the empty `fvp/` and `inputs/` of the targets; build_runner wants a new or empty runner folder
    _remove_target_folders([node for node in target if os.path.dirname(node.get_abspath()) != folder])
    request = getattr(target[0].attributes, _REQUEST)
    policy = request["policy_path"] if request["policy_path"] is not None else request["policy_document"]
    sources = request["sources"]
    try:
        built = None
        if "firmware" in request:
            from heliabuild.runner.firmware import firmware_from_files

            built = firmware_from_files(sources["model"], request["firmware"]["elf"], request["firmware"]["layout"])
        written = build_runner(
            os.path.dirname(target[0].get_abspath()),
            model=sources["model"],
            policy=policy,
            sidecar=sources.get("sidecar"),
            vela_model=sources.get("vela_model"),
            segments=sources.get("segments"),
            aot_plan=sources.get("aot_plan"),
            backend=env[BACKEND],
            firmware=built,
            fvp_target=request.get("fvp", {}).get("target"),
            fvp_timelimit_s=request.get("fvp", {}).get("timelimit_s"),
            fvp_firmware=request.get("fvp", {}).get("firmware", "prebuilt"),
            ethosu_driver_dir=request.get("fvp", {}).get("driver_dir"),
            firmware_library=request.get("fvp", {}).get("library"),
        )
    except HeliaError as error:
        return stage_failed(error, target)
    if os.path.abspath(written) != target[0].get_abspath():
        raise RuntimeError(f"{RUNNER_BUILDER_NAME}: wrote {written}, but the declared target is {target[0]}")
    return 0


def _runner_executes(runner_json: Node) -> bool:
    """Whether the runner's policy executes: from HeliaRunner's emitter, else from the file, else True."""
    known = getattr(runner_json.attributes, _EXECUTES, None)
    if known is not None:
        return bool(known)
    from heliabuild.runner.record import read_runner_record

    path = _real_path(runner_json)
    with contextlib.suppress(HeliaError):  # unreadable or no valid runner.json: running it reports why
        record, _ = read_runner_record(path)
        return record.policy.fvp_enabled
    return True


def run_emitter(target: list[Node], source: list[Node], env: Environment) -> tuple[list[Node], list[Node]]:
    """Check the call; declare the bundle's fixed files; clean (and never cache) the whole bundle folder."""
    if len(target) != 1 or target[0].name != RESULT_FILE:
        raise configuration_error(
            RUN_BUILDER_NAME, target, f"give one target, <bundle folder>/{RESULT_FILE}; the other files are added"
        )
    result = target[0]
    if len(source) != 1 or source[0].name != RUNNER_FILE:
        raise configuration_error(
            RUN_BUILDER_NAME, result, f"sources are {[node_path(s) for s in source]}; expected one {RUNNER_FILE}"
        )
    folder = result.dir
    names = [MANIFEST_FILE, *((SUMMARY_FILE, RECEIPT_FILE) if _runner_executes(source[0]) else ())]
    targets = [result, *(folder.File(name) for name in names)]
    env.Clean(targets, [folder, folder.up().Dir(f"{folder.name}{PREVIOUS_SUFFIX}")])
    env.NoCache(targets)
    env.Precious(targets)  # the library replaces an earlier bundle only whole, when it verifies
    set_verifier(result, _bundle_verifies)
    add_stage_dependencies(env, targets)
    return targets, list(source)


def _bundle_verifies(result: Node) -> bool:
    """Whether the bundle folder of `result` verifies against its manifest (heliabuild.results.reader). The
    verified bundle's summary row facts are kept with the target's node info, for the summary table
    (verified_result), so the table does not verify every bundle again.

    result.json and manifest.json whose bytes are the ones SCons stored when the run stage wrote them (which
    heliabuild validated before writing) are not validated against their schemas again: at a no-op that
    leaves jsonschema-rs unimported. Every other check of the bundle runs."""
    from heliabuild.results.reader import verify_bundle
    from heliabuild.results.summary import bundle_facts

    folder = result.dir
    known_valid = frozenset(name for name in (RESULT_FILE, MANIFEST_FILE) if as_stored(folder.File(name)))
    try:
        facts = bundle_facts(verify_bundle(folder.get_abspath(), known_valid=known_valid))
    except HeliaError:
        return False
    setattr(result.attributes, _VERIFIED, (result.get_ninfo(), facts))
    return True


def verified_result(result: Node) -> BundleFacts | None:
    """heliabuild.results.summary.bundle_facts of the bundle of `result` as the integrity check verified it in
    this run, or None when it did not, or did so before SCons rebuilt the target (SCons replaces the node info
    of a target it builds, and checks the new target again)."""
    known = getattr(result.attributes, _VERIFIED, None)
    return known[1] if known is not None and known[0] is result.get_ninfo() else None


def _remove_target_folders(targets: Sequence[Node]) -> None:
    """Remove the folders of `targets` (the bundle folder, `artifacts/`) while they are empty, deepest first.

    SCons makes a target's folder before its action runs, and the library
    writes a bundle only into a new or empty folder or over an earlier bundle.
    """
    folders = {os.path.dirname(node.get_abspath()) for node in targets}
    for folder in sorted(folders, key=len, reverse=True):
        with contextlib.suppress(OSError):
            os.rmdir(folder)


def run_action(target: list[Node], source: list[Node], env: Environment) -> int:
    """Run the runner and publish its bundle into the folder of `target[0]`.

    An earlier bundle there (or at `<folder>.previous`) that no longer
    verifies (a file of it altered) is moved aside whole first
    (_move_damaged_bundles_aside), so it blocks no build; a folder that holds
    anything else is refused before the run, and left as it is; on any
    failure an earlier bundle that verifies is removed, so no stale bundle
    stays behind.
    """
    from heliabuild.results.bundle import check_bundle_target, discard_bundle
    from heliabuild.scons.executor import run_bundle, run_failed

    folder = os.path.dirname(target[0].get_abspath())
    _remove_target_folders(target)
    try:
        _move_damaged_bundles_aside(folder, target[0])
        check_bundle_target(folder)  # before measuring: a folder of anything else is refused, not replaced
        written = run_bundle(_real_path(source[0]), folder)
    except HeliaError as error:
        discard_bundle(folder)  # an earlier bundle it may replace; never a folder of anything else
        return run_failed(error)
    except KeyboardInterrupt:  # Ctrl-C (heliabuild.scons.interrupt): as a failure, nothing published
        discard_bundle(folder)
        raise
    missing = [str(node) for node in target if not os.path.isfile(node.get_abspath())]
    if os.path.abspath(written) != target[0].get_abspath() or missing:
        raise RuntimeError(f"{RUN_BUILDER_NAME}: wrote {written}; declared targets missing: {missing}")
    return 0


DAMAGED_SUFFIX = ".damaged-"
"""A bundle that no longer verifies is renamed to the sibling `<name>.damaged-<n>` (the first n free, from 1)."""


def _move_damaged_bundles_aside(folder: str, result: Node) -> None:
    """Rename the bundle at `folder`, and the one at `<folder>.previous`, to `<name>.damaged-<n>` when it is
    a bundle (a real folder holding result.json and manifest.json) that does not verify, every byte kept, and
    say so in one warning naming both folders. Anything else is left for check_bundle_target to judge."""
    from SCons.Script import Dir

    from heliabuild.results.bundle import previous_path
    from heliabuild.results.reader import verify_bundle

    top = Dir("#").get_abspath()
    for bundle in (Path(folder), previous_path(folder)):
        if bundle.is_symlink() or not (bundle / RESULT_FILE).is_file() or not (bundle / MANIFEST_FILE).is_file():
            continue
        try:
            verify_bundle(bundle)
            continue
        except HeliaError as error:
            problem = error.message
        number = 1
        while os.path.lexists(f"{bundle}{DAMAGED_SUFFIX}{number}"):
            number += 1
        aside = Path(f"{bundle}{DAMAGED_SUFFIX}{number}")
        try:
            os.rename(bundle, aside)
        except OSError as failure:
            raise HeliaError(
                f"{bundle}: did not verify as a result bundle ({problem}), and cannot be moved aside to {aside}: "
                f"{failure.strerror or failure}"
            ) from None
        stage_warnings(
            "run",
            result,
            [
                f"{os.path.relpath(bundle, top)} did not verify as a result bundle ({problem}); moved it aside "
                f"whole to {os.path.relpath(aside, top)} and ran again"
            ],
        )


def runner_builder() -> Builder:
    """A new HeliaRunner builder (see the module docstring for its contract)."""
    return Builder(
        action=stage_action(runner_action, RUNNER_COMSTR, [BACKEND]),
        emitter=runner_emitter,
        src_suffix=MODEL_SUFFIX,
    )


def run_builder() -> Builder:
    """A new HeliaRun builder (see the module docstring for its contract)."""
    return Builder(action=stage_action(run_action, RUN_COMSTR), emitter=run_emitter, single_source=True)
