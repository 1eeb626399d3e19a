"""Result bundles written from hand-made samples: round trip, tamper rejection, atomic publication."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from heliabuild.errors import ReceiptError, ResultError, SchemaError
from heliabuild.files import json_text, sha256_file
from heliabuild.results.bundle import Sample, output_files, sanitize_output_name, signatures_of, write_bundle
from heliabuild.results.reader import load_result, verify_bundle
from heliabuild.results.receipt import Receipt

SHA_A = "a" * 64
SHA_B = "b" * 64


FVP_SCOPES = {"cycles": "npu_callbacks", "traffic_beats": "npu_callbacks"}
HOST_SCOPES = {"latency_s": "host_wall_clock", "segment_latency_s": "host_wall_clock"}


def make_samples(
    count: int = 3, *, segments: int = 2, backend: str = "fvp"
) -> tuple[list[Sample], list[list[tuple[str, bytes]]]]:
    """Samples as `backend` measures them (heliabuild.results.scopes): NPU cycles and beats on fvp, host time on
    litert."""
    samples, outputs = [], []
    for i in range(count):
        out = [("Identity:0", bytes([i, 1, 2, 3])), ("logits/out", bytes([9 - i] * 5))]
        per_segment = [100 + 10 * k for k in range(segments)]
        figures: dict[str, Any] = (
            {"cycles": {"total": sum(per_segment), "segments": per_segment}, "traffic_beats": 4000 + i}
            if backend == "fvp"
            else {"latency_s": 0.001 * (i + 1) + 1e-7, "segment_latency_s": [0.0005 * (i + 1)] * segments}
        )
        samples.append(Sample(index=i, sanity={"outputs_finite": True}, signatures=signatures_of(out), **figures))
        outputs.append(out)
    return samples, outputs


def make_bundle(
    target: Path,
    *,
    count: int = 3,
    warmups: int = 1,
    receipt: Receipt | str | None = "default",
    samples: list[Sample] | None = None,
    outputs: list[list[tuple[str, bytes]]] | None = None,
    backend: str = "fvp",
    **overrides: Any,
) -> Path:
    """A verified bundle of `count` samples of `backend` (fvp: runtime tflm, NPU cycles and beats; litert: host
    time), each figure with its scope."""
    made_samples, made_outputs = make_samples(count, backend=backend)
    arguments: dict[str, Any] = {
        "runner_info": {"sha256": SHA_A, "format": 2},
        "run_identity": {
            "runner_sha256": SHA_A,
            "model_sha256": SHA_B,
            "backend": backend,
            "policy": {"state": "carry", "warmup_invokes": warmups, "measured_invokes": count},
        },
        "runtime": "tflm" if backend == "fvp" else backend,
        "scopes": FVP_SCOPES if backend == "fvp" else HOST_SCOPES,
        "receipt": receipt
        if receipt != "default"
        else Receipt(
            state="carry",
            warmup_invokes=warmups,
            measured_invokes=count,
            initialization="interpreter_allocate_and_first_invoke",
            call_once_present=warmups > 0,
        ),
        "samples": made_samples if samples is None else samples,
        "output_bytes": made_outputs if outputs is None else outputs,
        "segments": [
            {"index": 0, "op_range_start": 0, "op_range_end": 3, "estimated_cycles": 100},
            {"index": 1, "op_range_start": 4, "op_range_end": 7, "estimated_cycles": 110},
        ],
        "provider_versions": {"ai-edge-litert": "1.2.0", "heliabuild": "0.1.0"},
        "created_at": "2026-01-01T00:00:00Z",
    }
    arguments.update(overrides)
    return write_bundle(target, **arguments)


def reseal(bundle: Path) -> None:
    """Rewrite the manifest over the bundle's current files, so only the semantic checks can catch a tamper."""
    files = sorted(p for p in bundle.rglob("*") if p.is_file() and p.name != "manifest.json")
    manifest = {"files": {p.relative_to(bundle).as_posix(): sha256_file(p) for p in files}}
    (bundle / "manifest.json").write_text(json_text(manifest))


def edit_json(path: Path, change: Any) -> None:
    document = json.loads(path.read_text())
    change(document)
    path.write_text(json_text(document))


@pytest.fixture
def bundle(tmp_path: Path) -> Path:
    return make_bundle(tmp_path / "results" / "run").parent


def test_round_trip(bundle: Path) -> None:
    assert sorted(p.relative_to(bundle).as_posix() for p in bundle.rglob("*") if p.is_file()) == [
        "artifacts/acquisition.json",
        "artifacts/samples/0/Identity_0.bin",
        "artifacts/samples/0/logits_out.bin",
        "artifacts/samples/1/Identity_0.bin",
        "artifacts/samples/1/logits_out.bin",
        "artifacts/samples/2/Identity_0.bin",
        "artifacts/samples/2/logits_out.bin",
        "manifest.json",
        "result.json",
        "run_summary.csv",
    ]
    result = load_result(bundle)
    samples, outputs = make_samples(3)
    assert list(result.samples) == samples
    assert result.receipt is not None and result.receipt.measured_invokes == 3
    assert (bundle / "artifacts/samples/1/Identity_0.bin").read_bytes() == outputs[1][0][1]
    document = json.loads((bundle / "result.json").read_text())
    assert document["schema_version"] == 4 and document["stage"] == "executed" and document["runtime"] == "tflm"
    assert "manifest.json" not in json.loads((bundle / "manifest.json").read_text())["files"]
    assert load_result(bundle / "result.json").samples == result.samples
    assert not [p for p in bundle.parent.iterdir() if p.name.startswith(".")]


def test_bundle_bytes_are_deterministic(tmp_path: Path) -> None:
    make_bundle(tmp_path / "a")
    make_bundle(tmp_path / "b")
    for path in (tmp_path / "a").rglob("*"):
        if path.is_file():
            assert path.read_bytes() == (tmp_path / "b" / path.relative_to(tmp_path / "a")).read_bytes()


def test_run_summary_has_one_indexed_row_per_sample(bundle: Path) -> None:
    lines = (bundle / "run_summary.csv").read_text().splitlines()
    assert lines[0] == (
        "index,cycles_total,latency_s,energy,cycles_segment_0,cycles_segment_1,"
        "instructions_total,instructions_segment_0,instructions_segment_1,segment_latency_s_0,segment_latency_s_1,"
        "traffic_beats_total,traffic_beats_segment_0,traffic_beats_segment_1"
    )
    assert [line.split(",")[0] for line in lines[1:]] == ["0", "1", "2"]
    assert lines[1] == "0,210,,,100,110,,,,,,4000,,"


def test_rewrite_replaces_the_earlier_bundle(tmp_path: Path) -> None:
    target = tmp_path / "run"
    make_bundle(target, count=3)
    make_bundle(target, count=1, warmups=0)
    assert len(load_result(target).samples) == 1
    assert not (target / "artifacts/samples/2").exists()
    # the earlier bundle is kept beside it, verified, as the base of `compare`
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run", "run.previous"]
    assert len(load_result(tmp_path / "run.previous").samples) == 3


def test_rewrite_refuses_an_earlier_bundle_holding_a_foreign_file(tmp_path: Path) -> None:
    target = tmp_path / "run"
    make_bundle(target, count=3)
    (target / "stale.txt").write_text("mine")
    with pytest.raises(ResultError, match=r"not a result bundle that verifies .*stale\.txt"):
        make_bundle(target, count=1, warmups=0)
    assert (target / "stale.txt").read_text() == "mine"
    assert (target / "artifacts/samples/2").is_dir()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run"]


def test_failing_write_publishes_nothing(tmp_path: Path) -> None:
    target = tmp_path / "run"
    bad = Receipt("carry", 1, 4, "interpreter_allocate_and_first_invoke", True)
    with pytest.raises(ReceiptError, match="4 measured invokes but the result holds 3 samples"):
        make_bundle(target, receipt=bad)
    assert list(tmp_path.iterdir()) == []


def test_failing_write_keeps_the_earlier_bundle(tmp_path: Path) -> None:
    target = tmp_path / "run"
    make_bundle(target)
    before = {p: p.read_bytes() for p in target.rglob("*") if p.is_file()}
    samples, outputs = make_samples(3)
    samples[1] = Sample(**{**samples[1].__dict__, "signatures": {"Identity:0": SHA_A, "logits/out": SHA_A}})
    with pytest.raises(ResultError, match=r"samples\[1\]\.signatures"):
        make_bundle(target, samples=samples, outputs=outputs)
    assert {p: p.read_bytes() for p in target.rglob("*") if p.is_file()} == before
    assert [p.name for p in tmp_path.iterdir()] == ["run"]


def test_failing_schema_validation_publishes_nothing(tmp_path: Path) -> None:
    with pytest.raises(SchemaError, match="run_identity"):
        make_bundle(
            tmp_path / "run",
            run_identity={"runner_sha256": "nope", "model_sha256": SHA_B, "backend": "fvp", "policy": {}},
        )
    assert list(tmp_path.iterdir()) == []


def test_failure_during_verification_leaves_no_temporary_folder(tmp_path: Path, monkeypatch) -> None:
    import heliabuild.results.reader as reader

    def broken(path: Path) -> None:
        assert path.name.startswith(".run.") and path.is_dir()
        raise ResultError("verification failed")

    monkeypatch.setattr(reader, "verify_bundle", broken)
    with pytest.raises(ResultError, match="verification failed"):
        make_bundle(tmp_path / "run")
    assert list(tmp_path.iterdir()) == []


def test_sample_out_of_order_is_refused(tmp_path: Path) -> None:
    samples, outputs = make_samples(2)
    with pytest.raises(ResultError, match=r"samples\[0\]\.index: found 1"):
        make_bundle(tmp_path / "run", count=2, samples=samples[::-1], outputs=outputs[::-1])


def test_output_names_are_sanitized_and_kept_apart() -> None:
    assert sanitize_output_name("../x y:0") == "_x_y_0"
    assert sanitize_output_name("...") == "output"
    assert output_files(["a:0", "a/0"]) == {"a/0": "a_0.bin", "a:0": "a_0-1.bin"}


def test_unexecuted_result_has_no_receipt_and_no_measurements(tmp_path: Path) -> None:
    make_bundle(tmp_path / "run", stage="build_only", receipt=None, samples=[], outputs=[])
    result = load_result(tmp_path / "run")
    assert result.receipt is None and result.samples == () and result.statistics is None
    assert not (tmp_path / "run" / "artifacts" / "acquisition.json").exists()


# --- tampering -------------------------------------------------------------------------------------------


def test_changed_artifact_byte_is_rejected(bundle: Path) -> None:
    path = bundle / "artifacts/samples/1/logits_out.bin"
    data = bytearray(path.read_bytes())
    data[0] ^= 1
    path.write_bytes(bytes(data))
    with pytest.raises(ResultError, match=r"artifacts/samples/1/logits_out\.bin: sha256 .* does not match manifest"):
        load_result(bundle)
    reseal(bundle)
    with pytest.raises(ResultError, match=r"samples\[1\]\.signatures\['logits/out'\]: does not match the bytes"):
        load_result(bundle)


def test_changed_receipt_count_is_rejected(bundle: Path) -> None:
    edit_json(bundle / "artifacts/acquisition.json", lambda d: d.update(measured_invokes=4))
    with pytest.raises(ResultError, match=r"artifacts/acquisition\.json: sha256"):
        load_result(bundle)
    reseal(bundle)
    with pytest.raises(
        ReceiptError, match="measured_invokes: receipt states 4 measured invokes but the result holds 3"
    ):
        load_result(bundle)


def test_changed_statistic_is_rejected(bundle: Path) -> None:
    def change(document: dict[str, Any]) -> None:
        document["measurements"]["statistics"]["counters"]["cycles.total"]["mean"]["numerator"] = 211

    edit_json(bundle / "result.json", change)
    with pytest.raises(ResultError, match=r"result\.json: sha256"):
        load_result(bundle)
    reseal(bundle)
    with pytest.raises(ResultError, match=r"statistics\.counters\['cycles\.total'\]: found"):
        load_result(bundle)


def test_changed_float_statistic_is_rejected(tmp_path: Path) -> None:
    bundle = make_bundle(tmp_path / "run", backend="litert").parent
    edit_json(bundle / "result.json", lambda d: d["measurements"]["statistics"]["float"]["latency_s"].update(max=1.0))
    reseal(bundle)
    with pytest.raises(ResultError, match=r"statistics\.float\['latency_s'\]"):
        load_result(bundle)


def test_missing_sample_is_rejected(bundle: Path) -> None:
    edit_json(bundle / "result.json", lambda d: d["measurements"]["samples"].pop())
    reseal(bundle)
    with pytest.raises(ReceiptError, match="3 measured invokes but the result holds 2 samples"):
        load_result(bundle)


def test_missing_sample_file_is_rejected(bundle: Path) -> None:
    shutil.rmtree(bundle / "artifacts/samples/2")
    with pytest.raises(ResultError, match=r"artifacts/samples/2/Identity_0\.bin is listed but missing"):
        load_result(bundle)
    reseal(bundle)
    with pytest.raises(ResultError, match=r"samples\[2\]\.signatures\['Identity:0'\]: output file .* is missing"):
        load_result(bundle)


def test_extra_unlisted_file_is_rejected(bundle: Path) -> None:
    (bundle / "artifacts/notes.txt").write_text("hello")
    with pytest.raises(ResultError, match=r"artifacts/notes\.txt is in the bundle but not listed"):
        load_result(bundle)


def test_extra_listed_output_file_is_rejected(bundle: Path) -> None:
    (bundle / "artifacts/samples/0/extra.bin").write_bytes(b"x")
    reseal(bundle)
    with pytest.raises(ResultError, match=r"artifacts/samples/0/extra\.bin: an output file no sample's signatures"):
        load_result(bundle)


def test_missing_receipt_is_rejected(bundle: Path) -> None:
    (bundle / "artifacts/acquisition.json").unlink()
    with pytest.raises(ReceiptError, match=r"artifacts/acquisition\.json: missing acquisition receipt"):
        load_result(bundle)
    reseal(bundle)
    with pytest.raises(ReceiptError, match="missing acquisition receipt"):
        load_result(bundle)


def test_duplicate_receipt_file_is_rejected(bundle: Path) -> None:
    shutil.copy(bundle / "artifacts/acquisition.json", bundle / "artifacts/acquisition-2.json")
    with pytest.raises(ResultError, match=r"acquisition-2\.json is in the bundle but not listed"):
        load_result(bundle)
    reseal(bundle)
    with pytest.raises(ReceiptError, match=r"artifacts/acquisition-2\.json: duplicate acquisition receipt"):
        load_result(bundle)


def test_receipt_hidden_under_another_name_is_a_duplicate(bundle: Path) -> None:
    shutil.copy(bundle / "artifacts/acquisition.json", bundle / "artifacts/samples/0/meta.json")
    reseal(bundle)
    with pytest.raises(ReceiptError, match=r"samples/0/meta\.json: duplicate acquisition receipt"):
        load_result(bundle)


def test_duplicate_receipt_entries_are_rejected(bundle: Path) -> None:
    receipt = json.loads((bundle / "artifacts/acquisition.json").read_text())
    (bundle / "artifacts/acquisition.json").write_text(json_text([receipt, receipt]))
    reseal(bundle)
    with pytest.raises(ReceiptError, match="duplicate acquisition receipt: found 2 entries"):
        load_result(bundle)


def test_receipt_version_2_is_rejected(bundle: Path) -> None:
    edit_json(bundle / "artifacts/acquisition.json", lambda d: d.update(version=2))
    reseal(bundle)
    with pytest.raises(ReceiptError, match="version: receipt protocol version 2 is not supported"):
        load_result(bundle)


def test_receipt_of_another_schema_is_rejected(bundle: Path) -> None:
    edit_json(bundle / "artifacts/acquisition.json", lambda d: d.update(schema="hpx.acquisition"))
    reseal(bundle)
    with pytest.raises(ReceiptError, match=r"unsupported receipt schema 'hpx\.acquisition'"):
        load_result(bundle)


def test_receipt_contradicting_the_runtime_is_rejected(bundle: Path) -> None:
    edit_json(
        bundle / "artifacts/acquisition.json",
        lambda d: d.update(initialization="before_measurement", call_once_present=None),
    )
    reseal(bundle)
    with pytest.raises(ReceiptError, match="runtime tflm initializes as interpreter_allocate_and_first_invoke"):
        load_result(bundle)


def test_result_schema_3_is_rejected(bundle: Path) -> None:
    edit_json(bundle / "result.json", lambda d: d.update(schema_version=3))
    reseal(bundle)
    with pytest.raises(ResultError, match="result schema 3 is not supported; create a new capture"):
        load_result(bundle)


def test_changed_run_summary_is_rejected(bundle: Path) -> None:
    path = bundle / "run_summary.csv"
    path.write_text(path.read_text().replace("0,210,", "0,999,"))
    reseal(bundle)
    with pytest.raises(ResultError, match=r"run_summary\.csv: does not match"):
        load_result(bundle)


def test_tampered_schema_field_names_it(bundle: Path) -> None:
    edit_json(bundle / "result.json", lambda d: d["measurements"]["samples"][0].update(latency_s="fast"))
    reseal(bundle)
    with pytest.raises(ResultError, match=r"result\.json: measurements"):
        load_result(bundle)


KNOWN_VALID = frozenset({"result.json", "manifest.json"})
"""What SCons's integrity check passes to verify_bundle for a bundle whose two files are as the run stage wrote them."""


def test_known_valid_files_skip_only_the_schema_check(bundle: Path) -> None:
    """The integrity check of a no-op build names result.json and manifest.json as known valid (their bytes are
    the ones SCons stored): the bundle reads back the same, and every check but the schema's still runs."""
    assert verify_bundle(bundle, known_valid=KNOWN_VALID) == load_result(bundle)
    path = bundle / "artifacts/samples/1/logits_out.bin"
    data = bytearray(path.read_bytes())
    data[0] ^= 1
    path.write_bytes(bytes(data))
    with pytest.raises(ResultError, match=r"artifacts/samples/1/logits_out\.bin: sha256 .* does not match manifest"):
        verify_bundle(bundle, known_valid=KNOWN_VALID)
    reseal(bundle)
    with pytest.raises(ResultError, match=r"samples\[1\]\.signatures\['logits/out'\]: does not match the bytes"):
        verify_bundle(bundle, known_valid=KNOWN_VALID)


def test_a_file_not_known_valid_is_still_validated(bundle: Path) -> None:
    edit_json(bundle / "result.json", lambda d: d["measurements"]["samples"][0].update(latency_s="fast"))
    reseal(bundle)
    with pytest.raises(ResultError, match=r"result\.json: measurements"):
        verify_bundle(bundle, known_valid=frozenset({"manifest.json"}))


def test_not_a_bundle(tmp_path: Path) -> None:
    with pytest.raises(ResultError, match="not a result bundle folder"):
        load_result(tmp_path / "absent")
    (tmp_path / "empty").mkdir()
    with pytest.raises(ResultError, match=r"result\.json is missing"):
        load_result(tmp_path / "empty")
