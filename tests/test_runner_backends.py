"""The backend registry (heliabuild.runner.backends): each row's module implements the Backend interface, and
every list of backends a user meets (the CLI's choices, SCons's checks, the policy's reserved keys, the
runner.json schema, the scope rule) is the registry's, so that adding a backend is one module and one row."""

from __future__ import annotations

import argparse
import json
from dataclasses import replace
from pathlib import Path

import pytest

from heliabuild.errors import RunnerError
from heliabuild.runner import backends, freeze
from heliabuild.runner.backend import Backend
from heliabuild.runner.backends import BACKENDS, FVP_FIRMWARES, REGISTRY, backend_for, backend_of
from heliabuild.runner.record import (
    AotFirmwareRecord,
    DriverRecord,
    FileRecord,
    FirmwareImage,
    FvpSection,
    FvpTargetRecord,
    PrebuiltFirmwareRecord,
    RunnerRecord,
)

SCHEMA = Path(__file__).resolve().parents[1] / "schemas" / "runner.schema.json"


def _choices(verb: str, option: str) -> tuple[str, ...]:
    """The choices of `heliabuild VERB OPTION` as the CLI's parser offers them."""
    from heliabuild.cli import build_parser

    parser = build_parser()
    commands = next(action for action in parser._actions if isinstance(action, argparse._SubParsersAction))
    sub = commands.choices[verb]
    action = next(action for action in sub._actions if option in action.option_strings)
    return tuple(action.choices)


@pytest.mark.parametrize("row", REGISTRY, ids=lambda row: row.name)
def test_every_row_names_a_module_implementing_the_backend_interface(row: backends.BackendRow) -> None:
    backend = backend_for(row.backend, row.fvp_firmware or FVP_FIRMWARES[0])
    assert isinstance(backend, Backend)
    assert backend.name == row.name
    assert backend.runtime in ("litert", "aot", "tflm")


def test_the_cli_scons_policy_and_schema_offer_the_registrys_backends() -> None:
    from heliabuild import doctor
    from heliabuild.runner.policy import BACKEND_NAMES
    from heliabuild.scons import checks, sweep
    from heliabuild.scons import fvp as scons_fvp

    assert BACKENDS == ("litert", "qemu-m55", "fvp") == freeze.BACKENDS
    assert _choices("runner", "--backend") == BACKENDS == _choices("fence", "--backend")
    assert checks.BACKENDS == BACKENDS == sweep.BACKENDS == doctor.BACKENDS
    assert set(BACKEND_NAMES) == {*BACKENDS, "qemu"}  # `qemu` is reserved too, for qemu-m55
    assert tuple(json.loads(SCHEMA.read_text())["properties"]["backend"]["enum"]) == BACKENDS
    assert _choices("runner", "--fvp-firmware") == FVP_FIRMWARES == scons_fvp.FVP_FIRMWARES


def test_every_row_needs_only_requirement_groups_doctor_checks() -> None:
    from heliabuild import doctor

    for row in REGISTRY:
        assert row.needs and set(row.needs) <= set(doctor.REQUIREMENT_GROUPS), row.name


def test_each_backends_scopes_are_what_the_scope_rule_admits_for_it() -> None:
    from heliabuild.results.scopes import MEASURED_BY

    for row in REGISTRY:
        backend = backend_for(row.backend, row.fvp_firmware or FVP_FIRMWARES[0])
        assert backend.scopes.measured() == MEASURED_BY[row.backend], row.name


def test_the_fvp_rows_are_told_apart_by_the_firmware_source_runner_json_records() -> None:
    from heliabuild.fvp import aot_firmware, firmware

    sources = {row.fvp_firmware: row.firmware_source for row in REGISTRY if row.backend == "fvp"}
    assert sources == {"prebuilt": firmware.SOURCE, "aot": aot_firmware.SOURCE}
    record = RunnerRecord.from_json(
        {
            "format": 2,
            "backend": "litert",
            "heliabuild_version": "0",
            "policy": {
                "state": "carry",
                "warmup_invokes": 0,
                "warmup_source": "automatic",
                "measured_invokes": 1,
                "tensor_io": None,
                "fvp_enabled": True,
            },
            "inputs": {
                "model": {"file": "model.tflite", "sha256": "0" * 64, "copied": True},
                "sidecar": None,
                "vela_model": None,
                "segments": None,
                "aot_plan": None,
            },
            "files": {"model.tflite": "0" * 64},
            "call_once_present": False,
        }
    )
    assert backend_of(record).name == "litert"
    target = FvpTargetRecord("FVP_Corstone_SSE-300_Ethos-U55", "corstone-300", "ethos-u55", 128, "ethos-u55-128")
    prebuilt = PrebuiltFirmwareRecord("0.1.0", "runner.axf", "0" * 64)
    section = FvpSection(target, prebuilt, 600, ("<fvp>",), ())
    assert backend_of(replace(record, backend="fvp", fvp=section)).name == "fvp-prebuilt"
    image = FirmwareImage(
        "corstone300",
        FileRecord("fvp/firmware.elf", "0" * 64),
        FileRecord("fvp/firmware_layout.json", "0" * 64),
        "gcc",
        0,
        (),
        (),
        (),
        1,
    )
    aot = AotFirmwareRecord(image, DriverRecord("0" * 64, (), "ETHOSU55"), 4)
    assert backend_of(replace(record, backend="fvp", fvp=replace(section, firmware=aot))).name == "fvp-aot"


def test_an_unknown_backend_or_fvp_firmware_is_refused_naming_the_choices() -> None:
    with pytest.raises(RunnerError, match=r"backend 'tpu' is not known; expected one of litert, qemu-m55, fvp"):
        backend_for("tpu")
    with pytest.raises(RunnerError, match=r"fvp firmware 'tflm' is not known; expected 'prebuilt' or 'aot'"):
        backend_for("fvp", "tflm")
