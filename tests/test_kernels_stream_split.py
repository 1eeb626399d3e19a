"""The ETHOS_U_STREAM_SPLIT identity copy, in Python and in C (real compiler, ctypes), case for case.

Every buffer is carved from ONE allocation (an `Arena`), so overlaps are real
and "nothing was modified" is checked over the whole allocation.
"""

from __future__ import annotations

import ctypes
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from heliabuild.errors import HeliaError, KernelError
from heliabuild.kernels.native import Status, load_host_library
from heliabuild.kernels.stream_split import (
    ELEMENT_SIZES,
    TYPE_CODES,
    NativeStreamSplit,
    StreamSplitError,
    TensorBuffer,
    TensorDesc,
    stream_split_copy,
    stream_split_prepare,
)

DTYPES = ("int8", "uint8", "int16", "int32", "int64", "float16", "float32", "bool")
Outcome = tuple[Status, int | None]


@pytest.fixture(scope="session")
def native(host_kernel_library: Path) -> NativeStreamSplit:
    return NativeStreamSplit(load_host_library(host_kernel_library))


class Arena:
    """One allocation; tensors are views at byte offsets into it."""

    def __init__(self, size: int, seed: int = 0) -> None:
        self.buffer = bytearray(np.random.default_rng(seed).integers(0, 256, size, dtype=np.uint8).tobytes())

    def raw(self, offset: int, nbytes: int) -> memoryview:
        return memoryview(self.buffer)[offset : offset + nbytes]

    def tensor(self, offset: int, dtype: str, shape: Sequence[int], nbytes: int | None = None) -> TensorBuffer:
        """Raw bytes plus metadata; nbytes defaults to what the metadata implies."""
        size = ELEMENT_SIZES.get(dtype, 1) * int(np.prod(shape, dtype=np.int64)) if nbytes is None else nbytes
        return TensorBuffer(self.raw(offset, size), dtype, tuple(shape))

    def array(self, offset: int, dtype: str, shape: Sequence[int]) -> np.ndarray:
        count = int(np.prod(shape, dtype=np.int64))
        return np.frombuffer(self.buffer, dtype=np.dtype(dtype), count=count, offset=offset).reshape(shape)

    def snapshot(self) -> bytes:
        return bytes(self.buffer)

    def restore(self, content: bytes) -> None:
        self.buffer[:] = content


def python_outcome(inputs: Sequence[object], outputs: Sequence[object]) -> Outcome:
    try:
        stream_split_copy(inputs, outputs)  # type: ignore[arg-type]
    except StreamSplitError as error:
        return error.status, error.pair
    return Status.OK, None


def c_outcome(native: NativeStreamSplit, inputs: Sequence[object], outputs: Sequence[object]) -> Outcome:
    try:
        bound = native.bind(inputs, outputs)  # type: ignore[arg-type]
    except StreamSplitError as error:  # what only the binding can see (unusable buffers)
        return error.status, error.pair
    prepared = bound.prepare_status()
    copied = bound.copy_status()
    assert prepared == copied, (prepared, copied)
    return copied


def run_both(
    native: NativeStreamSplit, arena: Arena, inputs: Sequence[object], outputs: Sequence[object]
) -> tuple[Outcome, bytes, bytes]:
    """Run the request in Python, then (from the same starting bytes) in C; both must agree on the outcome
    and on the resulting allocation, and a refusal must leave the whole allocation unchanged."""
    before = arena.snapshot()
    python = python_outcome(inputs, outputs)
    after_python = arena.snapshot()
    arena.restore(before)
    c = c_outcome(native, inputs, outputs)
    after_c = arena.snapshot()
    assert python == c, f"Python {python} != C {c}"
    assert after_python == after_c
    if python[0] != Status.OK:
        assert after_python == before, "a refused request modified the allocation"
    return python, before, after_python


def expected_after(before: bytes, pairs: Sequence[tuple[int, int, int]]) -> bytes:
    """The allocation after copying (input offset, output offset, nbytes) pairs that do not overlap."""
    result = bytearray(before)
    for source, destination, nbytes in pairs:
        result[destination : destination + nbytes] = before[source : source + nbytes]
    return bytes(result)


# --- copies ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES)
def test_every_version_1_dtype_is_copied_bit_for_bit(native: NativeStreamSplit, dtype: str) -> None:
    size = ELEMENT_SIZES[dtype]
    arena = Arena(4096, seed=size)
    shape = (2, 3, 5)
    nbytes = 30 * size
    inputs = [arena.tensor(0, dtype, shape), arena.array(1024, dtype, shape)]
    outputs = [arena.tensor(2048, dtype, shape), arena.array(3072, dtype, shape)]
    outcome, before, after = run_both(native, arena, inputs, outputs)
    assert outcome == (Status.OK, None)
    assert after == expected_after(before, [(0, 2048, nbytes), (1024, 3072, nbytes)])
    assert after != before


def test_a_plan_copies_again_on_every_run(native: NativeStreamSplit) -> None:
    arena = Arena(64)
    source, destination = arena.array(0, "float32", (4,)), arena.array(32, "float32", (4,))
    plan = stream_split_prepare([source], [destination])
    for value in (1.5, -0.0, np.inf):
        source[:] = value
        plan.run()
        assert destination.tobytes() == source.tobytes()
    bound = native.bind([source], [destination])
    source[:] = 7.0
    bound.copy()
    assert destination.tobytes() == source.tobytes()


def test_memoryviews_carry_their_own_dtype_and_shape(native: NativeStreamSplit) -> None:
    arena = Arena(256)
    source = arena.raw(0, 24).cast("B").cast("i", (2, 3))
    destination = arena.raw(64, 24).cast("B").cast("i", (2, 3))
    outcome, before, after = run_both(native, arena, [source], [destination])
    assert outcome == (Status.OK, None)
    assert after == expected_after(before, [(0, 64, 24)])


def test_exact_alias_within_a_pair_is_a_no_op(native: NativeStreamSplit) -> None:
    arena = Arena(256)
    aliased = arena.tensor(0, "int16", (4, 4))
    inputs = [aliased, arena.tensor(64, "int8", (8,))]
    outputs = [aliased, arena.tensor(128, "int8", (8,))]
    outcome, before, after = run_both(native, arena, inputs, outputs)
    assert outcome == (Status.OK, None)
    assert after == expected_after(before, [(64, 128, 8)])
    assert stream_split_prepare([aliased], [aliased]).copies == ()


@pytest.mark.parametrize("shape", [(0,), (3, 0, 2), (0, 0)], ids=str)
def test_zero_size_tensors_copy_nothing_and_overlap_nothing(native: NativeStreamSplit, shape: tuple[int, ...]) -> None:
    arena = Arena(64)
    # The empty tensors sit on the bytes of the other pair, which is legal: they occupy none.
    inputs = [arena.tensor(0, "float32", shape), arena.tensor(0, "int32", (2,))]
    outputs = [arena.tensor(4, "float32", shape), arena.tensor(16, "int32", (2,))]
    outcome, before, after = run_both(native, arena, inputs, outputs)
    assert outcome == (Status.OK, None)
    assert after == expected_after(before, [(0, 16, 8)])


def test_a_scalar_is_one_element(native: NativeStreamSplit) -> None:
    arena = Arena(32)
    outcome, before, after = run_both(native, arena, [arena.tensor(0, "int64", ())], [arena.tensor(16, "int64", ())])
    assert outcome == (Status.OK, None)
    assert after == expected_after(before, [(0, 16, 8)])


def test_inputs_may_share_bytes(native: NativeStreamSplit) -> None:
    arena = Arena(256)
    shared = arena.tensor(0, "uint8", (16,))
    outcome, before, after = run_both(
        native,
        arena,
        [shared, arena.tensor(8, "uint8", (16,))],
        [arena.tensor(64, "uint8", (16,)), arena.tensor(128, "uint8", (16,))],
    )
    assert outcome == (Status.OK, None)
    assert after == expected_after(before, [(0, 64, 16), (8, 128, 16)])


def test_many_pairs_of_mixed_dtypes_and_shapes(native: NativeStreamSplit) -> None:
    rng = np.random.default_rng(7)
    count = 300
    layout = []
    offset = 0
    for index in range(count):
        dtype = DTYPES[index % len(DTYPES)]
        shape = tuple(int(d) for d in rng.integers(0, 4, rng.integers(0, 4)))
        nbytes = ELEMENT_SIZES[dtype] * int(np.prod(shape, dtype=np.int64))
        layout.append((dtype, shape, offset, offset + nbytes, nbytes))
        offset += 2 * nbytes + 3
    arena = Arena(offset + 16, seed=3)
    inputs = [arena.tensor(src, dtype, shape) for dtype, shape, src, _, _ in layout]
    outputs = [arena.tensor(dst, dtype, shape) for dtype, shape, _, dst, _ in layout]
    outcome, before, after = run_both(native, arena, inputs, outputs)
    assert outcome == (Status.OK, None)
    assert after == expected_after(before, [(src, dst, n) for _, _, src, dst, n in layout])


# --- refusals: every mismatch --------------------------------------------------------------------


def _refused(native: NativeStreamSplit, arena: Arena, inputs: list, outputs: list, status: Status, pair: int | None):
    outcome, _, _ = run_both(native, arena, inputs, outputs)
    assert outcome == (status, pair)
    with pytest.raises(StreamSplitError) as caught:
        stream_split_prepare(inputs, outputs)
    assert isinstance(caught.value, KernelError) and isinstance(caught.value, HeliaError)
    if pair is not None:
        assert f"pair {pair}" in caught.value.message
    return caught.value.message


def _good_pair(arena: Arena) -> tuple[TensorBuffer, TensorBuffer]:
    """Pair 0 of the refusal tests: valid, and it would move bytes if anything were copied."""
    return arena.tensor(0, "int32", (4,)), arena.tensor(16, "int32", (4,))


@pytest.mark.parametrize(
    ("inputs", "outputs"), [(0, 0), (1, 0), (0, 1), (2, 3)], ids=["none", "no-output", "no-input", "2-vs-3"]
)
def test_pair_count_must_match_and_be_nonzero(native: NativeStreamSplit, inputs: int, outputs: int) -> None:
    arena = Arena(512)
    ins = [arena.tensor(64 * i, "int8", (4,)) for i in range(inputs)]
    outs = [arena.tensor(256 + 64 * i, "int8", (4,)) for i in range(outputs)]
    message = _refused(native, arena, ins, outs, Status.PAIR_COUNT, None)
    assert f"{inputs} inputs and {outputs} outputs" in message


@pytest.mark.parametrize(
    "dtype", ["float64", "int4", "string", "uint16", "uint32", "complex64", "bfloat16", 99, "resource"]
)
def test_dtypes_outside_version_1_are_refused(native: NativeStreamSplit, dtype: object) -> None:
    arena = Arena(256)
    good_in, good_out = _good_pair(arena)
    bad = [TensorBuffer(arena.raw(64, 8), dtype, (2,)), TensorBuffer(arena.raw(128, 8), dtype, (2,))]
    message = _refused(native, arena, [good_in, bad[0]], [good_out, bad[1]], Status.UNSUPPORTED_DTYPE, 1)
    assert "input dtype" in message and "not carried by contract version 1" in message


def test_an_unsupported_output_dtype_is_named(native: NativeStreamSplit) -> None:
    arena = Arena(256)
    message = _refused(
        native,
        arena,
        [arena.tensor(0, "int32", (2,))],
        [TensorBuffer(arena.raw(64, 8), "float64", (1,))],
        Status.UNSUPPORTED_DTYPE,
        0,
    )
    assert "output dtype float64" in message


def test_non_native_byte_order_is_refused_in_python() -> None:
    arena = Arena(64)
    with pytest.raises(StreamSplitError, match="non-native byte order") as caught:
        stream_split_copy([arena.tensor(0, "int32", (2,))], [TensorBuffer(arena.raw(16, 8), np.dtype(">i4"), (2,))])
    assert caught.value.status == Status.UNSUPPORTED_DTYPE


@pytest.mark.parametrize(("source", "destination"), [("int8", "uint8"), ("float16", "int16"), ("int32", "float32")])
def test_dtype_mismatch_is_refused(native: NativeStreamSplit, source: str, destination: str) -> None:
    arena = Arena(256)
    good_in, good_out = _good_pair(arena)
    message = _refused(
        native,
        arena,
        [good_in, arena.tensor(64, source, (4,))],
        [good_out, arena.tensor(128, destination, (4,))],
        Status.DTYPE_MISMATCH,
        1,
    )
    assert f"output dtype {destination} differs from input dtype {source}" in message


@pytest.mark.parametrize(
    ("source", "destination"),
    [((2, 3), (3, 2)), ((6,), (1, 6)), ((1, 6), (6,)), ((), (1,)), ((2, 3), (2, 4))],
    ids=["transposed", "rank-up", "rank-down", "scalar-vs-1", "extent"],
)
def test_shape_mismatch_is_refused_even_with_equal_byte_counts(
    native: NativeStreamSplit, source: tuple[int, ...], destination: tuple[int, ...]
) -> None:
    arena = Arena(256)
    good_in, good_out = _good_pair(arena)
    message = _refused(
        native,
        arena,
        [good_in, arena.tensor(64, "int16", source)],
        [good_out, arena.tensor(128, "int16", destination)],
        Status.SHAPE_MISMATCH,
        1,
    )
    assert f"output shape {list(destination)} differs from input shape {list(source)}" in message


@pytest.mark.parametrize("extent", [-1, 2**31], ids=["unknown", "beyond-int32"])
def test_bad_extents_are_refused(native: NativeStreamSplit, extent: int) -> None:
    arena = Arena(256)
    good_in, good_out = _good_pair(arena)
    bad_in = TensorBuffer(arena.raw(64, 8), "int8", (extent, 2))
    message = _refused(
        native, arena, [good_in, bad_in], [good_out, arena.tensor(128, "int8", (4, 2))], Status.BAD_SHAPE, 1
    )
    assert f"input shape [{extent}, 2]" in message


@pytest.mark.parametrize(("side", "delta"), [("input", -1), ("input", 1), ("output", -4), ("output", 4)])
def test_byte_length_must_be_flat_size_times_element_size(native: NativeStreamSplit, side: str, delta: int) -> None:
    arena = Arena(256)
    good_in, good_out = _good_pair(arena)
    short = {"input": arena.tensor(64, "int32", (2, 3), 24 + delta), "output": arena.tensor(128, "int32", (2, 3))}
    if side == "output":
        short = {"input": arena.tensor(64, "int32", (2, 3)), "output": arena.tensor(128, "int32", (2, 3), 24 + delta)}
    message = _refused(
        native, arena, [good_in, short["input"]], [good_out, short["output"]], Status.BYTE_LENGTH_MISMATCH, 1
    )
    assert f"{side} byte length {24 + delta} differs from flat size x element size = 24" in message


def test_a_size_beyond_size_t_is_refused(native: NativeStreamSplit) -> None:
    arena = Arena(128)
    huge = (2**31 - 1,) * 3
    message = _refused(
        native,
        arena,
        [TensorBuffer(arena.raw(0, 8), "int64", huge)],
        [TensorBuffer(arena.raw(64, 8), "int64", huge)],
        Status.SIZE_OVERFLOW,
        0,
    )
    assert "does not fit size_t" in message


def test_unusable_buffers_are_refused_before_the_kernel_runs(native: NativeStreamSplit) -> None:
    arena = Arena(256)
    good_in, good_out = _good_pair(arena)
    read_only = TensorBuffer(memoryview(arena.buffer).toreadonly()[128:136], "int32", (2,))
    strided = TensorBuffer(memoryview(arena.buffer)[64:80:2], "int8", (8,))
    message = _refused(
        native, arena, [good_in, arena.tensor(64, "int32", (2,))], [good_out, read_only], Status.INVALID_BUFFER, 1
    )
    assert "output buffer is read-only" in message
    message = _refused(
        native, arena, [good_in, strided], [good_out, arena.tensor(128, "int8", (8,))], Status.INVALID_BUFFER, 1
    )
    assert "input buffer is not C-contiguous" in message


def test_the_first_broken_rule_of_the_first_bad_pair_is_reported(native: NativeStreamSplit) -> None:
    arena = Arena(512)
    good_in, good_out = _good_pair(arena)
    # Pair 1 has a shape mismatch, pair 2 an unsupported dtype, pairs 0 and 2 overlap: pair checks come first.
    inputs = [good_in, arena.tensor(64, "int8", (4,)), TensorBuffer(arena.raw(16, 8), "float64", (1,))]
    outputs = [good_out, arena.tensor(128, "int8", (2, 2)), TensorBuffer(arena.raw(200, 8), "float64", (1,))]
    _refused(native, arena, inputs, outputs, Status.SHAPE_MISMATCH, 1)


# --- refusals: overlaps ----------------------------------------------------------------------------


@pytest.mark.parametrize("shift", [1, 4, 15, -1, -8], ids=lambda s: f"shift{s:+d}")
def test_partial_overlap_within_a_pair_is_refused(native: NativeStreamSplit, shift: int) -> None:
    arena = Arena(256)
    good_in, good_out = _good_pair(arena)
    message = _refused(
        native,
        arena,
        [good_in, arena.tensor(64, "int32", (4,))],
        [good_out, arena.tensor(64 + shift, "int32", (4,))],
        Status.PARTIAL_OVERLAP,
        1,
    )
    assert "overlap partially; only an exact alias is allowed" in message


@pytest.mark.parametrize(
    ("second_output", "pair", "names"),
    [
        (20, 1, "pair 1: output (4 bytes at"),  # pair 1 writes into pair 0's input
        (31, 1, "overlaps the input of pair 0"),  # ... by one byte
        (70, 0, "overlaps the output of pair 1"),  # pair 0's output and pair 1's output share bytes
        (76, 0, "overlaps the output of pair 1"),
        (100, 0, "overlaps the input of pair 1"),  # pair 1 is an exact alias inside pair 0's output
    ],
    ids=["onto-input", "one-byte", "onto-output", "output-tail", "alias-inside"],
)
def test_a_destination_overlapping_another_pair_is_refused(
    native: NativeStreamSplit, second_output: int, pair: int, names: str
) -> None:
    arena = Arena(256)
    second_input = 100 if second_output != 100 else 64 + 4
    inputs = [arena.tensor(16, "int32", (4,)), arena.tensor(second_input, "int8", (4,))]
    outputs = [
        arena.tensor(64, "int32", (4,)),
        arena.tensor(second_output if second_output != 100 else 68, "int8", (4,)),
    ]
    message = _refused(native, arena, inputs, outputs, Status.CROSS_PAIR_OVERLAP, pair)
    assert names in message


@pytest.mark.parametrize(
    "second_output", [32, 12, 80, 60], ids=["after-input", "before-input", "after-output", "before-output"]
)
def test_adjacent_buffers_do_not_overlap(native: NativeStreamSplit, second_output: int) -> None:
    arena = Arena(256)
    inputs = [arena.tensor(16, "int32", (4,)), arena.tensor(100, "int8", (4,))]
    outputs = [arena.tensor(64, "int32", (4,)), arena.tensor(second_output, "int8", (4,))]
    outcome, before, after = run_both(native, arena, inputs, outputs)
    assert outcome == (Status.OK, None)
    assert after == expected_after(before, [(16, 64, 16), (100, second_output, 4)])


def test_cross_pair_overlap_reports_the_pair_whose_output_clobbers(native: NativeStreamSplit) -> None:
    arena = Arena(256)
    inputs = [arena.tensor(0, "int32", (4,)), arena.tensor(32, "int32", (4,))]
    outputs = [arena.tensor(64, "int32", (4,)), arena.tensor(8, "int32", (4,))]  # pair 1 writes onto pair 0's input
    message = _refused(native, arena, inputs, outputs, Status.CROSS_PAIR_OVERLAP, 1)
    assert "stream-split pair 1: output" in message and "overlaps the input of pair 0" in message


def test_two_outputs_on_the_same_bytes_are_refused(native: NativeStreamSplit) -> None:
    arena = Arena(256)
    inputs = [arena.tensor(0, "int16", (4,)), arena.tensor(32, "int16", (4,))]
    outputs = [arena.tensor(64, "int16", (4,)), arena.tensor(64, "int16", (4,))]
    message = _refused(native, arena, inputs, outputs, Status.CROSS_PAIR_OVERLAP, 0)
    assert "overlaps the output of pair 1" in message


def test_an_aliased_pair_still_counts_as_a_destination(native: NativeStreamSplit) -> None:
    """The contract rejects an output overlapping another pair's input, even when that output is an alias."""
    arena = Arena(256)
    aliased = arena.tensor(0, "int32", (4,))
    inputs = [aliased, arena.tensor(8, "int8", (4,))]
    outputs = [aliased, arena.tensor(128, "int8", (4,))]
    _refused(native, arena, inputs, outputs, Status.CROSS_PAIR_OVERLAP, 0)


# --- C only: what Python cannot express -----------------------------------------------------------


def test_c_refuses_null_pointers(native: NativeStreamSplit) -> None:
    library = native.library
    pair = ctypes.c_size_t(0)
    dims = (ctypes.c_int32 * 1)(4)
    arena = (ctypes.c_uint8 * 64)()
    good = TensorDesc(ctypes.cast(arena, ctypes.c_void_p), 4, ctypes.cast(dims, ctypes.POINTER(ctypes.c_int32)), 1, 9)
    null_data = TensorDesc(None, 4, ctypes.cast(dims, ctypes.POINTER(ctypes.c_int32)), 1, 9)
    null_dims = TensorDesc(ctypes.cast(arena, ctypes.c_void_p), 4, None, 1, 9)
    empty_null = TensorDesc(None, 0, None, 0, 9)  # a rank-0 tensor has one element: byte length 1 expected
    zero_null = TensorDesc(None, 0, ctypes.cast((ctypes.c_int32 * 1)(0), ctypes.POINTER(ctypes.c_int32)), 1, 9)

    def call(inputs: list[TensorDesc] | None, outputs: list[TensorDesc] | None, count: int) -> Outcome:
        ins = (TensorDesc * max(count, 1))(*(inputs or []))
        outs = (TensorDesc * max(count, 1))(*(outputs or []))
        status = library.helia_stream_split_copy(
            ins if inputs is not None else None, count, outs if outputs is not None else None, count, ctypes.byref(pair)
        )
        return Status(status), None if pair.value == ctypes.c_size_t(-1).value else pair.value

    assert call(None, [good], 1) == (Status.NULL_POINTER, None)
    assert call([good], None, 1) == (Status.NULL_POINTER, None)
    assert call([null_data], [good], 1) == (Status.NULL_POINTER, 0)
    assert call([null_dims], [good], 1) == (Status.NULL_POINTER, 0)
    assert call([empty_null], [empty_null], 1) == (Status.BYTE_LENGTH_MISMATCH, 0)
    assert call([zero_null], [zero_null], 1) == (Status.OK, None)  # zero bytes need no pointer
    assert library.helia_stream_split_prepare(None, 0, None, 0, None) == Status.PAIR_COUNT


def test_c_element_sizes_are_version_1s(native: NativeStreamSplit) -> None:
    for name, code in TYPE_CODES.items():
        assert native.element_size(code) == ELEMENT_SIZES.get(name, 0), name
    assert native.element_size(-1) == 0 and native.element_size(1000) == 0


# --- properties ------------------------------------------------------------------------------------

ARENA_BYTES = 96


@st.composite
def layouts(draw: st.DrawFn) -> list[tuple[str, tuple[int, ...], int, int]]:
    """1..6 pairs: (dtype, shape, input offset, output offset) inside one small arena; outputs often land on
    inputs (exact alias) or near them (overlap), so every outcome is common."""
    pairs = []
    for _ in range(draw(st.integers(1, 6))):
        dtype = draw(st.sampled_from(DTYPES))
        shape = tuple(draw(st.lists(st.integers(0, 2), max_size=3)))  # at most 8 elements, 64 bytes
        nbytes = ELEMENT_SIZES[dtype] * int(np.prod(shape, dtype=np.int64))
        top = ARENA_BYTES - nbytes
        source = draw(st.integers(0, top))
        destination = draw(
            st.one_of(st.just(source), st.integers(0, top), st.integers(max(0, source - 4), min(top, source + 4)))
        )
        pairs.append((dtype, shape, source, destination))
    return pairs


def _overlap(a: int, a_len: int, b: int, b_len: int) -> bool:
    return a_len > 0 and b_len > 0 and a < b + b_len and b < a + a_len


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(layout=layouts(), seed=st.integers(0, 2**16))
def test_property_refuses_exactly_the_overlaps_and_otherwise_copies(
    native: NativeStreamSplit, layout: list[tuple[str, tuple[int, ...], int, int]], seed: int
) -> None:
    arena = Arena(ARENA_BYTES, seed)
    spans = [
        (src, dst, ELEMENT_SIZES[dtype] * int(np.prod(shape, dtype=np.int64))) for dtype, shape, src, dst in layout
    ]
    should_refuse = any(
        (src != dst and _overlap(src, n, dst, n))
        or any(
            _overlap(dst, n, other_src, m) or _overlap(dst, n, other_dst, m)
            for j, (other_src, other_dst, m) in enumerate(spans)
            if j != i
        )
        for i, (src, dst, n) in enumerate(spans)
    )
    inputs = [arena.tensor(src, dtype, shape) for dtype, shape, src, _ in layout]
    outputs = [arena.tensor(dst, dtype, shape) for dtype, shape, _, dst in layout]
    outcome, before, after = run_both(native, arena, inputs, outputs)
    if should_refuse:
        assert outcome[0] in (Status.PARTIAL_OVERLAP, Status.CROSS_PAIR_OVERLAP)
        assert after == before
    else:
        assert outcome == (Status.OK, None)
        assert after == expected_after(before, [(src, dst, n) for src, dst, n in spans if src != dst])


@st.composite
def descriptors(draw: st.DrawFn) -> tuple[list[TensorBuffer], list[TensorBuffer], Arena]:
    """Arbitrary requests: mostly valid pairs with one field of one side mutated (dtype, shape, byte
    length), unsupported dtype names and codes, unknown or huge extents, counts that differ, and
    random placement (so the overlap checks run too)."""
    arena = Arena(ARENA_BYTES, draw(st.integers(0, 255)))
    supported = st.sampled_from(DTYPES)
    odd_dtype = st.one_of(st.sampled_from(sorted(TYPE_CODES)), st.integers(-3, 40))

    def any_dtype() -> object:  # one in ten outside version 1
        return draw(odd_dtype if draw(st.integers(0, 9)) == 0 else supported)

    small_shape = st.lists(st.integers(0, 3), max_size=3).map(tuple)
    odd_shape = st.one_of(
        st.just((2**31 - 1,) * 3),  # flat size x element size beyond size_t
        st.lists(st.sampled_from([-1, 2, 2**31]), min_size=1, max_size=2).map(tuple),
    )

    def place(dtype: object, shape: tuple[int, ...], delta: int) -> TensorBuffer:
        size = ELEMENT_SIZES.get(dtype, 1) if isinstance(dtype, str) else 1
        implied = size * int(np.prod(shape, dtype=np.int64)) if all(0 <= d <= 3 for d in shape) else 4
        nbytes = max(0, min(ARENA_BYTES, implied + delta))
        return TensorBuffer(arena.raw(draw(st.integers(0, ARENA_BYTES - nbytes)), nbytes), dtype, shape)

    inputs, outputs = [], []
    for _ in range(draw(st.integers(1, 4))):
        dtype = any_dtype()
        shape = draw(odd_shape if draw(st.integers(0, 7)) == 0 else small_shape)
        mutation = draw(st.sampled_from(["none"] * 6 + ["dtype", "shape", "input-bytes", "output-bytes"]))
        out_dtype = any_dtype() if mutation == "dtype" else dtype
        out_shape = draw(small_shape) if mutation == "shape" else shape
        delta = draw(st.sampled_from([-1, 1, 2]))
        inputs.append(place(dtype, shape, delta if mutation == "input-bytes" else 0))
        outputs.append(place(out_dtype, out_shape, delta if mutation == "output-bytes" else 0))
    extra = draw(st.sampled_from([0] * 18 + [1, -1]))
    if extra == 1:
        outputs.append(place("int8", (1,), 0))
    elif extra == -1:
        outputs.pop()
    return inputs, outputs, arena


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(request=descriptors())
def test_property_c_and_python_agree_on_arbitrary_descriptors(
    native: NativeStreamSplit, request: tuple[list[TensorBuffer], list[TensorBuffer], Arena]
) -> None:
    inputs, outputs, arena = request
    run_both(native, arena, inputs, outputs)
