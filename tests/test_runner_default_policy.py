"""The policy of a runner given none (heliabuild.runner.backends.litert.DEFAULT_POLICY): litert measures host
time, which varies run to run, so it warms up once and measures ten invokes; a run of that default publishes
a bundle of ten samples. The deterministic backends keep a single invoke."""

from __future__ import annotations

from pathlib import Path

from heliabuild.api import load_result
from heliabuild.model import save_model
from heliabuild.runner.backends.litert import DEFAULT_POLICY as LITERT_DEFAULT_POLICY
from heliabuild.runner.freeze import build_runner, load_runner
from heliabuild.runner.lifecycle import run_runner
from heliabuild.runner.policy import Policy
from heliabuild.synth import chain_network


def test_litert_without_a_policy_warms_up_once_and_measures_ten_invokes(tmp_path: Path) -> None:
    model = tmp_path / "chain.tflite"
    save_model(chain_network(0), model)
    build_runner(tmp_path / "runner", model=model, policy=None)
    policy = load_runner(tmp_path / "runner" / "runner.json").policy
    assert (policy.state, policy.warmup_invokes, policy.measured_invokes) == ("carry", 1, 10)
    run_runner(tmp_path / "runner" / "runner.json", tmp_path / "result")
    bundle = load_result(tmp_path / "result")
    assert bundle.receipt is not None
    assert (bundle.receipt.warmup_invokes, bundle.receipt.measured_invokes) == (1, 10)


def test_a_given_policy_is_kept_and_the_deterministic_backends_keep_one_invoke(tmp_path: Path) -> None:
    model = tmp_path / "chain.tflite"
    save_model(chain_network(0), model)
    given = {"defaults": {"fvp": {"acquisition": {"state": "carry", "measured_invokes": 3}}}}
    build_runner(tmp_path / "runner", model=model, policy=given)
    policy = load_runner(tmp_path / "runner" / "runner.json").policy
    assert (policy.warmup_invokes, policy.measured_invokes) == (0, 3)  # automatic warmup: no CALL_ONCE
    assert Policy() != LITERT_DEFAULT_POLICY and Policy().measured_invokes == 1  # qemu-m55 and fvp without one
