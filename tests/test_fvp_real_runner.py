"""The fvp backend's log reader on bytes no one here wrote: Arm's prebuilt runner as `mlia-ethos-u` ships it.

The Corstone-300 runners (MLEK 25.12.0) boot on QEMU's mps3-an547 (Corstone-300's CPU, memory map and UART0, but
no Ethos-U) and stop at the NPU's absence: real firmware output, which the reader must classify as the runner's
own failure. Their machine code shows how every runner ends (EOT, then the exit code's byte) and that it writes
CRLF. And every line the FAKE FVP (tests/helpers/fake_fvp.py) says comes from the AXF is looked for in
the AXF's bytes, so the double cannot drift from the firmware it copies. No FVP runs here.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
from conftest import require_firmware_tools, require_prebuilt_runner
from helpers import fake_fvp
from helpers.qemu_uart import uart_bytes

from heliabuild.errors import FvpError
from heliabuild.fvp.firmware import prebuilt_runner
from heliabuild.fvp.log import read_job
from heliabuild.fvp.targets import TARGETS
from heliabuild.subprocesses import BoundedRun

BOOTING = [target for target in TARGETS if target.platform == "corstone-300"]
"""The runners QEMU's mps3-an547 boots: Corstone-300's (Cortex-M55); Corstone-310 and 320 run a Cortex-M85."""


@pytest.fixture(autouse=True)
def _tools() -> None:
    require_prebuilt_runner()


def _run(console: bytes) -> BoundedRun:
    """A job's run as heliabuild.subprocesses.run_bounded makes it of an FVP's stdout (decoded as UTF-8,
    undecodable bytes replaced)."""
    text = console.decode("utf-8", errors="replace")
    return BoundedRun(
        exit_status=0, console=text, timed_out=False, output_overflow=False, diagnostics="", output=console
    )


@pytest.mark.parametrize("target", BOOTING, ids=lambda target: target.executable)
def test_the_real_runner_booted_on_qemu_is_read_as_its_own_failure(target: object) -> None:
    require_firmware_tools()
    runner = prebuilt_runner(target)  # type: ignore[arg-type]
    console = uart_bytes(runner.path)
    # What the reader depends on, in the real bytes: CRLF lines, the last line, EOT, then the exit code as one
    # raw byte, 0 although the runner failed (its `main` returns 0 whatever happened).
    assert console.endswith(b"INFO - program terminating...\r\n\x04\x00"), console[-200:]
    firmware = console.split(b"\x04", 1)[0]
    assert all(line.endswith(b"\r") for line in firmware.split(b"\n")[:-1]) and firmware.endswith(b"\r\n")
    npu = {"ethos-u55": "u55", "ethos-u65": "u65"}[target.npu]  # type: ignore[attr-defined]
    boot = "".join(line + "\r\n" for line in fake_fvp.QEMU_BOOT[npu]).encode()
    assert boot in console  # the double's boot lines are the real ones, in order
    for unmodified in (console, console[:-1]):  # the FVP may or may not pass the byte after EOT
        with pytest.raises(FvpError) as error:
            read_job(_run(unmodified), target.npu, "segment 0 (QEMU mps3-an547)")  # type: ignore[attr-defined]
        assert error.value.message == (
            "segment 0 (QEMU mps3-an547): the runner failed: 'E: E: ERROR - Failed to initialise Ethos-U device'"
        )


@pytest.mark.parametrize("target", TARGETS, ids=lambda target: target.executable)
def test_the_fake_fvp_prints_strings_of_the_shipped_axf(target: object) -> None:
    """Each fixture line of the double that names the AXF as its source is a string of the AXF (`strings`)."""
    data = prebuilt_runner(target).path.read_bytes()  # type: ignore[arg-type]
    npu = {"ethos-u55": "u55", "ethos-u65": "u65", "ethos-u85": "u85"}[target.npu]  # type: ignore[attr-defined]
    strings = [
        "INFO - ",
        "WARN - ",
        "ERROR - ",
        "Ethos-U device initialised",
        "Ethos-U version info:",
        "\tMACs/cc:    %lu",
        "Model pointer: 0x%08x",
        "%d input tensor/s populated with %d bytes with data read from 0x%08x",
        "Running inference... ",
        "Inference completed.",
        "Inference failed.",
        "Invoke failed.",
        "Counter overflow detected for %s.",
        "E: %s:%d: NPU config mismatch. npu.macs_per_cc=%u, optimizer.macs_per_cc=%u",
        "Final results:",
        "Total number of inferences: 1",
        "program terminating...",
        '{"profiling_group": "',
        '", "count": ',
        ', "samples": [',
        '{"name": "',
        '"value": [',
        "<%s>",
        "</%s>",
        "metrics",
        "NPU ACTIVE",
        "NPU IDLE",
        "NPU TOTAL",
        *fake_fvp.BEAT_NAMES[npu],
    ]
    missing = [text for text in strings if not any(b"\0" + text.encode() + end in data for end in (b"\0", b"\n\0"))]
    assert missing == []


def _disassembly(axf: Path, function: str) -> str:
    run = subprocess.run(
        ["arm-none-eabi-objdump", "-d", f"--disassemble={function}", str(axf)],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return run.stdout.split(f"<{function}>:", 1)[1]


@pytest.mark.parametrize("target", TARGETS, ids=lambda target: target.executable)
def test_the_runner_ends_with_eot_then_its_code_byte_and_writes_crlf(target: object) -> None:
    """What the reader assumes of every shipped runner, read from its machine code (arm-none-eabi-objdump):
    `_exit(code)` sends EOT (`movs r0, #4`, `bl UartPutc`) and then the code's low byte (`uxtb`, `bl UartPutc`),
    directly or through `UartEndSimulation`; `UartPutc` sends CR (13) before every LF (10)."""
    require_firmware_tools()
    axf = prebuilt_runner(target).path  # type: ignore[arg-type]
    ending = _disassembly(axf, "_exit")
    if "<UartEndSimulation>" in ending:  # the Debug build calls it; the others inline it
        ending = _disassembly(axf, "UartEndSimulation")
    line = r"\n[^\n]*"
    call = r"bl\s+\S+ <UartPutc>"
    eot_then_byte = rf"movs\s+r0, #4[^\n]*{line}{call}(?:{line}){{1,3}}?uxtb[^\n]*(?:{line}){{1,2}}?{call}"
    calls = re.findall(eot_then_byte, ending)
    assert len(calls) == 1, ending
    putc = _disassembly(axf, "UartPutc")
    assert re.search(r"cmp\s+r[0-9], #10\b", putc) and re.search(r"movs\s+r[0-9], #13\b", putc), putc
