"""A model with state through the run stage on qemu-m55: `heliabuild runner --backend qemu-m55` and `heliabuild
run` on the fenced LSTM sequence model, with warmups and several measured invokes on one instance (carry). The
verification compares like with like: LiteRT runs the unfenced model through the same invokes, and each sample
is compared with the matching invoke, so the carried state's outputs verify although no two samples agree."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import require_firmware_tools

from heliabuild.aot.stage import write_plan
from heliabuild.fence import rewrite_model_with_fences
from heliabuild.model import save_model
from heliabuild.results.reader import load_result
from heliabuild.synth import synthesize


@pytest.fixture(autouse=True)
def _tools(firmware_library: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    require_firmware_tools()
    monkeypatch.setenv("HELIA_FIRMWARE_CACHE", str(firmware_library.parent.parent))


def test_a_stateful_model_runs_on_qemu_verified_invoke_by_invoke(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    source = tmp_path / "lstm.tflite"
    save_model(synthesize("lstm", seed=2), source)
    model = tmp_path / "lstm_fenced.tflite"
    rewrite_model_with_fences(source, [0]).save(model)
    write_plan(model, tmp_path / "plan", "net", "mps3_an547")
    policy = tmp_path / "policy.yaml"
    policy.write_text("defaults:\n  fvp:\n    acquisition: {state: carry, warmup_invokes: 2, measured_invokes: 3}\n")
    built = cli(
        "runner", "--model", model, "--sidecar", tmp_path / "lstm_fenced.fenced_boundaries.json",
        "--aot-plan", tmp_path / "plan" / "net_plan.json", "--backend", "qemu-m55", "--policy", policy,
        "-o", tmp_path / "runner",
    )  # fmt: skip
    assert built.code == 0, built.err
    layout = json.loads((tmp_path / "runner" / "firmware_layout.json").read_text())
    assert [t["name"] for t in layout["state"]["tensors"]] == ["lstm/output_state", "lstm/cell_state"]
    ran = cli("run", tmp_path / "runner" / "runner.json", "-o", tmp_path / "result")
    assert ran.code == 0, ran.err
    assert ran.out.splitlines()[-1] == (
        "heliabuild: run verification: outputs match LiteRT reference kernels (BUILTIN_REF): 0 of 4 elements "
        "differ in each of 3 samples; inputs: zeros"
    )
    result = load_result(tmp_path / "result")
    assert result.receipt is not None
    assert (result.receipt.state, result.receipt.warmup_invokes, result.receipt.measured_invokes) == ("carry", 2, 3)
    for sample in result.samples:
        assert sample.verification is not None
        assert [(c["max_abs_diff"], c["differing_elements"]) for c in sample.verification] == [(0, 0)]
        assert sample.instructions is not None and len(sample.instructions["segments"]) == 2
    signatures = [json.dumps(sample.signatures, sort_keys=True) for sample in result.samples]
    assert len(set(signatures)) > 1, "the carried state changes the outputs from invoke to invoke"
