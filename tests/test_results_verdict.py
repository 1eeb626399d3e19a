"""The verification verdict and the input source, stated where a user reads a bundle (heliabuild.results.verdict):
`heliabuild show`, `heliabuild compare`, and (tests/test_scons_runner.py, tests/test_scons_sweep.py) the SCons
summary and sweep tables. On real runs: a qemu-m55 bundle (real firmware, real QEMU) and litert bundles with
zeros and with the policy's tensor_io bytes."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from test_results_scopes import qemu_bundle  # noqa: F401  (the module fixture)

from heliabuild.model import save_model
from heliabuild.results.layout import Sample
from heliabuild.results.verdict import input_source, verdict
from heliabuild.synth import chain_network


def _check(largest: float | None, differing: int, elements: int = 12, unbounded: int = 0) -> dict[str, object]:
    return {
        "position": 0,
        "name": "out",
        "max_abs_diff": largest,
        "differing_elements": differing,
        "unbounded_elements": unbounded,
        "elements": elements,
    }


IDENTITY = {"policy": {"verification": {"resolver": "BUILTIN_REF", "max_abs_diff": None}, "tensor_io": None}}


@pytest.mark.parametrize(
    ("checks", "text", "short"),
    [
        (
            [[_check(0, 0)]],
            "outputs match LiteRT reference kernels (BUILTIN_REF): 0 of 12 elements differ",
            "0 of 12 differ (BUILTIN_REF)",
        ),
        (
            [[_check(0, 0)], [_check(0, 0)]],
            "outputs match LiteRT reference kernels (BUILTIN_REF): 0 of 12 elements differ in each of 2 samples",
            "0 of 12 differ (BUILTIN_REF)",
        ),
        (
            [[_check(0, 0)], [_check(3, 5)]],
            "outputs differ from LiteRT reference kernels (BUILTIN_REF): largest difference 3, up to 5 of 12 elements "
            "differ in 1 of 2 samples (no bound, recorded)",
            "max 3, 5 of 12 differ (BUILTIN_REF)",
        ),
        (
            [[_check(None, 2, unbounded=1)]],
            "outputs differ from LiteRT reference kernels (BUILTIN_REF): largest difference unbounded (a NaN or an "
            "infinity against another value), 2 of 12 elements differ (no bound, recorded)",
            "max unbounded, 2 of 12 differ (BUILTIN_REF)",
        ),
    ],
    ids=["match", "match-each", "differ", "unbounded"],
)
def test_the_verdict_states_the_reference_and_the_largest_difference(
    checks: list[list[dict[str, object]]], text: str, short: str
) -> None:
    samples = [Sample(index=k, verification=sample) for k, sample in enumerate(checks)]
    found = verdict(IDENTITY, samples)
    assert (found.text(), found.short()) == (text, short)


def test_an_uncompared_run_says_so() -> None:
    found = verdict({"policy": {"tensor_io": None}}, [Sample(index=0)])
    assert (found.text(), found.short()) == ("outputs not compared", "not compared")


def test_the_input_source_names_the_policy_files() -> None:
    entries = [{"index": 0, "file": "inputs/input_0.bin", "sha256": "0" * 64, "source": "golden.bin"}]
    assert input_source({"policy": {"tensor_io": {"inputs": entries}}}) == "golden.bin"
    entries.append({"index": 2, "file": "inputs/input_2.bin", "sha256": "0" * 64, "source": "b.bin"})
    assert input_source({"policy": {"tensor_io": {"inputs": entries}}}) == "input 0: golden.bin, input 2: b.bin"
    assert input_source({"policy": {"tensor_io": None}}) == "zeros"


def test_show_and_compare_state_the_verdict_of_a_qemu_run(cli, qemu_bundle: Path) -> None:  # type: ignore[no-untyped-def]  # noqa: F811
    shown = cli("show", qemu_bundle)
    assert shown.code == 0, shown.err
    lines = shown.out.splitlines()
    assert "  verification: outputs match LiteRT reference kernels (BUILTIN_REF): 0 of 12 elements differ" in lines
    assert "  inputs: zeros" in lines
    compared = cli("compare", qemu_bundle, qemu_bundle)
    assert compared.code == 0, compared.err
    assert "outputs and inputs\n" in compared.out
    row = next(line for line in compared.out.splitlines() if line.startswith("  verification"))
    assert row.count("outputs match LiteRT reference kernels (BUILTIN_REF): 0 of 12 elements differ") == 2
    document = json.loads(cli("compare", qemu_bundle, qemu_bundle, "--format", "json").out)
    assert document["outcome"][1] == {"name": "inputs", "base": "zeros", "new": "zeros"}


def test_show_names_the_tensor_io_file_and_compare_tells_the_runs_apart(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    model = tmp_path / "chain.tflite"
    save_model(chain_network(0), model)
    (tmp_path / "golden.bin").write_bytes(np.random.default_rng(5).bytes(490))
    (tmp_path / "policy.yaml").write_text(
        "defaults:\n  fvp:\n    tensor_io: {inputs: [{index: 0, file: golden.bin}]}\n    verification: {}\n"
    )
    (tmp_path / "zeros.yaml").write_text("defaults:\n  fvp: {}\n")
    for name in ("policy", "zeros"):
        argv = ["runner", "--model", model, "--policy", tmp_path / f"{name}.yaml", "-o", tmp_path / f"runner_{name}"]
        assert cli(*argv).code == 0
        assert cli("run", tmp_path / f"runner_{name}" / "runner.json", "-o", tmp_path / name).code == 0
    lines = cli("show", tmp_path / "policy").out.splitlines()
    assert "  inputs: golden.bin" in lines
    assert any(
        line.startswith(
            "  verification: outputs match LiteRT default kernels (BUILTIN_WITHOUT_DEFAULT_DELEGATES): 0 of "
        )
        for line in lines
    ), lines
    assert "  verification: outputs not compared" in cli("show", tmp_path / "zeros").out.splitlines()
    outcome = json.loads(cli("compare", tmp_path / "zeros", tmp_path / "policy", "--format", "json").out)["outcome"]
    assert outcome[1] == {"name": "inputs", "base": "zeros", "new": "golden.bin"}
    assert outcome[0]["base"] == "outputs not compared" and outcome[0]["new"].startswith("outputs match")
