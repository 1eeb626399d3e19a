"""heliabuild.tables (the one text table every view prints) and heliabuild.units (figures as text): exact
lines for a user's table, alignment for all cells (hypothesis), and the unit style of every view."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from heliabuild.tables import text_table
from heliabuild.units import count_text, kib_text, time_text, time_unit


def test_a_table_is_a_header_a_rule_and_rows_with_figures_on_the_right() -> None:
    lines = text_table(["pipeline", "median"], [["kws", "612.1 us"], ["resnet_long", "6.971 ms"]], right={1})
    assert lines == [
        "pipeline       median",
        "-----------  --------",
        "kws          612.1 us",
        "resnet_long  6.971 ms",
    ]
    assert text_table(["a", "b"], [["x", ""]], indent="  ") == ["  a  b", "  -  -", "  x"]


def test_a_row_of_another_width_is_refused() -> None:
    with pytest.raises(ValueError, match="a table row has 1 cells, its header 2"):
        text_table(["a", "b"], [["x"]])


cell = st.text(st.characters(min_codepoint=33, max_codepoint=126), max_size=12)
heading = st.text(st.characters(min_codepoint=33, max_codepoint=126), min_size=1, max_size=12)


@given(
    st.integers(1, 5).flatmap(
        lambda n: st.tuples(
            st.lists(heading, min_size=n, max_size=n), st.lists(st.lists(cell, min_size=n, max_size=n), max_size=6)
        )
    )
)
def test_every_column_starts_at_one_place_in_every_line(table: tuple[list[str], list[list[str]]]) -> None:
    header, rows = table
    lines = text_table(header, rows)
    assert len(lines) == 2 + len(rows) and all(line == line.rstrip() for line in lines)
    starts, position = [], 0
    for dashes in lines[1].split("  "):
        starts.append(position)
        position += len(dashes) + 2
    for line, cells in zip([lines[0], *lines[2:]], [header, *rows], strict=True):
        for start, text in zip(starts, cells, strict=True):
            assert line[start : start + len(text)] == text


def test_figures_read_the_same_in_every_view() -> None:
    assert [kib_text(v) for v in (72.65, 1024.0, 0.04, None)] == ["72.7 KiB", "1,024.0 KiB", "0.0 KiB", "-"]
    assert [count_text(v) for v in (46072071, 46072071.0, 12345.5, 0, None)] == [
        "46,072,071",
        "46,072,071",
        "12,345.5",
        "0",
        "-",
    ]
    assert [time_text(v) for v in (0.000612089, 7.96785e-05, 0.0069713, 1.5, 2500.0, None)] == [
        "612.1 us",
        "79.68 us",
        "6.971 ms",
        "1.500 s",
        "2,500 s",
        "-",
    ]
    assert time_text(0.000002, time_unit(0.002)) == "0.002 ms"
    assert time_unit(None) == (1e-6, "us") and time_unit(0.5) == (1e-3, "ms")
