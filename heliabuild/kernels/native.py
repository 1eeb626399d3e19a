"""Building and loading heliabuild's portable C kernels.

Every `*.c` in `heliabuild/kernels/c/` is built by that folder's `SConstruct`
into a folder the caller chooses (the package itself may be read-only):

- target `host`: `<build_dir>/host/libheliakernels.so` (C99, `-O2 -Wall -Wextra
  -Werror -pedantic`), loaded with ctypes by the Python bindings;
- target `cortex-m55`: `<build_dir>/cortex-m55/libheliakernels.a`, built with
  arm-none-eabi-gcc and the firmware's flags (`c/cortex-m55.flags`), plus a
  per-object code-size report `code-size.json` / `code-size.txt`;
- target `cortex-m55-nomve`: the same under `<build_dir>/cortex-m55-nomve/`,
  for `-mcpu=cortex-m55+nomve` (the kernels' portable bodies).

SCons runs as a subprocess (the `scons` beside the running interpreter, else
`python -m SCons`), so an up-to-date build costs one SCons start and no
compile. `Status` mirrors `c/helia_status.h`.
"""

from __future__ import annotations

import contextlib
import ctypes
import enum
import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

from heliabuild.errors import KernelError

C_SOURCE_DIR = Path(__file__).resolve().parent / "c"
"""The folder of the C sources and their SConstruct."""

SCONSTRUCT = C_SOURCE_DIR / "SConstruct"
LIBRARY_NAME = "heliakernels"
TARGETS = ("host", "cortex-m55", "cortex-m55-nomve")
ARM_COMPILER = "arm-none-eabi-gcc"
_HOST_COMPILERS = ("gcc", "cc", "clang")


class Status(enum.IntEnum):
    """Status codes of the C kernels (`helia_status` in `c/helia_status.h`); 0 is success."""

    OK = 0
    NULL_POINTER = 1
    PAIR_COUNT = 2
    UNSUPPORTED_DTYPE = 3
    DTYPE_MISMATCH = 4
    BAD_SHAPE = 5
    SHAPE_MISMATCH = 6
    SIZE_OVERFLOW = 7
    BYTE_LENGTH_MISMATCH = 8
    PARTIAL_OVERLAP = 9
    CROSS_PAIR_OVERLAP = 10
    INVALID_BUFFER = 11
    BAD_PARAMETER = 12


class NativeBuildError(KernelError):
    """The C kernels cannot be built here: no compiler, no Arm toolchain, or a failing build."""


def scons_command() -> list[str]:
    """The command that runs SCons: the `scons` script beside sys.executable, else `python -m SCons`."""
    script = Path(sys.executable).with_name("scons")
    if script.is_file() and os.access(script, os.X_OK):
        return [str(script)]
    return [sys.executable, "-m", "SCons"]


def host_compiler() -> str | None:
    """The host C compiler the build will use ($CC, else gcc, cc or clang on PATH), or None."""
    requested = os.environ.get("CC")
    if requested:
        return shutil.which(requested)
    return next((found for name in _HOST_COMPILERS if (found := shutil.which(name))), None)


def arm_toolchain() -> str | None:
    """The path of arm-none-eabi-gcc when it is on PATH, else None."""
    return shutil.which(ARM_COMPILER)


def host_library_path(build_dir: Path) -> Path:
    """Where the host build puts the shared library (the platform's naming)."""
    if sys.platform == "darwin":
        name = f"lib{LIBRARY_NAME}.dylib"
    elif os.name == "nt":
        name = f"{LIBRARY_NAME}.dll"
    else:
        name = f"lib{LIBRARY_NAME}.so"
    return Path(build_dir) / "host" / name


def m55_library_path(build_dir: Path, target: str = "cortex-m55") -> Path:
    """Where the Cortex-M55 build `target` (cortex-m55 or cortex-m55-nomve) puts the static library."""
    return Path(build_dir) / target / f"lib{LIBRARY_NAME}.a"


def code_size_report_path(build_dir: Path, suffix: str = ".json", target: str = "cortex-m55") -> Path:
    """The Cortex-M55 code-size report (`.json`, or `.txt` for the table) of build `target`."""
    return Path(build_dir) / target / f"code-size{suffix}"


@contextlib.contextmanager
def _build_lock(build_dir: Path) -> Iterator[None]:
    """Serialize builds into one folder across processes (SCons's database is not shared-safe)."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows: one build at a time is the caller's business
        yield
        return
    with open(build_dir / ".heliakernels.lock", "a+b") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def build_native(build_dir: Path, target: str = "host") -> Path:
    """Build the C kernels for `target` (TARGETS) into `build_dir`; return the library path.

    Only stale files are rebuilt. Raises NativeBuildError when no host C
    compiler (or, for cortex-m55, no arm-none-eabi-gcc) is on PATH, and when
    the build fails (the message quotes the compiler's last lines). Builds
    into the same folder from several processes are serialized by a lock file.
    """
    if target not in TARGETS:
        raise KernelError(f"native kernel build: unknown target {target!r}; expected one of {', '.join(TARGETS)}")
    if target == "host" and host_compiler() is None:
        raise NativeBuildError(
            "native kernel build: no C compiler found "
            f"({'CC=' + os.environ['CC'] if os.environ.get('CC') else 'gcc, cc and clang are not on PATH'})",
            hint="install gcc or clang, or set CC to a C99 compiler",
        )
    if target != "host" and arm_toolchain() is None:
        raise NativeBuildError(
            f"native kernel build: {ARM_COMPILER} is not on PATH, so the Cortex-M55 library cannot be built",
            hint="install the Arm GNU toolchain (Debian/Ubuntu: apt-get install gcc-arm-none-eabi)",
        )
    folder = Path(build_dir).resolve()
    folder.mkdir(parents=True, exist_ok=True)
    command = [*scons_command(), "-Q", "--no-site-dir", "-f", str(SCONSTRUCT), f"BUILD_DIR={folder}", target]
    with _build_lock(folder):
        run = subprocess.run(command, cwd=folder, capture_output=True, text=True, check=False)
    if run.returncode != 0:
        output = (run.stdout + run.stderr).strip().splitlines()
        tail = "\n".join(output[-20:])
        raise NativeBuildError(
            f"native kernel build for {target} into {folder} failed (exit {run.returncode}):\n{tail}"
        )
    return host_library_path(folder) if target == "host" else m55_library_path(folder, target)


_LIBRARIES: dict[Path, ctypes.CDLL] = {}
_LIBRARIES_LOCK = threading.Lock()


def load_host_library(build_dir: Path) -> ctypes.CDLL:
    """The host library built into `build_dir`, built if needed and loaded once per folder (cached).

    Bindings set the `argtypes`/`restype` of the functions they use on the
    returned CDLL; the object is shared by every caller in the process.
    """
    folder = Path(build_dir).resolve()
    with _LIBRARIES_LOCK:
        library = _LIBRARIES.get(folder)
        if library is None:
            library = ctypes.CDLL(str(build_native(folder, "host")))
            _LIBRARIES[folder] = library
        return library
