"""The fvp backend's part of the HeliaRunner builder (heliabuild.scons.runner; docs/scons.md, "The fvp backend").

`fvp_nodes(env, runner_json, kinds, request)` checks an fvp runner's call when the SConscripts are read and
returns its extra targets: the runner's copy of Vela's compiled model (`fvp/model_vela.tflite`, from which the
run stage cuts the prebuilt runner's per-segment jobs) or the AOT firmware's ELF and layout
(`HELIA_FVP_FIRMWARE='aot'`). Neither depends on the segment count, which is not known before the fence stage
has run (a cycle budget, a fence plan that is itself built). It puts into `request` what the action passes
build_runner: the FVP target of `HELIA_AOT_PLATFORM`, the time limit, the firmware, and for the AOT firmware the
driver folder and the shared corstone300 firmware library (a node of heliabuild.scons.firmware).
"""

from __future__ import annotations

from typing import Any

from SCons.Environment import Base as Environment
from SCons.Node import Node

from heliabuild.errors import HeliaError
from heliabuild.runner.backends import FVP_FIRMWARES
from heliabuild.scons.aot import PLATFORM
from heliabuild.scons.leftovers import clean_earlier
from heliabuild.scons.messages import configuration_error, node_path
from heliabuild.targets import table

BUILDER = "HeliaRunner"
STAGE = "runner"
FVP_BACKEND = "fvp"
FVP_FIRMWARE = "HELIA_FVP_FIRMWARE"
FVP_TIMELIMIT = "HELIA_FVP_TIMELIMIT"
ETHOSU_DRIVER_DIR = "HELIA_ETHOSU_DRIVER_DIR"
AOT_TARGET = table().fvp_firmware_machines()[0].name
AOT_FILES = ("fvp/firmware.elf", "fvp/firmware_layout.json")
COMPILED_FILE = "fvp/model_vela.tflite"
"""heliabuild.runner.backends.fvp_prebuilt.COMPILED_FILE, restated so that reading the SConscripts does not
import it (a test checks they agree)."""
FVP_PACKAGE = "mlia-ethos-u"
EARLIER_SEGMENTS = "segment_*.tflite"
"""The per-segment sub-models an earlier heliabuild wrote into `fvp/`; `scons -c` removes them too."""


def _aot_nodes(
    env: Environment, runner_json: Node, kinds: dict[str, Node], request: dict[str, Any], platform: str
) -> list[Node]:
    """The AOT firmware's files of an fvp runner (fvp/firmware.elf and its layout); the runner depends on the
    shared firmware library of target corstone300 (a node of heliabuild.scons.firmware) and on every file of
    the Ethos-U driver. A missing or incomplete driver folder is a UserError naming what is missing."""
    from heliabuild.errors import FvpError
    from heliabuild.firmware.driver import find_driver
    from heliabuild.fvp.aot_firmware import check_platform
    from heliabuild.fvp.targets import platform_npu
    from heliabuild.scons import firmware

    if "aot_plan" not in kinds:
        raise configuration_error(
            BUILDER, runner_json, f"{FVP_FIRMWARE}='aot' needs the AOT plan (*_plan.json) of Vela's model"
        )
    try:
        check_platform(request["fvp"]["target"], f"{PLATFORM}={platform!r}")
        driver = find_driver(env.get(ETHOSU_DRIVER_DIR), str(platform_npu(platform)), BUILDER)
    except (FvpError, HeliaError) as error:
        raise configuration_error(BUILDER, runner_json, error.message) from None
    library = firmware.firmware_library(env, AOT_TARGET)
    request["fvp"]["driver_dir"] = str(driver.folder)
    request["fvp"]["library"] = node_path(library)
    env.Depends(runner_json, [library, *(env.File(str(path)) for path in driver.files)])
    return [runner_json.dir.File(name) for name in AOT_FILES]


def fvp_nodes(env: Environment, runner_json: Node, kinds: dict[str, Node], request: dict[str, Any]) -> list[Node]:
    """The fvp runner's extra targets (`fvp/model_vela.tflite`, or the AOT firmware's files) and what the
    action passes build_runner: the FVP target of HELIA_AOT_PLATFORM and the time limit."""
    from importlib import metadata

    from heliabuild.errors import FvpError
    from heliabuild.fvp.targets import platform_target

    if "vela_model" not in kinds or "segments" not in kinds:
        raise configuration_error(
            BUILDER,
            runner_json,
            "backend fvp runs Vela's compiled model: give *_vela.tflite and *_segments.json among the sources",
        )
    platform = env.get(PLATFORM)
    try:
        target = platform_target(str(platform), f"{PLATFORM}={platform!r}")
    except FvpError as error:
        raise configuration_error(BUILDER, runner_json, error.message) from None
    firmware = env.get(FVP_FIRMWARE)
    if firmware not in FVP_FIRMWARES:
        raise configuration_error(
            BUILDER, runner_json, f"{FVP_FIRMWARE} is {firmware!r}; expected one of {FVP_FIRMWARES}"
        )
    limit = env.get(FVP_TIMELIMIT)
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 1):
        raise configuration_error(BUILDER, runner_json, f"{FVP_TIMELIMIT} is {limit!r}; expected None or whole seconds")
    request["fvp"] = {"target": target, "timelimit_s": limit, "firmware": firmware}
    if firmware == "aot":
        return _aot_nodes(env, runner_json, kinds, request, str(platform))
    try:
        version = metadata.version(FVP_PACKAGE)
    except metadata.PackageNotFoundError:
        version = None  # the action reports what to install
    targets = [runner_json.dir.File(COMPILED_FILE)]
    clean_earlier(env, [runner_json], targets[0].dir, EARLIER_SEGMENTS)
    env.Depends([runner_json, *targets], env.Value(f"{STAGE} fvp firmware {FVP_PACKAGE}=={version}"))
    return targets
