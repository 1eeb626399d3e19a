"""The linear side: contiguous row-major strides, the admission rules for explicit strides, and the byte span.

Strides are in bytes, one per logical axis; the view starts at its binding's
first byte. A strided view is admitted when its strides are nonnegative,
multiples of the scalar width, zero only on axes of extent at most one, and
pass the sorted-span proof: sort the axes of extent above one by stride
(ties by axis index), then each stride must be at least the byte span of
all the axes before it (`span = width` to start, then
`span += stride * (extent - 1)`). That proves the view injective; it may
also reject some unusual views that are injective (the contract allows it).
"""

from __future__ import annotations

from collections.abc import Sequence

from heliabuild.kernels.detess.status import Error, ErrorCode

INT64_MAX = 2**63 - 1
"""Largest byte size, offset or stride a request may produce (C: INT64_MAX, and SIZE_MAX on 32-bit targets)."""


def contiguous_strides(shape: Sequence[int], width: int) -> tuple[int, ...]:
    """Row-major byte strides of a dense tensor of `shape` with `width`-byte scalars."""
    strides = []
    step = width
    for extent in reversed(shape):
        strides.append(step)
        step *= max(int(extent), 1)
    return tuple(reversed(strides))


def span_bytes(shape: Sequence[int], strides: Sequence[int], width: int) -> int:
    """Bytes from the view's first byte to past its last accessed byte (0 for an empty tensor)."""
    if any(int(e) == 0 for e in shape):
        return 0
    return sum(int(s) * (int(e) - 1) for e, s in zip(shape, strides, strict=True)) + width


def check_strides(shape: Sequence[int], strides: Sequence[int], width: int, where: str) -> Error | None:
    """None when the explicit strides of a `shape` view are admitted, else the first rule they break.

    `shape` and `strides` hold plain ints (admission converts them); `where`
    names the port in messages. Checks, in order: count, each stride's
    sign, alignment and zero-stride rule (axis by axis), then the sorted-span
    proof with its running span bounded by INT64_MAX. The C kernel checks in
    the same order, so both report the same code.
    """
    if len(strides) != len(shape):
        return Error(
            ErrorCode.STRIDE_COUNT,
            f"{where} has {len(strides)} strides for rank {len(shape)}; expected one byte stride per logical axis",
        )
    for axis, (extent, stride) in enumerate(zip(shape, strides, strict=True)):
        if not isinstance(stride, int):
            return Error(ErrorCode.OVERFLOW, f"{where} stride {axis} is {stride!r}; expected an integer")
        if stride < 0:
            return Error(
                ErrorCode.STRIDE_NEGATIVE,
                f"{where} stride {axis} is {stride}; expected a nonnegative stride (negative views are rejected)",
            )
        if stride > INT64_MAX:
            return Error(ErrorCode.OVERFLOW, f"{where} stride {axis} is {stride}; expected at most 2**63-1")
        if stride % width:
            return Error(
                ErrorCode.STRIDE_ALIGNMENT,
                f"{where} stride {axis} is {stride} bytes; expected a multiple of the scalar width {width}",
            )
        if stride == 0 and extent > 1:
            return Error(
                ErrorCode.STRIDE_ZERO,
                f"{where} stride {axis} is 0 on an axis of extent {extent}; broadcast views are rejected "
                "(zero stride requires an extent of at most one)",
            )
    order = sorted((s, axis) for axis, (e, s) in enumerate(zip(shape, strides, strict=True)) if e > 1)
    span = width
    for stride, axis in order:
        if stride < span:
            return Error(
                ErrorCode.STRIDE_OVERLAP,
                f"{where} stride {axis} is {stride} bytes but the axes with smaller strides span {span} bytes; "
                "overlapping views are rejected (the sorted-span proof cannot show this view nonoverlapping)",
            )
        span += stride * (shape[axis] - 1)
        if span > INT64_MAX:
            return Error(ErrorCode.OVERFLOW, f"{where} spans more than 2**63-1 bytes")
    return None
