"""What the two backends running heliabuild's AOT firmware (qemu-m55 on QEMU, fvp-aot on an FVP) share: the
firmware a runner build links (`FirmwareBuild`, read back from its linked files), the policy compiled into it,
the firmware library's folder, and what the frozen firmware must report when it runs (`expectation_of`).

Neither backend imports the other: both import this module, heliabuild.firmware (the harness, the toolchain,
the record stream) and heliabuild.runner.verification (the outputs against LiteRT).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from heliabuild.errors import RunnerError
from heliabuild.files import sha256_bytes
from heliabuild.runner.record import FileRecord, FirmwareImage, RunnerPolicy

MODULE_PREFIX = "model"


@dataclass(frozen=True)
class FirmwareBuild:
    """A linked firmware: its ELF, the layout it was generated with, the interface the host checks, the
    toolchain."""

    elf: bytes
    layout: bytes
    arena_bytes: int
    input_bytes: tuple[int, ...]
    output_bytes: tuple[int, ...]
    output_names: tuple[str, ...]
    segments: int
    toolchain: str

    def image(self, target: str, elf_file: str, layout_file: str) -> FirmwareImage:
        """What runner.json records of it, for the firmware `target`, its ELF and layout copied as `elf_file`
        and `layout_file` beside runner.json."""
        return FirmwareImage(
            target=target,
            elf=FileRecord(elf_file, sha256_bytes(self.elf)),
            layout=FileRecord(layout_file, sha256_bytes(self.layout)),
            toolchain=self.toolchain,
            arena_bytes=self.arena_bytes,
            input_bytes=self.input_bytes,
            output_bytes=self.output_bytes,
            output_names=self.output_names,
            segments=self.segments,
        )


def firmware_policy(policy: RunnerPolicy) -> Any:
    """The FirmwarePolicy (heliabuild.firmware.config) of a frozen policy: state, warmups, measured invokes."""
    from heliabuild.firmware.config import FirmwarePolicy

    return FirmwarePolicy(policy.state, policy.warmup_invokes, policy.measured_invokes)


def firmware_from_files(model: Path, elf: Path, layout_json: Path) -> FirmwareBuild:
    """The FirmwareBuild of a linked `elf` generated from `model`, described by its `layout_json`."""
    from heliabuild.documents import parse_json, read_regular_file
    from heliabuild.firmware.toolchain import toolchain_version
    from heliabuild.model.graph import tensor_name
    from heliabuild.model.io import load_model

    layout = read_regular_file(layout_json, "firmware layout", error=RunnerError)
    document = parse_json(layout, str(layout_json), "firmware layout", error=RunnerError)
    try:
        tensors = load_model(model).subgraphs[0].tensors
        outputs = document["outputs"]
        return FirmwareBuild(
            elf=read_regular_file(elf, "firmware", error=RunnerError, limit=64 << 20),
            layout=layout,
            arena_bytes=int(document["arena"]["bytes"]),
            input_bytes=tuple(int(entry["bytes"]) for entry in document["inputs"]),
            output_bytes=tuple(int(entry["bytes"]) for entry in outputs),
            output_names=tuple(
                tensor_name(tensors[entry["tensor"]]) or f"output_{k}" for k, entry in enumerate(outputs)
            ),
            segments=int(document["fences"]) + 1,
            toolchain=toolchain_version(),
        )
    except (KeyError, TypeError, IndexError, ValueError):
        raise RunnerError(f"{layout_json}: not the layout heliabuild.codegen writes") from None


def default_library_dir() -> Path:
    """Where the CLI keeps the firmware library: `$HELIA_FIRMWARE_CACHE`, else `~/.cache/heliabuild/firmware`."""
    configured = os.environ.get("HELIA_FIRMWARE_CACHE")
    if configured:
        return Path(configured)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "heliabuild" / "firmware"


def input_fills(runner: Any, sizes: Sequence[int]) -> list[bytes | None]:
    """The bytes each graph input of `runner` (heliabuild.runner.freeze.Runner) is filled with (None: zeros)."""
    return [runner.input_data(index, size) for index, size in enumerate(sizes)]


def expectation_of(
    runner: Any, firmware: FirmwareImage, model_sha256: str, npu_events: int | None = None
) -> tuple[Any, list[bytes | None]]:
    """What the frozen `firmware` of `runner` (heliabuild.runner.freeze.Runner) must report, and the input fills
    it was built with: (heliabuild.firmware.protocol.Expectation, fills)."""
    from heliabuild.firmware.protocol import Expectation, input_crc32

    policy = runner.policy
    sizes = list(firmware.input_bytes)
    fills = input_fills(runner, sizes)
    expectation = Expectation(
        segments=firmware.segments,
        input_count=len(sizes),
        output_bytes=firmware.output_bytes,
        state=policy.state,
        warmup_invokes=policy.warmup_invokes,
        measured_invokes=policy.measured_invokes,
        arena_bytes=firmware.arena_bytes,
        model_sha256=model_sha256,
        input_crc32=input_crc32(fills, sizes),
        npu_events=npu_events,
    )
    return expectation, fills
