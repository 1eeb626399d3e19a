"""Arm's Ethos-U core driver, from the folder the user names: what heliabuild's AOT firmware for the Corstone
FVPs compiles in (docs/firmware.md, "Corstone-300 and the Ethos-U driver").

heliabuild cannot install the driver, so the user names a checkout of it with `HELIA_ETHOSU_DRIVER_DIR` (an
environment variable, the SCons construction variable of the same name, or `heliabuild runner
--ethosu-driver-dir`). `find_driver(folder, npu, source)` accepts a folder holding the driver's public headers
(`include/ethosu_driver.h`, `include/pmu_ethosu.h`) and its sources (`src/ethosu_driver.c`, `src/ethosu_pmu.c`
and the register access of the NPU family, `src/ethosu_device_u55_u65.c` or `src/ethosu_device_u85.c`);
no folder, or one that lacks any of these, is one FirmwareError naming every file missing. Every `src/*.c` but
the other family's device source is compiled (with `-DETHOSU55`, `-DETHOSU65` or `-DETHOSU85`, and `include/`
and `src/` on the include path). `sha256` covers the names and bytes of every file used, so runner.json records
which driver a firmware was built with without recording the folder's path.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path

from heliabuild.errors import FirmwareError

DRIVER_DIR_VARIABLE = "HELIA_ETHOSU_DRIVER_DIR"
HEADERS = ("include/ethosu_driver.h", "include/pmu_ethosu.h")
SOURCES = ("src/ethosu_driver.c", "src/ethosu_pmu.c")
DEVICE_SOURCES = {
    "ethos-u55": "src/ethosu_device_u55_u65.c",
    "ethos-u65": "src/ethosu_device_u55_u65.c",
    "ethos-u85": "src/ethosu_device_u85.c",
}
ARCH_DEFINES = {"ethos-u55": "ETHOSU55", "ethos-u65": "ETHOSU65", "ethos-u85": "ETHOSU85"}
MAX_DRIVER_FILE_BYTES = 4 << 20
_HINT = (
    f"set {DRIVER_DIR_VARIABLE} (or heliabuild runner --ethosu-driver-dir) to a checkout of Arm's "
    "ethos-u-core-driver (https://gitlab.arm.com/artificial-intelligence/ethos-u/ethos-u-core-driver)"
)


@dataclass(frozen=True)
class EthosuDriver:
    """A driver folder accepted for `npu`: the sources to compile, the include folders, the define, the hash."""

    folder: Path
    npu: str
    sources: tuple[Path, ...]
    include_dirs: tuple[Path, ...]
    define: str
    sha256: str
    files: tuple[Path, ...] = ()
    """Every file used (headers and sources): a build's dependencies."""

    def to_json(self) -> dict[str, object]:
        """runner.json's record of the driver: its hash and the files compiled, by name (no machine path)."""
        return {"sha256": self.sha256, "sources": [path.name for path in self.sources], "define": self.define}


def driver_folder(given: str | os.PathLike[str] | None) -> str | None:
    """The folder `given`, else `$HELIA_ETHOSU_DRIVER_DIR`, else None."""
    if given is not None and os.fspath(given):
        return os.fspath(given)
    return os.environ.get(DRIVER_DIR_VARIABLE) or None


def find_driver(given: str | os.PathLike[str] | None, npu: str, source: str) -> EthosuDriver:
    """The driver in `given` (or `$HELIA_ETHOSU_DRIVER_DIR`) for `npu` (module docstring)."""
    from heliabuild.documents import read_regular_file

    named = driver_folder(given)
    if named is None:
        raise FirmwareError(
            f"{source}: the AOT firmware for the FVP calls Arm's Ethos-U core driver, and no driver folder is "
            f"named ({DRIVER_DIR_VARIABLE} is not set)",
            hint=_HINT,
        )
    folder = Path(named)
    required = (*HEADERS, *SOURCES, DEVICE_SOURCES[npu])
    missing = [name for name in required if not (folder / name).is_file()]
    if missing:
        raise FirmwareError(
            f"{source}: {DRIVER_DIR_VARIABLE} {folder} is not an Ethos-U core driver for {npu}: it lacks "
            f"{', '.join(missing)}",
            hint=_HINT,
        )
    others = {name for other, name in DEVICE_SOURCES.items() if name != DEVICE_SOURCES[npu]}
    sources = tuple(
        path for path in sorted((folder / "src").glob("*.c")) if f"src/{path.name}" not in others and path.is_file()
    )
    digest = hashlib.sha256()
    used = sorted({*(folder / name for name in HEADERS), *sources, *(folder / "include").glob("*.h")})
    used += sorted((folder / "src").glob("*.h"))
    for path in used:
        data = read_regular_file(path, "Ethos-U driver file", error=FirmwareError, limit=MAX_DRIVER_FILE_BYTES)
        digest.update(str(path.relative_to(folder)).encode() + b"\0" + data + b"\0")
    return EthosuDriver(
        folder=folder,
        npu=npu,
        sources=sources,
        include_dirs=(folder / "include", folder / "src"),
        define=ARCH_DEFINES[npu],
        sha256=digest.hexdigest(),
        files=tuple(used),
    )
