"""The Helium (MVE) bodies are in the firmware and exact: the conv, depthwise, fully connected, ADD/MUL, pool,
BATCH_MATMUL and TRANSPOSE_CONV objects of the MVE library hold MVE instructions (arm-none-eabi-objdump -d
-marmv8.1-m.main), the +nomve library none, float code none in either (MVE lanes flush subnormals), and the
four-lane requantization (helia_fixed_mve.h) gives the scalar helia_fixed.h result for every rounding on QEMU's
Cortex-M55."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import numpy as np
from conftest import require_firmware_tools
from helpers.skips import require_tool

OBJDUMP = "arm-none-eabi-objdump"
MVE_INSTRUCTION = re.compile(r"^\s+[0-9a-f]+:\s+(?:[0-9a-f]{4} ?){1,2}\s+(v\S+)[ \t]+[^;\n]*\bq[0-7]\b", re.MULTILINE)
"""An instruction line of objdump -d whose operands name a Q register (every MVE vector instruction does)."""
FLOAT_VECTOR = re.compile(r"\.f(16|32)\s+q\d")


def _functions(listing: str) -> dict[str, str]:
    """objdump -d's listing split by function symbol."""
    parts = re.split(r"^[0-9a-f]+ <([^>]+)>:\n", listing, flags=re.MULTILINE)
    return dict(zip(parts[1::2], parts[2::2], strict=True))


def _disassemble(obj: Path) -> str:
    """objdump -dr -marmv8.1-m.main (MVE decoded, calls shown by their relocations)."""
    require_tool(OBJDUMP, "Debian: binutils-arm-none-eabi")
    command = [OBJDUMP, "-dr", "-marmv8.1-m.main", str(obj)]
    return subprocess.run(command, capture_output=True, text=True, check=True).stdout


def _mnemonics(text: str) -> set[str]:
    return {match.group(1) for match in MVE_INSTRUCTION.finditer(text)}


def _reached(functions: dict[str, str], name: str) -> str:
    """The listing of `name` and of every function of the same object it calls, transitively."""
    seen, todo = set(), [name]
    while todo:
        current = todo.pop()
        if current in seen or current not in functions:
            continue
        seen.add(current)
        todo += re.findall(r"R_ARM_THM_(?:CALL|JUMP24)\s+(\S+)", functions[current])
    return "".join(functions[f] for f in sorted(seen))


def test_conv_depthwise_and_fully_connected_bodies_hold_mve_instructions(firmware_library: Path) -> None:
    objects = firmware_library.parent / "objects"
    functions = _functions(_disassemble(objects / "ops_conv_mve.o"))
    # objdump spells VMLADAVA as its alias vmlava; vmulh/vrmulh are the single rounding, vqrdmulh the double.
    expected = {
        "helia_ops_fully_connected_mve": {"vmlava.s8", "vldrb.u8", "vmulh.s32", "vrmulh.s32"},
        "helia_ops_conv2d_in_place_mve": {"vmlava.s8", "vqrdmulh.s32", "vrshl.s32"},
        "helia_ops_conv2d_im2col_mve": {"vmlava.s8", "vstrbt.8", "vqrdmulh.s32"},
        "helia_ops_depthwise_conv2d_mve": {"vmullb.s16", "vmullt.s16", "vldrb.s16", "vqrdmulh.s32"},
    }
    # The body that entry picks through a table: FULLY_CONNECTED's held-vector pass of depth 64 (each row's
    # VMLADAV, the per-tensor VQDMULH by a scalar).
    tabled = {"held_pass_4": {"vmlav.s8", "vmlava.s8", "vqdmulh.s32", "vrshl.s32"}}
    for name, mnemonics in {**expected, **tabled}.items():
        found = _mnemonics(_reached(functions, name))
        assert mnemonics <= found, (name, sorted(found))
    # DEPTHWISE_CONV_2D 3x3 one channel's plane at a time: the input into planes by a load of eight channels and a
    # byte scatter per row, each tap a widening load and a VMLA by the weight (a scalar, no VMUL), the outputs
    # requantized by scalars and scattered back.
    assert re.search(r"R_ARM_THM_(CALL|JUMP24)\s+helia_ops_depthwise_plane_mve\b",
                     functions["helia_ops_depthwise_conv2d_mve"])  # fmt: skip
    # GCC may give a static function a clone's name (plane_store_right.isra.0): the name before the dot counts.
    plane = {
        name.split(".")[0]: listing
        for name, listing in _functions(_disassemble(objects / "ops_depthwise_plane_mve.o")).items()
    }
    bodies = {
        "plane_gather_8": {"vldrb.s16", "vstrb.16"},
        "plane_quad_sums": {"vldrb.s32", "vmla.s32", "vstrw.32"},
        "plane_column_sums": {"vldrb.s32", "vmla.s32", "vstrw.32"},
        "plane_store_right": {"vqrdmulh.s32", "vqadd.s32", "vrshl.s32", "vstrb.32"},
        "plane_store_left": {"vshl.s32", "vqrdmulh.s32", "vstrb.32"},
    }
    for name, mnemonics in bodies.items():
        found = _mnemonics(plane[name])
        assert mnemonics <= found and ("vmul.i32" not in found or "sums" not in name), (name, sorted(found))
    # ADD and MUL of equal extents: the four-lane double rounding.
    assert {"vqrdmulh.s32", "vrshl.s32", "vldrbt.s32"} <= _mnemonics(_disassemble(objects / "ops_elementwise.o"))
    # MAX_POOL_2D across int8 lanes; AVERAGE_POOL_2D's int16 sums and its division as a high multiply.
    assert {"vmax.s8", "vldrbt.s16", "vmovlb.s16", "vmulh.u32"} <= _mnemonics(_disassemble(objects / "ops_pool.o"))
    # BATCH_MATMUL's four columns (VMLA by the lhs element) and TRANSPOSE_CONV's folded dot product.
    assert {"vmla.s32", "vqrdmulh.s32", "vmlava.s8", "vaddva.s8"} <= _mnemonics(_disassemble(objects / "ops_matmul.o"))
    # The run entries of ops_conv.o call them.
    calls = _disassemble(objects / "ops_conv.o")
    for name in expected:
        assert re.search(rf"R_ARM_THM_(CALL|JUMP24)\s+{name}\b", calls), name


def test_the_nomve_library_holds_no_mve_instruction(firmware_library_nomve: Path) -> None:
    objects = firmware_library_nomve.parent / "objects"
    for obj in sorted(objects.glob("*.o")):
        assert not _mnemonics(_disassemble(obj)), obj.name
    assert not re.search(r"R_ARM_THM_(CALL|JUMP24)\s+helia_ops_\w+_mve", _disassemble(objects / "ops_conv.o"))
    assert not _functions(_disassemble(objects / "ops_conv_mve.o"))
    assert not _functions(_disassemble(objects / "ops_depthwise_plane_mve.o"))


def test_float_code_stays_off_the_vector_registers(firmware_library: Path) -> None:
    """QUANTIZE, DEQUANTIZE and the float contracts (DIV, SQUARED_DIFFERENCE) keep gradual underflow."""
    objects = firmware_library.parent / "objects"
    for name in ("ops_elementwise.o", "ops_contracts.o", "detess.o", "ops_softmax.o"):
        assert not FLOAT_VECTOR.search(_disassemble(objects / name)), name


# ---- the four-lane requantization against the scalar one, on QEMU ------------------------------------------

EDGES = [-(2**31), -(2**31) + 1, -(2**30), -(2**30) - 1, -1, 0, 1, 2**30, 2**30 - 1, 2**31 - 1]


def _cases(rng: np.random.Generator, count: int) -> list[tuple[int, int, int]]:
    """(x, multiplier, shift) triples: the int32 extremes and rounding ties, small and random values."""
    cases = []
    multipliers = [0, 2**30, 2**30 + 1, 2**31 - 1, 1518500250]
    for x in EDGES:
        for multiplier in multipliers:
            for shift in (-31, -30, -17, -2, -1, 0, 1, 2, 15, 30):
                cases.append((x, multiplier, shift))
    while len(cases) < count:
        shift = int(rng.integers(-31, 31))
        multiplier = int(rng.choice([0, int(rng.integers(2**30, 2**31))]))
        magnitude = int(rng.integers(0, 32))
        x = int(rng.integers(-(2**magnitude), 2**magnitude)) if magnitude < 31 else int(rng.integers(-(2**31), 2**31))
        if rng.integers(4) == 0 and shift < 0:  # an exact tie of the final rounding
            x = max(min((int(rng.integers(-64, 64)) * 2 + 1) << (-shift - 1), 2**31 - 1), -(2**31))
        cases.append((x, multiplier, shift))
    return cases


def _c_int(value: int) -> str:
    return "(-2147483647 - 1)" if value == -(2**31) else str(value)


def test_four_lane_requantization_equals_the_scalar_one_on_qemu(tmp_path: Path, firmware_library: Path) -> None:
    require_firmware_tools()
    from heliabuild.firmware.build import link_firmware
    from heliabuild.firmware.qemu import run_on_qemu

    cases = _cases(np.random.default_rng(21), 4000)
    cases += [(0, 0, 0)] * (-len(cases) % 4)
    rows = ",\n".join(f"    {{{_c_int(x)}, {m}, {s}}}" for x, m, s in cases)
    source = tmp_path / "requantize.c"
    source.write_text(
        f"""#include <stdint.h>
#include "helia_fixed.h"
#include "helia_fixed_mve.h"
#include "semihosting.h"

static const int32_t cases[{len(cases)}][3] = {{
{rows}
}};

int main(void)
{{
    int failures = 0;
    int i;
    int k;
    for (i = 0; i < {len(cases)}; i += 4) {{
        int32_t x[4], m[4], s[4], single[4], twice[4];
        for (k = 0; k < 4; ++k) {{
            x[k] = cases[i + k][0];
            m[k] = cases[i + k][1];
            s[k] = cases[i + k][2];
        }}
        vst1q_s32(single, helia_mbqm_single_x4(vld1q_s32(x), vld1q_s32(m), vld1q_s32(s)));
        vst1q_s32(twice, helia_mbqm_double_x4(vld1q_s32(x), vld1q_s32(m), vld1q_s32(s)));
        for (k = 0; k < 4; ++k) {{
            failures += single[k] != helia_mbqm_single(x[k], m[k], s[k]);
            failures += twice[k] != helia_mbqm_double(x[k], m[k], s[k]);
        }}
    }}
    helia_semihost_write(failures == 0 ? "requantize OK\\n" : "requantize FAILED\\n");
    return failures != 0;
}}
"""
    )
    elf = link_firmware(firmware_library, [source], [], tmp_path / "requantize.elf")
    run = run_on_qemu(elf, timeout_s=60)
    assert run.console.strip().splitlines()[-1] == "requantize OK", run.console[-2000:]
    assert run.exit_status == 0
