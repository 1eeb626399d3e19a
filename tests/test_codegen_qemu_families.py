"""The architecture families of heliabuild.synth.families end to end on QEMU mps3-an547: each model, unfenced
and with two fences, goes through the AOT plan, the module generator and a Cortex-M55 firmware; every output
byte of every measured invoke equals LiteRT's reference kernels on the unfenced model, one tick count per
segment is reported and the segments add up to the invoke (docs/firmware.md, "Architecture families")."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_codegen_qemu import _assert_matches_reference, _build, _fenced, _run

from heliabuild.model import save_model
from heliabuild.synth import synthesize

FAMILIES = {
    "mobilenet_v3_block": [4, 11],  # after the depthwise conv and the projection (the residual stem live)
    "transformer": [2, 10],  # after the layer norm's second MEAN (x and the mean live), after Q, K and V
    "unet_decoder": [3, 7],  # after the TRANSPOSE_CONV (the skip live), after the decoder conv
}
CASES = [(family, fences) for family, cut in FAMILIES.items() for fences in ([], cut)]


@pytest.mark.parametrize(("family", "fences"), CASES, ids=[f"{f}-{'fenced' if c else 'unfenced'}" for f, c in CASES])
def test_families_are_bit_exact_on_qemu_fenced_and_unfenced(
    firmware_library: Path, tmp_path: Path, family: str, fences: list[int]
) -> None:
    source = tmp_path / f"{family}.tflite"
    save_model(synthesize(family, seed=2), source)
    model = _fenced(source, fences, tmp_path) if fences else source
    built = _build(firmware_library, model, tmp_path / "fw", seed=len(fences) + 3)
    run = _run(built)
    _assert_matches_reference(model, built, run)
    for sample in run.samples:
        assert len(sample.segment_ticks) == len(fences) + 1
        assert all(ticks > 0 for ticks in sample.segment_ticks)


@pytest.mark.parametrize(
    ("family", "kernels"),
    [
        ("mobilenet_v3_block", {"ops_lut.c", "ops_conv.c", "ops_elementwise.c", "ops_data.c", "ops_softmax.c"}),
        ("transformer", {"ops_arith.c", "ops_lut.c", "ops_matmul.c", "ops_softmax.c", "ops_conv.c", "ops_data.c"}),
        ("unet_decoder", {"ops_matmul.c", "ops_resize.c", "ops_conv.c", "ops_shape.c"}),
    ],
)
def test_family_exports_carry_the_kernel_sources_they_call_and_compile(
    tmp_path: Path, family: str, kernels: set[str]
) -> None:
    """`heliabuild module` derives the kernel sources from the calls: each family's export holds the new
    kernels' files and compiles with the export's own flags."""
    import subprocess

    from conftest import require_firmware_tools

    from heliabuild.aot.stage import write_plan
    from heliabuild.module.export import compiler_flags, export_module

    require_firmware_tools()
    source = tmp_path / f"{family}.tflite"
    save_model(synthesize(family, seed=1), source)
    write_plan(source, tmp_path / "plan", "net", "mps3_an547")
    folder = tmp_path / "module"
    export_module(source, tmp_path / "plan" / "net_plan.json", folder)
    sources = sorted((folder / "src").glob("*.c"))
    assert kernels <= {path.name for path in sources}
    for path in sources:
        compiled = subprocess.run(
            ["arm-none-eabi-gcc", *compiler_flags(), "-I", str(folder / "include"), "-I", str(folder / "src"),
             "-c", str(path), "-o", str(tmp_path / f"{path.stem}.o")],
            capture_output=True, text=True, check=False,
        )  # fmt: skip
        assert compiled.returncode == 0, compiled.stderr[-2000:]
