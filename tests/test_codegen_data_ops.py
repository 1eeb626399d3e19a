"""The data-movement and simple element-wise int8 operators (issue 22, part A) end to end on QEMU mps3-an547:
a model chaining standalone RELU6, int8 -> int8 QUANTIZE, RELU, EXPAND_DIMS, SQUEEZE and RELU_N1_TO_1 becomes a
Cortex-M55 firmware whose outputs equal LiteRT's reference kernels byte for byte, fenced and unfenced, and the
requantize kernel's random cases replayed on the target equal LiteRT there too."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from ai_edge_litert import schema_py_generated as schema
from conftest import require_firmware_tools
from test_codegen_qemu import _assert_matches_reference, _build, _fenced, _run
from test_kernels_int8_m55 import Emitter

from heliabuild.kernels.int8 import Int8Kernels, KernelCall, Quant, requantize_params
from heliabuild.kernels.native import load_host_library
from heliabuild.model import save_model
from heliabuild.model.io import Model
from heliabuild.synth.builder import GraphBuilder
from heliabuild.synth.quant import quantization_parameters

OP = schema.BuiltinOperator


@pytest.fixture(autouse=True)
def _tools() -> None:
    require_firmware_tools()


def data_chain() -> Model:
    builder = GraphBuilder()

    def tensor(name: str, shape: tuple[int, ...], scale: float, zero_point: int) -> int:
        return builder.activation(name, shape, "int8", quantization_parameters([scale], [zero_point]))

    x = tensor("input", (1, 4, 4, 3), 0.05, -3)
    relu6 = tensor("relu6", (1, 4, 4, 3), 0.05, -3)
    builder.operator(OP.RELU6, [x], [relu6], version=2)
    requantized = tensor("requantized", (1, 4, 4, 3), 0.031, 11)
    builder.operator(OP.QUANTIZE, [relu6], [requantized], schema.QuantizeOptionsT(), version=2)
    relu = tensor("relu", (1, 4, 4, 3), 0.02, -128)
    builder.operator(OP.RELU, [requantized], [relu], version=2)
    expanded = tensor("expanded", (1, 4, 4, 1, 3), 0.02, -128)
    axis = builder.constant("axis", np.array([3], np.int32))
    builder.operator(OP.EXPAND_DIMS, [relu, axis], [expanded], version=1)
    squeezed = tensor("squeezed", (4, 4, 3), 0.02, -128)
    options = schema.SqueezeOptionsT()
    options.squeezeDims = [0, 3]
    builder.operator(OP.SQUEEZE, [expanded], [squeezed], options, version=1)
    output = tensor("output", (4, 4, 3), 0.01, 5)
    builder.operator(OP.RELU_N1_TO_1, [squeezed], [output], version=1)
    return builder.finish([x], [output], description="data ops", name="data_chain", dynamic_batch=False)


@pytest.mark.parametrize("fences", [[], [1, 3]], ids=["unfenced", "fenced"])
def test_a_chain_of_data_operators_is_bit_exact_on_qemu(
    firmware_library: Path, tmp_path: Path, fences: list[int]
) -> None:
    source = tmp_path / "data_chain.tflite"
    save_model(data_chain(), source)
    model = _fenced(source, fences, tmp_path) if fences else source
    built = _build(firmware_library, model, tmp_path / "fw", seed=3)
    run = _run(built)
    _assert_matches_reference(model, built, run)
    assert len(run.samples[0].segment_ticks) == len(fences) + 1


def test_requantize_cases_are_bit_exact_on_the_cortex_m55(
    tmp_path: Path, tmp_path_factory: pytest.TempPathFactory, firmware_library: Path
) -> None:
    import test_kernels_int8_m55
    from helpers.int8_models import requantize_model, run_reference

    from heliabuild.firmware.build import link_firmware
    from heliabuild.firmware.qemu import run_on_qemu
    from heliabuild.kernels import int8

    test_kernels_int8_m55.STRUCT_TYPES[int8.RequantizeArgs] = "helia_requantize_s8_args"
    kernels = Int8Kernels(load_host_library(tmp_path_factory.mktemp("heliakernels_unary")))
    recorded: list[KernelCall] = []
    kernels.recorder = recorded.append
    emitter = Emitter()
    rng = np.random.default_rng(20261201)
    kinds = ("RELU", "RELU6", "RELU_N1_TO_1", "QUANTIZE")
    for index in range(80):
        kind = kinds[index % 4]
        shape = tuple(int(v) for v in rng.integers(1, 6, size=int(rng.integers(1, 4))))
        iq = Quant(float(rng.uniform(1e-3, 0.5)), int(rng.integers(-128, 128)))
        oq = Quant(iq.scale * float(rng.uniform(0.05, 20.0)), int(rng.integers(-128, 128)))
        x = rng.integers(-128, 128, size=shape, dtype=np.int8)
        expected = run_reference(requantize_model(kind, shape, iq, oq), [x])
        recorded.clear()
        kernels.requantize(requantize_params(iq, oq, "NONE" if kind == "QUANTIZE" else kind), x)
        (call,) = recorded
        assert isinstance(call.arrays[-1], np.ndarray) and call.arrays[-1].tobytes() == expected.tobytes()
        emitter.add(index, kind, call, expected)
    source = tmp_path / "requantize_cases.c"
    source.write_text(emitter.source())
    elf = link_firmware(firmware_library, [source], [], tmp_path / "requantize_cases.elf")
    run = run_on_qemu(elf, timeout_s=120)
    assert run.console.strip().splitlines()[-1] == "helia-int8 OK 80/80", run.console[-2000:]
    assert run.exit_status == 0
