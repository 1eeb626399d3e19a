"""The LUT and arithmetic-heavy int8 operators through the module generator on QEMU mps3-an547: each
single-operator model is admitted, lowered to its kernel (heliabuild.kernels.int8_math), built into a Cortex-M55
firmware and run; every output byte equals LiteRT's reference kernels on the same input bytes. Forms no kernel
takes are refused at admission, naming the operator and the reason."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from conftest import require_firmware_tools
from helpers.int8_math_models import squared_difference_model, unary_model
from test_codegen_qemu import PLATFORM, _assert_matches_reference, _build, _run

from heliabuild.aot.stage import write_plan
from heliabuild.codegen.lowering import CodegenError
from heliabuild.codegen.module import generate_module
from heliabuild.kernels.int8 import Quant
from heliabuild.kernels.int8_math import LOGISTIC_OUTPUT, TANH_OUTPUT
from heliabuild.model import save_model

IN = Quant(0.06, -5)


def _cases() -> list[tuple[str, object]]:
    return [
        ("logistic", unary_model("LOGISTIC", (1, 6, 6, 8), IN, LOGISTIC_OUTPUT)),
        ("tanh", unary_model("TANH", (3, 40), IN, TANH_OUTPUT)),
        ("exp", unary_model("EXP", (2, 3, 17), Quant(0.02, 10), Quant(0.05, -100))),
        ("hard-swish", unary_model("HARD_SWISH", (1, 5, 5, 16), IN, Quant(0.04, -60))),
        ("rsqrt", unary_model("RSQRT", (4, 33), Quant(0.02, -128), Quant(0.05, -20))),
        (
            "squared-difference",
            squared_difference_model((1, 4, 4, 6), (1, 1, 1, 6), Quant(0.03, 2), Quant(0.05, -9), Quant(0.02, -128)),
        ),
    ]


@pytest.mark.parametrize(("name", "model"), _cases(), ids=[name for name, _ in _cases()])
def test_math_operators_are_bit_exact_on_qemu(firmware_library: Path, tmp_path: Path, name: str, model: object) -> None:
    require_firmware_tools()
    path = tmp_path / f"{name}.tflite"
    save_model(model, path)  # type: ignore[arg-type]
    built = _build(firmware_library, path, tmp_path / "fw", seed=13)
    _assert_matches_reference(path, built, _run(built))


def _refusal(tmp_path: Path, model: object) -> str:
    path = tmp_path / "model.tflite"
    save_model(model, path)  # type: ignore[arg-type]
    write_plan(path, tmp_path, "net", PLATFORM)
    with pytest.raises(CodegenError) as refused:
        generate_module(path, tmp_path / "net_plan.json", "net", tmp_path / "gen")
    assert not (tmp_path / "gen").exists()
    return refused.value.message


@pytest.mark.parametrize(
    ("model", "reason"),
    [
        (
            unary_model("LOGISTIC", (2, 3), IN, Quant(1 / 128, 0)),
            r"\(LOGISTIC\): int8 LOGISTIC: output quantization \(scale 0.0078125, zero point 0\) is not LiteRT's",
        ),
        (
            unary_model("HARD_SWISH", (2, 3), Quant(0.5, 0), Quant(0.001, 0)),
            r"\(HARD_SWISH\): int8 hard swish: output scale 0.001\d* is not above input scale / 128",
        ),
        (
            squared_difference_model((2, 3), (2, 3), Quant(0.5, 0), Quant(0.5, 0), Quant(1e-5, 0)),
            r"\(SQUARED_DIFFERENCE\): int8 squared difference: output scale",
        ),
    ],
    ids=["logistic-output-scale", "hard-swish-output-scale", "squared-difference-output-scale"],
)
def test_forms_no_kernel_takes_are_refused_with_the_reason(tmp_path: Path, model: object, reason: str) -> None:
    assert re.search(reason, _refusal(tmp_path, model))
