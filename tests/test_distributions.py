"""heliabuild.distributions: the installed version of a distribution, as importlib.metadata gives it."""

from __future__ import annotations

import importlib.metadata
from pathlib import Path

import pytest

from heliabuild.distributions import NotInstalled, normalized, version


def test_every_installed_distribution_has_the_version_importlib_metadata_gives() -> None:
    names = {distribution.metadata["Name"] for distribution in importlib.metadata.distributions()}
    assert {"heliabuild", "ethos-u-vela", "ai-edge-litert", "SCons"} <= names
    assert {name: version(name) for name in names} == {name: importlib.metadata.version(name) for name in names}


def test_a_name_is_found_however_its_separators_and_case_are_spelled() -> None:
    assert version("Ethos_U.Vela") == importlib.metadata.version("ethos-u-vela")
    assert normalized("Ethos_U.-Vela") == "ethos_u_vela"


def test_a_distribution_that_is_not_installed_is_refused() -> None:
    with pytest.raises(NotInstalled):
        version("heliabuild-no-such-distribution")


def test_the_version_field_is_read_from_the_header_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    record = tmp_path / "made_up-9.9.dist-info"
    record.mkdir()
    (record / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: made-up\nVersion: 1.2.3rc1\n\nVersion: 4.5.6 in the description\n",
        encoding="utf-8",
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    version.cache_clear()
    try:
        assert version("made-up") == "1.2.3rc1" == importlib.metadata.version("made-up")
    finally:
        version.cache_clear()
