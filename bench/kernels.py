#!/usr/bin/env python3
"""Benchmark: heliabuild's kernels versus a plain copy of the same bytes, side by side in one run.

Stream-split (the fence's identity copy) is measured three ways against its
baseline on the same pairs of one allocation:

- Python `StreamSplitPlan.run()` (checked once by `stream_split_prepare`)
  versus `numpy.copyto` of each pair's bytes;
- Python `stream_split_copy` (checks on every call, then copies), same baseline;
- C `helia_stream_split_copy` through ctypes (descriptors bound once; the C
  kernel re-checks every call) versus `ctypes.memmove` of each pair.

Each row reports the median time per call over rounds in which kernel and
baseline alternate, the throughput in GB/s (bytes copied / time) and the
ratio kernel time / baseline time. Small pairs measure per-call overhead
(checks and, for C, the ctypes call); large pairs measure bandwidth.

Kernel sections are listed in SECTIONS; a section returns `Row`s, so another
kernel (Detess) adds its own function there.

    python bench/kernels.py [--rounds 41] [--build-dir build/kernels]
"""

from __future__ import annotations

import argparse
import ctypes
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from heliabuild.kernels.native import load_host_library
from heliabuild.kernels.stream_split import NativeStreamSplit, stream_split_copy, stream_split_prepare

ROOT = Path(__file__).resolve().parents[1]
SAMPLE_SECONDS = 0.001
"""Each sample repeats a call until about this long, so timer resolution does not matter."""


@dataclass(frozen=True)
class Row:
    """One kernel-versus-baseline comparison on one case."""

    section: str
    kernel: str
    baseline: str
    case: str
    nbytes: int
    kernel_seconds: float
    baseline_seconds: float

    @property
    def ratio(self) -> float:
        return self.kernel_seconds / self.baseline_seconds


@dataclass(frozen=True)
class Context:
    """What every section gets: the parsed arguments and the loaded host library."""

    rounds: int
    library: ctypes.CDLL


def _calls_per_sample(action: Callable[[], object]) -> int:
    calls = 1
    while True:
        start = time.perf_counter()
        for _ in range(calls):
            action()
        if time.perf_counter() - start >= SAMPLE_SECONDS or calls >= 1 << 20:
            return calls
        calls *= 2


def side_by_side(actions: dict[str, Callable[[], object]], rounds: int) -> dict[str, float]:
    """Median seconds per call of each action, alternating them round by round; the order rotates each round
    so that no action always runs first (on a cold cache) or after the same neighbour."""
    counts = {name: _calls_per_sample(action) for name, action in actions.items()}
    samples: dict[str, list[float]] = {name: [] for name in actions}
    names = list(actions)
    for round_index in range(rounds):
        shift = round_index % len(names)
        for name in names[shift:] + names[:shift]:
            action = actions[name]
            calls = counts[name]
            start = time.perf_counter()
            for _ in range(calls):
                action()
            samples[name].append((time.perf_counter() - start) / calls)
    return {name: statistics.median(values) for name, values in samples.items()}


# --- stream-split ----------------------------------------------------------------------------------

STREAM_SPLIT_CASES: dict[str, list[int]] = {
    "1 pair x 64 B": [64],
    "4 pairs x 1 KiB": [1024] * 4,
    "64 pairs x 4 KiB": [4096] * 64,
    "1 pair x 4 MiB": [4 << 20],
    "4 pairs x 1 MiB": [1 << 20] * 4,
}
"""Pair byte sizes of each case: small (per-call overhead) to large (bandwidth)."""


def _carve(sizes: list[int]) -> tuple[bytearray, list[np.ndarray], list[np.ndarray]]:
    """One allocation holding every input, then every output (int8 tensors, 64-byte aligned offsets)."""
    spans = [-(-size // 64) * 64 for size in sizes]
    arena = bytearray(2 * sum(spans) + 64)
    base = np.frombuffer(arena, dtype=np.uint8)
    start = (-base.ctypes.data) % 64
    inputs, outputs = [], []
    offset = start
    for size, span in zip(sizes, spans, strict=True):
        inputs.append(base[offset : offset + size].view(np.int8))
        offset += span
    for size, span in zip(sizes, spans, strict=True):
        outputs.append(base[offset : offset + size].view(np.int8))
        offset += span
    base[:] = np.random.default_rng(0).integers(0, 256, base.size, dtype=np.uint8)
    return arena, inputs, outputs


def stream_split_rows(context: Context) -> list[Row]:
    native = NativeStreamSplit(context.library)
    rows = []
    for case, sizes in STREAM_SPLIT_CASES.items():
        _arena, inputs, outputs = _carve(sizes)
        plan = stream_split_prepare(inputs, outputs)
        bound = native.bind(inputs, outputs)
        pairs = list(zip(inputs, outputs, strict=True))
        pointers = [(o.ctypes.data, i.ctypes.data, i.nbytes) for i, o in pairs]

        def numpy_copy(pairs: list[tuple[np.ndarray, np.ndarray]] = pairs) -> None:
            for source, destination in pairs:
                np.copyto(destination, source)

        def memmove(pointers: list[tuple[int, int, int]] = pointers) -> None:
            for destination, source, count in pointers:
                ctypes.memmove(destination, source, count)

        def checked_copy(inputs: list[np.ndarray] = inputs, outputs: list[np.ndarray] = outputs) -> None:
            stream_split_copy(inputs, outputs)

        medians = side_by_side(
            {
                "plan.run": plan.run,
                "stream_split_copy": checked_copy,
                "numpy.copyto": numpy_copy,
                "C copy": bound.copy,
                "ctypes.memmove": memmove,
            },
            context.rounds,
        )
        for source, destination in pairs:  # the copies really happened
            assert destination.tobytes() == source.tobytes()
        total = sum(sizes)
        for kernel, baseline in (
            ("plan.run", "numpy.copyto"),
            ("stream_split_copy", "numpy.copyto"),
            ("C copy", "ctypes.memmove"),
        ):
            rows.append(Row("stream-split", kernel, baseline, case, total, medians[kernel], medians[baseline]))
    return rows


# --- detess ----------------------------------------------------------------------------------------
# Detess (heliabuild.kernels.detess): the C kernel and the numpy reference versus ctypes.memmove of the
# same payload bytes (logical scalars x width), on MLA-tiled inputs. See docs/detess.md.

DETESS_CASES = [
    # (case, dtype, logical shape [N, H, W, C], tile [D, H, W, C], padding, output: "dense" | "pitched" | "chw")
    ("i8 1Kx1Kx64 c16", "INT8", (1, 1024, 1024, 64), (1, 8, 8, 16), "COMPACT", "dense"),
    ("i8 1Kx1Kx64 c64", "INT8", (1, 1024, 1024, 64), (1, 8, 8, 64), "COMPACT", "dense"),
    ("i8 4Kx4Kx3 c3", "INT8", (1, 4096, 4096, 3), (1, 8, 16, 3), "COMPACT", "dense"),
    ("i8 1Kx1Kx24 pad16", "INT8", (1, 1024, 1024, 24), (1, 8, 8, 16), "PAD_TO_16", "dense"),
    ("i8 256x256x64 c16", "INT8", (1, 256, 256, 64), (1, 8, 8, 16), "COMPACT", "dense"),
    ("i8 pitched c16", "INT8", (1, 1024, 1024, 64), (1, 8, 8, 16), "COMPACT", "pitched"),
    ("i8 to CHW c16", "INT8", (1, 1024, 1024, 64), (1, 8, 8, 16), "COMPACT", "chw"),
    ("bf16 1Kx1Kx32 c16", "BF16", (1, 1024, 1024, 32), (1, 8, 8, 16), "COMPACT", "dense"),
    ("bf16 4Kx4Kx1 c1", "BF16", (1, 4096, 4096, 1), (1, 8, 64, 1), "COMPACT", "dense"),
    ("bf16 2Kx2Kx3 c3", "BF16", (1, 2048, 2048, 3), (1, 8, 16, 3), "COMPACT", "dense"),
    ("bf16 pitched c16", "BF16", (1, 1024, 1024, 32), (1, 8, 8, 16), "COMPACT", "pitched"),
    ("bf16 to CHW c16", "BF16", (1, 1024, 1024, 32), (1, 8, 8, 16), "COMPACT", "chw"),
    ("i8 32x32x16 c16", "INT8", (1, 32, 32, 16), (1, 8, 8, 16), "COMPACT", "dense"),
    ("bf16 32x32x8 pitch", "BF16", (1, 32, 32, 8), (1, 8, 8, 8), "COMPACT", "pitched"),
]
"""Large shapes (25-67 MB payload: input plus output well beyond the 32 MB L3 of the machine measured), one
cache-sized row (4 MB) and two small ones (16 KB: per-call overhead); dense (contiguous channels), pitched
(rows 64 bytes apart: contiguous channels, strided rows) and CHW (scattered channels) outputs."""

DETESS_NUMPY_ROUNDS = 3
"""The numpy reference takes about a second per 64 MB call; it gets fewer alternating rounds."""


def _aligned(nbytes: int, alignment: int = 64) -> np.ndarray:
    whole = np.empty(nbytes + alignment, dtype=np.uint8)
    start = (-whole.ctypes.data) % alignment
    return whole[start : start + nbytes]


def detess_rows(context: Context) -> list[Row]:
    """Detess C and numpy versus memmove of the payload (logical scalars x width) on tiled inputs.

    The C kernel is called through ctypes with its bindings built once (it re-checks them on every call);
    the numpy reference through `execute`. Both are checked against each other once per case. Preparation
    (`check_inference`, numpy and C through its ctypes binding) is recorded separately, in the section
    "detess prepare", as a ratio to one checked C execution of the same case.
    """
    from heliabuild.kernels.detess import DetessTensorSpec, DType, MlaTiled, Padding, Request, Strided
    from heliabuild.kernels.detess import check_inference as detess_check
    from heliabuild.kernels.detess import execute as detess_execute
    from heliabuild.kernels.detess.c_kernel import BufferC, CDetess

    kernel = CDetess(context.library)
    run_c = context.library.helia_detess_execute
    rng = np.random.default_rng(0)
    rows: list[Row] = []
    prepared: list[Row] = []
    for case, dtype_name, shape, tile, padding, output in DETESS_CASES:
        dtype = DType[dtype_name]
        width = dtype.width
        _, h, w, c = shape
        layout = {
            "dense": None,
            "pitched": Strided((0, w * c * width + 64, c * width, width)),
            "chw": Strided((0, w * width, width, h * w * width)),
        }[output]
        request = Request(
            [DetessTensorSpec(shape, dtype, MlaTiled((-1, 1, 2, 3), tile, Padding[padding]))],
            [DetessTensorSpec(shape, dtype, layout)],
        )
        plan = detess_check(request)
        cplan = kernel.check_inference(request)
        source = _aligned(plan.input_bytes)
        source[:] = rng.integers(0, 256, source.size, dtype=np.uint8)
        target = _aligned(plan.output_bytes)
        check = _aligned(plan.output_bytes)
        target[:] = check[:] = 0
        inputs, outputs = (BufferC * 1)(), (BufferC * 1)()
        inputs[0].data, inputs[0].capacity = source.ctypes.data, source.size
        outputs[0].data, outputs[0].capacity = target.ctypes.data, target.size
        payload = plan.element_count * width
        copy_from, copy_to = _aligned(payload), _aligned(payload)
        copy_from[:] = 1
        copy_to[:] = 0

        def c_detess(storage=cplan.storage, inputs=inputs, outputs=outputs) -> None:
            if run_c(storage, inputs, 1, outputs, 1):
                raise RuntimeError("C Detess refused the bench bindings")

        def numpy_detess(plan=plan, source=source, check=check) -> None:
            if detess_execute(plan, [source], [check]) is not None:
                raise RuntimeError("numpy Detess refused the bench bindings")

        def memmove(to=copy_to.ctypes.data, origin=copy_from.ctypes.data, count=payload) -> None:
            ctypes.memmove(to, origin, count)

        c_times = side_by_side({"C detess": c_detess, "ctypes.memmove": memmove}, context.rounds)
        numpy_times = side_by_side(
            {"numpy detess": numpy_detess, "ctypes.memmove": memmove}, max(min(context.rounds, DETESS_NUMPY_ROUNDS), 1)
        )
        if target.tobytes() != check.tobytes():
            raise RuntimeError(f"detess {case}: C and numpy outputs differ")
        for kernel_name, times in (("C detess", c_times), ("numpy detess", numpy_times)):
            rows.append(
                Row("detess", kernel_name, "ctypes.memmove", case, payload, times[kernel_name], times["ctypes.memmove"])
            )
        prepare_times = side_by_side(
            {
                "numpy check": lambda request=request: detess_check(request),
                "C check": lambda request=request: kernel.check_inference(request),
                "C detess": c_detess,
            },
            context.rounds,
        )
        prepared.extend(
            Row("detess prepare", name, "C detess", case, payload, prepare_times[name], prepare_times["C detess"])
            for name in ("numpy check", "C check")
        )
    return rows + prepared


SECTIONS: list[Callable[[Context], list[Row]]] = [stream_split_rows, detess_rows]


def _format_time(seconds: float) -> str:
    return f"{seconds * 1e6:9.2f} us" if seconds < 1e-3 else f"{seconds * 1e3:9.3f} ms"


def report(rows: list[Row]) -> str:
    """The rows as a table: times, GB/s and the ratio, grouped by section."""
    header = (
        f"{'case':<18} {'kernel':<18} {'time':>12} {'GB/s':>7}   {'baseline':<15} {'time':>12} {'GB/s':>7} {'ratio':>7}"
    )
    lines = []
    for section in dict.fromkeys(row.section for row in rows):
        lines += ["", f"{section}", header, "-" * len(header)]
        for row in (r for r in rows if r.section == section):
            lines.append(
                f"{row.case:<18} {row.kernel:<18} {_format_time(row.kernel_seconds):>12} "
                f"{row.nbytes / row.kernel_seconds / 1e9:7.2f}   {row.baseline:<15} "
                f"{_format_time(row.baseline_seconds):>12} {row.nbytes / row.baseline_seconds / 1e9:7.2f} "
                f"{row.ratio:6.2f}x"
            )
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rounds", type=int, default=41)
    parser.add_argument("--build-dir", type=Path, default=ROOT / "build" / "kernels")
    args = parser.parse_args()
    context = Context(rounds=args.rounds, library=load_host_library(args.build_dir))
    rows = [row for section in SECTIONS for row in section(context)]
    print(f"kernels benchmark: median of {args.rounds} alternating rounds, library {args.build_dir}")
    print(report(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
