"""The host's checks of a firmware's record stream (heliabuild.firmware.protocol), driven through a TEST DOUBLE
of QEMU: `fake_qemu` puts a `qemu-system-arm` script first on PATH that replays a recorded console (a real
firmware's, captured once on real QEMU, then tampered with) and exits with a chosen status. Each bad stream
must be one FirmwareError naming what differs; the good replay must be accepted."""

from __future__ import annotations

import os
import stat
import zlib
from pathlib import Path

import pytest
from conftest import require_firmware_tools

from heliabuild.aot.stage import write_plan
from heliabuild.codegen.module import generate_module
from heliabuild.errors import FirmwareError
from heliabuild.firmware.build import link_firmware
from heliabuild.firmware.config import CONFIG_SOURCE, FirmwarePolicy, firmware_config_source
from heliabuild.firmware.protocol import Expectation, input_crc32, read_run
from heliabuild.firmware.qemu import run_on_qemu
from heliabuild.model import load_model, model_sha256, save_model
from heliabuild.synth import synthesize

POLICY = FirmwarePolicy("carry", 1, 2)


@pytest.fixture(scope="module")
def recorded(firmware_library: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Expectation, Path]:
    """A real console of the synthetic chain fenced once, captured on real QEMU, and what the runner expects."""
    require_firmware_tools()
    from heliabuild.fence import rewrite_model_with_fences

    folder = tmp_path_factory.mktemp("recorded")
    source = folder / "chain.tflite"
    save_model(synthesize("chain", seed=0), source)
    model = folder / "chain_fenced.tflite"
    rewrite_model_with_fences(source, [3]).save(model)
    write_plan(model, folder, "net", "mps3_an547")
    module = generate_module(model, folder / "net_plan.json", "net", folder / "gen")
    (folder / "gen" / CONFIG_SOURCE).write_bytes(firmware_config_source("net", POLICY, [None]))
    elf = link_firmware(
        firmware_library, [module.source, folder / "gen" / CONFIG_SOURCE], [folder / "gen"], folder / "fw.elf"
    )
    run = run_on_qemu(elf, timeout_s=60)
    assert run.exit_status == 0
    layout = module.layout
    expectation = Expectation(
        segments=2,
        input_count=1,
        output_bytes=tuple(layout.activation_bytes[t] for t in layout.outputs),
        state="carry",
        warmup_invokes=1,
        measured_invokes=2,
        arena_bytes=layout.arena.size,
        model_sha256=model_sha256(load_model(model)),
        input_crc32=input_crc32([None], [layout.activation_bytes[t] for t in layout.inputs]),
    )
    return run.console, expectation, elf


def fake_qemu(folder: Path, monkeypatch: pytest.MonkeyPatch, console: str, status: int = 0, sleep: float = 0) -> None:
    """Install the TEST DOUBLE of qemu-system-arm: it prints `console` and exits with `status`."""
    folder.mkdir(parents=True, exist_ok=True)
    replay = folder / "console.txt"
    replay.write_text(console)
    script = folder / "qemu-system-arm"
    script.write_text(
        f"#!/bin/sh\n# test double of QEMU: replays a recorded console\nsleep {sleep}\ncat '{replay}'\nexit {status}\n"
    )
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ['PATH']}")


def _lines(console: str) -> list[str]:
    return [line for line in console.split("\n") if line]


def _resign(line: str) -> str:
    """A record line with its checksum recomputed: well-formed, so only its content can be refused."""
    body = line[: line.rindex("*")]
    return f"{body}*{zlib.crc32(body.encode()):08x}"


def _edit(console: str, kind: str, change) -> str:  # type: ignore[no-untyped-def]
    lines = _lines(console)
    position = next(k for k, line in enumerate(lines) if line.split()[2] == kind)
    fields = lines[position].split()
    fields = change(fields)
    lines[position] = _resign(" ".join(fields[:-1]) + " *00000000")
    return "\n".join(lines) + "\n"


def test_the_test_double_replaying_a_good_run_is_accepted(
    recorded: tuple[str, Expectation, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    console, expectation, elf = recorded
    fake_qemu(tmp_path / "bin", monkeypatch, console)
    run = read_run(run_on_qemu(elf), expectation)
    assert len(run.samples) == 2 and run.receipt.initialization == "before_measurement"


def _replace_field(index: int, value: str):  # type: ignore[no-untyped-def]
    def change(fields: list[str]) -> list[str]:
        fields[index] = value
        return fields

    return change


BAD_STREAMS = {
    "a dropped record": (lambda c: "\n".join(_lines(c)[:2] + _lines(c)[3:]) + "\n", "where record 2 was due"),
    "a repeated record": (lambda c: "\n".join(_lines(c)[:3] + _lines(c)[2:]) + "\n", "record 2 where record 3 was due"),
    "a flipped byte": (lambda c: c.replace("sample 0 ", "sample 1 ", 1), "fails its checksum"),
    "a cut last line": (lambda c: c[: c.rindex("*") + 3], "malformed record"),
    "no end record": (lambda c: "\n".join(_lines(c)[:-1]) + "\n", "no end record"),
    "more measured samples than the policy": (
        lambda c: _edit(c, "begin", _replace_field(9, "3")),
        "reports measured count 3, the frozen runner says 2",
    ),
    "another warmup count": (
        lambda c: _edit(c, "begin", _replace_field(8, "0")),
        "reports warmup count 0, the frozen runner says 1",
    ),
    "a receipt contradicting the policy": (
        lambda c: _edit(c, "receipt", _replace_field(5, "5")),
        "reports receipt warmup count 5",
    ),
    "segments not adding up": (
        lambda c: _edit(c, "sample", _replace_field(5, "7")),
        r"segment ticks .* add up to",
    ),
    "a firmware of another model": (
        lambda c: _edit(c, "begin", _replace_field(11, "x" + "ab" * 32)),
        "the firmware runs the model with sha256 abab",
    ),
    "other input bytes": (
        lambda c: _edit(c, "begin", _replace_field(12, "12345")),
        "the firmware fills input 0 with bytes of CRC-32 00003039",
    ),
    "an output of the wrong size": (
        lambda c: _edit(c, "output", lambda f: [*f[:5], f[5] + "00", f[6]]),
        "has 13 bytes, expected 12",
    ),
}


@pytest.mark.parametrize("case", list(BAD_STREAMS), ids=list(BAD_STREAMS))
def test_the_test_double_replaying_a_bad_stream_is_refused(
    case: str, recorded: tuple[str, Expectation, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    console, expectation, elf = recorded
    tamper, message = BAD_STREAMS[case]
    fake_qemu(tmp_path / "bin", monkeypatch, tamper(console))
    with pytest.raises(FirmwareError, match=message):
        read_run(run_on_qemu(elf), expectation)


def test_the_test_double_exiting_non_zero_after_a_fault_is_reported(
    recorded: tuple[str, Expectation, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, expectation, elf = recorded
    fault = _resign("@hb1 0 fault 3 268435712 1024 1073741824 *00000000")
    fake_qemu(tmp_path / "bin", monkeypatch, fault + "\n", status=5)
    with pytest.raises(FirmwareError, match=r"the firmware faulted: HardFault at pc 0x10000100 \(CFSR 0x00000400"):
        read_run(run_on_qemu(elf), expectation)


def test_the_test_double_that_never_exits_is_a_timeout(
    recorded: tuple[str, Expectation, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, expectation, elf = recorded
    fake_qemu(tmp_path / "bin", monkeypatch, "", sleep=30)
    with pytest.raises(FirmwareError, match="did not exit before the timeout"):
        read_run(run_on_qemu(elf, timeout_s=1), expectation)
