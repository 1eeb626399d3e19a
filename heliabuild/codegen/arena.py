"""The activation arena's memory planner (docs/firmware.md, "The arena").

Every buffer the generated module writes at run time (activations, fence outputs, kernel scratch) lives in one
arena. A buffer is live over an inclusive range of operator positions: from the operator that writes it first
(0 for a model input) to the last operator that reads it (the last operator for a model output). Two buffers
may share bytes only when their ranges do not meet.

The planner places buffers largest first (ties by first use, then by name), each at the lowest aligned offset
that overlaps no placed buffer it is live with. The arena's size is the end of the highest buffer; it is never
below the peak (the largest sum of sizes live at one operator, each rounded up to the alignment), and the
report states both, so how close the placement came is visible.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from heliabuild.errors import HeliaError


class ArenaError(HeliaError):
    """Buffers the arena planner cannot place: a bad live range, size or alignment."""


@dataclass(frozen=True)
class Buffer:
    """A buffer to place: its name, size in bytes, and live range [first, last] in operator positions."""

    name: str
    size: int
    first: int
    last: int


@dataclass(frozen=True)
class Placement:
    """Where each buffer lives (`offsets[name]`), the arena's size, and the peak live bytes it was placed from."""

    offsets: dict[str, int]
    size: int
    peak: int
    alignment: int

    def to_json(self) -> dict[str, object]:
        return {
            "alignment": self.alignment,
            "bytes": self.size,
            "peak_live_bytes": self.peak,
            "offsets": dict(sorted(self.offsets.items())),
        }


def _aligned(value: int, alignment: int) -> int:
    return -(-value // alignment) * alignment


def _check(buffers: Sequence[Buffer], alignment: int) -> None:
    if alignment < 1 or alignment & (alignment - 1):
        raise ArenaError(f"arena alignment {alignment} is not a power of two")
    names: set[str] = set()
    for buffer in buffers:
        if buffer.name in names:
            raise ArenaError(f"arena buffer {buffer.name!r} is listed twice")
        names.add(buffer.name)
        if buffer.size < 0:
            raise ArenaError(f"arena buffer {buffer.name!r}: size {buffer.size} is negative")
        if not 0 <= buffer.first <= buffer.last:
            raise ArenaError(f"arena buffer {buffer.name!r}: live range [{buffer.first}, {buffer.last}] is not ordered")


def peak_live_bytes(buffers: Iterable[Buffer], alignment: int = 16) -> int:
    """The largest sum of (aligned) sizes of the buffers live at one operator position."""
    events: dict[int, int] = {}
    for buffer in buffers:
        size = _aligned(buffer.size, alignment)
        events[buffer.first] = events.get(buffer.first, 0) + size
        events[buffer.last + 1] = events.get(buffer.last + 1, 0) - size
    peak = live = 0
    for position in sorted(events):
        live += events[position]
        peak = max(peak, live)
    return peak


def plan_arena(buffers: Sequence[Buffer], alignment: int = 16) -> Placement:
    """Place `buffers` in one arena (module docstring). Zero-size buffers get offset 0 and overlap nothing."""
    _check(buffers, alignment)
    order = sorted(buffers, key=lambda b: (-_aligned(b.size, alignment), b.first, b.name))
    placed: list[tuple[Buffer, int]] = []
    offsets: dict[str, int] = {}
    for buffer in order:
        if buffer.size == 0:
            offsets[buffer.name] = 0
            continue
        size = _aligned(buffer.size, alignment)
        busy = sorted(
            (offset, offset + _aligned(other.size, alignment))
            for other, offset in placed
            if other.first <= buffer.last and buffer.first <= other.last
        )
        candidate = 0
        for start, end in busy:
            if candidate + size <= start:
                break
            candidate = max(candidate, end)
        offsets[buffer.name] = candidate
        placed.append((buffer, candidate))
    size = max((offset + _aligned(b.size, alignment) for b, offset in placed), default=0)
    return Placement(offsets=offsets, size=size, peak=peak_live_bytes(buffers, alignment), alignment=alignment)


def fixed_arena(buffers: Sequence[Buffer], offsets: dict[str, int], alignment: int = 16) -> Placement:
    """The arena of buffers placed by another planner (Vela's OfflineMemoryAllocation: its scratch area holds
    the feature maps its command streams address, so buffers may overlap as that plan says). ArenaError for a
    buffer without an offset, or one that is negative or not aligned."""
    _check(buffers, alignment)
    for buffer in buffers:
        offset = offsets.get(buffer.name)
        if offset is None or offset < 0 or offset % alignment:
            raise ArenaError(f"arena buffer {buffer.name!r}: the given offset {offset} is not an aligned offset")
    size = max((offsets[b.name] + _aligned(b.size, alignment) for b in buffers), default=0)
    return Placement(
        offsets={b.name: offsets[b.name] for b in buffers},
        size=size,
        peak=peak_live_bytes(buffers, alignment),
        alignment=alignment,
    )
