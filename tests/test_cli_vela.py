"""`heliabuild vela` and `heliabuild plan-fences`: files and lines on success; bad input exits 2 with one line."""

from __future__ import annotations

import contextlib
import json
import os
import pty
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from helpers.checks import assert_not_written, assert_one_line_error
from helpers.tflite import mixed_model

from heliabuild.cli.vela_options import VELA_DEFAULT_ACCELERATOR, VELA_OPTIMISE_CHOICES
from heliabuild.fence import FencePlan, load_plan, rewrite_model_with_fences
from heliabuild.files import json_text
from heliabuild.model import load_model, model_sha256, save_model
from heliabuild.model.graph import indices, tensor_name
from heliabuild.planning import plan_fences
from heliabuild.schema_files import validate
from heliabuild.synth import chain_network
from heliabuild.vela import DEFAULT_ACCELERATOR, compile, output_names
from heliabuild.vela.default_config import explained
from heliabuild.vela.options import OPTIMISE_CHOICES

WARNING = "heliabuild: vela warning: "
HEADER = "Original Operator,NNG Operator,Target,Op Cycles,NPU,SRAM AC,DRAM AC,OnFlash AC,OffFlash AC,MAC Count,Name"


@pytest.fixture
def model_file(tmp_path: Path) -> Path:
    path = tmp_path / "in" / "chain.tflite"
    path.parent.mkdir()
    save_model(chain_network(0), path)
    return path


@pytest.fixture
def system_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The folder tempfile uses, so a test can see that plan-fences leaves no Vela folder behind."""
    folder = tmp_path / "system-tmp"
    folder.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    return folder


def hand_csv(model: Path, costs: list[int], path: Path) -> Path:
    """A per-layer CSV with one row per operator of `model`, named after its output."""
    loaded = load_model(model)
    subgraph = loaded.subgraphs[0]
    lines = [HEADER]
    for op, cost in zip(subgraph.operators, costs, strict=True):
        name = tensor_name(subgraph.tensors[indices(op.outputs)[0]])
        lines.append(f"Op,Op,NPU,{cost},{cost},0,0,0,0,0,{name}")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def vela_warnings(err: str) -> list[str]:
    lines = err.splitlines()
    assert all(line.startswith(WARNING) for line in lines), err
    assert len(lines) == len(set(lines)), err
    return [line.removeprefix(WARNING) for line in lines]


def test_cli_defaults_agree_with_the_library() -> None:
    assert VELA_DEFAULT_ACCELERATOR == DEFAULT_ACCELERATOR
    assert VELA_OPTIMISE_CHOICES == OPTIMISE_CHOICES


# ---------------------------------------------------------------- heliabuild vela


@pytest.mark.slow
def test_vela_writes_four_files_and_passes_warnings_through(cli, tmp_path: Path, model_file: Path) -> None:
    out = tmp_path / "out"
    result = cli("vela", model_file, "-o", out)
    assert result.code == 0, result.err
    names = output_names(model_file, "Ethos_U55_High_End_Embedded")
    assert result.out.splitlines() == [f"heliabuild: vela {out / name}" for name in names.values()]
    assert sorted(p.name for p in out.iterdir()) == sorted(names.values())
    # Vela's three warnings about its defaults, as one of heliabuild's, without the venv's path
    assert vela_warnings(result.err) == [
        "Vela chose its own defaults for what was not given: the configuration file Arm/vela.ini, the system "
        "config Ethos_U55_High_End_Embedded, memory mode Shared_Sram (Vela's packaged files); its cycle and memory "
        "estimates are for that reference system, not for your board; to choose, set system_config= and "
        "memory_mode= (with vela_config= naming your own .ini, or Vela's 'Arm/vela.ini') on the pipeline, or "
        "--system-config, --memory-mode and --config for heliabuild vela"
    ]
    assert sys.prefix not in result.err
    document = json.loads((out / names["segments"]).read_text(encoding="utf-8"))
    validate(document, "segments", names["segments"])
    assert document["vela"]["accelerator"] == "ethos-u55-128"
    assert document["source_sha256"] == model_sha256(model_file)
    # the same files as the library writes
    library = compile(model_file, tmp_path / "library")
    for role, name in names.items():
        assert (out / name).read_bytes() == (library.segments_json.parent / name).read_bytes(), role


@pytest.mark.slow
def test_vela_options_reach_vela(cli, tmp_path: Path, model_file: Path) -> None:
    fenced = tmp_path / "in" / "chain_fenced.tflite"
    rewrite_model_with_fences(model_file, [1, 3]).save(fenced)
    out = tmp_path / "out"
    result = cli(
        "vela",
        fenced,
        "-o",
        out,
        "--accelerator-config",
        "ethos-u85-256",
        "--system-config",
        "Ethos_U85_SYS_DRAM_High",
        "--memory-mode",
        "Dedicated_Sram_512KB",
        "--optimise",
        "Size",
    )
    assert result.code == 0, result.err
    summary = out / "chain_fenced_summary_Ethos_U85_SYS_DRAM_High.csv"
    assert f"heliabuild: vela {summary}" in result.out.splitlines()
    document = json.loads((out / "chain_fenced_segments.json").read_text(encoding="utf-8"))
    assert document["vela"]["memory_mode"] == "Dedicated_Sram_512KB"
    assert document["boundary_after_ops"] == [1, 3]
    assert document["command_streams"]["matches_segments"] is True
    (warning,) = vela_warnings(result.err)  # the system config and memory mode were given: only the file defaulted
    assert warning.startswith("Vela chose its own defaults for what was not given: the configuration file Arm/")


@pytest.mark.slow
def test_vela_with_a_configuration_file(cli, tmp_path: Path, model_file: Path) -> None:
    import ethosu.vela

    ini = tmp_path / "my.ini"
    shutil.copyfile(Path(ethosu.vela.__file__).parents[1] / "config_files" / "Arm" / "vela.ini", ini)
    out = tmp_path / "out"
    args = ["--config", ini, "--system-config", "Ethos_U55_Deep_Embedded", "--memory-mode", "Shared_Sram"]
    result = cli("vela", model_file, "-o", out, *args)
    assert result.code == 0, result.err
    assert result.err == ""
    assert (out / "chain_summary_Ethos_U55_Deep_Embedded.csv").is_file()


@pytest.mark.slow
def test_vela_warns_once_about_other_cpu_operators(cli, tmp_path: Path) -> None:
    fenced = tmp_path / "mixed_fenced.tflite"
    rewrite_model_with_fences(mixed_model(), [0]).save(fenced)

    result = cli("vela", fenced, "-o", tmp_path / "out")
    assert result.code == 0, result.err
    warnings = vela_warnings(result.err)
    ours = [w for w in warnings if w.startswith("Vela produced")]
    assert ours == [
        "Vela produced 2 command streams for 2 segments; operators on the CPU besides the fences: "
        "DEQUANTIZE at 2 ('f0'), ADD at 3 ('f1'), QUANTIZE at 4 ('q1')"
    ]
    assert sum(w.startswith("Warning (supported operators) operator: DEQUANTIZE") for w in warnings) == 1
    assert not [w for w in warnings if "stream_split'" in w]


def test_vela_in_its_own_process_prints_what_a_vela_subprocess_would(tmp_path: Path) -> None:
    """`heliabuild vela` runs Vela inside its own process (heliabuild.vela.in_process): nothing Vela prints
    reaches the terminal (its performance report, printed through a stream bound when Vela is imported,
    included), and the warnings are those of a run of Vela as a subprocess, each once, and the files equal."""
    fenced = tmp_path / "mixed_fenced.tflite"
    rewrite_model_with_fences(mixed_model(), [0]).save(fenced)
    before = sorted(tmp_path.iterdir())
    run = subprocess.run(
        [sys.executable, "-m", "heliabuild.cli", "vela", fenced, "-o", "own"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert run.returncode == 0, run.stderr
    assert sorted(tmp_path.iterdir()) == sorted([*before, tmp_path / "own"])  # nothing else in the folder it ran in
    assert all(line.startswith("heliabuild: vela ") for line in run.stdout.splitlines()), run.stdout
    apart = compile(fenced, tmp_path / "apart")
    printed = dict.fromkeys(w.removeprefix("Warning: ") for w in explained(apart.warnings))
    assert vela_warnings(run.stderr) == list(printed)
    assert sorted(p.name for p in (tmp_path / "own").iterdir()) == sorted(
        p.name for p in (tmp_path / "apart").iterdir()
    )
    for path in (tmp_path / "own").iterdir():
        assert path.read_bytes() == (tmp_path / "apart" / path.name).read_bytes(), path.name


def test_vela_in_its_own_process_keeps_the_status_line_on_the_terminal(tmp_path: Path) -> None:
    """On a terminal the status line (heliabuild.progress) is drawn while Vela runs in-process: it reaches
    the terminal, not Vela's captured output, so the warnings are the same as off a terminal."""
    fenced = tmp_path / "mixed_fenced.tflite"
    rewrite_model_with_fences(mixed_model(), [0]).save(fenced)
    plain = subprocess.run(
        [sys.executable, "-m", "heliabuild.cli", "vela", fenced, "-o", tmp_path / "plain"],
        capture_output=True,
        text=True,
        check=False,
    )
    leader, follower = pty.openpty()
    with subprocess.Popen(
        [sys.executable, "-m", "heliabuild.cli", "vela", fenced, "-o", tmp_path / "terminal"],
        stdout=subprocess.PIPE,
        stderr=follower,
    ) as process:
        os.close(follower)
        seen = b""
        with contextlib.suppress(OSError):  # the terminal reads EIO once the process closed it
            while chunk := os.read(leader, 65536):
                seen += chunk
        assert process.wait() == 0
    os.close(leader)
    text = seen.decode("utf-8").replace("\r\n", "\n")
    assert "heliabuild: vela mixed_fenced.tflite" in text  # the status line was drawn
    lines = [re.sub(r"\x1b\[[0-9;]*m", "", line.rpartition("\x1b[K")[2]) for line in text.split("\n")]  # no colour
    assert [line for line in lines if line.startswith(WARNING)] == plain.stderr.splitlines()


def test_vela_runs_as_a_subprocess_once_its_streams_are_bound_elsewhere() -> None:
    """Vela imported while sys.stdout was another stream would print past the capture: then it is not run
    in-process (heliabuild.vela.in_process.available)."""
    code = (
        "import io, sys\n"
        "from heliabuild.vela import in_process\n"
        "assert in_process.available()\n"
        "own, sys.stdout = sys.stdout, io.StringIO()\n"
        "import ethosu.vela.stats_writer\n"
        "sys.stdout = own\n"
        "print(in_process.available())\n"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert (run.returncode, run.stdout) == (0, "False\n"), run.stderr


# ---------------------------------------------------------------- heliabuild plan-fences


def test_plan_fences_from_a_per_layer_csv(cli, tmp_path: Path, model_file: Path) -> None:
    csv_path = hand_csv(model_file, [100, 100, 100, 100, 100, 100, 0, 100, 100], tmp_path / "chain_per-layer.csv")
    plan_path = tmp_path / "plans" / "fence_plan.json"
    result = cli("plan-fences", model_file, "--budget-cycles", 250, "--per-layer", csv_path, "-o", plan_path)
    assert result.code == 0, result.err
    assert result.err == ""
    expected = plan_fences(model_file, csv_path, 250)
    assert result.out.splitlines() == [
        f"heliabuild: plan-fences {plan_path}: {len(expected.fences)} fences, "
        f"{len(expected.fences) + 1} segments, coverage 100.00%"
    ]
    assert plan_path.read_text(encoding="utf-8") == json_text(expected.to_json())
    assert load_plan(plan_path) == expected
    assert expected.after_ops == [1, 3, 6]
    # and the fence stage takes the plan
    fenced = tmp_path / "fenced.tflite"
    assert cli("fence", model_file, "-o", fenced, "--plan", plan_path).code == 0


def test_plan_fences_with_lower_min_coverage(cli, tmp_path: Path, model_file: Path) -> None:
    csv_path = hand_csv(model_file, [100] * 9, tmp_path / "chain_per-layer.csv")
    csv_path.write_text(csv_path.read_text(encoding="utf-8") + "Op,Op,NPU,100,100,0,0,0,0,0,nobody\n")
    plan_path = tmp_path / "plan.json"
    refused = cli("plan-fences", model_file, "--budget-cycles", 300, "--per-layer", csv_path, "-o", plan_path)
    assert_one_line_error(refused, "90.00%", "below min_coverage 100.00%", "'nobody'")
    assert_not_written(plan_path)
    args = ["--budget-cycles", 300, "--per-layer", csv_path, "--min-coverage", "0.9", "-o", plan_path]
    result = cli("plan-fences", model_file, *args)
    assert result.code == 0, result.err
    assert result.out.strip().endswith("coverage 90.00%")
    plan = FencePlan.from_json(json.loads(plan_path.read_text(encoding="utf-8")))
    assert plan.coverage is not None and [r.name for r in plan.coverage.unmatched_rows] == ["nobody"]


@pytest.mark.slow
def test_plan_fences_runs_vela_first(cli, tmp_path: Path, model_file: Path, system_tmp: Path) -> None:
    plan_path = tmp_path / "plans" / "plan.json"
    result = cli("plan-fences", model_file, "--budget-cycles", 20000, "-o", plan_path)
    assert result.code == 0, result.err
    assert len(result.out.splitlines()) == 1 and result.out.startswith(f"heliabuild: plan-fences {plan_path}: ")
    assert "the system config Ethos_U55_High_End_Embedded, memory mode Shared_Sram (Vela's packaged" in result.err
    vela_warnings(result.err)
    assert sorted(p.name for p in plan_path.parent.iterdir()) == ["plan.json"]
    assert list(system_tmp.iterdir()) == []  # the Vela folder is gone
    library = compile(model_file, tmp_path / "vela")
    expected = plan_fences(model_file, library.per_layer_csv, 20000)
    assert load_plan(plan_path) == expected and expected.fences

    u85 = tmp_path / "plans" / "plan_u85.json"
    args = ["--budget-cycles", 20000, "--accelerator-config", "ethos-u85-256", "-o", u85]
    assert cli("plan-fences", model_file, *args).code == 0
    library = compile(model_file, tmp_path / "vela85", accelerator="ethos-u85-256")
    assert load_plan(u85) == plan_fences(model_file, library.per_layer_csv, 20000)


# ---------------------------------------------------------------- bad input: exit 2, one line, nothing written


@pytest.mark.parametrize(
    ("args", "fragments"),
    [
        (["--accelerator-config", "ethos-u99"], ["unknown accelerator 'ethos-u99'", "ethos-u55-128"]),
        (["--config", "missing.ini", "--system-config", "A", "--memory-mode", "B"], ["missing.ini", "does not exist"]),
        (["--optimise", "Fast"], ["--optimise", "invalid choice: 'Fast'"]),
    ],
    ids=["accelerator", "config-file", "optimise"],
)
def test_vela_bad_options(cli, tmp_path: Path, model_file: Path, args: list[str], fragments: list[str]) -> None:
    out = tmp_path / "out"
    assert_one_line_error(cli("vela", model_file, "-o", out, *args), *fragments)
    assert not out.exists()


def test_vela_config_without_sections(cli, tmp_path: Path, model_file: Path) -> None:
    ini = tmp_path / "my.ini"
    ini.write_text("[System_Config.A]\n", encoding="utf-8")
    out = tmp_path / "out"
    line = assert_one_line_error(cli("vela", model_file, "-o", out, "--config", ini), "system config and memory mode")
    assert line.startswith("heliabuild: error: ")
    assert not out.exists()


def test_vela_missing_and_corrupt_model(cli, tmp_path: Path, model_file: Path) -> None:
    out = tmp_path / "out"
    missing = tmp_path / "missing.tflite"
    assert_one_line_error(cli("vela", missing, "-o", out), str(missing))
    bad = tmp_path / "bad.tflite"
    bad.write_bytes(model_file.read_bytes()[:300])
    assert_one_line_error(cli("vela", bad, "-o", out), str(bad))
    assert not out.exists()


def test_vela_sidecar_of_another_model(cli, tmp_path: Path) -> None:
    fenced = tmp_path / "m_fenced.tflite"
    rewrite_model_with_fences(chain_network(0), [2]).save(fenced)
    fenced.write_bytes(bytes(rewrite_model_with_fences(chain_network(1), [2]).fenced_bytes))
    out = tmp_path / "out"
    assert_one_line_error(cli("vela", fenced, "-o", out), "fenced_boundaries.json", "Re-run the fence stage")
    assert not out.exists()


def test_vela_output_is_a_file(cli, tmp_path: Path, model_file: Path) -> None:
    out = tmp_path / "out"
    out.write_text("not a folder", encoding="utf-8")
    assert_one_line_error(cli("vela", model_file, "-o", out), f"{out}: cannot create the folder: File exists")
    assert out.read_text(encoding="utf-8") == "not a folder"


@pytest.mark.slow
def test_vela_failure_quotes_vela(cli, tmp_path: Path, model_file: Path) -> None:
    out = tmp_path / "out"
    result = cli("vela", model_file, "-o", out, "--", "--cpu-tensor-alignment", "3")
    line = assert_one_line_error(result, "Vela failed", "Invalid argument to --cpu-tensor-alignment = 3")
    assert line.startswith(f"heliabuild: error: {model_file}: ")
    assert not out.exists()  # the folder the command created is removed again


def test_vela_failure_keeps_an_existing_output_folder(cli, tmp_path: Path, model_file: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "notes.txt").write_bytes(b"mine")
    result = cli("vela", model_file, "-o", out, "--", "--cpu-tensor-alignment", "3")
    assert_one_line_error(result, "Vela failed")
    assert sorted(p.name for p in out.iterdir()) == ["notes.txt"]
    assert (out / "notes.txt").read_bytes() == b"mine"


@pytest.mark.parametrize(
    ("args", "fragments"),
    [
        (["--budget-cycles", "0"], ["--budget-cycles", "not a positive number"]),
        (["--budget-cycles", "-5"], ["--budget-cycles"]),
        (["--budget-cycles", "1.5"], ["'1.5' is not a whole number"]),
        (["--budget-cycles", "many"], ["'many' is not a whole number"]),
        ([], ["--budget-cycles"]),
        (["--budget-cycles", "9", "--min-coverage", "1.5"], ["'1.5' is not a fraction from 0 to 1"]),
        (["--budget-cycles", "9", "--min-coverage", "most"], ["'most' is not a number"]),
    ],
    ids=["zero", "negative", "fraction", "text", "missing", "coverage-range", "coverage-text"],
)
def test_plan_fences_bad_arguments(cli, tmp_path: Path, model_file: Path, args, fragments) -> None:
    csv_path = hand_csv(model_file, [10] * 9, tmp_path / "chain_per-layer.csv")
    plan_path = tmp_path / "plan.json"
    assert_one_line_error(cli("plan-fences", model_file, "--per-layer", csv_path, *args, "-o", plan_path), *fragments)
    assert_not_written(plan_path)


@pytest.mark.parametrize("option", [["--accelerator-config", "ethos-u85-256"], ["--optimise", "Size"]])
def test_plan_fences_per_layer_with_vela_options(cli, tmp_path: Path, model_file: Path, option) -> None:
    csv_path = hand_csv(model_file, [10] * 9, tmp_path / "chain_per-layer.csv")
    plan_path = tmp_path / "plan.json"
    args = ["--budget-cycles", 9, "--per-layer", csv_path, *option, "-o", plan_path]
    line = assert_one_line_error(cli("plan-fences", model_file, *args), f"{option[0]} is not used with --per-layer")
    assert line.startswith("heliabuild: error: ")
    assert_not_written(plan_path)


def test_plan_fences_bad_inputs(cli, tmp_path: Path, model_file: Path) -> None:
    plan_path = tmp_path / "plan.json"
    missing = tmp_path / "none_per-layer.csv"
    assert_one_line_error(
        cli("plan-fences", model_file, "--budget-cycles", 9, "--per-layer", missing, "-o", plan_path), str(missing)
    )
    # a CSV of another model: none of its names is a tensor of this one
    foreign = tmp_path / "other_per-layer.csv"
    foreign.write_text(
        "\n".join([HEADER, *[f"Op,Op,NPU,10,10,0,0,0,0,0,other/op{i}" for i in range(9)]]) + "\n", encoding="utf-8"
    )
    args = ["--budget-cycles", 9, "--per-layer", foreign, "-o", plan_path]
    assert_one_line_error(cli("plan-fences", model_file, *args), "only 0.00% of 90", "below min_coverage")
    # a fenced model
    fenced = tmp_path / "fenced.tflite"
    rewrite_model_with_fences(model_file, [2]).save(fenced)
    csv_path = hand_csv(model_file, [10] * 9, tmp_path / "chain_per-layer.csv")
    args = ["--budget-cycles", 9, "--per-layer", csv_path, "-o", plan_path]
    assert_one_line_error(cli("plan-fences", fenced, *args), "already has fences")
    # a corrupt model, before Vela would run
    bad = tmp_path / "bad.tflite"
    bad.write_bytes(b"TFL3")
    assert_one_line_error(cli("plan-fences", bad, "--budget-cycles", 9, "-o", plan_path), str(bad))
    assert_not_written(plan_path)


def test_plan_fences_output_is_a_folder(cli, tmp_path: Path, model_file: Path) -> None:
    csv_path = hand_csv(model_file, [10] * 9, tmp_path / "chain_per-layer.csv")
    folder = tmp_path / "plan.json"
    folder.mkdir()
    args = ["--budget-cycles", 9, "--per-layer", csv_path, "-o", folder]
    assert_one_line_error(cli("plan-fences", model_file, *args), str(folder), "cannot write")
    assert list(folder.iterdir()) == []


@pytest.mark.slow
def test_plan_fences_vela_failure(cli, tmp_path: Path, model_file: Path, system_tmp: Path) -> None:
    plan_path = tmp_path / "plan.json"
    args = ["--budget-cycles", 9, "-o", plan_path, "--", "--cpu-tensor-alignment", "3"]
    assert_one_line_error(cli("plan-fences", model_file, *args), "Vela failed", "--cpu-tensor-alignment = 3")
    assert_not_written(plan_path)
    assert list(system_tmp.iterdir()) == []


def test_vela_leaves_a_users_folder_at_a_work_folder_name_alone(cli, tmp_path: Path) -> None:
    """`.m.vela-mynotes` has the shape of Vela's work folder, but no run of heliabuild made it (no marker)."""
    save_model(chain_network(0), tmp_path / "m.tflite")
    notes = tmp_path / "out" / ".m.vela-mynotes" / "notes.txt"
    notes.parent.mkdir(parents=True)
    notes.write_text("mine\n")
    assert cli("vela", tmp_path / "m.tflite", "-o", tmp_path / "out").code == 0
    assert notes.read_text() == "mine\n"
    assert sorted(path.name for path in (tmp_path / "out").iterdir() if path.name.startswith(".")) == [
        ".m.vela-mynotes"
    ]
