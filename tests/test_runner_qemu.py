"""The qemu-m55 backend through the CLI: `heliabuild runner --backend qemu-m55` builds the firmware from the
fenced model and its AOT plan with the policy compiled in, `heliabuild run` runs it on real QEMU and publishes
a verified bundle with instruction counts per segment, outputs compared with LiteRT's reference kernels; and
every refusal is one clear error with nothing written or published. Where a test replaces QEMU it uses a TEST
DOUBLE (a script named qemu-system-arm on PATH), and says so in its name."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest
from conftest import require_firmware_tools
from helpers.trees import snapshot

from heliabuild.aot.stage import write_plan
from heliabuild.fence import rewrite_model_with_fences
from heliabuild.model import save_model
from heliabuild.results.reader import load_result
from heliabuild.synth import single_op_model, synthesize


@pytest.fixture(autouse=True)
def _tools(firmware_library: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    require_firmware_tools()
    monkeypatch.setenv("HELIA_FIRMWARE_CACHE", str(firmware_library.parent.parent))


@pytest.fixture
def fenced(tmp_path: Path) -> dict[str, Path]:
    source = tmp_path / "residual.tflite"
    save_model(synthesize("residual", seed=4), source)
    model = tmp_path / "residual_fenced.tflite"
    rewrite_model_with_fences(source, [2, 7]).save(model)
    write_plan(model, tmp_path / "plan", "net", "mps3_an547")
    return {
        "source": source,
        "model": model,
        "sidecar": tmp_path / "residual_fenced.fenced_boundaries.json",
        "plan": tmp_path / "plan" / "net_plan.json",
    }


def _runner(cli, fenced: dict[str, Path], output: Path, *extra: object):  # type: ignore[no-untyped-def]
    return cli(
        "runner",
        "--model",
        fenced["model"],
        "--sidecar",
        fenced["sidecar"],
        "--aot-plan",
        fenced["plan"],
        "--backend",
        "qemu-m55",
        *extra,
        "-o",
        output,
    )


def test_runner_and_run_on_qemu_publish_instruction_counts_and_a_verified_comparison(
    cli, fenced: dict[str, Path], tmp_path: Path
) -> None:
    policy = tmp_path / "policy.yaml"
    policy.write_text("defaults:\n  fvp:\n    acquisition: {state: carry, warmup_invokes: 1, measured_invokes: 3}\n")
    built = _runner(cli, fenced, tmp_path / "runner", "--policy", policy)
    assert built.code == 0, built.err
    document = json.loads((tmp_path / "runner" / "runner.json").read_text())
    assert document["backend"] == "qemu-m55" and document["firmware"]["segments"] == 3
    assert document["firmware"]["toolchain"].startswith("arm-none-eabi-gcc")
    assert document["policy"]["warmup_invokes"] == 1 and document["policy"]["measured_invokes"] == 3
    ran = cli("run", tmp_path / "runner" / "runner.json", "-o", tmp_path / "result")
    assert ran.code == 0, ran.err
    assert ran.out.splitlines()[-2:] == [
        "heliabuild: run receipt: carry, 1 warmup, 3 measured",
        "heliabuild: run verification: outputs match LiteRT reference kernels (BUILTIN_REF): 0 of 10 elements "
        "differ in each of 3 samples; inputs: zeros",
    ]
    result = load_result(tmp_path / "result")
    assert result.runtime == "aot" and result.document["run_identity"]["backend"] == "qemu-m55"
    assert result.receipt is not None and result.receipt.initialization == "before_measurement"
    assert result.receipt.call_once_present is None
    assert result.document["scopes"]["instructions"] == "qemu_icount"
    for sample in result.samples:
        assert sample.cycles is None and sample.latency_s is None
        assert sample.instructions is not None and len(sample.instructions["segments"]) == 3
        assert sum(sample.instructions["segments"]) == sample.instructions["total"] > 0
        assert sample.verification is not None
        assert [(c["max_abs_diff"], c["differing_elements"]) for c in sample.verification] == [(0, 0)]
    statistics = result.statistics
    assert statistics is not None and statistics.counters["instructions.total"] is not None


def test_two_runner_builds_give_byte_identical_firmware(cli, fenced: dict[str, Path], tmp_path: Path) -> None:
    assert _runner(cli, fenced, tmp_path / "a").code == 0
    assert _runner(cli, fenced, tmp_path / "b" / "elsewhere").code == 0
    for name in ("runner.json", "firmware.elf", "firmware_layout.json"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / "elsewhere" / name).read_bytes()


def test_qemu_m55_without_an_aot_plan_is_refused(cli, fenced: dict[str, Path], tmp_path: Path) -> None:
    before = snapshot(tmp_path)
    result = cli("runner", "--model", fenced["model"], "--backend", "qemu-m55", "-o", tmp_path / "runner")
    assert result.code == 2
    assert "backend qemu-m55 runs the firmware generated from the model's AOT plan" in result.err
    assert snapshot(tmp_path) == before


def test_a_plan_for_another_platform_is_refused(cli, fenced: dict[str, Path], tmp_path: Path) -> None:
    write_plan(fenced["model"], tmp_path / "other", "net", "apollo510_evb")
    fenced = dict(fenced, plan=tmp_path / "other" / "net_plan.json")
    before = snapshot(tmp_path)
    result = _runner(cli, fenced, tmp_path / "runner")
    assert result.code == 2
    assert "platform.name is 'apollo510_evb', but the qemu-m55 firmware runs on mps3_an547" in result.err
    assert snapshot(tmp_path) == before


def test_a_plan_of_another_model_is_refused(cli, fenced: dict[str, Path], tmp_path: Path) -> None:
    write_plan(fenced["source"], tmp_path / "other", "net", "mps3_an547")
    fenced = dict(fenced, plan=tmp_path / "other" / "net_plan.json")
    before = snapshot(tmp_path)
    result = _runner(cli, fenced, tmp_path / "runner")
    assert result.code == 2 and "the plan was made for another model" in result.err
    assert snapshot(tmp_path) == before


def test_an_unsupported_operator_is_refused_at_the_runner_build(cli, tmp_path: Path) -> None:
    model = tmp_path / "equal.tflite"
    save_model(single_op_model("equal", "float32", [(2, 3), (3,)]), model)  # float EQUAL: no kernel's contract
    write_plan(model, tmp_path / "plan", "net", "mps3_an547")
    before = snapshot(tmp_path)
    result = cli(
        "runner", "--model", model, "--aot-plan", tmp_path / "plan" / "net_plan.json", "--backend", "qemu-m55",
        "-o", tmp_path / "runner",
    )  # fmt: skip
    assert result.code == 2
    assert "the module generator refuses 1 operator" in result.err and "[comparison.int32]" in result.err
    assert snapshot(tmp_path) == before


def test_a_missing_toolchain_is_one_error_naming_the_package(
    cli, fenced: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, firmware_library: Path
) -> None:
    monkeypatch.setenv("HELIA_FIRMWARE_CACHE", str(tmp_path / "empty-cache"))
    monkeypatch.setenv("PATH", str(Path(os.sys.executable).parent))
    before = snapshot(tmp_path)
    result = _runner(cli, fenced, tmp_path / "runner")
    assert result.code == 2
    assert "arm-none-eabi-gcc is not on PATH" in result.err and "gcc-arm-none-eabi" in result.err
    assert snapshot(tmp_path) == before


def _install_fake_qemu(folder: Path, monkeypatch: pytest.MonkeyPatch, script: str) -> None:
    """Put the TEST DOUBLE of qemu-system-arm first on PATH."""
    folder.mkdir(parents=True, exist_ok=True)
    fake = folder / "qemu-system-arm"
    fake.write_text("#!/bin/sh\n# test double of QEMU\n" + script)
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ['PATH']}")


@pytest.mark.parametrize(
    ("script", "message"),
    [
        (
            "echo '@hb1 0 fault 3 268435712 1024 1073741824 *ffb478b2'\nexit 5\n",
            "the firmware faulted: HardFault at pc 0x10000100",
        ),
        ("exit 0\n", "the record stream has no end record"),
        ("sleep 30\n", "did not exit before the timeout"),
    ],
    ids=["fault", "silent", "never-exits"],
)
def test_a_bad_run_from_a_qemu_test_double_publishes_nothing(
    cli, fenced: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, script: str, message: str
) -> None:
    assert _runner(cli, fenced, tmp_path / "runner").code == 0
    _install_fake_qemu(tmp_path / "bin", monkeypatch, script)
    before = snapshot(tmp_path)
    result = cli("run", tmp_path / "runner" / "runner.json", "-o", tmp_path / "result", "--timeout", "1")
    assert result.code == 2 and message in result.err, result.err
    assert result.err.count("\n") == 1
    assert snapshot(tmp_path) == before


def test_a_tampered_firmware_is_refused_before_it_runs(cli, fenced: dict[str, Path], tmp_path: Path) -> None:
    assert _runner(cli, fenced, tmp_path / "runner").code == 0
    elf = tmp_path / "runner" / "firmware.elf"
    data = bytearray(elf.read_bytes())
    data[-1] ^= 0xFF
    elf.write_bytes(bytes(data))
    result = cli("run", tmp_path / "runner" / "runner.json", "-o", tmp_path / "result")
    assert result.code == 2 and "firmware.elf: sha256 is" in result.err and "the file changed" in result.err
    assert not (tmp_path / "result").exists()


def _replay_with_an_output_off_by_one(runner_dir: Path, bin_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Capture the firmware's real console on QEMU, raise the first byte of every output record by one (each
    record re-signed, so only its content differs) and install the TEST DOUBLE of QEMU replaying it."""
    import zlib

    from heliabuild.firmware.qemu import run_on_qemu

    lines = run_on_qemu(runner_dir / "firmware.elf", timeout_s=60).console.split("\n")
    for k, line in enumerate(lines):
        fields = line.split()
        if len(fields) > 2 and fields[2] == "output":
            data = bytearray.fromhex(fields[5][1:])
            data[0] = (data[0] + 1) % 256
            body = " ".join([*fields[:5], "x" + data.hex()]) + " "
            lines[k] = f"{body}*{zlib.crc32(body.encode()):08x}"
    replay = bin_dir / "console.txt"
    bin_dir.mkdir(parents=True, exist_ok=True)
    replay.write_text("\n".join(lines))
    _install_fake_qemu(bin_dir, monkeypatch, f"cat '{replay}'\n")


def test_a_verification_bound_refuses_outputs_that_differ_replayed_by_a_qemu_test_double(
    cli, fenced: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    policy = tmp_path / "policy.yaml"
    policy.write_text("defaults:\n  fvp:\n    verification: {reference: litert, max_abs_diff: 0}\n")
    assert _runner(cli, fenced, tmp_path / "runner", "--policy", policy).code == 0
    assert json.loads((tmp_path / "runner" / "runner.json").read_text())["policy"]["verification"] == {
        "reference": "litert",
        "resolver": "BUILTIN_REF",
        "max_abs_diff": 0,
        "max_abs_diff_source": "explicit",
    }
    assert cli("run", tmp_path / "runner" / "runner.json", "-o", tmp_path / "good").code == 0
    _replay_with_an_output_off_by_one(tmp_path / "runner", tmp_path / "bin", monkeypatch)
    before = snapshot(tmp_path)
    result = cli("run", tmp_path / "runner" / "runner.json", "-o", tmp_path / "bad")
    assert result.code == 3  # the verification refusal, apart from bad input
    assert "differs from LiteRT reference kernels (BUILTIN_REF) by 1 in 1 of its 10 elements" in result.err
    assert "more than the policy's verification.max_abs_diff 0; nothing is published" in result.err
    assert snapshot(tmp_path) == before


def test_by_default_any_difference_is_refused_replayed_by_a_qemu_test_double(
    cli, fenced: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert _runner(cli, fenced, tmp_path / "runner").code == 0
    _replay_with_an_output_off_by_one(tmp_path / "runner", tmp_path / "bin", monkeypatch)
    before = snapshot(tmp_path)
    result = cli("run", tmp_path / "runner" / "runner.json", "-o", tmp_path / "result")
    assert result.code == 3, result.err
    assert "more than the default verification.max_abs_diff 0; nothing is published" in result.err
    assert snapshot(tmp_path) == before


def test_with_the_bound_opted_out_the_difference_is_published_replayed_by_a_qemu_test_double(
    cli, fenced: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    policy = tmp_path / "policy.yaml"
    policy.write_text("defaults:\n  fvp:\n    verification: {max_abs_diff: null}\n")
    assert _runner(cli, fenced, tmp_path / "runner", "--policy", policy).code == 0
    _replay_with_an_output_off_by_one(tmp_path / "runner", tmp_path / "bin", monkeypatch)
    assert cli("run", tmp_path / "runner" / "runner.json", "-o", tmp_path / "result").code == 0
    (sample,) = load_result(tmp_path / "result").samples
    assert sample.verification is not None
    assert [(c["max_abs_diff"], c["differing_elements"]) for c in sample.verification] == [(1, 1)]


def test_an_arena_that_does_not_fit_the_memory_map_is_refused_at_the_runner_build(cli, tmp_path: Path) -> None:
    from helpers.int8_models import pad_model

    from heliabuild.kernels.int8 import Quant

    model = tmp_path / "big.tflite"
    save_model(pad_model([1, 1024, 1024, 3], [(0, 0), (1, 1), (1, 1), (0, 0)], Quant(0.1, 0)), model)
    write_plan(model, tmp_path / "plan", "net", "mps3_an547")
    before = snapshot(tmp_path)
    result = cli(
        "runner", "--model", model, "--aot-plan", tmp_path / "plan" / "net_plan.json", "--backend", "qemu-m55",
        "-o", tmp_path / "runner",
    )  # fmt: skip
    assert result.code == 2
    assert "the activation arena needs" in result.err and "bytes of ISRAM, and mps3_an547 has 4194304" in result.err
    assert snapshot(tmp_path) == before


def test_a_missing_qemu_is_one_error_naming_the_package(
    cli, fenced: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert _runner(cli, fenced, tmp_path / "runner").code == 0
    monkeypatch.setenv("PATH", str(Path(os.sys.executable).parent))
    result = cli("run", tmp_path / "runner" / "runner.json", "-o", tmp_path / "result")
    assert result.code == 2
    assert "qemu-system-arm is not on PATH" in result.err and "apt-get install qemu-system-arm" in result.err
    assert not (tmp_path / "result").exists()
