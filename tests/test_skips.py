"""Skips that cannot hide: every skip of the suite goes through tests/helpers/skips.py, which fails instead of
skipping under CI (CI set), and the hypothesis profile is chosen by CI too (tests/conftest.py)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from helpers import skips
from hypothesis import settings

TESTS = Path(__file__).parent
SKIP = re.compile(r"pytest\.skip\(|pytest\.mark\.skip|\bskipif\b|importorskip|\bxfail\b")


def test_no_test_skips_but_through_the_helper() -> None:
    found = [
        f"{path.relative_to(TESTS)}:{number}: {line.strip()}"
        for path in sorted(TESTS.rglob("*.py"))
        if path != TESTS / "helpers" / "skips.py" and path != Path(__file__)
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if SKIP.search(line)
    ]
    assert found == []


def test_missing_skips_on_a_developers_machine_and_fails_under_ci(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(skips.CI_VARIABLE, raising=False)
    with pytest.raises(pytest.skip.Exception, match="no-such-tool is not on PATH"):
        skips.require_tool("no-such-tool", "nowhere")
    monkeypatch.setenv(skips.CI_VARIABLE, "true")
    with pytest.raises(pytest.fail.Exception, match=r"no-such-tool is not on PATH .* under CI nothing may be missing"):
        skips.require_tool("no-such-tool", "nowhere")
    with pytest.raises(pytest.fail.Exception, match="no-such-distribution is not installed"):
        skips.require_distribution("no-such-distribution", "nowhere")
    with pytest.raises(pytest.fail.Exception, match="no_such_module cannot be imported"):
        skips.require_module("no_such_module", "nowhere")


def test_the_hypothesis_profile_is_the_derandomized_one_under_ci() -> None:
    chosen = settings.default
    if skips.under_ci():
        assert chosen.derandomize and chosen.database is None
    else:
        assert not chosen.derandomize and chosen.max_examples >= settings.get_profile("ci").max_examples
