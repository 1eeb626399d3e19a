"""Admission of operators to the AOT compiler's routes: the shared vocabulary.

The AOT planner asks, per operator, "does this route take these tensors on
this target?". Each operator module answers with `admit(...)`, which returns
None (admitted) or a `Refusal` naming the rule it breaks; `require` turns a
refusal into an `AdmissionError`. `heliabuild.kernels.operators.admit`
dispatches on the TFLite operator name.

Tensors are described by `TensorSpec` (dtype name, static shape, whether it
is quantized), targets by `TargetCapabilities`. Rules are identified by a
stable id, `<operator>.<rule>`, and every module lists its rules in `RULES`
(id -> the contract's sentence), in the order they are checked.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from ai_edge_litert import schema_py_generated as schema

from heliabuild.errors import KernelError

INT32_MAX = 2**31 - 1

ELEMENT_SIZES: dict[str, int] = {
    "bool": 1,
    "int4": 1,
    "int8": 1,
    "uint8": 1,
    "int16": 2,
    "uint16": 2,
    "float16": 2,
    "bfloat16": 2,
    "int32": 4,
    "uint32": 4,
    "float32": 4,
    "int64": 8,
    "uint64": 8,
    "float64": 8,
}
"""Bytes per element of the dtypes a spec may name (int4 counted unpacked; the routes here never admit it)."""

INTEGER_DTYPES = frozenset({"int4", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64"})
FLOAT_DTYPES = ("float32", "float16")
"""The floating-point dtypes the DIV, NEG and SQUARED_DIFFERENCE routes take."""

ACTIVATION_NAMES: dict[int, str] = {
    value: name for name, value in vars(schema.ActivationFunctionType).items() if not name.startswith("_")
}


@dataclass(frozen=True)
class TensorSpec:
    """A tensor as admission sees it: `dtype` (lower-case TFLite name such as 'int32', 'float16',
    'bool'), `shape` (extents, outermost first; -1 is an unknown extent, () a scalar) and whether
    it carries quantization parameters."""

    dtype: str
    shape: tuple[int, ...]
    quantized: bool = False

    @classmethod
    def of(cls, array: np.ndarray, quantized: bool = False) -> TensorSpec:
        """The spec of a numpy array (dtype name and shape)."""
        return cls(np.dtype(array.dtype).name, tuple(int(d) for d in array.shape), quantized)

    @property
    def rank(self) -> int:
        return len(self.shape)

    @property
    def static(self) -> bool:
        """Every extent is known (nonnegative)."""
        return all(d >= 0 for d in self.shape)

    @property
    def positive(self) -> bool:
        """Every extent is known and at least one (a scalar qualifies)."""
        return all(d >= 1 for d in self.shape)

    @property
    def element_count(self) -> int:
        return math.prod(self.shape)

    @property
    def byte_count(self) -> int:
        """Element count x element size (unknown dtypes count one byte per element)."""
        return self.element_count * ELEMENT_SIZES.get(self.dtype, 1)


@dataclass(frozen=True)
class TargetCapabilities:
    """What the target offers the generated code: `fp16` is half-precision arithmetic of an
    M55-class core (Armv8.1-M with the floating-point MVE extension)."""

    name: str
    fp16: bool


CORTEX_M55 = TargetCapabilities("cortex-m55", fp16=True)
"""An M55-class target: FP16 routes are admitted."""

CORTEX_M4 = TargetCapabilities("cortex-m4", fp16=False)
"""A target without FP16 arithmetic (Cortex-M4/M7 class): FP16 routes are refused."""


@dataclass(frozen=True)
class Refusal:
    """Why a route does not take an operator: `rule` is the stable id (`div.fp16-target`),
    `message` one sentence naming the operator, the value found and what the contract expects."""

    operator: str
    rule: str
    message: str

    def __str__(self) -> str:
        return f"{self.message} [{self.rule}]"

    def error(self) -> AdmissionError:
        return AdmissionError(self)


class AdmissionError(KernelError):
    """An operator a route refuses; `refusal` holds the rule and message."""

    def __init__(self, refusal: Refusal) -> None:
        super().__init__(str(refusal))
        self.refusal = refusal


def require(refusal: Refusal | None) -> None:
    """Raise the refusal as AdmissionError; do nothing for None (admitted)."""
    if refusal is not None:
        raise refusal.error()


def shape_text(shape: Sequence[int]) -> str:
    return "scalar" if len(shape) == 0 else "[" + ", ".join(str(d) for d in shape) + "]"


def broadcast_shape(shapes: Sequence[Sequence[int]]) -> tuple[int, ...] | None:
    """The singleton-broadcast shape of `shapes` (aligned from the right, each axis equal or 1), or None."""
    try:
        return tuple(int(d) for d in np.broadcast_shapes(*(tuple(s) for s in shapes)))
    except ValueError:
        return None


def activation_name(activation: str | int) -> str:
    """The upper-case name of a fused activation given as a name or a TFLite ActivationFunctionType code."""
    if isinstance(activation, int):
        return ACTIVATION_NAMES.get(activation, f"activation {activation}")
    return str(activation).upper()


class Checker:
    """Collects the first broken rule: `fail(rule, message)` records it once; later calls are ignored."""

    def __init__(self, operator: str, rules: dict[str, str]) -> None:
        self.operator = operator
        self.rules = rules
        self.refusal: Refusal | None = None

    def fail(self, rule: str, message: str) -> Refusal:
        if rule not in self.rules:  # pragma: no cover - a programming error in a module's RULES
            raise KeyError(rule)
        self.refusal = Refusal(self.operator, rule, f"{self.operator}: {message}")
        return self.refusal


def arity(check: Checker, rule: str, inputs: Sequence[TensorSpec], outputs: Sequence[TensorSpec], n_in: int) -> bool:
    """Refuse unless there are `n_in` inputs and one output; True when it refused."""
    if len(inputs) != n_in or len(outputs) != 1:
        check.fail(rule, f"{len(inputs)} inputs and {len(outputs)} outputs, expected {n_in} inputs and 1 output")
        return True
    return False


def float_route_dtypes(
    check: Checker, prefix: str, tensors: Sequence[TensorSpec], target: TargetCapabilities, integer_note: str
) -> bool:
    """The dtype rules shared by the FP32/FP16 routes (`<prefix>.integer`, `.dtype`, `.same-dtype`,
    `.fp16-target`); True when one refused."""
    names = [t.dtype for t in tensors]
    integers = [name for name in names if name in INTEGER_DTYPES]
    if integers and f"{prefix}.integer" in check.rules:
        check.fail(f"{prefix}.integer", f"{integers[0]} operands; {integer_note}")
        return True
    others = [name for name in names if name not in FLOAT_DTYPES]
    if others:
        check.fail(f"{prefix}.dtype", f"dtype {others[0]}, expected float32 or float16; {integer_note}")
        return True
    if len(set(names)) != 1:
        check.fail(f"{prefix}.same-dtype", f"dtypes {', '.join(names)} differ; operands and output share one dtype")
        return True
    if names[0] == "float16" and not target.fp16:
        check.fail(
            f"{prefix}.fp16-target",
            f"float16 on target {target.name}, which has no FP16 arithmetic; FP16 needs an M55-class target",
        )
        return True
    return False


def positive_extents(check: Checker, rule: str, tensors: Sequence[TensorSpec], roles: Sequence[str]) -> bool:
    """Refuse a tensor with an extent below one (unknown extents included); True when it refused."""
    for role, tensor in zip(roles, tensors, strict=True):
        if not tensor.positive:
            check.fail(
                rule, f"{role} shape {shape_text(tensor.shape)} has an extent that is not a positive static value"
            )
            return True
    return False


def byte_counts(check: Checker, rule: str, tensors: Sequence[TensorSpec], roles: Sequence[str]) -> bool:
    """Refuse a tensor whose byte count exceeds INT32_MAX; True when it refused."""
    for role, tensor in zip(roles, tensors, strict=True):
        if tensor.byte_count > INT32_MAX:
            check.fail(
                rule,
                f"{role} {tensor.dtype} {shape_text(tensor.shape)} holds {tensor.byte_count} bytes, "
                f"more than INT32_MAX ({INT32_MAX})",
            )
            return True
    return False
