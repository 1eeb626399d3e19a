"""Numerical verification of a target's outputs against LiteRT (docs/runner.md, "Verification").

The reference is LiteRT running the unfenced model (the fenced model with its fences stripped: fences are
identity copies) with a named op resolver, on the same input bytes the target was given, through the same
invokes on one instance. The resolver is the policy's choice, `reference_resolver` by default
(`resolve_verification`): LiteRT's reference kernels (`BUILTIN_REF`), whose arithmetic heliabuild's own
kernels reproduce, for the firmware backends; the litert backend's own resolver for a host run, so like is
compared with like.

Each output is compared element by element: the largest absolute difference (in the output's own units:
quantized steps for an integer tensor), the number of elements that differ and the number that differ
without bound. Two NaNs are equal (whatever their payload); a NaN against a number, or an infinity against
anything else, is an unbounded difference, which no `max_abs_diff` admits, and makes `max_abs_diff` null
(JSON has no NaN or infinity).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from heliabuild.errors import RunnerError, VerificationError
from heliabuild.results.verdict import reference_text
from heliabuild.runner.record import Verification

REFERENCE = "litert"
REFERENCE_KERNELS = "BUILTIN_REF"
"""LiteRT's reference kernels: heliabuild's own kernels are bit-exact with them (docs/kernels.md)."""
HOST_RESOLVER = "BUILTIN_WITHOUT_DEFAULT_DELEGATES"
"""The op resolver of the litert backend (heliabuild.runner.litert.OP_RESOLVER): LiteRT's default kernels."""
RESOLVERS = (REFERENCE_KERNELS, HOST_RESOLVER)


def reference_resolver(backend: str) -> str:
    """The resolver a backend's outputs are compared with by default: the one computing like the backend
    (its own for the litert backend, the reference kernels heliabuild's kernels reproduce otherwise)."""
    return HOST_RESOLVER if backend == "litert" else REFERENCE_KERNELS


def exact_by_construction(backend: str, resolver: str) -> bool:
    """Whether the backend's outputs equal the resolver's exactly on every model: heliabuild's kernels on
    qemu-m55 against the reference kernels, and the litert backend against its own resolver (a fence is an
    identity copy). Where the NPU computes (fvp) its arithmetic is not LiteRT's."""
    return (backend, resolver) in (("qemu-m55", REFERENCE_KERNELS), ("litert", HOST_RESOLVER))


def resolve_verification(
    requested: Mapping[str, Any] | None, backend: str, *, compares_always: bool
) -> dict[str, Any] | None:
    """runner.json's `policy.verification` for the policy's `verification` block `requested` (None: absent)
    on `backend`: `{reference, resolver, max_abs_diff, max_abs_diff_source}`. The resolver defaults to
    `reference_resolver(backend)`; the bound to 0 where the comparison is exact by construction
    (`exact_by_construction`), else null (recorded, not bounded); `max_abs_diff: null` in the policy opts out of
    the bound explicitly. None when nothing is compared: no block and a backend that compares only on request
    (`compares_always` false: the litert backend)."""
    if requested is None and not compares_always:
        return None
    requested = requested or {}
    resolver = requested.get("resolver", reference_resolver(backend))
    explicit = "max_abs_diff" in requested
    default = 0 if exact_by_construction(backend, resolver) else None
    bound = requested["max_abs_diff"] if explicit else default
    return {
        "reference": requested.get("reference", REFERENCE),
        "resolver": resolver,
        "max_abs_diff": bound,
        "max_abs_diff_source": "explicit" if explicit else "default",
    }


@dataclass(frozen=True)
class OutputCheck:
    """One output of one sample against the reference: `max_abs_diff` is None when `unbounded` elements differ
    without bound (a NaN against a number, an infinity against anything else)."""

    position: int
    name: str
    max_abs_diff: int | float | None
    differing: int
    elements: int
    unbounded: int = 0

    def to_json(self) -> dict[str, Any]:
        return {
            "position": self.position,
            "name": self.name,
            "max_abs_diff": self.max_abs_diff,
            "differing_elements": self.differing,
            "unbounded_elements": self.unbounded,
            "elements": self.elements,
        }


@dataclass(frozen=True)
class ReferenceOutput:
    name: str
    values: np.ndarray


def reference_outputs(
    model_bytes: bytes, input_bytes: Sequence[bytes | None], invokes: int = 1, resolver: str = REFERENCE_KERNELS
) -> list[list[ReferenceOutput]]:
    """The outputs of each of `invokes` invokes of `model_bytes` on one LiteRT instance with the op resolver
    named `resolver` (so state carries as on the target), input k refilled with `input_bytes[k]` (None: zeros)
    before every invoke. RunnerError when an input's byte length does not match its tensor."""
    from ai_edge_litert.interpreter import Interpreter, OpResolverType

    try:
        interpreter = Interpreter(
            model_content=bytes(model_bytes), experimental_op_resolver_type=getattr(OpResolverType, resolver)
        )
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


def exceeds(check: OutputCheck, bound: float | None) -> bool:
    """Whether the check breaks `bound` (None: no bound): a larger difference, or any unbounded one."""
    if bound is None:
        return False
    return check.max_abs_diff is None or check.max_abs_diff > bound


def first_excess(checks: Sequence[OutputCheck], bound: float | None) -> OutputCheck | None:
    """The first check that breaks `bound` (`exceeds`), or None."""
    return next((check for check in checks if exceeds(check, bound)), None)


def _float_check(found: np.ndarray, values: np.ndarray) -> tuple[float | None, int, int]:
    """(largest difference or None when unbounded, differing elements, unbounded elements) of two float
    tensors: NaN equals NaN, a NaN against a number or an infinity against anything else is unbounded."""
    found64 = found.astype(np.float64)
    expected64 = values.astype(np.float64)
    equal = (found64 == expected64) | (np.isnan(found64) & np.isnan(expected64))
    with np.errstate(invalid="ignore"):
        difference = np.abs(found64 - expected64)
    bounded = ~equal & np.isfinite(difference)
    unbounded = int(np.count_nonzero(~equal & ~np.isfinite(difference)))
    largest = float(difference[bounded].max(initial=0.0))
    return (None if unbounded else largest), int(np.count_nonzero(~equal)), unbounded


def compare_outputs(reference: Sequence[ReferenceOutput], measured: Sequence[bytes]) -> list[OutputCheck]:
    """Each measured output (raw bytes, in graph-output order) against the reference's (module docstring)."""
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
        unbounded = 0
        largest: int | float | None
        if np.issubdtype(values.dtype, np.inexact):
            largest, differing, unbounded = _float_check(found, values)
        else:
            difference = np.abs(found.astype(np.int64) - values.astype(np.int64))
            largest = int(difference.max(initial=0))
            differing = int(np.count_nonzero(difference))
        checks.append(
            OutputCheck(
                position=position,
                name=expected.name,
                max_abs_diff=largest,
                differing=differing,
                elements=int(values.size),
                unbounded=unbounded,
            )
        )
    return checks


def outputs_finite(reference: Sequence[ReferenceOutput], measured: Sequence[bytes]) -> bool:
    """Whether every floating output among `measured` (raw bytes, typed as the reference's) is finite; integer
    outputs are."""
    return all(
        bool(np.isfinite(np.frombuffer(data, expected.values.dtype)).all())
        for expected, data in zip(reference, measured, strict=True)
        if np.issubdtype(expected.values.dtype, np.inexact)
    )


def verification_failure(source: str, sample: int, check: OutputCheck, verification: Verification) -> str:
    """The message of a run of the runner `source` refused by its policy's verification bound."""
    against = reference_text(verification.to_json())
    if check.max_abs_diff is None:
        found = f"without bound (a NaN or an infinity against another value) in {check.unbounded} of its"
    else:
        found = f"by {check.max_abs_diff} in {check.differing} of its"
    source_of_bound = "default" if verification.max_abs_diff_source == "default" else "policy's"
    return (
        f"{source}: sample {sample}: output {check.position} ({check.name}) differs from {against} {found} "
        f"{check.elements} elements, more than the {source_of_bound} verification.max_abs_diff "
        f"{verification.max_abs_diff}; nothing is published"
    )


def check_sample(
    source: str, sample: int, checks: Sequence[OutputCheck], verification: Verification
) -> tuple[OutputCheck, ...]:
    """The sample's checks; VerificationError (verification_failure) when one breaks the bound."""
    excess = first_excess(checks, verification.max_abs_diff)
    if excess is not None:
        raise VerificationError(
            verification_failure(source, sample, excess, verification),
            hint="set defaults.fvp.verification.max_abs_diff to a bound, or null to record the difference only",
        )
    return tuple(checks)


def unfenced_model(model_path: Path) -> bytes:
    """The bytes of the model with its fences stripped (the reference runs it: fences are identity copies)."""
    from heliabuild.fence import strip_fences
    from heliabuild.model.io import load_model, serialize

    return bytes(serialize(strip_fences(load_model(model_path))))


@dataclass(frozen=True)
class VerifiedSample:
    """One sample's outputs against the reference: the checks, and whether its floating outputs are finite."""

    checks: tuple[OutputCheck, ...]
    outputs_finite: bool


def verify_samples(
    source: str,
    model_path: Path,
    fills: Sequence[bytes | None],
    warmups: int,
    samples: Sequence[Sequence[bytes]],
    verification: Verification,
) -> list[VerifiedSample]:
    """Each measured sample's outputs (raw bytes, graph-output order) against LiteRT with the verification's
    resolver on the unfenced model of `model_path`, run through the same invokes (`warmups` warmups, then one
    per sample) with the same input `fills` (None: zeros); VerificationError above the bound (check_sample).
    Every backend that compares outputs verifies through this one loop."""
    reference = reference_outputs(unfenced_model(model_path), fills, warmups + len(samples), verification.resolver)
    verified = []
    for index, outputs in enumerate(samples):
        expected = reference[warmups + index]
        checks = check_sample(source, index, compare_outputs(expected, outputs), verification)
        verified.append(VerifiedSample(checks, outputs_finite(expected, outputs)))
    return verified


def verify_firmware_samples(
    runner: Any, backend: str, fills: Sequence[bytes | None], warmups: int, samples: Sequence[Sequence[bytes]]
) -> list[VerifiedSample]:
    """verify_samples for a backend that compares every run (its policy compiled into a firmware): with the
    `policy.verification` of `runner` (heliabuild.runner.freeze.Runner), or, should it hold none, the default
    of runner.json's `backend`."""
    verification = runner.policy.verification or Verification.from_json(
        resolve_verification(None, backend, compares_always=True)
    )
    assert verification is not None  # resolved: compares_always
    return verify_samples(str(runner.path), runner.model_path, fills, warmups, samples, verification)
