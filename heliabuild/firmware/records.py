"""The firmware's record stream (docs/firmware.md, "Record stream"), read by the host.

Each record is one console line `@hb1 <seq> <kind> <field> ... *<crc32>`: `seq` counts from 0, a field is a
decimal integer or `x` followed by lowercase hex bytes, and the CRC-32 (zlib's) covers the line from `@` up to
and including the space before `*`. Lines that do not start with `@hb1 ` are console text, kept apart.

A complete stream ends with an `end` record whose one field is the number of records before it, so a record
lost anywhere, the last one included, is caught. `read_records` trusts nothing: a record missing, repeated or
reordered, malformed, or failing its checksum, anything after `end`, or (when `complete`) no `end`, is a
FirmwareError naming the line.
"""

from __future__ import annotations

import re
import zlib
from dataclasses import dataclass

from heliabuild.errors import FirmwareError

PREFIX = "@hb1 "
_RECORD = re.compile(
    r"@hb1 (0|[1-9][0-9]{0,9}) ([a-z][a-z0-9_]{0,31})((?: (?:-?[0-9]{1,20}|x(?:[0-9a-f]{2})*))*) \*([0-9a-f]{8})"
)
_MAX_LINES = 1 << 20

Field = int | bytes


@dataclass(frozen=True)
class Record:
    """One verified record: its sequence number, kind and fields (ints, or bytes for `x` fields)."""

    seq: int
    kind: str
    fields: tuple[Field, ...]


@dataclass(frozen=True)
class RecordStream:
    """The verified records of one run, in order, and the console lines that were not records."""

    records: tuple[Record, ...]
    console: tuple[str, ...]

    def of_kind(self, kind: str) -> list[Record]:
        return [record for record in self.records if record.kind == kind]


def _field(text: str) -> Field:
    return bytes.fromhex(text[1:]) if text.startswith("x") else int(text)


END = "end"


def read_records(text: str, source: str = "firmware output", *, complete: bool = True) -> RecordStream:
    """Every record of `text` (the firmware's console output), verified (module docstring). With `complete`
    false a stream without its `end` record is accepted: a run that faulted is read for its `fault` record."""
    records: list[Record] = []
    console: list[str] = []
    lines = text.split("\n")
    if len(lines) > _MAX_LINES:
        raise FirmwareError(f"{source}: more than {_MAX_LINES} lines of output; the firmware is not heliabuild's")
    for number, line in enumerate(lines, start=1):
        if not line.startswith(PREFIX):
            if "@hb1" in line:
                raise FirmwareError(f"{source}: line {number}: a record not at the start of its line: {line[:80]!r}")
            if line:
                console.append(line)
            continue
        match = _RECORD.fullmatch(line)
        if match is None:
            raise FirmwareError(f"{source}: line {number}: malformed record {line[:80]!r}")
        body = line[: line.rindex("*")]
        if zlib.crc32(body.encode("ascii")) != int(match.group(4), 16):
            raise FirmwareError(f"{source}: line {number}: record fails its checksum: {line[:80]!r}")
        seq = int(match.group(1))
        if records and records[-1].kind == END:
            raise FirmwareError(f"{source}: line {number}: a record after the end record")
        if seq != len(records):
            what = "repeated or out of order" if seq < len(records) else "missing"
            raise FirmwareError(
                f"{source}: line {number}: record {seq} where record {len(records)} was due (a record is {what})"
            )
        fields = tuple(_field(part) for part in match.group(3).split())
        if match.group(2) == END and fields != (seq,):
            raise FirmwareError(f"{source}: line {number}: the end record counts {fields}, expected ({seq},)")
        records.append(Record(seq=seq, kind=match.group(2), fields=fields))
    if complete and (not records or records[-1].kind != END):
        raise FirmwareError(f"{source}: the record stream has no end record: the firmware stopped early")
    return RecordStream(records=tuple(records), console=tuple(console))
