"""HeliaAotPlan and the pipeline's aot-plan stage, end to end: real SCons, real Vela, synthetic models.

Each test builds a small project in a temporary folder whose SConstruct reads
its options from `options.json`, so a test changes an option by rewriting that
file and counts the `heliabuild: <stage> <target>` lines of the next build.
"""

from __future__ import annotations

import json
import subprocess
from collections import Counter
from pathlib import Path

import pytest
from test_scons import SITE_TOOLS, build_ok, heliabuild_lines, output_of, run_scons

from heliabuild.aot.records import validate_plan_document, validate_report_document
from heliabuild.files import json_text, sha256_file
from heliabuild.model import save_model
from heliabuild.synth import residual_network, synthesize

STAGES = ("synth", "fence", "vela", "plan-fences", "aot-plan")

BUILDER_SCONSTRUCT = """\
import json

SetOption("hash_format", "sha256")
env = Environment(tools=["helia"], toolpath=[{site_tools!r}])
env.Decider("content")
with open("options.json", encoding="utf-8") as handle:
    options = json.load(handle)
model = env.HeliaSynth("build/model.tflite", HELIA_SYNTH_KIND="chain", HELIA_SYNTH_SEED=0)
env.HeliaAotPlan("build/kws_plan.json", model, **options)
"""

PIPELINE_SCONSTRUCT = """\
import json

SetOption("hash_format", "sha256")
env = Environment(tools=["helia"], toolpath=[{site_tools!r}])
env.Decider("content")
with open("options.json", encoding="utf-8") as handle:
    options = json.load(handle)
pipeline = env.HeliaPipeline("kws-chain", "model.tflite", fences=[3, 6], build_dir="build", **options)
assert pipeline.aot_plan.name == "kws_chain_plan.json", pipeline.aot_plan
"""

POOL_CONFIG = """\
memory:
  tensors:
    - {pattern: "*", residency: stream}
  stream_pool: {memory: DTCM, bytes: 16384}
"""


def stage_counts(result: subprocess.CompletedProcess[str]) -> Counter[str]:
    counts: Counter[str] = Counter()
    for line in heliabuild_lines(result):
        words = line.split(" ")
        if len(words) == 3 and words[1] in STAGES:  # a start line, `heliabuild: <stage> <target>`
            counts[words[1]] += 1
    return counts


def make_project(folder: Path, sconstruct: str, **options: object) -> Path:
    folder.mkdir(parents=True)
    (folder / "SConstruct").write_text(sconstruct.format(site_tools=str(SITE_TOOLS)), encoding="utf-8")
    set_options(folder, **options)
    return folder


def set_options(project: Path, **options: object) -> None:
    (project / "options.json").write_text(json.dumps(options), encoding="utf-8")


def documents(folder: Path, prefix: str) -> tuple[dict, dict]:
    plan = json.loads((folder / f"{prefix}_plan.json").read_text(encoding="utf-8"))
    report = json.loads((folder / f"{prefix}_report.json").read_text(encoding="utf-8"))
    validate_plan_document(plan)
    validate_report_document(report)
    return plan, report


@pytest.mark.slow
def test_the_builder_reruns_on_its_options_config_and_input_plan_only(tmp_path: Path) -> None:
    project = make_project(tmp_path / "project", BUILDER_SCONSTRUCT, HELIA_AOT_PLATFORM="apollo510_evb")
    build = project / "build"
    first = build_ok(project)
    assert stage_counts(first) == {"synth": 1, "aot-plan": 1}, output_of(first)
    assert "heliabuild: aot-plan build/kws_plan.json" in heliabuild_lines(first)
    plan, _ = documents(build, "kws")
    assert plan["platform"]["name"] == "apollo510_evb" and plan["module_prefix"] == "kws"
    assert stage_counts(build_ok(project)) == {}

    # Another platform reruns the plan, not the model.
    set_options(project, HELIA_AOT_PLATFORM="corstone300_ethos_u55")
    assert stage_counts(build_ok(project)) == {"aot-plan": 1}
    assert documents(build, "kws")[0]["platform"]["name"] == "corstone300_ethos_u55"

    # A configuration file is a dependency: its content reruns the stage.
    (project / "aot.yaml").write_text("optimization: {goal: size}\n", encoding="utf-8")
    set_options(project, HELIA_AOT_PLATFORM="apollo510_evb", HELIA_AOT_CONFIG="aot.yaml")
    assert stage_counts(build_ok(project)) == {"aot-plan": 1}
    (project / "aot.yaml").write_text(POOL_CONFIG, encoding="utf-8")
    assert stage_counts(build_ok(project)) == {"aot-plan": 1}
    plan, report = documents(build, "kws")
    assert plan["schedule"]["source"] == "plan" and report["stream_pool"]["layout"]
    assert stage_counts(build_ok(project)) == {}

    # The plan it wrote, read back as input (named by the configuration file, relative to it): byte-identical.
    (project / "plans").mkdir()
    (project / "plans" / "input_plan.json").write_bytes((build / "kws_plan.json").read_bytes())
    written = (build / "kws_plan.json").read_bytes(), (build / "kws_report.json").read_bytes()
    (project / "aot.yaml").write_text(POOL_CONFIG + "optimization: {plan: plans/input_plan.json}\n", "utf-8")
    assert stage_counts(build_ok(project)) == {"aot-plan": 1}
    assert ((build / "kws_plan.json").read_bytes(), (build / "kws_report.json").read_bytes()) == written
    # ... and the input plan is a dependency: a plan bound to another model stops the build, naming both hashes.
    other = tmp_path / "other.tflite"
    save_model(residual_network(0), other)
    from heliabuild.aot.planner import plan_model

    (project / "plans" / "input_plan.json").write_text(
        json_text(plan_model(other, "apollo510_evb", module_prefix="kws")[0]), encoding="utf-8"
    )
    failed = run_scons(project)
    assert failed.returncode != 0
    errors = [line for line in heliabuild_lines(failed) if line.startswith("heliabuild: error:")]
    assert len(errors) == 1, output_of(failed)
    assert sha256_file(other) in errors[0] and sha256_file(build / "model.tflite") in errors[0]
    assert "Traceback" not in output_of(failed)
    assert not (build / "kws_plan.json").exists() and not (build / "kws_report.json").exists()


@pytest.mark.slow
def test_the_pipeline_plans_the_vela_output_and_a_platform_change_reruns_only_that(tmp_path: Path) -> None:
    project = make_project(tmp_path / "project", PIPELINE_SCONSTRUCT)
    save_model(synthesize("chain", seed=0), project / "model.tflite")
    build = project / "build"
    first = build_ok(project)
    assert stage_counts(first) == {"fence": 1, "vela": 1, "aot-plan": 1}, output_of(first)
    assert "heliabuild: aot-plan build/kws_chain_plan.json" in heliabuild_lines(first)
    plan, report = documents(build, "kws_chain")
    # The default platform has the NPU the Vela output needs; the plan is of Vela's compiled model.
    assert plan["platform"]["name"] == "corstone300_ethos_u55"
    assert plan["model"]["file"] == "kws-chain_fenced_vela.tflite"
    assert plan["model"]["sha256"] == sha256_file(build / "kws-chain_fenced_vela.tflite")
    assert [op["op_type"] for op in plan["operators"]].count("ethos-u") == 3
    assert all(isinstance(op["macs"], int) for op in report["operators"])  # Vela's per-layer CSV is a source
    assert stage_counts(build_ok(project)) == {}

    # A platform without the NPU: only the plan reruns, and it stops the build naming every ethos-u operator.
    set_options(project, platform="apollo510_evb")
    failed = run_scons(project)
    assert failed.returncode != 0 and stage_counts(failed) == {"aot-plan": 1}, output_of(failed)
    errors = [line for line in heliabuild_lines(failed) if line.startswith("heliabuild: error:")]
    assert len(errors) == 1 and "3 operators cannot be planned for platform apollo510_evb" in errors[0]
    assert all(op["id"] in errors[0] for op in plan["operators"] if op["op_type"] == "ethos-u")
    assert not (build / "kws_chain_plan.json").exists() and not (build / "kws_chain_report.json").exists()

    # Back to the NPU platform, with a configuration given as a mapping: only the plan reruns.
    set_options(project, platform="corstone300_ethos_u55", aot_config={"optimization": {"goal": "size"}})
    rebuilt = build_ok(project)
    assert stage_counts(rebuilt) == {"aot-plan": 1}, output_of(rebuilt)
    assert documents(build, "kws_chain")[0]["optimization"]["goal"] == "size"
    set_options(project, platform="corstone300_ethos_u55", aot_config={"optimization": {"goal": "latency"}})
    assert stage_counts(build_ok(project)) == {"aot-plan": 1}
    assert stage_counts(build_ok(project)) == {}


@pytest.mark.parametrize(
    ("sconstruct", "fragment"),
    [
        ('env.HeliaAotPlan("build/x.json", "m.tflite")', "expected <prefix>_plan.json"),
        ('env.HeliaAotPlan("build/9x_plan.json", "m.tflite")', "is not a C identifier"),
        ('env.HeliaAotPlan("build/x_plan.json", "m.tflite", HELIA_AOT_PLATFORM="nowhere")', "expected one of"),
        ('env.HeliaAotPlan("build/x_plan.json", "m.tflite", HELIA_AOT_PREFIX="y")', "make them agree"),
        ('env.HeliaAotPlan("build/x_plan.json", ["m.tflite", "m.json"])', "optionally followed by Vela's per-layer"),
        ('env.HeliaAotPlan("build/x_plan.json", "m.tflite", HELIA_AOT_CONFIG=3)', "HELIA_AOT_CONFIG is 3"),
        ('env.HeliaPipeline("p", "m.tflite", prefix="9p")', "a module prefix is a C identifier"),
    ],
    ids=["target-name", "prefix", "platform", "prefix-mismatch", "sources", "config-type", "pipeline-prefix"],
)
def test_configuration_mistakes_are_reported_before_building(tmp_path: Path, sconstruct: str, fragment: str) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "SConstruct").write_text(
        f'env = Environment(tools=["helia"], toolpath=[{str(SITE_TOOLS)!r}])\n{sconstruct}\n', encoding="utf-8"
    )
    result = run_scons(project)
    assert result.returncode != 0
    assert fragment in output_of(result), output_of(result)
    assert "called at" in output_of(result)


@pytest.mark.slow
def test_an_input_plan_given_as_a_variable_or_in_a_mapping_is_a_dependency(tmp_path: Path) -> None:
    pool = {
        "memory": {
            "tensors": [{"pattern": "*", "residency": "stream"}],
            "stream_pool": {"memory": "DTCM", "bytes": 16384},
        }
    }
    project = make_project(
        tmp_path / "project", BUILDER_SCONSTRUCT, HELIA_AOT_PLATFORM="apollo510_evb", HELIA_AOT_CONFIG=pool
    )
    build = project / "build"
    build_ok(project)
    written = (build / "kws_plan.json").read_bytes()
    plan = json.loads(written)
    assert plan["schedule"]["source"] == "plan" and len(plan["schedule"]["units"]) > 1
    (project / "plans").mkdir()
    (project / "plans" / "input_plan.json").write_bytes(written)

    # As HELIA_AOT_INPUT_PLAN (relative to the SConstruct): the same plan, byte for byte.
    set_options(
        project, HELIA_AOT_PLATFORM="apollo510_evb", HELIA_AOT_CONFIG=pool, HELIA_AOT_INPUT_PLAN="plans/input_plan.json"
    )
    assert stage_counts(build_ok(project)) == {"aot-plan": 1}
    assert (build / "kws_plan.json").read_bytes() == written
    # Editing only its schedule reruns the stage, and the plan follows the edit.
    plan["schedule"]["units"].pop()
    (project / "plans" / "input_plan.json").write_text(json_text(plan), encoding="utf-8")
    assert stage_counts(build_ok(project)) == {"aot-plan": 1}
    assert json.loads((build / "kws_plan.json").read_text("utf-8"))["schedule"] == plan["schedule"]

    # In the configuration mapping (relative to the calling SConscript's folder): the same.
    mapping = {**pool, "optimization": {"plan": "plans/input_plan.json"}}
    set_options(project, HELIA_AOT_PLATFORM="apollo510_evb", HELIA_AOT_CONFIG=mapping)
    assert stage_counts(build_ok(project)) == {"aot-plan": 1}
    assert json.loads((build / "kws_plan.json").read_text("utf-8"))["schedule"] == plan["schedule"]
    (project / "plans" / "input_plan.json").write_bytes(written)
    assert stage_counts(build_ok(project)) == {"aot-plan": 1}
    assert (build / "kws_plan.json").read_bytes() == written


@pytest.mark.slow
def test_without_a_platform_the_pipeline_plans_for_one_whose_npu_runs_its_accelerator(tmp_path: Path) -> None:
    """A new user's `accelerator="ethos-u65-256"` (or u85) with no `platform=` plans for the first platform
    whose NPU runs it, not for the default Ethos-U55 one; a platform given is kept, and a mismatch refused."""
    project = make_project(tmp_path / "project", PIPELINE_SCONSTRUCT, accelerator="ethos-u65-256")
    save_model(synthesize("chain", seed=0), project / "model.tflite")
    build_ok(project)
    assert documents(project / "build", "kws_chain")[0]["platform"]["name"] == "corstone300_ethos_u65"
    set_options(project, accelerator="ethos-u85-256")
    build_ok(project)
    assert documents(project / "build", "kws_chain")[0]["platform"]["name"] == "corstone320_ethos_u85"
    set_options(project, accelerator="ethos-u85-256", platform="corstone300_ethos_u55")
    failed = run_scons(project)
    assert failed.returncode == 2 and "Vela compiled it for ethos-u85-256, but the NPU of corstone300_ethos_u55" in (
        failed.stderr
    ), output_of(failed)
