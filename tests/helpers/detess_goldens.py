"""Independent Detess goldens and case generators for the Detess tests.

The golden writers here are deliberately simple and slow, and share no code
with heliabuild.kernels.detess: `tiled_golden` walks slices, tiles, pixels
and channels in the documented order (docs/detess-bf16-layout.md), appending
bytes as it goes (no offset formula), and `linear_golden` places each scalar
at sum(index * stride). A Detess output equal to `linear_golden` of the
values that `tiled_golden` laid out proves the layout, not just a round trip.
"""

from __future__ import annotations

import itertools
import random
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from heliabuild.kernels.detess import DetessTensorSpec, DType, MlaTiled, Padding, Request, Strided

GARBAGE = 0xA5
"""Default fill of padding and guard bytes: anything but zero, so ignored padding is really ignored."""


def tiled_golden(values: np.ndarray, axes: tuple[int, ...], tile: tuple[int, ...], padding: Padding, garbage=None):
    """The tiled bytes of logical `values` (uint8 for INT8, uint16 for BF16), padding filled with garbage.

    `garbage` is a random.Random (padding bytes drawn from it) or None (GARBAGE).
    Order: outer slices (row-major over unmapped logical axes); tiles C, D, H, W
    (W fastest) with actual boundary extents; pixels D, H, W; a pixel of pc
    channels (pc = channels, or rounded up to 16 under PAD_TO_16): INT8 byte
    c = channel c; BF16 byte c = low byte of channel c, byte pc + c = its high
    byte; each tile padded to a multiple of 16 bytes.
    """
    shape = values.shape
    rank = len(shape)
    width = values.dtype.itemsize

    def junk() -> int:
        return GARBAGE if garbage is None else garbage.randrange(256)

    extent = [1 if a == -1 else shape[a] for a in axes]
    outer_axes = [i for i in range(rank) if i not in axes]
    out = bytearray()
    for outer in itertools.product(*(range(shape[i]) for i in outer_axes)):
        for c0 in range(0, extent[3], tile[3]):
            for d0 in range(0, extent[0], tile[0]):
                for h0 in range(0, extent[1], tile[1]):
                    for w0 in range(0, extent[2], tile[2]):
                        ad = min(tile[0], extent[0] - d0)
                        ah = min(tile[1], extent[1] - h0)
                        aw = min(tile[2], extent[2] - w0)
                        ac = min(tile[3], extent[3] - c0)
                        pc = ac if padding == Padding.COMPACT else (ac + 15) // 16 * 16
                        for d in range(d0, d0 + ad):
                            for h in range(h0, h0 + ah):
                                for w in range(w0, w0 + aw):
                                    pixel = bytearray(junk() for _ in range(pc * width))
                                    for c in range(c0, c0 + ac):
                                        index = [0] * rank
                                        for axis, coordinate in zip(outer_axes, outer, strict=True):
                                            index[axis] = coordinate
                                        for axis, coordinate in zip(axes, (d, h, w, c), strict=True):
                                            if axis != -1:
                                                index[axis] = coordinate
                                        value = int(values[tuple(index)])
                                        if width == 1:
                                            pixel[c - c0] = value
                                        else:
                                            pixel[c - c0] = value & 0xFF
                                            pixel[pc + c - c0] = value >> 8
                                    out += pixel
                        while len(out) % 16:
                            out.append(junk())
    return bytes(out)


def linear_golden(values: np.ndarray, strides: tuple[int, ...], size: int, background: bytes | None = None) -> bytes:
    """`size` bytes (copied from `background`, default GARBAGE) with each scalar little-endian at sum(i * stride)."""
    out = bytearray(background if background is not None else bytes([GARBAGE]) * size)
    width = values.dtype.itemsize
    for index in itertools.product(*(range(e) for e in values.shape)):
        place = sum(i * s for i, s in zip(index, strides, strict=True))
        value = int(values[index])
        for byte in range(width):
            out[place + byte] = (value >> (8 * byte)) & 0xFF
    return bytes(out)


def dense_strides(shape: tuple[int, ...], width: int) -> tuple[int, ...]:
    """Row-major byte strides, written out independently of heliabuild."""
    strides = []
    for axis in range(len(shape)):
        step = width
        for extent in shape[axis + 1 :]:
            step *= max(extent, 1)
        strides.append(step)
    return tuple(strides)


@dataclass(frozen=True)
class Case:
    """One valid Detess request and what its output view looks like."""

    dtype: DType
    shape: tuple[int, ...]
    axes: tuple[int, int, int, int]
    tile: tuple[int, int, int, int]
    padding: Padding
    strides: tuple[int, ...] | None  # None: contiguous output

    @property
    def width(self) -> int:
        return 1 if self.dtype == DType.INT8 else 2

    @property
    def view_strides(self) -> tuple[int, ...]:
        return self.strides if self.strides is not None else dense_strides(self.shape, self.width)

    def request(self) -> Request:
        layout = MlaTiled(self.axes, self.tile, self.padding)
        output = Strided(self.strides) if self.strides is not None else None
        return Request(
            [DetessTensorSpec(self.shape, self.dtype, layout)], [DetessTensorSpec(self.shape, self.dtype, output)]
        )

    def values(self, rng: np.random.Generator) -> np.ndarray:
        """Random logical values: every bit pattern possible (uint8 / uint16, never floats)."""
        if self.dtype == DType.INT8:
            return rng.integers(0, 256, size=self.shape, dtype=np.uint8)
        return rng.integers(0, 65536, size=self.shape, dtype=np.uint16)


def random_case(rng: random.Random, dtype: DType, rank: int, max_elements: int = 1500) -> Case:
    """A valid random request of `rank`: random mapping of D/H/W/C, tiles, padding and output view.

    Extents are small (the golden writers are slow), sometimes zero; tiles
    often do not divide extents (boundary tiles); about a third of the outputs
    are pitched and permuted strided views.
    """
    while True:
        shape = tuple(
            rng.choice([0, 1, 1, 2, 3, 4, 5, 7, 9, 16, 17, 33]) if rng.random() < 0.97 else 0 for _ in range(rank)
        )
        if rng.random() < 0.9:
            shape = tuple(max(e, 1) for e in shape)
        count = 1
        for e in shape:
            count *= max(e, 1)
        if count <= max_elements:
            break
    logical = list(range(rank))
    rng.shuffle(logical)
    mapped = logical[: rng.randint(1, min(4, rank))]
    axes = [-1, -1, -1, -1]
    axes[3] = mapped[0]
    spatial = rng.sample([0, 1, 2], len(mapped) - 1)
    for slot, axis in zip(spatial, mapped[1:], strict=True):
        axes[slot] = axis
    tile = []
    for slot in range(4):
        if axes[slot] == -1:
            tile.append(1)
        else:
            extent = shape[axes[slot]]
            tile.append(rng.choice([1, 2, 3, 4, 5, 8, 16, 17, 32, max(extent, 1), max(extent, 1) + 3]))
    padding = rng.choice([Padding.COMPACT, Padding.PAD_TO_16])
    width = 1 if dtype == DType.INT8 else 2
    strides = None
    if rng.random() < 0.35:
        strides = pitched_permuted_strides(rng, shape, width)
    return Case(dtype, shape, tuple(axes), tuple(tile), padding, strides)  # type: ignore[arg-type]


def pitched_permuted_strides(rng: random.Random, shape: tuple[int, ...], width: int) -> tuple[int, ...]:
    """Nonoverlapping strides in a random axis order, each axis pitched by a few extra scalars (gaps)."""
    order = list(range(len(shape)))
    rng.shuffle(order)
    strides = [0] * len(shape)
    step = width * rng.choice([1, 1, 2])
    for axis in reversed(order):
        strides[axis] = step
        step = step * max(shape[axis], 1) + width * rng.choice([0, 0, 1, 3])
    return tuple(strides)


class Guarded:
    """A buffer of exactly `size` bytes at `alignment`, between guard bytes that must stay untouched."""

    GUARD = 64

    def __init__(self, size: int, alignment: int, fill: int = GARBAGE, misalign: int = 0) -> None:
        self.size = size
        self.fill = fill
        self.whole = np.full(size + 2 * self.GUARD + 64, fill, dtype=np.uint8)
        start = self.GUARD + (-(self.whole.ctypes.data + self.GUARD) % alignment) + misalign
        self.start = start
        self.view = self.whole[start : start + size]

    def guards_intact(self) -> bool:
        """True when no byte outside the view changed."""
        before = self.whole[: self.start]
        after = self.whole[self.start + self.size :]
        return bool((before == self.fill).all() and (after == self.fill).all())


def load_c_detess(build_dir: Path):
    """The C kernel (libheliakernels built by heliabuild.kernels.native into `build_dir`) behind its ctypes
    binding."""
    from heliabuild.kernels.detess.c_kernel import CDetess
    from heliabuild.kernels.native import load_host_library

    return CDetess(load_host_library(build_dir))
