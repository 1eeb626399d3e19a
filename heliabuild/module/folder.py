"""An export folder: recognising an earlier export of heliabuild's by its `module.json`, and replacing a folder
whole (docs/module.md, "Regeneration").

- `earlier_export(folder)`: the files of the earlier export `folder` holds (empty for a missing or empty
  folder, or one holding only empty folders, as SCons leaves before it builds), or ModuleError when it holds
  anything else: no or a damaged `module.json`, a file it does not list, a listed file whose SHA-256 differs
  (edited by its user), a symlink, a special file.
- `publish(folder, files, earlier)`: writes every file into a staging folder beside `folder`, then renames it
  into place (on Linux an atomic exchange with the earlier export, then the earlier export's listed files are
  removed). A file whose bytes are those of the earlier export keeps the earlier file's modification time, so
  a timestamp-based build (make, ninja) recompiles only what changed. A failure leaves `folder` as it was and
  nothing else behind.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import json
import os
import stat
import sys
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path

from heliabuild.files import errors_naming, make_folders, remove_folders, sha256_file
from heliabuild.module.kernels import ModuleError
from heliabuild.schema_files import first_error, message_of

MANIFEST = "module.json"
SCHEMA = "module.schema.json"
MAX_MANIFEST_BYTES = 4 << 20
MAX_ENTRIES = 10_000
"""A folder with more entries than this is not an export of heliabuild's (a bound on the walk)."""


def _refuse(folder: Path, why: str) -> ModuleError:
    return ModuleError(
        f"{folder}: {why}; heliabuild replaces only a folder that holds an earlier export of its own",
        hint="choose a new or empty folder, or move your files out of this one",
    )


def _manifest(folder: Path) -> dict[str, dict[str, object]]:
    path = folder / MANIFEST
    try:
        info = path.lstat()
    except FileNotFoundError:
        raise _refuse(folder, f"it holds files and no {MANIFEST}") from None
    if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_MANIFEST_BYTES:
        raise _refuse(folder, f"its {MANIFEST} is not a regular file of at most {MAX_MANIFEST_BYTES} bytes")
    try:
        document = json.loads(path.read_bytes().decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        raise _refuse(folder, f"its {MANIFEST} is not JSON") from None
    error = first_error(document, SCHEMA)
    if error is not None:
        raise _refuse(folder, f"its {MANIFEST} is not a module manifest ({message_of(error)})")
    return document["files"]


def _walk(folder: Path) -> set[str]:
    """The files under `folder` (relative, forward slashes); ModuleError for a symlink or a special file."""
    files: set[str] = set()
    pending = [folder]
    count = 0
    while pending:
        current = pending.pop()
        with os.scandir(current) as entries:
            for entry in entries:
                count += 1
                if count > MAX_ENTRIES:
                    raise _refuse(folder, f"it holds more than {MAX_ENTRIES} entries")
                relative = Path(entry.path).relative_to(folder).as_posix()
                if entry.is_symlink():
                    raise _refuse(folder, f"{relative} is a symlink")
                if entry.is_dir(follow_symlinks=False):
                    pending.append(Path(entry.path))
                elif entry.is_file(follow_symlinks=False):
                    files.add(relative)
                else:
                    raise _refuse(folder, f"{relative} is not a regular file")
    return files


def earlier_export(folder: str | os.PathLike[str]) -> dict[str, dict[str, object]]:
    """The manifest entries of the earlier export in `folder` ({} when `folder` is missing or empty); see the
    module docstring for what is refused."""
    path = Path(folder)
    if path.is_symlink():
        raise _refuse(path, "it is a symlink")
    if not path.exists():
        return {}
    if not path.is_dir():
        raise _refuse(path, "it is not a folder")
    files = _walk(path)
    if not files:
        return {}
    listed = _manifest(path)
    extra = sorted(files - set(listed) - {MANIFEST})
    if extra:
        raise _refuse(path, f"{extra[0]} is not a file of the earlier export ({MANIFEST} does not list it)")
    missing = sorted(set(listed) - files)
    if missing:
        raise _refuse(path, f"{missing[0]}, listed in {MANIFEST}, is missing")
    for name, entry in sorted(listed.items()):
        file = path / name
        if file.stat().st_size != entry["bytes"] or sha256_file(file) != entry["sha256"]:
            raise _refuse(path, f"{name} differs from the earlier export (edited since?)")
    return listed


def _exchange(first: Path, second: Path) -> bool:
    """Swap two folders atomically (Linux renameat2 RENAME_EXCHANGE); False where the system cannot."""
    if not sys.platform.startswith("linux"):
        return False
    libc = ctypes.CDLL(None, use_errno=True)
    function = getattr(libc, "renameat2", None)
    if function is None:
        return False
    at_fdcwd, rename_exchange = -100, 2
    if function(at_fdcwd, os.fsencode(first), at_fdcwd, os.fsencode(second), rename_exchange) == 0:
        return True
    failure = ctypes.get_errno()
    if failure in (errno.ENOSYS, errno.EINVAL, errno.ENOTSUP):
        return False
    raise OSError(failure, os.strerror(failure), str(second))


def _remove_export(folder: Path, listed: Iterable[str]) -> None:
    """Remove the files of an earlier export (and its manifest) from `folder`, then every folder in it that is
    left empty, and `folder` when it is."""
    for name in [*listed, MANIFEST]:
        with contextlib.suppress(FileNotFoundError):
            (folder / name).unlink()
    for current, _, _ in os.walk(folder, topdown=False):
        with contextlib.suppress(OSError):
            os.rmdir(current)


def publish(folder: str | os.PathLike[str], files: Mapping[str, bytes], earlier: Mapping[str, object]) -> None:
    """Write `files` (relative path -> bytes) as the whole of `folder`, which holds nothing or the earlier
    export `earlier` (earlier_export's answer); see the module docstring."""
    target = Path(folder)
    with errors_naming(target):
        created = make_folders(target.parent)
        staging: Path | None = None
        try:
            staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.module-", dir=target.parent))
            for name, data in files.items():
                path = staging / name
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_bytes(data)
                path.chmod(0o644)
                old = target / name
                if name in earlier and old.stat().st_size == len(data) and old.read_bytes() == data:
                    info = old.stat()
                    os.utime(path, ns=(info.st_atime_ns, info.st_mtime_ns))
            for sub in sorted({p for name in files for p in (staging / name).parents if staging in p.parents}):
                sub.chmod(0o755)
            staging.chmod(0o755)
            if not target.exists():
                os.rename(staging, target)
                staging = None
            elif _exchange(staging, target):
                _remove_export(staging, earlier)
                staging = None
            else:
                aside = Path(tempfile.mkdtemp(prefix=f".{target.name}.earlier-", dir=target.parent))
                os.rename(target, aside / "export")
                os.rename(staging, target)
                staging = None
                _remove_export(aside / "export", earlier)
                with contextlib.suppress(OSError):
                    aside.rmdir()
        except BaseException:
            if staging is not None:
                _remove_export(staging, files)
            remove_folders(created)
            raise
