"""`heliabuild ops MODEL [--vela-per-layer CSV] [--format json]` on the synthetic chain: one row per operator
with its index, stable id, type and outputs, and with Vela's per-layer CSV its estimated cycles and placement;
a CSV of another model exits 2 with one line."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from helpers.checks import assert_one_line_error

from heliabuild.fence import rewrite_model_with_fences
from heliabuild.model import save_model
from heliabuild.synth import chain_network, residual_network
from heliabuild.vela import compile
from heliabuild.vela.ops_table import operator_table
from heliabuild.vela.per_layer import read_per_layer


@pytest.fixture(scope="module")
def chain(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The synthetic chain, its fenced copy (fences after 3 and 6) and Vela's per-layer CSV of each."""
    folder = tmp_path_factory.mktemp("cli_ops")
    model = folder / "chain.tflite"
    save_model(chain_network(0), model)
    fenced = folder / "chain_fenced.tflite"
    rewrite_model_with_fences(model, [3, 6]).save(fenced)
    other = folder / "residual.tflite"
    save_model(residual_network(0), other)
    return {
        "model": model,
        "fenced": fenced,
        "per_layer": Path(compile(model, folder / "vela").per_layer_csv),
        "fenced_per_layer": Path(compile(fenced, folder / "vela_fenced").per_layer_csv),
        "other_per_layer": Path(compile(other, folder / "vela_other").per_layer_csv),
    }


def test_ops_lists_every_operator_with_its_stable_id_type_and_outputs(cli, chain: dict[str, Path]) -> None:
    result = cli("ops", chain["model"])
    assert result.code == 0, result.err
    lines = result.out.splitlines()
    assert re.split(r"\s{2,}", lines[0]) == [
        "index",
        "type",
        "outputs",
        "Vela NPU estimate",
        "placement",
        "id",
    ]
    assert len(lines) == 2 + 9
    assert lines[2].split() == ["0", "CONV_2D", "1x25x5x64", "int8", "-", "-", "0:conv2d/Relu"]
    assert lines[-1].split() == ["8", "SOFTMAX", "1x12", "int8", "-", "-", "0:softmax/Softmax"]


def test_with_the_per_layer_csv_each_operator_has_vela_cycles_and_placement(cli, chain: dict[str, Path]) -> None:
    result = cli("ops", chain["model"], "--vela-per-layer", chain["per_layer"], "--format", "json")
    assert result.code == 0, result.err
    operators = json.loads(result.out)["operators"]
    assert [op["index"] for op in operators] == list(range(9))
    assert operators[0] == {
        "estimated_cycles": operators[0]["estimated_cycles"],
        "id": "0:conv2d/Relu",
        "index": 0,
        "outputs": [{"dtype": "int8", "shape": [1, 25, 5, 64]}],
        "placement": "NPU",
        "position": 0,
        "type": "CONV_2D",
    }
    # every attributed row's cycles are on some operator: the table adds up to Vela's total
    rows = read_per_layer(chain["per_layer"])
    known = [op["estimated_cycles"] for op in operators if op["estimated_cycles"] is not None]
    assert sum(known) == sum(row.op_cycles for row in rows)
    assert all(op["placement"] in ("NPU", None) for op in operators)


def test_a_fenced_model_shows_its_fences_without_an_original_index(cli, chain: dict[str, Path]) -> None:
    result = cli("ops", chain["fenced"], "--vela-per-layer", chain["fenced_per_layer"])
    assert result.code == 0, result.err
    rows = [line.split() for line in result.out.splitlines()[2:]]
    fences = [row for row in rows if row[1] == "ETHOS_U_STREAM_SPLIT"]
    assert len(rows) == 11 and len(fences) == 2
    assert [row[0] for row in fences] == ["-", "-"] and all(row[-2] == "CPU" for row in fences)
    assert [row[0] for row in rows if row[0] != "-"] == [str(k) for k in range(9)]
    # the fence after original operator 3 comes right after it
    assert rows[rows.index(fences[0]) - 1][0] == "3"


def test_json_is_deterministic(cli, chain: dict[str, Path]) -> None:
    first = cli("ops", chain["model"], "--vela-per-layer", chain["per_layer"], "--format", "json").out
    assert first == cli("ops", chain["model"], "--vela-per-layer", chain["per_layer"], "--format", "json").out
    assert first.endswith("}\n")


def test_a_per_layer_csv_of_another_model_is_refused(cli, chain: dict[str, Path]) -> None:
    result = cli("ops", chain["model"], "--vela-per-layer", chain["other_per_layer"])
    # all on the NPU, so no CPU row to bind by: the rows that belong to no operator of the chain refuse it
    assert_one_line_error(
        result,
        f"{chain['other_per_layer']}: not Vela's per-layer CSV of {chain['model']}: row ",
        "belongs to no operator of the model",
    )
    assert result.out == ""
    # the fenced model's CSV names the fences, which the unfenced model does not have
    fenced_csv = cli("ops", chain["model"], "--vela-per-layer", chain["fenced_per_layer"])
    assert_one_line_error(fenced_csv, "stream_split", "names no operator output of the model")


def test_bad_input_exits_2(cli, chain: dict[str, Path], tmp_path: Path) -> None:
    assert_one_line_error(cli("ops", tmp_path / "missing.tflite"), "missing.tflite")
    assert_one_line_error(cli("ops", chain["model"], "--format", "xml"), "--format")


def test_vela_s_compiled_model_with_its_csv_is_refused(cli, chain: dict[str, Path]) -> None:
    compiled = chain["per_layer"].with_name("chain_vela.tflite")
    result = cli("ops", compiled, "--vela-per-layer", chain["per_layer"])
    assert_one_line_error(result, f"{compiled}: Vela's compiled model (it holds ethos-u operators)")
    listed = cli("ops", compiled)  # without a CSV: its operators, the command stream one row
    assert listed.code == 0 and listed.out.splitlines()[2].split()[1] == "ethos-u"


def test_a_real_model_s_long_ids_come_last_and_leave_the_other_columns_narrow(cli, kws_path: Path) -> None:
    """The MLPerf Tiny KWS model names each operator by every tensor fused into it (ids of 200+ characters):
    the id is the last column, so index, type, outputs, cycles and placement stay readable."""
    result = cli("ops", kws_path)
    assert result.code == 0, result.err
    lines = result.out.splitlines()
    assert max(len(row.id) for row in operator_table(kws_path)) > 200
    id_column = lines[0].index("id")
    assert id_column < 80 and all(len(line[:id_column].rstrip()) < 80 for line in lines)
    assert lines[2].split()[:6] == ["0", "CONV_2D", "1x25x5x64", "int8", "-", "-"]
