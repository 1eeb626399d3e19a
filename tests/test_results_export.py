"""`show` and `export` of a verified bundle."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest
from test_results_bundle import make_bundle

from heliabuild.errors import ResultError
from heliabuild.results.export import export
from heliabuild.results.show import show


@pytest.fixture
def bundle(tmp_path: Path) -> Path:
    return make_bundle(tmp_path / "run").parent


def test_show_labels_segments_and_every_sample(bundle: Path) -> None:
    text = show(bundle)
    assert "segments (Vela NPU estimate" in text and "0..3" in text and "4..7" in text
    for i in range(3):
        assert f"sample {i}" in text
    assert "Identity:0:" in text and "carry: 1 warmup, 3 measured" in text


def test_export_samples_csv_is_one_indexed_row_per_sample(bundle: Path) -> None:
    text = export(bundle, fields="samples", fmt="csv")
    rows = list(csv.DictReader(io.StringIO(text)))
    assert [row["index"] for row in rows] == ["0", "1", "2"]
    assert rows[1]["cycles_segment_1"] == "110" and rows[0]["energy"] == ""
    assert text == (bundle / "run_summary.csv").read_text()


def test_export_samples_json(bundle: Path) -> None:
    samples = json.loads(export(bundle, fields="samples", fmt="json"))
    assert [s["index"] for s in samples] == [0, 1, 2]


def test_export_statistics_json_is_the_native_statistics(bundle: Path) -> None:
    statistics = json.loads(export(bundle, fields="statistics", fmt="json"))
    stored = json.loads((bundle / "result.json").read_text())["measurements"]["statistics"]
    assert statistics == stored
    assert statistics["counters"]["cycles.total"]["mean"] == {"numerator": 210, "denominator": 1}


def test_export_statistics_csv(bundle: Path) -> None:
    rows = {row["metric"]: row for row in csv.DictReader(io.StringIO(export(bundle, fmt="csv")))}
    assert rows["cycles.total"]["mean_numerator"] == "210" and rows["cycles.total"]["kind"] == "counter"
    assert rows["energy"]["count"] == "" and rows["latency_s"]["count"] == "" and rows["traffic_beats"]["count"] == "3"


def test_export_refuses_unknown_requests(bundle: Path) -> None:
    with pytest.raises(ResultError, match="--fields: found 'layers'"):
        export(bundle, fields="layers")
    with pytest.raises(ResultError, match="--format: found 'xml'"):
        export(bundle, fmt="xml")


def test_show_refuses_a_tampered_bundle(bundle: Path) -> None:
    (bundle / "run_summary.csv").write_text("index\n")
    with pytest.raises(ResultError, match=r"run_summary\.csv: sha256"):
        show(bundle)
