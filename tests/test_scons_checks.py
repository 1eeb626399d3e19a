"""HeliaPipeline's checks while the SConscripts are read (heliabuild.scons.checks), by real SCons in a user's
project: a misspelt accelerator, backend, platform or policy key, and fences given as a string, each stop the
build before any stage runs, with a did-you-mean and the SConstruct line; a good pipeline is not slowed by
them (its policy file is not parsed)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_scons import output_of, run_scons

from heliabuild.runner.freeze import BACKENDS
from heliabuild.scons import checks

SCONSTRUCT = """\
import json
import heliabuild.scons

env = Environment(tools=["default", heliabuild.scons.tool])
model = env.HeliaSynth("kws.tflite", HELIA_SYNTH_KIND="chain")
env.HeliaPipeline("kws", model, build_dir="kws", **json.load(open("options.json")))
"""
GOOD_POLICY = "defaults:\n  fvp:\n    acquisition: {state: carry, warmup_invokes: 1, measured_invokes: 3}\n"


def refusal(tmp_path: Path, options: dict[str, object], files: dict[str, str] | None = None) -> str:
    """The `scons: ***` line of a build of one pipeline with `options`; the build must fail before any stage."""
    project = tmp_path / "my-project"
    project.mkdir()
    (project / "SConstruct").write_text(SCONSTRUCT, encoding="utf-8")
    (project / "options.json").write_text(json.dumps(options), encoding="utf-8")
    for name, text in (files or {}).items():
        (project / name).write_text(text, encoding="utf-8")
    result = run_scons(project)
    assert result.returncode == 2, output_of(result)
    assert "heliabuild: [" not in result.stdout and not (project / "kws.tflite").exists(), output_of(result)
    (line,) = [line for line in result.stderr.splitlines() if line.startswith("scons: *** ")]
    assert line.endswith(f"(called at {project / 'SConstruct'}:6)"), line
    assert f'File "{project / "SConstruct"}", line 6, in <module>' in result.stderr
    return line.removeprefix("scons: *** heliabuild: HeliaPipeline kws: ").removesuffix(
        f" (called at {project / 'SConstruct'}:6)"
    )


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        (
            {"accelerator": "ethos-u55-512"},
            "accelerator='ethos-u55-512' is not an accelerator Vela knows; did you mean accelerator='ethos-u85-512' "
            "or accelerator='ethos-u65-512'? (they are ethos-u55-32, ethos-u55-64, ethos-u55-128, ethos-u55-256, "
            "ethos-u65-256, ethos-u65-512, ethos-u85-128, ethos-u85-256, ethos-u85-512, ethos-u85-1024, "
            "ethos-u85-2048)",
        ),
        (
            {"HELIA_VELA_ACCELERATOR": "ethos-u55-512"},
            "accelerator='ethos-u55-512' is not an accelerator Vela knows; did you mean accelerator='ethos-u85-512' "
            "or accelerator='ethos-u65-512'? (they are ethos-u55-32, ethos-u55-64, ethos-u55-128, ethos-u55-256, "
            "ethos-u65-256, ethos-u65-512, ethos-u85-128, ethos-u85-256, ethos-u85-512, ethos-u85-1024, "
            "ethos-u85-2048)",
        ),
        (
            {"backend": "qemu"},
            "backend='qemu' is not a heliabuild backend; did you mean backend='qemu-m55'? (they are litert, qemu-m55, "
            "fvp)",
        ),
        (
            {"platform": "corstone300_ethos_u56"},
            "platform='corstone300_ethos_u56' is not a platform of heliabuild's table; did you mean "
            "platform='corstone300_ethos_u65' or platform='corstone300_ethos_u55'? (they are apollo510_evb, "
            "corstone300_ethos_u55, corstone300_ethos_u65, corstone310_ethos_u55, corstone320_ethos_u85, mps3_an547)",
        ),
        (
            {"fences": "9,20"},
            "fences is 9,20; a fence plan is a .json; give a list: fences=[9, 20]",
        ),
        (
            {"policy": {"defaults": {"fvp": {"acquisiton": {}}}}},
            "policy: defaults.fvp: unknown key 'acquisiton'; did you mean 'acquisition'? (accepts acquisition, "
            "bus_tracing, enabled, per_layer_fencing, tensor_io, verification)",
        ),
    ],
)
def test_a_wrong_choice_stops_the_build_before_any_stage(
    tmp_path: Path, options: dict[str, object], expected: str
) -> None:
    assert refusal(tmp_path, options) == expected


def test_a_policy_file_with_a_misspelt_key_is_refused_naming_the_file(tmp_path: Path) -> None:
    policy = GOOD_POLICY.replace("warmup_invokes", "warmup_invoke")
    assert refusal(tmp_path, {"policy": "policy.yaml"}, {"policy.yaml": policy}) == (
        "policy.yaml: defaults.fvp.acquisition: unknown key 'warmup_invoke'; did you mean 'warmup_invokes'? "
        "(accepts measured_invokes, state, warmup_invokes)"
    )


def test_a_policy_for_litert_under_defaults_says_that_defaults_fvp_rules_every_backend(tmp_path: Path) -> None:
    policy = GOOD_POLICY.replace("fvp:", "litert:")
    assert refusal(tmp_path, {"policy": "policy.yaml"}, {"policy.yaml": policy}) == (
        "policy.yaml: defaults: unknown key 'litert': the policy of every backend (litert, qemu-m55 and fvp alike) "
        "is under defaults.fvp, the one key the policy spec gives (hint: move defaults.litert's settings under "
        "defaults.fvp)"
    )


def test_two_wrong_choices_are_both_named(tmp_path: Path) -> None:
    problem = refusal(tmp_path, {"backend": "qemu", "accelerator": "ethos-u55-100"})
    assert problem.startswith("backend='qemu' is not a heliabuild backend; did you mean backend='qemu-m55'?")
    assert "; accelerator='ethos-u55-100' is not an accelerator Vela knows" in problem


def test_a_good_policy_file_is_not_parsed_while_the_sconscripts_are_read(tmp_path: Path) -> None:
    (tmp_path / "policy.yaml").write_text(GOOD_POLICY, encoding="utf-8")
    assert checks.policy_problem("policy.yaml", str(tmp_path / "policy.yaml"), "policy.yaml") is None
    (tmp_path / "policy.yaml").write_text(GOOD_POLICY.replace("state", "stat"), encoding="utf-8")
    problem = checks.policy_problem("policy.yaml", str(tmp_path / "policy.yaml"), "policy.yaml")
    assert problem is not None and "unknown key 'stat'; did you mean 'state'?" in problem
    (tmp_path / "policy.json").write_text('{"defaults": {"fvp": {"acquisition": {"stat": "carry"}}}}')
    problem = checks.policy_problem("policy.json", str(tmp_path / "policy.json"), "policy.json")
    assert problem is not None and "policy.json: defaults.fvp.acquisition: unknown key 'stat'" in problem
    (tmp_path / "policy.json").write_text('{"defaults": {"fvp": {"acquisition": {"state": "carry"}}}}')
    assert checks.policy_problem("policy.json", str(tmp_path / "policy.json"), "policy.json") is None


def test_the_restated_lists_are_the_tools_own() -> None:
    from ethosu.vela.architecture_features import Accelerator

    assert checks.accelerators() == Accelerator.member_list()
    assert checks.BACKENDS == BACKENDS
