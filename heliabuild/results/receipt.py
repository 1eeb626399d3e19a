"""The `helx.acquisition` receipt, protocol version 1 (docs/runner.md, "The bundle").

Every executed runner emits exactly one receipt stating the lifecycle it actually ran: state, warmup and
measured counts, where initialization happened, and (for interpreters) whether the runner model holds a
CALL_ONCE operator. A bundle keeps it as `artifacts/acquisition.json`, covered by the manifest.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from heliabuild.errors import ReceiptError

SCHEMA_ID = "helx.acquisition"
PROTOCOL_VERSION = 1
RECEIPT_PATH = "artifacts/acquisition.json"

STATES = ("carry", "single")
INTERPRETER_INITIALIZATION = "interpreter_allocate_and_first_invoke"
AOT_INITIALIZATION = "before_measurement"
INITIALIZATIONS = (INTERPRETER_INITIALIZATION, AOT_INITIALIZATION)

# Runtimes by the initialization they must report: interpreters allocate and run CALL_ONCE in the first
# invoke; generated AOT code runs model_init() before measurement.
INTERPRETER_RUNTIMES = frozenset({"litert", "heliart", "tflm"})
"""tflm: TFLite Micro in Arm's prebuilt runner on an FVP (the fvp backend)."""
AOT_RUNTIMES = frozenset({"aot"})

_FIELDS = ("schema", "version", "state", "warmup_invokes", "measured_invokes", "initialization", "call_once_present")


def _count(document: Mapping[str, Any], field: str, source: str) -> int:
    value = document[field]
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ReceiptError(f"{source}: {field}: found {value!r}, expected a non-negative integer")
    return value


@dataclass(frozen=True)
class Receipt:
    """One `helx.acquisition` receipt: the lifecycle a runner actually ran."""

    state: str
    warmup_invokes: int
    measured_invokes: int
    initialization: str
    call_once_present: bool | None

    def __post_init__(self) -> None:
        self.check(source="receipt")

    def to_json(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA_ID,
            "version": PROTOCOL_VERSION,
            "state": self.state,
            "warmup_invokes": self.warmup_invokes,
            "measured_invokes": self.measured_invokes,
            "initialization": self.initialization,
            "call_once_present": self.call_once_present,
        }

    @classmethod
    def from_json(cls, document: Any, source: str = RECEIPT_PATH) -> Receipt:
        """Read one receipt; a list is read as receipt entries (none: missing; several: duplicate)."""
        if isinstance(document, list):
            if not document:
                raise ReceiptError(f"{source}: missing acquisition receipt: the file holds no receipt entry")
            if len(document) > 1:
                raise ReceiptError(
                    f"{source}: duplicate acquisition receipt: found {len(document)} entries, expected exactly one"
                )
            raise ReceiptError(f"{source}: found a list of one receipt, expected the receipt object itself")
        if not isinstance(document, Mapping):
            raise ReceiptError(f"{source}: found {type(document).__name__}, expected a receipt object")
        if "schema" not in document:
            raise ReceiptError(f"{source}: schema: missing, expected {SCHEMA_ID!r}")
        if document["schema"] != SCHEMA_ID:
            raise ReceiptError(
                f"{source}: schema: unsupported receipt schema {document['schema']!r}, expected {SCHEMA_ID!r}"
            )
        if "version" not in document:
            raise ReceiptError(f"{source}: version: missing, expected protocol version {PROTOCOL_VERSION}")
        if document["version"] != PROTOCOL_VERSION or isinstance(document["version"], bool):
            raise ReceiptError(
                f"{source}: version: receipt protocol version {document['version']!r} is not supported, "
                f"expected {PROTOCOL_VERSION}",
                hint="create a new capture with this heliabuild",
            )
        for field in _FIELDS:
            if field not in document:
                raise ReceiptError(f"{source}: {field}: missing from the acquisition receipt")
        unknown = sorted(set(document) - set(_FIELDS))
        if unknown:
            raise ReceiptError(f"{source}: {unknown[0]}: unknown receipt field, expected only {', '.join(_FIELDS)}")
        state = document["state"]
        if state not in STATES:
            raise ReceiptError(f"{source}: state: found {state!r}, expected one of {', '.join(STATES)}")
        initialization = document["initialization"]
        if initialization not in INITIALIZATIONS:
            raise ReceiptError(
                f"{source}: initialization: found {initialization!r}, expected one of {', '.join(INITIALIZATIONS)}"
            )
        call_once = document["call_once_present"]
        if call_once is not None and not isinstance(call_once, bool):
            raise ReceiptError(f"{source}: call_once_present: found {call_once!r}, expected true, false or null")
        receipt = object.__new__(cls)
        for name, value in (
            ("state", state),
            ("warmup_invokes", _count(document, "warmup_invokes", source)),
            ("measured_invokes", _count(document, "measured_invokes", source)),
            ("initialization", initialization),
            ("call_once_present", call_once),
        ):
            object.__setattr__(receipt, name, value)
        receipt.check(source=source)
        return receipt

    def check(
        self,
        *,
        source: str,
        sample_count: int | None = None,
        runtime: str | None = None,
        warmup_invokes: int | None = None,
    ) -> None:
        """Raise ReceiptError naming `source` and the field when the receipt contradicts itself, the number of
        samples, the runtime that produced it, or the native warmup count."""
        for field in ("warmup_invokes", "measured_invokes"):
            value = getattr(self, field)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ReceiptError(f"{source}: {field}: found {value!r}, expected a non-negative integer")
        if self.state not in STATES:
            raise ReceiptError(f"{source}: state: found {self.state!r}, expected one of {', '.join(STATES)}")
        if self.initialization not in INITIALIZATIONS:
            raise ReceiptError(
                f"{source}: initialization: found {self.initialization!r}, expected one of {', '.join(INITIALIZATIONS)}"
            )
        if self.call_once_present is not None and not isinstance(self.call_once_present, bool):
            raise ReceiptError(f"{source}: call_once_present: found {self.call_once_present!r}, expected a boolean")
        if self.measured_invokes < 1:
            raise ReceiptError(f"{source}: measured_invokes: found {self.measured_invokes}, expected at least 1")
        if self.state == "single" and self.warmup_invokes != 0:
            raise ReceiptError(
                f"{source}: warmup_invokes: contradictory receipt: state single with {self.warmup_invokes} "
                "warmup invokes, expected 0"
            )
        if self.state == "single" and self.measured_invokes != 1:
            raise ReceiptError(
                f"{source}: measured_invokes: contradictory receipt: state single with {self.measured_invokes} "
                "measured invokes, expected 1"
            )
        if self.initialization == AOT_INITIALIZATION and self.call_once_present is not None:
            raise ReceiptError(
                f"{source}: call_once_present: contradictory receipt: initialization {AOT_INITIALIZATION} "
                f"(generated AOT code) with call_once_present {self.call_once_present!r}, expected null"
            )
        if self.initialization == INTERPRETER_INITIALIZATION and self.call_once_present is None:
            raise ReceiptError(
                f"{source}: call_once_present: contradictory receipt: initialization {INTERPRETER_INITIALIZATION} "
                "(an interpreter) with call_once_present null, expected the observed boolean"
            )
        if sample_count is not None and sample_count != self.measured_invokes:
            raise ReceiptError(
                f"{source}: measured_invokes: receipt states {self.measured_invokes} measured invokes "
                f"but the result holds {sample_count} samples"
            )
        if warmup_invokes is not None and warmup_invokes != self.warmup_invokes:
            raise ReceiptError(
                f"{source}: warmup_invokes: receipt states {self.warmup_invokes} warmup invokes "
                f"but the runner reports {warmup_invokes}"
            )
        if runtime is not None:
            expected = (
                INTERPRETER_INITIALIZATION
                if runtime in INTERPRETER_RUNTIMES
                else AOT_INITIALIZATION
                if runtime in AOT_RUNTIMES
                else None
            )
            if expected is None:
                raise ReceiptError(f"{source}: runtime {runtime!r} is not one a receipt can describe")
            if self.initialization != expected:
                raise ReceiptError(
                    f"{source}: initialization: receipt states {self.initialization} "
                    f"but runtime {runtime} initializes as {expected}"
                )


def single_receipt(documents: Sequence[Any], source: str) -> Receipt:
    """The one receipt among everything a runner emitted: none is a missing receipt, several a duplicate."""
    if not documents:
        raise ReceiptError(f"{source}: missing acquisition receipt: the runner emitted none")
    if len(documents) > 1:
        raise ReceiptError(
            f"{source}: duplicate acquisition receipt: the runner emitted {len(documents)}, expected exactly one"
        )
    return Receipt.from_json(documents[0], source)
