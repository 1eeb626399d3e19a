"""The Arm Corstone FVPs heliabuild runs, and which Vela output each can run (../shared/targets/fvp.md).

A target is one FVP executable: its Corstone platform, the Ethos-U it models, the MAC counts that NPU may be
configured with (the executables, the MAC counts and the platform mapping are the target table's,
heliabuild.targets), and how its command line spells the board (`mps3_board` on Corstone-300/310,
`mps4_board` on Corstone-320). `resolve_target(accelerator, choice)` picks the target for a Vela accelerator
config (`ethos-u55-128`) and an optional choice (`corstone-310`, or `corstone-300/ethos-u55-128` to name
the NPU configuration too) and refuses, before anything runs, an accelerator config the target cannot run:
another NPU, a MAC count the NPU has not, or MACs other than the configuration chosen (the Ethos-U driver
would refuse the command stream with `NPU config mismatch. npu.macs_per_cc=..., optimizer.macs_per_cc=...`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from heliabuild.errors import FvpError
from heliabuild.targets import table

MAC_COUNTS = dict(table().npus)
"""The MAC counts each Ethos-U may be configured with (`ethosu.num_macs`; the target table's)."""


@dataclass(frozen=True)
class FvpTarget:
    """One FVP executable: `executable` models `platform`'s Cortex-M with `npu`, its board prefix `board`."""

    executable: str
    platform: str
    npu: str

    @property
    def mps4(self) -> bool:
        """Corstone-320 is an MPS4 board: its options are spelled `mps4_board.*`."""
        return self.platform == "corstone-320"

    @property
    def board(self) -> str:
        return "mps4_board" if self.mps4 else "mps3_board"

    @property
    def mac_option(self) -> str:
        """The option that sets the NPU's MAC count."""
        return "mps4_board.subsystem.ethosu.num_macs" if self.mps4 else "ethosu.num_macs"

    @property
    def sse(self) -> str:
        """The SSE number in the prebuilt runner's folder name (`300`, `310`, `320`)."""
        return self.platform.rsplit("-", 1)[1]

    @property
    def npu_tag(self) -> str:
        """The NPU as the prebuilt runner's folder name spells it (`U55`)."""
        return self.npu.rsplit("-", 1)[1].upper()

    def to_json(self) -> dict[str, str]:
        return {"executable": self.executable, "platform": self.platform, "npu": self.npu}


TARGETS = tuple(FvpTarget(e.executable, e.platform, e.npu) for e in table().fvp_executables)
"""Every FVP executable by its platform and NPU (MLIA's Corstone backend, MLEK; the target table's)."""
PLATFORMS = tuple(dict.fromkeys(target.platform for target in TARGETS))
DEFAULT_PLATFORM = dict(table().fvp_default_platform)
"""The platform used when none is chosen."""

_ACCELERATOR = re.compile(r"^(ethos-u(?:55|65|85))-([0-9]+)$")
_CHOICE = re.compile(r"^(corstone-[0-9]+)(?:/(ethos-u(?:55|65|85))-([0-9]+))?$")


@dataclass(frozen=True)
class TargetConfig:
    """A target and the MAC count its NPU runs with (the Vela accelerator config's)."""

    target: FvpTarget
    macs: int

    @property
    def accelerator(self) -> str:
        return f"{self.target.npu}-{self.macs}"

    def to_json(self) -> dict[str, object]:
        return {**self.target.to_json(), "num_macs": self.macs, "accelerator": self.accelerator}


def parse_accelerator(accelerator: str, source: str) -> tuple[str, int]:
    """(`ethos-u55`, 128) of a Vela accelerator config; FvpError for one no Corstone FVP models."""
    match = _ACCELERATOR.match(accelerator)
    if match is None or int(match.group(2)) not in MAC_COUNTS[match.group(1)]:
        known = ", ".join(f"{npu}-{macs}" for npu, counts in MAC_COUNTS.items() for macs in counts)
        raise FvpError(f"{source}: Vela accelerator config {accelerator!r} is not one a Corstone FVP runs ({known})")
    return match.group(1), int(match.group(2))


def resolve_target(accelerator: str, choice: str | None = None, *, source: str = "fvp") -> TargetConfig:
    """The target that runs Vela output compiled for `accelerator`, on the platform `choice` names (default:
    DEFAULT_PLATFORM); FvpError, before anything runs, when that target cannot run it (module docstring)."""
    npu, macs = parse_accelerator(accelerator, source)
    platform = DEFAULT_PLATFORM[npu]
    if choice is not None:
        match = _CHOICE.match(choice)
        if match is None or match.group(1) not in PLATFORMS:
            raise FvpError(
                f"{source}: FVP target {choice!r} is not known; expected one of {', '.join(PLATFORMS)}, optionally "
                "with the NPU configuration (corstone-300/ethos-u55-128)"
            )
        platform = match.group(1)
        if match.group(2) is not None:
            configured = f"{match.group(2)}-{match.group(3)}"
            if configured != accelerator:
                raise FvpError(
                    f"{source}: the Vela output is compiled for {accelerator}, but FVP target {choice} runs "
                    f"{configured}; the Ethos-U driver would refuse its command stream (NPU config mismatch)",
                    hint=f"compile with --accelerator-config {configured}, or choose the target {platform}",
                )
    for target in TARGETS:
        if target.platform == platform and target.npu == npu:
            return TargetConfig(target, macs)
    runs = sorted({t.npu for t in TARGETS if t.platform == platform})
    raise FvpError(
        f"{source}: the Vela output is compiled for {accelerator}, but {platform} runs {' or '.join(runs)} only",
        hint=f"compile for {runs[0]}, or choose the target {DEFAULT_PLATFORM[npu]}",
    )


PLATFORM_TARGETS = dict(table().platform_fvp)
"""heliabuild's platform table name -> the FVP target that models it (the target table's `platforms.*.fvp`)."""


def platform_npu(platform: str) -> str | None:
    """The NPU of a platform of PLATFORM_TARGETS (`corstone300_ethos_u55` -> `ethos-u55`), else None."""
    if platform not in PLATFORM_TARGETS:
        return None
    return "ethos-u" + platform.rsplit("_u", 1)[1]


def platform_target(platform: str, source: str = "fvp") -> str:
    """The FVP target choice (`corstone-300`) of a platform of heliabuild's table; FvpError for a platform no
    Corstone FVP models (mps3_an547 is QEMU's machine, apollo510_evb a board)."""
    found = PLATFORM_TARGETS.get(platform)
    if found is None:
        raise FvpError(
            f"{source}: platform {platform!r} has no FVP; the fvp backend runs on {', '.join(PLATFORM_TARGETS)}",
            hint="choose one of those platforms (HELIA_AOT_PLATFORM, or platform= of HeliaPipeline)",
        )
    return found
