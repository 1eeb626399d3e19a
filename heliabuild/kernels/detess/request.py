"""The Detess request: tensor metadata for one tiled input port and one linear output port.

These records only describe; they accept any values, so that admission
(`heliabuild.kernels.detess.admission.check_inference`) can answer a bad request
with an `Error` record naming the rule it breaks, as the contract's
`check_inference` does. Integer values of the enums equal the C header's
(`heliabuild/kernels/c/detess.h`), so the ctypes binding passes them through.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

MAX_RANK = 6
"""Highest logical rank a port may have (a capacity, not implicit leading ones)."""

TILE_ALIGNMENT = 16
"""Byte multiple every tile's span is rounded up to; also the tiled binding's alignment."""

AXIS_UNMAPPED = -1
"""Value of an `MlaTiled.axes` entry whose spatial axis the logical shape omits."""

AXIS_NAMES = ("D", "H", "W", "C")
"""Order of `MlaTiled.axes` and `MlaTiled.tile_shape` entries."""


class DType(enum.IntEnum):
    """Scalar types a request may name. Only INT8 and BF16 are admitted; the rest exist to be rejected."""

    INT8 = 1
    BF16 = 2
    UINT8 = 3
    INT16 = 4
    INT32 = 5
    INT64 = 6
    FP16 = 7
    FP32 = 8

    @property
    def width(self) -> int:
        """Bytes of one scalar."""
        return _WIDTHS[self]


_WIDTHS = {
    DType.INT8: 1,
    DType.BF16: 2,
    DType.UINT8: 1,
    DType.INT16: 2,
    DType.INT32: 4,
    DType.INT64: 8,
    DType.FP16: 2,
    DType.FP32: 4,
}

ADMITTED_DTYPES = (DType.INT8, DType.BF16)


class Padding(enum.IntEnum):
    """How a tiled tensor stores the channels of each tile.

    COMPACT: a tile stores exactly its actual channel count. PAD_TO_16: each
    tile's channel count is rounded up to a multiple of 16, independently.
    MLA_C_BLOCKED: a different physical representation, which Detess rejects.
    """

    COMPACT = 0
    PAD_TO_16 = 1
    MLA_C_BLOCKED = 2


@dataclass(frozen=True)
class MlaTiled:
    """MLA tiled storage.

    `axes` holds, for D, H, W and C in that order, the logical axis it maps
    (or `AXIS_UNMAPPED`); `axes = (-1, -1, 0, 1)` reads "logical shape [W, C]".
    `tile_shape` holds the tile extents in the same D, H, W, C order; an
    unmapped spatial axis has extent one and must have tile extent one.
    """

    axes: Sequence[int]
    tile_shape: Sequence[int]
    padding: Padding = Padding.COMPACT


@dataclass(frozen=True)
class Strided:
    """Linear storage with explicit byte strides, one per logical axis (the view starts at the binding's start)."""

    strides: Sequence[int]


Layout = MlaTiled | Strided | None
"""A port's storage: MLA tiled, explicitly strided, or (None) contiguous row-major."""


@dataclass(frozen=True)
class DetessTensorSpec:
    """One port's explicit metadata: logical shape, scalar type and storage (`None` = contiguous row-major)."""

    shape: Sequence[int]
    dtype: DType
    layout: Layout = None


@dataclass(frozen=True)
class Request:
    """A Detess inference request: tensor specs in port order and the (necessarily empty) params."""

    inputs: Sequence[DetessTensorSpec]
    outputs: Sequence[DetessTensorSpec]
    params: Mapping[str, Any] | Sequence[Any] = field(default_factory=tuple)
