"""`python3 dev.py test` runs the suite on two pytest-xdist workers unless its arguments choose otherwise."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

_spec = importlib.util.spec_from_file_location("dev", Path(__file__).resolve().parents[1] / "dev.py")
assert _spec is not None and _spec.loader is not None
dev = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(dev)
PARALLEL, pytest_arguments = dev.PARALLEL, dev.pytest_arguments


@pytest.mark.parametrize("arguments", [[], ["tests/test_model_io.py", "-q"], ["-p", "no:cacheprovider"]])
def test_the_suite_runs_on_two_workers_by_default(arguments: list[str]) -> None:
    assert pytest_arguments(arguments) == [*PARALLEL, *arguments]


@pytest.mark.parametrize(
    "arguments",
    [["-n", "4"], ["-n0"], ["--numprocesses=3"], ["-p", "no:xdist", "-q"], ["-pno:xdist"], ["--pdb"], ["--trace"]],
)
def test_arguments_that_choose_the_workers_or_debug_are_passed_alone(arguments: list[str]) -> None:
    assert pytest_arguments(arguments) == arguments
