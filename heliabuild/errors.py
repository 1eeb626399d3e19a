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
