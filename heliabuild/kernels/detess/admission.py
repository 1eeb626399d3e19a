"""Admission: `check_inference(request) -> Plan | Error`, the contract's metadata check.

A request is admitted when (checked in this order; the first broken rule is
the answer, and the C kernel checks in the same order with the same codes):

1. one input spec and one output spec (PORT_COUNT); params empty (PARAMS);
2. the input is MlaTiled and the output contiguous or Strided (DIRECTION);
3. both dtypes INT8 or BF16 (DTYPE), and equal (DTYPE_MISMATCH);
4. both ranks in 1..6 (RANK); every extent an integer in [0, 2**63) (EXTENT);
   equal logical shapes (SHAPE_MISMATCH);
5. padding Compact or PadTo16; MlaCBlocked is rejected (PADDING);
6. four D/H/W/C axes, each -1 or a logical axis, mapped ones unique (AXES),
   C mapped (CHANNEL_AXIS);
7. tile extents integers >= 1, and exactly 1 on an unmapped spatial axis
   (TILE_SHAPE);
8. a Strided output passes `linear.check_strides`;
9. every byte size fits a signed 64-bit integer (OVERFLOW).

The plan owns copies of everything it needs; it keeps no reference to the
request's sequences.
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from heliabuild.kernels.detess.geometry import C, TileGeometry
from heliabuild.kernels.detess.linear import INT64_MAX, check_strides, contiguous_strides, span_bytes
from heliabuild.kernels.detess.request import (
    ADMITTED_DTYPES,
    AXIS_NAMES,
    AXIS_UNMAPPED,
    MAX_RANK,
    TILE_ALIGNMENT,
    DetessTensorSpec,
    DType,
    MlaTiled,
    Padding,
    Request,
    Strided,
)
from heliabuild.kernels.detess.status import Error, ErrorCode


@dataclass(frozen=True)
class Plan:
    """Owned, immutable metadata of an admitted request: what `execute` needs and what callers allocate from.

    `input_bytes`/`input_alignment`: the tiled binding's required capacity
    (from the tile geometry, padding included) and alignment (16).
    `output_bytes`/`output_alignment`: the linear binding's required capacity
    (the strided span) and alignment (the scalar width).
    `output_strides`: byte strides of the output view (row-major when contiguous).
    `row_path`: "contiguous-channel" when the output's channel stride is one
    scalar, else "scattered-channel" (the C kernel's row selection).
    """

    dtype: DType
    shape: tuple[int, ...]
    geometry: TileGeometry
    output_strides: tuple[int, ...]
    output_bytes: int
    row_path: str

    @property
    def width(self) -> int:
        """Bytes of one scalar."""
        return self.dtype.width

    @property
    def input_bytes(self) -> int:
        """Required capacity of the tiled input binding."""
        return self.geometry.capacity

    @property
    def input_alignment(self) -> int:
        """Required alignment of the tiled input binding."""
        return TILE_ALIGNMENT

    @property
    def output_alignment(self) -> int:
        """Required alignment of the linear output binding."""
        return self.dtype.width

    @property
    def element_count(self) -> int:
        """Number of logical scalars."""
        count = 1
        for extent in self.shape:
            count *= extent
        return count


def integer_or_none(value: Any) -> int | None:
    """`value` as a Python int when it is an integer (bools excluded), else None."""
    if isinstance(value, bool):
        return None
    try:
        return operator.index(value)
    except TypeError:
        return None


def integers_or_none(values: Any) -> list[int | None] | None:
    """Each entry of a sequence as an int (None where it is not one); None when `values` is not a sequence."""
    if isinstance(values, str | bytes):
        return None
    if not isinstance(values, Sequence):
        try:
            values = list(values)
        except TypeError:
            return None
    return [integer_or_none(v) for v in values]


def _layout_name(layout: Any) -> str:
    if layout is None:
        return "contiguous"
    if isinstance(layout, MlaTiled):
        return "MlaTiled"
    if isinstance(layout, Strided):
        return "Strided"
    return type(layout).__name__


def _dtype(value: Any) -> DType | None:
    try:
        return DType(value)
    except (ValueError, TypeError):
        return None


def check_inference(request: Request) -> Plan | Error:
    """Admit `request` (see the module docstring for the rules and their order): a `Plan`, or the `Error` found.

    Never raises for a bad request; every refusal is an `Error` whose code
    names the rule broken and whose message names the field and value.
    """
    inputs = tuple(request.inputs)
    outputs = tuple(request.outputs)
    if len(inputs) != 1 or len(outputs) != 1:
        return Error(
            ErrorCode.PORT_COUNT,
            f"request has {len(inputs)} input and {len(outputs)} output specs; expected exactly one of each",
        )
    params = request.params
    if params is not None and len(params) != 0:
        return Error(ErrorCode.PARAMS, f"params has {len(params)} entries; expected none (Detess params is empty)")
    source, target = inputs[0], outputs[0]
    if not isinstance(source, DetessTensorSpec) or not isinstance(target, DetessTensorSpec):
        return Error(ErrorCode.DIRECTION, "ports must be DetessTensorSpec records")

    if not isinstance(source.layout, MlaTiled):
        return Error(
            ErrorCode.DIRECTION,
            f"input 0 is {_layout_name(source.layout)}; expected MlaTiled (Detess converts MlaTiled to linear)",
        )
    if target.layout is not None and not isinstance(target.layout, Strided):
        return Error(
            ErrorCode.DIRECTION, f"output 0 is {_layout_name(target.layout)}; expected contiguous (None) or Strided"
        )

    dtypes = []
    for where, spec in (("input 0", source), ("output 0", target)):
        dtype = _dtype(spec.dtype)
        if dtype not in ADMITTED_DTYPES:
            return Error(ErrorCode.DTYPE, f"{where} dtype is {spec.dtype!r}; expected INT8 or BF16")
        dtypes.append(dtype)
    dtype = dtypes[0]
    if dtypes[1] != dtype:
        return Error(
            ErrorCode.DTYPE_MISMATCH,
            f"input 0 is {dtype.name} but output 0 is {dtypes[1].name}; expected the same dtype on both ports",
        )

    shapes = []
    for where, spec in (("input 0", source), ("output 0", target)):
        shape = integers_or_none(spec.shape)
        rank = -1 if shape is None else len(shape)
        if not 1 <= rank <= MAX_RANK:
            found = "not a sequence" if shape is None else f"rank {rank}"
            return Error(ErrorCode.RANK, f"{where} shape is {found}; expected rank 1 to {MAX_RANK}")
        shapes.append(shape)
    for where, spec, shape in (("input 0", source, shapes[0]), ("output 0", target, shapes[1])):
        for axis, extent in enumerate(shape):
            if extent is None or not 0 <= extent <= INT64_MAX:
                return Error(
                    ErrorCode.EXTENT,
                    f"{where} extent {axis} is {list(spec.shape)[axis]!r}; expected an explicit integer >= 0",
                )
    if shapes[0] != shapes[1]:
        return Error(
            ErrorCode.SHAPE_MISMATCH,
            f"input 0 has shape {shapes[0]} but output 0 has {shapes[1]}; expected equal logical shapes",
        )
    shape: tuple[int, ...] = tuple(shapes[0])  # type: ignore[arg-type]
    rank = len(shape)

    layout = source.layout
    try:
        padding = Padding(layout.padding)
    except (ValueError, TypeError):
        padding = None
    if padding not in (Padding.COMPACT, Padding.PAD_TO_16):
        return Error(
            ErrorCode.PADDING,
            f"input 0 padding is {layout.padding!r}; expected COMPACT or PAD_TO_16 "
            "(MlaCBlocked is a different physical representation)",
        )

    axes = integers_or_none(layout.axes)
    if axes is None or len(axes) != 4:
        return Error(ErrorCode.AXES, f"input 0 axes is {layout.axes!r}; expected four entries for D, H, W, C")
    for name, axis, given in zip(AXIS_NAMES, axes, list(layout.axes), strict=True):
        if axis is None or not AXIS_UNMAPPED <= axis < rank:
            return Error(
                ErrorCode.AXES,
                f"input 0 axis {name} is {given!r}; expected -1 (unmapped) or a logical axis in 0..{rank - 1}",
            )
    mapped = [a for a in axes if a != AXIS_UNMAPPED]
    if len(set(mapped)) != len(mapped):
        return Error(ErrorCode.AXES, f"input 0 axes {axes} map a logical axis twice; expected unique D/H/W/C axes")
    if axes[C] == AXIS_UNMAPPED:
        return Error(ErrorCode.CHANNEL_AXIS, f"input 0 axes {axes} leave C unmapped; expected an explicit channel axis")

    tile = integers_or_none(layout.tile_shape)
    if tile is None or len(tile) != 4:
        return Error(
            ErrorCode.TILE_SHAPE, f"input 0 tile_shape is {layout.tile_shape!r}; expected four extents for D, H, W, C"
        )
    for name, axis, extent, given in zip(AXIS_NAMES, axes, tile, list(layout.tile_shape), strict=True):
        if extent is None or not 1 <= extent <= INT64_MAX:
            return Error(ErrorCode.TILE_SHAPE, f"input 0 tile extent {name} is {given!r}; expected an integer >= 1")
        if axis == AXIS_UNMAPPED and extent != 1:
            return Error(
                ErrorCode.TILE_SHAPE,
                f"input 0 tile extent {name} is {extent} on an unmapped axis; "
                "expected 1 (an omitted axis has extent one)",
            )

    width = dtype.width
    if isinstance(target.layout, Strided):
        strides = integers_or_none(target.layout.strides)
        if strides is None:
            return Error(ErrorCode.STRIDE_COUNT, f"output 0 strides is {target.layout.strides!r}; expected a sequence")
        refusal = check_strides(shape, strides, width, "output 0")  # type: ignore[arg-type]
        if refusal is not None:
            return refusal
        output_strides: tuple[int, ...] = tuple(strides)  # type: ignore[arg-type]
    else:
        output_strides = contiguous_strides(shape, width)

    geometry = TileGeometry.of(shape, width, axes, tile, padding)  # type: ignore[arg-type]
    if geometry.slice_bytes > INT64_MAX or geometry.capacity > INT64_MAX:
        return Error(ErrorCode.OVERFLOW, f"input 0 of shape {list(shape)} needs more than 2**63-1 bytes")
    output_bytes = span_bytes(shape, output_strides, width)
    if output_bytes > INT64_MAX:
        return Error(ErrorCode.OVERFLOW, f"output 0 of shape {list(shape)} needs more than 2**63-1 bytes")
    channel_stride = output_strides[axes[C]]
    return Plan(
        dtype=dtype,
        shape=shape,
        geometry=geometry,
        output_strides=output_strides,
        output_bytes=output_bytes,
        row_path="contiguous-channel" if channel_stride == width else "scattered-channel",
    )
