"""Bindings: the caller's storage for one execution, checked against a plan before any byte is written.

A binding is any C-contiguous buffer (numpy array, bytearray, memoryview,
...); its capacity is its size in bytes, so a slice declares less accessible
storage than its allocation. Checks, in order (the C kernel's order and
codes): one input and one output binding (BINDING_COUNT); a plan from
`check_inference` (PLAN); contiguous buffers, the output writable (BINDING);
capacity at least the plan's requirement, input then output (CAPACITY); the
tiled input 16-byte aligned and the linear output scalar aligned (ALIGNMENT);
accessed bounding spans that do not intersect (OVERLAP).

The accessed bounding span of a binding is `[start, start + required)`: the
tiled input's plan capacity (trailing alignment bytes of the last tile
included) and the output's strided span. Disjoint views of one allocation are
fine. A binding with nothing to access (an empty tensor) is not checked for
alignment or overlap.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from heliabuild.kernels.detess.admission import Plan
from heliabuild.kernels.detess.status import Error, ErrorCode


@dataclass(frozen=True)
class Binding:
    """One bound buffer: a 1-D uint8 view of the caller's storage (no copy), its address and capacity in bytes."""

    array: np.ndarray
    address: int
    capacity: int


def as_binding(buffer: Any, *, writable: bool, where: str) -> Binding | Error:
    """View `buffer` as bytes without copying; an Error when it is not a C-contiguous (writable) buffer."""
    try:
        array = np.frombuffer(buffer, dtype=np.uint8)
    except (TypeError, ValueError, BufferError) as problem:
        return Error(
            ErrorCode.BINDING, f"{where} is {type(buffer).__name__}; expected a C-contiguous buffer ({problem})"
        )
    if writable and not array.flags.writeable:
        return Error(ErrorCode.BINDING, f"{where} is a read-only {type(buffer).__name__}; expected writable storage")
    return Binding(array=array, address=int(array.__array_interface__["data"][0]), capacity=int(array.size))


def check_bindings(plan: Any, inputs: Sequence[Any], outputs: Sequence[Any]) -> tuple[Binding, Binding] | Error:
    """The input and output bindings of one execution of `plan`, or the first rule they break (see module doc)."""
    if len(inputs) != 1 or len(outputs) != 1:
        return Error(
            ErrorCode.BINDING_COUNT,
            f"execution has {len(inputs)} input and {len(outputs)} output bindings; expected exactly one of each",
        )
    if not isinstance(plan, Plan):
        return Error(ErrorCode.PLAN, f"plan is {type(plan).__name__}; expected a Plan from check_inference")
    source = as_binding(inputs[0], writable=False, where="input binding 0")
    if isinstance(source, Error):
        return source
    target = as_binding(outputs[0], writable=True, where="output binding 0")
    if isinstance(target, Error):
        return target
    for where, binding, required in (
        ("input binding 0", source, plan.input_bytes),
        ("output binding 0", target, plan.output_bytes),
    ):
        if binding.capacity < required:
            return Error(
                ErrorCode.CAPACITY,
                f"{where} holds {binding.capacity} bytes; the plan needs {required} (allocate from the plan)",
            )
    for where, binding, required, alignment in (
        ("input binding 0", source, plan.input_bytes, plan.input_alignment),
        ("output binding 0", target, plan.output_bytes, plan.output_alignment),
    ):
        if required and binding.address % alignment:
            return Error(
                ErrorCode.ALIGNMENT,
                f"{where} starts at address {binding.address:#x}; expected a multiple of {alignment} bytes",
            )
    if (
        plan.input_bytes
        and plan.output_bytes
        and source.address < target.address + plan.output_bytes
        and target.address < source.address + plan.input_bytes
    ):
        return Error(
            ErrorCode.OVERLAP,
            f"input binding 0 [{source.address:#x}, +{plan.input_bytes}) and output binding 0 "
            f"[{target.address:#x}, +{plan.output_bytes}) intersect; expected disjoint storage (no in-place Detess)",
        )
    return source, target
