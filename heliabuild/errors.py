"""The one error hierarchy of heliabuild.

Every error a user can cause (bad input, bad configuration) derives from
HeliaError; the CLI prints its message as one line and exits 2. Anything else
is an internal fault (exit 1).
"""


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
