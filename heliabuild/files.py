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
from collections.abc import Iterable, Iterator
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


_OPERATION_NOTE = "heliabuild could not: "


@contextlib.contextmanager
def errors_naming(path: str | os.PathLike[str], operation: str = "write") -> Iterator[None]:
    """Re-raise an OSError of the block as the same error naming `path`, the user's target, instead of the
    temporary file or folder it happened on (so a read-only folder is reported as the path the user gave),
    noted with the `operation` that failed (failed_operation)."""
    try:
        yield
    except OSError as failure:
        if failure.errno is None:
            raise
        named = OSError(failure.errno, failure.strerror, str(path))
        note_operation(named, operation)
        raise named from None


def note_operation(error: OSError, operation: str) -> None:
    """Note on `error` the operation that failed (`write`, `create the folder`), unless one is noted."""
    if failed_operation(error) is None:
        error.add_note(f"{_OPERATION_NOTE}{operation}")


def failed_operation(error: BaseException) -> str | None:
    """The operation noted on `error` (note_operation), or None."""
    for note in getattr(error, "__notes__", ()):
        if isinstance(note, str) and note.startswith(_OPERATION_NOTE):
            return note.removeprefix(_OPERATION_NOTE)
    return None


def make_folders(path: str | os.PathLike[str]) -> list[Path]:
    """Create the folder `path` and its missing parents; the folders this call created, outermost first
    (none when `path` already is a folder). A failure removes them again and raises the OSError."""
    target = Path(path)
    missing = [folder for folder in (target, *target.parents) if not folder.is_dir()]
    created: list[Path] = []
    try:
        for folder in reversed(missing):
            try:
                folder.mkdir()
            except FileExistsError:
                if not folder.is_dir():
                    raise
                continue
            created.append(folder)
    except BaseException as failure:
        remove_folders(created)
        if isinstance(failure, OSError):
            note_operation(failure, "create the folder")
        raise
    return created


def remove_folders(created: Iterable[Path]) -> None:
    """Remove the folders `make_folders` created, innermost first, each only while it is empty."""
    for folder in reversed(list(created)):
        with contextlib.suppress(OSError):
            folder.rmdir()


def remove_files(paths: Iterable[Path]) -> None:
    """Remove each of `paths` that is a regular file; a symlink, a folder or a missing path is left alone.
    Callers pass only files they wrote, or earlier outputs they recognised as their own."""
    for path in paths:
        if path.is_file() and not path.is_symlink():
            with contextlib.suppress(FileNotFoundError):
                path.unlink()


def write_atomic(path: str | os.PathLike[str], chunks: bytes | Iterable[bytes | memoryview]) -> None:
    """Write `chunks` to `path` through a temporary file in the same folder (its missing parent folders are
    created). On failure nothing is left: no temporary file, no folder this call created; an OSError names
    `path`, never the temporary file."""
    target = Path(path)
    temporary: str | None = None
    created: list[Path] = []
    with errors_naming(target):
        try:
            created = make_folders(target.parent)
            handle, temporary = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
            with os.fdopen(handle, "wb") as stream:
                if isinstance(chunks, bytes | bytearray | memoryview):
                    stream.write(chunks)
                else:
                    for chunk in chunks:
                        stream.write(chunk)
            os.chmod(temporary, 0o644)
            os.replace(temporary, target)
        except BaseException:
            if temporary is not None:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(temporary)
            remove_folders(created)
            raise


@contextlib.contextmanager
def replaced_on_success(path: str | os.PathLike[str]) -> Iterator[Path]:
    """A temporary path in the folder of `path` (`.<name>.<random>.tmp`, absent) for a tool to write the file
    to (a compiler's `-o`); when the block ends without error it replaces `path` (os.replace), else it is
    removed: `path` holds the earlier complete file or the new one, never a cut-off one."""
    target = Path(path)
    handle, name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    os.close(handle)
    temporary = Path(name)
    temporary.unlink()
    try:
        yield temporary
        os.replace(temporary, target)
    finally:
        with contextlib.suppress(FileNotFoundError):
            temporary.unlink()


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
