"""`heliabuild show`: each backend's own figure (instructions on qemu-m55, NPU cycles and beats on an FVP, host
time on litert) named with what measured it and n, in us/ms and whole numbers, with median, mean, min/max and
spread, flagged above 10% of the median; estimates and measurements in separate columns; `show --plot`: one
matplotlib path for SVG and PNG, a panel per measured figure of the backend, axis titles, a median line, no
overlapping labels at many samples, deterministic files, and the refusal of a plot it cannot write."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

from helpers.checks import assert_not_written, assert_one_line_error
from helpers.skips import require_module
from test_results_compare import MODEL_A, SEGMENTS, hand_made

from heliabuild.files import json_text
from heliabuild.results.bundle import Sample, signatures_of, write_bundle
from heliabuild.results.receipt import Receipt

SCOPES = {
    "qemu-m55": {"instructions": "qemu_icount"},
    "fvp": {"cycles": "npu_callbacks", "traffic_beats": "npu_callbacks"},
}


def counted(target: Path, backend: str, totals: list[int]) -> Path:
    """A verified bundle of `backend` (qemu-m55: instructions; fvp: NPU cycles and traffic beats), one sample per
    total, split 3:1 between the two segments, as those backends measure."""
    samples, outputs = [], []
    for index, total in enumerate(totals):
        out = [("out", bytes([index]))]
        split = {"total": total, "segments": [total * 3 // 4, total - total * 3 // 4]}
        figures = (
            {"instructions": split}
            if backend == "qemu-m55"
            else {"cycles": split, "traffic_beats": total // 8, "segment_traffic_beats": [total // 8, 0]}
        )
        samples.append(Sample(index=index, signatures=signatures_of(out), **figures))
        outputs.append(out)
    write_bundle(
        target,
        runner_info={"sha256": "c" * 64, "format": 2},
        run_identity={
            "runner_sha256": "c" * 64,
            "model_sha256": MODEL_A,
            "backend": backend,
            "policy": {"state": "carry", "warmup_invokes": 0, "measured_invokes": len(totals)},
        },
        receipt=Receipt("carry", 0, len(totals), "before_measurement", None),
        samples=samples,
        output_bytes=outputs,
        segments=SEGMENTS,
        provider_versions={"ai-edge-litert": "1.2.0", "heliabuild": "0.1.0"},
        created_at=None,
        scopes=SCOPES[backend],
        runtime="aot",
    )
    return target


def section(text: str, title: str) -> list[list[str]]:
    """The rows of the table under the line starting with `title`, each split at runs of 2+ spaces."""
    lines = text.splitlines()
    start = next(k for k, line in enumerate(lines) if line.startswith(title))
    rows = []
    for line in lines[start + 1 :]:
        if not line.strip() or line.startswith("note: "):
            break
        rows.append(re.split(r"\s{2,}", line.strip()))
    return rows


def test_show_of_litert_names_host_time_with_n_in_us_and_flags_a_wide_spread(cli, tmp_path: Path) -> None:
    bundle = hand_made(tmp_path / "run", [0.000612089, 7.96785e-05, 0.0011])
    result = cli("show", bundle)
    assert result.code == 0, result.err
    rows = section(result.out, "measurements (over the samples; spread = max - min, ! where it exceeds 10%")
    assert rows[0] == ["figure", "measured", "median", "mean", "min", "max", "spread", "of median", "flag"]
    assert rows[2] == [
        "latency_s",
        "measured (host time, LiteRT, n=3)",
        "612.1 us",
        "597.3 us",
        "79.68 us",
        "1,100 us",
        "1,020 us",
        "166.7%",
        "!",
    ]
    assert "note: host time is LiteRT on this machine's CPU: not comparable with Vela's NPU estimate" in result.out
    samples = section(result.out, "samples")
    assert samples[0] == ["sample", "host time", "signatures"]
    assert [row[:2] for row in samples[2:]] == [
        ["sample 0", "0.612 ms"],
        ["sample 1", "0.080 ms"],
        ["sample 2", "1.100 ms"],
    ]
    assert "e-0" not in result.out and "cycles" not in samples[0]


def test_estimates_and_measurements_are_separate_columns(cli, tmp_path: Path) -> None:
    bundle = hand_made(tmp_path / "run", [0.001, 0.001])
    text = cli("show", bundle).out
    assert "segments (Vela NPU estimate: Vela's estimated NPU cycles, not a measurement)\n" in text
    assert section(text, "segments (")[2] == ["0", "0..3", "1,000"]
    timed = hand_made(tmp_path / "timed", [0.003, 0.003], segment_latencies=[[0.002, 0.001], [0.002, 0.0012]])
    text = cli("show", timed).out
    title = (
        "segments (Vela NPU estimate: Vela's estimated NPU cycles, not a measurement; host time median: measured "
        "(host time, LiteRT, n=2))"
    )
    assert title in text.splitlines()
    rows = section(text, title)
    assert rows[0] == ["segment", "ops", "Vela NPU estimate (cycles)", "host time median"]
    assert rows[2:] == [["0", "0..3", "1,000", "2.000 ms"], ["1", "4..8", "500", "1.100 ms"]]


def test_show_of_qemu_m55_tabulates_instructions_in_total_and_per_segment(cli, tmp_path: Path) -> None:
    bundle = counted(tmp_path / "qemu", "qemu-m55", [46072071, 46072071, 46072071])
    text = cli("show", bundle).out
    measured = {row[0]: row for row in section(text, "measurements (")[2:]}
    assert measured["instructions.total"][1:4] == [
        "measured (QEMU M55 instructions, CPU only, n=3)",
        "46,072,071",
        "46,072,071",
    ]
    assert measured["instructions.segment.1"][2] == "11,518,018" and "latency_s" not in measured
    samples = section(text, "samples")
    assert samples[0] == ["sample", "instructions total", "instructions seg 0", "instructions seg 1", "signatures"]
    assert samples[2][:4] == ["sample 0", "46,072,071", "34,554,053", "11,518,018"]
    segments = section(text, "segments (")
    assert segments[0][-1] == "instructions median" and segments[2] == ["0", "0..3", "1,000", "34,554,053"]
    assert (
        "note: qemu-m55 counts the Cortex-M55's instructions with every operator on the CPU (no NPU): not comparable "
        "with Vela's NPU estimate"
    ) in text
    assert "4.6072e+07" not in text and "host time" not in text


def test_show_of_fvp_tabulates_npu_cycles_and_beats(cli, tmp_path: Path) -> None:
    text = cli("show", counted(tmp_path / "fvp", "fvp", [12000, 12400])).out
    measured = {row[0]: row for row in section(text, "measurements (")[2:]}
    assert measured["cycles.total"][1:3] == ["measured (NPU cycles, FVP, n=2)", "12,200"]
    assert measured["traffic_beats"][1] == "measured (NPU traffic beats, FVP, n=2)"
    samples = section(text, "samples")
    assert samples[0] == [
        "sample",
        "NPU cycles total",
        "NPU cycles seg 0",
        "NPU cycles seg 1",
        "NPU beats",
        "NPU beats seg 0",
        "NPU beats seg 1",
        "signatures",
    ]
    assert samples[3][:5] == ["sample 1", "12,400", "9,300", "3,100", "1,550"]
    assert "note:" not in text  # NPU cycles are what Vela estimates


def test_a_steady_run_is_not_flagged(cli, tmp_path: Path) -> None:
    bundle = hand_made(tmp_path / "run", [0.001, 0.00105, 0.001])
    row = next(line for line in cli("show", bundle).out.splitlines() if line.strip().startswith("latency_s"))
    assert row.split()[-1] == "5.0%"


def _texts(svg: str) -> list[str]:
    return [text.strip() for text in re.findall(r"<text[^>]*>([^<>]+)</text>", svg)]


def test_the_svg_plot_has_a_panel_per_measured_figure_axis_titles_and_a_median(cli, tmp_path: Path) -> None:
    require_module("matplotlib", "the plot extra: pip install heliabuild[plot]")
    bundle = counted(tmp_path / "qemu", "qemu-m55", [46072071, 46072071, 46072075])
    result = cli("show", bundle, "--plot", tmp_path / "plot.svg")
    assert result.code == 0, result.err
    texts = _texts((tmp_path / "plot.svg").read_text(encoding="utf-8"))
    titles = [text for text in texts if "(" in text and ("estimate" in text or "measured" in text)]
    assert titles == [
        "Vela NPU estimate per segment (Vela's compile-time estimate, not measured)",
        "measured (QEMU M55 instructions, CPU only, n=3): per sample; dashed line: median 46,072,071 instructions",
        "measured (QEMU M55 instructions, CPU only, n=3): median per segment",
    ]
    assert texts.count("segment") == 2 and texts.count("sample") == 1  # the x axis titles
    assert "estimated NPU cycles" in texts and texts.count("instructions") == 2  # the y axis titles
    assert "46,072,075" in texts and "1,000" in texts  # whole numbers, with thousands separators
    assert not [text for text in texts if re.search(r"\de[+-]\d", text)]  # no exponent anywhere

    litert = hand_made(tmp_path / "litert", [0.0001, 0.00012, 0.00011])
    assert cli("show", litert, "--plot", tmp_path / "litert.svg").code == 0
    texts = _texts((tmp_path / "litert.svg").read_text(encoding="utf-8"))
    assert "measured (host time, LiteRT, n=3): per sample; dashed line: median 110 us" in texts
    assert "host time (us)" in texts and not any("instructions" in text for text in texts)


def test_labels_do_not_overlap_at_many_samples(tmp_path: Path) -> None:
    require_module("matplotlib", "the plot extra: pip install heliabuild[plot]")
    from heliabuild.results.plot import MAX_VALUE_LABELS, MAX_X_TICKS, figure_of
    from heliabuild.results.reader import load_result

    for count in (12, 20, 60, 250):
        figure = figure_of(load_result(hand_made(tmp_path / f"run{count}", [0.001 + 1e-6 * k for k in range(count)])))
        try:
            figure.canvas.draw()
            renderer = figure.canvas.get_renderer()
            estimates, per_sample = figure.axes
            assert len(estimates.texts) == 2  # each segment's estimate on its bar
            assert len(per_sample.texts) == (count if count <= MAX_VALUE_LABELS else 0)  # beyond: the axis only
            for axis in figure.axes:
                labels = [label for label in axis.get_xticklabels() if label.get_visible() and label.get_text()]
                assert 1 <= len(labels) <= MAX_X_TICKS + 1
                boxes = [label.get_window_extent(renderer) for label in labels]
                boxes += [text.get_window_extent(renderer) for text in axis.texts]
                for k, box in enumerate(boxes):
                    assert not any(box.overlaps(other) for other in boxes[k + 1 :]), (count, k)
        finally:
            from matplotlib import pyplot

            pyplot.close(figure)


def test_svg_and_png_are_written_by_one_matplotlib_path_deterministically(cli, tmp_path: Path) -> None:
    """A real PNG and SVG through the `plot` extra (installed with the `test` extra): valid files, the same bytes
    each time, with no date in their metadata, for few samples and for many."""
    require_module("matplotlib", "the plot extra: pip install heliabuild[plot]")
    from PIL import Image

    for name, latencies in (("few", [0.0001, 0.00012, 0.00011]), ("many", [0.001 + 1e-6 * k for k in range(200)])):
        bundle = hand_made(tmp_path / name, latencies)
        for suffix in (".png", ".svg"):
            first, again = tmp_path / f"{name}{suffix}", tmp_path / f"{name}_again{suffix}"
            assert cli("show", bundle, "--plot", first).code == 0
            assert cli("show", bundle, "--plot", again).code == 0
            assert first.read_bytes() == again.read_bytes()
        data = (tmp_path / f"{name}.png").read_bytes()
        assert data.startswith(b"\x89PNG\r\n\x1a\n")
        with Image.open(tmp_path / f"{name}.png") as image:
            assert image.size == (800, 550) and "Software" not in image.info and "Creation Time" not in image.info
        svg = (tmp_path / f"{name}.svg").read_text(encoding="utf-8")
        assert svg.startswith("<?xml") and "<dc:date>" not in svg and "Matplotlib v" not in svg


def test_a_plot_it_cannot_write_is_refused_and_nothing_is_written(cli, tmp_path: Path, monkeypatch) -> None:
    bundle = hand_made(tmp_path / "run", [0.001])
    result = cli("show", bundle, "--plot", tmp_path / "plot.pdf")
    assert_one_line_error(result, "plot.pdf: cannot write a plot of type '.pdf'; expected one of .svg, .png")
    assert_not_written(tmp_path / "plot.pdf")
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # as where the optional extra is not installed
    for name in ("plot.png", "plot.svg"):
        refused = cli("show", bundle, "--plot", tmp_path / name)
        assert_one_line_error(refused, f"{name}: writing a plot needs matplotlib", "heliabuild[plot]")
        assert_not_written(tmp_path / name)


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
    assert "segments (Vela NPU estimate: Vela's estimate, not a measurement)\n" in result.out
    plotted = cli("show", vela.segments_json, "--plot", tmp_path / "p.svg")
    assert_one_line_error(plotted, "--plot plots a result bundle, not a segments.json")
    assert_not_written(tmp_path / "p.svg")


def test_show_format_json_is_what_the_tables_show_as_data(cli, tmp_path: Path) -> None:
    bundle = counted(tmp_path / "qemu", "qemu-m55", [46072071, 46072071, 46072079])
    result = cli("show", bundle, "--format", "json")
    assert result.code == 0, result.err
    document = json.loads(result.out)
    assert result.out == json_text(document)  # canonical: sorted keys, 2-space indent, final newline
    assert (document["backend"], document["stage"], document["inputs"]) == ("qemu-m55", "executed", "zeros")
    assert document["verification"]["text"] == "outputs not compared" and document["verification"]["compared"] is False
    figures = {figure["name"]: figure for figure in document["figures"]}
    total = figures["instructions.total"]
    assert total["label"] == "measured (QEMU M55 instructions, CPU only, n=3)"
    assert (total["scope"], total["unit"], total["what"]) == (
        "qemu_icount",
        "instructions",
        "QEMU M55 instructions, CPU only",
    )
    assert (total["median"], total["min"], total["max"], total["spread"]) == (46072071, 46072071, 46072079, 8)
    assert all(type(total[key]) is int for key in ("median", "min", "max", "spread"))  # counts as integers
    assert [segment["vela_npu_estimate_cycles"] for segment in document["segments"]] == [1000, 500]
    assert document["segments"][0]["measured_median"] == {"instructions": 34554053}
    assert document["samples"][2]["instructions"]["total"] == 46072079 and len(document["samples"]) == 3

    litert = json.loads(cli("show", hand_made(tmp_path / "litert", [0.0001, 0.00012]), "--format", "json").out)
    (latency,) = litert["figures"]
    assert latency["label"] == "measured (host time, LiteRT, n=2)" and latency["unit"] == "s"
    assert latency["median"] == 0.00011 and latency["scope"] == "host_wall_clock"

    require_module("matplotlib", "the plot extra: pip install heliabuild[plot]")
    plotted = cli("show", bundle, "--format", "json", "--plot", tmp_path / "p.svg")
    assert plotted.code == 0 and json.loads(plotted.out) == document  # stdout is the document alone
    assert plotted.err == f"heliabuild: plot {tmp_path / 'p.svg'}\n"
    refused = cli("show", bundle, "--format", "xml")
    assert refused.code == 2 and refused.out == "" and "invalid choice: 'xml'" in refused.err


def test_a_bundle_with_nothing_to_plot_is_refused_and_shown(cli, tmp_path: Path) -> None:
    """A build_only bundle of a runner without Vela's segments: no estimate, no sample, so no panel at all."""
    require_module("matplotlib", "the plot extra: pip install heliabuild[plot]")
    write_bundle(
        tmp_path / "built",
        runner_info={"sha256": "c" * 64, "format": 2},
        run_identity={"runner_sha256": "c" * 64, "model_sha256": MODEL_A, "backend": "litert", "policy": {}},
        receipt=None,
        samples=[],
        output_bytes=[],
        segments=[],
        provider_versions={"ai-edge-litert": "1.2.0", "heliabuild": "0.1.0"},
        created_at=None,
        stage="build_only",
    )
    shown = cli("show", tmp_path / "built")
    assert shown.code == 0 and "  (the run stage did not execute)" in shown.out
    refused = cli("show", tmp_path / "built", "--plot", tmp_path / "p.svg")
    assert_one_line_error(refused, "p.svg: nothing to plot: the bundle has no Vela estimate and no measured figure")
    assert_not_written(tmp_path / "p.svg")
