"""The default folders of a pipeline and a sweep (HeliaPipeline build_dir `build/<name>`, HeliaSweep
`build/<sweep>`): what a dry run of real SCons in a user's project says it would build, and where."""

from __future__ import annotations

import re
from pathlib import Path

from test_scons import build_ok

SCONSTRUCT = """\
import heliabuild.scons

env = Environment(tools=["default", heliabuild.scons.tool])
model = env.HeliaSynth("model.tflite", HELIA_SYNTH_KIND="chain")
env.HeliaPipeline("kws", model, fences=[3, 6])
env.HeliaSweep("kws_sweep", model, grid={"accelerator": ["ethos-u55-128", "ethos-u55-256"]}, fences=[3])
"""
STAGE = re.compile(r"^heliabuild: \[\d+/\d+\] ([a-z-]+) (\S+)$", re.MULTILINE)


def test_a_pipeline_builds_into_build_name_and_a_sweep_into_build_sweep(tmp_path: Path) -> None:
    (tmp_path / "SConstruct").write_text(SCONSTRUCT, encoding="utf-8")
    dry = build_ok(tmp_path, "-n")
    targets = {target for stage, target in STAGE.findall(dry.stdout) if stage != "synth"}
    assert targets, dry.stdout
    assert {target.split("/")[:2][1] for target in targets} == {"kws", "kws_sweep"}, sorted(targets)
    assert all(target.startswith("build/") for target in targets), sorted(targets)
    assert "build/kws/results/kws/result.json" in targets
    assert any(target.startswith("build/kws_sweep/accelerator=ethos-u55-256/") for target in targets)
    assert not (tmp_path / "build").exists() and not (tmp_path / "kws").exists()  # -n built nothing
