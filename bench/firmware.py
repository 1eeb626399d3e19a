#!/usr/bin/env python3
"""Benchmark: the qemu-m55 firmware, side by side in one run.

- the firmware library (kernels + harness): a cold build against a cached one (stamp hit);
- per firmware: generating the module from the model and its plan, and compiling + linking it;
- wall time per invoke on QEMU (the difference between a run of 1 + N and of 1 measured invokes, divided by
  N, so QEMU's start and the firmware's init cancel out) against LiteRT's per-invoke time on the host;
- each model's text, data and bss (arm-none-eabi-size, the arena and the stack included in bss) and its
  arena against the peak of live tensors;
- with SCons (three pipelines of the synthetic chain and residual networks): a no-op build with qemu-m55
  pipelines against the same build with litert pipelines, as interleaved pairs (target <= 1.2x), and a
  policy change on one qemu-m55 pipeline with the firmware library cached (target <= 5 s).

    python bench/firmware.py [--rounds 3] [--invokes 10]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

import numpy as np

from heliabuild.aot.stage import write_plan
from heliabuild.codegen.module import generate_module
from heliabuild.fence import rewrite_model_with_fences, strip_fences
from heliabuild.firmware.build import build_library, link_firmware
from heliabuild.firmware.config import CONFIG_SOURCE, FirmwarePolicy, firmware_config_source
from heliabuild.firmware.qemu import run_on_qemu
from heliabuild.model import load_model, save_model, serialize
from heliabuild.runner.litert import new_interpreter
from heliabuild.synth import synthesize

PLATFORM = "mps3_an547"
SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "models"


def models(folder: Path) -> dict[str, Path]:
    found = {}
    for kind in ("chain", "residual"):
        path = folder / f"{kind}.tflite"
        save_model(synthesize(kind, seed=0), path)
        found[f"synth {kind}"] = path
    fenced = folder / "residual_fenced.tflite"
    rewrite_model_with_fences(found["synth residual"], [3, 7]).save(fenced)
    found["synth residual, 2 fences"] = fenced
    for name in ("kws_ref_model.tflite", "pretrainedResnet_quant.tflite"):
        if (SHARED / name).is_file():
            found[name.removesuffix(".tflite")] = SHARED / name
    return found


def firmware(library: Path, model: Path, folder: Path, measured: int) -> tuple[Path, float, float, dict]:
    start = time.perf_counter()
    write_plan(model, folder, "net", PLATFORM)
    module = generate_module(model, folder / "net_plan.json", "net", folder / "gen")
    generated = time.perf_counter() - start
    (folder / "gen" / CONFIG_SOURCE).write_bytes(
        firmware_config_source("net", FirmwarePolicy("carry", 0, measured), [None] * len(module.layout.inputs))
    )
    start = time.perf_counter()
    elf = link_firmware(library, [module.source, folder / "gen" / CONFIG_SOURCE], [folder / "gen"], folder / "fw.elf")
    linked = time.perf_counter() - start
    return elf, generated, linked, module.layout.arena.to_json()


def qemu_seconds(elf: Path) -> float:
    start = time.perf_counter()
    run = run_on_qemu(elf, timeout_s=300)
    assert run.exit_status == 0, run.diagnostics
    return time.perf_counter() - start


def litert_seconds(model: Path, invokes: int) -> float:
    """Per-invoke seconds of LiteRT on the unfenced model (the fences are identity copies)."""
    interpreter = new_interpreter(bytes(serialize(strip_fences(load_model(model)))))
    for detail in interpreter.get_input_details():
        interpreter.set_tensor(detail["index"], np.zeros(detail["shape"], detail["dtype"]))
    interpreter.invoke()
    start = time.perf_counter()
    for _ in range(invokes):
        interpreter.invoke()
    return (time.perf_counter() - start) / invokes


def sizes(elf: Path) -> tuple[int, int, int]:
    size = shutil.which("arm-none-eabi-size") or "arm-none-eabi-size"
    row = subprocess.run([size, str(elf)], capture_output=True, text=True, check=True).stdout.splitlines()[1].split()
    return int(row[0]), int(row[1]), int(row[2])


SCONSTRUCT = """\
import json
env = Environment(tools=["default", "helia"], toolpath=[{site_tools!r}])
for name, options in json.load(open("options.json")).items():
    env.HeliaPipeline(name, options.pop("model"), build_dir="build/" + name, **options)
"""


def scons_project(folder: Path, backend: str, measured: int = 1) -> Path:
    import json

    folder.mkdir(parents=True, exist_ok=True)
    site_tools = Path(__file__).resolve().parents[1] / "site_scons" / "site_tools"
    (folder / "SConstruct").write_text(SCONSTRUCT.format(site_tools=str(site_tools)))
    for kind in ("chain", "residual"):
        if not (folder / f"{kind}.tflite").exists():
            save_model(synthesize(kind, seed=0), folder / f"{kind}.tflite")
    policy = {"defaults": {"fvp": {"acquisition": {"measured_invokes": measured}}}}
    pipelines = {
        "a": {"model": "chain.tflite", "fences": [3, 6], "backend": backend, "policy": policy},
        "b": {"model": "residual.tflite", "fences": [2, 7], "backend": backend},
        "c": {"model": "chain.tflite", "backend": backend},
    }
    (folder / "options.json").write_text(json.dumps(pipelines))
    return folder


def scons_seconds(folder: Path) -> float:
    from heliabuild.kernels.native import scons_command

    start = time.perf_counter()
    subprocess.run([*scons_command(), "-Q"], cwd=folder, check=True, capture_output=True)
    return time.perf_counter() - start


def scons_rows(root: Path, rounds: int) -> None:
    qemu, litert = scons_project(root / "scons-qemu", "qemu-m55"), scons_project(root / "scons-litert", "litert")
    scons_seconds(qemu)
    scons_seconds(litert)
    ratios, qemu_noop, litert_noop = [], [], []
    for _ in range(max(rounds, 3)):
        q, lr = scons_seconds(qemu), scons_seconds(litert)
        qemu_noop.append(q)
        litert_noop.append(lr)
        ratios.append(q / lr)
    print()
    print(
        f"no-op build, 3 pipelines: qemu-m55 median {statistics.median(qemu_noop):.2f} s, litert "
        f"{statistics.median(litert_noop):.2f} s; ratio min {min(ratios):.2f}x median {statistics.median(ratios):.2f}x "
        f"max {max(ratios):.2f}x (target <= 1.2x)"
    )
    changes = []
    for round_ in range(max(rounds, 3)):
        scons_project(qemu, "qemu-m55", measured=2 + round_)
        changes.append(scons_seconds(qemu))
    print(
        f"policy change on one qemu-m55 pipeline (relink, runner, run), library cached: median "
        f"{statistics.median(changes):.2f} s, max {max(changes):.2f} s (target <= 5 s)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--invokes", type=int, default=10)
    parser.add_argument("--no-scons", action="store_true", help="skip the SCons rows")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="heliabuild-bench-firmware-") as name:
        root = Path(name)
        cold, cached = [], []
        for round_ in range(args.rounds):
            folder = root / f"library-{round_}"
            start = time.perf_counter()
            library = build_library(folder)
            cold.append(time.perf_counter() - start)
            start = time.perf_counter()
            build_library(folder)
            cached.append(time.perf_counter() - start)
        cold_s, cached_ms = statistics.median(cold), statistics.median(cached) * 1e3
        print(f"firmware library: cold median {cold_s:.2f} s, cached {cached_ms:.2f} ms")
        print()
        header = f"{'model':28} {'generate':>9} {'link':>7} {'qemu/invoke':>12} {'litert/invoke':>14} {'ratio':>8}"
        print(header + f" {'text':>8} {'data':>6} {'bss':>8} {'arena':>8} {'peak':>8}")
        for label, model in models(root).items():
            generate, link, per_qemu, per_litert = [], [], [], []
            for round_ in range(args.rounds):
                one, g, lk, arena = firmware(library, model, root / f"{label}-{round_}-one", 1)
                many, *_ = firmware(library, model, root / f"{label}-{round_}-many", 1 + args.invokes)
                generate.append(g)
                link.append(lk)
                per_qemu.append((qemu_seconds(many) - qemu_seconds(one)) / args.invokes)
                per_litert.append(litert_seconds(model, 50))
            text, data, bss = sizes(one)
            q, lr = statistics.median(per_qemu), statistics.median(per_litert)
            print(
                f"{label:28} {statistics.median(generate) * 1e3:7.0f}ms {statistics.median(link) * 1e3:5.0f}ms "
                f"{q * 1e3:10.2f}ms {lr * 1e6:12.1f}us {q / lr:7.0f}x {text:8} {data:6} {bss:8} "
                f"{arena['bytes']:8} {arena['peak_live_bytes']:8}"
            )
        if not args.no_scons:
            scons_rows(root, args.rounds)


if __name__ == "__main__":
    main()
