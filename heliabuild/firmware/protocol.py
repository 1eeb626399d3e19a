"""What a firmware run says, checked against what it was built to do (docs/firmware.md, "Record stream").

`read_run(qemu_run, expected)` accepts a run only when QEMU exited 0 within its timeout, the record stream is
complete and verified (heliabuild.firmware.records), and every record agrees with the frozen build:

    begin   1 segments inputs outputs state warmups measured arena_bytes xMODEL_SHA256 input_crc32...   first
    sample  index invoke_ticks segment_ticks...                            measured times, in order
      or npu_sample index events (streams overflow count...) per segment  on an NPU (Expectation.npu_events)
    output  index position xBYTES                                          per sample, every output once
    receipt 1 state warmups measured initialization                        once, after the samples
    end     count                                                          last

Anything else (a count that contradicts the policy, a missing, repeated or extra record, segment ticks that
do not add up to the invoke's, an output of the wrong size) is a FirmwareError naming what differs, and so is
a run that faulted, was refused at init, hit a kernel error, timed out or exited non-zero; the message says
which, from the firmware's own `fault`, `npu_error`, `refused` or `kernel_error` record where it wrote one.
`read_stream(console, expected)` is the same check of a stream whose run ended well by other signs (an FVP's
UART log: its exit code line and EOT, heliabuild.fvp.log).
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from dataclasses import dataclass

from heliabuild.errors import FirmwareError
from heliabuild.firmware.records import Record, RecordStream, read_records
from heliabuild.subprocesses import BoundedRun

PROTOCOL_VERSION = 1
RECEIPT_VERSION = 1
STATE_CODES = {"carry": 0, "single": 1}
INITIALIZATION_CODES = {1: "before_measurement"}
EXIT_STATUSES = {3: "model_init refused the model", 4: "a kernel failed during an invoke", 5: "the CPU faulted"}
FAULT_NAMES = {2: "NMI", 3: "HardFault", 4: "MemManage", 5: "BusFault", 6: "UsageFault", 7: "SecureFault"}


@dataclass(frozen=True)
class Expectation:
    """What the frozen firmware must report: its segment count, output sizes, policy, arena size, the model it
    was generated from and the CRC-32 of each input's bytes."""

    segments: int
    input_count: int
    output_bytes: tuple[int, ...]
    state: str
    warmup_invokes: int
    measured_invokes: int
    arena_bytes: int
    model_sha256: str
    input_crc32: tuple[int, ...]
    npu_events: int | None = None
    """None: the `sample` record of ticks (QEMU); a count: the `npu_sample` record of that many PMU events."""


@dataclass(frozen=True)
class SegmentCounters:
    """One segment's NPU counters in one sample: the command streams counted, whether a counter overflowed,
    and each event's count summed over the streams (heliabuild/firmware/c/npu/helia_ethosu.c)."""

    streams: int
    overflow: bool
    counts: tuple[int, ...]


@dataclass(frozen=True)
class FirmwareSample:
    """One measured invoke: counter ticks for the invoke and per segment (a `sample` record), or the NPU
    counters per segment (an `npu_sample` record; ticks None and empty), and each output's bytes."""

    index: int
    invoke_ticks: int | None
    segment_ticks: tuple[int, ...]
    outputs: tuple[bytes, ...]
    segment_counters: tuple[SegmentCounters, ...] = ()


@dataclass(frozen=True)
class FirmwareReceipt:
    """The receipt the firmware wrote: the lifecycle it ran."""

    state: str
    warmup_invokes: int
    measured_invokes: int
    initialization: str


@dataclass(frozen=True)
class FirmwareRun:
    samples: tuple[FirmwareSample, ...]
    receipt: FirmwareReceipt


def input_crc32(fills: Sequence[bytes | None], sizes: Sequence[int]) -> tuple[int, ...]:
    """The CRC-32 of each input's bytes as the firmware fills them: the given bytes, or zeros of its size."""
    return tuple(zlib.crc32(bytes(size) if fill is None else fill) for fill, size in zip(fills, sizes, strict=True))


NPU_STAGES = {1: "ethosu_init", 2: "ethosu_invoke_v3"}


def _failure(run: BoundedRun, source: str) -> str:
    """Why a run that did not exit 0 failed, in the firmware's words where it left them."""
    if run.timed_out:
        return f"{source}: the firmware did not exit before the timeout; it was stopped and nothing is published"
    if run.output_overflow:
        return f"{source}: the firmware wrote more output than the host reads; it was stopped"
    return stream_failure(run.console, run.exit_status, source)


def stream_failure(console: str, exit_status: int | None, source: str) -> str:
    """Why a firmware that exited with `exit_status` failed, from the records of its `console` output."""
    try:
        stream = read_records(console, source, complete=False)
    except FirmwareError as error:
        return f"{source}: the firmware exited with status {exit_status} and a broken record stream ({error})"
    for record in stream.records:
        numbers = [value for value in record.fields if isinstance(value, int)]
        if len(numbers) != len(record.fields):
            continue
        if record.kind == "fault" and len(numbers) == 4:
            exception, pc, cfsr, hfsr = numbers
            name = FAULT_NAMES.get(exception, f"exception {exception}")
            return f"{source}: the firmware faulted: {name} at pc 0x{pc:08x} (CFSR 0x{cfsr:08x}, HFSR 0x{hfsr:08x})"
        if record.kind == "npu_error" and len(numbers) == 2:
            stage = NPU_STAGES.get(numbers[0], f"driver call {numbers[0]}")
            return f"{source}: the Ethos-U driver's {stage} failed with status {numbers[1]}"
        if record.kind == "refused" and len(numbers) == 2:
            return f"{source}: model_init refused operator {numbers[0]} (kernel status {numbers[1]})"
        if record.kind == "kernel_error" and len(numbers) == 3:
            invoke, operator, status = numbers
            return f"{source}: invoke {invoke}: operator {operator} failed (kernel status {status})"
    reason = EXIT_STATUSES.get(exit_status or 0, "")
    return f"{source}: the firmware exited with status {exit_status}" + (f" ({reason})" if reason else "")


def _ints(record: Record, count: int, source: str) -> list[int]:
    values = [value for value in record.fields if isinstance(value, int)]
    if len(values) != count or len(record.fields) != count:
        raise FirmwareError(
            f"{source}: record {record.seq} ({record.kind}) has {len(record.fields)} fields, expected {count}"
        )
    return values


def _expect(found: int, expected: int, what: str, source: str) -> None:
    if found != expected:
        raise FirmwareError(f"{source}: the firmware reports {what} {found}, the frozen runner says {expected}")


def _check_begin(record: Record, expected: Expectation, source: str) -> None:
    count = 9 + expected.input_count
    fields = record.fields
    if len(fields) != count or not isinstance(fields[8], bytes):
        raise FirmwareError(f"{source}: record {record.seq} (begin) has {len(fields)} fields, expected {count}")
    numbers = [value for k, value in enumerate(fields) if k != 8 and isinstance(value, int)]
    if len(numbers) != count - 1:
        raise FirmwareError(f"{source}: record {record.seq} (begin) has a malformed field")
    version, segments, inputs, outputs, state, warmups, measured, arena, *crcs = numbers
    _expect(version, PROTOCOL_VERSION, "record protocol version", source)
    _expect(segments, expected.segments, "segment count", source)
    _expect(inputs, expected.input_count, "input count", source)
    _expect(outputs, len(expected.output_bytes), "output count", source)
    _expect(state, STATE_CODES[expected.state], "state code", source)
    _expect(warmups, expected.warmup_invokes, "warmup count", source)
    _expect(measured, expected.measured_invokes, "measured count", source)
    _expect(arena, expected.arena_bytes, "arena size", source)
    if fields[8].hex() != expected.model_sha256:
        raise FirmwareError(
            f"{source}: the firmware runs the model with sha256 {fields[8].hex()}, the frozen runner's is "
            f"{expected.model_sha256}"
        )
    for index, (found, wanted) in enumerate(zip(crcs, expected.input_crc32, strict=True)):
        if found != wanted:
            raise FirmwareError(
                f"{source}: the firmware fills input {index} with bytes of CRC-32 {found:08x}, the frozen runner's "
                f"have {wanted:08x}"
            )


def _samples(records: Sequence[Record], expected: Expectation, source: str) -> list[FirmwareSample]:
    samples: list[FirmwareSample] = []
    position = 0
    outputs_per_sample = len(expected.output_bytes)
    kind = "sample" if expected.npu_events is None else "npu_sample"
    while position < len(records) and records[position].kind == kind:
        record = records[position]
        counters: tuple[SegmentCounters, ...] = ()
        if expected.npu_events is None:
            index, total, *segments = _ints(record, 2 + expected.segments, source)
            _expect(index, len(samples), "sample index", source)
            if sum(segments) != total:
                raise FirmwareError(
                    f"{source}: sample {index}: segment ticks {segments} add up to {sum(segments)}, "
                    f"not the invoke's {total}"
                )
        else:
            counters = _npu_counters(record, expected, len(samples), source)
            index, total, segments = len(samples), None, []
        outputs: list[bytes] = []
        for k in range(outputs_per_sample):
            position += 1
            if position >= len(records) or records[position].kind != "output":
                raise FirmwareError(f"{source}: sample {index}: output {k} is missing")
            output = records[position]
            fields = output.fields
            if len(fields) != 3 or fields[:2] != (index, k) or not isinstance(fields[2], bytes):
                raise FirmwareError(f"{source}: record {output.seq}: expected output {k} of sample {index}")
            if len(fields[2]) != expected.output_bytes[k]:
                raise FirmwareError(
                    f"{source}: sample {index}: output {k} has {len(fields[2])} bytes, "
                    f"expected {expected.output_bytes[k]}"
                )
            outputs.append(fields[2])
        samples.append(FirmwareSample(index, total, tuple(segments), tuple(outputs), counters))
        position += 1
    _expect(len(samples), expected.measured_invokes, "measured samples", source)
    return samples


def _npu_counters(record: Record, expected: Expectation, index: int, source: str) -> tuple[SegmentCounters, ...]:
    """The per-segment counters of an `npu_sample` record: index, events, then per segment streams, overflow
    and one count per event."""
    events = int(expected.npu_events or 0)
    width = 2 + events
    found, count, *values = _ints(record, 2 + expected.segments * width, source)
    _expect(found, index, "sample index", source)
    _expect(count, events, "NPU event count", source)
    counters = []
    for segment in range(expected.segments):
        streams, overflow, *counts = values[segment * width : (segment + 1) * width]
        if overflow not in (0, 1) or min(counts, default=0) < 0:
            raise FirmwareError(f"{source}: record {record.seq}: segment {segment}'s NPU counters are malformed")
        counters.append(SegmentCounters(streams, bool(overflow), tuple(counts)))
    return tuple(counters)


def read_run(run: BoundedRun, expected: Expectation, source: str = "qemu-m55") -> FirmwareRun:
    """The verified run (module docstring); FirmwareError, naming `source`, for anything the host cannot trust."""
    if run.timed_out or run.output_overflow or run.exit_status != 0:
        raise FirmwareError(_failure(run, source))
    return read_stream(run.console, expected, source)


def read_stream(console: str, expected: Expectation, source: str) -> FirmwareRun:
    """The verified record stream of a firmware's `console` output that ended well (module docstring): on an
    FVP, the UART log the caller has read for its exit code and EOT."""
    stream: RecordStream = read_records(console, source)
    records = stream.records
    if not records or records[0].kind != "begin":
        raise FirmwareError(f"{source}: the record stream does not start with its begin record")
    _check_begin(records[0], expected, source)
    samples = _samples(records[1:], expected, source)
    rest = records[1 + len(samples) * (1 + len(expected.output_bytes)) :]
    if len(rest) != 2 or rest[0].kind != "receipt":
        kinds = [record.kind for record in rest]
        raise FirmwareError(f"{source}: after the samples, expected a receipt and the end record, found {kinds}")
    version, state, warmups, measured, initialization = _ints(rest[0], 5, source)
    _expect(version, RECEIPT_VERSION, "receipt version", source)
    _expect(state, STATE_CODES[expected.state], "receipt state code", source)
    _expect(warmups, expected.warmup_invokes, "receipt warmup count", source)
    _expect(measured, expected.measured_invokes, "receipt measured count", source)
    if initialization not in INITIALIZATION_CODES:
        raise FirmwareError(f"{source}: the receipt's initialization code {initialization} is not known")
    receipt = FirmwareReceipt(expected.state, warmups, measured, INITIALIZATION_CODES[initialization])
    return FirmwareRun(samples=tuple(samples), receipt=receipt)
