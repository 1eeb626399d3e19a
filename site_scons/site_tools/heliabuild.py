"""SCons tool `heliabuild`: `env.Tool('heliabuild')` adds the heliabuild builders and HeliaPipeline.

A thin shim: generate(env) and exists(env) delegate to the installed package's
heliabuild.scons (see docs/scons.md).

SCons loads a site tool as a module named after the tool and registers it as
`sys.modules['heliabuild']` while putting this folder first on sys.path, which
would shadow the heliabuild package itself. The import below therefore takes
this module out of sys.modules and this folder out of sys.path for the
duration of the import, so `heliabuild` keeps naming the package for the
tool's code, the SConscripts and the build actions.
"""

from __future__ import annotations

import importlib
import os
import sys
from types import ModuleType
from typing import Any

_HERE = os.path.dirname(os.path.abspath(__file__))


def _import_package_module(name: str) -> ModuleType:
    """Import `name` from the heliabuild package, not from this tool module."""
    shadow = sys.modules.get("heliabuild")
    if shadow is not None and getattr(shadow, "__file__", None) == __file__:
        del sys.modules["heliabuild"]
    saved_path = list(sys.path)
    sys.path[:] = [entry for entry in sys.path if os.path.abspath(entry or os.curdir) != _HERE]
    try:
        importlib.import_module("heliabuild")
        return importlib.import_module(name)
    finally:
        sys.path[:] = saved_path


_wiring = _import_package_module("heliabuild.scons")


def generate(env: Any) -> None:
    """Add the heliabuild builders and construction variables to `env` (heliabuild.scons.generate)."""
    _wiring.generate(env)


def exists(env: Any) -> bool:
    """Whether the tool can be used (heliabuild.scons.exists)."""
    return bool(_wiring.exists(env))
