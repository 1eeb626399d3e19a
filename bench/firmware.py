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
  policy change on one qemu-m55 pipeline with the firmware library cached (target <= 5 s);
- `--instructions`: the kernels' Helium bodies against their portable bodies, side by side in one run: the
  firmware library built with `-mcpu=cortex-m55` and with `-mcpu=cortex-m55+nomve`, per layer and per model
  MACs per instruction, QEMU wall time per invoke and each firmware's text size. Per layer, the module is
  compiled with HELIA_PROFILE_OPERATORS and a hook that reads SysTick after each operator (raw at the edges of
  each layer's window, so that only the hook's call and return fall inside it; the printing and the 64-bit
  readings that count the wraps fall outside), the mean over 1 + `--invokes` invokes; per model, the plain
  firmware's invoke count. These are
  instruction counts on QEMU (`-icount shift=0`, at SysTick's resolution of 31.25 instructions), not cycles.

    python bench/firmware.py [--rounds 3] [--invokes 10] [--instructions]
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


# ---- instructions per MAC: Helium (MVE) bodies against the portable bodies (+nomve) -------------------------

INSTRUCTIONS_PER_TICK = 31.25
"""Under -icount shift=0 SysTick advances once per 31.25 instructions (docs/firmware.md, "Counting")."""

PROFILE_SOURCE = r"""
#include <stdint.h>
#include "counter.h"
#include "semihosting.h"

/* SysTick's current value: it counts down through 2^24 values, one tick per 31.25 instructions. */
#define SYST_CVR (*(volatile const uint32_t *)0xE000E018u)

static uint32_t raw_last;
static uint64_t wide_last;

static void write_number(uint64_t value)
{
    char text[24];
    int i = 23;
    text[i] = '\0';
    do {
        text[--i] = (char)('0' + (int)(value % 10u));
        value /= 10u;
    } while (value != 0u);
    helia_semihost_write(text + i);
}

/* A layer's window runs from the raw reading at the end of the previous call to the one at the start of this
 * call, so that only a few instructions of the hook fall inside it; the 64-bit readings outside the window
 * give the wraps the raw difference (modulo 2^24) cannot. */
void helia_profile_operator(int32_t op)
{
    const uint32_t raw_now = SYST_CVR;
    const uint64_t wide_now = helia_counter_read();
    if (op >= 0) {
        /* The wide difference less the raw one is a few ticks from a multiple of 2^24 (modulo 2^64). */
        const uint64_t low = (raw_last - raw_now) & 0xFFFFFFu;
        const uint64_t wraps = (wide_now - wide_last - low + 0x800000u) & ~(uint64_t)0xFFFFFFu;
        helia_semihost_write("@op ");
        write_number((uint64_t)op);
        helia_semihost_write(" ");
        write_number(low + wraps);
        helia_semihost_write("\n");
    }
    wide_last = helia_counter_read();
    raw_last = SYST_CVR;
}
"""


def instruction_models(folder: Path) -> dict[str, Path]:
    found = {}
    for name in ("kws_ref_model.tflite", "pretrainedResnet_quant.tflite"):
        if (SHARED / name).is_file():
            found[name.removesuffix(".tflite")] = SHARED / name
    for kind in ("kws", "chain", "residual"):
        path = folder / f"synth-{kind}.tflite"
        save_model(synthesize(kind, seed=0), path)
        found[f"synth {kind}"] = path
    return found


def layer_macs(model: Path) -> list[tuple[str, str, int]]:
    """Per operator: its type, what it is (the targets' classes) and its MACs (0 where it has none)."""
    from heliabuild.aot.facts import model_facts

    rows = []
    for op in model_facts(load_model(model)):
        data, weights, out = op.input(0), op.input(1), op.output
        macs, what = 0, op.op_type
        if op.op_type in ("CONV_2D", "DEPTHWISE_CONV_2D") and weights is not None and out is not None:
            _, kh, kw, ic = weights.shape
            depthwise = op.op_type == "DEPTHWISE_CONV_2D"
            macs = out.element_count * kh * kw * (1 if depthwise else ic)
            in_c = data.shape[-1] if data is not None else 0
            what = f"{'dw ' if depthwise else ''}{kh}x{kw} {in_c}->{out.shape[-1]}"
        elif op.op_type == "FULLY_CONNECTED" and weights is not None and out is not None:
            macs = out.element_count * weights.shape[1]
            what = f"fc {weights.shape[1]}->{weights.shape[0]}"
        rows.append((op.op_type, what, macs))
    return rows


def profiled(library: Path, model: Path, folder: Path, mve: bool, profile: bool, measured: int = 1) -> Path:
    write_plan(model, folder, "net", PLATFORM)
    module = generate_module(model, folder / "net_plan.json", "net", folder / "gen")
    (folder / "gen" / CONFIG_SOURCE).write_bytes(
        firmware_config_source("net", FirmwarePolicy("carry", 0, measured), [None] * len(module.layout.inputs))
    )
    sources = [module.source, folder / "gen" / CONFIG_SOURCE]
    if profile:
        (folder / "gen" / "profile.c").write_text(PROFILE_SOURCE)
        sources.append(folder / "gen" / "profile.c")
    defines = ("HELIA_PROFILE_OPERATORS",) if profile else ()
    return link_firmware(library, sources, [folder / "gen"], folder / "fw.elf", mve=mve, defines=defines)


def layer_instructions(elf: Path) -> dict[int, float]:
    """Per operator, the mean over every invoke the firmware runs (warm-up and measured): one tick is 31.25
    instructions, and the tick's phase moves between invokes, so the mean is finer than one reading."""
    run = run_on_qemu(elf, timeout_s=300)
    assert run.exit_status == 0, run.diagnostics
    found: dict[int, list[float]] = {}
    for line in run.console.splitlines():
        if line.startswith("@op "):
            _, op, ticks = line.split()
            found.setdefault(int(op), []).append(int(ticks) * INSTRUCTIONS_PER_TICK)
    return {op: statistics.fmean(counts) for op, counts in found.items()}


def invoke_instructions(elf: Path) -> float:
    from heliabuild.firmware.records import read_records

    run = run_on_qemu(elf, timeout_s=300)
    assert run.exit_status == 0, run.diagnostics
    (sample,) = read_records(run.console).of_kind("sample")
    return int(sample.fields[1]) * INSTRUCTIONS_PER_TICK  # type: ignore[arg-type]


def _ratio(macs: float, instructions: float) -> str:
    return f"{macs / instructions:6.2f}" if macs and instructions else f"{'-':>6}"


def instruction_rows(root: Path, invokes: int) -> None:
    libraries = {mve: build_library(root / "libraries", mve=mve) for mve in (False, True)}
    summary = []
    print("per layer, instructions on QEMU (-icount shift=0), not cycles; MAC/instr = MACs per instruction")
    print(f"{'model':30} {'op':>3} {'layer':22} {'MACs':>9} {'+nomve instr':>13} {'MVE instr':>11} "
          f"{'+nomve':>7} {'MVE':>7} {'x':>6}")  # fmt: skip
    for label, model in instruction_models(root).items():
        layers = layer_macs(model)
        counts = {
            mve: layer_instructions(profiled(libraries[mve], model, root / f"{label}-{mve}-layers", mve, True, invokes))
            for mve in (False, True)
        }
        for index, (_, what, macs) in enumerate(layers):
            scalar, vector = counts[False].get(index, 0.0), counts[True].get(index, 0.0)
            speed = f"{scalar / vector:5.1f}x" if vector else f"{'-':>6}"
            print(f"{label:30} {index:3} {what:22} {macs:9} {scalar:13.0f} {vector:11.0f} "
                  f"{_ratio(macs, scalar):>7} {_ratio(macs, vector):>7} {speed:>6}")  # fmt: skip
        totals, walls, texts = {}, {}, {}
        for mve in (False, True):
            one = profiled(libraries[mve], model, root / f"{label}-{mve}-one", mve, False)
            many = profiled(libraries[mve], model, root / f"{label}-{mve}-many", mve, False, 1 + invokes)
            totals[mve] = invoke_instructions(one)
            walls[mve] = (qemu_seconds(many) - qemu_seconds(one)) / invokes
            texts[mve] = sizes(one)[0]
        summary.append((label, sum(macs for *_, macs in layers), totals, walls, texts))
    print()
    print("per model: MACs per instruction on QEMU (not cycles), QEMU wall time per invoke, firmware text bytes")
    print(f"{'model':30} {'MACs':>9} {'+nomve instr':>13} {'MVE instr':>11} {'+nomve':>7} {'MVE':>7} "
          f"{'wall +nomve':>12} {'wall MVE':>9} {'text +nomve':>12} {'text MVE':>9}")  # fmt: skip
    for label, macs, totals, walls, texts in summary:
        print(f"{label:30} {macs:9} {totals[False]:13.0f} {totals[True]:11.0f} {_ratio(macs, totals[False]):>7} "
              f"{_ratio(macs, totals[True]):>7} {walls[False] * 1e3:10.2f}ms {walls[True] * 1e3:7.2f}ms "
              f"{texts[False]:12} {texts[True]:9}")  # fmt: skip
    medians = {mve: statistics.median(macs / totals[mve] for _, macs, totals, *_ in summary) for mve in (False, True)}
    print(f"median MACs per instruction over the models: +nomve {medians[False]:.2f}, MVE {medians[True]:.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--invokes", type=int, default=10)
    parser.add_argument("--no-scons", action="store_true", help="skip the SCons rows")
    parser.add_argument("--instructions", action="store_true", help="only the MVE against +nomve instruction rows")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="heliabuild-bench-firmware-") as name:
        root = Path(name)
        if args.instructions:
            instruction_rows(root, args.invokes)
            return
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
