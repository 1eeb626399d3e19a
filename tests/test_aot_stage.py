"""The AOT plan stage as files: write_plan and `heliabuild aot-plan` (real Vela outputs, synthetic models)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers.checks import assert_not_written, assert_one_line_error

from heliabuild.aot.config import AotConfig
from heliabuild.aot.records import load_plan, load_report, validate_plan_document, validate_report_document
from heliabuild.aot.stage import StageInputError, write_plan
from heliabuild.errors import HeliaError
from heliabuild.files import json_text, sha256_file
from heliabuild.model import save_model
from heliabuild.synth import chain_network, residual_network
from heliabuild.vela import compile as vela_compile

POOL_YAML = """\
memory:
  tensors:
    - {pattern: "*", residency: stream}
  stream_pool: {memory: DTCM, bytes: 16384}
"""


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("aot_stage")
    save_model(chain_network(0), folder / "chain.tflite")
    save_model(residual_network(0), folder / "residual.tflite")
    compiled = vela_compile(folder / "chain.tflite", folder / "vela")
    return {
        "chain": folder / "chain.tflite",
        "residual": folder / "residual.tflite",
        "vela": compiled.model,
        "per_layer": compiled.per_layer_csv,
    }


def outputs(folder: Path, prefix: str = "kws") -> tuple[Path, Path]:
    return folder / f"{prefix}_plan.json", folder / f"{prefix}_report.json"


def test_write_plan_writes_both_files_canonical_and_valid(models, tmp_path) -> None:
    written = write_plan(models["vela"], tmp_path / "out", "kws", "corstone300_ethos_u55", None, models["per_layer"])
    plan_path, report_path = outputs(tmp_path / "out")
    assert (written.plan, written.report) == (plan_path, report_path) and written.warnings == ()
    for path, validate in ((plan_path, validate_plan_document), (report_path, validate_report_document)):
        document = json.loads(path.read_text(encoding="utf-8"))
        validate(document)
        assert path.read_text(encoding="utf-8") == json_text(document)  # sorted keys, 2 spaces, final newline
    plan = load_plan(plan_path)
    assert plan.model.sha256 == sha256_file(models["vela"]) and plan.model.file == models["vela"].name
    assert plan.module_prefix == "kws" and plan.platform.name == "corstone300_ethos_u55"
    assert load_report(report_path).module_prefix == "kws"
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == [plan_path.name, report_path.name]
    # Deterministic: the same inputs give byte-identical files.
    again = write_plan(models["vela"], tmp_path / "again", "kws", "corstone300_ethos_u55", None, models["per_layer"])
    assert again.plan.read_bytes() == plan_path.read_bytes() and again.report.read_bytes() == report_path.read_bytes()


def test_a_failing_stage_writes_nothing_and_removes_what_an_earlier_run_left(models, tmp_path) -> None:
    folder = tmp_path / "out"
    write_plan(models["chain"], folder, "kws", "apollo510_evb")
    with pytest.raises(HeliaError, match="cannot be planned for platform apollo510_evb"):
        write_plan(models["vela"], folder, "kws", "apollo510_evb")
    assert_not_written(*outputs(folder))
    with pytest.raises(StageInputError, match="not a C identifier"):
        write_plan(models["chain"], folder, "../kws", "apollo510_evb")
    with pytest.raises(HeliaError, match="platform 'nowhere' is unknown"):
        write_plan(models["chain"], folder, "kws", "nowhere")
    assert_not_written(*outputs(folder))


def test_the_config_file_and_its_relative_plan(models, tmp_path) -> None:
    configs = tmp_path / "configs"
    configs.mkdir()
    (configs / "aot.yaml").write_text(POOL_YAML, encoding="utf-8")
    first = write_plan(models["chain"], tmp_path / "first", "kws", "apollo510_evb", configs / "aot.yaml")
    plan = json.loads(first.plan.read_text(encoding="utf-8"))
    assert plan["schedule"]["source"] == "plan"
    # The plan named in the file resolves relative to the file's folder.
    (configs / "plans").mkdir()
    (configs / "plans" / "kws_plan.json").write_bytes(first.plan.read_bytes())
    (configs / "replay.yaml").write_text(POOL_YAML + "optimization: {plan: plans/kws_plan.json}\n", encoding="utf-8")
    second = write_plan(models["chain"], tmp_path / "second", "kws", "apollo510_evb", configs / "replay.yaml")
    assert second.plan.read_bytes() == first.plan.read_bytes()
    assert second.report.read_bytes() == first.report.read_bytes()


# --- the command ------------------------------------------------------------------------------------------------------


def test_list_platforms(cli) -> None:
    result = cli("aot-plan", "--list-platforms")
    assert result.code == 0, result.err
    assert "apollo510_evb: cortex-m55, capabilities DSP, FP16, MCU, MVE" in result.out
    assert "corstone300_ethos_u55: cortex-m55, capabilities DSP, FP16, MCU, MVE, NPU" in result.out
    assert "transfer PSRAM -> DTCM: cpu, dma" in result.out


def test_the_command_writes_plan_and_report(cli, models, tmp_path) -> None:
    out = tmp_path / "out"
    result = cli(
        "aot-plan",
        models["vela"],
        "--prefix",
        "kws",
        "--platform",
        "corstone300_ethos_u55",
        "--vela-per-layer",
        models["per_layer"],
        "-o",
        out,
    )
    assert result.code == 0, result.err
    plan_path, report_path = outputs(out)
    assert result.out.splitlines() == [f"heliabuild: aot-plan {plan_path}", f"heliabuild: aot-plan {report_path}"]
    assert result.err == ""
    validate_plan_document(json.loads(plan_path.read_text(encoding="utf-8")))
    same = write_plan(models["vela"], tmp_path / "lib", "kws", "corstone300_ethos_u55", None, models["per_layer"])
    assert same.plan.read_bytes() == plan_path.read_bytes() and same.report.read_bytes() == report_path.read_bytes()


def test_the_command_reads_a_plan_relative_to_the_working_directory(cli, models, tmp_path, monkeypatch) -> None:
    (tmp_path / "aot.yaml").write_text(POOL_YAML, encoding="utf-8")
    first = write_plan(models["chain"], tmp_path / "first", "kws", "apollo510_evb", tmp_path / "aot.yaml")
    monkeypatch.chdir(tmp_path)
    arguments = ["aot-plan", models["chain"], "--prefix", "kws", "--platform", "apollo510_evb"]
    result = cli(*arguments, "--config", "aot.yaml", "--plan", "first/kws_plan.json", "-o", "second")
    assert result.code == 0, result.err
    assert (tmp_path / "second" / "kws_plan.json").read_bytes() == first.plan.read_bytes()
    # Bound to another model: both hashes named, nothing written.
    result = cli(
        "aot-plan",
        models["residual"],
        "--prefix",
        "kws",
        "--platform",
        "apollo510_evb",
        "--config",
        "aot.yaml",
        "--plan",
        "first/kws_plan.json",
        "-o",
        "third",
    )
    assert_one_line_error(result, sha256_file(models["chain"]), sha256_file(models["residual"]), "model.sha256")
    assert_not_written(*outputs(tmp_path / "third"))


@pytest.mark.parametrize(
    ("arguments", "fragments"),
    [
        (
            ["--platform", "apollo510_evb"],
            ["cannot be planned for platform apollo510_evb", "ethos-u", "0:softmax/Softmax"],
        ),
        (["--platform", "nowhere"], ["platform 'nowhere' is unknown"]),
        (["--platform", "corstone300_ethos_u55", "--config", "missing.yaml"], ["cannot read the configuration"]),
        (["--platform", "corstone300_ethos_u55", "--config", "bad.yaml"], ["unknown key 'goal'"]),
        (["--platform", "corstone300_ethos_u55", "--plan", "missing_plan.json"], ["missing_plan.json"]),
        (["--platform", "corstone300_ethos_u55", "--prefix", "9lives"], ["not a C identifier"]),
    ],
    ids=["refused", "unknown-platform", "missing-config", "bad-config", "missing-plan", "bad-prefix"],
)
def test_bad_input_exits_2_with_one_line_and_writes_nothing(cli, models, tmp_path, arguments, fragments) -> None:
    (tmp_path / "bad.yaml").write_text("goal: latency\n", encoding="utf-8")
    given = dict(zip(arguments[::2], arguments[1::2], strict=True))
    given = {"--prefix": "kws", **given}
    for name in ("--config", "--plan"):
        if name in given:
            given[name] = str(tmp_path / given[name])
    flat = [item for pair in given.items() for item in pair]
    result = cli("aot-plan", models["vela"], *flat, "-o", tmp_path / "out")
    assert_one_line_error(result, *fragments)
    assert_not_written(*outputs(tmp_path / "out", given["--prefix"]))


def test_the_command_needs_its_arguments(cli, models) -> None:
    assert_one_line_error(cli("aot-plan", models["vela"]), "aot-plan needs -o OUTDIR")
    assert_one_line_error(cli("aot-plan", "--prefix", "kws"), "aot-plan needs MODEL, -o OUTDIR")
    assert_one_line_error(cli("aot-plan", "--list-platforms", models["vela"]), "takes no other argument (got MODEL)")


def test_warnings_go_to_stderr_once_each(cli, models, tmp_path) -> None:
    config = tmp_path / "aot.json"
    config.write_text(json.dumps(AotConfig(tensors=[{"pattern": "*", "residency": "stream"}]).to_json()), "utf-8")
    result = cli(
        "aot-plan",
        models["chain"],
        "--prefix",
        "kws",
        "--platform",
        "apollo510_evb",
        "--config",
        config,
        "-o",
        tmp_path / "out",
    )
    assert result.code == 0, result.err
    lines = result.err.splitlines()
    assert lines and all(line.startswith("heliabuild: aot-plan warning: ") for line in lines)
    assert len(lines) == len(set(lines))
    assert any("no schedule unit names it" in line for line in lines)  # no pool: nothing streams
