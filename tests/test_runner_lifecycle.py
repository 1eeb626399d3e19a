"""heliabuild.runner.freeze and heliabuild.runner.lifecycle: runner.json format 2, bindings, the lifecycle."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from heliabuild.errors import HeliaError, PolicyError, RunnerError
from heliabuild.fence import rewrite_model_with_fences
from heliabuild.files import sha256_bytes
from heliabuild.model import serialize
from heliabuild.runner.freeze import build_runner, load_runner
from heliabuild.runner.lifecycle import measure, run_runner
from heliabuild.runner.litert import run_reference
from heliabuild.synth import chain_network, residual_network
from heliabuild.synth.stateful import counter_model
from heliabuild.vela import compile as vela_compile


def _segments_json(model_bytes: bytes, after_ops: list[int], cycles: list[int], operator_count: int) -> dict:
    ends = [*after_ops, operator_count - 1]
    segments, start = [], 0
    for index, (end, op_cycles) in enumerate(zip(ends, cycles, strict=True)):
        figures = dict.fromkeys(
            (
                "npu_cycles",
                "mac_count",
                "sram_access_cycles",
                "dram_access_cycles",
                "on_flash_access_cycles",
                "off_flash_access_cycles",
            ),
            0,
        )
        segments.append(
            {"index": index, "op_range_start": start, "op_range_end": end, "rows": [], "op_cycles": op_cycles} | figures
        )
        start = end + 1
    return {
        "schema_version": 1,
        "model": "model_fenced.tflite",
        "model_sha256": sha256_bytes(model_bytes),
        "source_sha256": None,
        "vela": {"version": "4.0", "accelerator": "ethos-u55-128", "system_config": "x", "memory_mode": "y"},
        "boundary_after_ops": after_ops,
        "segments": segments,
        "coverage": {"total_cycles": 0, "matched_cycles": 0, "fraction": 0, "row_count": 0, "unmatched_rows": []},
        "rows": [],
        "command_streams": {"count": len(ends), "operator_types": [], "matches_segments": True, "cpu_operators": []},
    }


@pytest.fixture
def fenced(tmp_path: Path) -> dict[str, Path]:
    """A residual network fenced inside a block, with its sidecar and a segments.json for it."""
    source = bytes(serialize(residual_network(0)))
    result = rewrite_model_with_fences(source, [1, 7])
    folder = tmp_path / "inputs"
    folder.mkdir()
    model = folder / "model_fenced.tflite"
    model.write_bytes(bytes(result.fenced_bytes))
    sidecar = folder / "model_fenced.fenced_boundaries.json"
    sidecar.write_text(json.dumps(result.boundaries.to_json()))
    segments = folder / "model_fenced_segments.json"
    segments.write_text(json.dumps(_segments_json(bytes(result.fenced_bytes), [1, 7], [100, 250, 40], 16)))
    source_path = folder / "model.tflite"
    source_path.write_bytes(source)
    return {"model": model, "sidecar": sidecar, "segments": segments, "source": source_path}


def _policy(**acquisition: object) -> dict:
    return {"defaults": {"fvp": {"acquisition": acquisition}}}


def test_build_and_run_fenced_runner(tmp_path: Path, fenced: dict[str, Path]) -> None:
    vela = Path(vela_compile(fenced["model"], tmp_path / "vela").model)  # not run by the host backend, but bound
    runner_json = build_runner(
        tmp_path / "runner",
        model=fenced["model"],
        policy=_policy(state="carry", warmup_invokes=1, measured_invokes=3),
        sidecar=fenced["sidecar"],
        segments=fenced["segments"],
        vela_model=vela,
    )
    document = json.loads(runner_json.read_text())
    assert document["format"] == 2 and document["backend"] == "litert"
    assert document["policy"] == {
        "state": "carry",
        "warmup_invokes": 1,
        "warmup_source": "explicit",
        "measured_invokes": 3,
        "tensor_io": None,
        "fvp_enabled": True,
    }
    assert sorted(document["files"]) == ["model.fenced_boundaries.json", "model.tflite", "segments.json"]
    assert document["inputs"]["vela_model"] == {
        "file": "model_fenced_vela.tflite",
        "sha256": sha256_bytes(vela.read_bytes()),
        "copied": False,
    }
    assert document["call_once_present"] is False
    text = runner_json.read_text()
    assert str(tmp_path) not in text

    result_json = run_runner(runner_json, tmp_path / "result")
    result = json.loads(result_json.read_text())
    samples = result["measurements"]["samples"]
    assert [s["index"] for s in samples] == [0, 1, 2]
    for sample in samples:
        # The host counts no cycle: Vela's estimate is never passed off as a sample figure.
        assert sample["cycles"] is None and sample["instructions"] is None
        assert len(sample["segment_latency_s"]) == 3 and all(t > 0 for t in sample["segment_latency_s"])
        assert sample["latency_s"] == pytest.approx(sum(sample["segment_latency_s"]), rel=1e-12)
        assert sample["energy"] is None and sample["traffic_beats"] is None
    assert [s["estimated_cycles"] for s in result["segments"]] == [100, 250, 40]
    assert result["scopes"]["latency_s"] == "host_wall_clock" and result["scopes"]["cycles"] is None
    statistics = result["measurements"]["statistics"]
    assert statistics["counters"]["cycles.total"] is None
    assert statistics["float"]["segment_latency_s.2"]["count"] == 3
    receipt = json.loads((tmp_path / "result" / "artifacts" / "acquisition.json").read_text())
    assert receipt == {
        "schema": "helx.acquisition",
        "version": 1,
        "state": "carry",
        "warmup_invokes": 1,
        "measured_invokes": 3,
        "initialization": "interpreter_allocate_and_first_invoke",
        "call_once_present": False,
    }
    # Zero inputs: the outputs equal LiteRT running the unfenced source.
    reference = run_reference(fenced["source"].read_bytes(), [np.zeros((1, 32, 32, 3), np.int8)])[0]
    assert len(reference) == 1
    assert set(samples[0]["signatures"].values()) == {sha256_bytes(reference[0].tobytes())}


def test_runner_bytes_are_deterministic(tmp_path: Path, fenced: dict[str, Path]) -> None:
    first = build_runner(tmp_path / "a", model=fenced["model"], policy=None, sidecar=fenced["sidecar"])
    second = build_runner(tmp_path / "b", model=fenced["model"], policy=None, sidecar=fenced["sidecar"])
    assert first.read_bytes() == second.read_bytes()
    policy = json.loads(first.read_text())["policy"]  # litert's default: one warmup, ten invokes (set, not automatic)
    assert (policy["warmup_source"], policy["warmup_invokes"], policy["measured_invokes"]) == ("explicit", 1, 10)


def test_sidecar_bound_to_another_model_is_refused(tmp_path: Path, fenced: dict[str, Path]) -> None:
    other = rewrite_model_with_fences(bytes(serialize(residual_network(1))), [1, 7])
    sidecar = tmp_path / "other.fenced_boundaries.json"
    sidecar.write_text(json.dumps(other.boundaries.to_json()))
    model_sha = sha256_bytes(fenced["model"].read_bytes())
    with pytest.raises(RunnerError) as caught:
        build_runner(tmp_path / "runner", model=fenced["model"], policy=None, sidecar=sidecar)
    assert other.boundaries.fenced_sha256 in caught.value.message and model_sha in caught.value.message
    assert not (tmp_path / "runner").exists()


def test_segments_json_bound_to_another_model_is_refused(tmp_path: Path, fenced: dict[str, Path]) -> None:
    document = json.loads(fenced["segments"].read_text())
    document["model_sha256"] = sha256_bytes(fenced["source"].read_bytes())  # Vela ran on the unfenced source
    bad = tmp_path / "bad_segments.json"
    bad.write_text(json.dumps(document))
    with pytest.raises(RunnerError) as caught:
        build_runner(tmp_path / "runner", model=fenced["model"], policy=None, segments=bad)
    assert document["model_sha256"] in caught.value.message
    assert sha256_bytes(fenced["model"].read_bytes()) in caught.value.message


def test_fvp_needs_vela_output_and_unknown_backends_are_refused(tmp_path: Path, fenced: dict[str, Path]) -> None:
    with pytest.raises(HeliaError, match=r"backend fvp runs Vela's compiled model .* pass both"):
        build_runner(tmp_path / "runner", model=fenced["model"], policy=None, backend="fvp")  # tests/test_fvp_*.py
    with pytest.raises(RunnerError, match="backend 'qemu' is not known"):
        build_runner(tmp_path / "runner", model=fenced["model"], policy=None, backend="qemu")


def test_other_runner_formats_are_refused(tmp_path: Path, fenced: dict[str, Path]) -> None:
    runner_json = build_runner(tmp_path / "runner", model=fenced["model"], policy=None)
    document = json.loads(runner_json.read_text())
    for found in (1, 3):
        document["format"] = found
        runner_json.write_text(json.dumps(document))
        with pytest.raises(RunnerError, match=f"runner format {found} is not supported; rebuild the runner"):
            load_runner(runner_json)
    del document["format"]
    runner_json.write_text(json.dumps(document))
    with pytest.raises(RunnerError, match="format: missing"):
        load_runner(runner_json)


def test_changed_runner_file_is_refused(tmp_path: Path, fenced: dict[str, Path]) -> None:
    runner_json = build_runner(tmp_path / "runner", model=fenced["model"], policy=None)
    assert load_runner(tmp_path / "runner").sha256 == sha256_bytes(runner_json.read_bytes())
    model = tmp_path / "runner" / "model.tflite"
    model.write_bytes(model.read_bytes() + b"\0")
    with pytest.raises(RunnerError, match=r"model.tflite: sha256 is [0-9a-f]{64}, but runner.json records"):
        load_runner(runner_json)


def test_tensor_io_bytes_are_copied_and_used(tmp_path: Path) -> None:
    source = tmp_path / "chain.tflite"
    source.write_bytes(bytes(serialize(chain_network(0))))
    from heliabuild.runner.litert import LiteRTInstance

    info = LiteRTInstance(source).input_infos()[0]
    data = np.random.default_rng(3).integers(-128, 128, size=info.shape).astype(np.int8)
    (tmp_path / "in0.bin").write_bytes(data.tobytes())
    policy = tmp_path / "policy.yaml"
    policy.write_text("defaults:\n  fvp:\n    tensor_io:\n      inputs:\n        - {index: 0, file: in0.bin}\n")
    runner_json = build_runner(tmp_path / "runner", model=source, policy=policy)
    document = json.loads(runner_json.read_text())
    assert document["policy"]["tensor_io"]["inputs"][0]["file"] == "inputs/input_0.bin"
    result = measure(load_runner(runner_json))
    reference = run_reference(source.read_bytes(), [data])[0]
    assert result.samples[0].outputs[0][1] == reference[0].tobytes()
    assert result.samples[0].figures.cycles is None and result.scopes.cycles is None

    (tmp_path / "in0.bin").write_bytes(data.tobytes()[:-1])
    with pytest.raises(PolicyError, match=r"in0.bin holds \d+ bytes, but input 0 .* takes exactly"):
        build_runner(tmp_path / "runner2", model=source, policy=policy)


@pytest.fixture
def counter_file(tmp_path: Path) -> Path:
    path = tmp_path / "counter.tflite"
    path.write_bytes(bytes(serialize(counter_model(0))))
    return path


def _counter_values(result) -> list[np.ndarray]:
    return [np.frombuffer(sample.outputs[0][1], np.float32) for sample in result.samples]


def test_carry_keeps_resource_variable_state(tmp_path: Path, counter_file: Path) -> None:
    runner_json = build_runner(tmp_path / "runner", model=counter_file, policy=_policy(measured_invokes=4))
    document = json.loads(runner_json.read_text())
    assert document["call_once_present"] is True
    assert document["policy"]["warmup_invokes"] == 1 and document["policy"]["warmup_source"] == "automatic"
    result = measure(load_runner(runner_json))
    values = _counter_values(result)
    # One automatic warmup ran first: the counter reads 2, 3, 4, 5 in the measured samples.
    reference = run_reference(counter_file.read_bytes(), [np.zeros((1, 4), np.float32)], invokes=5)
    for got, want in zip(values, reference[1:], strict=True):
        assert got.tobytes() == want[0].tobytes()
    steps = [values[i + 1] - values[i] for i in range(3)]
    assert all(np.array_equal(step, np.ones(4, np.float32)) for step in steps)
    assert result.call_once_present is True and result.warmup_invokes == 1


def test_explicit_zero_warmup_measures_the_first_invoke(tmp_path: Path, counter_file: Path) -> None:
    runner_json = build_runner(
        tmp_path / "runner", model=counter_file, policy=_policy(warmup_invokes=0, measured_invokes=2)
    )
    result = measure(load_runner(runner_json))
    reference = run_reference(counter_file.read_bytes(), [np.zeros((1, 4), np.float32)], invokes=2)
    assert [v.tobytes() for v in _counter_values(result)] == [r[0].tobytes() for r in reference]
    assert result.warmup_invokes == 0


def test_single_is_one_invoke_without_warmup(tmp_path: Path, counter_file: Path) -> None:
    runner_json = build_runner(tmp_path / "runner", model=counter_file, policy=_policy(state="single"))
    assert json.loads(runner_json.read_text())["policy"]["warmup_invokes"] == 0
    result_json = run_runner(runner_json, tmp_path / "result")
    receipt = json.loads((result_json.parent / "artifacts" / "acquisition.json").read_text())
    assert (receipt["state"], receipt["warmup_invokes"], receipt["measured_invokes"]) == ("single", 0, 1)
    assert receipt["call_once_present"] is True
    with pytest.raises(PolicyError, match="state single"):
        build_runner(tmp_path / "runner2", model=counter_file, policy=_policy(state="single", warmup_invokes=1))


def test_single_with_warmups_in_a_runner_is_refused(tmp_path: Path, counter_file: Path) -> None:
    runner_json = build_runner(tmp_path / "runner", model=counter_file, policy=_policy(state="single"))
    document = json.loads(runner_json.read_text())
    document["policy"]["warmup_invokes"] = 1
    runner_json.write_text(json.dumps(document))
    with pytest.raises(RunnerError, match="single is one invoke without warmup"):
        measure(load_runner(runner_json))


def test_automatic_warmup_is_zero_without_call_once(tmp_path: Path) -> None:
    source = tmp_path / "chain.tflite"
    source.write_bytes(bytes(serialize(chain_network(0))))
    runner_json = build_runner(tmp_path / "runner", model=source, policy=_policy(measured_invokes=2))
    document = json.loads(runner_json.read_text())
    assert document["policy"]["warmup_invokes"] == 0 and document["call_once_present"] is False
    result_json = run_runner(runner_json, tmp_path / "result")
    receipt = json.loads((result_json.parent / "artifacts" / "acquisition.json").read_text())
    assert receipt["warmup_invokes"] == 0 and receipt["call_once_present"] is False


def test_resource_crossing_a_fence_is_refused_at_build(tmp_path: Path) -> None:
    from test_runner_segments import _fence_by_hand, _tensor

    model = counter_model(0)
    path = tmp_path / "bad_fenced.tflite"
    path.write_bytes(_fence_by_hand(model, 3, [_tensor(model, "count_next")]))
    with pytest.raises(RunnerError, match="resource tensor crossing a fence"):
        build_runner(tmp_path / "runner", model=path, policy=None)
    assert not (tmp_path / "runner").exists()


def test_disabled_execution_writes_a_build_only_result(tmp_path: Path, fenced: dict[str, Path]) -> None:
    runner_json = build_runner(
        tmp_path / "runner",
        model=fenced["model"],
        policy={"defaults": {"fvp": {"enabled": False}}},
        segments=fenced["segments"],
    )
    result_json = run_runner(runner_json, tmp_path / "result")
    result = json.loads(result_json.read_text())
    assert result["stage"] == "build_only" and result["measurements"] is None
    assert [s["estimated_cycles"] for s in result["segments"]] == [100, 250, 40]
    assert not (tmp_path / "result" / "artifacts" / "acquisition.json").exists()


def test_a_verification_policy_compares_host_outputs_with_the_reference_kernels(tmp_path: Path) -> None:
    source = tmp_path / "chain.tflite"
    source.write_bytes(bytes(serialize(chain_network(0))))
    policy = {"defaults": {"fvp": {"acquisition": {"measured_invokes": 2}, "verification": {"reference": "litert"}}}}
    runner_json = build_runner(tmp_path / "runner", model=source, policy=policy)
    result = json.loads(run_runner(runner_json, tmp_path / "result").read_text())
    for sample in result["measurements"]["samples"]:  # the chain's one output agrees exactly with the reference
        (check,) = sample["verification"]
        assert (check["position"], check["name"], check["elements"]) == (0, "softmax/Softmax", 12)
        assert check["differing_elements"] == 0 and check["max_abs_diff"] == 0
    strict = {"defaults": {"fvp": {"verification": {"reference": "litert", "max_abs_diff": -1}}}}
    with pytest.raises(PolicyError, match="verification"):
        build_runner(tmp_path / "strict", model=source, policy=strict)


def test_a_runner_replaces_only_an_earlier_runner(tmp_path: Path) -> None:
    from helpers.trees import snapshot

    source = tmp_path / "chain.tflite"
    source.write_bytes(bytes(serialize(chain_network(0))))
    user = tmp_path / "mine"
    user.mkdir()
    (user / "model.tflite").write_bytes(b"my own notes")
    before = snapshot(tmp_path)
    with pytest.raises(RunnerError, match=r"the folder is not empty and holds no runner\.json"):
        build_runner(user, model=source, policy=None)
    assert snapshot(tmp_path) == before

    info_bytes = 49 * 10  # the chain's input: 1x49x10x1 int8
    (tmp_path / "in0.bin").write_bytes(bytes(info_bytes))
    policy = tmp_path / "policy.yaml"
    policy.write_text("defaults:\n  fvp:\n    tensor_io:\n      inputs:\n        - {index: 0, file: in0.bin}\n")
    runner_json = build_runner(tmp_path / "runner", model=source, policy=policy)
    assert (runner_json.parent / "inputs" / "input_0.bin").is_file()
    build_runner(tmp_path / "runner", model=source, policy=None)  # an earlier runner: replaced, its stale input gone
    assert not (runner_json.parent / "inputs" / "input_0.bin").exists()
    load_runner(runner_json)

    (runner_json.parent / "model.tflite").write_bytes(b"tampered")
    with pytest.raises(RunnerError, match="is not a runner that verifies"):
        build_runner(tmp_path / "runner", model=source, policy=None)


def test_a_policy_whose_bundle_the_reader_would_refuse_is_refused_at_the_runner_build(tmp_path: Path) -> None:
    from heliabuild.results.reader import MAX_BUNDLE_ENTRIES
    from heliabuild.runner.policy import MAX_MEASURED_INVOKES

    source = tmp_path / "chain.tflite"
    source.write_bytes(bytes(serialize(chain_network(0))))
    assert MAX_MEASURED_INVOKES * 2 + 16 <= MAX_BUNDLE_ENTRIES  # a one-output model always fits
    policy = {"defaults": {"fvp": {"acquisition": {"measured_invokes": MAX_MEASURED_INVOKES}}}}
    build_runner(tmp_path / "runner", model=source, policy=policy)
    from heliabuild.runner import freeze

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("heliabuild.results.reader.MAX_BUNDLE_ENTRIES", 1000)
        with pytest.raises(PolicyError, match=r"make a bundle of 20016 files and folders, more than the 1000"):
            freeze.build_runner(tmp_path / "other", model=source, policy=policy)
    assert not (tmp_path / "other").exists()
