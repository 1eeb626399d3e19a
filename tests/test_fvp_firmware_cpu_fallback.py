"""Vela's CPU operators in the fvp backend's AOT firmware (`fvp_firmware="aot"`): heliabuild.synth's
`cpu_fallback` network, whose two SPACE_TO_DEPTH Vela 5.2 leaves on the CPU (one before the first command
stream, one between the two), compiled by the real Vela for ethos-u55-128, its AOT firmware generated for
Corstone-300 and linked for real with arm-none-eabi-gcc against a TEST DOUBLE of Arm's Ethos-U core driver
(tests/helpers/ethosu_driver_test_double/, which drives no NPU: the command streams' outputs stay zeros), then
run for real on QEMU's mps3-an547 (Corstone-300's CPU and memory map). The CPU operators run through the same
generated module and kernels as the qemu-m55 backend's: the first one's output, computed from real input bytes,
equals LiteRT's reference kernels byte for byte."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from conftest import require_firmware_tools
from helpers.int8_models import run_all
from helpers.qemu_uart import uart_until_eot

from heliabuild.aot.facts import model_facts
from heliabuild.aot.stage import write_plan
from heliabuild.fence import rewrite_model_with_fences
from heliabuild.firmware.records import read_records
from heliabuild.model import serialize
from heliabuild.model.io import load_model
from heliabuild.runner.freeze import build_runner
from heliabuild.synth import synthesize
from heliabuild.vela import compile as vela_compile

DRIVER_DOUBLE = Path(__file__).parent / "helpers" / "ethosu_driver_test_double"


@pytest.fixture(autouse=True)
def _tools(firmware_library: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    require_firmware_tools()
    monkeypatch.setenv("HELIA_FIRMWARE_CACHE", str(firmware_library.parent.parent))  # one library per session


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    """The cpu_fallback network, Vela's model of it, the AOT runner built with random input bytes, and its UART."""
    folder = tmp_path_factory.mktemp("cpu-fallback")
    network = synthesize("cpu_fallback", seed=0)
    unfenced = folder / "network.tflite"
    unfenced.write_bytes(bytes(serialize(network)))
    fenced = rewrite_model_with_fences(bytes(serialize(network)), [])
    model = folder / "model.tflite"
    model.write_bytes(bytes(fenced.fenced_bytes))
    sidecar = folder / "model.fenced_boundaries.json"
    sidecar.write_text(json.dumps(fenced.boundaries.to_json()))
    vela = vela_compile(model, folder / "vela", accelerator="ethos-u55-128")
    plan = write_plan(vela.model, folder / "plan", "model", "corstone300_ethos_u55").plan
    data = np.random.default_rng(7).integers(-128, 128, (1, 16, 16, 4), dtype=np.int8)
    (folder / "input0.bin").write_bytes(data.tobytes())
    policy = folder / "policy.json"
    acquisition = {"state": "carry", "warmup_invokes": 1, "measured_invokes": 2}
    inputs = [{"index": 0, "file": "input0.bin"}]
    policy.write_text(json.dumps({"defaults": {"fvp": {"acquisition": acquisition, "tensor_io": {"inputs": inputs}}}}))
    runner_json = build_runner(
        folder / "runner", model=model, policy=policy, sidecar=sidecar, vela_model=vela.model,
        segments=vela.segments_json, aot_plan=plan, backend="fvp", fvp_firmware="aot",
        ethosu_driver_dir=DRIVER_DOUBLE,
    )  # fmt: skip
    uart = uart_until_eot(runner_json.parent / "fvp" / "firmware.elf")
    return {"network": unfenced, "vela": vela.model, "runner": runner_json, "input": data, "uart": uart}


def test_vela_leaves_space_to_depth_on_the_cpu_between_two_command_streams(built: dict[str, object]) -> None:
    types = [op.op_type for op in model_facts(load_model(Path(str(built["vela"]))))]
    assert types == ["SPACE_TO_DEPTH", "ethos-u", "SPACE_TO_DEPTH", "ethos-u"]


def test_the_aot_firmware_runs_the_cpu_operators_through_heliabuild_kernels(built: dict[str, object]) -> None:
    """The generated module calls heliabuild's kernel for each CPU operator and the driver for each command
    stream, in Vela's order; one segment counts both command streams (the driver double's hooks)."""
    runner_json = Path(str(built["runner"]))
    layout = json.loads((runner_json.parent / "fvp" / "firmware_layout.json").read_text())
    assert [(k["type"], k["run"]) for k in layout["kernels"]] == [
        ("SPACE_TO_DEPTH", "helia_index_copy_run"),
        ("ethos-u", "helia_ethosu_run"),
        ("SPACE_TO_DEPTH", "helia_index_copy_run"),
        ("ethos-u", "helia_ethosu_run"),
    ]
    stream = read_records(str(built["uart"]), "uart")
    assert [r.kind for r in stream.records] == ["begin", *(["npu_sample"] + ["output"] * 3) * 2, "receipt", "end"]
    # sample index, 4 events, then the one segment: 2 command streams, no overflow, the double's counts twice over
    assert [r.fields for r in stream.of_kind("npu_sample")] == [(k, 4, 2, 0, 2000, 400, 60, 8) for k in (0, 1)]
    assert "Application exit code: 0." in stream.console


def test_the_cpu_operator_on_real_input_bytes_equals_litert(built: dict[str, object]) -> None:
    """Output 0 is the first SPACE_TO_DEPTH of the filled input: LiteRT's bytes in every measured invoke. The
    outputs the command streams write stay zeros (the driver double computes nothing)."""
    expected = run_all(load_model(Path(str(built["network"]))), [built["input"]])
    outputs = [r.fields for r in read_records(str(built["uart"]), "uart").of_kind("output")]
    assert [fields[:2] for fields in outputs] == [(s, k) for s in (0, 1) for k in (0, 1, 2)]
    for sample, index, data in outputs:
        if index == 0:
            assert data == expected[0].tobytes(), sample
            assert len(set(data)) > 100  # real bytes, not a constant
        else:
            assert data == bytes(len(data))
