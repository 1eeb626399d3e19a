"""The example application of examples/module_app/: what it fills its inputs with, and reading what it prints
on QEMU (helpers of tests/test_module_build.py and tests/test_scons_module.py)."""

from __future__ import annotations

import re
from pathlib import Path

from heliabuild.firmware.qemu import run_on_qemu
from heliabuild.model import load_model, serialize
from heliabuild.runner.verification import compare_outputs, reference_outputs

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "module_app"
RUNS = 3


def input_bytes(count: int, position: int = 0) -> bytes:
    """main.c's fill: byte i of input k is i * 7 + 3 + k * 13, modulo 256."""
    return bytes((i * 7 + 3 + position * 13) & 0xFF for i in range(count))


def run_example(elf: Path) -> tuple[str, list[bytes], list[int]]:
    """The example's version line, each run's first output and each run's instruction count, from QEMU."""
    run = run_on_qemu(elf, timeout_s=120)
    assert run.exit_status == 0, (run.console, run.diagnostics)
    lines = run.console.splitlines()
    outputs = [bytes.fromhex(m[1]) for m in (re.fullmatch(r"run \d+ output 0: ([0-9a-f]*)", x) for x in lines) if m]
    counts = [int(m[1]) for m in (re.fullmatch(r"run \d+ instructions: (\d+)", x) for x in lines) if m]
    assert len(outputs) == len(counts) == RUNS, run.console
    return lines[0], outputs, counts


def assert_equals_litert(model: Path, outputs: list[bytes]) -> None:
    """Each run's output equals LiteRT's reference kernels on the same input bytes."""
    loaded = load_model(model)
    graph = loaded.subgraphs[0]
    tensor = graph.tensors[graph.inputs[0]]
    size = 1
    for extent in tensor.shape:
        size *= int(extent)
    reference = reference_outputs(bytes(serialize(loaded)), [input_bytes(size)])[0]
    for output in outputs:
        checks = compare_outputs(reference, [output])
        assert [(c.max_abs_diff, c.differing) for c in checks] == [(0, 0)], checks
