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


def spread_of(median: float | None, spread: tuple[int, float, float]) -> tuple[int | None, float | None, float | None]:
    """(n, min, max) around `median`, none of them without a median (no total was measured)."""
    if median is None:
        return None, None, None
    count, below, above = spread
    return count, median - below * median, median + above * median


measured = st.none() | st.builds(
    lambda median, segments, scope, spread: (median, segments, scope, *spread_of(median, spread)),
    st.none() | st.floats(min_value=1e-6, max_value=1e6),
    st.lists(st.none() | st.floats(min_value=1e-6, max_value=1e6), min_size=2, max_size=2),
    st.none() | st.sampled_from(["host_wall_clock", "qemu_icount", "npu_callbacks"]),
    st.tuples(st.integers(1, 10), st.floats(0, 0.5), st.floats(0, 2)),
)

UNITS = {"cycles": "cycles", "traffic_beats": "beats", "instructions": "instructions", "latency": "s"}


def row(
    index: int, cycles: tuple[int, int], figures: dict[str, tuple | None], kib: float | None, **more: str
) -> SweepRow:
    def measured_of(quantity: str, figure: tuple) -> Measured:
        median, segments, scope, count, low, high = figure
        return Measured(quantity, UNITS[quantity], scope, median, tuple(segments), count, low, high)

    return SweepRow(
        pipeline=f"s.{index + 1}",
        point=POINTS[index],
        estimated_cycles=cycles,
        measured=MappingProxyType({q: None if figures.get(q) is None else measured_of(q, figures[q]) for q in UNITS}),
        vela_sram_used_kib=kib,
        vela_off_chip_flash_used_kib=None if kib is None else kib / 2,
        bundle=f"{POINTS[index].folder}/results/s.{index + 1}",
        **more,
    )


@given(
    st.lists(
        st.tuples(
            st.tuples(st.integers(0, 10**7), st.integers(0, 10**7)),
            st.fixed_dictionaries({quantity: measured for quantity in UNITS}),
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
    measured_rows = sum(m is not None and m[0] is not None for _, figures, _ in rows for m in figures.values())
    assert page.count('class="measured"') == measured_rows  # one dot per point and scope it measured
    assert "<script" not in page and "e+" not in table.to_text()


QEMU = {"instructions": (12345.0, [None, None], "qemu_icount", 3, 12340.0, 12350.0)}
LITERT = {"latency": (0.000612, [0.0004, 0.0002], "host_wall_clock", 10, 0.0006, 0.00063)}


def test_the_text_table_and_csv_name_each_figure_with_its_scope_n_and_spread() -> None:
    table = SweepTable("s", ("accelerator", "policy"), (row(0, (100, 2000), QEMU, None), row(1, (5, 7), LITERT, 72.65)))
    lines = table.to_text().splitlines()
    assert lines[0] == "sweep s: 2 points"
    assert re.split(r"\s{2,}", lines[1]) == [
        "point",
        "pipeline",
        "segments",
        "Vela NPU estimate (cycles per segment)",
        "measured",
        "median",
        "spread",
        "verification",
        "inputs",
        "Vela SRAM",
        "Vela flash",
    ]
    cells = [re.split(r"\s{2,}", line) for line in lines[3:5]]
    assert cells[0][3:7] == [
        "100/2,000",
        "measured (QEMU M55 instructions, CPU only, n=3)",
        "12,345 instructions",
        "10 (0.1%)",
    ]
    assert cells[1][3:7] == ["5/7", "measured (host time, LiteRT, n=10)", "612.0 us", "30.00 us (4.9%)"]
    assert cells[1][-2:] == ["72.7 KiB", "36.3 KiB"] and cells[0][-2:] == ["-", "-"]
    assert lines[5:] == [
        "note: host time is LiteRT on this machine's CPU: not comparable with Vela's NPU estimate",
        "note: qemu-m55 counts the Cortex-M55's instructions with every operator on the CPU (no NPU): not comparable "
        "with Vela's NPU estimate",
    ]
    qemu, litert = csv.DictReader(io.StringIO(table.to_csv()))
    assert qemu["policy"] == "a/p.yaml" and qemu["measured_instructions_median"] == "12345.0"
    assert qemu["measured_instructions_label"] == "measured (QEMU M55 instructions, CPU only, n=3)"
    assert (qemu["measured_instructions_n"], qemu["measured_instructions_min"]) == ("3", "12340.0")
    assert qemu["measured_instructions_segments"] == "-/-" and qemu["measured_instructions_scope"] == "qemu_icount"
    assert qemu["measured_latency_median"] == qemu["measured_cycles_unit"] == qemu["vela_sram_used_kib"] == ""
    assert litert["measured_latency_segments"] == "0.0004/0.0002" and litert["measured_latency_unit"] == "s"
    assert (qemu["verification"], qemu["inputs"]) == ("not compared", "zeros")


def test_the_report_gives_each_scope_its_own_panel_and_labels_each_dot_by_its_point() -> None:
    more = {"vela_version": "4.2.0", "heliabuild_version": "0.1.0", "measured_at": "2026-12-02T01:02:03+00:00"}
    table = SweepTable(
        "s", ("accelerator", "policy"), (row(0, (100, 2000), QEMU, None, **more), row(1, (5, 7), LITERT, 72.65, **more))
    )
    page = sweep_html(table)
    assert '<p class="note" id="provenance">heliabuild 0.1.0, Vela 4.2.0, measured 2026-12-02 (UTC, the bundles' in page
    panels = {
        name: page[
            page.index(f'<svg id="measured-{name}"') : page.index("</svg>", page.index(f'<svg id="measured-{name}"'))
        ]
        for name in ("instructions", "latency")
    }
    assert 'id="measured-cycles"' not in page and 'id="measured-traffic_beats"' not in page
    instructions, latency = panels["instructions"], panels["latency"]
    # each panel: only its own points, its own axis in its own unit; host time never on the estimate's axis
    assert instructions.count('class="measured"') == latency.count('class="measured"') == 1
    assert ">instructions (instructions)</text>" in instructions and ">host time (us)</text>" in latency
    assert ">12,345 instructions, n=3, spread 10 (0.1%)</text>" in instructions
    assert ">612.0 us, n=10, spread 30.00 us (4.9%)</text>" in latency
    assert 'class="spread"' in latency and "estimate" not in latency.lower()
    # the dots are coloured by point (two points, two colours) and carry the point's label
    colours = re.findall(r'<circle class="measured"[^>]* fill="(#[0-9a-f]{6})"', page)
    assert len(set(colours)) == 2
    assert "<title>accelerator=ethos-u55-128, policy=a/p.yaml: 12,345 instructions, n=3" in instructions
    # the table links each bundle and says what measured each figure
    assert '<a href="accelerator=ethos-u55-128,policy=p.yaml/results/s.1/result.json">' in page
    assert "<td>measured (host time, LiteRT, n=10)</td>" in page


def test_without_any_measurement_the_report_says_so() -> None:
    table = SweepTable("s", ("accelerator", "policy"), (row(1, (5, 7), {}, 10.0), row(3, (1, 2), {}, 9.5)))
    page = sweep_html(table)
    assert 'id="no-measurements"' in page and "<circle" not in page
    assert re.search(r"accelerator=ethos-u55-256, policy=\{&quot;x&quot;:1\}", page)  # labels are escaped
    assert "measured no time recorded" in page


def test_a_scale_is_logarithmic_only_for_positive_values_spanning_more_than_20x() -> None:
    assert Scale.of([1.0, 10.0]) == Scale(0.0, 10.0, False)
    assert Scale.of([0.0, 1000.0]).log is False
    wide = Scale.of([3.0, 9000.0])
    assert wide == Scale(1.0, 10000.0, True) and wide.fraction(100.0) == 0.5
    assert wide.ticks()[:3] == [1.0, 10.0, 100.0]
    assert Scale.of([30.0, 900.0]).ticks() == [10.0, 20.0, 50.0, 100.0, 200.0, 500.0, 1000.0]
