"""The firmware an FVP job runs: Arm's prebuilt generic inference runner from the `mlia-ethos-u` package.

The package (the optional extra `pip install heliabuild[fvp]`) ships, per Corstone platform and NPU,
`mlia/resources/backends/applications/inference_runner-sse-<300|310|320>-<version>-tflm-ethos-<U55|U65|U85>-
Default-noTA/mlek_inference_runner.axf`, which takes a model with `--data <model>@0x90000000` and prints the
NPU counters of one inference. `prebuilt_runner(target)` finds the one file for a target through the
distribution's file list (importlib.metadata; nothing of `mlia` is imported) and returns its path relative to
the distribution's install folder, its SHA-256 and the package version; runner.json records those, and
`installed_runner(record)` finds the file again at run time and refuses one whose hash differs.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

from heliabuild.errors import FvpError
from heliabuild.fvp.targets import FvpTarget

PACKAGE = "mlia-ethos-u"
SOURCE = "mlia-ethos-u"
"""runner.json's `firmware.source` for the prebuilt runner."""
APPLICATION = "mlek_inference_runner.axf"
MAX_FIRMWARE_BYTES = 64 << 20
_INSTALL_HINT = "pip install heliabuild[fvp] (the mlia-ethos-u package, which ships Arm's prebuilt runner)"


@dataclass(frozen=True)
class PrebuiltRunner:
    """One installed runner file: `path` on this machine, `file` relative to the distribution."""

    path: Path
    file: str
    sha256: str
    package_version: str

    def to_json(self) -> dict[str, Any]:
        """runner.json's `fvp.firmware`: no machine path."""
        return {"source": SOURCE, "package_version": self.package_version, "file": self.file, "sha256": self.sha256}


def _distribution() -> metadata.Distribution:
    try:
        return metadata.distribution(PACKAGE)
    except metadata.PackageNotFoundError:
        raise FvpError(
            f"the {PACKAGE} package is not installed, so the fvp backend has no runner firmware", hint=_INSTALL_HINT
        ) from None


def pattern_for(target: FvpTarget) -> str:
    """The distribution-relative path pattern of `target`'s TFLM runner."""
    return (
        f"mlia/resources/backends/applications/inference_runner-sse-{target.sse}-*-tflm-ethos-{target.npu_tag}"
        f"-Default-noTA/{APPLICATION}"
    )


def _hash(path: Path) -> str:
    from heliabuild.documents import read_regular_file
    from heliabuild.files import sha256_bytes

    return sha256_bytes(read_regular_file(path, "prebuilt runner", error=FvpError, limit=MAX_FIRMWARE_BYTES))


def prebuilt_runner(target: FvpTarget) -> PrebuiltRunner:
    """The installed prebuilt runner for `target`; FvpError when the package is missing or does not hold
    exactly one runner for it."""
    distribution = _distribution()
    pattern = pattern_for(target)
    found = sorted(str(file) for file in distribution.files or [] if fnmatch.fnmatchcase(str(file), pattern))
    if len(found) != 1:
        raise FvpError(
            f"{PACKAGE} {distribution.version} holds {len(found)} runners matching {pattern}; expected one for "
            f"{target.executable}",
            hint=_INSTALL_HINT,
        )
    path = Path(str(distribution.locate_file(found[0])))
    if not path.is_file():
        raise FvpError(f"{PACKAGE} {distribution.version} lists {found[0]}, but {path} is missing", hint=_INSTALL_HINT)
    return PrebuiltRunner(path=path, file=found[0], sha256=_hash(path), package_version=distribution.version)


def installed_runner(record: dict[str, Any], source: str) -> PrebuiltRunner:
    """The installed file runner.json's `fvp.firmware` names; FvpError when it is missing or not the same
    bytes (another package version, or a changed file)."""
    distribution = _distribution()
    path = Path(str(distribution.locate_file(record["file"])))
    if not path.is_file():
        raise FvpError(
            f"{source}: fvp.firmware: {record['file']} is not in the installed {PACKAGE} {distribution.version} "
            f"(the runner was built with {record['package_version']})",
            hint=f"pip install {PACKAGE}=={record['package_version']}, or rebuild the runner",
        )
    digest = _hash(path)
    if digest != record["sha256"]:
        raise FvpError(
            f"{source}: fvp.firmware: {path} has sha256 {digest}, but the runner was built with {record['sha256']} "
            f"({PACKAGE} {record['package_version']}; installed: {distribution.version})",
            hint=f"pip install {PACKAGE}=={record['package_version']}, or rebuild the runner",
        )
    return PrebuiltRunner(path=path, file=record["file"], sha256=digest, package_version=distribution.version)
