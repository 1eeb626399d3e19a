"""A stage that fails leaves no stale-but-plausible output of an earlier run behind, and removes only what is
recognisably an earlier output of its own: a file of the user's at an output name survives byte for byte."""

from __future__ import annotations

from pathlib import Path

from heliabuild.model import save_model
from heliabuild.synth import synthesize


def _model(tmp_path: Path) -> Path:
    path = tmp_path / "chain.tflite"
    save_model(synthesize("chain", seed=0), path)
    return path


def test_a_failed_aot_plan_removes_an_earlier_plan_but_not_a_users_file(cli, tmp_path: Path) -> None:
    model = _model(tmp_path)
    assert cli("aot-plan", model, "--prefix", "net", "--platform", "mps3_an547", "-o", tmp_path / "out").code == 0
    report = tmp_path / "out" / "net_report.json"
    report.write_text("my own notes, not a report\n")
    failed = cli("aot-plan", model, "--prefix", "net", "--platform", "no_such_board", "-o", tmp_path / "out")
    assert failed.code == 2
    assert not (tmp_path / "out" / "net_plan.json").exists()  # the earlier plan: recognisably ours, removed
    assert report.read_text() == "my own notes, not a report\n"  # the user's file at the report's name


def test_a_failed_vela_removes_an_earlier_compile_but_not_a_users_file(cli, tmp_path: Path) -> None:
    model = _model(tmp_path)
    out = tmp_path / "out"
    assert cli("vela", model, "-o", out).code == 0
    outputs = sorted(path.name for path in out.iterdir() if path.is_file())
    assert cli("vela", model, "-o", out, "--", "--cpu-tensor-alignment", "3").code == 2
    assert sorted(path.name for path in out.iterdir() if path.is_file()) == []  # all four were ours
    assert len(outputs) == 4

    (out / "chain_segments.json").write_text("{}\n")  # not an earlier compile: the user's files, kept
    (out / "chain_vela.tflite").write_bytes(b"mine")
    assert cli("vela", model, "-o", out, "--", "--cpu-tensor-alignment", "3").code == 2
    assert (out / "chain_segments.json").read_text() == "{}\n" and (out / "chain_vela.tflite").read_bytes() == b"mine"
