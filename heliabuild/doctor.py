"""`heliabuild doctor`: what each backend needs, found (or not) on this machine, and `heliabuild --version`.

`findings()` looks for every tool and package a backend uses, each with its version and where it is:
Python, heliabuild, Vela, LiteRT, SCons, arm-none-eabi-gcc and its newlib, qemu-system-arm, each Corstone FVP
(in `$HELIA_FVP_DIR` or on PATH, as the fvp backend looks: heliabuild.fvp.locate), mlia-ethos-u's prebuilt
runner of each FVP target, the Ethos-U driver folder (`$HELIA_ETHOSU_DRIVER_DIR`), and the optional
matplotlib (`show --plot`, SVG and PNG) and dask (the Dask executor). `readiness(found)` says, per backend,
whether it can run, and otherwise what is missing and how to install it; the install commands are the hints
of the errors the backend itself would raise, so `doctor` and a failing build say the same. Nothing is
imported to find a Python package (its version is read from its metadata, its folder from its import spec),
so `doctor` works in an environment where importing one would fail.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import platform
import subprocess
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from heliabuild.distributions import NotInstalled, version
from heliabuild.errors import HeliaError
from heliabuild.runner.backends import BACKENDS, REGISTRY

REQUIREMENT_GROUPS = ("base", "toolchain", "qemu", "fvp")
"""What a registry row's `needs` may name (heliabuild.runner.backends.BackendRow), checked by `readiness`:
`base` Vela, LiteRT and SCons; `toolchain` arm-none-eabi-gcc and its newlib; `qemu` qemu-system-arm; `fvp` a
Corstone FVP with a firmware to run on it (mlia-ethos-u's prebuilt runner, or the toolchain and the Ethos-U
driver for `fvp_firmware="aot"`)."""
PROBE_TIMEOUT_S = 30.0
EXIT_CANNOT_RUN = 2
"""A backend named with --backend cannot run here: the machine's configuration, as the CLI's bad-input status."""
NAME_WIDTH = 32
"""The report's name column: a longer name pushes its line's version to the right."""


@dataclass(frozen=True)
class Finding:
    """One thing a backend may need: its `version` and `location` when found (`version` None: not found),
    else `missing` (why, in a few words) and `install` (the command or step that provides it)."""

    name: str
    version: str | None
    location: str | None = None
    missing: str = ""
    install: str = ""

    @property
    def found(self) -> bool:
        return self.version is not None


@dataclass(frozen=True)
class Readiness:
    """Whether `backend` can run here: ready when `missing` is empty, else each entry says what and how."""

    backend: str
    missing: tuple[str, ...]

    @property
    def ready(self) -> bool:
        return not self.missing


def _package(name: str, distribution: str, module: str, install: str) -> Finding:
    try:
        found = version(distribution)
    except NotInstalled:
        return Finding(name, None, missing="not installed", install=install)
    spec = importlib.util.find_spec(module)
    folders = list(spec.submodule_search_locations or []) if spec is not None else []
    location = folders[0] if folders else (spec.origin if spec is not None else None)
    return Finding(name, found, location)


def _first_line(command: list[str]) -> str | None:
    try:
        run = subprocess.run(command, capture_output=True, text=True, timeout=PROBE_TIMEOUT_S, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    lines = run.stdout.strip().splitlines()
    return lines[0].strip() if run.returncode == 0 and lines else None


def _program(name: str, locate: Callable[[], str]) -> Finding:
    """A program found by `locate` (which raises the backend's own HeliaError when it is missing)."""
    try:
        path = locate()
    except HeliaError as error:
        return Finding(name, None, missing=error.message, install=error.hint or "")
    return Finding(name, _first_line([path, "--version"]) or "unknown version", path)


def _arm_gcc() -> Finding:
    from heliabuild.firmware.toolchain import arm_gcc

    return _program("arm-none-eabi-gcc", arm_gcc)


def _newlib(gcc: Finding) -> Finding:
    """newlib-nano, as the firmware links it (`--specs=nano.specs`): its libc_nano.a and its version (the
    `_NEWLIB_VERSION` of its newlib.h)."""
    from heliabuild.firmware.toolchain import TOOLCHAIN_PACKAGES

    install = f"Debian/Ubuntu: apt-get install {TOOLCHAIN_PACKAGES}"
    if gcc.location is None:
        return Finding("newlib (nano)", None, missing="no arm-none-eabi-gcc to find it with", install=install)
    library = _first_line([gcc.location, "-print-file-name=libc_nano.a"])
    if library is None or not os.path.isabs(library) or not os.path.isfile(library):
        return Finding("newlib (nano)", None, missing="arm-none-eabi-gcc finds no libc_nano.a", install=install)
    try:
        run = subprocess.run(
            [gcc.location, "-E", "-P", "-x", "c", "-"],
            input="#include <newlib.h>\n_NEWLIB_VERSION\n",
            capture_output=True,
            text=True,
            timeout=PROBE_TIMEOUT_S,
            check=False,
        )
        lines = run.stdout.strip().splitlines() if run.returncode == 0 else []
    except (OSError, subprocess.TimeoutExpired):
        lines = []
    found = lines[-1].strip().strip('"') if lines else "unknown version"
    return Finding("newlib (nano)", found, os.path.normpath(library))


def _qemu() -> Finding:
    from heliabuild.firmware.qemu import qemu_executable

    return _program("qemu-system-arm", qemu_executable)


def _fvps() -> list[Finding]:
    from heliabuild.fvp.locate import FVP_DIR_VARIABLE, find_fvp, fvp_version
    from heliabuild.fvp.targets import TARGETS

    folder = os.environ.get(FVP_DIR_VARIABLE)
    where = f"not in ${FVP_DIR_VARIABLE} ({folder}) or on PATH" if folder else f"not on PATH, ${FVP_DIR_VARIABLE} unset"
    found = []
    for target in TARGETS:
        try:
            path = find_fvp(target.executable)
        except HeliaError as error:
            found.append(Finding(target.executable, None, missing=where, install=error.hint or ""))
            continue
        found.append(Finding(target.executable, fvp_version(path) or "unknown version", os.fspath(path)))
    return found


def _runners() -> list[Finding]:
    from heliabuild.fvp.firmware import PACKAGE, prebuilt_runner
    from heliabuild.fvp.targets import TARGETS

    found = []
    for target in TARGETS:
        name = _runner_name(PACKAGE, target.executable)
        try:
            runner = prebuilt_runner(target)
        except HeliaError as error:
            found.append(Finding(name, None, missing=error.message, install=error.hint or ""))
            continue
        found.append(Finding(name, runner.package_version, os.fspath(runner.path)))
    return found


def _runner_name(package: str, executable: str) -> str:
    return f"{package} runner for {executable.removeprefix('FVP_Corstone_')}"


def _driver() -> Finding:
    from heliabuild.firmware.driver import DRIVER_DIR_VARIABLE, driver_folder, find_driver

    name = f"Ethos-U driver (${DRIVER_DIR_VARIABLE})"
    try:
        driver = find_driver(None, "ethos-u55", "doctor")
    except HeliaError as error:
        missing = "not set" if driver_folder(None) is None else error.message.removeprefix("doctor: ")
        return Finding(name, None, missing=missing, install=error.hint or "")
    return Finding(name, f"sha256 {driver.sha256[:12]}", os.fspath(driver.folder))


def findings() -> list[Finding]:
    """Everything a backend may need, in the order `doctor` prints it (module docstring)."""
    gcc = _arm_gcc()
    return [
        Finding("Python", platform.python_version(), sys.executable),
        _package("heliabuild", "heliabuild", "heliabuild", "pip install heliabuild"),
        _package("ethos-u-vela", "ethos-u-vela", "ethosu", "pip install ethos-u-vela"),
        _package("ai-edge-litert", "ai-edge-litert", "ai_edge_litert", "pip install ai-edge-litert"),
        _package("SCons", "scons", "SCons", "pip install scons"),
        gcc,
        _newlib(gcc),
        _qemu(),
        *_fvps(),
        *_runners(),
        _driver(),
        _package("matplotlib", "matplotlib", "matplotlib", "pip install 'heliabuild[plot]'"),
        _package("dask.distributed", "distributed", "distributed", "pip install 'heliabuild[dask]'"),
    ]


def _lacking(finding: Finding) -> str:
    """What a backend lacks of `finding` and how to get it: `<name>: <why>; <install>`."""
    return f"{finding.name}: {finding.missing}; {finding.install}"


def _need(found: dict[str, Finding], *names: str) -> list[str]:
    return [_lacking(found[name]) for name in names if not found[name].found]


def readiness(found: Sequence[Finding]) -> list[Readiness]:
    """Per backend of BACKENDS, what it lacks of `found`: the requirement groups its registry rows `need`
    (REQUIREMENT_GROUPS), in order, each group once.

    - litert (`base`): Vela and LiteRT (and SCons for a build);
    - qemu-m55 (`base`, `toolchain`, `qemu`): those, arm-none-eabi-gcc, its newlib and qemu-system-arm;
    - fvp (`base`, `fvp`): Vela and LiteRT, and at least one Corstone FVP with a firmware to run on it:
      mlia-ethos-u's prebuilt runner for that FVP (`fvp_firmware="prebuilt"`, the default), or the toolchain
      and the Ethos-U driver (`fvp_firmware="aot"`).
    """
    from heliabuild.fvp.firmware import PACKAGE
    from heliabuild.fvp.targets import TARGETS

    by_name = {finding.name: finding for finding in found}
    base = _need(by_name, "ethos-u-vela", "ai-edge-litert", "SCons")
    toolchain = _need(by_name, "arm-none-eabi-gcc", "newlib (nano)")
    fvps = [target for target in TARGETS if by_name[target.executable].found]
    driver = next(finding for finding in found if finding.name.startswith("Ethos-U driver"))
    fvp_missing: list[str] = []
    if not fvps:
        first = by_name[TARGETS[0].executable]
        names = ", ".join(target.executable for target in TARGETS)
        fvp_missing.append(f"an Arm Corstone FVP ({names}): {first.missing}; {first.install}")
    elif not any(by_name[_runner_name(PACKAGE, target.executable)].found for target in fvps):
        runner = by_name[_runner_name(PACKAGE, fvps[0].executable)]
        if toolchain or not driver.found:
            fvp_missing.append(_lacking(runner))
            if not driver.found:
                fvp_missing.append(f"or, for fvp_firmware='aot', {_lacking(driver)}")
    lacking = {"base": base, "toolchain": toolchain, "qemu": _need(by_name, "qemu-system-arm"), "fvp": fvp_missing}
    return [
        Readiness(backend, tuple(entry for group in _needs(backend) for entry in lacking[group]))
        for backend in BACKENDS
    ]


def _needs(backend: str) -> tuple[str, ...]:
    """The requirement groups the registry's rows of `backend` need, in order, each once."""
    return tuple(dict.fromkeys(group for row in REGISTRY if row.backend == backend for group in row.needs))


def report(found: Sequence[Finding], ready: Sequence[Readiness]) -> str:
    """The text `doctor` prints: one line per finding (name, version or `missing`, location or why), then one
    line per backend (`ready`, or what it lacks and the install command)."""
    width = min(NAME_WIDTH, max(len(finding.name) for finding in found))
    lines = ["heliabuild doctor: what the backends need, as found on this machine", ""]
    for finding in found:
        if finding.found:
            lines.append(f"  {finding.name.ljust(width)}  {finding.version}  ({finding.location})")
        else:
            lines.append(f"  {finding.name.ljust(width)}  missing: {finding.missing}")
    lines += ["", "backends:"]
    for backend in ready:
        if backend.ready:
            lines.append(f"  {backend.backend}: ready")
            continue
        lines.append(f"  {backend.backend}: cannot run; missing:")
        lines.extend(f"    - {entry}" for entry in backend.missing)
    return "\n".join(lines) + "\n"


def version_text() -> str:
    """What `heliabuild --version` prints: heliabuild's version, then the version of each tool whose version
    a bundle records (heliabuild.executor.versions: the ones its outputs depend on), with SCons and Python."""
    from heliabuild.executor.versions import PROBES, tool_versions

    versions = tool_versions(PROBES)
    lines = [f"heliabuild {versions.pop('heliabuild')}"]
    extra = {"scons": _scons_version(), "python": platform.python_version()}
    for name, found in sorted({**versions, **extra}.items()):
        lines.append(f"  {name}: {found or 'not installed'}")
    return "\n".join(lines) + "\n"


def _scons_version() -> str | None:
    try:
        return version("scons")
    except NotInstalled:
        return None


def add_command(commands: argparse._SubParsersAction) -> None:
    """Add `doctor` to the `heliabuild` command's subcommands."""
    doctor = commands.add_parser("doctor", help="list what each backend needs, found here, and which backends can run")
    doctor.add_argument(
        "--backend",
        action="append",
        choices=BACKENDS,
        default=[],
        help="exit 2 unless this backend can run here (repeatable)",
    )
    doctor.set_defaults(run=run_command)


def run_command(args: argparse.Namespace) -> int:
    """`heliabuild doctor`: print the report; 2 (this machine's configuration cannot run it) when a backend named
    with --backend cannot run, with one error line, else 0."""
    from heliabuild.colour import coloured

    ready = readiness(found := findings())
    sys.stdout.write(report(found, ready))
    failing = [backend.backend for backend in ready if backend.backend in args.backend and not backend.ready]
    if failing:
        line = f"heliabuild: error: doctor: {', '.join(failing)} cannot run here (what it lacks is listed above)"
        print(coloured(line, sys.stderr), file=sys.stderr)
        return EXIT_CANNOT_RUN
    return 0


class VersionAction(argparse.Action):
    """`--version`: print version_text and exit 0 (asked only when the option is given)."""

    def __init__(self, option_strings: Sequence[str], dest: str = argparse.SUPPRESS, **kwargs: object) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, help="print the versions and exit")

    def __call__(self, parser: argparse.ArgumentParser, *args: object) -> None:
        sys.stdout.write(version_text())
        parser.exit()
