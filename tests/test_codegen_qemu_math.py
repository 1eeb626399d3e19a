"""The LUT and arithmetic-heavy int8 operators through the module generator on QEMU mps3-an547: each
single-operator model is admitted, lowered to its kernel (heliabuild.kernels.int8_math), built into a Cortex-M55
firmware and run; every output byte equals LiteRT's reference kernels on the same input bytes. Forms no kernel
takes are refused at admission, naming the operator and the reason."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from conftest import require_firmware_tools
from helpers.int8_math_models import (
    batch_matmul_model,
    binary_s16_model,
    resize_model,
    squared_difference_model,
    transpose_conv_model,
    unary_model,
)
from test_codegen_qemu import PLATFORM, _assert_matches_reference, _build, _run

from heliabuild.aot.stage import write_plan
from heliabuild.codegen.lowering import CodegenError
from heliabuild.codegen.module import generate_module
from heliabuild.kernels.int8 import Quant
from heliabuild.kernels.int8_math import L2_NORMALIZATION_OUTPUT, LOG_SOFTMAX_OUTPUT, LOGISTIC_OUTPUT, TANH_OUTPUT
from heliabuild.model import save_model

IN = Quant(0.06, -5)


def _cases() -> list[tuple[str, object]]:
    rng = np.random.default_rng(3)
    weights = rng.integers(-127, 128, (5, 3, 3, 4), dtype=np.int8)
    scales = (0.02 * rng.uniform(0.5, 1.0, 5)).astype(np.float32)
    bias = rng.integers(-3000, 3000, 5, dtype=np.int32)
    rhs = rng.integers(-128, 128, (16, 8), dtype=np.int8)
    return [
        ("logistic", unary_model("LOGISTIC", (1, 6, 6, 8), IN, LOGISTIC_OUTPUT)),
        ("tanh", unary_model("TANH", (3, 40), IN, TANH_OUTPUT)),
        ("exp", unary_model("EXP", (2, 3, 17), Quant(0.02, 10), Quant(0.05, -100))),
        ("hard-swish", unary_model("HARD_SWISH", (1, 5, 5, 16), IN, Quant(0.04, -60))),
        ("rsqrt", unary_model("RSQRT", (4, 33), Quant(0.02, -128), Quant(0.05, -20))),
        ("l2-normalization", unary_model("L2_NORMALIZATION", (1, 6, 40), IN, L2_NORMALIZATION_OUTPUT)),
        ("log-softmax", unary_model("LOG_SOFTMAX", (3, 50), IN, LOG_SOFTMAX_OUTPUT)),
        (
            "squared-difference",
            squared_difference_model((1, 4, 4, 6), (1, 1, 1, 6), Quant(0.03, 2), Quant(0.05, -9), Quant(0.02, -128)),
        ),
        (
            "batch-matmul",
            batch_matmul_model((2, 3, 5, 7), (1, 3, 9, 7), (2, 3, 5, 9), IN, Quant(0.04, 3), Quant(0.3, 1), adj_y=True),
        ),
        (
            "batch-matmul-constant",
            batch_matmul_model((1, 6, 16), (16, 8), (1, 6, 8), IN, Quant(0.02, 0), Quant(0.2, -4), rhs=rhs),
        ),
        (
            "transpose-conv",
            transpose_conv_model(
                (1, 4, 5, 4),
                weights,
                scales,
                bias,
                IN,
                Quant(0.1, 7),
                (1, 8, 10, 5),
                stride=(2, 2),
                padding="SAME",
                activation="RELU",
            ),
        ),
        (
            "resize-nearest",
            resize_model("nearest", (1, 3, 5, 4), (6, 10), IN, align_corners=False, half_pixel_centers=True),
        ),
        (
            "resize-bilinear",
            resize_model("bilinear", (2, 4, 3, 3), (8, 7), IN, align_corners=False, half_pixel_centers=True),
        ),
        ("add-s16", binary_s16_model("add", (1, 4, 6), (6,), Quant(3e-4, 0), Quant(5e-4, 0), Quant(8e-4, 0), "RELU")),
        ("mul-s16", binary_s16_model("mul", (2, 5), (2, 1), Quant(3e-4, 0), Quant(5e-4, 0), Quant(2e-3, 0))),
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
            r"refused forms: LOGISTIC \(op 0 '[^']*': int8 LOGISTIC: output quantization "
            r"\(scale 0.0078125, zero point 0\) is not LiteRT's",
        ),
        (
            unary_model("HARD_SWISH", (2, 3), Quant(0.5, 0), Quant(0.001, 0)),
            r"refused forms: HARD_SWISH \(op 0 '[^']*': int8 hard swish: output scale 0.001\d* is not above "
            r"input scale / 128",
        ),
        (
            squared_difference_model((2, 3), (2, 3), Quant(0.5, 0), Quant(0.5, 0), Quant(1e-5, 0)),
            r"refused forms: SQUARED_DIFFERENCE \(op 0 '[^']*': int8 squared difference: output scale",
        ),
        (
            binary_s16_model(
                "add", (2, 3), (2, 3), Quant(2**-10, 0), Quant(2**-10, 0), Quant(2**-9, 0), pot_scale=True
            ),
            r"refused forms: ADD \(op 0 '[^']*': int16 ADD with power-of-two scales \(pot_scale_int16\) has no kernel",
        ),
    ],
    ids=["logistic-output-scale", "hard-swish-output-scale", "squared-difference-output-scale", "add-s16-pot"],
)
def test_forms_no_kernel_takes_are_refused_with_the_reason(tmp_path: Path, model: object, reason: str) -> None:
    assert re.search(reason, _refusal(tmp_path, model))


@pytest.mark.parametrize("kind", ["counter", "counter_no_init"])
def test_a_stateful_model_is_refused_saying_why(kind: str) -> None:
    from heliabuild.codegen.lowering import lower_model
    from heliabuild.synth import synthesize

    with pytest.raises(CodegenError) as refused:
        lower_model(synthesize(kind), kind)
    state = (
        "CALL_ONCE x1, VAR_HANDLE x2, READ_VARIABLE x1, ASSIGN_VARIABLE x2"
        if kind == "counter"
        else ("VAR_HANDLE x1, READ_VARIABLE x1, ASSIGN_VARIABLE x2")
    )
    assert refused.value.message == (
        f"{kind}: the model holds state ({state}): this lowering table has no resource-variable operators, so the "
        "acquisition lifecycle's carry could not hold them (heliabuild.codegen.module.lower adds them)"
    )
