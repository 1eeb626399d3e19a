"""The firmware library build replaces the files it writes (the library, `library.sha256`) with os.replace,
never writing into the file at the path: a file hard-linked there (another name for the user's bytes) keeps
its bytes, and no temporary file is left."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from conftest import require_firmware_tools

from heliabuild.firmware.build import build_library


@pytest.fixture(autouse=True)
def _tools() -> None:
    require_firmware_tools()


def _linked_to_a_users_file(path: Path, users: Path) -> None:
    users.write_bytes(b"the user's bytes\n")
    path.parent.mkdir(parents=True, exist_ok=True)
    os.link(users, path)


def test_build_library_replaces_library_sha256_and_the_library_instead_of_writing_into_them(tmp_path: Path) -> None:
    folder = tmp_path / "build" / "mps3_an547"
    _linked_to_a_users_file(folder / "library.sha256", tmp_path / "mine.txt")
    _linked_to_a_users_file(folder / "libheliafirmware.a", tmp_path / "mine.a")
    library = build_library(tmp_path / "build")
    assert library == folder / "libheliafirmware.a"
    assert (tmp_path / "mine.txt").read_bytes() == b"the user's bytes\n"
    assert (tmp_path / "mine.a").read_bytes() == b"the user's bytes\n"
    assert len((folder / "library.sha256").read_text()) == 64
    assert sorted(path.name for path in folder.iterdir() if path.name.endswith(".tmp")) == []
