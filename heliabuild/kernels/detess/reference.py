"""The numpy reference: `execute(plan, inputs, outputs)`, the executable statement of Detess's numerical contract.

For each logical scalar: locate it in its input tile (`TileGeometry`), copy
INT8's byte, or join BF16's low and high channel bytes into the original
two-byte word (stored little-endian: low byte first), and write it at the
scalar's place in the linear view. Only logical scalars are written (strided
gaps keep their bytes); input channel and alignment padding is never read nor
modified. Everything is uint8/uint16/int64 integer work: no conversion,
rounding or floating point, so every BF16 bit pattern survives.

The reference validates every binding before any write, works in bounded
chunks (`CHUNK` scalars, never a tensor-sized intermediate) and allocates
only numpy's chunk-sized index arrays. The C kernel (`detess.c`) is the
allocation-free implementation.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from heliabuild.kernels.detess.admission import Plan
from heliabuild.kernels.detess.bindings import check_bindings
from heliabuild.kernels.detess.request import DType
from heliabuild.kernels.detess.status import Error

CHUNK = 1 << 16
"""Logical scalars converted per step; bounds every intermediate array."""


def execute(plan: Plan, inputs: Sequence[Any], outputs: Sequence[Any]) -> Error | None:
    """Run one Detess of `plan` from `inputs[0]` (tiled bytes) into `outputs[0]` (linear bytes).

    Returns None on success, or the `Error` that refused the bindings, in
    which case nothing was written. Synchronous; the plan may be reused for
    any number of executions.
    """
    bound = check_bindings(plan, inputs, outputs)
    if isinstance(bound, Error):
        return bound
    source, target = bound
    count = plan.element_count
    if count == 0:
        return None
    src = source.array[: plan.input_bytes]
    dst = target.array[: plan.output_bytes]
    strides = plan.output_strides
    bf16 = plan.dtype == DType.BF16
    words = dst[: plan.output_bytes & ~1].view("<u2") if bf16 else None
    for start in range(0, count, CHUNK):
        flat = np.arange(start, min(start + CHUNK, count), dtype=np.int64)
        index = [np.asarray(i, dtype=np.int64) for i in np.unravel_index(flat, plan.shape)]
        low, plane = plan.geometry.scalar_offsets(index)
        place = index[0] * strides[0]
        for axis in range(1, len(index)):
            place += index[axis] * strides[axis]
        if words is None:
            dst[place] = src[low]
        else:
            word = src[low].astype(np.uint16) | (src[low + plane].astype(np.uint16) << np.uint16(8))
            words[place >> 1] = word
    return None
