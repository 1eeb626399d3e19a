"""Detess outcomes: the `Error` record that admission and execution return instead of raising.

Mirrors the contract's `std::variant<Plan, Error>` and `Status`: a refused
request or binding is a value naming the rule it breaks. `ErrorCode` values
equal the C status codes of `heliabuild/kernels/c/detess.h` (0 is success), so
the numpy reference and the C kernel can be compared code for code.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import TypeVar

from heliabuild.errors import KernelError


class ErrorCode(enum.IntEnum):
    """Why a request or a binding was refused (C: `detess_status`)."""

    PORT_COUNT = 1
    """Not exactly one input and one output spec."""
    PARAMS = 2
    """Params is not empty."""
    DIRECTION = 3
    """The input is not MlaTiled, or the output is not contiguous or Strided."""
    DTYPE = 4
    """A dtype other than INT8 or BF16."""
    DTYPE_MISMATCH = 5
    """Input and output dtypes differ."""
    RANK = 6
    """A logical rank outside 1..6 (rank zero scalars included)."""
    EXTENT = 7
    """A logical extent that is not an integer in [0, 2**63)."""
    SHAPE_MISMATCH = 8
    """Input and output logical shapes differ."""
    PADDING = 9
    """A padding mode other than Compact or PadTo16 (MlaCBlocked included)."""
    AXES = 10
    """D/H/W/C axes that are not four entries of -1 or a unique logical axis."""
    CHANNEL_AXIS = 11
    """The C axis is unmapped."""
    TILE_SHAPE = 12
    """A tile extent below one, or an unmapped spatial axis with tile extent other than one."""
    STRIDE_COUNT = 13
    """Strided output whose stride count differs from its rank."""
    STRIDE_NEGATIVE = 14
    """A negative stride."""
    STRIDE_ALIGNMENT = 15
    """A stride that is not a multiple of the scalar width."""
    STRIDE_ZERO = 16
    """A zero (broadcast) stride on an axis of extent above one."""
    STRIDE_OVERLAP = 17
    """Strides the sorted-span proof cannot show nonoverlapping."""
    OVERFLOW = 18
    """A byte size or stride that does not fit a signed 64-bit integer (or the platform's size_t)."""
    BINDING_COUNT = 19
    """Not exactly one input and one output binding."""
    PLAN = 20
    """The plan was not produced by check_inference."""
    BINDING = 21
    """A binding that is not a contiguous byte buffer (or a read-only output, or a null pointer)."""
    CAPACITY = 22
    """A binding smaller than the plan's physical requirement."""
    ALIGNMENT = 23
    """A tiled binding not 16-byte aligned, or a linear one not scalar aligned."""
    OVERLAP = 24
    """Input and output bindings whose accessed bounding spans intersect."""


@dataclass(frozen=True)
class Error:
    """A refusal: the rule broken (`code`) and one sentence naming the value found and what was expected."""

    code: ErrorCode
    message: str

    def exception(self) -> DetessError:
        """This refusal as a raisable `DetessError` (for callers that prefer exceptions)."""
        return DetessError(self)


class DetessError(KernelError):
    """A Detess request or binding that the contract does not admit; `error` holds the `Error` record."""

    def __init__(self, error: Error) -> None:
        super().__init__(f"detess: {error.message}")
        self.error = error


_T = TypeVar("_T")


def unwrap(outcome: _T | Error) -> _T:
    """Return `outcome`, or raise it as `DetessError` when it is an `Error`."""
    if isinstance(outcome, Error):
        raise outcome.exception()
    return outcome
