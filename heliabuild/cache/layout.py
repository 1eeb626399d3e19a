"""The layout of Bazel's HTTP remote cache, as heliabuild stores built files in it.

A cache server holds two kinds of entries under one URL prefix (docs/remote-cache.md):

- `<prefix>/cas/<sha256>`: the content of a built file, keyed by the SHA-256 of that content (64 lowercase
  hex digits). A client checks what it fetched against the key, so a corrupted entry is never used.
- `<prefix>/ac/<key>`: the action-cache entry of one target. `key` is `ac_key(signature)`, 64 lowercase hex
  digits derived from SCons's cache signature of the target (its sources' contents, its action and its
  path); the entry names the content that target had: an `ActionResult` of the Remote Execution API v2 in
  its JSON form, `{"outputFiles": [{"path", "digest": {"hash", "sizeBytes"}, "isExecutable"}]}` with one
  output file (`CacheEntry`).

bazel-remote validates an `/ac` entry as an ActionResult and takes and gives its JSON form with the
`Content-Type` and `Accept` headers `application/json`; a plain WebDAV server (nginx) stores the bytes as
they are. Either way, an entry holds no time, host name or absolute path of its own (the path is SCons's
path of the target, relative to the top folder when the target is under it), so two builds of one project
write byte-identical entries.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from typing import Any

from heliabuild.documents import parse_json
from heliabuild.errors import HeliaError
from heliabuild.files import json_text

AC_KEY_DOMAIN = b"heliabuild scons cache entry 1\n"
"""Prefixed to SCons's cache signature before hashing it into an `/ac` key: keys of another tool (or of a
later format of these entries) sharing the server never collide with heliabuild's."""

MAX_ENTRY_BYTES = 64 << 10
"""The largest `/ac` entry read: an entry of one file is a few hundred bytes."""

CONTENT_TYPE = "application/json"
"""The media type of an `/ac` entry (bazel-remote then stores it as an ActionResult)."""

_SHA256 = re.compile(r"[0-9a-f]{64}")


class CorruptEntryError(HeliaError):
    """A cache entry that is not what its key says: its content does not hash to its key, or an `/ac`
    entry that is not an ActionResult of one file at the target's path. The entry is ignored."""


def ac_key(signature: str) -> str:
    """The `/ac` key of the target whose SCons cache signature is `signature`: the SHA-256 (lowercase hex)
    of AC_KEY_DOMAIN and the signature, 64 hex digits whatever SCons's hash format is (bazel-remote
    accepts no other keys)."""
    return hashlib.sha256(AC_KEY_DOMAIN + signature.encode("utf-8")).hexdigest()


def is_sha256(text: str) -> bool:
    """Whether `text` is a SHA-256 as the layout writes it: 64 lowercase hex digits."""
    return _SHA256.fullmatch(text) is not None


def cas_path(prefix: str, sha256: str) -> str:
    """The URL path of the content whose SHA-256 is `sha256`, under the URL path `prefix` ('' or '/x')."""
    return f"{prefix}/cas/{sha256}"


def ac_path(prefix: str, key: str) -> str:
    """The URL path of the `/ac` entry `key` (see ac_key), under the URL path `prefix`."""
    return f"{prefix}/ac/{key}"


@dataclass(frozen=True)
class CacheEntry:
    """What one target's `/ac` entry says: the target's `path`, the SHA-256 and size of its content, and
    whether the file is executable."""

    path: str
    sha256: str
    size: int
    executable: bool = False

    def to_json(self) -> dict[str, Any]:
        """The entry as an ActionResult's JSON form (int64 sizes are strings there)."""
        output = {
            "path": self.path,
            "digest": {"hash": self.sha256, "sizeBytes": str(self.size)},
            "isExecutable": self.executable,
        }
        return {"outputFiles": [output]}

    @classmethod
    def from_json(cls, document: Any, source: str) -> CacheEntry:
        """The entry in `document` (an ActionResult's JSON form with exactly one output file; fields the
        entry does not use are ignored, `isExecutable` may be left out, `sizeBytes` may be a number);
        CorruptEntryError naming `source` for anything else."""
        outputs = document.get("outputFiles") if isinstance(document, dict) else None
        if not isinstance(outputs, list) or len(outputs) != 1 or not isinstance(outputs[0], dict):
            raise CorruptEntryError(f"{source}: not an ActionResult with one output file")
        output = outputs[0]
        path = output.get("path")
        digest = output.get("digest")
        executable = output.get("isExecutable", False)
        if not isinstance(path, str) or not isinstance(digest, dict) or not isinstance(executable, bool):
            raise CorruptEntryError(f"{source}: the output file has no path, digest or boolean isExecutable")
        sha256 = digest.get("hash")
        size = _size(digest.get("sizeBytes", 0))
        if not isinstance(sha256, str) or not is_sha256(sha256) or size is None:
            raise CorruptEntryError(f"{source}: the digest is not a SHA-256 and a size in bytes")
        return cls(path=path, sha256=sha256, size=size, executable=executable)

    def encode(self) -> bytes:
        """The bytes of the `/ac` entry: canonical JSON (json_text), so equal entries are equal bytes."""
        return json_text(self.to_json()).encode("utf-8")

    @classmethod
    def decode(cls, data: bytes, source: str, expected_path: str) -> CacheEntry:
        """The entry in `data`, read from `source`, which must name `expected_path` (the target it was
        looked up for; another path means the key was not this target's); CorruptEntryError otherwise."""
        if len(data) > MAX_ENTRY_BYTES:
            raise CorruptEntryError(f"{source}: {len(data)} bytes, more than the {MAX_ENTRY_BYTES} of an entry")
        entry = cls.from_json(parse_json(data, source, "cache entry", error=CorruptEntryError), source)
        if entry.path != expected_path:
            raise CorruptEntryError(f"{source}: the entry is for {entry.path!r}, not {expected_path!r}")
        return entry


def _size(value: object) -> int | None:
    """A size in bytes from an ActionResult's `sizeBytes` (a decimal string, or a number), or None."""
    if isinstance(value, str) and value.isascii() and value.isdigit() and len(value) <= 19:
        return int(value)
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    return None
