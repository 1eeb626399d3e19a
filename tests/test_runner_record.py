"""heliabuild.runner.record: runner.json as typed records, read only after the schema accepted it, written back
byte for byte."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from heliabuild.errors import RunnerError
from heliabuild.files import json_text
from heliabuild.model import save_model
from heliabuild.runner.freeze import build_runner
from heliabuild.runner.record import RUNNER_FILE, RunnerRecord, read_runner_record, runner_json_bytes
from heliabuild.synth import chain_network


@pytest.fixture(scope="module")
def runner_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("record")
    save_model(chain_network(0), folder / "chain.tflite")
    policy = {"defaults": {"fvp": {"verification": {"max_abs_diff": 2}}}}
    build_runner(folder / "runner", model=folder / "chain.tflite", policy=policy)
    return folder / "runner"


def test_the_record_writes_back_the_bytes_it_was_read_from(runner_folder: Path) -> None:
    record, raw = read_runner_record(runner_folder)
    assert runner_json_bytes(record) == raw
    assert RunnerRecord.from_json(record.to_json()) == record
    assert record.policy.verification is not None and record.policy.verification.max_abs_diff == 2
    assert record.inputs.model.file == "model.tflite" and record.firmware is None and record.fvp is None


def test_a_qemu_runner_with_a_null_firmware_is_refused_by_name(runner_folder: Path, tmp_path: Path) -> None:
    document = json.loads((runner_folder / RUNNER_FILE).read_text())
    document.update(backend="qemu-m55", firmware=None)  # the schema admits `firmware: null`
    (tmp_path / RUNNER_FILE).write_text(json_text(document))
    with pytest.raises(RunnerError, match=r"firmware: null; a runner of backend qemu-m55 records its firmware there"):
        read_runner_record(tmp_path)


def test_a_field_the_schema_refuses_never_reaches_the_record(runner_folder: Path, tmp_path: Path) -> None:
    document = json.loads((runner_folder / RUNNER_FILE).read_text())
    document["policy"]["measured_invokes"] = "3"
    (tmp_path / RUNNER_FILE).write_text(json_text(document))
    with pytest.raises(RunnerError, match=r"measured_invokes"):
        read_runner_record(tmp_path / RUNNER_FILE)
