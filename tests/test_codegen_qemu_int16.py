"""The int16 (16x8) operators through the module generator on QEMU mps3-an547: single-operator models of
FULLY_CONNECTED, CONV_2D, DEPTHWISE_CONV_2D, LOGISTIC, TANH and SOFTMAX and a chain of every int16 kernel (fenced
and unfenced) are admitted, lowered (heliabuild.codegen.lowering_int16), built into a Cortex-M55 firmware and
run; every output byte equals LiteRT's reference kernels on the same input bytes. Forms no kernel takes are
refused at admission, naming the operator and the reason, and the hint lists the int16 forms."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from conftest import require_firmware_tools
from helpers.int16_models import (
    conv_s16_model,
    conversion_s16_model,
    fully_connected_s16_model,
    int16_chain_model,
    softmax_s16_model,
    unary_s16_model,
)
from test_codegen_qemu import _assert_matches_reference, _build, _fenced, _run
from test_codegen_qemu_math import _refusal

from heliabuild.codegen.lowering import ModelRefusedError
from heliabuild.codegen.module import lower
from heliabuild.kernels.int8 import Quant
from heliabuild.model import save_model


def _cases() -> list[tuple[str, object]]:
    rng = np.random.default_rng(16)
    fc_filter = rng.integers(-127, 128, (7, 40))
    conv_filter = rng.integers(-127, 128, (5, 3, 2, 3))
    return [
        (
            "fully-connected-s16",
            fully_connected_s16_model(
                (3, 40), fc_filter, rng.uniform(1e-3, 1e-2, 7), rng.integers(-(2**30), 2**30, 7),
                Quant(3e-4, 0), Quant(5e-2, 0), "RELU6",
            ),
        ),
        (
            "conv-s16",
            conv_s16_model(
                (2, 7, 6, 3), conv_filter, rng.uniform(1e-3, 1e-2, 5), rng.integers(-(2**30), 2**30, 5),
                Quant(3e-4, 0), Quant(5e-2, 0), (2, 4, 3, 5), stride=(2, 2), dilation=(1, 1), padding="SAME",
                activation="NONE",
            ),
        ),
        (
            "depthwise-conv-s16",
            conv_s16_model(
                (1, 6, 7, 3), rng.integers(-127, 128, (1, 3, 3, 6)), rng.uniform(1e-3, 1e-2, 6),
                rng.integers(-(2**30), 2**30, 6), Quant(3e-4, 0), Quant(5e-2, 0), (1, 6, 7, 6), stride=(1, 1),
                dilation=(1, 1), padding="SAME", activation="RELU", depthwise=True,
            ),
        ),
        ("logistic-s16", unary_s16_model("LOGISTIC", (2, 300), Quant(4e-4, 0))),
        ("tanh-s16", unary_s16_model("TANH", (3, 5, 20), Quant(2.0**-11, 0))),
        ("softmax-s16", softmax_s16_model((4, 33), Quant(7e-4, 0), beta=0.5)),
    ]  # fmt: skip


@pytest.mark.parametrize(("name", "model"), _cases(), ids=[name for name, _ in _cases()])
def test_int16_operators_are_bit_exact_on_qemu(
    firmware_library: Path, tmp_path: Path, name: str, model: object
) -> None:
    require_firmware_tools()
    path = tmp_path / f"{name}.tflite"
    save_model(model, path)  # type: ignore[arg-type]
    built = _build(firmware_library, path, tmp_path / "fw", seed=16)
    _assert_matches_reference(path, built, _run(built))


@pytest.mark.parametrize("kind", ["quantize", "dequantize"])
def test_the_int16_conversions_are_bit_exact_on_qemu(firmware_library: Path, tmp_path: Path, kind: str) -> None:
    """QUANTIZE's float input is filled with finite values (random bytes would hold NaNs, whose rounding
    LiteRT leaves to the platform)."""
    require_firmware_tools()
    path = tmp_path / f"{kind}.tflite"
    save_model(conversion_s16_model(kind, (3, 50), Quant(2e-4, 0)), path)
    rng = np.random.default_rng(9)
    values = (rng.standard_normal((3, 50)) * 4.0).astype(np.float32)
    fills = [values.tobytes()] if kind == "quantize" else None
    built = _build(firmware_library, path, tmp_path / "fw", seed=9, fills=fills)
    _assert_matches_reference(path, built, _run(built))


@pytest.mark.parametrize("fences", [[], [1, 4]], ids=["unfenced", "fenced"])
def test_an_int16_network_is_bit_exact_on_qemu(firmware_library: Path, tmp_path: Path, fences: list[int]) -> None:
    """Fenced after the TANH and after the RESHAPE: each segment's outputs cross the fence as int16."""
    require_firmware_tools()
    path = tmp_path / "int16_chain.tflite"
    save_model(int16_chain_model(), path)
    model = _fenced(path, fences, tmp_path) if fences else path
    built = _build(firmware_library, model, tmp_path / "fw", seed=5)
    run = _run(built)
    _assert_matches_reference(model, built, run)
    assert [len(sample.segment_ticks) for sample in run.samples] == [len(fences) + 1] * len(run.samples)


def test_int16_forms_no_kernel_takes_are_refused_with_the_reason(tmp_path: Path) -> None:
    message = _refusal(tmp_path, unary_s16_model("LOGISTIC", (2, 3), Quant(1e-3, 0), Quant(1.0 / 16384.0, 0)))
    assert re.search(
        r"refused forms: LOGISTIC \(op 0 '[^']*': int16 LOGISTIC: output scale 6\.1\S* is not 2\^-15\)", message
    )
    rng = np.random.default_rng(0)
    wide = fully_connected_s16_model(
        (1, 4), rng.integers(-127, 128, (2, 4)), [1.0], None, Quant(1.0, 0), Quant(1e-8, 0)
    )
    assert "int16 fully connected: the output multiplier" in _refusal(tmp_path / "fc", wide)


def test_an_int16_conversion_with_a_zero_point_is_refused(tmp_path: Path) -> None:
    message = _refusal(tmp_path, conversion_s16_model("quantize", (2, 3), Quant(1e-3, 4)))
    assert re.search(
        r"refused forms: QUANTIZE \(op 0 '[^']*': int16 zero point 4 is not 0 \(the 16x8 form\)\)", message
    )


def test_the_refusal_hint_lists_the_int16_forms(tmp_path: Path) -> None:
    path = tmp_path / "logistic.tflite"
    save_model(unary_s16_model("LOGISTIC", (2, 3), Quant(1e-3, 0), Quant(1.0 / 16384.0, 0)), path)
    from heliabuild.model.io import load_model

    with pytest.raises(ModelRefusedError) as refused:
        lower(load_model(path), str(path))
    hint = refused.value.hint or ""
    listed = re.search(r"int8 and int16 \(16x8\): ([A-Z0-9_, ]+)", hint)
    assert listed is not None, hint
    expected = {"ADD", "MUL", "CONV_2D", "DEPTHWISE_CONV_2D", "FULLY_CONNECTED", "LOGISTIC", "TANH", "SOFTMAX"}
    assert set(listed.group(1).split(", ")) == expected
    assert "float32 or int8 to int8, float32 to int16: QUANTIZE" in hint
    assert "int8 or int16 to float32: DEQUANTIZE" in hint
