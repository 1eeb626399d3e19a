"""The qemu-m55 backend in SCons, with real SCons, Vela, arm-none-eabi-gcc and QEMU: HeliaPipeline(...,
backend='qemu-m55') plans the fenced model for mps3_an547, generates its module, links its firmware with the
one shared firmware library and runs it on QEMU. The library is built once for any number of pipelines, a
policy change relinks and reruns only its pipeline, clean builds give byte-identical ELFs, and a CacheDir
serves the library and the ELFs to a second checkout."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest
from conftest import require_firmware_tools
from test_scons import build_ok, copy_built, heliabuild_lines, output_of, run_scons

from heliabuild.api import load_result
from heliabuild.model import save_model
from heliabuild.synth import synthesize

pytestmark = pytest.mark.slow

SITE_TOOLS = Path(__file__).resolve().parents[1] / "site_scons" / "site_tools"
SCONSTRUCT = """\
import json
env = Environment(tools=["default", "helia"], toolpath=[{site_tools!r}])
cache = json.load(open("options.json")).get("cache")
if cache:
    env.CacheDir(cache)
for name, options in json.load(open("options.json"))["pipelines"].items():
    env.HeliaPipeline(name, options.pop("model"), build_dir="build/" + name, **options)
"""
LIBRARY = "heliabuild-firmware/mps3_an547/libheliafirmware.a"


@pytest.fixture(autouse=True)
def _tools() -> None:
    require_firmware_tools()


def project(folder: Path, pipelines: dict[str, dict[str, object]], cache: Path | None = None) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "SConstruct").write_text(SCONSTRUCT.format(site_tools=str(SITE_TOOLS)), encoding="utf-8")
    if not (folder / "chain.tflite").exists():
        save_model(synthesize("chain", seed=0), folder / "chain.tflite")
        save_model(synthesize("residual", seed=0), folder / "residual.tflite")
    options = {"pipelines": pipelines, "cache": None if cache is None else str(cache)}
    (folder / "options.json").write_text(json.dumps(options), encoding="utf-8")
    return folder


def three_pipelines(measured: int = 2) -> dict[str, dict[str, object]]:
    policy = {"defaults": {"fvp": {"acquisition": {"warmup_invokes": 1, "measured_invokes": measured}}}}
    return {
        "chain": {"model": "chain.tflite", "fences": [3, 6], "backend": "qemu-m55", "policy": policy},
        "residual": {"model": "residual.tflite", "fences": [2, 7], "backend": "qemu-m55"},
        "plain": {"model": "chain.tflite", "backend": "qemu-m55"},
    }


def lines_with(result: subprocess.CompletedProcess[str], text: str) -> list[str]:
    return [line for line in heliabuild_lines(result) if text in line]


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, subprocess.CompletedProcess[str]]:
    """The three pipelines after one clean `scons -j2` with an (empty) CacheDir, `cache` beside the project,
    and that build's result: the first checkout of the CacheDir test too. Tests must not change it."""
    folder = tmp_path_factory.mktemp("qemu")
    project_folder = project(folder / "project", three_pipelines(), cache=folder / "cache")
    return project_folder, build_ok(project_folder, "-j2")


def test_three_qemu_pipelines_share_one_library_and_publish_verified_bundles(
    built: tuple[Path, subprocess.CompletedProcess[str]],
) -> None:
    folder, result = built
    assert lines_with(result, "libheliafirmware.a") == [f"heliabuild: firmware-cc build/{LIBRARY}"], output_of(result)
    assert len(lines_with(result, "firmware-link build/")) == 3  # three ELFs
    for name, segments in (("chain", 3), ("residual", 3), ("plain", 1)):
        bundle = load_result(folder / "build" / name / "results" / name)
        assert bundle.document["run_identity"]["backend"] == "qemu-m55"
        assert bundle.runtime == "aot"
        for sample in bundle.samples:
            assert sample.instructions is not None and len(sample.instructions["segments"]) == segments
            assert sample.verification is not None
            assert all(check["max_abs_diff"] == 0 for check in sample.verification)
        plan = json.loads((folder / "build" / name / f"{name}_plan.json").read_text())
        assert plan["platform"]["name"] == "mps3_an547"


COUNTED = re.compile(r"^heliabuild: \[(\d+)/(\d+)\] ([a-z-]+) \S+$", re.MULTILINE)
"""A counted stage's start line: `heliabuild: [k/n] <stage> <first target>`."""


def counted(result: subprocess.CompletedProcess[str]) -> list[tuple[int, int, str]]:
    """(k, n, stage) of every counted start line, in the order printed."""
    return [(int(match[1]), int(match[2]), match[3]) for match in COUNTED.finditer(result.stdout)]


def test_the_firmware_lines_are_counted_and_a_full_build_ends_at_n_of_n(
    built: tuple[Path, subprocess.CompletedProcess[str]],
) -> None:
    """Every start line, the firmware's compiles and links too, has the counter; at -j2 each k once, one n."""
    _, result = built
    lines = counted(result)
    assert {stage for _, _, stage in lines} >= {"firmware", "firmware-cc", "firmware-link", "run"}, output_of(result)
    assert sorted(k for k, _, _ in lines) == list(range(1, len(lines) + 1))
    assert {n for _, n, _ in lines} == {len(lines)}, output_of(result)


def test_a_noop_build_runs_nothing(built: tuple[Path, subprocess.CompletedProcess[str]]) -> None:
    folder, _ = built
    result = build_ok(folder)
    assert heliabuild_lines(result) == [], output_of(result)


def test_a_policy_change_relinks_and_reruns_only_its_pipeline(
    built: tuple[Path, subprocess.CompletedProcess[str]], tmp_path: Path
) -> None:
    folder = copy_built(built[0], tmp_path / "project")  # built, its SCons database with it: up to date
    project(folder, three_pipelines(measured=3))  # (and no CacheDir)
    result = build_ok(folder)
    assert sorted(line.split(" ")[1] for line in heliabuild_lines(result)) == sorted(
        ["firmware", "firmware-cc", "firmware-link", "runner", "run"]
    ), output_of(result)
    assert all("build/chain/" in line for line in heliabuild_lines(result))
    # n counts what runs, not the other pipelines' stages SCons has yet to find up to date: it ends at k/k
    assert counted(result) == [(k, 5, stage) for k, (_, _, stage) in enumerate(counted(result), 1)], output_of(result)
    assert len(load_result(folder / "build" / "chain" / "results" / "chain").samples) == 3


def test_clean_builds_in_two_folders_give_byte_identical_elfs(
    built: tuple[Path, subprocess.CompletedProcess[str]], tmp_path: Path
) -> None:
    first, _ = built
    second = project(tmp_path / "elsewhere" / "project", three_pipelines())
    build_ok(second, "-j2")
    for name in ("chain", "residual", "plain"):
        for relative in (f"runner/{name}/firmware.elf", f"runner/{name}/runner.json", f"firmware/{name}_model.c"):
            a, b = first / "build" / name / relative, second / "build" / name / relative
            assert a.read_bytes() == b.read_bytes(), relative


def test_a_cachedir_serves_the_library_and_the_elfs_to_a_second_checkout(
    built: tuple[Path, subprocess.CompletedProcess[str]], tmp_path: Path
) -> None:
    first, _ = built  # its clean build filled the cache
    second = project(tmp_path / "second", three_pipelines(), cache=first.parent / "cache")
    result = run_scons(second, "-j2")
    assert result.returncode == 0, output_of(result)
    assert lines_with(result, "firmware-cc") == [] and lines_with(result, "firmware-link") == [], output_of(result)
    assert f"Retrieved `build/{LIBRARY}' from cache" in output_of(result)
    retrieved = [line for line in output_of(result).splitlines() if line.startswith("Retrieved")]
    assert any("libheliafirmware.a" in line for line in retrieved)
    assert sum(1 for line in retrieved if line.endswith(".firmware/firmware.elf' from cache")) == 3
    for name in ("chain", "residual", "plain"):
        elf = f"build/{name}/runner/{name}.firmware/firmware.elf"
        assert (first / elf).read_bytes() == (second / elf).read_bytes()


def test_another_platform_with_qemu_is_a_configuration_error(tmp_path: Path) -> None:
    pipelines = {"q": {"model": "chain.tflite", "backend": "qemu-m55", "platform": "apollo510_evb"}}
    result = run_scons(project(tmp_path / "project", pipelines))
    assert result.returncode != 0
    assert "backend qemu-m55 runs on platform mps3_an547, and platform 'apollo510_evb' was given" in output_of(result)


def _sines() -> object:
    """Two float SIN operators: a type heliabuild has no kernel for."""
    from ai_edge_litert import schema_py_generated as schema

    from heliabuild.synth.builder import GraphBuilder

    builder = GraphBuilder()
    x, y, z = (builder.activation(name, (1, 8), "float32") for name in ("x", "sin", "sin_again"))
    builder.operator(schema.BuiltinOperator.SIN, [x], [y])
    builder.operator(schema.BuiltinOperator.SIN, [y], [z])
    return builder.finish([x], [z], description="two SIN", name="sines", dynamic_batch=False)


def test_a_model_the_module_generator_refuses_fails_before_the_first_stage(tmp_path: Path) -> None:
    folder = project(tmp_path / "project", {"q": {"model": "sines.tflite", "fences": [0], "backend": "qemu-m55"}})
    save_model(_sines(), folder / "sines.tflite")  # type: ignore[arg-type]
    result = run_scons(folder, "-j2")
    assert result.returncode != 0
    message = "sines.tflite: the module generator refuses 2 of 2 operators: no kernel for SIN x2 (ops 0 '0:sin', 1)"
    assert message in output_of(result)
    stages = {match.group(1) for match in re.finditer(r"^heliabuild: \[\d+/\d+\] (\S+) ", output_of(result), re.M)}
    # the build's shared kernel library is no stage of the pipeline: at -j2 it may compile beside the check
    assert stages - {"firmware-cc"} == {"admission"}, output_of(result)
    assert not (folder / "build" / "q" / "q_fenced.tflite").exists()
    assert not (folder / "build" / "q" / "q_admission.json").exists()
