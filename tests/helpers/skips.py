"""The one way a test skips for something missing (a tool, an extra, the shared models, a platform feature):
`missing(reason)` skips on a developer's machine and fails under CI (the environment variable CI set), where
.ci/run installs every tool and extra, so no test a CI run should run is skipped without anyone seeing it.

Every skip of the suite goes through here (tests/test_skips.py checks that no other is written)."""

from __future__ import annotations

import importlib
import importlib.metadata
import os
import shutil
from types import ModuleType
from typing import NoReturn

import pytest

CI_VARIABLE = "CI"


def under_ci() -> bool:
    """Whether this is a CI run (CI set and not empty), where nothing may be missing."""
    return bool(os.environ.get(CI_VARIABLE))


def missing(reason: str, *, module_level: bool = False) -> NoReturn:
    """Skip the test (or, with `module_level`, the module) for `reason`; under CI, fail it instead."""
    if under_ci():
        pytest.fail(f"{reason}; under CI nothing may be missing (.ci/run installs every tool and extra)", pytrace=False)
    pytest.skip(reason, allow_module_level=module_level)


def require(condition: bool, reason: str) -> None:
    """missing(reason) unless `condition` holds."""
    if not condition:
        missing(reason)


def require_tool(name: str, install: str) -> str:
    """The path of the executable `name` on PATH; missing() naming how to `install` it otherwise."""
    path = shutil.which(name)
    if path is None:
        missing(f"{name} is not on PATH (install {install})")
    return path


def require_distribution(name: str, install: str, *, module_level: bool = False) -> None:
    """missing() naming how to `install` it unless the Python distribution `name` is installed."""
    try:
        importlib.metadata.distribution(name)
    except importlib.metadata.PackageNotFoundError:
        missing(f"{name} is not installed ({install})", module_level=module_level)


def require_module(name: str, install: str, *, module_level: bool = False) -> ModuleType:
    """The module `name`, imported; missing() naming how to `install` it when it cannot be."""
    try:
        return importlib.import_module(name)
    except ImportError:
        missing(f"{name} cannot be imported ({install})", module_level=module_level)
