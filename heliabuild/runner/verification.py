"""Numerical verification of a target's outputs against LiteRT's reference kernels (docs/firmware.md,
"Verification").

The reference is LiteRT running the unfenced model (the fenced model with its fences stripped: fences are
identity copies) with `OpResolverType.BUILTIN_REF`, the reference kernels whose arithmetic heliabuild's own
kernels reproduce, on the same input bytes the target was given. Each output is compared element by
element: the largest absolute difference (in the output's own units: quantized steps for an integer tensor)
and the number of elements that differ.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from ai_edge_litert.interpreter import Interpreter, OpResolverType

from heliabuild.errors import RunnerError

REFERENCE_RESOLVER = OpResolverType.BUILTIN_REF
REFERENCE = "litert"


@dataclass(frozen=True)
class OutputCheck:
    """One output of one sample against the reference."""

    position: int
    name: str
    max_abs_diff: int | float
    differing: int
    elements: int

    def to_json(self) -> dict[str, Any]:
        return {
            "position": self.position,
            "name": self.name,
            "max_abs_diff": self.max_abs_diff,
            "differing_elements": self.differing,
            "elements": self.elements,
        }


@dataclass(frozen=True)
class ReferenceOutput:
    name: str
    values: np.ndarray


def reference_outputs(
    model_bytes: bytes, input_bytes: Sequence[bytes | None], invokes: int = 1
) -> list[list[ReferenceOutput]]:
    """The outputs of each of `invokes` invokes of `model_bytes` on one LiteRT instance with the reference
    kernels (so state carries as on the target), input k refilled with `input_bytes[k]` (None: zeros) before
    every invoke. RunnerError when an input's byte length does not match its tensor."""
    try:
        interpreter = Interpreter(model_content=bytes(model_bytes), experimental_op_resolver_type=REFERENCE_RESOLVER)
        interpreter.allocate_tensors()
    except (RuntimeError, ValueError) as error:
        raise RunnerError(f"the LiteRT reference cannot load the unfenced model: {error}") from None
    details = interpreter.get_input_details()
    if len(details) != len(input_bytes):
        raise RunnerError(f"the reference model has {len(details)} inputs, {len(input_bytes)} were given")
    values = []
    for detail, data in zip(details, input_bytes, strict=True):
        dtype = np.dtype(detail["dtype"])
        shape = tuple(int(d) for d in detail["shape"])
        if data is None:
            values.append(np.zeros(shape, dtype))
            continue
        expected = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
        if len(data) != expected:
            raise RunnerError(f"reference input {detail['name']!r}: {len(data)} bytes, expected {expected}")
        values.append(np.frombuffer(data, dtype).reshape(shape))
    results = []
    for _ in range(invokes):
        for detail, value in zip(details, values, strict=True):
            interpreter.set_tensor(detail["index"], value)
        try:
            interpreter.invoke()
        except RuntimeError as error:
            raise RunnerError(f"the LiteRT reference failed to invoke the unfenced model: {error}") from None
        results.append(
            [
                ReferenceOutput(str(d["name"]), interpreter.get_tensor(d["index"]).copy())
                for d in interpreter.get_output_details()
            ]
        )
    return results


def first_excess(checks: Sequence[OutputCheck], bound: float | None) -> OutputCheck | None:
    """The first check whose largest difference is above `bound` (None: no bound), or None."""
    if bound is None:
        return None
    return next((check for check in checks if check.max_abs_diff > bound), None)


def compare_outputs(reference: Sequence[ReferenceOutput], measured: Sequence[bytes]) -> list[OutputCheck]:
    """Each measured output (raw bytes, in graph-output order) against the reference's."""
    if len(reference) != len(measured):
        raise RunnerError(f"the target returned {len(measured)} outputs, the reference {len(reference)}")
    checks = []
    for position, (expected, data) in enumerate(zip(reference, measured, strict=True)):
        values = expected.values
        if len(data) != values.nbytes:
            raise RunnerError(
                f"output {position} ({expected.name}): {len(data)} bytes, the reference has {values.nbytes}"
            )
        found = np.frombuffer(data, values.dtype).reshape(values.shape)
        if np.issubdtype(values.dtype, np.integer) or values.dtype == np.bool_:
            difference = np.abs(found.astype(np.int64) - values.astype(np.int64))
            largest: int | float = int(difference.max(initial=0))
        else:
            difference = np.abs(found.astype(np.float64) - values.astype(np.float64))
            largest = float(difference.max(initial=0.0))
        checks.append(
            OutputCheck(
                position=position,
                name=expected.name,
                max_abs_diff=largest,
                differing=int(np.count_nonzero(found != values)),
                elements=int(values.size),
            )
        )
    return checks


def verification_failure(runner: Any, sample: int, check: OutputCheck, bound: float | None) -> str:
    """The message of a run refused by its policy's verification bound."""
    return (
        f"{runner.path}: sample {sample}: output {check.position} ({check.name}) differs from LiteRT's reference by "
        f"{check.max_abs_diff} (in {check.differing} of {check.elements} elements), more than the policy's "
        f"verification.max_abs_diff {bound}; nothing is published"
    )
