"""Detess execution: numpy reference and C kernel against independent physical goldens.

Every case lays logical values out with `tiled_golden` (padding = random
garbage), runs the numpy reference and the C kernel into exact-capacity
buffers between guard bytes (strided gaps prefilled), and compares both with
`linear_golden`, byte for byte.
"""

from __future__ import annotations

import ctypes
import itertools
import platform
import random
from pathlib import Path

import numpy as np
import pytest
from helpers.detess_goldens import (
    Case,
    Guarded,
    dense_strides,
    linear_golden,
    load_c_detess,
    pitched_permuted_strides,
    random_case,
    tiled_golden,
)
from helpers.skips import require

from heliabuild.kernels.detess import (
    DetessTensorSpec,
    DType,
    Error,
    ErrorCode,
    MlaTiled,
    Padding,
    Request,
    check_inference,
    execute,
)
from heliabuild.kernels.detess.c_kernel import BufferC

GAP = 0x5A  # prefill of output buffers: strided gaps must keep it


@pytest.fixture(scope="module")
def c_detess(host_kernel_library: Path):
    return load_c_detess(host_kernel_library)


def check_case(case: Case, seed: int, c_detess, values: np.ndarray | None = None) -> None:
    """Run `case` through numpy and C, compare both with the goldens; asserts with the case in the message."""
    rng = np.random.default_rng(seed)
    if values is None:
        values = case.values(rng)
    request = case.request()
    plan = check_inference(request)
    assert not isinstance(plan, Error), (case, plan)
    cplan = c_detess.check_inference(request)
    assert not isinstance(cplan, Error), (case, cplan)
    assert (cplan.input_bytes, cplan.output_bytes) == (plan.input_bytes, plan.output_bytes), case
    golden_in = tiled_golden(values, case.axes, case.tile, case.padding, random.Random(seed))
    assert len(golden_in) == plan.input_bytes, (case, len(golden_in), plan.input_bytes)
    expected = linear_golden(values, case.view_strides, plan.output_bytes, bytes([GAP]) * plan.output_bytes)
    tiled = Guarded(plan.input_bytes, 16)
    tiled.view[:] = np.frombuffer(golden_in, dtype=np.uint8)
    for name, run, p in (("numpy", execute, plan), ("C", c_detess.execute, cplan)):
        out = Guarded(plan.output_bytes, case.width, fill=GAP)
        assert run(p, [tiled.view], [out.view]) is None, (name, case)
        assert out.view.tobytes() == expected, (name, case)
        assert out.guards_intact(), (name, case, "wrote outside its binding")
        assert tiled.guards_intact() and tiled.view.tobytes() == golden_in, (name, case, "modified its input")


def deterministic_cases(dtype: DType, rank: int, count: int = 50) -> list[Case]:
    rng = random.Random(f"detess-{dtype.name}-{rank}")
    return [random_case(rng, dtype, rank) for _ in range(count)]


@pytest.mark.parametrize("rank", range(1, 7))
@pytest.mark.parametrize("dtype", [DType.INT8, DType.BF16], ids=["int8", "bf16"])
def test_deterministic_shapes(dtype: DType, rank: int, c_detess) -> None:
    """300 seeded requests per dtype (50 per rank): mappings, boundary tiles, padding, empty extents, strides."""
    for number, case in enumerate(deterministic_cases(dtype, rank)):
        check_case(case, number, c_detess)


def test_deterministic_cases_cover_the_space() -> None:
    cases = [c for d in (DType.INT8, DType.BF16) for r in range(1, 7) for c in deterministic_cases(d, r)]
    assert len(cases) == 600
    assert any(0 in c.shape for c in cases)
    assert {c.padding for c in cases} == {Padding.COMPACT, Padding.PAD_TO_16}
    assert sum(c.strides is not None for c in cases) > 100
    assert any(all(a == -1 for a in c.axes[:3]) for c in cases)  # channel only
    assert any(all(a != -1 for a in c.axes) for c in cases)  # all of D, H, W, C mapped
    assert any(c.shape[c.axes[3]] % c.tile[3] for c in cases if c.shape[c.axes[3]])  # channel tails


@pytest.mark.parametrize("padding", [Padding.COMPACT, Padding.PAD_TO_16], ids=["compact", "pad16"])
def test_exhaustive_int8_bit_patterns(padding: Padding, c_detess) -> None:
    values = np.arange(256, dtype=np.uint8).reshape(16, 16)
    for tile in ((1, 1, 4, 16), (1, 1, 3, 5)):
        check_case(Case(DType.INT8, (16, 16), (-1, -1, 0, 1), tile, padding, None), 0, c_detess, values)


@pytest.mark.parametrize(
    ("shape", "tile", "padding"),
    [
        ((4096, 16), (1, 1, 8, 16), Padding.COMPACT),  # 16-channel joins
        ((4096, 16), (1, 1, 8, 16), Padding.PAD_TO_16),
        ((65536, 1), (1, 1, 64, 1), Padding.COMPACT),  # C1: direct copy
        ((65536, 1), (1, 1, 64, 1), Padding.PAD_TO_16),
        ((16384, 4), (1, 1, 16, 3), Padding.COMPACT),  # C3 and C1 tails
    ],
    ids=["c16-compact", "c16-pad16", "c1-compact", "c1-pad16", "c3-compact"],
)
def test_exhaustive_bf16_bit_patterns(shape, tile, padding, c_detess) -> None:
    """All 65536 BF16 words survive: NaN payloads (signaling and quiet), subnormals, signed zeros, infinities."""
    values = np.arange(65536, dtype=np.uint16).reshape(shape)
    check_case(Case(DType.BF16, shape, (-1, -1, 0, 1), tile, padding, None), 0, c_detess, values)


def test_exhaustive_bf16_through_strided_scattered_channels(c_detess) -> None:
    values = np.arange(65536, dtype=np.uint16).reshape(256, 256)
    strides = (2, 512 + 4)  # channel axis outermost and pitched: every channel scattered
    check_case(
        Case(DType.BF16, (256, 256), (-1, -1, 0, 1), (1, 1, 16, 16), Padding.COMPACT, strides), 0, c_detess, values
    )


def test_special_bf16_words_by_name(c_detess) -> None:
    special = {
        "quiet NaN with payload": 0x7FC1,
        "signaling NaN": 0x7F81,
        "negative NaN": 0xFFFF,
        "+inf": 0x7F80,
        "-inf": 0xFF80,
        "smallest subnormal": 0x0001,
        "negative subnormal": 0x807F,
        "-0": 0x8000,
        "+0": 0x0000,
    }
    values = np.array([list(special.values())] * 3, dtype=np.uint16)  # [W=3, C=9]
    request = Case(DType.BF16, values.shape, (-1, -1, 0, 1), (1, 1, 2, 4), Padding.PAD_TO_16, None).request()
    golden = tiled_golden(values, (-1, -1, 0, 1), (1, 1, 2, 4), Padding.PAD_TO_16, random.Random(0))
    for run, plan in ((execute, check_inference(request)), (c_detess.execute, c_detess.check_inference(request))):
        tiled = Guarded(len(golden), 16)
        tiled.view[:] = np.frombuffer(golden, dtype=np.uint8)
        out = np.zeros(values.size, dtype="<u2")
        assert run(plan, [tiled.view], [out]) is None
        for name, word in zip(special, out[: len(special)], strict=True):
            assert word == special[name], name


def test_mapped_axis_permutations(c_detess) -> None:
    """Every assignment of D/H/W/C to the axes of a rank-4 tensor, and of three of them to a rank-3 tensor."""
    shape4 = (3, 2, 5, 4)
    for number, axes in enumerate(itertools.permutations(range(4))):
        tile = tuple(2 if shape4[a] > 2 else 1 for a in axes)
        for dtype in (DType.INT8, DType.BF16):
            check_case(Case(dtype, shape4, axes, tile, Padding.COMPACT, None), number, c_detess)
    shape3 = (3, 5, 6)
    for number, slots in enumerate(itertools.permutations(range(4), 3)):
        if 3 not in slots:
            continue
        axes = [-1, -1, -1, -1]
        for logical, slot in enumerate(slots):
            axes[slot] = logical
        tile = tuple(1 if a == -1 else 4 for a in axes)
        check_case(Case(DType.BF16, shape3, tuple(axes), tile, Padding.PAD_TO_16, None), number, c_detess)


def test_pitched_and_permuted_strides(c_detess) -> None:
    rng = random.Random(11)
    shape = (3, 4, 5)
    for number, order in enumerate(itertools.permutations(range(3))):
        for dtype in (DType.INT8, DType.BF16):
            width = dtype.width
            strides = [0, 0, 0]
            step = width
            for axis in reversed(order):
                strides[axis] = step
                step = step * shape[axis] + width * rng.choice([0, 1, 2])
            case = Case(dtype, shape, (-1, 0, 1, 2), (1, 2, 2, 3), Padding.COMPACT, tuple(strides))
            check_case(case, number, c_detess)
    # column-major, and a view with extent-one axes whose strides are zero or arbitrary
    check_case(Case(DType.INT8, (4, 6), (-1, -1, 0, 1), (1, 1, 3, 4), Padding.COMPACT, (1, 4)), 0, c_detess)
    check_case(
        Case(DType.BF16, (1, 4, 1, 6), (-1, 0, 1, 3), (1, 1, 1, 4), Padding.COMPACT, (0, 24, 999998, 2)), 1, c_detess
    )


FAST_PATHS = [
    # INT8 contiguous-channel runs of every length class, merged over W, H and D when the tile spans the row
    *[
        Case(DType.INT8, (2, 3, 5, c), (0, 1, 2, 3), (1, 2, 2, t), p, None)
        for c, t in ((1, 1), (2, 2), (3, 3), (4, 4), (8, 8), (16, 16), (32, 32), (12, 12), (40, 40), (40, 16), (7, 16))
        for p in (Padding.COMPACT, Padding.PAD_TO_16)
    ],
    *[Case(DType.INT8, (2, 3, 5, c), (0, 1, 2, 3), (2, 3, 5, c), Padding.COMPACT, None) for c in (1, 3, 16)],
    # BF16 joins: groups of 8 channels and scalar tails, C1 direct copies merged over whole tiles
    *[
        Case(DType.BF16, (2, 3, 5, c), (0, 1, 2, 3), (1, 2, 2, t), p, None)
        for c, t in ((1, 1), (2, 2), (3, 3), (8, 8), (9, 9), (16, 16), (17, 16), (24, 24), (40, 40))
        for p in (Padding.COMPACT, Padding.PAD_TO_16)
    ],
    Case(DType.BF16, (2, 3, 5, 1), (0, 1, 2, 3), (2, 3, 5, 1), Padding.COMPACT, None),
    # channel-only inputs (no spatial traversal)
    *[
        Case(d, (3, 37), (-1, -1, -1, 1), (1, 1, 1, 16), p, None)
        for d in (DType.INT8, DType.BF16)
        for p in (Padding.COMPACT, Padding.PAD_TO_16)
    ],
    Case(DType.INT8, (37,), (-1, -1, -1, 0), (1, 1, 1, 8), Padding.COMPACT, (1,)),
]


@pytest.mark.parametrize(
    "case", FAST_PATHS, ids=lambda c: f"{c.dtype.name}-{'x'.join(map(str, c.shape))}-t{c.tile}-{c.padding.name}"
)
def test_copy_paths(case: Case, c_detess) -> None:
    check_case(case, 3, c_detess)


def test_input_padding_garbage_does_not_matter(c_detess) -> None:
    case = Case(DType.BF16, (5, 7, 19), (-1, 0, 1, 2), (1, 2, 3, 16), Padding.PAD_TO_16, None)
    values = case.values(np.random.default_rng(0))
    outputs = set()
    for seed in range(4):
        tiled_bytes = tiled_golden(values, case.axes, case.tile, case.padding, random.Random(seed))
        for run, plan in (
            (execute, check_inference(case.request())),
            (c_detess.execute, c_detess.check_inference(case.request())),
        ):
            tiled = Guarded(len(tiled_bytes), 16)
            tiled.view[:] = np.frombuffer(tiled_bytes, dtype=np.uint8)
            out = np.zeros(values.size * 2, dtype=np.uint8)
            assert run(plan, [tiled.view], [out]) is None
            outputs.add(out.tobytes())
    assert outputs == {values.astype("<u2").tobytes()}


def test_plan_reuse(c_detess) -> None:
    """One plan, many executions on different data and buffers; the plan never changes."""
    case = Case(
        DType.INT8,
        (2, 9, 33),
        (-1, 1, -1, 2),
        (1, 4, 1, 16),
        Padding.COMPACT,
        pitched_permuted_strides(random.Random(2), (2, 9, 33), 1),
    )
    plan = check_inference(case.request())
    cplan = c_detess.check_inference(case.request())
    c_storage = bytes(cplan.storage)
    for seed in range(5):
        values = case.values(np.random.default_rng(seed))
        tiled_bytes = tiled_golden(values, case.axes, case.tile, case.padding, random.Random(seed))
        expected = linear_golden(values, case.view_strides, plan.output_bytes, bytes([GAP]) * plan.output_bytes)
        for run, p in ((execute, plan), (c_detess.execute, cplan)):
            tiled = Guarded(plan.input_bytes, 16)
            tiled.view[:] = np.frombuffer(tiled_bytes, dtype=np.uint8)
            out = Guarded(plan.output_bytes, 1, fill=GAP)
            assert run(p, [tiled.view], [out.view]) is None
            assert out.view.tobytes() == expected
    assert bytes(cplan.storage) == c_storage


def test_c_matches_numpy_on_larger_tensors(c_detess) -> None:
    """Sizes beyond the golden writers' reach: C and numpy agree byte for byte (numpy itself is golden-tested)."""
    rng = np.random.default_rng(5)
    cases = [
        Case(DType.INT8, (2, 40, 48, 64), (-1, 1, 2, 3), (1, 8, 8, 16), Padding.COMPACT, None),
        Case(DType.BF16, (2, 40, 48, 40), (-1, 1, 2, 3), (1, 8, 8, 16), Padding.PAD_TO_16, None),
        Case(DType.BF16, (3, 30, 50, 3), (1, 0, 2, 3), (2, 4, 16, 3), Padding.COMPACT, None),
        Case(DType.INT8, (64, 50, 30), (-1, 2, 1, 0), (1, 5, 7, 16), Padding.PAD_TO_16, dense_strides((64, 50, 30), 1)),
    ]
    for case in cases:
        plan = check_inference(case.request())
        cplan = c_detess.check_inference(case.request())
        tiled = Guarded(plan.input_bytes, 16)
        tiled.view[:] = rng.integers(0, 256, size=plan.input_bytes, dtype=np.uint8)
        results = []
        for run, p in ((execute, plan), (c_detess.execute, cplan)):
            out = Guarded(plan.output_bytes, case.width, fill=GAP)
            assert run(p, [tiled.view], [out.view]) is None
            assert out.guards_intact()
            results.append(out.view.tobytes())
        assert results[0] == results[1], case


# ---- bindings -------------------------------------------------------------------------------------

BF16_CASE = Case(DType.BF16, (2, 17), (-1, -1, 0, 1), (1, 1, 2, 16), Padding.COMPACT, None)


def _both(c_detess):
    request = BF16_CASE.request()
    return [("numpy", execute, check_inference(request)), ("C", c_detess.execute, c_detess.check_inference(request))]


def _refused(run, plan, inputs, outputs, code: ErrorCode) -> None:
    snapshots = [np.frombuffer(o, dtype=np.uint8).copy() for o in outputs if isinstance(o, np.ndarray)]
    outcome = run(plan, inputs, outputs)
    assert isinstance(outcome, Error) and outcome.code == code, outcome
    for output, before in zip([o for o in outputs if isinstance(o, np.ndarray)], snapshots, strict=True):
        assert (np.frombuffer(output, dtype=np.uint8) == before).all(), "a refused execution wrote"


def test_binding_count_and_plan(c_detess) -> None:
    for _, run, plan in _both(c_detess):
        tiled, out = Guarded(80, 16), Guarded(68, 2)
        _refused(run, plan, [], [out.view], ErrorCode.BINDING_COUNT)
        _refused(run, plan, [tiled.view], [out.view, out.view], ErrorCode.BINDING_COUNT)
        _refused(run, object(), [tiled.view], [out.view], ErrorCode.PLAN)
    request = BF16_CASE.request()
    # a plan of the other implementation is not a checked plan
    _refused(c_detess.execute, check_inference(request), [Guarded(80, 16).view], [Guarded(68, 2).view], ErrorCode.PLAN)
    _refused(execute, c_detess.check_inference(request), [Guarded(80, 16).view], [Guarded(68, 2).view], ErrorCode.PLAN)


def test_capacity_exact_is_enough_and_one_less_is_refused(c_detess) -> None:
    for _, run, plan in _both(c_detess):
        assert (plan.input_bytes, plan.output_bytes) == (80, 68)
        _refused(run, plan, [Guarded(79, 16).view], [Guarded(68, 2).view], ErrorCode.CAPACITY)
        _refused(run, plan, [Guarded(80, 16).view], [Guarded(66, 2).view], ErrorCode.CAPACITY)
        assert run(plan, [Guarded(80, 16).view], [Guarded(68, 2).view]) is None
        assert run(plan, [Guarded(96, 16).view], [Guarded(100, 2).view]) is None  # larger is fine


def test_alignment(c_detess) -> None:
    for _, run, plan in _both(c_detess):
        _refused(run, plan, [Guarded(80, 16, misalign=8).view], [Guarded(68, 2).view], ErrorCode.ALIGNMENT)
        _refused(run, plan, [Guarded(80, 16).view], [Guarded(68, 2, misalign=1).view], ErrorCode.ALIGNMENT)
    int8 = Case(DType.INT8, (2, 17), (-1, -1, 0, 1), (1, 1, 2, 16), Padding.COMPACT, None).request()
    for run, plan in ((execute, check_inference(int8)), (c_detess.execute, c_detess.check_inference(int8))):
        assert run(plan, [Guarded(48, 16).view], [Guarded(34, 1, misalign=1).view]) is None  # scalar aligned


def test_overlap_of_accessed_spans(c_detess) -> None:
    for _, run, plan in _both(c_detess):
        arena = Guarded(256, 16)
        whole = arena.view
        _refused(run, plan, [whole[0:80]], [whole[64:132]], ErrorCode.OVERLAP)  # output inside the input's span
        _refused(run, plan, [whole[96:176]], [whole[32:100]], ErrorCode.OVERLAP)  # input starts inside the output
        _refused(run, plan, [whole[0:80]], [whole[0:68]], ErrorCode.OVERLAP)  # "in place" is not guaranteed
        # disjoint views of one allocation are permitted, even back to back
        assert run(plan, [whole[0:80]], [whole[80:148]]) is None
        # declared capacities may intersect as long as the accessed spans [start, start + required) do not
        assert run(plan, [whole[96:256]], [whole[0:100]]) is None


def test_unusable_buffers(c_detess) -> None:
    for _, run, plan in _both(c_detess):
        tiled = Guarded(80, 16)
        readonly = Guarded(68, 2).view
        readonly.flags.writeable = False
        _refused(run, plan, [tiled.view], [readonly], ErrorCode.BINDING)
        _refused(run, plan, [tiled.view], [b"\0" * 68], ErrorCode.BINDING)
        _refused(run, plan, [np.zeros((80, 2), np.uint8)[:, 0]], [Guarded(68, 2).view], ErrorCode.BINDING)
        _refused(run, plan, [tiled.view], [[0] * 68], ErrorCode.BINDING)
    # C sees NULL data where bytes are needed
    _, _, cplan = _both(c_detess)[1]
    library = c_detess.library
    inputs, outputs = (BufferC * 1)(), (BufferC * 1)()
    inputs[0].capacity, outputs[0].capacity = 80, 68
    outputs[0].data = Guarded(68, 2).view.ctypes.data
    assert library.helia_detess_execute(cplan.storage, inputs, 1, outputs, 1) == ErrorCode.BINDING
    assert library.helia_detess_execute(cplan.storage, None, 1, outputs, 1) == ErrorCode.BINDING


def test_empty_tensor_accepts_any_buffers(c_detess) -> None:
    request = Request(
        [DetessTensorSpec((3, 0), DType.BF16, MlaTiled((-1, -1, 0, 1), (1, 1, 2, 16)))],
        [DetessTensorSpec((3, 0), DType.BF16)],
    )
    for run, plan in ((execute, check_inference(request)), (c_detess.execute, c_detess.check_inference(request))):
        assert run(plan, [b""], [bytearray()]) is None
        odd = np.zeros(3, np.uint8)[1:]
        assert run(plan, [odd], [odd]) is None  # nothing accessed: no alignment or overlap to check
    library = c_detess.library
    plan = c_detess.check_inference(request)
    nothing = (BufferC * 1)()
    assert library.helia_detess_execute(plan.storage, nothing, 1, nothing, 1) == 0


# ---- floating-point state ------------------------------------------------------------------------

_FENV = {"x86_64": (0xC00, 0x3D), "AMD64": (0xC00, 0x3D), "aarch64": (0xC00000, 0x9F)}


def test_fp_state_independence(c_detess) -> None:
    """Under a non-default rounding mode, C Detess is bit exact, raises no FP flag and leaves the mode as it was."""
    require(platform.machine() in _FENV and platform.system() == "Linux", "libm's fenv constants are known here")
    libm = ctypes.CDLL("libm.so.6")
    toward_zero, all_flags = _FENV[platform.machine()]
    values = np.arange(65536, dtype=np.uint16).reshape(4096, 16)
    request = Case(DType.BF16, values.shape, (-1, -1, 0, 1), (1, 1, 8, 16), Padding.PAD_TO_16, None).request()
    plan = c_detess.check_inference(request)
    tiled_bytes = tiled_golden(values, (-1, -1, 0, 1), (1, 1, 8, 16), Padding.PAD_TO_16)
    tiled = Guarded(len(tiled_bytes), 16)
    tiled.view[:] = np.frombuffer(tiled_bytes, dtype=np.uint8)
    out = np.zeros(values.size, dtype="<u2")
    inputs, outputs = (BufferC * 1)(), (BufferC * 1)()
    inputs[0].data, inputs[0].capacity = tiled.view.ctypes.data, tiled.size
    outputs[0].data, outputs[0].capacity = out.ctypes.data, out.nbytes
    original = libm.fegetround()
    try:
        assert libm.fesetround(toward_zero) == 0
        libm.feclearexcept(all_flags)
        status = c_detess.library.helia_detess_execute(plan.storage, inputs, 1, outputs, 1)
        raised = libm.fetestexcept(all_flags)
        mode = libm.fegetround()
        reference_out = np.zeros(values.size, dtype="<u2")
        assert execute(check_inference(request), [tiled.view], [reference_out]) is None
    finally:
        libm.fesetround(original)
    assert status == 0
    assert raised == 0, "C Detess raised a floating-point exception flag"
    assert mode == toward_zero, "C Detess changed the rounding mode"
    assert (out == values.reshape(-1)).all()
    assert (reference_out == values.reshape(-1)).all()
