"""Output verification in SCons (docs/runner.md, "Verification"), with real SCons, Vela, LiteRT, arm-none-eabi-gcc
and QEMU: a pipeline whose outputs are NaN on both sides publishes on qemu-m55; qemu-m55 refuses any difference
by default (a TEST DOUBLE of QEMU, a script named qemu-system-arm on PATH, replays the real firmware's console
with one output changed); litert is compared like for like, so a zero bound accepts the unmodified MLPerf ResNet,
and the reference kernels are an explicit choice that the same bound refuses; on the fvp backend's AOT firmware
(linked against the TEST DOUBLE of the Ethos-U driver, its record stream replayed by the FAKE FVP) the difference
is recorded by default and bounded only when the policy says so. A refused run fails its stage, names the
difference and publishes nothing."""

from __future__ import annotations

import shutil
import zlib
from pathlib import Path

import numpy as np
import pytest
from conftest import require_firmware_tools
from test_runner_qemu import _install_fake_qemu
from test_scons import build_ok, output_of, run_scons
from test_scons_pipeline import make_project

from heliabuild.api import load_result
from heliabuild.model import save_model
from heliabuild.synth import synthesize

pytestmark = pytest.mark.slow


def test_nan_on_both_sides_publishes_and_a_difference_is_refused_by_default_on_qemu(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    require_firmware_tools()
    folder = tmp_path / "project"
    folder.mkdir()
    save_model(synthesize("div_f32", seed=0), folder / "div.tflite")
    project = make_project(folder / "p", {"backend": "qemu-m55"}, name="div", model="../div.tflite")
    result = build_ok(project)
    bundle = project / "build" / "results" / "div"
    (sample,) = load_result(bundle).samples
    assert sample.verification is not None
    assert [(c["max_abs_diff"], c["differing_elements"], c["unbounded_elements"]) for c in sample.verification] == [
        (0, 0, 0)
    ]  # 0/0 is NaN on the firmware and in LiteRT: equal
    assert sample.sanity["outputs_finite"] is False
    row = next(line for line in result.stdout.splitlines() if line.startswith("div "))
    assert "0 of 1024 differ (BUILTIN_REF)" in row

    # a number where LiteRT has its NaN: unbounded, refused by the default bound 0
    from heliabuild.firmware.qemu import run_on_qemu

    lines = run_on_qemu(project / "build" / "runner" / "div" / "firmware.elf", timeout_s=60).console.split("\n")
    for k, line in enumerate(lines):
        fields = line.split()
        if len(fields) > 2 and fields[2] == "output":
            payload = bytearray.fromhex(fields[5][1:])
            payload[:4] = np.float32(1.0).tobytes()
            body = " ".join([*fields[:5], "x" + payload.hex()]) + " "
            lines[k] = f"{body}*{zlib.crc32(body.encode()):08x}"
    (tmp_path / "console.txt").write_text("\n".join(lines))
    _install_fake_qemu(tmp_path / "bin", monkeypatch, f"cat '{tmp_path / 'console.txt'}'\n")
    shutil.rmtree(bundle)  # the run stage reruns; the replayed run is refused
    refused = run_scons(project)
    assert refused.returncode == 2, output_of(refused)
    assert (
        "output 0 (div) differs from LiteRT reference kernels (BUILTIN_REF) without bound (a NaN or an infinity "
        "against another value) in 1 of its 1024 elements, more than the default verification.max_abs_diff 0"
    ) in refused.stderr
    assert not bundle.exists()


def _litert_project(folder: Path, resnet: Path, verification: str) -> Path:
    project = make_project(folder, {"policy": "policy.yaml"}, name="resnet", model=str(resnet))
    (project / "policy.yaml").write_text(f"defaults:\n  fvp:\n    verification: {verification}\n")
    return project


def test_litert_is_compared_like_for_like_and_the_reference_kernels_are_an_explicit_choice(
    tmp_path: Path, resnet_path: Path
) -> None:
    project = _litert_project(tmp_path / "same", resnet_path, "{max_abs_diff: 0}")
    result = build_ok(project)
    bundle = load_result(project / "build" / "results" / "resnet")
    assert bundle.document["run_identity"]["policy"]["verification"]["resolver"] == "BUILTIN_WITHOUT_DEFAULT_DELEGATES"
    (sample,) = bundle.samples
    assert sample.verification is not None and [c["differing_elements"] for c in sample.verification] == [0]
    row = next(line for line in result.stdout.splitlines() if line.startswith("resnet "))
    assert "0 of 10 differ (BUILTIN_WITHOUT_DEFAULT_DELEGATES)" in row

    strict = _litert_project(tmp_path / "reference", resnet_path, "{resolver: BUILTIN_REF, max_abs_diff: 0}")
    refused = run_scons(strict)
    assert refused.returncode == 2, output_of(refused)
    assert (
        "output 0 (" in refused.stderr and "differs from LiteRT reference kernels (BUILTIN_REF) by " in refused.stderr
    )
    assert "more than the policy's verification.max_abs_diff 0; nothing is published" in refused.stderr
    assert not (strict / "build" / "results" / "resnet").exists()


def test_the_aot_fvp_firmware_records_the_difference_by_default_and_a_bound_refuses_it(
    tmp_path: Path, fake_fvp: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from helpers.qemu_uart import uart_until_eot
    from test_fvp_firmware import DRIVER_DOUBLE
    from test_scons_fvp import fvp_project

    require_firmware_tools()
    project = fvp_project(tmp_path / "project", fvp_firmware="aot", HELIA_ETHOSU_DRIVER_DIR=str(DRIVER_DOUBLE))
    (project / "policy.yaml").write_text("defaults:\n  fvp: {}\n", encoding="utf-8")
    build_ok(project, "kws-runner")
    records = tmp_path / "uart.txt"
    records.write_text(uart_until_eot(project / "build" / "runner" / "kws" / "fvp" / "firmware.elf"), encoding="ascii")
    monkeypatch.setenv("FAKE_FVP_RECORDS", str(records))
    result = build_ok(project)
    bundle = load_result(project / "build" / "results" / "kws")
    verification = bundle.document["run_identity"]["policy"]["verification"]
    assert (verification["resolver"], verification["max_abs_diff"], verification["max_abs_diff_source"]) == (
        "BUILTIN_REF",
        None,
        "default",
    )
    (sample,) = bundle.samples
    assert sample.verification is not None
    ((check),) = sample.verification
    assert check["differing_elements"] > 0  # the driver double computes nothing the NPU would: recorded
    row = next(line for line in result.stdout.splitlines() if line.startswith("kws "))
    assert f"max {check['max_abs_diff']}, {check['differing_elements']} of " in row

    (project / "policy.yaml").write_text("defaults:\n  fvp:\n    verification: {max_abs_diff: 0}\n", encoding="utf-8")
    build_ok(project, "kws-runner")  # the policy is compiled into the firmware: capture its stream again
    records.write_text(uart_until_eot(project / "build" / "runner" / "kws" / "fvp" / "firmware.elf"), encoding="ascii")
    refused = run_scons(project)
    assert refused.returncode == 2, output_of(refused)
    assert "differs from LiteRT reference kernels (BUILTIN_REF) by " in refused.stderr
    assert "more than the policy's verification.max_abs_diff 0; nothing is published" in refused.stderr
    assert not (project / "build" / "results" / "kws").exists()
