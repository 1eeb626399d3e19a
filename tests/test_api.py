"""The reader API: acquisition facts, run identity, typed samples and statistics, the portable view."""

from __future__ import annotations

from pathlib import Path

from test_results_bundle import SHA_A, SHA_B, make_bundle

from heliabuild.api import (
    acquisition_facts,
    load_result,
    measurement_samples,
    measurement_statistics,
    portable_view,
    run_identity,
)
from heliabuild.results.receipt import Receipt


def test_facts_of_an_interpreter_run_with_warmups(tmp_path: Path) -> None:
    result = load_result(make_bundle(tmp_path / "run", warmups=1, backend="litert").parent)
    facts = acquisition_facts(result)
    assert facts is not None
    assert (facts.state, facts.warmup_invokes, facts.measured_invokes) == ("carry", 1, 3)
    assert facts.initialization == "interpreter_allocate_and_first_invoke" and facts.call_once_present is True
    assert facts.first_invoke_initializer is True and facts.first_invoke_window == "warmup"
    assert facts.instance_boundary == "boot" and facts.counter_scope is None  # the host counts nothing
    assert facts.cpu_timing_scope == "invoke_only" and facts.timing_scope == "invoke_only"


def test_facts_without_warmups_measure_the_first_invoke(tmp_path: Path) -> None:
    result = load_result(make_bundle(tmp_path / "run", count=1, warmups=0).parent)
    facts = acquisition_facts(result)
    assert facts is not None and facts.first_invoke_window == "measured" and facts.first_invoke_initializer is False


def test_facts_of_an_aot_run(tmp_path: Path) -> None:
    receipt = Receipt("carry", 0, 3, "before_measurement", None)
    path = make_bundle(tmp_path / "run", warmups=0, receipt=receipt, runtime="aot")
    facts = acquisition_facts(load_result(path))
    assert facts is not None and facts.call_once_present is None and facts.first_invoke_initializer is False
    assert facts.counter_scope == "npu_callbacks"


def test_unexecuted_result(tmp_path: Path) -> None:
    result = load_result(make_bundle(tmp_path / "run", stage="vela_only", receipt=None, samples=[], outputs=[]))
    assert acquisition_facts(result) is None and measurement_statistics(result) is None
    assert measurement_samples(result) == []
    view = portable_view(result)
    assert view["observations"] == [] and view["extensions"]["helia-estimator"]["acquisition"] is None


def test_identity_samples_and_statistics(tmp_path: Path) -> None:
    result = load_result(make_bundle(tmp_path / "run"))
    identity = run_identity(result)
    assert (identity.runner_sha256, identity.model_sha256, identity.backend) == (SHA_A, SHA_B, "fvp")
    assert identity.policy["measured_invokes"] == 3
    samples = measurement_samples(result)
    assert [s.index for s in samples] == [0, 1, 2] and samples[0].cycles == {"total": 210, "segments": [100, 110]}
    stats = measurement_statistics(result)
    assert stats is not None
    total = stats.counters["cycles.total"]
    assert total is not None and (total.count, total.mean.numerator, total.mean.denominator) == (3, 210, 1)
    assert stats.floats["energy"] is None and stats.floats["latency_s"] is None  # no clock on an FVP


def test_portable_view(tmp_path: Path) -> None:
    result = load_result(make_bundle(tmp_path / "run", backend="litert"))
    view = portable_view(result)
    assert [o["sample_index"] for o in view["observations"]] == [0, 1, 2]
    assert all(o["sample_count"] == 1 for o in view["observations"])
    assert view["observations"][2]["source"] == "measurements.samples/2"
    extension = view["extensions"]["helia-estimator"]
    assert extension["statistics"] == result.document["measurements"]["statistics"]
    acquisition = extension["acquisition"]
    assert acquisition["state"] == "carry" and acquisition["counter_scope"] is None
    receipt_ref = acquisition["evidence"]["receipt"]
    assert receipt_ref["path"] == "artifacts/acquisition.json"
    assert receipt_ref["sha256"] == result.manifest["artifacts/acquisition.json"]
    assert view["omitted"][0]["field"] == "per_layer_attribution"
