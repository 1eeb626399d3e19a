"""Issue 10's misconfigurations: each is one clear error (exit 2 from the CLI, a HeliaError from the
library) with nothing written."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from ai_edge_litert import schema_py_generated as schema
from helpers.checks import assert_not_written, assert_one_line_error

from heliabuild.errors import FenceError, RunnerError
from heliabuild.fence import Fence, FencePlan, fence_model, rewrite_model_with_fences
from heliabuild.model import load_model, model_sha256, save_model
from heliabuild.runner.litert import run_reference
from heliabuild.synth import chain_network
from heliabuild.synth.builder import GraphBuilder


@pytest.fixture
def model(tmp_path: Path) -> Path:
    path = tmp_path / "chain.tflite"
    save_model(chain_network(0), path)
    return path


@pytest.fixture
def fenced(model: Path, tmp_path: Path) -> Path:
    path = tmp_path / "chain_fenced.tflite"
    rewrite_model_with_fences(model, [2]).save(path)
    return path


def test_fencing_a_fenced_model_is_refused_with_nothing_written(cli, fenced: Path, tmp_path: Path) -> None:
    output = tmp_path / "twice.tflite"
    line = assert_one_line_error(cli("fence", fenced, "--after-ops", "4", "-o", output))
    assert line == (
        f"heliabuild: error: {fenced}: the model already has fences; fence the unfenced model (hint: Strip the "
        "fences first (heliabuild unfence, heliabuild.fence.strip_fences) or fence the original.)"
    )
    assert_not_written(output, tmp_path / "twice.fenced_boundaries.json")


def test_the_library_refuses_a_fenced_model_by_positions_and_by_plan(fenced: Path) -> None:
    with pytest.raises(FenceError, match="already has fences; fence the unfenced model"):
        rewrite_model_with_fences(fenced, [4])
    # a plan bound to the fenced model itself: the refusal is the fences', not the binding's
    loaded = load_model(fenced)
    plan = FencePlan(
        fences=(Fence(after_op=4),),
        operator_count=len(loaded.subgraphs[0].operators),
        model_sha256=model_sha256(loaded),
    )
    with pytest.raises(FenceError, match="already has fences; fence the unfenced model"):
        fence_model(fenced, plan)


def gather_out_of_range(path: Path) -> Path:
    """A float GATHER of row 7 of a 4-row input: LiteRT prepares it and fails at invoke."""
    builder = GraphBuilder()
    rows = builder.activation("input", [4, 3], "float32")
    index = builder.constant("index", np.array([7], dtype=np.int32))
    gathered = builder.activation("gathered", [1, 3], "float32")
    options = schema.GatherOptionsT()
    builder.operator(schema.BuiltinOperator.GATHER, [rows, index], [gathered], options)
    save_model(builder.finish([rows], [gathered], "gather out of range", "gather_oob"), path)
    return path


def test_a_model_that_fails_inside_litert_invoke_is_one_error_and_publishes_nothing(cli, tmp_path: Path) -> None:
    model = gather_out_of_range(tmp_path / "gather.tflite")
    assert cli("runner", "--model", model, "-o", tmp_path / "runner").code == 0
    results = tmp_path / "results"
    line = assert_one_line_error(cli("run", tmp_path / "runner" / "runner.json", "-o", results))
    assert line == (
        f"heliabuild: error: {tmp_path / 'runner' / 'model.tflite'}: segment 0 (operators 0..0): LiteRT failed to "
        "invoke it: gather index out of bounds; Node number 0 (GATHER) failed to invoke"
    )
    assert_not_written(results)


def test_the_reference_names_a_failing_invoke(tmp_path: Path) -> None:
    model = gather_out_of_range(tmp_path / "gather.tflite")
    with pytest.raises(RunnerError, match=r"^<bytes> \(the reference\): LiteRT failed to invoke the model: gather"):
        run_reference(model.read_bytes(), [np.zeros((4, 3), np.float32)])


def test_a_stable_id_that_would_select_two_operators_is_a_warning_naming_both(cli, tmp_path: Path) -> None:
    # op 2 is the second `x` (suffixed to x#1), op 3's output is literally named `x#1`
    network = chain_network(0)
    subgraph = network.subgraphs[0]
    for position, name in ((1, "x"), (2, "x"), (3, "x#1")):
        subgraph.tensors[subgraph.operators[position].outputs[0]].name = name
    model = tmp_path / "ids.tflite"
    save_model(network, model)
    result = cli("aot-plan", model, "-o", tmp_path / "aot")
    assert result.code == 0, result.err
    assert result.err.splitlines() == [
        f"heliabuild: aot-plan warning: {model}: stable id '0:x#1' would select operators 2 (CONV_2D) and "
        "3 (DEPTHWISE_CONV_2D), so the plan names them by node id (0/2 and 0/3)"
    ]
    plan = json.loads((tmp_path / "aot" / "ids_plan.json").read_text(encoding="utf-8"))
    assert [(op["id"], op["id_source"]) for op in plan["operators"][1:4]] == [
        ("0:x", "output_name"),
        ("0/2", "node_id"),
        ("0/3", "node_id"),
    ]


def test_vela_accepts_its_packaged_config_by_the_name_its_help_gives(cli, model: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    options = ["--system-config", "Ethos_U55_High_End_Embedded", "--memory-mode", "Shared_Sram"]
    result = cli("vela", model, "-o", out, "--config", "Arm/vela.ini", *options, "--", "--arena-cache-size", "1000")
    assert result.code == 0, result.err
    assert "Consider accessing the configuration" not in result.err  # Vela is given the file by that name too
    assert (out / "chain_segments.json").is_file()


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (
            ["--config", "Arm/vela.ini", "--system-config", "Ethos_U55_High_End", "--memory-mode", "Shared_Sram"],
            "no [System_Config.Ethos_U55_High_End] section for the system config 'Ethos_U55_High_End'; "
            "the file defines "
            "Ethos_U55_Deep_Embedded, Ethos_U55_High_End_Embedded, Ethos_U65_Client_Server, Ethos_U65_Embedded, "
            "Ethos_U65_High_End, Ethos_U65_Mid_End, Ethos_U85_SYS_DRAM_High, Ethos_U85_SYS_DRAM_Low, "
            "Ethos_U85_SYS_DRAM_Mid, Ethos_U85_SYS_Flash_High, Ethos_U85_SYS_Flash_Low; "
            "did you mean 'Ethos_U55_High_End_Embedded'?",
        ),
        (
            ["--memory-mode", "Shared_Sarm"],  # no --config: checked against the file Vela reads by default
            "no [Memory_Mode.Shared_Sarm] section for the memory mode 'Shared_Sarm'; the file defines Dedicated_Sram, "
            "Dedicated_Sram_256KB, Dedicated_Sram_384KB, Dedicated_Sram_512KB, Shared_Sram, Sram_Only; "
            "did you mean 'Shared_Sram'?",
        ),
    ],
    ids=["system-config", "memory-mode"],
)
def test_a_bad_section_lists_the_ini_and_suggests_the_nearest(
    cli, model: Path, tmp_path: Path, options: list[str], message: str
) -> None:
    from heliabuild.vela.configs import resolve_config

    out = tmp_path / "out"
    line = assert_one_line_error(cli("vela", model, "-o", out, *options))
    assert line == f"heliabuild: error: {resolve_config('Arm/vela.ini')}: {message}"
    assert not out.exists()


@pytest.mark.parametrize("argument", ["--config=my.ini", "--accel", "--output-dir"])
def test_vela_arguments_heliabuild_sets_itself_are_refused(cli, model: Path, tmp_path: Path, argument: str) -> None:
    out = tmp_path / "out"
    line = assert_one_line_error(cli("vela", model, "-o", out, "--", argument, "x"))
    assert line.startswith(f"heliabuild: error: {model}: the extra Vela argument {argument!r} sets --")
    assert "which heliabuild sets itself (hint: Give it through heliabuild's own option" in line
    assert not out.exists()


def test_arguments_after_the_separator_are_refused_where_nothing_runs_vela(cli, model: Path, tmp_path: Path) -> None:
    output = tmp_path / "fenced.tflite"
    line = assert_one_line_error(cli("fence", model, "--after-ops", "2", "-o", output, "--", "--verbose-weights"))
    assert line == (
        "heliabuild: error: fence passes nothing to Vela: the arguments after -- (--verbose-weights) are not used "
        "(hint: only vela and plan-fences pass arguments after -- to Vela)"
    )
    csv = tmp_path / "chain_per-layer.csv"
    csv.write_text("unused\n", encoding="utf-8")
    plan = tmp_path / "plan.json"
    args = ["--budget-cycles", "9", "--per-layer", csv, "-o", plan, "--", "--verbose-weights"]
    line = assert_one_line_error(cli("plan-fences", model, *args))
    assert line.startswith("heliabuild: error: -- ARG... is not used with --per-layer")
    assert_not_written(output, plan)


@pytest.fixture(scope="module")
def u85_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The synthetic chain compiled by Vela for an Ethos-U85 with 256 MACs."""
    from heliabuild.vela import compile as vela_compile

    folder = tmp_path_factory.mktemp("u85")
    save_model(chain_network(0), folder / "chain.tflite")
    return vela_compile(folder / "chain.tflite", folder, accelerator="ethos-u85-256").model


def test_a_model_compiled_for_another_npu_is_refused_naming_both(cli, u85_model: Path, tmp_path: Path) -> None:
    out = tmp_path / "aot"
    line = assert_one_line_error(cli("aot-plan", u85_model, "--platform", "corstone300_ethos_u55", "-o", out))
    assert line.startswith(
        f"heliabuild: error: {u85_model}: 1 operator cannot be planned for platform corstone300_ethos_u55: "
        "0:softmax/Softmax (ethos-u at 0): Vela compiled it for ethos-u85-256, but the NPU of corstone300_ethos_u55 "
        "runs ethos-u55-32, ethos-u55-64, ethos-u55-128, ethos-u55-256 [platform.npu-config]"
    )
    assert not out.exists()
    result = cli("aot-plan", u85_model, "--platform", "corstone320_ethos_u85", "-o", out)
    assert result.code == 0, result.err
    assert (out / "chain_plan.json").is_file()


def test_the_table_has_a_platform_for_each_corstone_npu() -> None:
    from heliabuild.aot.platforms import load_platforms

    table = load_platforms()
    assert {name: platform.npu for name, platform in table.items() if platform.has_npu} == {
        "corstone300_ethos_u55": ("ethos-u55-32", "ethos-u55-64", "ethos-u55-128", "ethos-u55-256"),
        "corstone300_ethos_u65": ("ethos-u65-256", "ethos-u65-512"),
        "corstone310_ethos_u55": ("ethos-u55-32", "ethos-u55-64", "ethos-u55-128", "ethos-u55-256"),
        "corstone320_ethos_u85": tuple(f"ethos-u85-{macs}" for macs in (128, 256, 512, 1024, 2048)),
    }
    assert not table["mps3_an547"].has_npu and not table["mps3_an547"].npu


def test_an_npu_platform_names_its_configurations(tmp_path: Path) -> None:
    from heliabuild.aot.platforms import Memory, Platform, PlatformError, load_platforms, platforms_document

    memories = (Memory("SRAM", 1024, 64),)
    with pytest.raises(PlatformError, match=r"^platform 't': npu lists \[\] but capabilities are \['MCU', 'NPU'\]"):
        Platform("t", "cortex-m55", ("MCU", "NPU"), memories, "SRAM")
    with pytest.raises(PlatformError, match=r"^platform 't': npu 'ethos-u55-512' is not an Ethos-U configuration"):
        Platform("t", "cortex-m55", ("MCU", "NPU"), memories, "SRAM", npu=("ethos-u55-512",))
    document = platforms_document(load_platforms().values())
    del document["platforms"]["corstone300_ethos_u65"]["npu"]
    path = tmp_path / "platforms.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    with pytest.raises(PlatformError, match="npu"):
        load_platforms(path)


def test_an_unknown_key_in_a_fence_plan_suggests_the_nearest(cli, model: Path, tmp_path: Path) -> None:
    plan = tmp_path / "plan.json"
    document = {"contract_version": 1, "subgraph": 0, "operator_count": 9, "fences": [{"after_op": 2, "opcod": "ADD"}]}
    plan.write_text(json.dumps(document), encoding="utf-8")
    output = tmp_path / "fenced.tflite"
    line = assert_one_line_error(cli("fence", model, "--plan", plan, "-o", output))
    assert line.startswith(
        f"heliabuild: error: {plan}: fences.0: unknown key 'opcod'; did you mean 'opcode'? (accepts "
    )
    assert_not_written(output)


def test_unknown_keys_of_every_schema_validated_input_share_one_format() -> None:
    from heliabuild.aot.config import ConfigError, config_from_document
    from heliabuild.errors import PolicyError
    from heliabuild.runner.policy import Policy

    with pytest.raises(ConfigError) as caught:
        config_from_document({"optimization": {"gaol": "latency"}})
    assert caught.value.message == (
        "<python>: optimization: unknown key 'gaol'; did you mean 'goal'? "
        "(accepts allow_approximate, goal, knobs, plan)"
    )
    with pytest.raises(PolicyError) as caught:
        Policy.from_json({"defaults": {"fpv": {}}}, "policy.yaml")
    assert caught.value.message == "policy.yaml: defaults: unknown key 'fpv'; did you mean 'fvp'? (accepts fvp)"


@pytest.fixture
def runner_json(cli, model: Path, tmp_path: Path) -> Path:
    assert cli("runner", "--model", model, "-o", tmp_path / "runner").code == 0
    return tmp_path / "runner" / "runner.json"


def test_a_rerun_keeps_the_previous_bundle_as_the_base_of_compare(cli, runner_json: Path, tmp_path: Path) -> None:
    results = tmp_path / "results" / "x"
    assert cli("run", runner_json, "-o", results).code == 0
    first = (results / "result.json").read_bytes()
    assert not (tmp_path / "results" / "x.previous").exists()
    assert cli("run", runner_json, "-o", results).code == 0
    previous = tmp_path / "results" / "x.previous"
    assert (previous / "result.json").read_bytes() == first
    assert sorted(p.name for p in (tmp_path / "results").iterdir()) == ["x", "x.previous"]
    compared = cli("compare", previous, results)
    assert compared.code == 0, compared.err
    assert cli("run", runner_json, "-o", results).code == 0  # an earlier .previous that verifies is replaced
    assert (previous / "result.json").is_file()
    assert sorted(p.name for p in (tmp_path / "results").iterdir()) == ["x", "x.previous"]


def test_a_previous_folder_that_is_not_a_bundle_is_never_replaced(cli, runner_json: Path, tmp_path: Path) -> None:
    results = tmp_path / "x"
    assert cli("run", runner_json, "-o", results).code == 0
    before = (results / "result.json").read_bytes()
    previous = tmp_path / "x.previous"
    previous.mkdir()
    (previous / "notes.txt").write_text("mine", encoding="utf-8")
    line = assert_one_line_error(cli("run", runner_json, "-o", results))
    assert line.startswith(
        f"heliabuild: error: {results}: the bundle there would be kept as {previous}, but {previous}: the folder is "
        "not empty and is not a result bundle"
    )
    assert (results / "result.json").read_bytes() == before
    assert sorted(p.name for p in previous.iterdir()) == ["notes.txt"]
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []
