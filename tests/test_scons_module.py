"""env.HeliaModule with real SCons, arm-none-eabi-gcc and QEMU: the example application (examples/module_app)
builds through SCons as a user's own Program, runs on QEMU with LiteRT's reference outputs; and in a project
that also has a qemu-m55 pipeline, which objects recompile after a policy change, a plan change and a new model
with the same operators, and that the kernel objects come from the one kernel library the runner's firmware
library is built from."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import require_firmware_tools
from helpers.module_app import EXAMPLE, assert_equals_litert, run_example
from test_scons import build_ok, output_of

from heliabuild.files import sha256_file

pytestmark = pytest.mark.slow

KERNELS = "build/heliabuild-firmware/kernels/libheliakernels.a"
FIRMWARE_LIBRARY = "build/heliabuild-firmware/mps3_an547/libheliafirmware.a"
SCONSTRUCT = """\
import json
import os

import heliabuild.scons

env = Environment(tools=["default", heliabuild.scons.tool])
options = json.load(open("options.json"))
model = env.HeliaSynth("build/kws.tflite", HELIA_SYNTH_KIND="chain", HELIA_SYNTH_SEED=options["seed"])
pipeline = env.HeliaPipeline(
    "kws", model, backend="qemu-m55", policy=options["policy"], aot_config=options["aot"], build_dir="build/kws"
)
module = env.HeliaModule("build/kws_module", pipeline)
cpu = ["-mcpu=cortex-m55", "-mthumb", "-mfloat-abi=hard"]
arm = Environment(
    ENV={"PATH": os.environ["PATH"]},
    CC="arm-none-eabi-gcc",
    LINK="arm-none-eabi-gcc",
    CCFLAGS=[*cpu, "-std=c99", "-O2", "-Wall", "-Wextra", "-Werror"],
    CPPPATH=[module.include],
    LINKFLAGS=[*cpu, "-nostartfiles", "--specs=nano.specs", "--specs=nosys.specs", "-T", File("app.ld").abspath],
    CCCOMSTR="app-cc $TARGET",
    LINKCOMSTR="app-link $TARGET",
)
objects = [arm.Object(f"build/app/{name}.o", f"{name}.c") for name in ("main", "startup", "console")]
app = arm.Program("build/app.elf", [*objects, *module.objects], LIBS=[module.library])
Default(app, pipeline.alias)
"""
POLICY = {"defaults": {"fvp": {"acquisition": {"warmup_invokes": 0, "measured_invokes": 1}}}}
STREAMING = {
    "memory": {"tensors": [{"pattern": "*", "residency": "stream"}], "stream_pool": {"memory": "DTCM", "bytes": 32768}}
}


@pytest.fixture(autouse=True)
def _tools() -> None:
    require_firmware_tools()


def _copy_example(folder: Path) -> Path:
    shutil.copytree(EXAMPLE, folder, ignore=shutil.ignore_patterns("build", ".sconsign*"))
    return folder


def _compiled(result: subprocess.CompletedProcess[str]) -> set[str]:
    """What this build compiled or archived: heliabuild's firmware-cc lines and the project's own app-cc lines."""
    from test_scons import heliabuild_lines

    found = {
        line.removeprefix("heliabuild: firmware-cc ") for line in heliabuild_lines(result, "heliabuild: firmware-cc ")
    }
    return found | {
        line.removeprefix("app-cc ") for line in output_of(result).splitlines() if line.startswith("app-cc ")
    }


def _stages(result: subprocess.CompletedProcess[str]) -> list[str]:
    import re

    return sorted({m[1] for m in re.finditer(r"^heliabuild: \[\d+/\d+\] (\S+) ", output_of(result), re.M)})


def test_the_example_built_through_scons_runs_on_qemu_with_litert_outputs(tmp_path: Path) -> None:
    project = _copy_example(tmp_path / "app")
    result = build_ok(project)
    assert "build/kws_module.objects/kws_model.o" in _compiled(result), output_of(result)
    version, outputs, counts = run_example(project / "build" / "app.elf")
    assert sha256_file(project / "build" / "kws.tflite") in version
    assert_equals_litert(project / "build" / "kws.tflite", outputs)
    assert all(count > 0 for count in counts)
    assert "is up to date" in output_of(build_ok(project))


def test_which_objects_recompile_after_a_policy_a_plan_and_a_model_change(tmp_path: Path) -> None:
    project = _copy_example(tmp_path / "app")
    (project / "SConstruct").write_text(SCONSTRUCT)
    options = {"seed": 0, "policy": POLICY, "aot": None}

    def build() -> subprocess.CompletedProcess[str]:
        (project / "options.json").write_text(json.dumps(options))
        return build_ok(project)

    first = build()
    compiled = _compiled(first)
    assert KERNELS in compiled and FIRMWARE_LIBRARY in compiled  # the runner's library is made from the kernels
    assert output_of(first).count(f"firmware-cc {KERNELS}\n") == 1  # started once (then `: done in ...`)
    assert {"build/kws_module.objects/kws_model.o", "build/kws_module.objects/kws_model_io.o"} <= compiled

    options["policy"] = {"defaults": {"fvp": {"acquisition": {"warmup_invokes": 0, "measured_invokes": 2}}}}
    after_policy = build()
    assert "module" not in _stages(after_policy) and "runner" in _stages(after_policy)
    assert not {name for name in _compiled(after_policy) if "kws_module" in name or name in (KERNELS,)}

    options["aot"] = STREAMING
    after_plan = build()
    assert "module" in _stages(after_plan)
    module_objects = {name for name in _compiled(after_plan) if name.startswith("build/kws_module")}
    assert module_objects == {"build/kws_module.objects/kws_model.o", "build/kws_module.objects/kws_model_io.o"}
    assert KERNELS not in _compiled(after_plan) and FIRMWARE_LIBRARY not in _compiled(after_plan)
    _, outputs, _ = run_example(project / "build" / "app.elf")
    assert_equals_litert(project / "build" / "kws.tflite", outputs)

    options["seed"] = 1  # the same operators, other weights
    after_model = build()
    assert "module" in _stages(after_model) and "synth" in _stages(after_model)
    assert KERNELS not in _compiled(after_model) and FIRMWARE_LIBRARY not in _compiled(after_model)
    assert "build/kws_module.objects/kws_model.o" in _compiled(after_model)
    _, outputs, _ = run_example(project / "build" / "app.elf")
    assert_equals_litert(project / "build" / "kws.tflite", outputs)


@pytest.mark.parametrize(
    ("call", "problem"),
    [
        ('env.HeliaModule("out", ["kws.tflite"])', "sources are the model and its AOT plan (<prefix>_plan.json)"),
        (
            'env.HeliaModule("out", ["kws.tflite", "kws_plan.json"], HELIA_MODULE_LAYOUT="meson")',
            "unknown module layout 'meson'; the layouts are plain, cmake, zephyr, cmsis-pack",
        ),
        (
            'env.HeliaModule("out", ["kws.tflite", "kws_plan.json"], HELIA_MODULE_LAYUOT="cmake")',
            "unknown keyword HELIA_MODULE_LAYUOT",
        ),
        (
            'env.HeliaModule("out", env.HeliaPipeline("kws", "kws.tflite"))',
            "pipeline kws's AOT plan is of Vela's model, whose ethos-u operators the module cannot run",
        ),
    ],
)
def test_a_wrong_call_is_one_error_naming_the_sconstruct_line(tmp_path: Path, call: str, problem: str) -> None:
    from test_scons import run_scons

    (tmp_path / "SConstruct").write_text(
        f"import heliabuild.scons\nenv = Environment(tools=['default', heliabuild.scons.tool])\n{call}\n"
    )
    result = run_scons(tmp_path)
    assert result.returncode == 2, output_of(result)
    assert f"scons: *** heliabuild: HeliaModule out: {problem}" in result.stderr
    assert f"(called at {tmp_path / 'SConstruct'}:3)" in result.stderr
    assert not (tmp_path / "out").exists()


def test_a_cachedir_serves_the_objects_and_never_a_partial_export(tmp_path: Path) -> None:
    """The export's kernel copies are not SCons targets, so the export is never stored in or retrieved from a
    CacheDir (a retrieved module.json would list files the folder lacks); the objects are."""
    results = []
    for name in ("first", "second"):
        project = _copy_example(tmp_path / name)
        text = (project / "SConstruct").read_text()
        marker = 'SetOption("hash_format", "sha256")\n'
        (project / "SConstruct").write_text(text.replace(marker, marker + f"CacheDir({str(tmp_path / 'cache')!r})\n"))
        results.append(build_ok(project))
        folder = project / "build" / "kws_module"
        listed = json.loads((folder / "module.json").read_text())["files"]
        assert all((folder / path).is_file() for path in listed)
    second = output_of(results[1])
    assert "Retrieved `build/kws_module.objects/kws_model.o' from cache" in second
    assert "Retrieved `build/kws_module/module.json' from cache" not in second
    assert "heliabuild: module build/kws_module/" in second or "] module build/kws_module/" in second
