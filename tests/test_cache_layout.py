"""heliabuild.cache.layout: the keys and entries of the Bazel HTTP remote cache layout, for all inputs."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from heliabuild.cache.layout import (
    AC_KEY_DOMAIN,
    CacheEntry,
    CorruptEntryError,
    ac_key,
    ac_path,
    cas_path,
    is_sha256,
)
from heliabuild.files import sha256_bytes

paths = st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=80)
entries = st.builds(
    CacheEntry,
    path=paths,
    sha256=st.binary(min_size=1, max_size=64).map(sha256_bytes),
    size=st.integers(min_value=0, max_value=(1 << 63) - 1),
    executable=st.booleans(),
)


@given(entries)
def test_an_entry_decodes_to_itself_from_its_canonical_bytes(entry: CacheEntry) -> None:
    data = entry.encode()
    assert CacheEntry.decode(data, "test", entry.path) == entry
    assert data == CacheEntry(entry.path, entry.sha256, entry.size, entry.executable).encode()
    output = json.loads(data)["outputFiles"][0]
    assert output["digest"] == {"hash": entry.sha256, "sizeBytes": str(entry.size)}


@given(entries, paths)
def test_an_entry_is_refused_for_another_path(entry: CacheEntry, other: str) -> None:
    if other == entry.path:
        return
    with pytest.raises(CorruptEntryError, match="the entry is for"):
        CacheEntry.decode(entry.encode(), "test", other)


@given(st.binary(max_size=400))
def test_any_bytes_decode_to_an_entry_or_one_corrupt_entry_error(data: bytes) -> None:
    try:
        entry = CacheEntry.decode(data, "http://server/ac/key", "build/x")
    except CorruptEntryError as error:
        assert error.message.startswith("http://server/ac/key: ")
    else:
        assert entry.path == "build/x" and is_sha256(entry.sha256)


@given(st.text(max_size=100), st.text(max_size=100))
def test_ac_keys_are_sha256_of_the_domain_and_signature(first: str, second: str) -> None:
    key = ac_key(first)
    assert is_sha256(key) and key == ac_key(first)
    assert key == sha256_bytes(AC_KEY_DOMAIN + first.encode("utf-8"))
    assert (key == ac_key(second)) == (first == second)
    assert key != sha256_bytes(first.encode("utf-8"))  # never a bare hash another client might use


def test_paths_follow_the_bazel_layout_under_the_prefix() -> None:
    assert cas_path("", "ab" * 32) == f"/cas/{'ab' * 32}"
    assert ac_path("/team/x", "cd" * 32) == f"/team/x/ac/{'cd' * 32}"


@pytest.mark.parametrize(
    "digest",
    [
        {"hash": "A" * 64, "sizeBytes": "1"},
        {"hash": "a" * 63, "sizeBytes": "1"},
        {"hash": "a" * 64, "sizeBytes": "-1"},
        {"hash": "a" * 64, "sizeBytes": -1},
        {"hash": "a" * 64, "sizeBytes": True},
        {"hash": "a" * 64, "sizeBytes": "1.5"},
        {"hash": "a" * 64, "sizeBytes": "٣"},
        {"hash": "a" * 64, "sizeBytes": "1" * 20},
    ],
)
def test_a_digest_that_is_not_a_sha256_and_a_size_is_refused(digest: dict[str, object]) -> None:
    document = {"outputFiles": [{"path": "x", "digest": digest}]}
    with pytest.raises(CorruptEntryError, match="the digest is not a SHA-256 and a size in bytes"):
        CacheEntry.from_json(document, "test")


def test_an_entry_of_several_files_is_refused() -> None:
    output = CacheEntry("x", "a" * 64, 1).to_json()["outputFiles"][0]
    with pytest.raises(CorruptEntryError, match="not an ActionResult with one output file"):
        CacheEntry.from_json({"outputFiles": [output, output]}, "test")
