"""The exported module built for real, with Debian's arm-none-eabi-gcc and cmake: the plain layout compiles
and links with exactly its kernel sources (each one needed), the example application (examples/module_app)
builds through the cmake layout with a toolchain file, runs on QEMU mps3-an547 and prints LiteRT's reference
outputs, and an edit of the plan rebuilds only the generated objects."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import require_firmware_tools
from helpers.module_app import EXAMPLE, assert_equals_litert, run_example

from heliabuild.aot.config import AotConfig
from heliabuild.aot.stage import write_plan
from heliabuild.files import sha256_file
from heliabuild.model import save_model
from heliabuild.module.export import compiler_flags, export_module
from heliabuild.synth import synthesize

pytestmark = pytest.mark.slow

MAIN = """\
#include "net_model.h"
uint8_t net_model_arena[NET_MODEL_ARENA_BYTES] __attribute__((aligned(NET_MODEL_ARENA_ALIGNMENT)));
int main(void)
{
    helia_model_context context = {NULL, NULL, 0u, 0, HELIA_STATUS_OK};
    if (net_model_init(&context) != HELIA_MODEL_OK) {
        return 1;
    }
    return net_model_run(&context) == HELIA_MODEL_OK ? (int)net_model_inputs[0].bytes : 2;
}
"""
STREAMING = AotConfig(tensors=[{"pattern": "*", "residency": "stream"}], stream_pool={"memory": "DTCM", "bytes": 32768})


@pytest.fixture(autouse=True)
def _tools() -> None:
    require_firmware_tools()
    if shutil.which("cmake") is None or shutil.which("ninja") is None:
        pytest.skip("cmake and ninja are not on PATH (Debian: cmake ninja-build)")


def _run(command: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=300, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    return result


def _link(folder: Path, objects: list[Path], output: Path) -> subprocess.CompletedProcess[str]:
    flags = ["-mcpu=cortex-m55", "-mthumb", "-mfloat-abi=hard", "-nostartfiles", "--specs=nosys.specs", "-e", "main"]
    return subprocess.run(
        ["arm-none-eabi-gcc", *flags, *map(str, objects), "-o", str(output)],
        cwd=folder,
        capture_output=True,
        text=True,
        check=False,
    )


def test_the_plain_layout_links_and_needs_every_kernel_source_it_holds(tmp_path: Path) -> None:
    model = tmp_path / "residual.tflite"
    save_model(synthesize("residual", seed=0), model)
    write_plan(model, tmp_path, "net", "mps3_an547", STREAMING)
    folder = export_module(model, tmp_path / "net_plan.json", tmp_path / "module").folder
    (tmp_path / "main.c").write_text(MAIN)
    objects = {}
    for source in [tmp_path / "main.c", *sorted((folder / "src").glob("*.c"))]:
        output = tmp_path / "objects" / f"{source.stem}.o"
        output.parent.mkdir(exist_ok=True)
        _run(["arm-none-eabi-gcc", *compiler_flags(), "-Imodule/include", "-Imodule/src", "-c", str(source),
              "-o", str(output)], tmp_path)  # fmt: skip
        objects[source.name] = output
    linked = _link(tmp_path, list(objects.values()), tmp_path / "app.elf")
    assert linked.returncode == 0, linked.stderr
    kernels = [name for name in objects if not name.startswith(("main", "net_model"))]
    assert "ops_elementwise.c" in kernels and "stream_split.c" not in kernels  # ADDs; no fence in this model
    for name in kernels:
        without = _link(tmp_path, [o for n, o in objects.items() if n != name], tmp_path / "without.elf")
        assert without.returncode != 0 and "undefined reference to `helia_" in without.stderr, name


@pytest.fixture(scope="module")
def cmake_example(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The example configured and built once through the cmake layout of the synthetic KWS chain."""
    require_firmware_tools()
    folder = tmp_path_factory.mktemp("cmake-example")
    model = folder / "kws.tflite"
    save_model(synthesize("chain", seed=0), model)
    write_plan(model, folder, "kws", "mps3_an547")
    module = export_module(model, folder / "kws_plan.json", folder / "kws_module", layout="cmake").folder
    build = folder / "build"
    _run(
        ["cmake", "-S", str(EXAMPLE), "-B", str(build), "-G", "Ninja",
         f"-DCMAKE_TOOLCHAIN_FILE={EXAMPLE / 'arm-none-eabi.cmake'}", f"-DHELIA_MODULE_DIR={module}"],
        folder,
    )  # fmt: skip
    _run(["cmake", "--build", str(build)], folder)
    return {"folder": folder, "model": model, "module": module, "build": build}


def test_the_example_built_through_cmake_runs_on_qemu_with_litert_outputs(cmake_example: dict[str, Path]) -> None:
    version, outputs, counts = run_example(cmake_example["build"] / "app.elf")
    assert sha256_file(cmake_example["model"]) in version
    assert_equals_litert(cmake_example["model"], outputs)
    assert all(count > 0 for count in counts)
    symbols = _run(["arm-none-eabi-nm", str(cmake_example["build"] / "app.elf")], cmake_example["folder"]).stdout
    assert "helia_conv2d_s8" in symbols or "helia_fully_connected_s8" in symbols
    for harness in ("helia_record_begin", "helia_lifecycle", "helia_measure_begin", "helia_reset_init"):
        assert harness not in symbols  # the module needs nothing of heliabuild's measurement firmware


def test_a_plan_edit_rebuilds_only_the_generated_objects_in_cmake(cmake_example: dict[str, Path]) -> None:
    folder, build = cmake_example["folder"], cmake_example["build"]
    write_plan(cmake_example["model"], folder / "streaming", "kws", "mps3_an547", STREAMING)
    plan = folder / "streaming" / "kws_plan.json"
    export_module(cmake_example["model"], plan, cmake_example["module"], layout="cmake")
    result = _run(["cmake", "--build", str(build), "--verbose"], folder)
    compiled = set(re.findall(r" -o kws_module/CMakeFiles/kws_model\.dir/src/(\S+)\.obj ", result.stdout))
    assert compiled == {"kws_model.c", "kws_model_io.c"}, result.stdout
    assert "re-run cmake" not in result.stdout.lower()
    _, outputs, _ = run_example(build / "app.elf")
    assert_equals_litert(cmake_example["model"], outputs)


HOOK_MAIN = """\
#include <string.h>

#include "console.h"
#include "kws_model.h"

uint8_t kws_model_arena[KWS_MODEL_ARENA_BYTES] __attribute__((section(".bss.app_arena"), aligned(16)));
static uint32_t copies;

void systick_handler(void)
{
}

void kws_model_copy(void *destination, const void *source, size_t bytes)
{
    ++copies;
    memcpy(destination, source, bytes);
}

int main(void)
{
    helia_model_context context = {NULL, NULL, 0u, 0, HELIA_STATUS_OK};
    uint32_t i;
    if (kws_model_init(&context) != HELIA_MODEL_OK) {
        return 3;
    }
    for (i = 0u; i < kws_model_inputs[0].bytes; ++i) {
        kws_model_inputs[0].data[i] = (uint8_t)(i * 7u + 3u);
    }
    if (kws_model_run(&context) != HELIA_MODEL_OK) {
        return 4;
    }
    console_write("copies: ");
    console_write_u64(copies);
    console_write("\\nrun 0 output 0: ");
    console_write_hex(kws_model_outputs[0].data, kws_model_outputs[0].bytes);
    console_write("\\n");
    return 0;
}
"""


def test_a_users_copy_hook_replaces_the_default_once_per_unit_and_constants_sit_in_their_sections(
    tmp_path: Path,
) -> None:
    from heliabuild.firmware.qemu import run_on_qemu

    model = tmp_path / "kws.tflite"
    save_model(synthesize("chain", seed=0), model)
    write_plan(model, tmp_path, "kws", "mps3_an547", STREAMING)
    folder = export_module(model, tmp_path / "kws_plan.json", tmp_path / "module").folder
    units = json.loads((folder / "kws_layout.json").read_text())["units"]
    assert units
    (tmp_path / "main.c").write_text(HOOK_MAIN)
    sources = [tmp_path / "main.c", EXAMPLE / "startup.c", EXAMPLE / "console.c", *sorted((folder / "src").glob("*.c"))]
    _run(
        ["arm-none-eabi-gcc", *compiler_flags(), f"-I{EXAMPLE}", "-Imodule/include", "-Imodule/src", *map(str, sources),
         "-nostartfiles", "--specs=nano.specs", "--specs=nosys.specs", "-Wl,--gc-sections",
         "-T", str(EXAMPLE / "app.ld"), "-o", "app.elf"],
        tmp_path,
    )  # fmt: skip
    run = run_on_qemu(tmp_path / "app.elf", timeout_s=120)
    assert run.exit_status == 0, run.console
    assert f"copies: {len(units)}\n" in run.console
    output = re.search(r"run 0 output 0: ([0-9a-f]+)", run.console)
    assert output is not None
    assert_equals_litert(model, [bytes.fromhex(output[1])])
    sections = _run(["arm-none-eabi-objdump", "-h", "app.elf"], tmp_path).stdout
    constants = re.search(r"\.model_constants\s+([0-9a-f]+)\s+([0-9a-f]+)", sections)
    assert constants is not None and int(constants[1], 16) > 0 and int(constants[2], 16) == 0x38000000


def test_the_real_kws_model_runs_in_the_example_with_litert_outputs(tmp_path: Path, kws_path: Path) -> None:
    """The MLPerf Tiny DS-CNN keyword spotter (../shared/models), exported and built through the cmake layout."""
    model = tmp_path / "kws.tflite"
    shutil.copyfile(kws_path, model)
    write_plan(model, tmp_path, "kws", "mps3_an547")
    module = export_module(model, tmp_path / "kws_plan.json", tmp_path / "kws_module", layout="cmake").folder
    build = tmp_path / "build"
    _run(
        ["cmake", "-S", str(EXAMPLE), "-B", str(build), "-G", "Ninja",
         f"-DCMAKE_TOOLCHAIN_FILE={EXAMPLE / 'arm-none-eabi.cmake'}", f"-DHELIA_MODULE_DIR={module}"],
        tmp_path,
    )  # fmt: skip
    _run(["cmake", "--build", str(build)], tmp_path)
    _, outputs, _ = run_example(build / "app.elf")
    assert_equals_litert(model, outputs)
