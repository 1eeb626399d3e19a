"""heliabuild.sweeps.table and .report on tables of their own records: the JSON round trip, the CSV's
null cells, measured figures with their units and scopes, and what the HTML shows for backends that measure
totals only or nothing. Tables read from real bundles are tested in tests/test_scons_sweep.py."""

from __future__ import annotations

import csv
import io
import json
import re
from types import MappingProxyType

from hypothesis import given
from hypothesis import strategies as st

from heliabuild.sweeps.grid import expand
from heliabuild.sweeps.report import Scale, sweep_html
from heliabuild.sweeps.table import Measured, SweepRow, SweepTable

POINTS = expand({"accelerator": ["ethos-u55-128", "ethos-u55-256"], "policy": ["a/p.yaml", {"x": 1}]})

measured = st.none() | st.builds(
    lambda median, segments, scope: (median, segments, scope),
    st.none() | st.floats(min_value=1e-6, max_value=1e6),
    st.lists(st.none() | st.floats(min_value=1e-6, max_value=1e6), min_size=2, max_size=2),
    st.none() | st.sampled_from(["host_wall_clock", "qemu_icount"]),
)


def row(index: int, cycles: tuple[int, int], figures: dict[str, tuple | None], kib: float | None) -> SweepRow:
    units = {"cycles": "cycles", "instructions": "instructions", "latency": "s"}
    return SweepRow(
        pipeline=f"s.{index + 1}",
        point=POINTS[index],
        estimated_cycles=cycles,
        measured=MappingProxyType(
            {
                quantity: None
                if figures.get(quantity) is None
                else Measured(
                    quantity, units[quantity], figures[quantity][2], figures[quantity][0], tuple(figures[quantity][1])
                )
                for quantity in units
            }
        ),
        vela_sram_used_kib=kib,
        vela_off_chip_flash_used_kib=None if kib is None else kib / 2,
        bundle=f"{POINTS[index].folder}/results/s.{index + 1}",
    )


@given(
    st.lists(
        st.tuples(
            st.tuples(st.integers(0, 10**7), st.integers(0, 10**7)),
            st.fixed_dictionaries({"cycles": measured, "instructions": measured, "latency": measured}),
            st.none() | st.floats(min_value=0, max_value=4096),
        ),
        min_size=1,
        max_size=len(POINTS),
    )
)
def test_a_table_round_trips_through_its_json_and_renders(rows: list) -> None:
    table = SweepTable("s", ("accelerator", "policy"), tuple(row(k, *entry) for k, entry in enumerate(rows)))
    document = json.loads(json.dumps(table.to_json()))
    assert SweepTable.from_json(document, "s_sweep.json") == table
    lines = list(csv.reader(io.StringIO(table.to_csv())))
    assert len(lines) == 1 + len(rows) and {len(line) for line in lines} == {len(lines[0])}
    page = sweep_html(table)
    assert page.count("<tr>") == 1 + len(rows) and page.count('class="segment"') == 2 * len(rows)
    assert "<script" not in page


def test_null_is_an_empty_cell_and_a_measurement_keeps_its_unit_and_scope() -> None:
    qemu_like = {"instructions": (12345.0, [None, None], "qemu_icount")}
    table = SweepTable("s", ("accelerator", "policy"), (row(0, (100, 200), qemu_like, None),))
    (line,) = csv.DictReader(io.StringIO(table.to_csv()))
    assert line["policy"] == "a/p.yaml" and line["measured_instructions_median"] == "12345.0"
    assert line["measured_instructions_segments"] == "-/-" and line["measured_instructions_scope"] == "qemu_icount"
    assert line["measured_latency_median"] == line["measured_cycles_unit"] == line["vela_sram_used_kib"] == ""
    assert (line["verification"], line["inputs"]) == ("not compared", "zeros")
    text = table.to_text()
    assert "12345 instructions qemu_icount" in text and text.splitlines()[3].split()[-2:] == ["-", "-"]
    assert "  verification  inputs  Vela SRAM  Vela flash" in text.splitlines()[1]
    assert "  not compared  zeros  " in text.splitlines()[3]
    page = sweep_html(table)
    # only a total was measured: one dot for the run, at the sum of the estimate
    assert page.count('class="measured"') == 1 and "total, 300 estimated cycles, 12345 instructions" in page


def test_without_any_measurement_the_report_says_so() -> None:
    table = SweepTable("s", ("accelerator", "policy"), (row(1, (5, 7), {}, 10.0), row(3, (1, 2), {}, 9.5)))
    page = sweep_html(table)
    assert 'id="no-measurements"' in page and "<circle" not in page
    assert re.search(r"accelerator=ethos-u55-256, policy=\{&quot;x&quot;:1\}", page)  # labels are escaped


def test_a_scale_is_logarithmic_only_for_positive_values_spanning_more_than_20x() -> None:
    assert Scale.of([1.0, 10.0]) == Scale(0.0, 10.0, False)
    assert Scale.of([0.0, 1000.0]).log is False
    wide = Scale.of([3.0, 9000.0])
    assert wide == Scale(1.0, 10000.0, True) and wide.fraction(100.0) == 0.5
    assert wide.ticks()[:3] == [1.0, 10.0, 100.0]
    assert Scale.of([30.0, 900.0]).ticks() == [10.0, 20.0, 50.0, 100.0, 200.0, 500.0, 1000.0]
