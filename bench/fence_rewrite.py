#!/usr/bin/env python3
"""Benchmark: fencing a large model versus a plain load+save of the same model.

Prints, on the large synthetic model (about 1,000 operators, 50 MB of weights):
the time of load+save, the time of fencing it at 10 cuts (load, rewrite,
serialize, write model and sidecar), their ratio, and the peak memory each
allocates as a multiple of the model's size. Both are measured side by side
in one run, alternating, and the median of several rounds is reported, since
the machine is shared and noisy.

Targets: fence <= 1.5x load+save; fence peak memory <= 3x the model size.

    python bench/fence_rewrite.py [--rounds 5] [--seed 0]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
from pathlib import Path

from measure import peak_bytes, timed

from heliabuild.fence import rewrite_model_with_fences
from heliabuild.model import load_model, save_model
from heliabuild.synth import synthesize


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as folder:
        source = Path(folder) / "large.tflite"
        save_model(synthesize("large", seed=args.seed), source)
        size = source.stat().st_size
        operators = len(load_model(source).subgraphs[0].operators)
        step = operators // 11
        after_ops = [step * (k + 1) for k in range(10)]

        def load_and_save() -> None:
            save_model(load_model(source), Path(folder) / "copy.tflite")

        def fence() -> None:
            rewrite_model_with_fences(source, after_ops).save(Path(folder) / "fenced.tflite")

        plain_times, fence_times = [], []
        for _ in range(args.rounds):
            plain_times.append(timed(load_and_save))
            fence_times.append(timed(fence))
        plain_peak = peak_bytes(load_and_save)
        fence_peak = peak_bytes(fence)

    plain, fenced = statistics.median(plain_times), statistics.median(fence_times)
    print(f"model: {operators} operators, {size / 1e6:.1f} MB, fences after {after_ops}")
    print(f"load+save        median {plain * 1e3:8.1f} ms   peak memory {plain_peak / size:4.2f}x model size")
    print(f"fence (10 cuts)  median {fenced * 1e3:8.1f} ms   peak memory {fence_peak / size:4.2f}x model size")
    print(f"ratio fence / load+save: {fenced / plain:.2f}x   (target <= 1.5x)")
    print(f"fence peak memory: {fence_peak / size:.2f}x model size   (target <= 3x)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
