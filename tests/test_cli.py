"""The `heliabuild` command: exit 0 on success; bad input exits 2 with one line and writes nothing."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.checks import assert_not_written, assert_one_line_error
from helpers.skips import require
from helpers.tflite import fence_positions

from heliabuild.fence import FencePlan, rewrite_model_with_fences, sidecar_path_for
from heliabuild.files import json_text
from heliabuild.model import load_model, model_sha256, serialize
from heliabuild.synth import KINDS, synthesize


@pytest.fixture
def model_file(tmp_path: Path) -> Path:
    path = tmp_path / "in" / "chain.tflite"
    path.parent.mkdir()
    path.write_bytes(bytes(serialize(synthesize("chain", 0))))
    return path


def outputs(tmp_path: Path) -> tuple[Path, Path]:
    out = tmp_path / "out" / "fenced.tflite"
    return out, sidecar_path_for(out)


# ---------------------------------------------------------------- success


def test_fence_with_after_ops(cli, tmp_path: Path, residual_file: Path) -> None:
    out, sidecar = outputs(tmp_path)
    result = cli("fence", residual_file, "-o", out, "--after-ops", "7,3")
    assert result.code == 0, result.err
    assert result.err == ""
    assert result.out.splitlines() == [f"heliabuild: fence {out}: 3 segments, sidecar {sidecar}"]
    assert out.read_bytes() == bytes(rewrite_model_with_fences(residual_file, [3, 7]).fenced_bytes)
    document = json.loads(sidecar.read_text(encoding="utf-8"))
    assert document["boundary_after_ops"] == [3, 7]
    assert document["source_model"] == residual_file.name
    assert fence_positions(load_model(out)) == [4, 9]


def test_fence_with_plan(cli, tmp_path: Path, model_file: Path) -> None:
    plan = FencePlan.from_json(
        {
            "contract_version": 1,
            "model_sha256": model_sha256(model_file),
            "subgraph": 0,
            "operator_count": 9,
            "fences": [{"after_op": 2}, {"after_op": 3, "opcode": "DEPTHWISE_CONV_2D"}],
        }
    )
    plan_path = tmp_path / "plan.json"
    plan_path.write_text(json_text(plan.to_json()), encoding="utf-8")
    out, sidecar = outputs(tmp_path)
    result = cli("fence", model_file, "-o", out, "--plan", plan_path)
    assert result.code == 0, result.err
    assert json.loads(sidecar.read_text(encoding="utf-8"))["boundary_after_ops"] == [2, 3]


def test_verify_fenced_accepts_a_good_model(cli, tmp_path: Path, model_file: Path) -> None:
    out, sidecar = outputs(tmp_path)
    assert cli("fence", model_file, "-o", out, "--after-ops", "1,4").code == 0
    for extra in ([], ["--sidecar", sidecar], ["--sidecar", sidecar, "--source", model_file]):
        result = cli("verify-fenced", out, *extra)
        assert result.code == 0, result.err
        assert result.err == ""
        assert result.out.startswith("heliabuild: ")
        assert "contract version 1" in result.out


def test_verify_fenced_lists_violations(cli, tmp_path: Path, model_file: Path, residual_file: Path) -> None:
    out, sidecar = outputs(tmp_path)
    assert cli("fence", model_file, "-o", out, "--after-ops", "1,4").code == 0
    document = json.loads(sidecar.read_text(encoding="utf-8"))
    document["boundary_after_ops"] = [1, 5]
    document["fenced_sha256"] = "0" * 64
    sidecar.write_text(json_text(document), encoding="utf-8")
    before = sorted(p.name for p in out.parent.iterdir())
    result = cli("verify-fenced", out, "--sidecar", sidecar, "--source", residual_file)
    assert result.code == 2
    assert "Traceback" not in result.err
    lines = result.err.splitlines()
    assert lines[0].startswith(f"heliabuild: error: {out} breaks the fence contract in ")
    count = int(lines[0].split(" in ")[1].split()[0])
    assert count == len(lines) - 1 >= 3
    assert all(line.startswith("  ") for line in lines[1:])
    assert any("fenced_sha256" in line for line in lines[1:])
    assert any("source_sha256" in line for line in lines[1:])
    assert sorted(p.name for p in out.parent.iterdir()) == before


def test_unfence(cli, tmp_path: Path, residual_file: Path) -> None:
    out, _ = outputs(tmp_path)
    assert cli("fence", residual_file, "-o", out, "--after-ops", "2,9").code == 0
    restored = tmp_path / "restored.tflite"
    result = cli("unfence", out, "-o", restored)
    assert result.code == 0, result.err
    assert result.out.splitlines() == [f"heliabuild: unfence {restored}"]
    assert restored.read_bytes() == bytes(serialize(load_model(residual_file)))


@pytest.mark.parametrize(("kind", "seed"), [("chain", 3), ("residual", 0), ("random", 7), ("div_f16", 0)])
def test_synth(cli, tmp_path: Path, kind: str, seed: int) -> None:
    out = tmp_path / f"{kind}.tflite"
    result = cli("synth", kind, "-o", out, "--seed", seed)
    assert result.code == 0, result.err
    assert result.out.splitlines() == [f"heliabuild: synth {out}"]
    assert out.read_bytes() == bytes(serialize(synthesize(kind, seed)))
    again = tmp_path / "again.tflite"
    assert cli("synth", kind, "-o", again, "--seed", seed).code == 0
    assert again.read_bytes() == out.read_bytes()


def test_version(cli) -> None:
    result = cli("--version")
    assert result.code == 0
    assert result.out.startswith("heliabuild ")


# ---------------------------------------------------------------- bad input


def test_fence_missing_model(cli, tmp_path: Path) -> None:
    out, sidecar = outputs(tmp_path)
    missing = tmp_path / "missing.tflite"
    assert_one_line_error(cli("fence", missing, "-o", out, "--after-ops", "1"), str(missing))
    assert_not_written(out, sidecar)
    assert not out.parent.exists()


@pytest.mark.parametrize(
    "data",
    [b"", b"1234567", b"\x10\x00\x00\x00NOPE" + bytes(40), None],
    ids=["empty", "seven-bytes", "identifier", "truncated"],
)
def test_corrupt_model(cli, tmp_path: Path, model_file: Path, data: bytes | None) -> None:
    bad = tmp_path / "bad.tflite"
    bad.write_bytes(model_file.read_bytes()[:1000] if data is None else data)
    out, sidecar = outputs(tmp_path)
    assert_one_line_error(cli("fence", bad, "-o", out, "--after-ops", "1"), str(bad))
    assert_not_written(out, sidecar)
    assert_one_line_error(cli("unfence", bad, "-o", out), str(bad))
    assert_not_written(out)
    assert_one_line_error(cli("verify-fenced", bad), str(bad))


@pytest.mark.parametrize(
    ("after_ops", "fragment"),
    [
        ("3,x", "'3,x' is not a comma-separated list"),
        ("a", "--after-ops"),
        ("1.5", "--after-ops"),
        ("99", "out of range"),
        ("8", "out of range"),
        ("-1", "out of range"),
        ("3,3", "twice"),
        ("", "no operator index given"),
        (",", "no operator index given"),
    ],
)
def test_bad_after_ops(cli, tmp_path: Path, model_file: Path, after_ops: str, fragment: str) -> None:
    out, sidecar = outputs(tmp_path)
    assert_one_line_error(cli("fence", model_file, "-o", out, f"--after-ops={after_ops}"), fragment)
    assert_not_written(out, sidecar)


def test_after_ops_and_plan_together(cli, tmp_path: Path, model_file: Path) -> None:
    plan = tmp_path / "plan.json"
    plan.write_text(json_text(FencePlan(fences=(), operator_count=9).to_json()), encoding="utf-8")
    out, sidecar = outputs(tmp_path)
    assert_one_line_error(
        cli("fence", model_file, "-o", out, "--after-ops", "1", "--plan", plan), "not allowed with argument"
    )
    assert_not_written(out, sidecar)


def test_neither_after_ops_nor_plan(cli, tmp_path: Path, model_file: Path) -> None:
    out, sidecar = outputs(tmp_path)
    assert_one_line_error(cli("fence", model_file, "-o", out), "--after-ops", "--plan")
    assert_not_written(out, sidecar)


def test_missing_plan_file(cli, tmp_path: Path, model_file: Path) -> None:
    out, sidecar = outputs(tmp_path)
    assert_one_line_error(cli("fence", model_file, "-o", out, "--plan", tmp_path / "no.json"), "no.json")
    assert_not_written(out, sidecar)


def test_plan_bound_to_another_model(cli, tmp_path: Path, model_file: Path) -> None:
    other = synthesize("chain", 1)  # same graph, other weights
    plan = FencePlan(fences=(), operator_count=9, model_sha256=model_sha256(other)).to_json()
    plan["fences"] = [{"after_op": 3}]
    plan_path = tmp_path / "plan.json"
    plan_path.write_text(json_text(plan), encoding="utf-8")
    out, sidecar = outputs(tmp_path)
    assert_one_line_error(cli("fence", model_file, "-o", out, "--plan", plan_path), "model_sha256", model_sha256(other))
    assert_not_written(out, sidecar)


def test_unknown_synth_kind(cli, tmp_path: Path) -> None:
    out = tmp_path / "m.tflite"
    line = assert_one_line_error(cli("synth", "no_such_kind", "-o", out), "'no_such_kind'")
    assert "chain" in line
    assert "no_such_kind" not in KINDS
    assert_not_written(out)


@pytest.mark.parametrize("seed", ["-3", "x"])
def test_bad_synth_seed(cli, tmp_path: Path, seed: str) -> None:
    out = tmp_path / "m.tflite"
    assert_one_line_error(cli("synth", "chain", "-o", out, f"--seed={seed}"), seed)
    assert_not_written(out)


def test_verify_with_missing_sidecar(cli, tmp_path: Path, model_file: Path) -> None:
    assert_one_line_error(cli("verify-fenced", model_file, "--sidecar", tmp_path / "x.json"), "x.json")


def test_unfence_missing_file(cli, tmp_path: Path) -> None:
    out = tmp_path / "restored.tflite"
    assert_one_line_error(cli("unfence", tmp_path / "gone.tflite", "-o", out), "gone.tflite")
    assert_not_written(out)


def test_output_that_is_a_folder(cli, tmp_path: Path, model_file: Path) -> None:
    folder = tmp_path / "folder.tflite"
    folder.mkdir()
    assert_one_line_error(cli("unfence", model_file, "-o", folder), str(folder))
    assert_one_line_error(cli("synth", "chain", "-o", folder), str(folder))
    assert list(folder.iterdir()) == []
    assert sorted(p.name for p in tmp_path.iterdir()) == ["folder.tflite", "in"]


def test_unknown_command(cli) -> None:
    assert_one_line_error(cli("frobnicate"), "frobnicate")


# ---------------------------------------------------------------- the installed console script


def test_console_script(tmp_path: Path) -> None:
    script = Path(sys.executable).with_name("heliabuild")
    require(script.exists(), f"the heliabuild console script is not installed beside {sys.executable} (pip install .)")
    out = tmp_path / "m.tflite"
    run = subprocess.run(
        [str(script), "synth", "residual", "-o", str(out), "--seed", "2"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout == f"heliabuild: synth {out}\n"
    assert out.read_bytes() == bytes(serialize(synthesize("residual", 2)))

    fenced = tmp_path / "f.tflite"
    bad = subprocess.run(
        [str(script), "fence", str(out), "-o", str(fenced), "--after-ops", "99"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert bad.returncode == 2
    assert len(bad.stderr.splitlines()) == 1 and bad.stderr.startswith("heliabuild: error: ")
    assert "Traceback" not in bad.stderr
    assert_not_written(fenced, sidecar_path_for(fenced))
