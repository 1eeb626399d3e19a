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


def _sconstruct(folder: Path, *lines: str) -> None:
    from test_scons import SITE_TOOLS

    header = f"env = Environment(tools=['helia'], toolpath=[{str(SITE_TOOLS)!r}])\n"
    (folder / "SConstruct").write_text(header + "".join(f"{line}\n" for line in lines), encoding="utf-8")


def test_a_failed_scons_stage_keeps_a_precious_target_the_user_put_there(tmp_path: Path) -> None:
    from test_scons import heliabuild_lines, output_of, run_scons

    (tmp_path / "mine.tflite").write_bytes(b"my own model")
    (tmp_path / "mine.fenced_boundaries.json").write_text("my own notes\n")
    _sconstruct(
        tmp_path,
        "model = env.HeliaSynth('model.tflite', HELIA_SYNTH_KIND='chain')",
        "env.Precious(env.HeliaFence('mine.tflite', model, HELIA_FENCES=[99]))",
    )
    result = run_scons(tmp_path, ".")
    assert result.returncode == 2, output_of(result)
    assert len(heliabuild_lines(result, "heliabuild: error:")) == 1, output_of(result)
    assert (tmp_path / "mine.tflite").read_bytes() == b"my own model"
    assert (tmp_path / "mine.fenced_boundaries.json").read_text() == "my own notes\n"


def test_a_failed_scons_stage_removes_a_precious_target_it_wrote_itself(tmp_path: Path) -> None:
    """The stage replaced the precious target before it failed: that file is this build's, and goes."""
    from test_scons import output_of, run_scons

    (tmp_path / "kept.txt").write_text("the user's\n")
    (tmp_path / "written.txt").write_text("the user's\n")
    _sconstruct(
        tmp_path,
        "from heliabuild.errors import HeliaError",
        "from heliabuild.files import write_atomic",
        "from heliabuild.scons.messages import stage_failed",
        "from heliabuild.scons.progress import stage_action",
        "def half_done(target, source, env):",
        "    write_atomic(str(target[1]), b'half a result')",
        "    return stage_failed(HeliaError('the stage failed half way'), target)",
        "env['HALFCOMSTR'] = 'heliabuild: half $TARGET'",
        "env.Precious(env.Command(['kept.txt', 'written.txt'], [], stage_action(half_done, 'HALFCOMSTR')))",
    )
    result = run_scons(tmp_path, ".")
    assert result.returncode == 2, output_of(result)
    assert "heliabuild: error: the stage failed half way" in result.stderr
    assert (tmp_path / "kept.txt").read_text() == "the user's\n"
    assert not (tmp_path / "written.txt").exists()
