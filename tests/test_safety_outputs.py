"""A command never writes over, into or around what it did not create.

`run`/`run-build -o PATH` replaces only an earlier bundle that verifies (or fills an empty folder); every
command refuses an output path that is, or is a folder containing, one of its inputs; `show --plot`
refuses a plot inside the bundle. Each refusal exits 2 with one line naming the path, writes nothing and
leaves every file of the user byte for byte as it was."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from helpers.checks import assert_one_line_error
from helpers.trees import snapshot
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from heliabuild.fence import rewrite_model_with_fences
from heliabuild.model import save_model
from heliabuild.results.reader import load_result
from heliabuild.runner.freeze import MODEL_FILE, RUNNER_FILE
from heliabuild.synth import chain_network

POLICY = "defaults:\n  fvp:\n    acquisition: {state: carry, warmup_invokes: 0, measured_invokes: 2}\n"
RUNS = ("run", "run-build")


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A model, its fenced copy and sidecar, a policy, a runner of the model and one bundle of it."""
    from heliabuild.cli import main

    folder = tmp_path_factory.mktemp("made")
    save_model(chain_network(0), folder / "chain.tflite")
    rewrite_model_with_fences(folder / "chain.tflite", [3]).save(folder / "chain_fenced.tflite")
    (folder / "policy.yaml").write_text(POLICY, encoding="utf-8")
    runner = ["runner", "--model", folder / "chain.tflite", "--policy", folder / "policy.yaml"]
    assert main([str(a) for a in [*runner, "-o", folder / "runner"]]) == 0
    assert main(["run", str(folder / "runner" / RUNNER_FILE), "-o", str(folder / "bundle")]) == 0
    return folder


@pytest.fixture
def world(made: Path, tmp_path: Path) -> Path:
    """A fresh copy of `made` with a folder of the user's own files beside it."""
    root = tmp_path / "world"
    shutil.copytree(made, root, symlinks=True)
    user = root / "mine"
    (user / "deep").mkdir(parents=True)
    (user / "notes.txt").write_bytes(b"my notes\n")
    (user / "deep" / "data.bin").write_bytes(bytes(range(256)))
    return root


def refused(result, root: Path, before: dict[str, str], *fragments: str) -> str:
    """The one error line; and nothing under `root` changed, not even a temporary file."""
    line = assert_one_line_error(result, *fragments)
    assert snapshot(root) == before
    return line


# --- run / run-build -o: replace only an earlier bundle -------------------------------------------------


@pytest.mark.parametrize("command", RUNS)
def test_run_refuses_a_folder_of_the_users_files(cli, world: Path, command: str) -> None:
    before = snapshot(world)
    result = cli(command, world / "runner" / RUNNER_FILE, "-o", world / "mine")
    line = refused(result, world, before, f"{world / 'mine'}: the folder is not empty and is not a result bundle")
    assert line.endswith("(hint: choose another -o, or an empty or new folder)")


@pytest.mark.parametrize("command", RUNS)
def test_run_refuses_an_existing_file(cli, world: Path, command: str) -> None:
    before = snapshot(world)
    result = cli(command, world / "runner" / RUNNER_FILE, "-o", world / "mine" / "notes.txt")
    refused(result, world, before, f"{world / 'mine' / 'notes.txt'}: exists and is not a folder")


@pytest.mark.parametrize("command", RUNS)
@pytest.mark.parametrize(
    ("output", "relation"),
    [("runner", "is"), (".", "contains"), ("runner/runner.json", "is")],
    ids=["runner-folder", "parent-of-runner", "runner-json"],
)
def test_run_refuses_the_runner_or_a_folder_holding_it(
    cli, world: Path, command: str, output: str, relation: str
) -> None:
    before = snapshot(world)
    target = world / output
    result = cli(command, world / "runner" / RUNNER_FILE, "-o", target)
    refused(result, world, before, f"{target}: the output result bundle {relation} the input runner")


@pytest.mark.parametrize("command", RUNS)
def test_run_refuses_a_tampered_earlier_bundle(cli, world: Path, command: str) -> None:
    summary = world / "bundle" / "run_summary.csv"
    summary.write_bytes(summary.read_bytes() + b"9,,,,\n")
    before = snapshot(world)
    result = cli(command, world / "runner" / RUNNER_FILE, "-o", world / "bundle")
    refused(result, world, before, "is not a result bundle that verifies", "run_summary.csv")


def test_run_refuses_an_earlier_bundle_holding_a_file_of_the_user(cli, world: Path) -> None:
    (world / "bundle" / "keep.txt").write_bytes(b"keep me")
    before = snapshot(world)
    result = cli("run", world / "runner" / RUNNER_FILE, "-o", world / "bundle")
    refused(result, world, before, "keep.txt is in the bundle but not listed in the manifest")


def test_run_refuses_a_symlink_to_a_bundle(cli, world: Path) -> None:
    (world / "link").symlink_to(world / "bundle", target_is_directory=True)
    before = snapshot(world)
    result = cli("run", world / "runner" / RUNNER_FILE, "-o", world / "link")
    refused(result, world, before, f"{world / 'link'}: the bundle folder is a symlink")


@pytest.mark.parametrize("command", RUNS)
def test_run_replaces_an_earlier_bundle_and_fills_an_empty_folder(cli, world: Path, command: str) -> None:
    (world / "empty").mkdir()
    outside = {k: v for k, v in snapshot(world).items() if not k.startswith(("bundle", "empty"))}
    for target in (world / "bundle", world / "empty"):
        result = cli(command, world / "runner" / RUNNER_FILE, "-o", target)
        assert result.code == 0, result.err
        assert len(load_result(target).samples) == 2
    after = snapshot(world)
    assert {k: v for k, v in after.items() if not k.startswith(("bundle", "empty"))} == outside
    assert not [name for name in os.listdir(world) if name.startswith(".")]  # no .old or .tmp left


# --- an output that is, or contains, an input -------------------------------------------------------------


def test_fence_refuses_to_write_over_its_model(cli, world: Path) -> None:
    before = snapshot(world)
    model = world / "chain.tflite"
    result = cli("fence", model, "--after-ops", "3", "-o", model)
    refused(result, world, before, f"{model}: the output fenced model is the input model {model}")


def test_fence_refuses_a_sidecar_over_its_plan(cli, world: Path) -> None:
    plan = world / "out.fenced_boundaries.json"
    plan.write_bytes(b"{}\n")
    before = snapshot(world)
    result = cli("fence", world / "chain.tflite", "--plan", plan, "-o", world / "out.tflite")
    refused(result, world, before, f"{plan}: the output sidecar is the input fence plan")


def test_fence_refuses_an_output_folder_holding_its_model(cli, world: Path) -> None:
    before = snapshot(world)
    result = cli("fence", world / "chain.tflite", "--after-ops", "3", "-o", world)
    refused(result, world, before, "the output fenced model contains the input model")


def test_unfence_refuses_to_write_over_its_model(cli, world: Path) -> None:
    before = snapshot(world)
    fenced = world / "chain_fenced.tflite"
    result = cli("unfence", fenced, "-o", fenced)
    refused(result, world, before, "the output unfenced model is the input fenced model")


def test_a_hard_link_or_symlink_of_an_input_is_the_input(cli, world: Path) -> None:
    os.link(world / "chain.tflite", world / "hard.tflite")
    (world / "soft.tflite").symlink_to(world / "chain.tflite")
    before = snapshot(world)
    for alias in ("hard.tflite", "soft.tflite"):
        result = cli("fence", world / "chain.tflite", "--after-ops", "3", "-o", world / alias)
        refused(result, world, before, "the output fenced model is the input model")


def test_plan_fences_refuses_to_write_over_its_csv_or_model(cli, world: Path) -> None:
    csv = world / "pl.csv"
    csv.write_bytes(b"a,b\n")
    before = snapshot(world)
    for output, fragment in ((csv, "is the input per-layer CSV"), (world / "chain.tflite", "is the input model")):
        result = cli("plan-fences", world / "chain.tflite", "--per-layer", csv, "--budget-cycles", "9", "-o", output)
        refused(result, world, before, fragment)


def test_vela_refuses_an_output_over_its_model_or_configuration(cli, world: Path) -> None:
    (world / "out").mkdir()
    os.link(world / "chain.tflite", world / "out" / "chain_vela.tflite")
    ini = world / "out" / "chain_summary_Sys.csv"
    ini.write_text("[System_Config.Sys]\ncore_clock=1e8\n[Memory_Mode.Mem]\nconst_mem_area=Axi1\n", encoding="utf-8")
    before = snapshot(world)
    result = cli("vela", world / "chain.tflite", "-o", world / "out")
    refused(result, world, before, "the output Vela output chain_vela.tflite is the input model")
    os.unlink(world / "out" / "chain_vela.tflite")
    before = snapshot(world)
    options = ["--system-config", "Sys", "--memory-mode", "Mem", "--config", ini]
    result = cli("vela", world / "chain.tflite", "-o", world / "out", *options)
    refused(result, world, before, "is the input Vela configuration")


def test_aot_plan_refuses_outputs_over_its_inputs(cli, world: Path) -> None:
    from heliabuild.aot.platforms import load_platforms

    platform = sorted(load_platforms())[0]
    (world / "out").mkdir()
    plan = world / "out" / "m_plan.json"
    plan.write_bytes(b"{}\n")
    csv = world / "out" / "m_report.json"
    csv.write_bytes(b"a,b\n")
    before = snapshot(world)
    common = ["aot-plan", world / "chain.tflite", "--prefix", "m", "--platform", platform, "-o", world / "out"]
    refused(cli(*common, "--plan", plan), world, before, "is the input input plan")
    refused(cli(*common, "--vela-per-layer", csv), world, before, "is the input per-layer CSV")


def test_runner_refuses_a_folder_holding_an_input(cli, world: Path) -> None:
    before = snapshot(world)
    result = cli("runner", "--model", world / "chain.tflite", "--policy", world / "policy.yaml", "-o", world)
    refused(result, world, before, f"{world}: the output runner folder contains the input model")
    result = cli("runner", "--model", world / "chain.tflite", "-o", world / "chain.tflite")
    refused(result, world, before, "the output runner folder is the input model")
    result = cli(
        "runner", "--model", world / "chain.tflite", "--policy", world / "policy.yaml", "-o", world / "policy.yaml"
    )
    refused(result, world, before, "the output runner folder is the input policy")


def test_runner_refuses_a_folder_holding_a_tensor_input_of_its_policy(cli, world: Path) -> None:
    (world / "feed").mkdir()
    (world / "feed" / "in0.bin").write_bytes(b"\0" * 8)
    policy = world / "tensor_policy.yaml"
    policy.write_text("defaults:\n  fvp:\n    tensor_io: {inputs: [{index: 0, file: feed/in0.bin}]}\n")
    before = snapshot(world)
    result = cli("runner", "--model", world / "chain.tflite", "--policy", policy, "-o", world / "feed")
    refused(result, world, before, f"{world / 'feed'}: the output runner folder contains the input tensor input")


# --- show --plot inside the bundle --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("plot", "relation"),
    [("bundle/plot.svg", "is inside"), ("bundle/result.json", "is inside"), ("bundle", "is"), (".", "contains")],
    ids=["new-file-inside", "result-json", "the-bundle", "parent"],
)
def test_show_refuses_a_plot_in_or_around_the_bundle(cli, world: Path, plot: str, relation: str) -> None:
    before = snapshot(world)
    result = cli("show", world / "bundle", "--plot", world / plot)
    refused(result, world, before, f"{world / plot}: the output plot {relation} the input result bundle")
    assert load_result(world / "bundle").samples


# --- the property: a refused command leaves every file as it was ----------------------------------------

TARGETS = (
    "bundle",
    "bundle/result.json",
    "bundle/artifacts",
    "bundle/artifacts/acquisition.json",
    "bundle/new.svg",
    "bundle/artifacts/new/deeper",
    ".",
    "mine",
    "mine/notes.txt",
    "mine/deep",
    "mine/new",
    "runner",
    f"runner/{RUNNER_FILE}",
    f"runner/{MODEL_FILE}",
    "runner/new",
    "chain.tflite",
    "fresh/nested/out",
    "empty",
)


@settings(max_examples=40, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(command=st.sampled_from(["run", "show"]), target=st.sampled_from(TARGETS))
def test_no_refused_command_changes_a_file(cli, made: Path, tmp_path_factory, command: str, target: str) -> None:
    root = tmp_path_factory.mktemp("property") / "world"
    shutil.copytree(made, root, symlinks=True)
    (root / "mine" / "deep").mkdir(parents=True)
    (root / "mine" / "deep" / "data.bin").write_bytes(b"\0\1")
    (root / "mine" / "notes.txt").write_bytes(b"notes")
    (root / "empty").mkdir()
    before = snapshot(root)
    if command == "run":
        result = cli("run", root / "runner" / RUNNER_FILE, "-o", root / target)
    else:
        result = cli("show", root / "bundle", "--plot", root / target)
    after = snapshot(root)
    if result.code != 0:
        assert_one_line_error(result)
        assert after == before
        return
    written = Path(target).as_posix()
    # Success writes only the target: a new path, or (run) the earlier bundle it replaces.
    assert command == "show" or target in ("bundle", "runner/new", "mine/new", "fresh/nested/out", "empty")
    assert command == "run" or not target.startswith("bundle")
    for path, digest in before.items():
        if path != written and not path.startswith(f"{written}/"):
            assert after.get(path) == digest, path
    assert load_result(root / "bundle").samples


def test_discard_bundle_deletes_only_a_bundle_that_verifies(tmp_path: Path) -> None:
    from test_results_bundle import make_bundle

    from heliabuild.results.bundle import discard_bundle

    make_bundle(tmp_path / "ours")
    make_bundle(tmp_path / "tampered")
    (tmp_path / "tampered" / "run_summary.csv").write_bytes(b"edited")
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_bytes(b"notes")
    kept = {k: v for k, v in snapshot(tmp_path).items() if not k.startswith("ours")}
    for name in ("ours", "tampered", "mine", "mine/notes.txt", "absent"):
        discard_bundle(tmp_path / name)
    assert snapshot(tmp_path) == kept
