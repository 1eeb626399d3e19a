"""heliabuild.fvp.log, targets and command: the strict UART log reader, target resolution, the command line."""

from __future__ import annotations

import base64
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from helpers.fake_fvp import (
    BOOT,
    COMPLETED,
    FAILED,
    INVOKE_FAILED,
    MISMATCH,
    QEMU_BOOT,
    RESULTS,
    STOPPED,
    TERMINATING,
    VERSION,
    uart,
)
from hypothesis import given, settings
from hypothesis import strategies as st

from heliabuild.errors import FvpError
from heliabuild.fvp.command import fvp_arguments, job_command, recorded_command
from heliabuild.fvp.counters import sample_figures
from heliabuild.fvp.locate import fvp_version
from heliabuild.fvp.log import UnreadLog, read_job, read_log
from heliabuild.fvp.targets import TARGETS, resolve_target
from heliabuild.subprocesses import BoundedRun

U55 = {
    "NPU ACTIVE": 100,
    "NPU IDLE": 5,
    "NPU TOTAL": 105,
    "NPU AXI0_RD_DATA_BEAT_RECEIVED": 10,
    "NPU AXI0_WR_DATA_BEAT_WRITTEN": 20,
    "NPU AXI1_RD_DATA_BEAT_RECEIVED": 30,
}
"""A metrics document in the prebuilt runner's counter order (the facts file; tests/helpers/fake_fvp.py)."""
FVP_STOP = "\n" + STOPPED + "\n"  # the FVP's own line after the firmware's EOT (the facts file)


def _metrics(values: dict[str, Any]) -> str:
    """The runner's metrics line for `values` (the JSON shape of the facts file, as fake_fvp.metrics_line)."""
    samples = [{"name": name, "value": [value]} for name, value in values.items()]
    document = [{"profiling_group": "Inference", "count": 1, "samples": samples}]
    return "INFO - <metrics>" + base64.b64encode(json.dumps(document).encode()).decode() + "</metrics>"


def _run(console: str, exit_status: int | None = 0, **flags: bool) -> BoundedRun:
    return BoundedRun(
        exit_status=exit_status,
        console=console,
        timed_out=flags.get("timed_out", False),
        output_overflow=flags.get("overflow", False),
        diagnostics="",
    )


def _mlek(*body: str, code: str = "\x00") -> str:
    """The prebuilt runner's log (fake_fvp's fixture lines, each naming its source): the boot, `body`, the final
    results, `INFO - program terminating...` in CRLF, EOT, the code byte, then the FVP's stop line."""
    boot = [*QEMU_BOOT["u55"], *(line.format(macs=128, size=64) for line in BOOT)]
    return uart([*boot, *body, *RESULTS, TERMINATING]).decode() + "\x04" + code + FVP_STOP


def _good(values: dict[str, Any] = U55) -> str:
    return _mlek(COMPLETED, _metrics(values))


def _core_platform(values: dict[str, Any] = U55, code: int = 0) -> str:
    """A core-platform runner's log: the metrics, `Application exit code: N.`, EOT, EXITTHESIM (facts file)."""
    return _metrics(values) + f"\nApplication exit code: {code}.\n\x04EXITTHESIM\n" + STOPPED + "\n"


def test_good_prebuilt_runner_log() -> None:
    job = read_job(_run(_good()), "ethos-u55", "job")
    assert (job.cycles, job.traffic_beats, job.overflow) == (100, 60, False)
    assert read_log(_run(_good()), "job").ending == "mlek"


@settings(max_examples=60, deadline=None)
@given(code=st.one_of(st.just(""), st.characters(max_codepoint=255)), after=st.sampled_from(["", FVP_STOP]))
def test_the_code_byte_after_eot_is_not_the_verdict(code: str, after: str) -> None:
    """With or without the exit-code byte after EOT (the FVP may or may not pass it on), whatever its value,
    and whatever the FVP prints after it, the log decides."""
    console = _good().rsplit("\x04", 1)[0] + "\x04" + code + after
    assert read_job(_run(console), "ethos-u55", "job").cycles == 100


def test_core_platform_ending_is_read_as_today() -> None:
    assert read_job(_run(_core_platform()), "ethos-u55", "job").traffic_beats == 60
    log = read_log(_run(_core_platform()), "job")
    assert (log.ending, log.exit_code) == ("core-platform", 0)
    with pytest.raises(FvpError, match="application exit code 3"):
        read_job(_run(_core_platform(code=3)), "ethos-u55", "job")


def test_axi1_write_beats_are_counted_when_reported() -> None:
    job = read_job(_run(_good({**U55, "NPU AXI1_WR_DATA_BEAT_WRITTEN": 4})), "ethos-u65", "job")
    assert job.traffic_beats == 64


def test_a_counter_overflow_warning_gives_null_counts_never_the_wrapped_value() -> None:
    console = _mlek("WARN - Counter overflow detected for NPU ACTIVE.", COMPLETED, _metrics(U55))
    job = read_job(_run(console), "ethos-u55", "job")
    assert job.overflow and job.cycles is None and job.traffic_beats is None
    figures = sample_figures([job, read_job(_run(_good()), "ethos-u55", "job")])
    assert figures["cycles"] is None and figures["traffic_beats"] is None and figures["segment_traffic_beats"] is None
    assert figures["sanity"]["counter_overflow"] is True


def test_large_counts_below_two_to_the_63_are_counts() -> None:
    values = {**U55, "NPU ACTIVE": (1 << 63) - 2, "NPU TOTAL": (1 << 63) - 1}
    job = read_job(_run(_good(values)), "ethos-u55", "job")
    assert (job.cycles, job.overflow) == ((1 << 63) - 2, False)


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        (-1, "-1"),
        (1.5, "1.5"),
        (1 << 63, str(1 << 63)),
        (1 << 64, str(1 << 64)),
        ("12", "'12'"),
        (True, "True"),
    ],
)
def test_bad_counter_values_are_refused_naming_the_counter(value: object, shown: str) -> None:
    with pytest.raises(FvpError) as caught:
        read_job(_run(_good({**U55, "NPU AXI0_WR_DATA_BEAT_WRITTEN": value})), "ethos-u55", "job")
    assert caught.value.message == (
        f"job: <metrics>: counter 'NPU AXI0_WR_DATA_BEAT_WRITTEN' is {shown}, not a count (a whole number in "
        "0..2**63-1): nothing is published"
    )


def test_a_metrics_line_alone_is_never_enough() -> None:
    with pytest.raises(UnreadLog) as caught:
        read_job(_run(_metrics(U55) + "\r\n\x04"), "ethos-u55", "job")
    assert "shows no ending heliabuild reads" in caught.value.message
    assert "'INFO - program terminating...' in CRLF" in caught.value.message
    assert "'Application exit code: N.'" in caught.value.message
    with pytest.raises(UnreadLog, match=r"without reporting 'INFO - Inference completed\.'"):
        read_job(_run(_mlek(_metrics(U55))), "ethos-u55", "job")


def test_the_mismatch_line_is_named_in_words() -> None:
    line = MISMATCH.format(npu=256, model=128).replace("ethosu_driver.c:123", "/src/core-driver/ethosu_driver.c:481")
    with pytest.raises(FvpError) as caught:
        read_job(_run(_mlek(line, INVOKE_FAILED)), "ethos-u55", "job")
    assert caught.value.message.startswith(
        "job: the Ethos-U driver refused the command stream: NPU config mismatch, compiled for 128 MACs, the FVP "
        "has 256 ("
    )
    product = MISMATCH.replace("macs_per_cc={npu}", "product={npu}").replace("macs_per_cc={model}", "product={model}")
    with pytest.raises(FvpError, match="compiled for product 1, the FVP's NPU has 2"):
        read_job(_run(_mlek(product.format(npu=2, model=1), INVOKE_FAILED)), "ethos-u55", "job")
    axi = "E: ethosu_driver.c:9: NPU config mismatch. npu.num_axi_ext=1, optimizer.num_axi_ext=2"  # issue 19's list
    with pytest.raises(FvpError, match="compiled for 2 AXI external ports, the FVP's NPU has 1"):
        read_job(_run(_mlek(axi, INVOKE_FAILED)), "ethos-u85", "job")


@settings(max_examples=200, deadline=None)
@given(
    junk=st.binary(max_size=3000),
    cut=st.tuples(st.integers(0, 2000), st.integers(0, 2000)),
    exit_status=st.sampled_from([0, 1, None]),
)
def test_any_bytes_are_one_fvp_error_or_counters(junk: bytes, cut: tuple[int, int], exit_status: int | None) -> None:
    """Whatever bytes an FVP writes (a good log with any stretch replaced by any bytes, or bytes alone), the
    reader gives counters or one FvpError, never another exception."""
    good = _good().encode()
    start, end = sorted(cut)
    data = good[:start] + junk + good[end:]
    console = data.decode("utf-8", errors="replace")
    run = BoundedRun(
        exit_status=exit_status, console=console, timed_out=False, output_overflow=False, diagnostics="", output=data
    )
    try:
        read_job(run, "ethos-u55", "job")
    except FvpError as error:
        assert error.message.startswith("job: ") and "\n" not in error.message


@pytest.mark.parametrize(
    "line",
    [
        FAILED,
        "ERROR - Failed to initialise model",  # AXF string
        "E [ExecuTorch: method.cpp:123 init()] Missing operator",  # AXF format `%c [ExecuTorch: %s:%zu %s()] %s`
        "TFLM - Didn't find op for builtin opcode 'CONV_2D'",  # facts file (MLIA's failure lines)
        "TFLM - Failed to get registration from op code CUSTOM",  # facts file (MLIA's failure lines)
        "E: ethosu_driver.c:77: NPU inference timed out.",  # AXF string `E: %s:%d: NPU inference timed out.`
        "E: E: ERROR - Failed to initialise Ethos-U device",  # the QEMU boot's line
    ],
)
def test_error_lines_fail_the_run_quoted(line: str) -> None:
    with pytest.raises(FvpError) as caught:
        read_job(_run(_mlek(line, COMPLETED, _metrics(U55))), "ethos-u55", "job")
    assert caught.value.message == f"job: the runner failed: {line.strip()!r}"


def test_a_non_zero_fvp_exit_after_a_complete_log_fails_the_run() -> None:
    with pytest.raises(FvpError) as caught:
        read_job(_run(_good(), exit_status=1), "ethos-u55", "job")
    assert caught.value.message.startswith("job: the FVP exited with status 1 after a complete log")


@pytest.mark.parametrize(
    ("console", "flags", "message"),
    [
        (_good(), {"timed_out": True}, "wall-clock bound"),
        (_good(), {"overflow": True}, "more output than the host reads"),
        ("INFO - start\r\n" + _metrics(U55)[:30], {}, "holds no EOT (0x04)"),
        ("Info: Simulation is stopping. Reason: CPU time has been exceeded.\n", {}, "CPU time has been exceeded"),
        (_mlek(COMPLETED), {}, "printed no 'INFO - <metrics>...</metrics>' line"),
        (_mlek(COMPLETED, _metrics(U55), _metrics(U55)), {}, "holds 2 <metrics> blocks"),
        (_mlek(COMPLETED, "INFO - <metrics>!!!</metrics>"), {}, "not base64"),
        (_good({k: v for k, v in U55.items() if k != "NPU AXI0_WR_DATA_BEAT_WRITTEN"}), {}, "lacks NPU AXI0_WR"),
        (_good({**U55, "NPU ACTIVE": 200}), {}, "exceeds NPU TOTAL"),
        (_good().replace("\r\n", "\n"), {}, "shows no ending heliabuild reads"),
        (bytes(range(5, 256)).decode("utf-8", errors="replace") + "\x04", {}, "shows no ending heliabuild reads"),
        (_metrics(U55) + "\nApplication exit code: 0.\nApplication exit code: 0.\n\x04\n", {}, "2 application exit"),
        (_metrics(U55) + "\nApplication exit code: 0.\n", {}, "holds no EOT"),
        (_metrics(U55) + "\nApplication exit code: 0.\nINFO - more\n\x04", {}, "wrote after 'Application exit"),
    ],
)
def test_bad_logs(console: str, flags: dict[str, bool], message: str) -> None:
    with pytest.raises(FvpError, match=r"^job: ") as caught:
        read_job(_run(console, **flags), "ethos-u55", "job")
    assert message in caught.value.message
    assert "\n" not in caught.value.message


@settings(max_examples=80, deadline=None)
@given(
    before=st.sampled_from(["", "INFO - ", "WARN - ", "E: ", "E: E: ", "INFO - WARN - "]),
    prefix=st.sampled_from(["ERROR - ", "E [ExecuTorch: ", "TFLM - Failed to", "TFLM - Didn't find op for"]),
    rest=st.text(st.characters(blacklist_characters="\r\n\x04", blacklist_categories=("Cs",)), max_size=40),
)
def test_any_failure_line_fails_a_complete_log_quoted(before: str, prefix: str, rest: str) -> None:
    """A failure line (after any log-level prefixes) fails the run, whatever else the log reports."""
    line = before + prefix + rest
    with pytest.raises(FvpError) as caught:
        read_job(_run(_mlek(COMPLETED, line, _metrics(U55))), "ethos-u55", "job")
    assert caught.value.message == "job: the runner failed: " + repr(line.strip())


def test_the_fake_fvp_without_shutdown_on_eot_runs_on_to_its_time_limit(tmp_path: Path) -> None:
    """An FVP told not to stop at EOT keeps simulating the runner, which spins after it, until `--timelimit`: the
    stop reason follows the EOT, and the reader refuses the run as a time limit."""
    fake = tmp_path / "FVP_Corstone_SSE-300_Ethos-U55"
    fake.write_text(f"#!{sys.executable}\n" + (Path(__file__).parent / "helpers" / "fake_fvp.py").read_text())
    fake.chmod(0o755)
    (tmp_path / "app.axf").write_bytes(b"\0" * 16)
    (tmp_path / "model.tflite").write_bytes(b"\0" * 64)
    command = job_command(
        fake, tmp_path / "app.axf", tmp_path / "model.tflite", fvp_arguments(resolve_target("ethos-u55-128"), 1)
    )
    spinning = [
        part
        for k, part in enumerate(command)
        if "shutdown" not in part and "shutdown" not in command[min(k + 1, len(command) - 1)]
    ]
    run = subprocess.run(spinning, capture_output=True, timeout=60, check=False)
    assert run.returncode == 0, run.stderr
    assert b"program terminating...\r\n\x04\x00\nInfo: Simulation is stopping. Reason: CPU time has been" in run.stdout
    stopped = subprocess.run(command, capture_output=True, timeout=60, check=False).stdout
    assert b"Simulation is stopping" not in stopped and b"\x04\x00\nInfo: /OSCI/SystemC: Simulation stopped" in stopped
    console = run.stdout.decode("utf-8", errors="replace")
    with pytest.raises(FvpError, match="CPU time has been exceeded"):
        read_job(_run(console), "ethos-u55", "job")


@pytest.mark.parametrize(
    "filler", ["<metrics>", "Info: Simulation is stopping. Reason: ", "E: E: x", "WARN - Overflow detected for "]
)
def test_a_hostile_log_of_repeated_markers_is_read_in_one_pass(filler: str) -> None:
    """Two MiB of one marker on one line (an FVP's output bound is 16 MiB): read and refused, not matched again
    and again from every opening."""
    console = filler * ((2 << 20) // len(filler)) + "\r\n\x04"
    with pytest.raises(FvpError):
        read_job(_run(console), "ethos-u55", "job")


def test_the_aot_ending_is_core_platform_only() -> None:
    with pytest.raises(UnreadLog, match=r"not core-platform's 'Application exit code: N\.'$"):
        read_log(_run(_good()), "job", endings=("core-platform",))


def test_the_fvp_version_is_read_from_fast_models_line(tmp_path: Path) -> None:
    """`--version` prints `Fast Models [11.27.25 (date)]` and a copyright line, never the word "version" (the facts
    file; fake_fvp.VERSION)."""
    fake = tmp_path / "FVP_Corstone_SSE-300_Ethos-U55"
    fake.write_text(f"#!{sys.executable}\n" + (Path(__file__).parent / "helpers" / "fake_fvp.py").read_text())
    fake.chmod(0o755)
    assert "version" not in VERSION.lower()
    assert fvp_version(fake) == "11.27.25"


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
    run = subprocess.run(good, capture_output=True, timeout=60, check=False)
    assert run.returncode == 0 and b"INFO - program terminating...\r\n\x04\x00" in run.stdout, run.stderr
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
