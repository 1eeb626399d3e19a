"""heliabuild.fvp.log, targets and command: the strict UART log reader, target resolution, the command line."""

from __future__ import annotations

import base64
import json
import subprocess
import sys
from pathlib import Path

import pytest

from heliabuild.errors import FvpError
from heliabuild.firmware.qemu import QemuRun
from heliabuild.fvp.command import fvp_arguments, job_command, recorded_command
from heliabuild.fvp.counters import sample_figures
from heliabuild.fvp.log import read_job
from heliabuild.fvp.targets import TARGETS, resolve_target

U55 = {
    "NPU ACTIVE": 100,
    "NPU IDLE": 5,
    "NPU TOTAL": 105,
    "NPU AXI0_RD_DATA_BEAT_RECEIVED": 10,
    "NPU AXI0_WR_DATA_BEAT_WRITTEN": 20,
    "NPU AXI1_RD_DATA_BEAT_RECEIVED": 30,
}


def _metrics(values: dict[str, int]) -> str:
    groups = [{"samples": [{"name": name, "value": [value]} for name, value in values.items()]}]
    return "<metrics>" + base64.b64encode(json.dumps(groups).encode()).decode() + "</metrics>"


def _run(console: str, **flags: bool) -> QemuRun:
    return QemuRun(
        exit_status=0,
        console=console,
        timed_out=flags.get("timed_out", False),
        output_overflow=flags.get("overflow", False),
        diagnostics="",
    )


def _good(values: dict[str, int] = U55) -> str:
    return (
        _metrics(values)
        + "\nApplication exit code: 0.\n\x04EXITTHESIM\nInfo: /OSCI/SystemC: Simulation stopped by user.\n"
    )


def test_good_log() -> None:
    job = read_job(_run(_good()), "ethos-u55", "job")
    assert (job.cycles, job.traffic_beats, job.overflow) == (100, 60, False)


def test_axi1_write_beats_are_counted_when_reported() -> None:
    job = read_job(_run(_good({**U55, "NPU AXI1_WR_DATA_BEAT_WRITTEN": 4})), "ethos-u65", "job")
    assert job.traffic_beats == 64


def test_overflow_is_flagged_never_wrapped() -> None:
    job = read_job(_run(_good({**U55, "NPU TOTAL": 1 << 32})), "ethos-u55", "job")
    assert job.overflow and job.cycles is None and job.traffic_beats is None
    figures = sample_figures([job, read_job(_run(_good()), "ethos-u55", "job")])
    assert figures["cycles"] is None and figures["traffic_beats"] is None and figures["segment_traffic_beats"] is None
    assert figures["sanity"]["counter_overflow"] is True


@pytest.mark.parametrize(
    ("console", "flags", "message"),
    [
        (_good(), {"timed_out": True}, "wall-clock bound"),
        (_good(), {"overflow": True}, "more output than the host reads"),
        ("INFO - start\n" + _metrics(U55)[:30], {}, "ends mid-line"),
        ("Info: Simulation is stopping. Reason: CPU time has been exceeded.\n", {}, "CPU time has been exceeded"),
        ("TFLM - Didn't find op for builtin opcode 'X'\nApplication exit code: 1.\n\x04\n", {}, "the runner failed"),
        ("TFLM - Failed to allocate tensors\n", {}, "the runner failed"),
        ("E: NPU config mismatch\n", {}, "the runner failed"),
        (_metrics(U55) + "\n\x04\n", {}, "no 'Application exit code'"),
        (_metrics(U55) + "\nApplication exit code: 3.\n\x04\n", {}, "exit code 3"),
        (_metrics(U55) + "\nApplication exit code: 0.\nApplication exit code: 0.\n\x04\n", {}, "2 application exit"),
        (_metrics(U55) + "\nApplication exit code: 0.\n", {}, "sent no EOT"),
        ("Application exit code: 0.\n\x04\n", {}, "holds 0 <metrics> blocks"),
        (_good({k: v for k, v in U55.items() if k != "NPU AXI0_WR_DATA_BEAT_WRITTEN"}), {}, "lacks NPU AXI0_WR"),
        (_good({**U55, "NPU ACTIVE": 200}), {}, "exceeds NPU TOTAL"),
        (_good({**U55, "NPU ACTIVE": -1}), {}, "not a 64-bit counter value"),
        ("<metrics>!!!</metrics>\nApplication exit code: 0.\n\x04\n", {}, "not base64"),
    ],
)
def test_bad_logs(console: str, flags: dict[str, bool], message: str) -> None:
    with pytest.raises(FvpError, match=r"^job: ") as caught:
        read_job(_run(console, **flags), "ethos-u55", "job")
    assert message in caught.value.message


def test_u85_beats_are_sram_and_external() -> None:
    values = {"NPU ACTIVE": 9, "NPU IDLE": 1, "NPU TOTAL": 10}
    names = ("SRAM_RD_DATA_BEAT_RECEIVED", "SRAM_WR_DATA_BEAT_WRITTEN", "EXT_RD_DATA_BEAT_RECEIVED")
    values |= {f"NPU ETHOSU_PMU_{name}": 1 for name in (*names, "EXT_WR_DATA_BEAT_WRITTEN")}
    assert read_job(_run(_good(values)), "ethos-u85", "job").traffic_beats == 4
    with pytest.raises(FvpError, match="lacks NPU ETHOSU_PMU_SRAM_RD"):
        read_job(_run(_good()), "ethos-u85", "job")


def test_target_resolution_and_refusals() -> None:
    assert resolve_target("ethos-u55-128").target.executable == "FVP_Corstone_SSE-300_Ethos-U55"
    assert resolve_target("ethos-u65-512", "corstone-310").target.executable == "FVP_Corstone_SSE-310_Ethos-U65"
    assert resolve_target("ethos-u85-2048").target.executable == "FVP_Corstone_SSE-320"
    with pytest.raises(FvpError, match="corstone-300 runs ethos-u55 or ethos-u65 only"):
        resolve_target("ethos-u85-256", "corstone-300")
    with pytest.raises(FvpError, match="compiled for ethos-u55-256, but FVP target corstone-300/ethos-u55-128"):
        resolve_target("ethos-u55-256", "corstone-300/ethos-u55-128")
    with pytest.raises(FvpError, match="is not one a Corstone FVP runs"):
        resolve_target("ethos-u65-128")
    with pytest.raises(FvpError, match="FVP target 'corstone-999' is not known"):
        resolve_target("ethos-u55-128", "corstone-999")


def test_command_line_is_the_documented_one() -> None:
    u55 = fvp_arguments(resolve_target("ethos-u55-64"), 600)
    assert u55[u55.index("ethosu.num_macs=64") - 1] == "-C"
    assert "mps3_board.uart0.out_file=-" in u55 and "mps3_board.uart0.shutdown_on_eot=1" in u55
    assert u55[-3:] == ["--stat", "--timelimit", "600"]
    u85 = fvp_arguments(resolve_target("ethos-u85-512"), 30)
    assert "mps4_board.subsystem.ethosu.num_macs=512" in u85 and "vis_hdlcd.disable_visualisation=1" in u85
    assert not any("fast" in part for part in u55 + u85)
    record = recorded_command(resolve_target("ethos-u55-64"), 600)
    assert record[:5] == ["<fvp>", "-a", "<application>", "--data", "<segment model>@0x90000000"]


@pytest.mark.parametrize("target", TARGETS, ids=lambda t: t.executable)
def test_fake_fvp_checks_its_argument_vector(tmp_path: Path, target: object) -> None:
    """The FAKE FVP test double accepts exactly the documented vector for each target, nothing else."""
    fake = tmp_path / target.executable  # type: ignore[attr-defined]
    fake.write_text(f"#!{sys.executable}\n" + (Path(__file__).parent / "helpers" / "fake_fvp.py").read_text())
    fake.chmod(0o755)
    (tmp_path / "app.axf").write_bytes(b"\0" * 16)
    (tmp_path / "model.tflite").write_bytes(b"\0" * 64)
    macs = {"ethos-u55": 128, "ethos-u65": 256, "ethos-u85": 256}[target.npu]  # type: ignore[attr-defined]
    config = resolve_target(f"{target.npu}-{macs}", target.platform)  # type: ignore[attr-defined]
    good = job_command(fake, tmp_path / "app.axf", tmp_path / "model.tflite", fvp_arguments(config, 10))
    run = subprocess.run(good, capture_output=True, text=True, timeout=60, check=False)
    assert run.returncode == 0 and "Application exit code: 0." in run.stdout, run.stderr
    for bad in (good[:-2], [*good[:5], "-C", "ethosu.extra_args=--fast", *good[5:]], good[:5] + good[7:]):
        run = subprocess.run(bad, capture_output=True, text=True, timeout=60, check=False)
        assert run.returncode == 97 and run.stderr.startswith("fake FVP: ")


def test_missing_package_is_one_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    from heliabuild.fvp import firmware

    monkeypatch.setattr(firmware, "PACKAGE", "heliabuild-no-such-package")
    with pytest.raises(FvpError, match="package is not installed") as caught:
        firmware.prebuilt_runner(TARGETS[0])
    assert "pip install heliabuild[fvp]" in (caught.value.hint or "")


def test_missing_fvp_names_what_to_install(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from heliabuild.fvp.locate import find_fvp

    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("HELIA_FVP_DIR", raising=False)
    with pytest.raises(FvpError, match=r"^FVP_Corstone_SSE-320 is not on PATH") as caught:
        find_fvp("FVP_Corstone_SSE-320")
    assert "install Arm's FVP_Corstone_SSE-320" in (caught.value.hint or "")
