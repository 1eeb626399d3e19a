"""A bundle's verification verdict and input source, as `show`, `compare`, the SCons summary table and the
sweep table state them (docs/runner.md, "Verification"): what the outputs were compared with and how they
differ, and whether the inputs were zeros or the policy's tensor_io files.

The verdict reads every sample's `verification` and the run identity's `policy.verification` (the resolver
and the bound the runner froze); the input source reads the run identity's `policy.tensor_io`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

RESOLVER_TEXT = {
    "BUILTIN_REF": "LiteRT reference kernels (BUILTIN_REF)",
    "BUILTIN_WITHOUT_DEFAULT_DELEGATES": "LiteRT default kernels (BUILTIN_WITHOUT_DEFAULT_DELEGATES)",
}
"""How each op resolver a verification reference runs is named."""


def reference_text(verification: Mapping[str, Any] | None) -> str:
    """The reference a frozen `policy.verification` names: `LiteRT reference kernels (BUILTIN_REF)`."""
    if not verification:
        return "LiteRT"
    resolver = verification.get("resolver", "BUILTIN_REF")
    return RESOLVER_TEXT.get(resolver, f"LiteRT ({resolver})")


@dataclass(frozen=True)
class Verdict:
    """The comparison over every sample: `compared` false when no sample was compared; `largest` the largest
    difference (None when `unbounded` elements differ without bound); `differing` the most differing elements
    in one sample, `elements` a sample's elements (all outputs), `samples_differing` of `samples`."""

    compared: bool
    reference: str
    bound: float | None
    resolver: str | None = None
    largest: float | None = None
    differing: int = 0
    unbounded: int = 0
    elements: int = 0
    samples: int = 0
    samples_differing: int = 0

    @property
    def matches(self) -> bool:
        return self.compared and self.differing == 0

    def text(self) -> str:
        """`outputs match LiteRT reference kernels (BUILTIN_REF): 0 of 12 elements differ`, or the largest
        difference and its bound, or `outputs not compared`."""
        if not self.compared:
            return "outputs not compared"
        each = f" in each of {self.samples} samples" if self.samples > 1 else ""
        if self.matches:
            return f"outputs match {self.reference}: 0 of {self.elements} elements differ{each}"
        unbounded = "unbounded (a NaN or an infinity against another value)"
        largest = unbounded if self.largest is None else _number(self.largest)
        where = f" in {self.samples_differing} of {self.samples} samples" if self.samples > 1 else ""
        bound = "no bound, recorded" if self.bound is None else f"bound {_number(self.bound)}"
        most = "up to " if self.samples > 1 else ""
        return (
            f"outputs differ from {self.reference}: largest difference {largest}, {most}{self.differing} of "
            f"{self.elements} elements differ{where} ({bound})"
        )

    def short(self) -> str:
        """The verdict in a table cell: `0 of 12 differ (BUILTIN_REF)`, `max 117, 10 of 10 differ (BUILTIN_REF)`,
        `not compared`."""
        if not self.compared:
            return "not compared"
        against = f" ({self.resolver})" if self.resolver else ""
        if self.matches:
            return f"0 of {self.elements} differ{against}"
        largest = "unbounded" if self.largest is None else _number(self.largest)
        return f"max {largest}, {self.differing} of {self.elements} differ{against}"


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:.6g}"


def verdict(identity: Mapping[str, Any], samples: Sequence[Any]) -> Verdict:
    """The Verdict of a bundle's `run_identity` and samples (heliabuild.results.layout.Sample)."""
    verification = identity.get("policy", {}).get("verification")
    reference = reference_text(verification)
    bound = None if not verification else verification.get("max_abs_diff")
    resolver = None if not verification else verification.get("resolver")
    checked = [sample.verification for sample in samples if sample.verification is not None]
    if not checked:
        return Verdict(compared=False, reference=reference, bound=bound, resolver=resolver)
    largest: float | None = 0
    differing = unbounded = samples_differing = 0
    for checks in checked:
        count = sum(int(check["differing_elements"]) for check in checks)
        differing = max(differing, count)
        samples_differing += count > 0
        unbounded += sum(int(check.get("unbounded_elements", 0)) for check in checks)
        for check in checks:
            value = check["max_abs_diff"]
            largest = None if largest is None or value is None else max(largest, value)
    return Verdict(
        compared=True,
        reference=reference,
        bound=bound,
        resolver=resolver,
        largest=largest,
        differing=differing,
        unbounded=unbounded,
        elements=sum(int(check["elements"]) for check in checked[0]),
        samples=len(checked),
        samples_differing=samples_differing,
    )


def input_source(identity: Mapping[str, Any]) -> str:
    """The inputs every invoke was filled with: `zeros`, or the tensor_io files (`input0.bin` for input 0;
    `input 1: b.bin` naming the index when more than input 0 is given; any other input zeros)."""
    tensor_io = identity.get("policy", {}).get("tensor_io")
    if not tensor_io:
        return "zeros"
    entries = sorted(tensor_io["inputs"], key=lambda entry: entry["index"])
    names = [str(entry.get("source") or entry["file"]) for entry in entries]
    if [entry["index"] for entry in entries] == [0]:
        return names[0]
    return ", ".join(f"input {entry['index']}: {name}" for entry, name in zip(entries, names, strict=True))
