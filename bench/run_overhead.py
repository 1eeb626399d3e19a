#!/usr/bin/env python3
"""Benchmark: time per measured invoke through the runner versus a bare LiteRT invoke loop.

The runner side builds a runner (heliabuild.runner.freeze.build_runner) of the synthetic KWS chain fenced
after operators 3 and 6 and runs the acquisition lifecycle's measurement (heliabuild.runner.lifecycle.measure,
carry, many measured invokes): each sample's `latency_s` is the time of the three segment invokes and the two
fence copies. The bare side is one LiteRT interpreter of the same model unfenced, with the same op resolver
(heliabuild.runner.litert.OP_RESOLVER), timing each `invoke()` with time.perf_counter in a loop. Both are
measured side by side in one run, alternating rounds, and the medians of the per-invoke times are reported.

Target: runner <= 1.2x the bare loop.

    python bench/run_overhead.py [--rounds 7] [--invokes 500]
"""

from __future__ import annotations

import argparse
import gc
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

from heliabuild.fence import rewrite_model_with_fences
from heliabuild.model import save_model
from heliabuild.runner.freeze import build_runner, load_runner
from heliabuild.runner.lifecycle import measure
from heliabuild.runner.litert import OP_RESOLVER, new_interpreter
from heliabuild.synth import synthesize

FENCES = (3, 6)
TARGET = 1.2


def runner_round(runner_json: Path) -> list[float]:
    """Per-invoke seconds of one lifecycle measurement (every measured sample's latency_s)."""
    gc.collect()
    return [sample.figures.latency_s for sample in measure(load_runner(runner_json)).samples]


def bare_round(model_bytes: bytes, invokes: int, warmups: int) -> list[float]:
    """Per-invoke seconds of a bare loop on one interpreter (inputs set once to zeros, outside the timer)."""
    gc.collect()
    interpreter = new_interpreter(model_bytes)
    for detail in interpreter.get_input_details():
        interpreter.set_tensor(detail["index"], np.zeros(detail["shape"], detail["dtype"]))
    for _ in range(warmups):
        interpreter.invoke()
    times = []
    for _ in range(invokes):
        start = time.perf_counter()
        interpreter.invoke()
        times.append(time.perf_counter() - start)
    return times


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--invokes", type=int, default=500, help="measured invokes per round")
    parser.add_argument("--warmups", type=int, default=20)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="heliabuild-run-overhead-") as folder:
        root = Path(folder)
        unfenced = root / "chain.tflite"
        save_model(synthesize("chain", seed=0), unfenced)
        fenced = root / "chain_fenced.tflite"
        sidecar = rewrite_model_with_fences(unfenced, FENCES).save(fenced)
        policy = {
            "defaults": {
                "fvp": {
                    "acquisition": {
                        "state": "carry",
                        "warmup_invokes": args.warmups,
                        "measured_invokes": args.invokes,
                    }
                }
            }
        }
        runner_json = build_runner(root / "runner", model=fenced, sidecar=sidecar, policy=policy)
        model_bytes = unfenced.read_bytes()

        runner_medians: list[float] = []
        bare_medians: list[float] = []
        for _ in range(args.rounds):
            runner_medians.append(statistics.median(runner_round(runner_json)))
            bare_medians.append(statistics.median(bare_round(model_bytes, args.invokes, args.warmups)))

    runner = statistics.median(runner_medians)
    bare = statistics.median(bare_medians)
    ratio = runner / bare
    print(f"model: synthetic KWS chain, fences after {list(FENCES)} (3 segments); op resolver {OP_RESOLVER.name}")
    print(f"rounds {args.rounds}, {args.invokes} measured invokes each ({args.warmups} warmups)")
    print(f"bare LiteRT invoke (unfenced)   median {bare * 1e6:8.1f} us per invoke")
    print(f"runner measure (fenced, 3 seg)  median {runner * 1e6:8.1f} us per invoke")
    print(f"ratio runner / bare: {ratio:.2f}x   (target <= {TARGET}x)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
