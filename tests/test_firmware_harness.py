"""The firmware harness on real QEMU mps3-an547 with Debian's Arm toolchain: startup, semihosting console and
exit status, the fault path, the record stream and the instruction counter.

Without qemu-system-arm or arm-none-eabi-gcc these tests skip on a developer's machine; under CI (CI=true) a
missing tool fails them, since .ci/run installs both.
"""

from __future__ import annotations

import zlib
from pathlib import Path

import pytest
from conftest import require_firmware_tools
from hypothesis import given
from hypothesis import strategies as st

from heliabuild.errors import FirmwareError
from heliabuild.firmware import C_SOURCE_DIR
from heliabuild.firmware.qemu import run_on_qemu
from heliabuild.firmware.records import read_records
from heliabuild.firmware.toolchain import compile_object, link_elf

TEST_SOURCES = Path(__file__).parent / "helpers" / "firmware"
HARNESS = ("semihosting.c", "records.c", "counter.c", "reset.c", "mps3_an547/startup.c")
INSTRUCTIONS_PER_TICK = 31.25


@pytest.fixture(scope="module", autouse=True)
def _tools() -> None:
    require_firmware_tools()


def _build(folder: Path, program: str) -> Path:
    objects = []
    for source in (*(C_SOURCE_DIR / name for name in HARNESS), TEST_SOURCES / program):
        output = folder / "obj" / (source.stem + ".o")
        compile_object(source, output, include_dirs=[C_SOURCE_DIR])
        objects.append(output)
    elf = folder / f"{Path(program).stem}.elf"
    link_elf(objects, elf, C_SOURCE_DIR / "mps3_an547" / "memory.ld")
    return elf


@pytest.fixture(scope="module")
def probe(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _build(tmp_path_factory.mktemp("probe"), "probe.c")


def test_probe_exits_with_its_status_and_writes_verified_records(probe: Path) -> None:
    run = run_on_qemu(probe, timeout_s=30)
    assert (run.exit_status, run.timed_out) == (7, False)
    stream = read_records(run.console, complete=False)
    assert [record.kind for record in stream.records] == ["spin"] * 6 + ["bytes"]
    assert stream.records[-1].fields == (b"\x00\x01\xab\xff\x10", -7)
    assert stream.console == ()


def test_counter_counts_instructions_at_systick_resolution(probe: Path) -> None:
    spins = read_records(run_on_qemu(probe, timeout_s=30).console, complete=False).of_kind("spin")
    baseline = spins[0].fields[1] * INSTRUCTIONS_PER_TICK
    for record in spins[1:]:
        iterations, ticks = record.fields
        measured = ticks * INSTRUCTIONS_PER_TICK - baseline
        assert abs(measured - 2 * iterations) <= 2 * INSTRUCTIONS_PER_TICK, (iterations, ticks)


def test_counts_are_identical_across_runs(probe: Path) -> None:
    first, second = (run_on_qemu(probe, timeout_s=30).console for _ in range(2))
    assert first == second


def test_elf_is_byte_identical_across_build_folders(tmp_path: Path, probe: Path) -> None:
    again = _build(tmp_path / "elsewhere" / "deeper", "probe.c")
    assert again.read_bytes() == probe.read_bytes()
    assert str(tmp_path).encode() not in again.read_bytes()


def test_a_fault_reports_and_exits_non_zero(tmp_path: Path) -> None:
    run = run_on_qemu(_build(tmp_path, "fault.c"), timeout_s=30)
    assert run.exit_status == 5
    with pytest.raises(FirmwareError, match="no end record"):
        read_records(run.console)
    (fault,) = read_records(run.console, complete=False).records
    assert fault.kind == "fault"
    exception, _pc, cfsr, _hfsr = fault.fields
    assert exception in (3, 5)  # HardFault, or BusFault once enabled
    assert cfsr != 0


def test_a_firmware_that_never_exits_is_stopped_by_the_timeout(tmp_path: Path) -> None:
    run = run_on_qemu(_build(tmp_path, "hang.c"), timeout_s=1.5)
    assert run.timed_out and run.exit_status is None


def test_missing_elf_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(FirmwareError, match="the firmware ELF does not exist"):
        run_on_qemu(tmp_path / "absent.elf")


def _record(seq: int, kind: str, *fields: str) -> str:
    body = " ".join(("@hb1", str(seq), kind, *fields)) + " "
    return f"{body}*{zlib.crc32(body.encode()):08x}"


GOOD = "\n".join(
    [_record(0, "begin", "1"), "console text", _record(1, "sample", "0", "12345", "x00ff"), _record(2, "end", "2"), ""]
)
CONSOLE_LINE = (GOOD.index("console"), GOOD.index("console") + len("console text"))


def test_read_records_accepts_a_good_stream() -> None:
    stream = read_records(GOOD)
    assert [(r.seq, r.kind, r.fields) for r in stream.records] == [
        (0, "begin", (1,)),
        (1, "sample", (0, 12345, b"\0\xff")),
        (2, "end", (2,)),
    ]
    assert stream.console == ("console text",)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (_record(1, "begin"), "record 1 where record 0 was due"),
        (_record(0, "a") + "\n" + _record(0, "a"), "record 0 where record 1 was due .a record is repeated"),
        (_record(0, "a", "x0"), "malformed record"),
        (_record(0, "a")[:-1] + "Z", "malformed record"),
        (_record(0, "a", "1")[:-8] + _record(0, "a", "2")[-8:], "fails its checksum"),
        ("noise " + _record(0, "a"), "not at the start of its line"),
        (_record(0, "a")[:12], "malformed record"),
        (_record(0, "a"), "no end record"),
        (_record(0, "end", "0") + "\n" + _record(1, "a"), "a record after the end record"),
        (_record(0, "end", "5"), "the end record counts"),
    ],
)
def test_read_records_refuses_a_bad_stream(text: str, message: str) -> None:
    with pytest.raises(FirmwareError, match=message):
        read_records(text, "qemu")


@given(st.data())
def test_any_changed_byte_in_a_record_is_detected(data: st.DataObject) -> None:
    position = data.draw(
        st.integers(0, len(GOOD) - 2).filter(lambda k: GOOD[k] != "\n" and not CONSOLE_LINE[0] <= k < CONSOLE_LINE[1])
    )
    replacement = data.draw(st.characters(min_codepoint=32, max_codepoint=126).filter(lambda c: c != GOOD[position]))
    tampered = GOOD[:position] + replacement + GOOD[position + 1 :]
    with pytest.raises(FirmwareError):
        read_records(tampered)


def test_the_firmware_build_names_the_kernels_folder_without_importing_it() -> None:
    from heliabuild.firmware.build import KERNEL_SOURCE_DIR
    from heliabuild.kernels.native import C_SOURCE_DIR as NATIVE_DIR

    assert KERNEL_SOURCE_DIR == NATIVE_DIR
