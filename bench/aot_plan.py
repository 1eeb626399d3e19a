#!/usr/bin/env python3
"""Benchmark: planning the large synthetic model with a stream pool, and how much of it streams per pool size.

On the large synthetic model (about 1,000 operators, 50 MB of weights),
written to a file and planned for `apollo510_evb` with every constant stored
in PSRAM (the only memory it fits) and permitted to stream, this prints:

- the time of `write_plan` (load, plan, schedule, report, validate both
  documents against their schemas, write both files) with a 256 KiB DTCM
  stream pool, and of `make_plan` alone on the loaded model (plan, schedule,
  report), beside a plain `load_model` of the same file, and their ratios;
  medians of several rounds, measured side by side, alternating, since the
  machine is shared and noisy;
- a table over pool sizes: units, the bytes streamed, and the fraction of the
  permitted constant bytes that stream (the rest stay `direct`), from the plan
  each pool gives, and the largest permitted constant (a constant streams only
  in a pool it fits).

    python bench/aot_plan.py [--rounds 3] [--seed 0]
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
from pathlib import Path

from measure import timed

from heliabuild.aot.config import AotConfig
from heliabuild.aot.planner import make_plan
from heliabuild.aot.stage import write_plan
from heliabuild.model import load_model, save_model
from heliabuild.synth import synthesize

PLATFORM = "apollo510_evb"
RULES = [{"pattern": "*", "residency": "stream", "memory": "PSRAM"}]
TIMED_POOL = 256 * 1024
POOL_SIZES = (16 * 1024, 64 * 1024, 96 * 1024, 128 * 1024, 256 * 1024, 496 * 1024)


def _config(pool_bytes: int) -> AotConfig:
    return AotConfig(tensors=RULES, stream_pool={"memory": "DTCM", "bytes": pool_bytes})


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as folder:
        source = Path(folder) / "large.tflite"
        save_model(synthesize("large", seed=args.seed), source)
        size = source.stat().st_size
        loaded = load_model(source)
        operators = len(loaded.subgraphs[0].operators)

        def plan() -> None:
            write_plan(source, Path(folder) / "timed", "large", PLATFORM, _config(TIMED_POOL))

        def plan_in_memory() -> None:
            make_plan(loaded, PLATFORM, _config(TIMED_POOL), module_prefix="large")

        load_times, plan_times, memory_times = [], [], []
        for _ in range(args.rounds):
            load_times.append(timed(lambda: load_model(source)))
            plan_times.append(timed(plan))
            memory_times.append(timed(plan_in_memory))

        rows = []
        for pool_bytes in POOL_SIZES:
            written = write_plan(source, Path(folder) / f"pool_{pool_bytes}", "large", PLATFORM, _config(pool_bytes))
            document = json.loads(written.plan.read_text(encoding="utf-8"))
            permitted = [t for t in document["tensors"] if t["requested"] == "stream"]
            streamed = sum(t["bytes"] for t in permitted if t["residency"] == "stream")
            total = sum(t["bytes"] for t in permitted)
            largest = max(t["bytes"] for t in permitted)
            rows.append((pool_bytes, len(document["schedule"]["units"]), streamed, total, largest))

    load, planned = statistics.median(load_times), statistics.median(plan_times)
    in_memory = statistics.median(memory_times)
    print(f"model: {operators} operators, {size / 1e6:.1f} MB; platform {PLATFORM}, constants in PSRAM, pool in DTCM")
    print(f"{'load_model':<31} median {load * 1e3:8.1f} ms")
    print(f"{'make_plan, loaded model':<31} median {in_memory * 1e3:8.1f} ms   {in_memory / load:5.1f}x load_model")
    files = f"write_plan, {TIMED_POOL // 1024} KiB pool"
    print(f"{files:<31} median {planned * 1e3:8.1f} ms   {planned / load:5.1f}x load_model")
    print()
    print(f"{'pool':>10} {'units':>6} {'streamed bytes':>15} {'permitted bytes':>16} {'fraction':>9}")
    for pool_bytes, units, streamed, total, _largest in rows:
        print(f"{pool_bytes // 1024:>7} KiB {units:>6} {streamed:>15} {total:>16} {streamed / total:>9.2%}")
    print(f"(the largest permitted constant is {rows[0][4]} bytes: a smaller pool streams only smaller ones)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
