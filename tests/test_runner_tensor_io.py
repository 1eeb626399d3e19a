"""Non-zero inputs end to end: random input bytes named by the policy's `tensor_io`, through `heliabuild runner`
and `heliabuild run`, on qemu-m55 (real firmware, real QEMU), on litert, and on the fvp backend's AOT firmware
(linked against the TEST DOUBLE of the Ethos-U driver, its record stream captured on real QEMU and replayed by
the FAKE FVP, tests/helpers/fake_fvp.py). Each run is checked against LiteRT run here, independently of
heliabuild's own reference, on the user's bytes, and against the outputs on zeros: a runner and a reference
that both ignored the user's file (and filled zeros) would agree with each other and still fail these tests."""

from __future__ import annotations

import zlib
from pathlib import Path

import numpy as np
import pytest
from conftest import require_firmware_tools
from helpers.qemu_uart import uart_until_eot

from heliabuild.aot.stage import write_plan
from heliabuild.fence import rewrite_model_with_fences
from heliabuild.model import save_model
from heliabuild.results.layout import output_files
from heliabuild.results.reader import load_result
from heliabuild.synth import synthesize

DRIVER_DOUBLE = Path(__file__).parent / "helpers" / "ethosu_driver_test_double"


def litert_outputs(model: Path, inputs: list[bytes | None]) -> list[np.ndarray]:
    """The outputs of one invoke of `model` with LiteRT's reference kernels, input k filled with `inputs[k]`
    (None: zeros): the test's own oracle, not heliabuild's reference path."""
    from ai_edge_litert.interpreter import Interpreter, OpResolverType

    interpreter = Interpreter(model_path=str(model), experimental_op_resolver_type=OpResolverType.BUILTIN_REF)
    interpreter.allocate_tensors()
    for detail, data in zip(interpreter.get_input_details(), inputs, strict=True):
        shape = tuple(int(d) for d in detail["shape"])
        value = np.zeros(shape, detail["dtype"]) if data is None else np.frombuffer(data, detail["dtype"])
        interpreter.set_tensor(detail["index"], value.reshape(shape))
    interpreter.invoke()
    return [interpreter.get_tensor(d["index"]).copy() for d in interpreter.get_output_details()]


def random_inputs(model: Path, folder: Path, seed: int) -> list[Path]:
    """One file of random bytes per graph input of `model`, each exactly the tensor's byte length."""
    from ai_edge_litert.interpreter import Interpreter

    interpreter = Interpreter(model_path=str(model))
    rng = np.random.default_rng(seed)
    files = []
    for k, detail in enumerate(interpreter.get_input_details()):
        size = int(np.prod(detail["shape"])) * np.dtype(detail["dtype"]).itemsize
        path = folder / f"random_{k}.bin"
        path.write_bytes(rng.bytes(size))
        files.append(path)
    return files


def tensor_io_policy(folder: Path, files: list[Path], *extra: str) -> Path:
    entries = ", ".join(f"{{index: {k}, file: {path.name}}}" for k, path in enumerate(files))
    policy = folder / "policy.yaml"
    lines = ["defaults:", "  fvp:", f"    tensor_io: {{inputs: [{entries}]}}", *(f"    {line}" for line in extra)]
    policy.write_text("\n".join(lines) + "\n")
    return policy


def published_outputs(bundle: Path) -> list[list[bytes]]:
    """Each sample's output bytes as the bundle holds them, in graph-output order of the signatures."""
    result = load_result(bundle)
    samples = []
    for sample in result.samples:
        names = output_files(list(sample.signatures))
        folder = bundle / "artifacts" / "samples" / str(sample.index)
        samples.append([(folder / names[name]).read_bytes() for name in sample.signatures])
    return samples


@pytest.fixture
def residual(tmp_path: Path) -> dict[str, Path]:
    source = tmp_path / "residual.tflite"
    save_model(synthesize("residual", seed=4), source)
    fenced = tmp_path / "residual_fenced.tflite"
    rewrite_model_with_fences(source, [2, 7]).save(fenced)
    return {"source": source, "model": fenced, "sidecar": tmp_path / "residual_fenced.fenced_boundaries.json"}


def test_random_inputs_through_runner_and_run_on_qemu_match_litert_on_those_bytes(  # type: ignore[no-untyped-def]
    cli, residual: dict[str, Path], tmp_path: Path, firmware_library: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    require_firmware_tools()
    monkeypatch.setenv("HELIA_FIRMWARE_CACHE", str(firmware_library.parent.parent))
    plan = write_plan(residual["model"], tmp_path / "plan", "net", "mps3_an547").plan
    files = random_inputs(residual["source"], tmp_path, seed=11)
    policy = tensor_io_policy(tmp_path, files, "acquisition: {measured_invokes: 2}")
    built = cli(
        "runner", "--model", residual["model"], "--sidecar", residual["sidecar"], "--aot-plan", plan,
        "--backend", "qemu-m55", "--policy", policy, "-o", tmp_path / "runner",
    )  # fmt: skip
    assert built.code == 0, built.err
    ran = cli("run", tmp_path / "runner" / "runner.json", "-o", tmp_path / "result")
    assert ran.code == 0, ran.err
    expected = litert_outputs(residual["source"], [path.read_bytes() for path in files])
    zeros = litert_outputs(residual["source"], [None] * len(files))
    assert any(not np.array_equal(a, b) for a, b in zip(expected, zeros, strict=True))  # the bytes matter
    for sample in published_outputs(tmp_path / "result"):
        assert sample == [array.tobytes() for array in expected]  # bit-exact with LiteRT on the user's bytes
    result = load_result(tmp_path / "result")
    assert all(c["differing_elements"] == 0 for s in result.samples for c in s.verification or [None])
    assert "  inputs: random_0.bin" in cli("show", tmp_path / "result").out.splitlines()


def test_random_inputs_through_runner_and_run_on_litert_match_litert_on_those_bytes(  # type: ignore[no-untyped-def]
    cli, residual: dict[str, Path], tmp_path: Path
) -> None:
    files = random_inputs(residual["source"], tmp_path, seed=12)
    policy = tensor_io_policy(tmp_path, files, "verification: {resolver: BUILTIN_REF}")
    built = cli("runner", "--model", residual["model"], "--policy", policy, "-o", tmp_path / "runner")
    assert built.code == 0, built.err
    assert cli("run", tmp_path / "runner" / "runner.json", "-o", tmp_path / "result").code == 0
    expected = litert_outputs(residual["source"], [path.read_bytes() for path in files])
    ((outputs),) = published_outputs(tmp_path / "result")
    ((check),) = load_result(tmp_path / "result").samples[0].verification or []
    found = np.frombuffer(outputs[0], expected[0].dtype).astype(np.int64)
    assert check["max_abs_diff"] == int(np.abs(found - expected[0].astype(np.int64).ravel()).max())


@pytest.fixture
def aot_inputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    from test_fvp_backend import _compiled

    inputs = dict(_compiled(tmp_path_factory, "ethos-u55-128"))
    inputs["plan"] = write_plan(inputs["vela"], tmp_path_factory.mktemp("plan"), "model", "corstone300_ethos_u55").plan
    return inputs


def test_random_inputs_through_runner_and_run_on_the_aot_fvp_firmware_reach_both_sides_fake_fvp(  # type: ignore[no-untyped-def]
    cli,
    aot_inputs: dict[str, Path],
    tmp_path: Path,
    firmware_library: Path,
    fake_fvp: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The firmware is the real AOT firmware (driver TEST DOUBLE, so its NPU outputs are not the NPU's); what
    must hold is that the firmware was built with the user's bytes (the CRC-32 it reports in `begin`) and that the
    recorded comparison is against LiteRT on those bytes."""
    require_firmware_tools()
    monkeypatch.setenv("HELIA_FIRMWARE_CACHE", str(firmware_library.parent.parent))
    from heliabuild.runner.freeze import load_runner

    unfenced = tmp_path / "unfenced.tflite"
    assert cli("unfence", aot_inputs["model"], "-o", unfenced).code == 0
    files = random_inputs(unfenced, tmp_path, seed=13)
    policy = tensor_io_policy(tmp_path, files)
    built = cli(
        "runner", "--model", aot_inputs["model"], "--sidecar", aot_inputs["sidecar"],
        "--vela-model", aot_inputs["vela"], "--segments", aot_inputs["segments"], "--aot-plan", aot_inputs["plan"],
        "--backend", "fvp", "--fvp-firmware", "aot", "--ethosu-driver-dir", DRIVER_DOUBLE, "--policy", policy,
        "-o", tmp_path / "runner",
    )  # fmt: skip
    assert built.code == 0, built.err
    runner = load_runner(tmp_path / "runner" / "runner.json")
    uart = uart_until_eot(tmp_path / "runner" / runner.document["fvp"]["firmware"]["elf"]["file"])
    begin = next(line for line in uart.splitlines() if line.startswith("@hb1 0 begin "))
    assert str(zlib.crc32(files[0].read_bytes())) in begin.split()  # the firmware holds the user's bytes
    (tmp_path / "uart.txt").write_text(uart, encoding="ascii")
    monkeypatch.setenv("FAKE_FVP_RECORDS", str(tmp_path / "uart.txt"))
    ran = cli("run", tmp_path / "runner" / "runner.json", "-o", tmp_path / "result")
    assert ran.code == 0, ran.err
    expected = litert_outputs(unfenced, [path.read_bytes() for path in files])
    zeros = litert_outputs(unfenced, [None] * len(files))
    assert not np.array_equal(expected[0], zeros[0])
    ((outputs),) = published_outputs(tmp_path / "result")
    ((check),) = load_result(tmp_path / "result").samples[0].verification or []
    found = np.frombuffer(outputs[0], expected[0].dtype).astype(np.int64)
    differences = np.abs(found - expected[0].astype(np.int64).ravel())
    assert (check["max_abs_diff"], check["differing_elements"]) == (
        int(differences.max()),
        int((differences > 0).sum()),
    )
