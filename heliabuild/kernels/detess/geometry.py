"""MLA tile geometry: where each logical scalar of a tiled tensor lives, and how many bytes the tensor needs.

The layout rules (contract "Numerical behavior", with heliabuild's reading of
the BF16 byte split, docs/detess-bf16-layout.md):

- Logical axes that D/H/W/C do not map are outer axes; each outer index
  (row-major over the outer axes, in logical order) is one slice, and slices
  follow each other, all of the same byte size.
- Within a slice, tiles are ordered C/D/H/W: channel tile index slowest, W
  tile index fastest. A boundary tile has its actual extents
  (`min(tile, extent - start)`) on every axis.
- A tile's physical channel count `pc` is its actual channel count (Compact)
  or that rounded up to 16 (PadTo16, each tile independently).
- Inside a tile, pixels are in D/H/W order over the tile's actual extents; a
  pixel holds `pc * width` bytes. INT8: channel `c` at byte `c`. BF16: the low
  byte (bits 0-7) of channel `c` at byte `c`, its high byte at byte `pc + c`.
- A tile's span (pixels x pixel bytes) is rounded up to 16 bytes; tiles are
  packed one after another.

The offset of a tile is computed in closed form (only the last tile on each
axis can be short), so no per-tile table is ever built.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from heliabuild.kernels.detess.request import AXIS_UNMAPPED, TILE_ALIGNMENT, Padding

D, H, W, C = range(4)
"""Indices of the mapped axes in `axes`, `tile_shape` and the per-axis tuples below."""


def round_up(value: int, multiple: int) -> int:
    """`value` rounded up to a multiple of `multiple` (both nonnegative, `multiple` > 0)."""
    return -(-value // multiple) * multiple


@dataclass(frozen=True)
class TileGeometry:
    """The physical geometry of one admitted MlaTiled tensor (build it with `TileGeometry.of`).

    Per-axis tuples are in D, H, W, C order; an unmapped spatial axis has
    extent one and tile extent one. `counts` is the number of tiles on each
    axis, `full` the extent of a tile that is not the last (`min(tile, extent)`)
    and `last` the extent of the last (possibly short) tile. The `_f`,
    `_row`, `_slab` and `_group` tables hold span sums indexed by whether the
    tile is the last on C, D, H, W (0 = full, 1 = last); see `tile_offset`.
    """

    shape: tuple[int, ...]
    width: int
    axes: tuple[int, int, int, int]
    tile: tuple[int, int, int, int]
    padding: Padding
    outer_axes: tuple[int, ...]
    extents: tuple[int, int, int, int]
    counts: tuple[int, int, int, int]
    full: tuple[int, int, int, int]
    last: tuple[int, int, int, int]
    slice_bytes: int
    capacity: int
    _f: tuple[int, ...]
    _row: tuple[int, ...]
    _slab: tuple[int, ...]
    _group: tuple[int, ...]

    @classmethod
    def of(
        cls, shape: Sequence[int], width: int, axes: Sequence[int], tile: Sequence[int], padding: Padding
    ) -> TileGeometry:
        """Geometry of a tiled tensor whose metadata admission has already checked (Python integers, exact)."""
        shape = tuple(int(e) for e in shape)
        axes4 = (int(axes[0]), int(axes[1]), int(axes[2]), int(axes[3]))
        tile4 = (int(tile[0]), int(tile[1]), int(tile[2]), int(tile[3]))
        extents = tuple(1 if a == AXIS_UNMAPPED else shape[a] for a in axes4)
        counts = tuple(-(-e // t) for e, t in zip(extents, tile4, strict=True))
        last = tuple(e - (n - 1) * t if n else 0 for e, t, n in zip(extents, tile4, counts, strict=True))
        full = tuple(min(t, e) for t, e in zip(tile4, extents, strict=True))
        outer_axes = tuple(i for i in range(len(shape)) if i not in axes4)
        slices = 1
        for axis in outer_axes:
            slices *= shape[axis]

        def pick(axis: int, is_last: int) -> int:
            # A "full" tile is min(tile, extent): with a single tile on an axis it is the last tile itself,
            # so every table entry describes tiles that exist and stays below the slice's size.
            return last[axis] if is_last else full[axis]

        def phys(channels: int) -> int:
            return round_up(channels, 16) if padding == Padding.PAD_TO_16 else channels

        nd, nh, nw, nc = counts
        if 0 in counts:
            f = row = slab = group = (0,) * 16
            slice_bytes = 0
        else:
            f = tuple(
                round_up(pick(D, ld) * pick(H, lh) * pick(W, lw) * phys(pick(C, lc)) * width, TILE_ALIGNMENT)
                for lc in (0, 1)
                for ld in (0, 1)
                for lh in (0, 1)
                for lw in (0, 1)
            )
            row = tuple((nw - 1) * f[i * 2] + f[i * 2 + 1] for i in range(8))
            slab = tuple((nh - 1) * row[i * 2] + row[i * 2 + 1] for i in range(4))
            group = tuple((nd - 1) * slab[i * 2] + slab[i * 2 + 1] for i in range(2))
            slice_bytes = (nc - 1) * group[0] + group[1]
        return cls(
            shape=shape,
            width=width,
            axes=axes4,
            tile=tile4,
            padding=padding,
            outer_axes=outer_axes,
            extents=extents,  # type: ignore[arg-type]
            counts=counts,  # type: ignore[arg-type]
            full=full,  # type: ignore[arg-type]
            last=last,  # type: ignore[arg-type]
            slice_bytes=slice_bytes,
            capacity=slices * slice_bytes,
            _f=f,
            _row=row,
            _slab=slab,
            _group=group,
        )

    def physical_channels(self, channels: int) -> int:
        """Channels a tile with `channels` actual channels stores (PadTo16 rounds each tile up to 16)."""
        return round_up(channels, 16) if self.padding == Padding.PAD_TO_16 else channels

    def tile_offset(self, kc: int, kd: int, kh: int, kw: int) -> int:
        """Byte offset of a tile from its slice's start: the spans of the tiles before it in C/D/H/W order.

        Only the last tile on an axis can be short, so the tiles before
        (kc, kd, kh, kw) are kc full channel groups, kd full D slabs of this
        group, kh full H rows of this slab and kw full-width tiles of this row.
        """
        lc = int(kc == self.counts[C] - 1)
        ld = int(kd == self.counts[D] - 1)
        lh = int(kh == self.counts[H] - 1)
        return (
            kc * self._group[0]
            + kd * self._slab[lc * 2]
            + kh * self._row[(lc * 2 + ld) * 2]
            + kw * self._f[((lc * 2 + ld) * 2 + lh) * 2]
        )

    def scalar_offsets(self, index: Sequence[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        """Vectorized placement of logical scalars.

        `index` holds one int64 array per logical axis (equal shapes; the
        coordinates of the scalars). Returns the byte offset of each scalar's
        (INT8) byte or (BF16) low byte, and the physical channel count of its
        tile, which is the distance from a BF16 low byte to its high byte.
        """
        slice_index: np.ndarray | int = 0
        for axis in self.outer_axes:
            slice_index = slice_index * self.shape[axis] + index[axis]
        tile_index: list[np.ndarray | int] = []
        inner: list[np.ndarray | int] = []
        is_last: list[np.ndarray | int] = []
        actual: list[np.ndarray | int] = []
        for a in range(4):
            if self.axes[a] == AXIS_UNMAPPED:
                tile_index.append(0)
                inner.append(0)
                is_last.append(1)
                actual.append(1)
                continue
            coordinate = index[self.axes[a]]
            k = coordinate // self.tile[a]
            last = (k == self.counts[a] - 1).astype(np.int64)
            tile_index.append(k)
            inner.append(coordinate - k * self.tile[a])
            is_last.append(last)
            actual.append(np.where(last == 1, self.last[a], self.full[a]))
        kd, kh, kw, kc = tile_index
        ld, lh, _, lc = is_last
        f = np.asarray(self._f, dtype=np.int64)
        row = np.asarray(self._row, dtype=np.int64)
        slab = np.asarray(self._slab, dtype=np.int64)
        tile_offset = (
            kc * self._group[0] + kd * slab[lc * 2] + kh * row[(lc * 2 + ld) * 2] + kw * f[((lc * 2 + ld) * 2 + lh) * 2]
        )
        channels = np.where(lc == 1, self.physical_channels(self.last[C]), self.physical_channels(self.full[C]))
        pixel = (inner[D] * actual[H] + inner[H]) * actual[W] + inner[W]
        offset = slice_index * self.slice_bytes + tile_offset + pixel * channels * self.width + inner[C]
        return np.asarray(offset, dtype=np.int64), np.asarray(channels, dtype=np.int64)
