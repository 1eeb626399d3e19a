"""Lazy package exports (PEP 562), so importing a light module of a package stays light.

The SCons emitters import file-naming modules (heliabuild.fence.names,
heliabuild.vela.names) on every build; a package `__init__` that eagerly
imported its stage code would pull numpy, the TFLite schema and jsonschema
into every no-op build.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable


def lazy_exports(package: str, exports: dict[str, str]) -> tuple[Callable[[str], object], Callable[[], list[str]]]:
    """`__getattr__` and `__dir__` for `package` exporting `name` from module `exports[name]`."""

    def __getattr__(name: str) -> object:
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(importlib.import_module(module), name)

    def __dir__() -> list[str]:
        return sorted(exports)

    return __getattr__, __dir__
