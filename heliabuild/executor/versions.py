"""The versions of the tools a job's outputs depend on, on the machine asking, and their comparison.

A tool is named as heliabuild records it elsewhere (provider_versions): `heliabuild`, `ethos-u-vela`,
`ai-edge-litert`, `mlia-ethos-u` (installed distributions), `arm-none-eabi-gcc` and `qemu-system-arm` (the
first line of `--version` of the one on PATH). `heliabuild` is its version and a digest of the package's
own files, because two editable checkouts report one version but may hold different code. A tool that is
not installed has the version None.

The rule (`mismatches`): a tool the client has must be on the worker with the same version; a tool the
client lacks (a client without QEMU or an FVP that sends its runs to workers that have one) is not
compared, and the bundle records the worker's version.
"""

from __future__ import annotations

import hashlib
import subprocess
from collections.abc import Callable, Iterable, Mapping
from functools import cache
from pathlib import Path

from heliabuild.distributions import NotInstalled, version

PACKAGE_SUFFIXES = (".py", ".json", ".c", ".h", ".ld", ".yaml")
"""The files of the heliabuild package whose content is its code and data (the digest's scope)."""


@cache
def heliabuild_version() -> str:
    """`<version>+<first 12 hex of the SHA-256 over the package's own files (PACKAGE_SUFFIXES), by path>`."""
    import heliabuild

    root = Path(heliabuild.__file__).parent
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*")):
        if path.suffix in PACKAGE_SUFFIXES and "__pycache__" not in path.parts and path.is_file():
            digest.update(path.relative_to(root).as_posix().encode("utf-8") + b"\0")
            digest.update(hashlib.sha256(path.read_bytes()).digest())
    return f"{heliabuild.__version__}+{digest.hexdigest()[:12]}"


def _distribution(name: str) -> Callable[[], str | None]:
    def probe() -> str | None:
        try:
            return version(name)
        except NotInstalled:
            return None

    return probe


def _first_line(command: Callable[[], str]) -> Callable[[], str | None]:
    def probe() -> str | None:
        from heliabuild.errors import HeliaError

        try:
            run = subprocess.run([command(), "--version"], capture_output=True, text=True, timeout=30, check=False)
        except (HeliaError, OSError, subprocess.TimeoutExpired):
            return None
        lines = run.stdout.splitlines()
        return lines[0].strip() if run.returncode == 0 and lines else None

    return probe


def _arm_gcc() -> str:
    from heliabuild.firmware.toolchain import arm_gcc

    return arm_gcc()


def _qemu() -> str:
    from heliabuild.firmware.qemu import qemu_executable

    return qemu_executable()


PROBES: Mapping[str, Callable[[], str | None]] = {
    "heliabuild": heliabuild_version,
    "ethos-u-vela": _distribution("ethos-u-vela"),
    "ai-edge-litert": _distribution("ai-edge-litert"),
    "mlia-ethos-u": _distribution("mlia-ethos-u"),
    "arm-none-eabi-gcc": _first_line(_arm_gcc),
    "qemu-system-arm": _first_line(_qemu),
}
"""Tool name -> how to ask its version here."""


@cache
def tool_version(name: str) -> str | None:
    """The version of the tool `name` (a key of PROBES) on this machine, asked once per process."""
    return PROBES[name]()


def tool_versions(names: Iterable[str]) -> dict[str, str | None]:
    """The version of each tool of `names` here; KeyError for a name that is no tool of PROBES."""
    return {name: tool_version(name) for name in sorted(set(names))}


def mismatches(client: Mapping[str, str | None], worker: Mapping[str, str | None]) -> list[str]:
    """`<tool>: <client version> on the client, <worker version> on the worker` for each tool the client
    has that the worker lacks or has in another version (the module docstring's rule)."""
    return [
        f"{name}: {client_version} on the client, {worker.get(name) or 'not installed'} on the worker"
        for name, client_version in sorted(client.items())
        if client_version is not None and worker.get(name) != client_version
    ]
