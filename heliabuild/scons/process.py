"""What heliabuild changes in the SCons process, beyond the environments that load its tool (docs/scons.md,
"What heliabuild changes in a build").

`configure_build(env)` runs once per SCons process: when the first heliabuild target or pipeline is declared
(every heliabuild builder and pseudo-builder calls it), or when an SConstruct calls
`heliabuild.scons.configure_build()` itself. A build that declares none, such as a project's own C targets
in an environment that loaded the tool, runs as plain SCons runs it. Once run, for the rest of the process:

- the SCons option `max_drift` is -1, unless the user set another value (disable_max_drift);
- Python's cyclic garbage collector is off while SCons reads and decides (heliabuild.scons.collector);
- SIGINT, SIGTERM and SIGHUP end the running heliabuild stages (heliabuild.scons.interrupt);
- the command line has `--helia-executor`, `--helia-shared-path` (heliabuild.scons.executor) and
  `--helia-cache-url` (heliabuild.scons.remote_cache), and a bad executor URL stops the build now;
- the project's build lock is held (lock_the_build);
- the summary table is printed when the build ends (heliabuild.scons.summary).

Given `env`, it also gives that environment the remote cache the command line or HELIA_CACHE_URL names,
at every call (each environment that declares heliabuild targets).
"""

from __future__ import annotations

import atexit
import os
import sys

from SCons.Environment import Base as Environment
from SCons.Errors import UserError

from heliabuild.locks import LockError, acquire, release
from heliabuild.scons import collector, executor, interrupt, remote_cache, summary

BUILD_LOCK = ".sconsign.heliabuild.lock"
"""The project's build lock file, in the top folder (lock_the_build)."""

MAX_DRIFT = -1
"""The `max_drift` heliabuild sets: never take a file's content signature from its modification time."""

_configured: list[bool] = []
"""Holds True once configure_build ran in this process."""

_held: list[int] = []
"""The descriptor of the build lock once this process holds it."""


def configure_build(env: Environment | None = None) -> None:
    """Make the process-wide settings of a heliabuild build, once per process (module docstring), and give
    `env` the remote cache the options name."""
    if not _configured:
        _configured.append(True)
        disable_max_drift()
        collector.pause()
        interrupt.watch()
        remote_cache.add_option()
        executor.add_options()
        executor.check_choice()
        lock_the_build()
        summary.install()
    if env is not None:
        remote_cache.configure(env)


def disable_max_drift() -> None:
    """Set the SCons option `max_drift` to -1 unless the command line or an SConscript set another value.

    With SCons's default (two days), a file whose modification time is older than that and equal to the one
    recorded keeps its recorded content signature without being read, so an edit that keeps the old mtime
    (`cp -p`, `tar`, `rsync -t`) is missed. With -1 every file's signature comes from its content. A value
    the user set (`--max-drift=N`, or `SetOption('max_drift', N)` before the first heliabuild target) is kept,
    except SCons's own default, which cannot be told apart from not setting it.
    """
    from SCons.Node.FS import default_max_drift
    from SCons.Script import GetOption, SetOption

    if GetOption("max_drift") == default_max_drift:
        SetOption("max_drift", MAX_DRIFT)


def lock_the_build() -> None:
    """Hold the project's build lock, `BUILD_LOCK` in the top folder (beside SCons's database), until this
    SCons process ends; while another `scons` holds it, say so on stderr and wait.

    Two builds at once would remove each other's targets (SCons removes a target before rebuilding it) and
    overwrite each other's database: the second waits, then builds what is still out of date. Help (`-h`)
    and dry runs (`-n`) write nothing and take no lock. A lock file that cannot be created is a UserError.
    """
    from SCons.Script import Dir, GetOption

    if _held or GetOption("help") or GetOption("no_exec"):
        return
    top = Dir("#").get_abspath()
    path = os.path.join(top, BUILD_LOCK)

    def waiting() -> None:
        print(f"heliabuild: waiting for the other scons building {top} to finish ({path})", file=sys.stderr, flush=True)

    try:
        descriptor = acquire(path, on_wait=waiting)
    except LockError as error:
        raise UserError(f"heliabuild: {error.message}") from None
    _held.append(descriptor)
    atexit.register(release, descriptor, path)
