"""Detess layout: the documented tiled bytes, hard-coded here, through the numpy reference and the C kernel.

Each example below is copied verbatim from docs/detess-bf16-layout.md or
docs/detess.md (a test checks the documents still say so); `..` marks padding,
which the tests fill with random garbage that must not reach the output.
"""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest
from helpers.detess_goldens import Guarded, linear_golden, load_c_detess, tiled_golden

from heliabuild.kernels.detess import (
    DetessTensorSpec,
    DType,
    MlaTiled,
    Padding,
    Request,
    check_inference,
    execute,
)

DOCS = Path(__file__).resolve().parents[1] / "docs"


@pytest.fixture(scope="module")
def c_detess(host_kernel_library: Path):
    return load_c_detess(host_kernel_library)


def bf16_value(w: int, c: int) -> int:
    """The worked example's value of [w, c]: low byte 0x20*w + c, high byte 0x80 + 0x20*w + c."""
    return ((0x80 + 0x20 * w + c) << 8) | (0x20 * w + c)


C1_COMPACT = """
      0: 00 80 20 A0 .. .. .. .. .. .. .. .. .. .. .. ..
"""
C1_PAD16 = """
      0: 00 .. .. .. .. .. .. .. .. .. .. .. .. .. .. ..
     16: 80 .. .. .. .. .. .. .. .. .. .. .. .. .. .. ..
     32: 20 .. .. .. .. .. .. .. .. .. .. .. .. .. .. ..
     48: A0 .. .. .. .. .. .. .. .. .. .. .. .. .. .. ..
"""
C3_COMPACT = """
      0: 00 01 02 80 81 82 20 21 22 A0 A1 A2 .. .. .. ..
"""
C3_PAD16 = """
      0: 00 01 02 .. .. .. .. .. .. .. .. .. .. .. .. ..
     16: 80 81 82 .. .. .. .. .. .. .. .. .. .. .. .. ..
     32: 20 21 22 .. .. .. .. .. .. .. .. .. .. .. .. ..
     48: A0 A1 A2 .. .. .. .. .. .. .. .. .. .. .. .. ..
"""
C17_COMPACT = """
      0: 00 01 02 03 04 05 06 07 08 09 0A 0B 0C 0D 0E 0F
     16: 80 81 82 83 84 85 86 87 88 89 8A 8B 8C 8D 8E 8F
     32: 20 21 22 23 24 25 26 27 28 29 2A 2B 2C 2D 2E 2F
     48: A0 A1 A2 A3 A4 A5 A6 A7 A8 A9 AA AB AC AD AE AF
     64: 10 90 30 B0 .. .. .. .. .. .. .. .. .. .. .. ..
"""
C17_PAD16 = """
      0: 00 01 02 03 04 05 06 07 08 09 0A 0B 0C 0D 0E 0F
     16: 80 81 82 83 84 85 86 87 88 89 8A 8B 8C 8D 8E 8F
     32: 20 21 22 23 24 25 26 27 28 29 2A 2B 2C 2D 2E 2F
     48: A0 A1 A2 A3 A4 A5 A6 A7 A8 A9 AA AB AC AD AE AF
     64: 10 .. .. .. .. .. .. .. .. .. .. .. .. .. .. ..
     80: 90 .. .. .. .. .. .. .. .. .. .. .. .. .. .. ..
     96: 30 .. .. .. .. .. .. .. .. .. .. .. .. .. .. ..
    112: B0 .. .. .. .. .. .. .. .. .. .. .. .. .. .. ..
"""

# docs/detess.md, "Tile order": INT8 [W=3, C=5], tile [1, 1, 2, 2], Compact; value [w, c] = 0x10*w + c.
TILE_ORDER = """
      0: 00 01 10 11 .. .. .. .. .. .. .. .. .. .. .. ..
     16: 20 21 .. .. .. .. .. .. .. .. .. .. .. .. .. ..
     32: 02 03 12 13 .. .. .. .. .. .. .. .. .. .. .. ..
     48: 22 23 .. .. .. .. .. .. .. .. .. .. .. .. .. ..
     64: 04 14 .. .. .. .. .. .. .. .. .. .. .. .. .. ..
     80: 24 .. .. .. .. .. .. .. .. .. .. .. .. .. .. ..
"""
# docs/detess.md, "Outer slices": INT8 [N=2, W=2, C=3], axes (-1, -1, 1, 2), tile [1, 1, 2, 2];
# value [n, w, c] = 0x40*n + 0x10*w + c.
OUTER_COMPACT = """
      0: 00 01 10 11 .. .. .. .. .. .. .. .. .. .. .. ..
     16: 02 12 .. .. .. .. .. .. .. .. .. .. .. .. .. ..
     32: 40 41 50 51 .. .. .. .. .. .. .. .. .. .. .. ..
     48: 42 52 .. .. .. .. .. .. .. .. .. .. .. .. .. ..
"""
OUTER_PAD16 = """
      0: 00 01 .. .. .. .. .. .. .. .. .. .. .. .. .. ..
     16: 10 11 .. .. .. .. .. .. .. .. .. .. .. .. .. ..
     32: 02 .. .. .. .. .. .. .. .. .. .. .. .. .. .. ..
     48: 12 .. .. .. .. .. .. .. .. .. .. .. .. .. .. ..
     64: 40 41 .. .. .. .. .. .. .. .. .. .. .. .. .. ..
     80: 50 51 .. .. .. .. .. .. .. .. .. .. .. .. .. ..
     96: 42 .. .. .. .. .. .. .. .. .. .. .. .. .. .. ..
    112: 52 .. .. .. .. .. .. .. .. .. .. .. .. .. .. ..
"""
# docs/detess.md, "Mapped-axis permutation": INT8 [C=2, H=2, W=3], axes (-1, 1, 2, 0), tile [1, 2, 2, 2];
# value [c, h, w] = 0x40*c + 0x10*h + w.
PERMUTED = """
      0: 00 40 01 41 10 50 11 51 .. .. .. .. .. .. .. ..
     16: 02 42 12 52 .. .. .. .. .. .. .. .. .. .. .. ..
"""


def parse(table: str) -> list[int | None]:
    """The documented bytes, None for padding (`..`)."""
    cells: list[int | None] = []
    for line in table.strip().splitlines():
        offset, _, rest = line.partition(":")
        assert int(offset) == len(cells), line
        cells += [None if cell == ".." else int(cell, 16) for cell in rest.split()[:16]]
    return cells


def filled(cells: list[int | None], seed: int) -> np.ndarray:
    rng = random.Random(seed)
    return np.array([rng.randrange(256) if c is None else c for c in cells], dtype=np.uint8)


BF16_EXAMPLES = [
    (1, (1, 1, 2, 1), Padding.COMPACT, C1_COMPACT),
    (1, (1, 1, 2, 1), Padding.PAD_TO_16, C1_PAD16),
    (3, (1, 1, 2, 3), Padding.COMPACT, C3_COMPACT),
    (3, (1, 1, 2, 3), Padding.PAD_TO_16, C3_PAD16),
    (17, (1, 1, 2, 16), Padding.COMPACT, C17_COMPACT),
    (17, (1, 1, 2, 16), Padding.PAD_TO_16, C17_PAD16),
]
INT8_EXAMPLES = [
    ((3, 5), (-1, -1, 0, 1), (1, 1, 2, 2), Padding.COMPACT, TILE_ORDER, lambda w, c: 0x10 * w + c),
    ((2, 2, 3), (-1, -1, 1, 2), (1, 1, 2, 2), Padding.COMPACT, OUTER_COMPACT, lambda n, w, c: 0x40 * n + 0x10 * w + c),
    ((2, 2, 3), (-1, -1, 1, 2), (1, 1, 2, 2), Padding.PAD_TO_16, OUTER_PAD16, lambda n, w, c: 0x40 * n + 0x10 * w + c),
    ((2, 2, 3), (-1, 1, 2, 0), (1, 2, 2, 2), Padding.COMPACT, PERMUTED, lambda c, h, w: 0x40 * c + 0x10 * h + w),
]


def _bf16_case(channels, tile, padding):
    values = np.array([[bf16_value(w, c) for c in range(channels)] for w in range(2)], dtype=np.uint16)
    layout = MlaTiled((-1, -1, 0, 1), tile, padding)
    request = Request(
        [DetessTensorSpec((2, channels), DType.BF16, layout)], [DetessTensorSpec((2, channels), DType.BF16)]
    )
    return values, request


def _int8_case(shape, axes, tile, padding, value):
    values = np.zeros(shape, dtype=np.uint8)
    for index in np.ndindex(*shape):
        values[index] = value(*index)
    request = Request(
        [DetessTensorSpec(shape, DType.INT8, MlaTiled(axes, tile, padding))], [DetessTensorSpec(shape, DType.INT8)]
    )
    return values, request


ALL_EXAMPLES = [
    pytest.param(*_bf16_case(c, t, p), table, id=f"bf16-C{c}-{p.name}") for c, t, p, table in BF16_EXAMPLES
] + [
    pytest.param(*_int8_case(s, a, t, p, v), table, id=f"int8-{'x'.join(map(str, s))}-{p.name}-{a}")
    for s, a, t, p, table, v in INT8_EXAMPLES
]


@pytest.mark.parametrize(
    ("document", "tables"),
    [
        ("detess-bf16-layout.md", [C1_COMPACT, C1_PAD16, C3_COMPACT, C3_PAD16, C17_COMPACT, C17_PAD16]),
        ("detess.md", [TILE_ORDER, OUTER_COMPACT, OUTER_PAD16, PERMUTED]),
    ],
)
def test_documents_state_the_tested_bytes(document: str, tables: list[str]) -> None:
    lines = (DOCS / document).read_text(encoding="utf-8").splitlines()
    for table in tables:
        for row in table.strip("\n").splitlines():
            assert any(line.startswith(row.rstrip()) for line in lines), f"{document} no longer shows: {row}"


@pytest.mark.parametrize(("values", "request_", "table"), ALL_EXAMPLES)
def test_documented_bytes_detess_to_their_values(values, request_, table, c_detess) -> None:
    cells = parse(table)
    plan = check_inference(request_)
    assert plan.input_bytes == len(cells)
    cplan = c_detess.check_inference(request_)
    assert (cplan.input_bytes, cplan.output_bytes) == (plan.input_bytes, plan.output_bytes)
    width = values.dtype.itemsize
    expected = values.astype(f"<u{width}").tobytes()  # contiguous, little-endian words
    for seed in range(3):  # the padding holds different garbage each time
        tiled = Guarded(len(cells), 16)
        tiled.view[:] = filled(cells, seed)
        before = tiled.view.copy()
        for run in (execute, c_detess.execute):
            out = Guarded(plan.output_bytes, width)
            assert run(plan if run is execute else cplan, [tiled.view], [out.view]) is None
            assert out.view.tobytes() == expected
            assert out.guards_intact() and tiled.guards_intact()
            assert (tiled.view == before).all(), "Detess modified its input (padding included)"


@pytest.mark.parametrize(("values", "request_", "table"), ALL_EXAMPLES)
def test_golden_writer_agrees_with_the_documents(values, request_, table) -> None:
    """The independent writer the other tests rely on places every documented byte where the document does."""
    cells = parse(table)
    layout = request_.inputs[0].layout
    for seed in range(2):
        golden = tiled_golden(values, tuple(layout.axes), tuple(layout.tile_shape), layout.padding, random.Random(seed))
        assert len(golden) == len(cells)
        assert [g for g, c in zip(golden, cells, strict=True) if c is not None] == [c for c in cells if c is not None]


@pytest.mark.parametrize(("padding", "expected"), [(Padding.COMPACT, 80), (Padding.PAD_TO_16, 128)])
def test_contract_capacity_example(padding: Padding, expected: int, c_detess) -> None:
    """BF16 [2, 17], W/C, tile [1, 1, 2, 16]: Compact 80 bytes, PadTo16 128 (never element_count x width = 68)."""
    layout = MlaTiled((-1, -1, 0, 1), (1, 1, 2, 16), padding)
    request = Request([DetessTensorSpec((2, 17), DType.BF16, layout)], [DetessTensorSpec((2, 17), DType.BF16)])
    plan = check_inference(request)
    assert plan.input_bytes == expected
    assert plan.output_bytes == 68
    assert plan.input_alignment == 16 and plan.output_alignment == 2
    assert c_detess.check_inference(request).input_bytes == expected
    # The first C16 tile is 64 bytes; the tail starts right after it.
    assert plan.geometry.tile_offset(1, 0, 0, 0) == 64


def test_compact_bf16_c1_is_a_direct_copy(c_detess) -> None:
    """Compact BF16 C1: the tiled payload is the little-endian words themselves, in order."""
    rng = np.random.default_rng(7)
    values = rng.integers(0, 65536, size=(37, 1), dtype=np.uint16)
    layout = MlaTiled((-1, -1, 0, 1), (1, 1, 37, 1), Padding.COMPACT)
    request = Request([DetessTensorSpec((37, 1), DType.BF16, layout)], [DetessTensorSpec((37, 1), DType.BF16)])
    plan = check_inference(request)
    assert plan.input_bytes == 80  # 74 payload bytes + 6 alignment bytes
    tiled = Guarded(plan.input_bytes, 16)
    tiled.view[:74] = np.frombuffer(values.astype("<u2").tobytes(), dtype=np.uint8)
    for run, p in ((execute, plan), (c_detess.execute, c_detess.check_inference(request))):
        out = Guarded(plan.output_bytes, 2)
        assert run(p, [tiled.view], [out.view]) is None
        assert out.view.tobytes() == tiled.view[:74].tobytes()


def test_strided_output_writes_only_logical_scalars(c_detess) -> None:
    """A pitched, permuted view: gaps keep the caller's bytes, the scalars land at sum(index * stride)."""
    values, request = _bf16_case(17, (1, 1, 2, 16), Padding.PAD_TO_16)
    from heliabuild.kernels.detess import Strided

    strides = (2, 6)  # channel axis pitched far apart, W adjacent: output [c][w] with a 2-byte gap
    request = Request(request.inputs, [DetessTensorSpec((2, 17), DType.BF16, Strided((2, 6)))])
    plan = check_inference(request)
    assert plan.output_bytes == 2 * 1 + 6 * 16 + 2
    assert plan.row_path == "scattered-channel"
    cells = parse(C17_PAD16)
    tiled = Guarded(len(cells), 16)
    tiled.view[:] = filled(cells, 1)
    expected = linear_golden(values, strides, plan.output_bytes, background=bytes([0x5A]) * plan.output_bytes)
    for run, p in ((execute, plan), (c_detess.execute, c_detess.check_inference(request))):
        out = Guarded(plan.output_bytes, 2, fill=0x5A)
        assert run(p, [tiled.view], [out.view]) is None
        assert out.view.tobytes() == expected
        assert out.guards_intact()
