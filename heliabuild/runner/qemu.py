"""The `qemu-m55` backend: heliabuild's AOT firmware on QEMU's mps3-an547 (docs/firmware.md, docs/runner.md).

- `build_firmware(folder, model, plan, policy)` is the runner build's part: the module generated from the
  fenced model and its AOT plan (made for `mps3_an547`), the frozen policy compiled in, linked with the
  firmware library into `<folder>/firmware.elf`; the returned `FirmwareBuild` is what runner.json records.
  SCons builds the same files through its own nodes (heliabuild.scons.firmware) and passes them in.
- `measure_firmware(runner)` is the run stage's part: QEMU runs the ELF with `-icount shift=0` under a
  wall-clock timeout, the record stream is checked against the frozen runner (heliabuild.firmware.protocol),
  each sample's outputs are compared with LiteRT's reference kernels on the unfenced model, and the counts
  become instructions.

Instructions: the firmware counts SysTick ticks, 31.25 instructions each under `-icount shift=0`. The counts
are made from the cumulative readings (instructions at a reading = floor(ticks x 31.25)), so a sample's
segment counts add up to its invoke's count exactly; the resolution is one tick, 31.25 instructions.
"""

from __future__ import annotations

import itertools
import os
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from heliabuild.errors import RunnerError
from heliabuild.targets import table

BACKEND = "qemu-m55"
RUNTIME = "aot"
"""The runtime a qemu-m55 run executes: generated AOT code (the receipt's initialization is before_measurement)."""
TARGET = table().qemu_machine().name
ELF_FILE = "firmware.elf"
LAYOUT_FILE = "firmware_layout.json"
MODULE_PREFIX = "model"
COUNTER_SCOPE = "qemu_icount"
INSTRUCTIONS_PER_TICK_NUMERATOR = 125
INSTRUCTIONS_PER_TICK_DENOMINATOR = 4
RESOLUTION_INSTRUCTIONS = 31.25
DEFAULT_TIMEOUT_S = 120.0
INITIALIZATION = "before_measurement"


@dataclass(frozen=True)
class FirmwareBuild:
    """What runner.json records of a firmware: its ELF, the layout it was generated with, the toolchain."""

    elf: bytes
    layout: bytes
    arena_bytes: int
    input_bytes: tuple[int, ...]
    output_bytes: tuple[int, ...]
    output_names: tuple[str, ...]
    segments: int
    toolchain: str

    def to_json(self) -> dict[str, Any]:
        """runner.json's `firmware` section (the ELF and layout copied beside runner.json)."""
        from heliabuild.files import sha256_bytes

        return {
            "target": TARGET,
            "elf": {"file": ELF_FILE, "sha256": sha256_bytes(self.elf)},
            "layout": {"file": LAYOUT_FILE, "sha256": sha256_bytes(self.layout)},
            "toolchain": self.toolchain,
            "arena_bytes": self.arena_bytes,
            "input_bytes": list(self.input_bytes),
            "output_bytes": list(self.output_bytes),
            "output_names": list(self.output_names),
            "segments": self.segments,
        }


def firmware_policy(policy: Any) -> Any:
    """The FirmwarePolicy of a resolved policy document (`state`, `warmup_invokes`, `measured_invokes`)."""
    from heliabuild.firmware.config import FirmwarePolicy

    return FirmwarePolicy(policy["state"], int(policy["warmup_invokes"]), int(policy["measured_invokes"]))


def build_firmware(
    model: Path,
    plan: Path,
    policy: dict[str, Any],
    input_fills: Sequence[bytes | None],
    *,
    library_dir: Path | None = None,
) -> FirmwareBuild:
    """Generate, compile and link the firmware of `model` and its `plan` under `policy` (module docstring).
    The library is built in `library_dir` (default: a folder of the user's cache, shared by runner builds)."""
    from heliabuild.codegen.module import generate_module
    from heliabuild.firmware.build import build_library, check_memory_fit, link_firmware
    from heliabuild.firmware.config import CONFIG_SOURCE, firmware_config_source
    from heliabuild.firmware.toolchain import toolchain_version

    toolchain_version()  # a missing toolchain is refused before anything is written
    with tempfile.TemporaryDirectory(prefix="heliabuild-firmware-") as name:
        work = Path(name)
        module = generate_module(model, plan, MODULE_PREFIX, work / "module")
        check_memory_fit(module.layout, TARGET, str(model))
        if len(input_fills) != len(module.layout.inputs):
            raise RunnerError(f"{model}: {len(input_fills)} input fills for {len(module.layout.inputs)} model inputs")
        config = work / "module" / CONFIG_SOURCE
        config.write_bytes(firmware_config_source(MODULE_PREFIX, firmware_policy(policy), input_fills))
        library = build_library(library_dir or default_library_dir(), TARGET)
        elf = link_firmware(library, [module.source, config], [module.source.parent], work / ELF_FILE, TARGET)
        return firmware_from_files(model, elf, module.layout_json)


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


@dataclass(frozen=True)
class FirmwareMeasurement:
    """One run on QEMU, verified: per sample the instructions (total and per segment), the outputs, and the
    comparison with the reference; the receipt's counts."""

    state: str
    warmup_invokes: int
    measured_invokes: int
    instructions: list[dict[str, Any]]
    outputs: list[list[bytes]]
    verification: list[list[dict[str, Any]]]
    outputs_finite: list[bool]


def instructions_of(segment_ticks: Sequence[int]) -> dict[str, Any]:
    """The instruction counts of one sample from its per-segment ticks (module docstring)."""
    marks = [0]
    for ticks in segment_ticks:
        marks.append(marks[-1] + int(ticks))
    counts = [m * INSTRUCTIONS_PER_TICK_NUMERATOR // INSTRUCTIONS_PER_TICK_DENOMINATOR for m in marks]
    segments = [b - a for a, b in itertools.pairwise(counts)]
    return {"total": counts[-1], "segments": segments}


def _input_fills(runner: Any, sizes: list[int]) -> list[bytes | None]:
    return [runner.input_data(index, size) for index, size in enumerate(sizes)]


def unfenced_model(model_path: Path) -> bytes:
    """The bytes of the model with its fences stripped (the reference runs it)."""
    from heliabuild.fence import strip_fences
    from heliabuild.model.io import load_model, serialize

    return bytes(serialize(strip_fences(load_model(model_path))))


def expectation_of(runner: Any, firmware: dict[str, Any], model_sha256: str, npu_events: int | None = None) -> Any:
    """What the frozen firmware `firmware` (runner.json's record of it) must report, and the input fills it
    was built with: (heliabuild.firmware.protocol.Expectation, fills)."""
    from heliabuild.firmware.protocol import Expectation, input_crc32

    policy = runner.policy
    input_sizes = [int(size) for size in firmware["input_bytes"]]
    fills = _input_fills(runner, input_sizes)
    expectation = Expectation(
        segments=int(firmware["segments"]),
        input_count=len(input_sizes),
        output_bytes=tuple(int(size) for size in firmware["output_bytes"]),
        state=policy["state"],
        warmup_invokes=int(policy["warmup_invokes"]),
        measured_invokes=int(policy["measured_invokes"]),
        arena_bytes=int(firmware["arena_bytes"]),
        model_sha256=model_sha256,
        input_crc32=input_crc32(fills, input_sizes),
        npu_events=npu_events,
    )
    return expectation, fills


def verified_samples(
    runner: Any, run: Any, expectation: Any, fills: list[bytes | None]
) -> list[tuple[list[dict[str, Any]], bool]]:
    """Each sample's outputs of the verified `run` compared with LiteRT on the unfenced model through the same
    invokes, as the runner's `policy.verification` says (heliabuild.runner.verification), and whether its
    floating outputs are all finite; VerificationError above the bound."""
    from heliabuild.runner.verification import (
        check_sample,
        compare_outputs,
        outputs_finite,
        reference_outputs,
        resolve_verification,
    )

    verification = runner.policy.get("verification") or resolve_verification(None, BACKEND, compares_always=True)
    warmups = expectation.warmup_invokes
    reference = reference_outputs(
        unfenced_model(runner.model_path), fills, warmups + expectation.measured_invokes, verification["resolver"]
    )
    verified = []
    for sample in run.samples:
        expected = reference[warmups + sample.index]
        checks = check_sample(runner, sample.index, compare_outputs(expected, sample.outputs), verification)
        verified.append((checks, outputs_finite(expected, sample.outputs)))
    return verified


def measure_firmware(runner: Any, timeout_s: float = DEFAULT_TIMEOUT_S) -> FirmwareMeasurement:
    """Run the runner's firmware on QEMU and verify what it reports (module docstring). FirmwareError for a
    run the host cannot trust; VerificationError when an output differs from the reference by more than the
    policy's `verification.max_abs_diff`."""
    from heliabuild.firmware.protocol import read_run
    from heliabuild.firmware.qemu import run_on_qemu

    firmware = runner.document["firmware"]
    expectation, fills = expectation_of(runner, firmware, runner.model_sha256)
    run = read_run(
        run_on_qemu(runner.folder / firmware["elf"]["file"], timeout_s=timeout_s), expectation, str(runner.path)
    )
    verified = verified_samples(runner, run, expectation, fills)
    return FirmwareMeasurement(
        state=run.receipt.state,
        warmup_invokes=run.receipt.warmup_invokes,
        measured_invokes=run.receipt.measured_invokes,
        instructions=[instructions_of(sample.segment_ticks) for sample in run.samples],
        outputs=[list(sample.outputs) for sample in run.samples],
        verification=[checks for checks, _ in verified],
        outputs_finite=[finite for _, finite in verified],
    )
