"""`show` and `export` on hostile bundles: every one is refused with one line and exit 2, promptly (no read
of a FIFO or a device, no read past a bound), and nothing is written."""

from __future__ import annotations

import json
import os
import shutil
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers.checks import assert_one_line_error
from helpers.trees import snapshot
from test_results_bundle import make_bundle

from heliabuild.files import json_text, sha256_file
from heliabuild.results.reader import MAX_FILE_BYTES, load_result

SAMPLE = "artifacts/samples/0/Identity_0.bin"


@pytest.fixture(autouse=True)
def deadline() -> Iterator[None]:
    """A command that blocks (on a FIFO) or reads forever (from /dev/zero) fails the test instead of hanging."""

    def expire(_signum: int, _frame: object) -> None:
        raise TimeoutError("the command did not return within 60 s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.alarm(60)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, previous)


@pytest.fixture
def bundle(tmp_path: Path) -> Path:
    target = tmp_path / "bundle"
    make_bundle(target)
    return target


def rehash(bundle: Path) -> None:
    """Rewrite the manifest over the regular files now in the bundle, so only the other checks can refuse it."""
    files = sorted(p for p in bundle.rglob("*") if p.is_file() and not p.is_symlink() and p.name != "manifest.json")
    manifest = {"files": {p.relative_to(bundle).as_posix(): sha256_file(p) for p in files}}
    (bundle / "manifest.json").write_text(json_text(manifest))


def refused_by_show_and_export(cli, bundle: Path, *fragments: str) -> None:
    root = bundle.parent
    before = snapshot(root)
    for argv in (("show", bundle, "--plot", root / "p.svg"), ("export", bundle, "--fields", "samples")):
        assert_one_line_error(cli(*argv), *fragments)
        assert snapshot(root) == before


@pytest.mark.parametrize("relative", ["result.json", "manifest.json", SAMPLE])
def test_a_symlink_to_dev_zero_is_refused(cli, bundle: Path, relative: str) -> None:
    (bundle / relative).unlink()
    (bundle / relative).symlink_to("/dev/zero")
    refused_by_show_and_export(cli, bundle, f"{bundle / relative}: a symlink inside the result bundle")


@pytest.mark.parametrize("relative", ["result.json", "run_summary.csv", SAMPLE])
def test_a_fifo_is_refused_without_blocking(cli, bundle: Path, relative: str) -> None:
    (bundle / relative).unlink()
    os.mkfifo(bundle / relative)
    refused_by_show_and_export(cli, bundle, f"{bundle / relative}: not a regular file")


def test_a_symlink_to_a_regular_file_is_refused(cli, bundle: Path, tmp_path: Path) -> None:
    shutil.copy(bundle / "run_summary.csv", tmp_path / "summary.csv")
    (bundle / "run_summary.csv").unlink()
    (bundle / "run_summary.csv").symlink_to(tmp_path / "summary.csv")
    refused_by_show_and_export(cli, bundle, "run_summary.csv: a symlink inside the result bundle")


def test_a_symlinked_folder_is_refused_and_not_walked(cli, bundle: Path, tmp_path: Path) -> None:
    shutil.move(bundle / "artifacts" / "samples", tmp_path / "elsewhere")
    (bundle / "artifacts" / "samples").symlink_to(tmp_path / "elsewhere", target_is_directory=True)
    refused_by_show_and_export(cli, bundle, "artifacts/samples: a symlink inside the result bundle")


def test_a_file_larger_than_the_bound_is_refused_unread(cli, bundle: Path) -> None:
    with open(bundle / "artifacts" / "big.bin", "wb") as handle:
        handle.truncate(MAX_FILE_BYTES + 1)  # sparse: costs no disk, but would cost memory to read
    refused_by_show_and_export(cli, bundle, "big.bin")


def test_deeply_nested_json_is_one_error(cli, bundle: Path) -> None:
    (bundle / "result.json").write_bytes(b"[" * 100_000 + b"]" * 100_000)
    rehash(bundle)
    refused_by_show_and_export(cli, bundle, "result.json: the bundle file nests deeper than")


def test_a_deeply_nested_extra_json_file_is_no_receipt_and_no_crash(bundle: Path) -> None:
    (bundle / "artifacts" / "extra.json").write_bytes(b"{" + b'"a":{' * 50_000 + b"}" * 50_001)
    rehash(bundle)
    assert load_result(bundle).receipt is not None  # searched for receipts without a RecursionError


def test_non_utf8_json_is_one_error(cli, bundle: Path) -> None:
    (bundle / "result.json").write_bytes(b'{"schema_version": 4, "x": "\xff"}')
    rehash(bundle)
    refused_by_show_and_export(cli, bundle, "result.json: the bundle file is not UTF-8 text: byte 0xff at offset")


def test_a_tampered_file_is_refused(cli, bundle: Path) -> None:
    path = bundle / SAMPLE
    path.write_bytes(path.read_bytes() + b"\0")
    refused_by_show_and_export(cli, bundle, f"{SAMPLE}: sha256", "the bundle was modified after it was written")


# --- authenticity: only with HELIA_BUNDLE_KEY --------------------------------------------------------------


def edit_and_rehash(bundle: Path) -> None:
    """An edit every integrity check accepts once the manifest is re-hashed: another creation time."""
    path = bundle / "result.json"
    document = json.loads(path.read_text(encoding="utf-8"))
    document["created_at"] = "2000-01-01T00:00:00Z"
    path.write_text(json_text(document), encoding="utf-8")
    rehash(bundle)


def test_without_a_key_an_edited_and_rehashed_bundle_is_accepted(bundle: Path, monkeypatch) -> None:
    monkeypatch.delenv("HELIA_BUNDLE_KEY", raising=False)
    edit_and_rehash(bundle)
    assert load_result(bundle).document["created_at"] == "2000-01-01T00:00:00Z"  # integrity, not authenticity


def test_with_a_key_a_signed_bundle_is_read(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("HELIA_BUNDLE_KEY", "secret")
    make_bundle(tmp_path / "signed")
    signature = json.loads((tmp_path / "signed" / "signature.json").read_text(encoding="utf-8"))
    assert signature["algorithm"] == "hmac-sha256" and signature["signed"] == "manifest.json"
    assert load_result(tmp_path / "signed").samples
    make_bundle(tmp_path / "signed", count=1, warmups=0)  # replaces the earlier signed bundle whole
    assert len(load_result(tmp_path / "signed").samples) == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["signed", "signed.previous"]
    assert len(load_result(tmp_path / "signed.previous").samples) == 3  # kept whole, signature and all


def test_with_a_key_an_edited_and_rehashed_bundle_is_refused(cli, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("HELIA_BUNDLE_KEY", "secret")
    make_bundle(tmp_path / "signed")
    edit_and_rehash(tmp_path / "signed")
    refused_by_show_and_export(cli, tmp_path / "signed", "signature.json: the HMAC of manifest.json", "does not match")


def test_with_a_key_an_unsigned_or_otherwise_signed_bundle_is_refused(cli, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.delenv("HELIA_BUNDLE_KEY", raising=False)
    make_bundle(tmp_path / "unsigned")
    monkeypatch.setenv("HELIA_BUNDLE_KEY", "other")
    make_bundle(tmp_path / "other")
    monkeypatch.setenv("HELIA_BUNDLE_KEY", "secret")
    refused_by_show_and_export(cli, tmp_path / "unsigned", "signature.json: missing, and HELIA_BUNDLE_KEY is set")
    refused_by_show_and_export(cli, tmp_path / "other", "signature.json: the HMAC", "does not match")
