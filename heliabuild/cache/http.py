"""A client of a remote build cache over HTTP: store and fetch built files by content key, PUT and GET.

The server follows the layout of Bazel's HTTP remote cache (heliabuild.cache.layout): bazel-remote, or any
WebDAV server that takes PUT (nginx's `dav_methods PUT`). Contract of `RemoteCache`:

- `fetch(signature, target, path)` GETs the target's `/ac` entry and then the content it names from `/cas`,
  checks the content against its key (SHA-256 and size) while writing it, and replaces `target` atomically
  (heliabuild.files.write_atomic) only when it matches. It returns whether the file was fetched: a missing
  entry (404) is a miss; a corrupted entry (content not matching its key, or an `/ac` entry that is not
  one file at `path`) is reported through `on_warning`, once per entry, and is a miss too, so the caller
  builds the file itself.
- `store(signature, source, path)` PUTs the file's content to `/cas/<sha256>` and then its `/ac` entry, in
  that order, so an entry never names content the server was not given.
- Every read is bounded (`MAX_ENTRY_BYTES` for an entry, the entry's size, at most `max_bytes`, for
  content) and every request has a deadline: `timeout` seconds to connect and to wait on each read, and
  `timeout` plus one second per MiB of body for the whole exchange (a server that trickles bytes is cut
  off too).
- The first failure of the server (it cannot be reached, a request runs past its deadline, or it answers
  what the request does not expect: for a GET anything but 200 or 404, a miss; for a PUT anything but 200,
  201 or 204) turns the client off for the rest of its life: it is reported through
  `on_warning` once, and every later call returns False at once without a request. Nothing the server does
  makes a call raise; a file that cannot be written here (a local disk problem) is a miss, for the build to
  meet and report.

The client is safe to share between threads (SCons's `-j`): each thread keeps its own keep-alive
connection. No dependency: the standard library's http.client.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import http.client
import os
import re
import socket
import stat
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO
from urllib.parse import unquote, urlsplit

from heliabuild.cache.layout import (
    CONTENT_TYPE,
    MAX_ENTRY_BYTES,
    CacheEntry,
    CorruptEntryError,
    ac_key,
    ac_path,
    cas_path,
)
from heliabuild.errors import HeliaError
from heliabuild.files import sha256_file, write_atomic

DEFAULT_TIMEOUT = 5.0
"""Seconds to connect and to wait on each read, and the base of each request's deadline."""

MAX_BLOB_BYTES = 256 << 20
"""The largest file stored or fetched (256 MiB); a larger one is built locally, never sent."""

SECONDS_PER_MIB = 1.0
"""Each request's deadline grows by this per MiB of its body: the slowest transfer accepted is 1 MiB/s."""

_CHUNK = 1 << 20
_OK = (200, 201, 204)
_UNSAFE = re.compile("[\x00-\x20\x7f]")
"""Characters a URL cannot carry as they are (http.client refuses them in a request line)."""
_RETRIED = (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError, ConnectionAbortedError)
"""Failures of a reused keep-alive connection that the server may have closed meanwhile: retried once."""


class CacheError(HeliaError):
    """A remote cache configured wrongly (a URL that is not http(s)://host[:port][/prefix], a timeout that is
    not a positive number of seconds); a server's failure is never one (see RemoteCache)."""


@dataclass(frozen=True)
class CacheURL:
    """A cache server's URL, `http[s]://[user:password@]host[:port][/prefix]`, taken apart."""

    scheme: str
    host: str
    port: int | None
    prefix: str
    """The URL path the layout's paths go under: '' or '/a/b' (no trailing slash)."""
    authorization: str | None
    """The Basic `Authorization` header of the URL's user and password, if it has them."""

    @classmethod
    def parse(cls, text: str, source: str) -> CacheURL:
        """The URL `text`, given by `source` (e.g. the option's name); CacheError naming `source` if it is
        not an http or https URL with a host and without a query or fragment."""
        try:
            parts = urlsplit(text)
            port = parts.port
        except ValueError as failure:
            raise CacheError(f"{source}: {redacted(text)!r} is not a URL: {failure}") from None
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise CacheError(
                f"{source}: {redacted(text)!r} is not an http:// or https:// URL with a host",
                hint="give http://host:port/prefix",
            )
        if parts.query or parts.fragment:
            raise CacheError(f"{source}: {redacted(text)!r} has a query or fragment; a cache URL has neither")
        if _UNSAFE.search(parts.netloc + parts.path):
            raise CacheError(
                f"{source}: {redacted(text)!r} holds a space or control character", hint="percent-encode it (%20)"
            )
        authorization = None
        if parts.username is not None:
            credentials = f"{unquote(parts.username)}:{unquote(parts.password or '')}".encode()
            authorization = "Basic " + base64.b64encode(credentials).decode("ascii")
        return cls(parts.scheme, parts.hostname, port, parts.path.rstrip("/"), authorization)

    @property
    def shown(self) -> str:
        """The URL as messages show it: never the user or password."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        port = f":{self.port}" if self.port is not None else ""
        return f"{self.scheme}://{host}{port}{self.prefix}"


def redacted(url: str) -> str:
    """`url` with any `user:password@` left out, for messages."""
    scheme, separator, rest = url.partition("://")
    if not separator:
        return url
    authority, slash, path = rest.partition("/")
    return f"{scheme}://{authority.rpartition('@')[2]}{slash}{path}"


class _ServerFailure(Exception):
    """The server could not be reached, ran past a deadline, or answered something unusable."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class _Watchdog:
    """Shuts a connection's socket when a request runs past its deadline, which ends any blocking read."""

    def __init__(self, connection: http.client.HTTPConnection, seconds: float) -> None:
        self.seconds = seconds
        self.fired = False
        self._timer = threading.Timer(seconds, self._fire, (connection,))
        self._timer.daemon = True
        self._timer.start()

    def _fire(self, connection: http.client.HTTPConnection) -> None:
        self.fired = True
        if connection.sock is not None:
            with contextlib.suppress(OSError):
                connection.sock.shutdown(socket.SHUT_RDWR)

    def cancel(self) -> None:
        self._timer.cancel()


class RemoteCache:
    """The client of one cache server (module docstring)."""

    def __init__(
        self,
        url: str,
        *,
        on_warning: Callable[[str], None],
        timeout: float = DEFAULT_TIMEOUT,
        max_bytes: int = MAX_BLOB_BYTES,
        source: str = "the remote cache URL",
    ) -> None:
        """A client of the server at `url` (CacheError naming `source` when it is not a cache URL); nothing
        is sent until the first fetch or store."""
        if not timeout > 0:
            raise CacheError(f"{source}: the timeout must be a positive number of seconds, not {timeout!r}")
        self.url = CacheURL.parse(url, source)
        self.timeout = timeout
        self.max_bytes = max_bytes
        self._on_warning = on_warning
        self._available = True
        self._lock = threading.Lock()
        self._warned: set[str] = set()
        self._local = threading.local()

    @property
    def available(self) -> bool:
        """False once the server failed (module docstring): no request is sent any more."""
        return self._available

    def fetch(self, signature: str, target: Path, path: str) -> bool:
        """Fetch the file of the target whose SCons cache signature is `signature` (SCons's `path` of it)
        into `target`; whether it was (module docstring)."""
        if not self._available:
            return False
        entry_path = ac_path(self.url.prefix, ac_key(signature))
        try:
            data = self._get_entry(entry_path)
            if data is None:
                return False
            entry = CacheEntry.decode(data, self._where(entry_path), path)
            if entry.size > self.max_bytes:
                return False
            return self._get_content(entry, target)
        except CorruptEntryError as corrupt:
            self._warn_once(
                entry_path, f"remote cache: {path}: {corrupt.message}; the entry is ignored and the file built here"
            )
        except _ServerFailure as failure:
            self._fail(failure)
        except OSError:
            pass  # the file cannot be written here: the build itself meets that and reports it
        return False

    def store(self, signature: str, source: Path, path: str) -> bool:
        """Store the regular file `source`, SCons's `path` of the target whose cache signature is
        `signature`: its content, then its entry; whether both were stored (module docstring). A file
        larger than `max_bytes` is not sent."""
        if not self._available:
            return False
        try:
            status = source.stat()
            if not stat.S_ISREG(status.st_mode) or status.st_size > self.max_bytes:
                return False
            entry = CacheEntry(
                path=path,
                sha256=sha256_file(source),
                size=status.st_size,
                executable=bool(status.st_mode & stat.S_IXUSR),
            )
            with open(source, "rb") as content:
                self._put(cas_path(self.url.prefix, entry.sha256), content, entry.size, "application/octet-stream")
        except OSError:
            return False
        except _ServerFailure as failure:
            self._fail(failure)
            return False
        try:
            encoded = entry.encode()
            self._put(ac_path(self.url.prefix, ac_key(signature)), encoded, len(encoded), CONTENT_TYPE)
        except _ServerFailure as failure:
            self._fail(failure)
            return False
        return True

    def close(self) -> None:
        """Close this thread's connection (others close when their thread ends)."""
        connection = getattr(self._local, "connection", None)
        if connection is not None:
            connection.close()
            self._local.connection = None

    # --- requests -----------------------------------------------------------------------------------------

    def _get_entry(self, url_path: str) -> bytes | None:
        """The bytes of the `/ac` entry at `url_path`, or None when the server has none (404)."""
        with self._exchange("GET", url_path, headers={"Accept": CONTENT_TYPE}) as response:
            if response.status == 404:
                self._discard(response, "GET", url_path)
                return None
            self._expect(response, "GET", url_path, (200,))
            data = b"".join(self._body(response, "GET", url_path, MAX_ENTRY_BYTES + 1))
        if len(data) > MAX_ENTRY_BYTES:
            raise CorruptEntryError(f"{self._where(url_path)}: more than the {MAX_ENTRY_BYTES} bytes of an entry")
        return data

    def _get_content(self, entry: CacheEntry, target: Path) -> bool:
        """Fetch the content `entry` names into `target`, checked against its key; False when the server has
        none (404: evicted); CorruptEntryError when it is not that content."""
        url_path = cas_path(self.url.prefix, entry.sha256)
        with self._exchange("GET", url_path, size=entry.size) as response:
            if response.status == 404:
                self._discard(response, "GET", url_path)
                return False
            self._expect(response, "GET", url_path, (200,))
            length = response.getheader("Content-Length")
            if length is not None and length.strip() != str(entry.size):
                raise CorruptEntryError(
                    f"{self._where(url_path)} is {length.strip()} bytes, not the {entry.size} its entry names"
                )
            write_atomic(target, self._verified(response, url_path, entry))
        if entry.executable:
            os.chmod(target, 0o755)
        return True

    def _verified(self, response: http.client.HTTPResponse, url_path: str, entry: CacheEntry) -> Iterator[bytes]:
        """The chunks of the content in `response`; at its end, CorruptEntryError unless they are exactly
        `entry.size` bytes whose SHA-256 is the key (write_atomic then leaves nothing behind)."""
        digest = hashlib.sha256()
        size = 0
        for chunk in self._body(response, "GET", url_path, entry.size + 1):
            digest.update(chunk)
            size += len(chunk)
            yield chunk
        if size != entry.size or digest.hexdigest() != entry.sha256:
            shown = f"more than {entry.size}" if size > entry.size else str(size)
            raise CorruptEntryError(
                f"{self._where(url_path)} holds {shown} bytes with SHA-256 {digest.hexdigest()}: not the content "
                "its key names"
            )

    def _put(self, url_path: str, body: bytes | BinaryIO, size: int, content_type: str) -> None:
        headers = {"Content-Type": content_type, "Content-Length": str(size)}
        with self._exchange("PUT", url_path, body=body, size=size, headers=headers) as response:
            self._discard(response, "PUT", url_path)
            self._expect(response, "PUT", url_path, _OK)

    @contextlib.contextmanager
    def _exchange(
        self,
        method: str,
        url_path: str,
        *,
        body: bytes | BinaryIO | None = None,
        size: int = 0,
        headers: dict[str, str] | None = None,
    ) -> Iterator[http.client.HTTPResponse]:
        """Send one request and yield its response, all within the request's deadline (module docstring);
        network errors become _ServerFailure, and so does any failure once the deadline passed. An error of
        the caller's block (writing the file here) passes through. A response not read to its end closes
        the connection."""
        seconds = self.timeout + SECONDS_PER_MIB * size / (1 << 20)
        sent = {"User-Agent": "heliabuild", **(headers or {})}
        if self.url.authorization is not None:
            sent["Authorization"] = self.url.authorization
        for attempt in (1, 2):
            connection, reused = self._connection()
            watchdog = _Watchdog(connection, seconds)
            try:
                try:
                    if attempt == 2 and body is not None and not isinstance(body, bytes):
                        body.seek(0)
                    connection.request(method, url_path, body=body, headers=sent)
                    response = connection.getresponse()
                except (OSError, http.client.HTTPException) as failure:
                    self.close()
                    if isinstance(failure, _RETRIED) and reused and attempt == 1 and not watchdog.fired:
                        continue
                    raise self._failure(method, url_path, failure, watchdog) from None
                try:
                    yield response
                except (_ServerFailure, CorruptEntryError) as failure:
                    # a body cut off by the watchdog may look short (an answer without a length): a timeout
                    self.close()
                    if isinstance(failure, CorruptEntryError) and not watchdog.fired:
                        raise
                    raise self._failure(method, url_path, failure, watchdog) from None
                except BaseException:
                    self.close()
                    raise
                if not response.isclosed():
                    self.close()
                return
            finally:
                watchdog.cancel()

    def _connection(self) -> tuple[http.client.HTTPConnection, bool]:
        """This thread's connection to the server, and whether it served a request before."""
        connection = getattr(self._local, "connection", None)
        if connection is not None:
            return connection, True
        if self.url.scheme == "https":
            import ssl

            connection = http.client.HTTPSConnection(
                self.url.host,
                self.url.port,
                timeout=self.timeout,
                blocksize=_CHUNK,
                context=ssl.create_default_context(),
            )
        else:
            connection = http.client.HTTPConnection(
                self.url.host, self.url.port, timeout=self.timeout, blocksize=_CHUNK
            )
        self._local.connection = connection
        return connection, False

    def _body(self, response: http.client.HTTPResponse, method: str, url_path: str, limit: int) -> Iterator[bytes]:
        """The chunks of `response`'s body, at most `limit` bytes; network errors become _ServerFailure."""
        remaining = limit
        while remaining > 0:
            try:
                chunk = response.read(min(_CHUNK, remaining))
            except (OSError, http.client.HTTPException) as failure:
                raise _ServerFailure(f"{method} {url_path}: {self._describe(failure)}") from None
            if not chunk:
                return
            remaining -= len(chunk)
            yield chunk

    def _discard(self, response: http.client.HTTPResponse, method: str, url_path: str) -> None:
        """Read and drop a short answer's body (an error page), so the connection can serve the next request."""
        for _ in self._body(response, method, url_path, MAX_ENTRY_BYTES):
            pass

    def _expect(
        self, response: http.client.HTTPResponse, method: str, url_path: str, statuses: tuple[int, ...]
    ) -> None:
        if response.status not in statuses:
            raise _ServerFailure(f"{method} {url_path} answered {response.status} {response.reason}")

    def _failure(self, method: str, url_path: str, failure: BaseException, watchdog: _Watchdog) -> _ServerFailure:
        if watchdog.fired:
            return _ServerFailure(f"{method} {url_path} took longer than {watchdog.seconds:g} s")
        if isinstance(failure, _ServerFailure):
            return failure
        return _ServerFailure(f"{method} {url_path}: {self._describe(failure)}")

    def _describe(self, failure: BaseException) -> str:
        """A network error in a few words: `timed out (nothing for 5 s)`, `[Errno 111] Connection refused`."""
        if isinstance(failure, TimeoutError):
            return f"timed out (nothing for {self.timeout:g} s)"
        text = str(failure)
        return text if text else type(failure).__name__

    def _where(self, url_path: str) -> str:
        """The URL of `url_path` on this server, as messages show it."""
        return f"{self.url.shown.removesuffix(self.url.prefix)}{url_path}"

    # --- reporting ----------------------------------------------------------------------------------------

    def _fail(self, failure: _ServerFailure) -> None:
        """Turn the client off and report why, the first time only."""
        with self._lock:
            if not self._available:
                return
            self._available = False
        self._on_warning(
            f"remote cache {self.url.shown}: {failure.reason}; the build goes on without it (nothing more is "
            "fetched from it or stored in it)"
        )

    def _warn_once(self, key: str, message: str) -> None:
        with self._lock:
            if key in self._warned:
                return
            self._warned.add(key)
        self._on_warning(message)
