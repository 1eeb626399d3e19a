"""The module prefix of a plan (a C identifier), and the error of a stage argument that cannot work.

Both the planner (heliabuild.aot.planner) and the file-level stage (heliabuild.aot.stage), which runs the
planner, check prefixes; they share this module so that neither imports the other's.
"""

from __future__ import annotations

import re

from heliabuild.errors import HeliaError

PREFIX_PATTERN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
"""A module prefix is a C identifier: it prefixes the module's symbols."""


class StageInputError(HeliaError):
    """A stage argument that cannot work (a module prefix that is not a C identifier, a per-layer CSV of
    another model)."""


def check_prefix(prefix: str) -> str:
    """`prefix` when it is a C identifier; StageInputError otherwise."""
    if not isinstance(prefix, str) or not PREFIX_PATTERN.fullmatch(prefix):
        raise StageInputError(
            f"module prefix {prefix!r} is not a C identifier (letters, digits and '_', not starting with a digit)",
            hint="it prefixes the module's symbols, e.g. kws",
        )
    return prefix


def prefix_of(name: str) -> str:
    """A module prefix made from `name` (a pipeline's or a model's): non-identifier characters become `_`, and
    a leading digit gets a `_` before it."""
    cleaned = "".join(c if c.isascii() and (c.isalnum() or c == "_") else "_" for c in name)
    return cleaned if cleaned and not cleaned[0].isdigit() else f"_{cleaned}"
