"""`heliabuild show`: per-figure median, mean, min/max and spread, flagged above 10% of the median, estimates
and measurements in separate columns; `show --plot`: axes with tick values, value labels, thinned x labels,
and the refusal of a plot it cannot write (nothing written)."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest
from helpers.checks import assert_not_written, assert_one_line_error
from test_results_compare import hand_made


def test_show_summarises_every_measured_figure_and_flags_a_wide_spread(cli, tmp_path: Path) -> None:
    bundle = hand_made(tmp_path / "run", [0.001, 0.003, 0.0011])
    result = cli("show", bundle)
    assert result.code == 0, result.err
    lines = result.out.splitlines()
    title = "measurements (over the samples; spread = max - min, ! where it exceeds 10% of the median)"
    start = lines.index(title)
    header = ["figure", "count", "median", "mean", "min", "max", "spread", "of", "median", "flag"]
    assert lines[start + 1].split() == header
    rows = {line.split()[0]: line.split() for line in lines[start + 3 : start + 4]}
    assert rows["latency_s"] == ["latency_s", "3", "0.0011", "0.0017", "0.001", "0.003", "0.002", "181.8%", "!"]


def test_estimates_and_measurements_are_separate_columns(cli, tmp_path: Path) -> None:
    bundle = hand_made(tmp_path / "run", [0.001, 0.001])
    text = cli("show", bundle).out
    assert "segments (estimated cycles: Vela's estimate, not a measurement)\n" in text
    assert "segment   ops  estimated_cycles\n" in text and "      0  0..3              1000\n" in text
    timed = hand_made(tmp_path / "timed", [0.003, 0.003], segment_latencies=[[0.002, 0.001], [0.002, 0.0012]])
    lines = cli("show", timed).out.splitlines()
    title = "segments (estimated cycles: Vela's estimate, not a measurement; segment_latency_s median: measured)"
    start = lines.index(title)
    assert lines[start + 1].split() == ["segment", "ops", "estimated_cycles", "segment_latency_s", "median"]
    assert lines[start + 3].split() == ["0", "0..3", "1000", "0.002"]
    assert lines[start + 4].split() == ["1", "4..8", "500", "0.0011"]


def test_a_steady_run_is_not_flagged(cli, tmp_path: Path) -> None:
    bundle = hand_made(tmp_path / "run", [0.001, 0.00105, 0.001])
    row = next(line for line in cli("show", bundle).out.splitlines() if line.strip().startswith("latency_s"))
    assert row.split()[-1] == "5.0%"


def _texts(svg: str) -> list[str]:
    return re.findall(r">([^<>]+)</text>", svg)


def test_the_svg_plot_has_tick_values_and_value_labels(cli, tmp_path: Path) -> None:
    bundle = hand_made(tmp_path / "run", [0.001, 0.002, 0.0015])
    result = cli("show", bundle, "--plot", tmp_path / "plot.svg")
    assert result.code == 0, result.err
    svg = (tmp_path / "plot.svg").read_text(encoding="utf-8")
    texts = _texts(svg)
    for tick in ("0", "250", "500", "750", "1000"):  # the estimates' y axis: round steps up to the peak
        assert tick in texts
    assert "measured latency per sample (ms)" in texts  # in the unit that suits the largest latency
    for tick in ("0.5", "1", "1.5", "2"):  # the latency axis, in ms
        assert tick in texts
    assert [t for t in texts if t.startswith("sample ")] == ["sample 0", "sample 1", "sample 2"]
    assert texts.count("1.5") == 2  # a tick and the value label of sample 2
    assert svg.count("<rect") == 5 and svg.count("<line") > 4


def test_many_samples_thin_the_x_labels(cli, tmp_path: Path) -> None:
    bundle = hand_made(tmp_path / "run", [0.001 + 1e-6 * k for k in range(60)])
    assert cli("show", bundle, "--plot", tmp_path / "plot.svg").code == 0
    texts = _texts((tmp_path / "plot.svg").read_text(encoding="utf-8"))
    labels = [t for t in texts if t.startswith("sample ")]
    assert labels == [f"sample {k}" for k in range(0, 60, 3)]  # at most 20 labels
    assert "1.06" not in texts  # beyond 40 bars the values are in the tooltips only


def test_the_png_plot_is_written_through_matplotlib_deterministically(cli, tmp_path: Path) -> None:
    """A real PNG through the `plot` extra (installed with the `test` extra): a valid image, the same bytes
    each time, with no date in its metadata, for few samples and for many."""
    pytest.importorskip("matplotlib")
    from PIL import Image

    for name, latencies in (("few", [0.0001, 0.00012, 0.00011]), ("many", [0.001 + 1e-6 * k for k in range(200)])):
        bundle = hand_made(tmp_path / name, latencies)
        first, again = tmp_path / f"{name}.png", tmp_path / f"{name}_again.png"
        assert cli("show", bundle, "--plot", first).code == 0
        assert cli("show", bundle, "--plot", again).code == 0
        data = first.read_bytes()
        assert data.startswith(b"\x89PNG\r\n\x1a\n") and data == again.read_bytes()
        with Image.open(first) as image:
            assert image.size == (800, 650) and "Software" not in image.info and "Creation Time" not in image.info


def test_plot_panels_scale_the_latency_and_label_values_briefly(tmp_path: Path) -> None:
    from heliabuild.results.export import _panels, _value_label
    from heliabuild.results.reader import load_result

    panels = _panels(load_result(hand_made(tmp_path / "run", [0.0001, 0.00012])))
    assert [panel[0] for panel in panels] == [
        "estimated cycles per segment (Vela's estimate)",
        "measured latency per sample (us)",
    ]
    assert [round(value, 6) for _, value in panels[1][2]] == [100.0, 120.0]
    assert [_value_label(v) for v in (48517.0, 0.000107577, 103.2, None)] == ["48517", "0.000108", "103", "-"]


def test_a_plot_it_cannot_write_is_refused_and_nothing_is_written(cli, tmp_path: Path, monkeypatch) -> None:
    bundle = hand_made(tmp_path / "run", [0.001])
    result = cli("show", bundle, "--plot", tmp_path / "plot.pdf")
    assert_one_line_error(result, "plot.pdf: cannot write a plot of type '.pdf'; expected one of .svg, .png")
    assert_not_written(tmp_path / "plot.pdf")
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # as where the optional extra is not installed
    png = cli("show", bundle, "--plot", tmp_path / "plot.png")
    assert_one_line_error(png, "plot.png: writing a PNG plot needs matplotlib", "heliabuild[plot]")
    assert_not_written(tmp_path / "plot.png")


def test_show_of_a_segments_json_surfaces_vela_sram_and_flash_use(cli, tmp_path: Path) -> None:
    from heliabuild.model import save_model
    from heliabuild.synth import chain_network
    from heliabuild.vela import compile
    from heliabuild.vela.summary import read_summary

    save_model(chain_network(0), tmp_path / "chain.tflite")
    vela = compile(tmp_path / "chain.tflite", tmp_path / "vela")
    summary = read_summary(vela.summary_csv)
    result = cli("show", vela.segments_json)
    assert result.code == 0, result.err
    assert (
        f"  memory (Vela's allocation, not measured): SRAM used {summary.sram_memory_used_kib:.1f} KiB, "
        f"off-chip flash used {summary.off_chip_flash_memory_used_kib:.1f} KiB\n"
    ) in result.out
    assert "  command streams 1 (one per segment), attribution coverage 100.00% of " in result.out
    assert "segments (Vela's estimate, not a measurement)\n" in result.out
    plotted = cli("show", vela.segments_json, "--plot", tmp_path / "p.svg")
    assert_one_line_error(plotted, "--plot plots a result bundle, not a segments.json")
    assert_not_written(tmp_path / "p.svg")
