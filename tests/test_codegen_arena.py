"""The arena planner: no two buffers live at once share a byte, every offset is aligned, the arena is never
smaller than the peak of live bytes, and the result depends only on the buffers."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from heliabuild.codegen.arena import ArenaError, Buffer, peak_live_bytes, plan_arena


@st.composite
def buffer_sets(draw: st.DrawFn) -> list[Buffer]:
    count = draw(st.integers(0, 30))
    buffers = []
    for k in range(count):
        first = draw(st.integers(0, 20))
        buffers.append(Buffer(f"t{k}", draw(st.integers(0, 5000)), first, first + draw(st.integers(0, 8))))
    return buffers


def _overlap(a: tuple[int, int], b: tuple[int, int]) -> bool:
    return a[0] < b[1] and b[0] < a[1]


@given(buffer_sets(), st.sampled_from([1, 4, 16, 64]))
def test_live_buffers_never_share_bytes(buffers: list[Buffer], alignment: int) -> None:
    placement = plan_arena(buffers, alignment)
    spans = {b.name: (placement.offsets[b.name], placement.offsets[b.name] + b.size) for b in buffers}
    for a in buffers:
        assert placement.offsets[a.name] % alignment == 0
        assert spans[a.name][1] <= placement.size
        for b in buffers:
            if a.name < b.name and a.size and b.size and a.first <= b.last and b.first <= a.last:
                assert not _overlap(spans[a.name], spans[b.name]), (a, b, placement)
    assert placement.size >= placement.peak == peak_live_bytes(buffers, alignment)


@given(buffer_sets())
def test_placement_does_not_depend_on_input_order(buffers: list[Buffer]) -> None:
    assert plan_arena(buffers) == plan_arena(list(reversed(buffers)))


def test_a_chain_reuses_memory_and_meets_its_peak() -> None:
    chain = [Buffer(f"t{k}", 1000, k, k + 1) for k in range(10)]
    placement = plan_arena(chain)
    assert placement.peak == 2 * 1008
    assert placement.size == placement.peak
    assert placement.to_json()["bytes"] == 2016


@pytest.mark.parametrize(
    ("buffers", "alignment", "message"),
    [
        ([Buffer("a", 1, 0, 0), Buffer("a", 1, 0, 0)], 16, "listed twice"),
        ([Buffer("a", -1, 0, 0)], 16, "negative"),
        ([Buffer("a", 1, 3, 2)], 16, "not ordered"),
        ([Buffer("a", 1, 0, 0)], 12, "not a power of two"),
    ],
)
def test_bad_buffers_are_refused(buffers: list[Buffer], alignment: int, message: str) -> None:
    with pytest.raises(ArenaError, match=message):
        plan_arena(buffers, alignment)
