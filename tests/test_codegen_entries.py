"""The generated module checks each kernel's arguments once, in model_init, and model_run calls only run entries,
which check nothing: read from the generated C source of real models (heliabuild.synth and the shared MLPerf
Tiny models) and from the kernels' own C sources. Each layer calls the kernel entry its AOT plan names where
heliabuild has one, else the generic entry, and `<prefix>_layout.json` says which per layer."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from heliabuild.aot.stage import write_plan
from heliabuild.codegen.module import generate_module
from heliabuild.fence import rewrite_model_with_fences
from heliabuild.kernels.native import C_SOURCE_DIR
from heliabuild.model import save_model
from heliabuild.synth import synthesize

CALL = re.compile(r"\b([A-Za-z_][A-Za-z0-9_]*)\s*\(")
NOT_CALLS = {"if", "return", "sizeof", "OPERATOR_DONE", "refuse", "on_fence"}
"""Not kernel calls: C keywords, the profiling hook, the refusal helper and the fence callback (ctx->on_fence)."""
CHECKS = re.compile(r"_(check|prepare)$")


def _body(source: str, signature: str) -> str:
    """The text of the function whose definition starts with `signature`, braces matched."""
    start = source.index(signature)
    opening = source.index("{", start)
    depth = 0
    for position in range(opening, len(source)):
        depth += {"{": 1, "}": -1}.get(source[position], 0)
        if depth == 0:
            return source[opening : position + 1]
    raise AssertionError(f"{signature}: unbalanced braces")


def _generated(model: Path, folder: Path) -> str:
    write_plan(model, folder / "plan", "net", "mps3_an547")
    module = generate_module(model, folder / "plan" / "net_plan.json", "net", folder / "gen")
    return module.source.read_text()


@pytest.fixture(params=["kws", "residual-fenced", "chain", "shared-kws", "shared-resnet"])
def generated(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param.startswith("shared-"):
        return _generated(request.getfixturevalue(f"{request.param.removeprefix('shared-')}_path"), tmp_path)
    kind = request.param.removesuffix("-fenced")
    model = tmp_path / f"{kind}.tflite"
    save_model(synthesize(kind, seed=3), model)
    if request.param.endswith("-fenced"):
        fenced = tmp_path / f"{kind}_fenced.tflite"
        rewrite_model_with_fences(model, [2, 5]).save(fenced)
        model = fenced
    return _generated(model, tmp_path)


def test_model_run_calls_run_entries_only_and_model_init_checks_each_operator_once(generated: str) -> None:
    run = _body(generated, "helia_model_result net_model_run(")
    init = _body(generated, "helia_model_result net_model_init(")
    run_calls = [name for name in CALL.findall(run) if name not in NOT_CALLS]
    init_calls = [name for name in CALL.findall(init) if name not in NOT_CALLS]
    assert run_calls, "model_run calls nothing"
    assert not [name for name in run_calls if CHECKS.search(name)]
    assert {name for name in run_calls if name != "memcpy"} <= {name for name in run_calls if name.endswith("_run")}
    kernel_runs = [name for name in run_calls if name.endswith("_run")]
    checks = [name for name in init_calls if CHECKS.search(name)]
    assert not [name for name in init_calls if name.endswith("_run")]
    # One check per operator, in the same order as the runs, each the run's own.
    assert len(checks) == len(kernel_runs)
    for check, runner in zip(checks, kernel_runs, strict=True):
        assert CHECKS.sub("", check) == runner.removesuffix("_run"), (check, runner)


def test_no_run_entry_of_the_kernels_calls_a_check() -> None:
    """Every run entry defined in heliabuild/kernels/c (`helia_*_run`, and the static `*_run` bodies they and the
    macro-made entries of ops_contracts.c call) trusts its check: it calls no `*_check` or `*_prepare`."""
    found = 0
    for path in sorted(C_SOURCE_DIR.glob("*.c")):
        source = path.read_text()
        for match in re.finditer(r"^(?:static )?helia_status (\w+_run)\(", source, flags=re.MULTILINE):
            body = _body(source, match.group(0))
            found += 1
            assert not re.search(r"\w*(_check|_prepare)\s*\(", body), f"{path.name}: {match.group(1)}"
    assert found >= 20


def _module(model: Path, folder: Path, edit: dict[int, str] | None = None) -> tuple[str, dict]:
    """The generated source and layout report of `model`, its plan's `kernel.entry` replaced per `edit`."""
    write_plan(model, folder / "plan", "net", "mps3_an547")
    plan_path = folder / "plan" / "net_plan.json"
    if edit:
        plan = json.loads(plan_path.read_text())
        for op in plan["operators"]:
            if op["index"] in edit:
                op["kernel"]["entry"] = edit[op["index"]]
        plan_path.write_text(json.dumps(plan))
    module = generate_module(model, plan_path, "net", folder / "gen")
    return module.source.read_text(), json.loads(module.layout_json.read_text())


def test_each_layer_calls_the_entry_its_plan_names(kws_path: Path, tmp_path: Path) -> None:
    source, report = _module(kws_path, tmp_path)
    run = _body(source, "helia_model_result net_model_run(")
    kernels = {k["operator"]: k for k in report["kernels"]}
    assert [k["operator"] for k in report["kernels"]] == list(range(13))
    for index in (2, 4, 6, 8):  # DS-CNN's pointwise convolutions: arm_convolve_1x1_s8_fast
        assert kernels[index]["plan_entry"] == "arm_convolve_1x1_s8_fast"
        assert kernels[index]["run"] == "helia_conv2d_1x1_s8_run" and kernels[index]["plan_entry_honoured"]
        assert f"helia_conv2d_1x1_s8_run(&op{index})" in run
    assert kernels[0]["plan_entry"] == "arm_convolve_s8" and kernels[0]["run"] == "helia_conv2d_s8_run"
    assert kernels[1]["run"] == "helia_depthwise_conv2d_s8_run" and kernels[11]["run"] == "helia_fully_connected_s8_run"
    assert kernels[10]["plan_entry"] is None and kernels[10]["plan_entry_honoured"] is None
    # The weight sums are constants beside each call: four bytes per output channel.
    assert [kernels[i]["weight_sums_bytes"] for i in (0, 1, 2, 11)] == [4 * 64, 4 * 64, 4 * 64, 4 * 12]
    assert kernels[9]["weight_sums_bytes"] == 0 and kernels[2]["scratch_bytes"] == 0
    assert kernels[0]["scratch_bytes"] == 40
    # The generic convolution's im2col row is planned in the arena, live at its operator only; the 1x1 has none.
    assert report["scratch"] == [{"operator": 0, "bytes": 10 * 4 * 1, "offset": report["arena"]["offsets"]["scratch0"]}]
    assert report["arena"]["bytes"] <= 1.1 * report["arena"]["peak_live_bytes"]


def test_a_plan_entry_without_a_heliabuild_equivalent_takes_the_generic_entry_and_says_so(
    kws_path: Path, tmp_path: Path
) -> None:
    _, report = _module(kws_path, tmp_path, {0: "arm_convolve_1_x_n_s8", 1: "arm_depthwise_conv_3x3_s8"})
    kernels = {k["operator"]: k for k in report["kernels"]}
    assert kernels[0]["run"] == "helia_conv2d_s8_run" and kernels[0]["plan_entry_honoured"] is False
    assert kernels[0]["note"] == "arm_convolve_1_x_n_s8 has no heliabuild equivalent; the generic entry helia_conv2d_s8"
    assert kernels[1]["run"] == "helia_depthwise_conv2d_s8_run" and not kernels[1]["plan_entry_honoured"]


def test_a_1x1_entry_named_for_a_layer_it_cannot_take_falls_back_to_the_generic_entry(
    kws_path: Path, tmp_path: Path
) -> None:
    _, report = _module(kws_path, tmp_path, {0: "arm_convolve_1x1_s8_fast"})  # layer 0 is a 10x4 convolution
    (first,) = (k for k in report["kernels"] if k["operator"] == 0)
    assert first["run"] == "helia_conv2d_s8_run" and first["plan_entry_honoured"] is False
    assert "needs a 1x1 filter without padding" in first["note"]
    assert report["scratch"][0]["operator"] == 0
