"""Deterministic, atomic file output and content hashing.

Every file heliabuild writes goes through here: bytes land in a temporary file
in the target folder and replace the target with os.replace, so a failing
stage leaves either the old complete file or nothing, never a partial one.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

_CHUNK = 1 << 20


def sha256_bytes(data: bytes | bytearray | memoryview) -> str:
    return hashlib.sha256(data).hexdigest()


def sha256_file(path: str | os.PathLike[str]) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def json_text(document: Any) -> str:
    """The canonical JSON text: sorted keys, two-space indent, final newline."""
    return json.dumps(document, sort_keys=True, indent=2, ensure_ascii=False) + "\n"


def write_atomic(path: str | os.PathLike[str], chunks: bytes | Iterable[bytes | memoryview]) -> None:
    """Write `chunks` to `path` through a temporary file in the same folder."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(handle, "wb") as stream:
            if isinstance(chunks, bytes | bytearray | memoryview):
                stream.write(chunks)
            else:
                for chunk in chunks:
                    stream.write(chunk)
        os.chmod(temporary, 0o644)
        os.replace(temporary, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)
        raise


def write_json(path: str | os.PathLike[str], document: Any) -> None:
    write_atomic(path, json_text(document).encode("utf-8"))


def write_all_or_nothing(outputs: dict[Path, bytes]) -> None:
    """Write several files so that a failure leaves none of them behind.

    Each file is written atomically; if a later one fails, the ones already
    written in this call are removed again.
    """
    written: list[Path] = []
    try:
        for path, data in outputs.items():
            write_atomic(path, data)
            written.append(path)
    except BaseException:
        for path in written:
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
        raise
