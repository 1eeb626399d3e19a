"""The AOT module generator end to end on real QEMU mps3-an547: a model and its AOT plan become a C module,
which links with heliabuild's kernels and the lifecycle harness into a Cortex-M55 firmware; its outputs are
bit-identical to LiteRT's reference kernels on the unfenced model, its per-segment counts add up, and a plan
that streams constants runs with the same outputs and its copies visible in the counts."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from conftest import FirmwareLibrary, require_firmware_tools

from heliabuild.aot.config import AotConfig
from heliabuild.aot.stage import write_plan
from heliabuild.codegen.lowering import CodegenError
from heliabuild.codegen.module import GeneratedModule, generate_module
from heliabuild.errors import FirmwareError
from heliabuild.fence import rewrite_model_with_fences, strip_fences
from heliabuild.firmware.build import check_memory_fit, link_firmware
from heliabuild.firmware.config import CONFIG_SOURCE, FirmwarePolicy, firmware_config_source
from heliabuild.firmware.protocol import Expectation, FirmwareRun, input_crc32, read_run
from heliabuild.firmware.qemu import run_on_qemu
from heliabuild.model import load_model, model_sha256, save_model, serialize
from heliabuild.runner.verification import compare_outputs, reference_outputs
from heliabuild.synth import single_op_model, synthesize

PLATFORM = "mps3_an547"
DEFAULT_POLICY = FirmwarePolicy("carry", 1, 2)
STREAMING = AotConfig(tensors=[{"pattern": "*", "residency": "stream"}], stream_pool={"memory": "DTCM", "bytes": 32768})


@pytest.fixture(autouse=True)
def _tools() -> None:
    require_firmware_tools()


@dataclass(frozen=True)
class Built:
    module: GeneratedModule
    elf: Path
    fills: list[bytes]
    expectation: Expectation


def _build(
    library: Path,
    model: Path,
    folder: Path,
    *,
    config: AotConfig | None = None,
    seed: int = 0,
    policy: FirmwarePolicy = DEFAULT_POLICY,
    fills: list[bytes] | None = None,
    mve: bool = True,
) -> Built:
    prefix = "net"
    write_plan(model, folder / "plan", prefix, PLATFORM, config)
    module = generate_module(model, folder / "plan" / f"{prefix}_plan.json", prefix, folder / "gen")
    layout = module.layout
    check_memory_fit(layout, PLATFORM, str(model))
    rng = np.random.default_rng(seed)
    if fills is None:
        fills = [rng.integers(0, 256, layout.activation_bytes[t], dtype=np.uint8).tobytes() for t in layout.inputs]
    (folder / "gen" / CONFIG_SOURCE).write_bytes(firmware_config_source(prefix, policy, fills))
    elf = link_firmware(
        library, [module.source, folder / "gen" / CONFIG_SOURCE], [folder / "gen"], folder / "fw.elf", mve=mve
    )
    expectation = Expectation(
        segments=layout.fences + 1,
        input_count=len(layout.inputs),
        output_bytes=tuple(layout.activation_bytes[t] for t in layout.outputs),
        state=policy.state,
        warmup_invokes=policy.warmup_invokes,
        measured_invokes=policy.measured_invokes,
        arena_bytes=layout.arena.size,
        model_sha256=model_sha256(load_model(model)),
        input_crc32=input_crc32(fills, [layout.activation_bytes[t] for t in layout.inputs]),
    )
    return Built(module, elf, fills, expectation)


def _is_fence(model: object, op: object) -> bool:
    code = model.operator_codes[op.opcodeIndex].customCode  # type: ignore[attr-defined]
    return code in (b"ETHOS_U_STREAM_SPLIT", "ETHOS_U_STREAM_SPLIT")


def _run(built: Built) -> FirmwareRun:
    return read_run(run_on_qemu(built.elf, timeout_s=120), built.expectation)


def _assert_matches_reference(model: Path, built: Built, run: FirmwareRun) -> None:
    unfenced = bytes(serialize(strip_fences(load_model(model))))
    reference = reference_outputs(unfenced, built.fills)[0]
    for sample in run.samples:
        checks = compare_outputs(reference, sample.outputs)
        assert [(c.max_abs_diff, c.differing) for c in checks] == [(0, 0)] * len(checks), checks
        assert sum(sample.segment_ticks) == sample.invoke_ticks


def _fenced(source: Path, after_ops: list[int], folder: Path) -> Path:
    target = folder / f"{source.stem}_fenced.tflite"
    rewrite_model_with_fences(source, after_ops).save(target)
    return target


SYNTH_CASES = [
    ("chain", []),
    ("chain", [2, 5]),
    ("residual", []),
    ("residual", [2, 3]),  # inside the first block (two live tensors), and after its ADD
    ("random", []),
]


@pytest.mark.parametrize(("kind", "fences"), SYNTH_CASES, ids=[f"{k}-{f}" for k, f in SYNTH_CASES])
def test_synthetic_networks_are_bit_exact_on_qemu(
    firmware_build: FirmwareLibrary, tmp_path: Path, kind: str, fences: list[int]
) -> None:
    source = tmp_path / f"{kind}.tflite"
    save_model(synthesize(kind, seed=1), source)
    model = _fenced(source, fences, tmp_path) if fences else source
    built = _build(firmware_build.path, model, tmp_path / "fw", seed=len(fences), mve=firmware_build.mve)
    run = _run(built)
    _assert_matches_reference(model, built, run)
    assert len(run.samples[0].segment_ticks) == len(fences) + 1
    assert run.receipt.initialization == "before_measurement"


@pytest.mark.parametrize("fences", [[], [2, 5, 9]], ids=["unfenced", "fenced"])
def test_shared_models_are_bit_exact_on_qemu(
    firmware_build: FirmwareLibrary, tmp_path: Path, shared_model_path: Path, fences: list[int]
) -> None:
    model = _fenced(shared_model_path, fences, tmp_path) if fences else shared_model_path
    built = _build(firmware_build.path, model, tmp_path / "fw", seed=7, mve=firmware_build.mve)
    run = _run(built)
    _assert_matches_reference(model, built, run)


def test_counts_are_identical_across_two_runs(firmware_library: Path, tmp_path: Path) -> None:
    source = tmp_path / "chain.tflite"
    save_model(synthesize("chain", seed=0), source)
    built = _build(firmware_library, _fenced(source, [3], tmp_path), tmp_path / "fw")
    first, second = _run(built), _run(built)
    assert first.samples == second.samples


def test_a_streaming_schedule_runs_with_the_same_outputs_and_its_copies_counted(
    firmware_library: Path, tmp_path: Path
) -> None:
    source = tmp_path / "residual.tflite"
    save_model(synthesize("residual", seed=2), source)
    model = _fenced(source, [3, 7], tmp_path)
    direct = _build(firmware_library, model, tmp_path / "direct")
    streamed = _build(firmware_library, model, tmp_path / "streamed", config=STREAMING)
    assert streamed.module.layout.units, "the plan streams nothing"
    assert not direct.module.layout.units
    direct_run, streamed_run = _run(direct), _run(streamed)
    _assert_matches_reference(model, streamed, streamed_run)
    loaded = load_model(model)
    fence_positions = [k for k, op in enumerate(loaded.subgraphs[0].operators) if _is_fence(loaded, op)]
    copying = {
        0 if unit.issue_after is None else sum(1 for f in fence_positions if f <= unit.issue_after)
        for unit in streamed.module.layout.units
    }
    for a, b in zip(direct_run.samples, streamed_run.samples, strict=True):
        assert a.outputs == b.outputs
        assert b.invoke_ticks > a.invoke_ticks
        for segment in copying:  # one tick of resolution either way; a unit's copy costs far more
            assert b.segment_ticks[segment] > a.segment_ticks[segment] + 1, (segment, a, b)


def test_generated_sources_and_elf_are_byte_identical_across_folders(firmware_library: Path, tmp_path: Path) -> None:
    source = tmp_path / "chain.tflite"
    save_model(synthesize("chain", seed=3), source)
    first = _build(firmware_library, source, tmp_path / "a")
    second = _build(firmware_library, source, tmp_path / "b" / "deeper")
    for name in ("net_model.c", "net_model.h", "net_layout.json", CONFIG_SOURCE):
        assert (tmp_path / "a" / "gen" / name).read_bytes() == (tmp_path / "b" / "deeper" / "gen" / name).read_bytes()
    assert first.elf.read_bytes() == second.elf.read_bytes()
    assert str(tmp_path).encode() not in first.elf.read_bytes()


def test_arena_is_within_ten_percent_of_the_peak_of_live_tensors(tmp_path: Path, shared_model_path: Path) -> None:
    write_plan(shared_model_path, tmp_path, "net", PLATFORM)
    layout = generate_module(shared_model_path, tmp_path / "net_plan.json", "net", tmp_path / "gen").layout
    assert layout.arena.peak <= layout.arena.size <= 1.1 * layout.arena.peak


def test_an_unsupported_operator_is_refused_naming_it(tmp_path: Path) -> None:
    from ai_edge_litert import schema_py_generated as schema

    from heliabuild.synth.builder import GraphBuilder

    builder = GraphBuilder()
    x, y = builder.activation("x", (2, 3), "float32"), builder.activation("y", (2, 3), "float32")
    builder.operator(schema.BuiltinOperator.GELU, [x], [y])
    source = tmp_path / "gelu.tflite"
    save_model(builder.finish([x], [y], description="one GELU", name="gelu", dynamic_batch=False), source)
    write_plan(source, tmp_path, "net", PLATFORM)
    with pytest.raises(CodegenError, match=r"refuses 1 of 1 operator: no kernel for GELU \(op 0 '0:y'\)$"):
        generate_module(source, tmp_path / "net_plan.json", "net", tmp_path / "gen")
    assert not (tmp_path / "gen").exists()


def test_an_operator_its_contract_refuses_is_refused_with_the_rule(tmp_path: Path) -> None:
    source = tmp_path / "equal.tflite"
    save_model(single_op_model("equal", "float32", [(2, 3), (3,)]), source)  # the planner takes float EQUAL
    write_plan(source, tmp_path, "net", PLATFORM)
    message = r"refuses 1 of 1 operator: refused forms: EQUAL \(op 0 .*: EQUAL: input x is float32, expected int32 "
    message += r"\[comparison.int32\]"
    with pytest.raises(CodegenError, match=message):
        generate_module(source, tmp_path / "net_plan.json", "net", tmp_path / "gen")
    assert not (tmp_path / "gen").exists()


def test_a_plan_of_another_model_is_refused(tmp_path: Path) -> None:
    first, second = tmp_path / "a.tflite", tmp_path / "b.tflite"
    save_model(synthesize("chain", seed=0), first)
    save_model(synthesize("chain", seed=1), second)
    write_plan(first, tmp_path, "net", PLATFORM)
    message = r"model.sha256 \w+ is not the model's sha256 \w+; the plan was made from another model"
    with pytest.raises(CodegenError, match=message):
        generate_module(second, tmp_path / "net_plan.json", "net", tmp_path / "gen")
    assert not (tmp_path / "gen").exists()


def test_an_arena_that_does_not_fit_the_memory_map_is_refused(tmp_path: Path) -> None:
    from heliabuild.codegen.arena import Placement
    from heliabuild.codegen.layout import Layout

    too_big = Layout(
        arena=Placement(offsets={}, size=5 << 20, peak=5 << 20, alignment=16),
        activation_bytes={},
        constants=(),
        constant_of_tensor={},
        units=(),
        pool_bytes=0,
        pool_alignment=16,
        inputs=(),
        outputs=(),
        fences=0,
    )
    with pytest.raises(FirmwareError, match="the activation arena needs 5242880 bytes of ISRAM, and mps3_an547 has"):
        check_memory_fit(too_big, PLATFORM, "big.tflite")


MAX_POOL_OPTIONS = {"padding": "SAME", "activation": "RELU6"}


def _single_op_cases() -> list[tuple[str, object]]:
    from helpers.int8_models import (
        binary_model,
        concatenation_model,
        dequantize_model,
        pad_model,
        pool_model,
        quantize_model,
    )

    from heliabuild.kernels.int8 import Quant

    q = Quant(0.05, -3)
    return [
        ("pad", pad_model([1, 5, 4, 3], [(0, 0), (1, 2), (0, 3), (1, 0)], q)),
        ("concatenation", concatenation_model([[1, 4, 3, 2], [1, 4, 3, 5]], 3, [q, q], q)),
        ("quantize", quantize_model([2, 7], Quant(0.02, 4))),
        ("dequantize", dequantize_model([3, 5], Quant(0.1, -7))),
        ("mul-broadcast", binary_model("mul", [1, 4, 4, 3], [1, 1, 4, 1], q, Quant(0.03, 5), Quant(0.01, 2), "RELU")),
        (
            "max-pool",
            pool_model("max", [1, 9, 7, 4], [1, 5, 4, 4], q, filter_size=(3, 2), stride=(2, 2), **MAX_POOL_OPTIONS),
        ),
    ]


@pytest.mark.parametrize(("name", "model"), _single_op_cases(), ids=[name for name, _ in _single_op_cases()])
def test_single_operator_models_are_bit_exact_on_qemu(
    firmware_library: Path, tmp_path: Path, name: str, model: object
) -> None:
    path = tmp_path / f"{name}.tflite"
    save_model(model, path)  # type: ignore[arg-type]
    built = _build(firmware_library, path, tmp_path / "fw", seed=11)
    if name == "quantize":  # random bytes are not all finite floats; give the float input real values
        values = np.random.default_rng(5).uniform(-3, 3, len(built.fills[0]) // 4).astype(np.float32).tobytes()
        built = _build(firmware_library, path, tmp_path / "fw2", fills=[values])
    _assert_matches_reference(path, built, _run(built))


# --- the operator-contract kernels (c/ops_contracts.c) on the target ---------------------------------

FLOAT32_EDGE_BITS = [
    0x00000000, 0x80000000, 0x7F800000, 0xFF800000, 0x7FC00000, 0xFFC12345, 0x7FA00001, 0x00000001, 0x80000001,
    0x007FFFFF, 0x807FFFFF, 0x00800000, 0x7F7FFFFF, 0xFF7FFFFF, 0x3F800000, 0xBF800000, 0x40C00000, 0x40C00001,
    0x3F7FFFFF, 0x1F000000, 0x5F000000,
]  # fmt: skip
"""+-0, +-inf, NaNs (one with a payload, one signalling), subnormals, FLT_MAX, +-1, 6 and 6 + ulp, tiny and huge."""
INT32_EDGES = [-(2**31), -(2**31) + 1, -(2**24) - 1, -1, 0, 1, 2**24, 2**24 + 1, 2**31 - 2, 2**31 - 1]


def _contract_fill(dtype: str, count: int, rng: np.random.Generator) -> bytes:
    """Input bytes for a contract operator: a third edge values, a third small or random values, a third random
    bit patterns (floats), so zeros meet zeros and infinities, and equal integers occur."""
    pick = rng.integers(0, 3, count)
    if dtype == "bool":
        return rng.integers(0, 2, count).astype(np.uint8).tobytes()
    if dtype == "int32":
        wide = rng.integers(-(2**31), 2**31, count, dtype=np.int64)
        small = rng.integers(-2, 3, count)
        values = np.where(pick == 0, rng.choice(INT32_EDGES, count), np.where(pick == 1, small, wide))
        return values.astype("<i4").tobytes()
    if dtype == "float32":
        edges = np.array(FLOAT32_EDGE_BITS, np.uint32)
        bits = rng.integers(0, 2**32, count, dtype=np.uint64).astype(np.uint32)
        finite = (rng.standard_normal(count) * 10.0 ** rng.integers(-40, 39, count)).astype("<f4").view(np.uint32)
    else:
        edges = np.array([0x0000, 0x8000, 0x7C00, 0xFC00, 0x7E00, 0x0001, 0x03FF, 0x7BFF, 0x3C00, 0x4600], np.uint32)
        bits = rng.integers(0, 2**16, count, dtype=np.uint32)
        finite = (rng.standard_normal(count) * 10.0 ** rng.integers(-6, 5, count)).astype("<f2").view(np.uint16)
    values = np.where(pick == 0, rng.choice(edges, count), np.where(pick == 1, finite, bits))
    return values.astype("<u4" if dtype == "float32" else "<u2").tobytes()


def _contract_fills(path: Path, seed: int) -> list[bytes]:
    from heliabuild.aot.facts import DTYPE_NAMES

    model = load_model(path)
    subgraph = model.subgraphs[0]
    rng = np.random.default_rng(seed)
    fills = []
    for index in subgraph.inputs:
        tensor = subgraph.tensors[index]
        fills.append(_contract_fill(DTYPE_NAMES[int(tensor.type)], int(np.prod(tensor.shape)), rng))
    return fills


def _assert_bitwise(expected: np.ndarray, found: bytes, nan_payloads: bool) -> None:
    """The firmware's output bytes equal `expected`'s; without nan_payloads a NaN only needs a NaN."""
    values = np.frombuffer(found, expected.dtype).reshape(expected.shape)
    width = {1: np.uint8, 2: np.uint16, 4: np.uint32}[expected.dtype.itemsize]
    same = values.view(width) == np.ascontiguousarray(expected).view(width)
    if not nan_payloads and expected.dtype.kind == "f":
        same |= np.isnan(values) & np.isnan(expected)
    bad = np.flatnonzero(~same)
    assert bad.size == 0, f"{bad.size} of {same.size} differ, first {bad[:5]}: {values.flat[bad[0]]!r} vs " + repr(
        expected.flat[bad[0]]
    )


CONTRACT_CASES: dict[str, tuple[str, str, list[tuple[int, ...]], str]] = {
    # name: (operator, dtype, input shapes, activation)
    "div_f32": ("div", "float32", [(1, 8, 8, 16), (1, 1, 1, 16)], "NONE"),
    "div_f32-relu6": ("div", "float32", [(16,), (2, 4, 1)], "RELU6"),
    "div_f32-scalar-numerator-relu": ("div", "float32", [(), (3, 4)], "RELU"),
    "div_f32-relu_n1_to_1": ("div", "float32", [(5, 7), (5, 7)], "RELU_N1_TO_1"),
    "neg_f32": ("neg", "float32", [(1, 8, 8, 16)], "NONE"),
    "squared_difference_f32": ("squared_difference", "float32", [(1, 1, 8, 16), (8, 16)], "NONE"),
    "equal_i32": ("equal", "int32", [(1, 8, 8, 16), (1, 1, 1, 16)], "NONE"),
    "not_equal_i32": ("not_equal", "int32", [(3, 1), (4,)], "NONE"),
    "greater_i32": ("greater", "int32", [(2, 3, 4), (2, 3, 4)], "NONE"),
    "greater_equal_i32": ("greater_equal", "int32", [(), (2, 1, 5)], "NONE"),
    "less_i32": ("less", "int32", [(1, 8, 8, 16), (1, 1, 1, 16)], "NONE"),
    "less_equal_i32": ("less_equal", "int32", [(4, 1, 3, 1), (1, 2, 1, 6)], "NONE"),
    "select_v2_i32": ("select_v2", "int32", [(1, 8, 8, 16), (1, 8, 8, 16), (1, 1, 1, 16)], "NONE"),
    "select_v2_i32-rank6": ("select_v2", "int32", [(2, 1, 2, 1, 2, 3), (2, 2, 1, 2, 1, 1), (1, 1, 1, 1, 2, 3)], "NONE"),
}


@pytest.mark.parametrize("name", list(CONTRACT_CASES))
def test_contract_operators_are_bit_exact_with_litert_on_qemu(
    firmware_library: Path, tmp_path: Path, name: str
) -> None:
    operator, dtype, shapes, activation = CONTRACT_CASES[name]
    path = tmp_path / f"{name}.tflite"
    save_model(single_op_model(operator, dtype, shapes, activation), path)
    fills = _contract_fills(path, seed=len(name))
    built = _build(firmware_library, path, tmp_path / "fw", fills=fills)
    assert tuple(built.module.layout.inputs) == tuple(load_model(path).subgraphs[0].inputs)
    run = _run(built)
    reference = reference_outputs(bytes(serialize(load_model(path))), fills)[0]
    nan_payloads = operator not in ("div", "squared_difference")  # the contract leaves their NaN payloads open
    for sample in run.samples:
        _assert_bitwise(reference[0].values, sample.outputs[0], nan_payloads)
        assert sum(sample.segment_ticks) == sample.invoke_ticks
    values = reference[0].values
    if values.dtype.kind != "f" or np.isfinite(values).all():  # the helper's float difference needs finite values
        _assert_matches_reference(path, built, run)


FP16_CASES: dict[str, tuple[str, list[tuple[int, ...]], str]] = {
    "div_f16": ("div", [(1, 8, 8, 16), (1, 1, 1, 16)], "NONE"),
    "div_f16-relu": ("div", [(4, 16), (16,)], "RELU"),
    "div_f16-relu6": ("div", [(4, 16), (4, 16)], "RELU6"),
    "neg_f16": ("neg", [(1, 8, 8, 16)], "NONE"),
    "squared_difference_f16": ("squared_difference", [(1, 1, 8, 16), (8, 16)], "NONE"),
}


@pytest.mark.parametrize("name", list(FP16_CASES))
def test_fp16_contract_operators_match_the_references_on_qemu(
    firmware_library: Path, tmp_path: Path, name: str
) -> None:
    """LiteRT does not run these FP16 models; the contract's reference (heliabuild.kernels.operators) is the oracle."""
    from heliabuild.kernels.operators import div, neg, squared_difference

    operator, shapes, activation = FP16_CASES[name]
    path = tmp_path / f"{name}.tflite"
    save_model(single_op_model(operator, "float16", shapes, activation), path)
    fills = _contract_fills(path, seed=len(name))
    built = _build(firmware_library, path, tmp_path / "fw", fills=fills)
    inputs = [np.frombuffer(data, "<f2").reshape(shape) for data, shape in zip(fills, shapes, strict=True)]
    if operator == "div":
        expected = div.reference(*inputs, activation)
    elif operator == "neg":
        expected = neg.reference(*inputs)
    else:
        expected = squared_difference.reference(*inputs)
    for sample in _run(built).samples:
        _assert_bitwise(expected, sample.outputs[0], nan_payloads=operator == "neg")


def _div_by_constant(denominator: np.ndarray, activation: str = "NONE") -> object:
    from ai_edge_litert import schema_py_generated as schema

    from heliabuild.synth.builder import GraphBuilder

    builder = GraphBuilder()
    x = builder.activation("x", (4, denominator.size), "float32")
    y = builder.constant("y", denominator.astype(np.float32))
    out = builder.activation("quotient", (4, denominator.size), "float32")
    options = schema.DivOptionsT()
    options.fusedActivationFunction = getattr(schema.ActivationFunctionType, activation)
    builder.operator(schema.BuiltinOperator.DIV, [x, y], [out], options)
    return builder.finish([x], [out], description="DIV by a constant", name="div-constant", dynamic_batch=False)


def test_div_by_a_constant_operand_is_bit_exact_on_qemu(firmware_library: Path, tmp_path: Path) -> None:
    denominator = np.array([0.0, -0.0, 1e-40, 2.0**-149, 3.0, -7.5, 1e30, 0.1], np.float32)
    path = tmp_path / "div_constant.tflite"
    save_model(_div_by_constant(denominator, "RELU_N1_TO_1"), path)  # type: ignore[arg-type]
    fills = _contract_fills(path, seed=3)
    built = _build(firmware_library, path, tmp_path / "fw", fills=fills)
    reference = reference_outputs(bytes(serialize(load_model(path))), fills)[0]
    for sample in _run(built).samples:
        _assert_bitwise(reference[0].values, sample.outputs[0], nan_payloads=False)


def test_a_non_finite_float_constant_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "div_inf.tflite"
    save_model(_div_by_constant(np.array([1.0, np.inf], np.float32)), path)  # type: ignore[arg-type]
    write_plan(path, tmp_path, "net", PLATFORM)
    with pytest.raises(CodegenError, match=r"DIV \(op 0 '0:.*': constant 'y' holds a NaN or an infinity"):
        generate_module(path, tmp_path / "net_plan.json", "net", tmp_path / "gen")
