"""The one error hierarchy of heliabuild.

Every error a user can cause (bad input, bad configuration) derives from
HeliaError; the CLI prints its message as one line and exits 2. Anything else
is an internal fault (exit 1).

This module holds HeliaError, each stage's own root (ModelError, KernelError, ...)
and every error class that a package other than its raiser names; an error one
package alone raises and handles lives beside its raiser (docs/layout.md,
"Errors"; tests/test_error_classes.py). A kernel error's `status` is the C status
(a heliabuild.kernels.native.Status, an int). It imports nothing of heliabuild.
"""

from __future__ import annotations

from typing import Any


class HeliaError(Exception):
    """Bad input or configuration: a message naming the file, field or operator,
    the value found and what was expected, plus an optional hint."""

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint


class ModelError(HeliaError):
    """A TFLite file that cannot be read, or a model that breaks the schema's rules."""


class FenceError(HeliaError):
    """A fence request that the ETHOS_U_STREAM_SPLIT contract does not admit."""


class FenceBindingError(FenceError):
    """A fence plan applied to a model it was not cut for."""


class SchemaError(HeliaError):
    """A JSON document that does not validate against its heliabuild schema."""


class FenceVerificationError(FenceError):
    """A fenced model that breaks the contract; `violations` lists every finding."""

    def __init__(self, violations: list[str]) -> None:
        count = len(violations)
        super().__init__(f"{count} contract violation{'s' if count != 1 else ''}: {violations[0]}" if count else "")
        self.violations = list(violations)


class VelaError(HeliaError):
    """Vela refused or failed to compile a model; the message quotes Vela's own."""


class KernelError(HeliaError):
    """A kernel request its contract does not admit, or a native kernel build that cannot run."""


class StreamSplitError(KernelError):
    """A stream-split request the contract refuses: `status` is the C status code, `pair` the pair
    index concerned (None for a count error)."""

    def __init__(self, status: int, pair: int | None, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.pair = pair


class ContractKernelError(KernelError):
    """A request a contract kernel refuses (`.status`), or one the bindings cannot express (`.status` None)."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class DataMovementError(KernelError):
    """Arguments of a data-movement operator that TFLite refuses or the kernels do not take (`.status` the C
    status when the C kernel refused)."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class Int8KernelError(KernelError):
    """A request an int8 kernel refuses (`.status`), or parameters it cannot represent (`.status` None)."""

    def __init__(self, message: str, status: int | None = None, hint: str | None = None) -> None:
        super().__init__(message, hint=hint)
        self.status = status


class ScheduleError(HeliaError):
    """A transfer schedule the plan document's rules reject; `violations` lists every finding, each naming
    the unit or tensor (heliabuild.aot.schedule.ScheduleViolation)."""

    def __init__(self, message: str, hint: str | None = None, violations: list[object] | None = None) -> None:
        super().__init__(message, hint)
        self.violations = list(violations or [])


class PlanReadError(HeliaError):
    """An optimization plan or report this release cannot read: not JSON, another `schema_version`, a known
    field of the wrong type, or (read as input, under `APPLIED`) an unknown field under `schedule`."""


class PlanMismatchError(HeliaError):
    """A plan read as input that does not describe the conversion the configuration produces.

    `field` is the path of the first differing field (as in the plan, e.g. `tensors.2.residency`),
    `plan_value` and `conversion_value` the two values (None also for "absent")."""

    def __init__(
        self,
        message: str,
        hint: str | None = None,
        *,
        field: str = "",
        plan_value: object = None,
        conversion_value: object = None,
    ) -> None:
        super().__init__(message, hint)
        self.field = field
        self.plan_value = plan_value
        self.conversion_value = conversion_value


class ResultError(HeliaError):
    """A result bundle that cannot be written or read: an earlier `schema_version`, a manifest that does not
    match the bundle's bytes, statistics that do not reproduce the samples, or a request export cannot serve."""


class ReceiptError(ResultError):
    """A `helx.acquisition` receipt that is missing, duplicated, unsupported (another version or schema
    identifier) or contradictory (against itself, the samples, or the result's stage and runtime)."""


class PolicyError(HeliaError):
    """A measurement policy (docs/runner.md) that is malformed or asks for something unsupported; the message
    names the policy file and the field."""


class RunnerError(HeliaError):
    """A runner that cannot be built or run: inputs bound to another model, an unsupported format or backend,
    or a model the host backend cannot cut into segments."""


class VerificationError(RunnerError):
    """A run whose outputs differ from the verification reference by more than the policy's bound (docs/runner.md,
    "Verification"): the measurement is sound but refused, so the CLI gives it an exit status of its own."""


class FirmwareError(HeliaError):
    """A firmware that cannot be built or run, or whose output the host cannot trust: a missing toolchain or
    QEMU, a fault, a timeout, a non-zero exit, or a record stream that is malformed, incomplete or tampered."""


class FvpError(HeliaError):
    """An Arm Corstone FVP run that cannot be set up or trusted (heliabuild.fvp): a missing FVP or prebuilt
    runner, a Vela accelerator config the target cannot run, or a UART log that reports a failure, a timeout,
    a fault, no EOT, a cut line or metrics that are missing or contradictory."""


class UnreadLog(FvpError):
    """A UART log that shows no ending heliabuild reads, or no counters where a job needs them: the caller keeps
    the log (`output`, the bytes the FVP wrote) where the user can read it."""

    def __init__(self, message: str, run: Any) -> None:
        super().__init__(message)
        text = "" if run is None else run.console
        self.output: bytes = getattr(run, "output", b"") or text.encode("utf-8", errors="replace")
