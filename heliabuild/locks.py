"""Exclusive locks on lock files, so that concurrent heliabuild processes never undo each other's work.

A lock is an advisory `fcntl.flock` on a lock file. The kernel releases it
when its holder ends, however it ends (even by SIGKILL), so a lock is never
stale: a file left behind by a killed holder is simply taken by the next one.
The holder removes the lock file when it is done; a process that was waiting
on the removed file then finds that the file it locked is no longer the one
at the path, and locks the new one instead, so two holders never overlap.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Callable, Iterator

from heliabuild.errors import HeliaError

PathLike = str | os.PathLike[str]


class LockError(HeliaError):
    """A lock file that cannot be created or locked (a folder that cannot be written, say)."""


def acquire(path: PathLike, on_wait: Callable[[], None] | None = None) -> int:
    """Lock the file `path` (created when missing) and return its descriptor; wait while another holds it.

    `on_wait` is called once, before waiting, when the lock is held by
    another process (to say so). Raises LockError when the lock file cannot
    be created or locked.
    """
    waited = False
    while True:
        try:
            descriptor = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        except OSError as error:
            raise LockError(f"{path}: cannot create the lock file: {error.strerror or error}") from None
        try:
            try:
                fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                if on_wait is not None and not waited:
                    on_wait()
                waited = True
                fcntl.flock(descriptor, fcntl.LOCK_EX)
            if _is_at(descriptor, path):
                return descriptor
        except OSError as error:
            os.close(descriptor)
            raise LockError(f"{path}: cannot lock the lock file: {error.strerror or error}") from None
        except BaseException:
            os.close(descriptor)
            raise
        os.close(descriptor)  # the holder removed the file while this process waited: lock the new one


def release(descriptor: int, path: PathLike) -> None:
    """Remove the lock file `path` and release the lock `descriptor` (from acquire)."""
    try:
        if _is_at(descriptor, path):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)
    finally:
        os.close(descriptor)


def is_held(path: PathLike) -> bool:
    """Whether a live process holds the lock `path` (False when the lock file does not exist)."""
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except FileNotFoundError:
        return False
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(descriptor)
    return False


@contextlib.contextmanager
def locked(path: PathLike) -> Iterator[None]:
    """Hold the lock `path` (acquire) for the `with` block, then release it."""
    descriptor = acquire(path)
    try:
        yield
    finally:
        release(descriptor, path)


def _is_at(descriptor: int, path: PathLike) -> bool:
    """Whether the file open as `descriptor` is the one at `path` (not removed or replaced since)."""
    try:
        at_path = os.stat(path)
    except FileNotFoundError:
        return False
    opened = os.fstat(descriptor)
    return (opened.st_dev, opened.st_ino) == (at_path.st_dev, at_path.st_ino)
