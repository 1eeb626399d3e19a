"""heliabuild.cache.http against a real nginx with WebDAV PUT (tests/helpers/nginx.py), on 127.0.0.1.

What a build relies on: a stored file comes back byte for byte, the server's disk holds the Bazel layout
(`/cas/<sha256>` of the content, `/ac/<key>` naming it), a corrupted entry is never written to the target,
and a server that fails (errors, slowness, gone) is one warning and no exception, after which the client
sends nothing more.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import socketserver
import stat
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers.nginx import Nginx, free_port, running_nginx
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from heliabuild.cache.http import CacheError, CacheURL, RemoteCache
from heliabuild.cache.layout import MAX_ENTRY_BYTES, CacheEntry, ac_key
from heliabuild.files import sha256_bytes

SIGNATURE = "0123456789abcdef" * 4
PATH = "build/model.tflite"
TIMED_OUT = r"( took longer than [0-9.]+ s|: timed out \(nothing for [0-9.]+ s\));"
"""A deadline passed: the request's (a server trickling bytes) or one read's (a server sending nothing)."""
CONTENT = bytes(range(256)) * 300


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Nginx]:
    with running_nginx(tmp_path / "server") as started:
        yield started


class Warnings(list[str]):
    """The warnings a client reported, in order."""


def client(url: str, **options: object) -> tuple[RemoteCache, Warnings]:
    warnings = Warnings()
    return RemoteCache(url, on_warning=warnings.append, **options), warnings  # type: ignore[arg-type]


def stored(tmp_path: Path, cache: RemoteCache, content: bytes = CONTENT, signature: str = SIGNATURE) -> Path:
    source = tmp_path / "built" / "model.tflite"
    source.parent.mkdir(parents=True, exist_ok=True)
    source.write_bytes(content)
    assert cache.store(signature, source, PATH)
    return source


def requests_logged(server: Nginx) -> int:
    """How many requests the server logged so far. nginx logs a request once it has answered it, a moment
    after the client read the answer: a last request of this test's own is waited for, and not counted."""
    sentinel = f"/sentinel-{time.monotonic_ns()}"
    with contextlib.suppress(urllib.error.HTTPError):
        urllib.request.urlopen(f"{server.url}{sentinel}", timeout=5).close()
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        lines = (server.folder / "access.log").read_text(encoding="utf-8").splitlines()
        if lines and sentinel in lines[-1]:
            return len(lines) - 1
        time.sleep(0.02)
    raise AssertionError(f"nginx did not log {sentinel}")


def test_a_stored_file_is_fetched_byte_for_byte_and_the_server_holds_the_bazel_layout(
    server: Nginx, tmp_path: Path
) -> None:
    cache, warnings = client(f"{server.url}/team/a")
    stored(tmp_path, cache)
    key = sha256_bytes(CONTENT)
    assert server.files("cas", "team/a") == {key: CONTENT}
    entry = CacheEntry(path=PATH, sha256=key, size=len(CONTENT))
    assert server.files("ac", "team/a") == {ac_key(SIGNATURE): entry.encode()}
    document = json.loads(entry.encode())
    assert document["outputFiles"][0]["digest"] == {"hash": key, "sizeBytes": str(len(CONTENT))}

    target = tmp_path / "checkout" / "build" / "model.tflite"
    assert cache.fetch(SIGNATURE, target, PATH)
    assert target.read_bytes() == CONTENT
    assert stat.S_IMODE(target.stat().st_mode) == 0o644
    assert warnings == []


def test_an_executable_comes_back_executable(server: Nginx, tmp_path: Path) -> None:
    cache, _ = client(server.url)
    source = stored(tmp_path, cache)
    source.chmod(0o755)
    assert cache.store(SIGNATURE, source, PATH)
    target = tmp_path / "fetched"
    assert cache.fetch(SIGNATURE, target, PATH)
    assert stat.S_IMODE(target.stat().st_mode) == 0o755


def test_an_unknown_signature_is_a_miss_that_writes_nothing(server: Nginx, tmp_path: Path) -> None:
    cache, warnings = client(server.url)
    target = tmp_path / "target"
    assert not cache.fetch(SIGNATURE, target, PATH)
    assert not target.exists() and warnings == [] and cache.available


def test_content_not_matching_its_key_is_ignored_with_one_warning_and_the_target_left_alone(
    server: Nginx, tmp_path: Path
) -> None:
    cache, warnings = client(server.url)
    stored(tmp_path, cache)
    blob = server.root / "cas" / sha256_bytes(CONTENT)
    tampered = bytearray(CONTENT)
    tampered[1000] ^= 0xFF
    blob.write_bytes(bytes(tampered))
    target = tmp_path / "target"
    target.write_bytes(b"the user's earlier file")
    for _ in range(2):
        assert not cache.fetch(SIGNATURE, target, PATH)
    assert target.read_bytes() == b"the user's earlier file"
    assert sorted(path.name for path in tmp_path.iterdir()) == ["built", "server", "target"]  # no temporary file
    assert len(warnings) == 1, warnings
    assert f"remote cache: {PATH}: {server.url}/cas/{sha256_bytes(CONTENT)} holds {len(CONTENT)} bytes" in warnings[0]
    assert f"SHA-256 {sha256_bytes(bytes(tampered))}: not the content its key names" in warnings[0]
    assert cache.available  # one bad entry does not turn the server off

    stored(tmp_path, cache)  # storing the good file again repairs the entry
    assert cache.fetch(SIGNATURE, target, PATH) and target.read_bytes() == CONTENT


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        (lambda data: data[:-1], f"is {len(CONTENT) - 1} bytes, not the {len(CONTENT)} its entry names"),
        (lambda data: data + b"x", f"is {len(CONTENT) + 1} bytes, not the {len(CONTENT)} its entry names"),
        (lambda data: b"", f"is 0 bytes, not the {len(CONTENT)} its entry names"),
    ],
    ids=["cut-short", "longer", "empty"],
)
def test_content_of_another_size_is_ignored(server: Nginx, tmp_path: Path, change, problem: str) -> None:
    cache, warnings = client(server.url)
    stored(tmp_path, cache)
    blob = server.root / "cas" / sha256_bytes(CONTENT)
    blob.write_bytes(change(CONTENT))
    assert not cache.fetch(SIGNATURE, tmp_path / "target", PATH)
    assert not (tmp_path / "target").exists()
    assert len(warnings) == 1 and problem in warnings[0], warnings


@pytest.mark.parametrize(
    ("entry", "problem"),
    [
        (b"garbage", "the cache entry is not valid JSON"),
        (b"{}", "not an ActionResult with one output file"),
        (b'{"outputFiles": []}', "not an ActionResult with one output file"),
        (
            CacheEntry(path="build/other.tflite", sha256="0" * 64, size=1).encode(),
            "the entry is for 'build/other.tflite', not 'build/model.tflite'",
        ),
        (
            json.dumps({"outputFiles": [{"path": PATH, "digest": {"hash": "XYZ", "sizeBytes": "1"}}]}).encode(),
            "the digest is not a SHA-256 and a size in bytes",
        ),
        (b" " * (MAX_ENTRY_BYTES + 1), f"more than the {MAX_ENTRY_BYTES} bytes of an entry"),
    ],
    ids=["not-json", "empty-object", "no-output", "other-path", "bad-digest", "too-large"],
)
def test_an_entry_that_is_not_one_file_at_the_targets_path_is_ignored(
    server: Nginx, tmp_path: Path, entry: bytes, problem: str
) -> None:
    cache, warnings = client(server.url)
    (server.root / "ac").mkdir()
    (server.root / "ac" / ac_key(SIGNATURE)).write_bytes(entry)
    assert not cache.fetch(SIGNATURE, tmp_path / "target", PATH)
    assert not (tmp_path / "target").exists()
    assert len(warnings) == 1 and problem in warnings[0], warnings
    assert cache.available


def test_an_entry_in_bazel_remotes_json_form_is_read(server: Nginx, tmp_path: Path) -> None:
    """bazel-remote answers `Accept: application/json` with protojson: sizeBytes may be a number, a false
    isExecutable is left out, and fields heliabuild does not use may be there."""
    cache, warnings = client(server.url)
    stored(tmp_path, cache)
    digest = {"hash": sha256_bytes(CONTENT), "sizeBytes": len(CONTENT)}
    document = {"outputFiles": [{"path": PATH, "digest": digest}], "exitCode": 0, "executionMetadata": {}}
    (server.root / "ac" / ac_key(SIGNATURE)).write_text(json.dumps(document), encoding="utf-8")
    assert cache.fetch(SIGNATURE, tmp_path / "target", PATH)
    assert (tmp_path / "target").read_bytes() == CONTENT and warnings == []


def assert_turned_off_with_one_warning(
    cache: RemoteCache, warnings: Warnings, tmp_path: Path, reason: str, calls: int = 4
) -> None:
    """Several fetches and stores fail quietly after the first, which warned once naming `reason`."""
    source = tmp_path / "source"
    source.write_bytes(CONTENT)
    for index in range(calls):
        assert not cache.fetch(f"{SIGNATURE}{index}", tmp_path / "target", PATH)
        assert not cache.store(f"{SIGNATURE}{index}", source, PATH)
    assert not (tmp_path / "target").exists()
    assert not cache.available
    assert len(warnings) == 1, warnings
    assert warnings[0].startswith(f"remote cache {cache.url.shown}: ")
    assert reason in warnings[0], warnings
    assert warnings[0].endswith("the build goes on without it (nothing more is fetched from it or stored in it)")


def test_a_server_answering_errors_is_one_warning_and_then_no_request(server: Nginx, tmp_path: Path) -> None:
    cache, warnings = client(f"{server.url}/failing")
    assert_turned_off_with_one_warning(
        cache, warnings, tmp_path, f"GET /failing/ac/{ac_key(SIGNATURE + '0')} answered 500"
    )
    assert requests_logged(server) == 1


def test_a_server_refusing_puts_is_one_warning(server: Nginx, tmp_path: Path) -> None:
    """A plain HTTP server without WebDAV answers PUT with 405; here, /failing/ answers it with 500."""
    cache, warnings = client(f"{server.url}/failing")
    source = tmp_path / "source"
    source.write_bytes(CONTENT)
    assert not cache.store(SIGNATURE, source, PATH)
    assert len(warnings) == 1 and f"PUT /failing/cas/{sha256_bytes(CONTENT)} answered 500" in warnings[0]


def test_a_slow_server_is_cut_off_at_the_deadline(server: Nginx, tmp_path: Path) -> None:
    cache, warnings = client(f"{server.url}/slow", timeout=0.5)
    started = time.monotonic()
    assert_turned_off_with_one_warning(cache, warnings, tmp_path, f"GET /slow/ac/{ac_key(SIGNATURE + '0')}")
    assert re.search(TIMED_OUT, warnings[0]), warnings
    assert time.monotonic() - started < 5


def test_an_unreachable_server_is_one_warning(tmp_path: Path) -> None:
    cache, warnings = client(f"http://127.0.0.1:{free_port()}/cache")
    assert_turned_off_with_one_warning(cache, warnings, tmp_path, "Connection refused")


def test_a_server_killed_between_requests_is_one_warning(server: Nginx, tmp_path: Path) -> None:
    """The client keeps its connection open between requests; a server gone meanwhile is noticed once."""
    cache, warnings = client(server.url)
    stored(tmp_path, cache)
    server.stop()
    assert_turned_off_with_one_warning(cache, warnings, tmp_path, "Connection refused")


def test_a_kept_alive_connection_the_server_closed_while_idle_is_reopened(server: Nginx, tmp_path: Path) -> None:
    """A long stage leaves the connection idle past the server's keep-alive timeout: that is no failure."""
    cache, warnings = client(f"{server.url}/brief")
    stored(tmp_path, cache)
    time.sleep(1.5)
    assert cache.fetch(SIGNATURE, tmp_path / "target", PATH)
    time.sleep(1.5)
    assert cache.store(SIGNATURE, tmp_path / "target", PATH)
    assert warnings == [] and cache.available


def test_a_file_larger_than_the_cap_is_neither_stored_nor_fetched(server: Nginx, tmp_path: Path) -> None:
    cache, warnings = client(server.url, max_bytes=len(CONTENT) - 1)
    source = tmp_path / "source"
    source.write_bytes(CONTENT)
    assert not cache.store(SIGNATURE, source, PATH)
    assert requests_logged(server) == 0
    big, _ = client(server.url)
    stored(tmp_path, big)
    assert not cache.fetch(SIGNATURE, tmp_path / "target", PATH)
    assert not (tmp_path / "target").exists() and warnings == [] and cache.available


def test_a_folder_or_missing_file_is_not_stored(server: Nginx, tmp_path: Path) -> None:
    cache, warnings = client(server.url)
    assert not cache.store(SIGNATURE, tmp_path, PATH)
    assert not cache.store(SIGNATURE, tmp_path / "missing", PATH)
    assert requests_logged(server) == 0 and warnings == []


def test_credentials_in_the_url_are_sent_but_never_shown(tmp_path: Path) -> None:
    cache, warnings = client(f"http://user:s3cret@127.0.0.1:{free_port()}/cache")
    assert cache.url.authorization == "Basic dXNlcjpzM2NyZXQ="
    assert cache.url.shown.startswith("http://127.0.0.1:")
    assert not cache.fetch(SIGNATURE, tmp_path / "target", PATH)
    assert len(warnings) == 1 and "s3cret" not in warnings[0] and "user" not in warnings[0]


@pytest.mark.parametrize(
    ("url", "problem"),
    [
        ("ftp://host/cache", "is not an http:// or https:// URL with a host"),
        ("host:8080/cache", "is not an http:// or https:// URL with a host"),
        ("http:///cache", "is not an http:// or https:// URL with a host"),
        ("http://host:99999/cache", "is not a URL: Port out of range"),
        ("http://host/cache?x=1", "has a query or fragment"),
        ("http://user:s3cret@host/cache#x", "'http://host/cache#x' has a query or fragment"),
        ("http://host/my cache", "'http://host/my cache' holds a space or control character"),
        ("http://ho\x7fst/cache", "holds a space or control character"),
    ],
)
def test_a_url_that_is_no_cache_url_is_one_error_naming_its_source(url: str, problem: str) -> None:
    with pytest.raises(CacheError) as raised:
        RemoteCache(url, on_warning=Warnings().append, source="--helia-cache-url")
    assert raised.value.message.startswith("--helia-cache-url: ")
    assert problem in raised.value.message and "s3cret" not in raised.value.message


def test_a_timeout_that_is_not_positive_is_refused() -> None:
    with pytest.raises(CacheError, match="the timeout must be a positive number of seconds"):
        RemoteCache("http://host/cache", on_warning=Warnings().append, timeout=0)


@pytest.mark.parametrize(
    ("url", "prefix", "shown"),
    [
        ("http://host", "", "http://host"),
        ("http://host:8080/", "", "http://host:8080"),
        ("https://host/a/b/", "/a/b", "https://host/a/b"),
        ("http://[::1]:9090/c", "/c", "http://[::1]:9090/c"),
    ],
)
def test_urls_are_taken_apart(url: str, prefix: str, shown: str) -> None:
    parsed = CacheURL.parse(url, "test")
    assert (parsed.prefix, parsed.shown, parsed.authorization) == (prefix, shown, None)


def test_no_temporary_file_is_left_by_a_fetch_cut_off_midway(server: Nginx, tmp_path: Path) -> None:
    """The content is written through a temporary file in the target's folder: a fetch cut off by its
    deadline leaves neither a partial target nor the temporary file."""
    filling, _ = client(f"{server.url}/trickle")
    stored(tmp_path, filling)
    cache, warnings = client(f"{server.url}/trickle", timeout=0.3)
    folder = tmp_path / "checkout"
    folder.mkdir()
    assert not cache.fetch(SIGNATURE, folder / "model.tflite", PATH)
    assert os.listdir(folder) == []
    assert len(warnings) == 1, warnings
    assert re.search(f"GET /trickle/cas/{sha256_bytes(CONTENT)}{TIMED_OUT}", warnings[0]), warnings


class HostileServer(socketserver.ThreadingTCPServer):
    """A server on 127.0.0.1 that answers every request with `answer`, whatever bytes they are, then closes."""

    daemon_threads = True
    answer = b""


class _Answer(socketserver.BaseRequestHandler):
    def handle(self) -> None:
        self.request.settimeout(2)
        with contextlib.suppress(OSError):
            received = b""
            while b"\r\n\r\n" not in received:
                chunk = self.request.recv(4096)
                if not chunk:
                    return
                received += chunk
            self.request.sendall(self.server.answer)  # type: ignore[attr-defined]


@pytest.fixture(scope="module")
def hostile() -> Iterator[HostileServer]:
    with HostileServer(("127.0.0.1", 0), _Answer) as started:
        thread = threading.Thread(target=started.serve_forever, daemon=True)
        thread.start()
        yield started
        started.shutdown()


ENTRY = CacheEntry(path=PATH, sha256=sha256_bytes(CONTENT), size=len(CONTENT)).encode()
answers = st.one_of(
    st.binary(max_size=300),
    st.builds(
        lambda status, headers, body: b"HTTP/1.1 " + status + b"\r\n" + headers + b"\r\n" + body,
        st.sampled_from([b"200 OK", b"404 Not Found", b"500 Oops", b"301 Moved", b"200", b"999 X", b"abc"]),
        st.sampled_from([b"", b"Content-Length: 5\r\n", b"Content-Length: -1\r\n", b"Transfer-Encoding: chunked\r\n"]),
        st.one_of(st.binary(max_size=200), st.just(ENTRY), st.just(CONTENT[:100])),
    ),
)


@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(answer=answers)
def test_whatever_a_server_answers_a_fetch_never_raises_nor_writes_unverified_content(
    hostile: HostileServer, tmp_path: Path, answer: bytes
) -> None:
    """A server that answers anything at all (garbage, a wrong status, a lying length, another entry) makes
    a fetch a miss, at most one warning, and leaves the target as it was."""
    hostile.answer = answer
    cache, warnings = client(f"http://127.0.0.1:{hostile.server_address[1]}", timeout=1)
    target = tmp_path / "target"
    target.write_bytes(b"before")
    assert not cache.fetch(SIGNATURE, target, PATH)
    assert target.read_bytes() == b"before"
    assert set(os.listdir(tmp_path)) <= {"target", "source"}  # no temporary file left
    assert len(warnings) <= 1
    source = tmp_path / "source"
    source.write_bytes(CONTENT)
    cache.store(SIGNATURE, source, PATH)  # never raises either
    assert len(warnings) <= 1
