#!/usr/bin/env python3
"""Benchmark: fence, runner build and aot-plan on long chains of tiny operators, against a plain load+save.

For each size (10,000 and 100,000 operators by default) of heliabuild.synth's long chain (alternating ADD
and RESHAPE on 4-byte tensors, so the operator count dominates), written to a file, this times, side by
side and alternating, as the `heliabuild` commands run them:

- load+save: `load_model` and `save_model` of the file, the baseline (every stage loads the model and
  writes about as much);
- fence: `rewrite_model_with_fences` with one fence per `--every` operators, then `save` (model and
  sidecar), so the number of fences grows with the model;
- runner: `build_runner` on the fenced model and its sidecar (one segment model per fence and one more);
- aot-plan: `write_plan` of the fenced model for apollo510_evb (plan and report, validated and written).

It prints medians, each stage's ratio to load+save at the same size, and how each stage grows from the
smallest size to the largest: linear stages grow as the operator count does (10x for the defaults).

    python bench/scale.py [--sizes 10000,100000] [--every 100] [--rounds 1]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
from collections.abc import Callable
from pathlib import Path

from measure import timed

from heliabuild.aot.stage import write_plan
from heliabuild.fence import rewrite_model_with_fences
from heliabuild.model import load_model, save_model
from heliabuild.runner.freeze import build_runner
from heliabuild.synth import long_chain_model

PLATFORM = "apollo510_evb"
STAGES = ("load+save", "fence", "runner", "aot-plan")


def _actions(folder: Path, operators: int, every: int) -> dict[str, Callable[[], object]]:
    """The timed actions of one size, on files in `folder` (the fenced model is written once up front)."""
    source = folder / "chain.tflite"
    save_model(long_chain_model(operators=operators), source)
    cuts = list(range(every - 1, operators - 1, every))
    fenced = folder / "chain_fenced.tflite"
    sidecar = rewrite_model_with_fences(source, cuts).save(fenced)
    return {
        "load+save": lambda: save_model(load_model(source), folder / "copy.tflite"),
        "fence": lambda: rewrite_model_with_fences(source, cuts).save(folder / "timed_fenced.tflite"),
        "runner": lambda: build_runner(folder / "runner", model=fenced, policy=None, sidecar=sidecar),
        "aot-plan": lambda: write_plan(fenced, folder / "aot", "chain", PLATFORM),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,100000", help="operator counts, comma-separated")
    parser.add_argument("--every", type=int, default=100, help="operators per fence")
    parser.add_argument("--rounds", type=int, default=1)
    args = parser.parse_args()
    sizes = [int(part) for part in args.sizes.split(",")]

    medians: dict[int, dict[str, float]] = {}
    for operators in sizes:
        with tempfile.TemporaryDirectory() as folder:
            actions = _actions(Path(folder), operators, args.every)
            times: dict[str, list[float]] = {stage: [] for stage in STAGES}
            for _ in range(args.rounds):
                for stage in STAGES:
                    times[stage].append(timed(actions[stage]))
        medians[operators] = {stage: statistics.median(values) for stage, values in times.items()}
        fences = len(range(args.every - 1, operators - 1, args.every))
        print(f"long chain, {operators} operators, {fences} fences (median of {args.rounds}):")
        base = medians[operators]["load+save"]
        for stage in STAGES:
            seconds = medians[operators][stage]
            print(f"  {stage:<10} {seconds:8.2f} s   {seconds / base:5.2f}x load+save")

    smallest, largest = sizes[0], sizes[-1]
    if largest != smallest:
        print(f"growth from {smallest} to {largest} operators ({largest / smallest:.0f}x as many):")
        for stage in STAGES:
            growth = medians[largest][stage] / medians[smallest][stage]
            print(f"  {stage:<10} {growth:5.1f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
