"""The typed readers of Vela's per-layer and summary CSVs: real files parse, broken ones name the file and place."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from heliabuild.errors import VelaError
from heliabuild.fence import rewrite_model_with_fences
from heliabuild.synth import chain_network
from heliabuild.vela import compile, read_per_layer, read_summary
from heliabuild.vela.summary import parse_summary

HEADER = (
    "Original Operator,NNG Operator,Target,Staging Usage,Peak% (Staging),Op Cycles,Network% (cycles),NPU,"
    "SRAM AC,DRAM AC,OnFlash AC,OffFlash AC,MAC Count,Network% (MAC),Util% (MAC),Name"
)
ROWS = [
    "Conv2D,Conv2D,NPU,128,12.5,26185,29.1,24000,512,0,0,3000,320000,10.0,5.0,conv_out",
    "Conv2D,Relu,NPU,0,0.0,0,0.0,0,0,0,0,0,0,0.0,0.0,conv_out",
    "Softmax,MaxPool,NPU,0,0.0,134,0.1,130,4,0,0,0,12,0.0,0.0,logits_softmax_0",
]
PER_LAYER = "\n".join([HEADER, *ROWS]) + "\n"
SUMMARY_HEADER = (
    "experiment,network,accelerator_configuration,system_config,memory_mode,core_clock,inferences_per_second,"
    "inference_time,sram_memory_used,off_chip_flash_memory_used,nn_macs,cycles_npu,cycles_total"
)
SUMMARY_ROW = (
    "default,m,Ethos_U55_128,Ethos_U55_High_End_Embedded,Shared_Sram,500000000.0,5561.7,0.00018,24.5,53.1,"
    "320012,24130,26319"
)
SUMMARY = f"{SUMMARY_HEADER}\r\n{SUMMARY_ROW}\r\n"


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8", newline="")
    return path


def raises(path: Path, reader, *fragments: str) -> str:
    with pytest.raises(VelaError) as caught:
        reader(path)
    message = caught.value.message
    assert message.startswith(f"{path}: "), message
    for fragment in fragments:
        assert fragment in message, (fragment, message)
    return message


# ---------------------------------------------------------------- per-layer CSV


def test_per_layer_rows_are_typed(tmp_path: Path) -> None:
    rows = read_per_layer(write(tmp_path, "m_per-layer.csv", PER_LAYER))
    assert [row.index for row in rows] == [0, 1, 2]
    first = rows[0]
    assert (first.original_operator, first.nng_operator, first.target, first.name) == (
        "Conv2D",
        "Conv2D",
        "NPU",
        "conv_out",
    )
    assert (first.op_cycles, first.npu_cycles, first.sram_access_cycles, first.off_flash_access_cycles) == (
        26185,
        24000,
        512,
        3000,
    )
    assert first.mac_count == 320000
    assert rows[2].to_json()["name"] == "logits_softmax_0"


def test_per_layer_columns_are_found_by_name_not_position(tmp_path: Path) -> None:
    table = list(csv.reader(PER_LAYER.splitlines()))
    reordered = [[line[-1], *line[:-1], "extra"] for line in table]
    text = "".join(",".join(line) + "\n" for line in reordered)
    assert read_per_layer(write(tmp_path, "moved.csv", text)) == read_per_layer(write(tmp_path, "m.csv", PER_LAYER))


def test_header_only_gives_no_rows(tmp_path: Path) -> None:
    assert read_per_layer(write(tmp_path, "empty.csv", HEADER + "\n")) == []


@pytest.mark.parametrize(
    ("text", "fragments"),
    [
        (PER_LAYER[: PER_LAYER.index("logits_softmax") + 6], ["row 3 is cut short"]),
        (PER_LAYER[: PER_LAYER.index(",134,")], ["row 3 is cut short", "'Op Cycles'"]),
        ("\n".join([HEADER, ROWS[0], "Conv2D,Relu,NPU"]) + "\n", ["row 2 is cut short", "'Op Cycles'"]),
        (PER_LAYER.replace(",Op Cycles,", ",Cycles,"), ["missing column(s) ['Op Cycles']"]),
        (PER_LAYER.replace(",Name", ",Label"), ["missing column(s) ['Name']"]),
        ("", ["not a Vela per-layer CSV"]),
        ("\x00\x01garbage\xff\n", ["not a Vela per-layer CSV"]),
        (PER_LAYER.replace(",134,", ",lots,"), ["row 3 column 'Op Cycles' is 'lots', not a number"]),
        (PER_LAYER.replace(",320000,", ",-5,"), ["row 1 column 'MAC Count' is '-5'", "whole count"]),
        (PER_LAYER.replace(",24000,", ",2.5,"), ["row 1 column 'NPU' is '2.5'"]),
        (PER_LAYER.replace(",512,", ",,"), ["row 1 column 'SRAM AC' is ''"]),
    ],
    ids=[
        "cut-in-name",
        "cut-mid-row",
        "short-row",
        "missing-cycles",
        "missing-name",
        "empty",
        "binary",
        "text-cell",
        "negative",
        "fraction",
        "empty-cell",
    ],
)
def test_broken_per_layer_csv(tmp_path: Path, text: str, fragments: list[str]) -> None:
    raises(write(tmp_path, "m_per-layer.csv", text), read_per_layer, *fragments)


def test_missing_per_layer_csv(tmp_path: Path) -> None:
    raises(tmp_path / "gone.csv", read_per_layer, "cannot read the per-layer CSV")


# ---------------------------------------------------------------- summary CSV


def test_summary_is_typed(tmp_path: Path) -> None:
    summary = read_summary(write(tmp_path, "m_summary_Ethos_U55_High_End_Embedded.csv", SUMMARY))
    assert (summary.accelerator, summary.system_config, summary.memory_mode) == (
        "Ethos_U55_128",
        "Ethos_U55_High_End_Embedded",
        "Shared_Sram",
    )
    assert summary.nn_macs == 320012 and summary.cycles_total == 26319 and summary.core_clock_hz == 5e8
    assert summary.fields["experiment"] == "default"
    assert set(summary.to_json()) >= {"system_config", "nn_macs", "cycles_total"}


@pytest.mark.parametrize(
    ("text", "fragments"),
    [
        (SUMMARY[:-5], ["cut short"]),
        (SUMMARY.replace("nn_macs", "macs"), ["missing column(s) ['nn_macs']"]),
        (SUMMARY.replace(",320012,", ",many,"), ["column 'nn_macs' is 'many', not a number"]),
        (SUMMARY + SUMMARY_ROW + "\r\n", ["this one has 2"]),
        (SUMMARY_HEADER + "\r\n", ["this one has 0"]),
        ("", ["this one has 0"]),
    ],
    ids=["cut", "missing-column", "text-cell", "two-rows", "no-row", "empty"],
)
def test_broken_summary_csv(tmp_path: Path, text: str, fragments: list[str]) -> None:
    raises(write(tmp_path, "m_summary_X.csv", text), read_summary, *fragments)


def test_missing_summary_csv(tmp_path: Path) -> None:
    raises(tmp_path / "gone.csv", read_summary, "cannot read the summary CSV")
    with pytest.raises(VelaError, match=r"^summary CSV: "):
        parse_summary("")


# ---------------------------------------------------------------- what real Vela writes


@pytest.mark.slow
@pytest.mark.parametrize("accelerator", ["ethos-u55-128", "ethos-u85-256"])
def test_real_vela_csvs_parse(tmp_path: Path, accelerator: str) -> None:
    fenced = tmp_path / "chain_fenced.tflite"
    rewrite_model_with_fences(chain_network(0), [1, 3]).save(fenced)
    result = compile(fenced, tmp_path / "out", accelerator=accelerator)
    rows = read_per_layer(result.per_layer_csv)
    with open(result.per_layer_csv, encoding="utf-8", newline="") as handle:
        table = list(csv.DictReader(handle))
    assert len(rows) == len(table) > 0
    assert [row.op_cycles for row in rows] == [int(line["Op Cycles"]) for line in table]
    assert [row.name for row in rows] == [line["Name"] for line in table]
    assert {row.target for row in rows} == {"NPU", "CPU"}
    assert sum(row.target == "CPU" for row in rows) == 2  # the two fences
    summary = read_summary(result.summary_csv)
    assert summary.accelerator.lower().replace("_", "-") == accelerator
    assert summary.nn_macs == sum(row.mac_count for row in rows)
    assert summary.cycles_total == pytest.approx(sum(row.op_cycles for row in rows), rel=1e-6)
    if accelerator.startswith("ethos-u85"):
        # Ethos-U85 copies a command stream's input before a 1x1 convolution that reads it
        assert [row.name for row in rows if row.nng_operator == "MemoryCopy"] == ["input_buffer_"] * 2


def test_a_model_vela_places_wholly_on_the_cpu_compiles_and_its_rate_is_not_known(tmp_path: Path) -> None:
    """A float DIV model: Vela leaves it on the CPU and writes `nan` inferences per second (1 / no NPU time).
    heliabuild reads it as None (not known), compiles the model, and still refuses `nan` in any other column."""
    from heliabuild.model import save_model
    from heliabuild.synth import synthesize

    save_model(synthesize("div_f32"), tmp_path / "div.tflite")
    result = compile(tmp_path / "div.tflite", tmp_path / "vela")
    summary = read_summary(result.summary_csv)
    assert summary.fields["inferences_per_second"] == "nan" and summary.inferences_per_second is None
    assert summary.cycles_npu == 0 and summary.to_json()["inferences_per_second"] is None
    broken = Path(result.summary_csv).read_text(encoding="utf-8").replace(",0.0,", ",nan,", 1)
    raises(write(tmp_path, "m_summary_X.csv", broken), read_summary, "not a finite number")


def test_a_csv_vela_wrote_that_cannot_be_read_is_named_by_its_output_name_not_the_work_folder(
    tmp_path: Path,
) -> None:
    """The error names the model and the CSV's own name: the work folder it was read from is gone by then."""
    from heliabuild.model import load_model, save_model
    from heliabuild.synth import synthesize
    from heliabuild.vela.run import VelaOptions, _report

    save_model(synthesize("chain"), tmp_path / "chain.tflite")
    result = compile(tmp_path / "chain.tflite", tmp_path / "vela")
    work = tmp_path / ".chain.vela-work"
    work.mkdir()
    produced = {}
    for role, path in (("model", result.model), ("per_layer", result.per_layer_csv), ("summary", result.summary_csv)):
        produced[role] = work / Path(path).name
        produced[role].write_bytes(Path(path).read_bytes())
    with produced["summary"].open(encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle))
    rows[0]["nn_macs"] = "many"
    with produced["summary"].open("w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    with pytest.raises(VelaError) as caught:
        _report(tmp_path / "chain.tflite", load_model(tmp_path / "chain.tflite"), None, produced, VelaOptions())
    assert caught.value.message.startswith(f"{tmp_path / 'chain.tflite'}: Vela wrote a CSV heliabuild cannot read: ")
    assert str(work) not in caught.value.message and produced["summary"].name in caught.value.message
    assert "column 'nn_macs' is 'many', not a number" in caught.value.message
