"""The backend registry: name -> the module that implements heliabuild.runner.backend.Backend.

One row per backend. runner.json's `backend` names the row's `backend` (the two FVP firmwares share `fvp`,
told apart by `fvp.firmware.source`); the CLI's and SCons's choices (`--backend`, `HELIA_BACKEND`;
`--fvp-firmware`, `HELIA_FVP_FIRMWARE`) are the rows' `backend` and `fvp_firmware` (tests/test_runner_backends.py
checks that they agree); the policy's reserved keys under `defaults` are the rows' `backend` and `aliases`.
Modules are imported when a backend is first asked for, so reading the registry
imports no backend.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import import_module
from typing import TYPE_CHECKING

from heliabuild.errors import RunnerError

if TYPE_CHECKING:
    from heliabuild.runner.backend import Backend
    from heliabuild.runner.record import RunnerRecord


@dataclass(frozen=True)
class BackendRow:
    """A backend's registry row: its `name`, runner.json's `backend` for it, the `fvp_firmware` choice and
    `fvp.firmware.source` that select it among the fvp backends (None elsewhere), its module, `aliases`: other
    names the policy reserves for its `backend` under `defaults` (heliabuild.runner.policy), and `needs`: the
    requirement groups `heliabuild doctor` checks for its `backend` (heliabuild.doctor.REQUIREMENT_GROUPS:
    `base`, `toolchain`, `qemu`, `fvp`)."""

    name: str
    backend: str
    module: str
    fvp_firmware: str | None = None
    firmware_source: str | None = None
    aliases: tuple[str, ...] = ()
    needs: tuple[str, ...] = ("base",)


REGISTRY = (
    BackendRow("litert", "litert", "heliabuild.runner.backends.litert", needs=("base",)),
    BackendRow(
        "qemu-m55",
        "qemu-m55",
        "heliabuild.runner.backends.qemu_m55",
        aliases=("qemu",),
        needs=("base", "toolchain", "qemu"),
    ),
    BackendRow(
        "fvp-prebuilt",
        "fvp",
        "heliabuild.runner.backends.fvp_prebuilt",
        "prebuilt",
        "mlia-ethos-u",
        needs=("base", "fvp"),
    ),
    BackendRow("fvp-aot", "fvp", "heliabuild.runner.backends.fvp_aot", "aot", "heliabuild-aot", needs=("base", "fvp")),
)

BACKENDS = tuple(dict.fromkeys(row.backend for row in REGISTRY))
"""runner.json's `backend` values, the CLI's `--backend` choices and SCons's `HELIA_BACKEND` values."""
FVP_FIRMWARES = tuple(row.fvp_firmware for row in REGISTRY if row.fvp_firmware is not None)
"""The `--fvp-firmware` choices (`HELIA_FVP_FIRMWARE`), the first the default."""


def _load(row: BackendRow) -> Backend:
    return import_module(row.module).BACKEND


def backend_for(backend: str, fvp_firmware: str = FVP_FIRMWARES[0]) -> Backend:
    """The backend a runner build names: `backend` (one of BACKENDS) and, among the fvp backends,
    `fvp_firmware` (one of FVP_FIRMWARES). RunnerError naming the choices otherwise."""
    rows = [row for row in REGISTRY if row.backend == backend]
    if not rows:
        raise RunnerError(f"backend {backend!r} is not known; expected one of {', '.join(BACKENDS)}")
    if len(rows) > 1:
        rows = [row for row in rows if row.fvp_firmware == fvp_firmware]
        if not rows:
            raise RunnerError(
                f"{backend} firmware {fvp_firmware!r} is not known; expected "
                + " or ".join(repr(choice) for choice in FVP_FIRMWARES)
            )
    return _load(rows[0])


def backend_of(record: RunnerRecord) -> Backend:
    """The backend that runs the runner `record` (its `backend`, and for fvp its firmware's `source`)."""
    source = None if record.fvp is None else record.fvp.firmware.source
    for row in REGISTRY:
        if row.backend == record.backend and row.firmware_source in (None, source):
            return _load(row)
    raise RunnerError(f"backend {record.backend} is not available here", hint="rebuild the runner")
