"""The command itself: bare `heliabuild` lists its commands, `aot-plan` defaults `--prefix` and `--platform`
as SCons does, and shell completion through argcomplete."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from heliabuild.cli.aot_plan import AOT_DEFAULT_PLATFORM
from heliabuild.model import save_model
from heliabuild.scons import aot as scons_aot
from heliabuild.synth import chain_network
from heliabuild.vela import compile

COMMANDS = ("fence", "verify-fenced", "unfence", "synth", "vela", "plan-fences", "aot-plan", "runner", "run")
COMMANDS += ("run-build", "show", "export", "module", "ops", "compare", "doctor", "docs")


def test_bare_heliabuild_lists_its_commands(cli) -> None:
    result = cli()
    assert result.code == 0 and result.err == ""
    assert result.out.startswith("usage: heliabuild [-h] [--version] COMMAND ...\n")
    listed = [line.split()[0] for line in result.out.splitlines() if re.match(r"    \S", line)]
    assert tuple(listed) == COMMANDS


def test_aot_plan_defaults_prefix_and_platform_as_scons_does(cli, tmp_path: Path) -> None:
    assert AOT_DEFAULT_PLATFORM == scons_aot.DEFAULT_PLATFORM
    save_model(chain_network(0), tmp_path / "kws_fenced.tflite")
    vela = compile(tmp_path / "kws_fenced.tflite", tmp_path / "vela")  # kws_fenced_vela.tflite
    result = cli("aot-plan", vela.model, "-o", tmp_path / "out")
    assert result.code == 0, result.err
    assert result.out.splitlines() == [
        f"heliabuild: aot-plan {tmp_path / 'out' / 'kws_plan.json'}",
        f"heliabuild: aot-plan {tmp_path / 'out' / 'kws_report.json'}",
    ]
    given = cli("aot-plan", vela.model, "--prefix", "kws", "--platform", AOT_DEFAULT_PLATFORM, "-o", tmp_path / "given")
    assert given.code == 0, given.err
    for name in ("kws_plan.json", "kws_report.json"):
        assert (tmp_path / "out" / name).read_bytes() == (tmp_path / "given" / name).read_bytes()


@pytest.mark.parametrize(
    ("line", "expected"),
    [("heliabuild comp", ["compare"]), ("heliabuild compare --f", ["--format", "--force"])],
)
def test_shell_completion(tmp_path: Path, line: str, expected: list[str]) -> None:
    script = Path(sys.executable).with_name("heliabuild")
    answer = tmp_path / "completions"
    environment = dict(
        os.environ,
        _ARGCOMPLETE="1",
        COMP_LINE=line,
        COMP_POINT=str(len(line)),
        _ARGCOMPLETE_IFS="\n",
        _ARGCOMPLETE_STDOUT_FILENAME=str(answer),
    )
    done = subprocess.run([script], env=environment, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert [word.strip() for word in answer.read_text(encoding="utf-8").splitlines()] == expected


def test_aot_plan_of_vela_output_for_another_npu_defaults_to_a_platform_that_runs_it(cli, tmp_path: Path) -> None:
    """As SCons chooses it: an Ethos-U85 (or U65) compilation without --platform is planned for the first
    platform whose NPU runs it, not refused against the Ethos-U55 default; a platform named is kept."""
    save_model(chain_network(0), tmp_path / "kws_fenced.tflite")
    for accelerator, platform in (
        ("ethos-u85-256", "corstone320_ethos_u85"),
        ("ethos-u65-256", "corstone300_ethos_u65"),
    ):
        vela = compile(tmp_path / "kws_fenced.tflite", tmp_path / accelerator, accelerator=accelerator)
        result = cli("aot-plan", vela.model, "-o", tmp_path / f"out-{accelerator}")
        assert result.code == 0, result.err
        plan = json.loads((tmp_path / f"out-{accelerator}" / "kws_plan.json").read_text(encoding="utf-8"))
        assert plan["platform"]["name"] == platform
    named = cli("aot-plan", vela.model, "--platform", AOT_DEFAULT_PLATFORM, "-o", tmp_path / "named")
    assert named.code == 2 and "Vela compiled it for ethos-u65-256, but the NPU of corstone300_ethos_u55" in named.err
    assert not (tmp_path / "named").exists()
