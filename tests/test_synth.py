"""Tests of heliabuild.synth: determinism, schema validity, LiteRT execution and Vela mapping."""

from __future__ import annotations

import subprocess
import sys
import warnings
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from ai_edge_litert import schema_py_generated as schema
from ai_edge_litert.interpreter import Interpreter
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from heliabuild.errors import HeliaError
from heliabuild.model.io import Model, load_model, save_model, serialize
from heliabuild.synth import (
    KINDS,
    SEEDED_KINDS,
    chain_network,
    int8_network,
    large_model,
    large_model_operator_count,
    residual_network,
    single_op_model,
    synthesize,
)

OP = schema.BuiltinOperator
OP_NAMES = {value: name for name, value in vars(OP).items() if not name.startswith("_")}
SMALL_KINDS = [kind for kind in KINDS if kind != "large"]
SMALL_SEEDED_KINDS = sorted(SEEDED_KINDS - {"large"})
VELA_ACCELERATORS = ["ethos-u55-128", "ethos-u85-256"]


def model_bytes(model: Model) -> bytes:
    return bytes(serialize(model))


def operator_names(model: Model) -> list[str]:
    codes = model.operator_codes
    return [OP_NAMES[codes[op.opcodeIndex].builtinCode] for op in model.subgraphs[0].operators]


def interpreter(model: Model, preserve: bool = False) -> Interpreter:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # preserve_all_tensors is "for debugging"
        runner = Interpreter(model_content=model_bytes(model), experimental_preserve_all_tensors=preserve)
    runner.allocate_tensors()
    return runner


def run_int8(runner: Interpreter, seed: int) -> np.ndarray:
    detail = runner.get_input_details()[0]
    data = np.random.default_rng(seed).integers(-128, 128, size=detail["shape"], dtype=np.int8)
    runner.set_tensor(detail["index"], data)
    runner.invoke()
    return runner.get_tensor(runner.get_output_details()[0]["index"]).copy()


def _is_constant(tensor: schema.TensorT, model: Model) -> bool:
    return model.buffer_data(tensor.buffer) is not None


def check_converter_like(model: Model, dynamic_batch: bool = True) -> None:
    """Structure every synthesized model shares with converter output."""
    root = model.root
    subgraph = model.subgraphs[0]
    tensors = subgraph.tensors
    assert root.version == 3
    assert root.description
    assert model.buffer_data(0) is None
    names = [t.name for t in tensors]
    assert all(names) and len(set(names)) == len(names)
    runtime = [t for t in tensors if not _is_constant(t, model)]
    runtime_buffers = [t.buffer for t in runtime]
    assert 0 not in runtime_buffers and len(set(runtime_buffers)) == len(runtime_buffers)
    for code in model.operator_codes:
        assert code.deprecatedBuiltinCode == min(code.builtinCode, 127)
        assert code.version >= 1
    (metadata,) = root.metadata
    assert metadata.name == b"min_runtime_version" or metadata.name == "min_runtime_version"
    assert model.buffer_data(metadata.buffer) is not None
    (signature,) = root.signatureDefs
    assert signature.signatureKey in ("serving_default", b"serving_default")
    assert [e.tensorIndex for e in signature.inputs] == list(subgraph.inputs)
    assert [e.tensorIndex for e in signature.outputs] == list(subgraph.outputs)
    for index in (*subgraph.inputs, *subgraph.outputs):
        signature_shape = tensors[index].shapeSignature
        if dynamic_batch:
            assert list(signature_shape) == [-1, *list(tensors[index].shape)[1:]]
        else:
            assert signature_shape is None or len(signature_shape) == 0


def check_int8_quantization(model: Model) -> None:
    """Int8 activations per tensor, per-channel symmetric conv weights, int32 bias at in*w scale."""
    tensors = model.subgraphs[0].tensors
    for tensor in tensors:
        if not _is_constant(tensor, model):
            assert tensor.type == schema.TensorType.INT8, tensor.name
            assert len(tensor.quantization.scale) == 1 and len(tensor.quantization.zeroPoint) == 1
            assert tensor.quantization.scale[0] > 0
    for op, name in zip(model.subgraphs[0].operators, operator_names(model), strict=True):
        if name in ("CONV_2D", "DEPTHWISE_CONV_2D", "FULLY_CONNECTED"):
            x, w, b = (tensors[i] for i in op.inputs)
            assert w.type == schema.TensorType.INT8 and b.type == schema.TensorType.INT32
            assert not any(w.quantization.zeroPoint) and not any(b.quantization.zeroPoint)
            axis = {"CONV_2D": 0, "DEPTHWISE_CONV_2D": 3, "FULLY_CONNECTED": 0}[name]
            channels = 1 if name == "FULLY_CONNECTED" else w.shape[axis]
            assert w.quantization.quantizedDimension == axis
            assert len(w.quantization.scale) == channels == len(b.quantization.scale)
            expected = np.float32(x.quantization.scale[0]) * np.asarray(w.quantization.scale, np.float32)
            np.testing.assert_allclose(b.quantization.scale, expected, rtol=1e-6)
            weights = np.frombuffer(model.buffer_data(w.buffer).tobytes(), np.int8)
            assert weights.min() >= -127
        if name == "SOFTMAX":
            out = tensors[op.outputs[0]].quantization
            assert out.scale[0] == pytest.approx(1 / 256) and out.zeroPoint[0] == -128
        if name in ("AVERAGE_POOL_2D", "RESHAPE"):
            a, b = tensors[op.inputs[0]].quantization, tensors[op.outputs[0]].quantization
            assert (a.scale, a.zeroPoint) == (b.scale, b.zeroPoint)


def check_not_saturated(model: Model) -> None:
    """Two random inputs give different logits, and no activation is constant or mostly clipped high."""
    runner = interpreter(model, preserve=True)
    first = run_int8(runner, seed=101)
    activations = {
        d["name"]: runner.get_tensor(d["index"]).copy()
        for d in runner.get_tensor_details()
        if not d["name"].endswith(("/kernel", "/bias", "/shape"))
    }
    second = run_int8(runner, seed=202)
    assert not np.array_equal(first, second)
    for name, values in activations.items():
        assert values.min() < values.max(), f"{name} is constant"
        limit = 0.05 if values.size >= 64 else 0.25
        assert np.mean(values == 127) <= limit, f"{name} saturates"


# ---------------------------------------------------------------- every kind


@pytest.mark.parametrize("kind", SMALL_KINDS)
def test_kind_builds_deterministically_and_round_trips(kind: str) -> None:
    data = model_bytes(synthesize(kind, seed=3))
    assert data == model_bytes(synthesize(kind, seed=3))
    assert model_bytes(load_model(data)) == data
    assert len(data) < 100_000


@pytest.mark.parametrize("kind", SMALL_SEEDED_KINDS)
def test_seeded_kind_depends_on_seed(kind: str) -> None:
    assert model_bytes(synthesize(kind, seed=0)) != model_bytes(synthesize(kind, seed=1))


def test_kws_is_an_alias_of_chain() -> None:
    assert model_bytes(synthesize("kws", 5)) == model_bytes(synthesize("chain", 5))


def test_every_kind_is_described() -> None:
    assert set(KINDS) >= SEEDED_KINDS
    assert all(isinstance(text, str) and text for text in KINDS.values())


def test_unknown_kind_names_the_known_kinds() -> None:
    with pytest.raises(HeliaError) as caught:
        synthesize("resnet50")
    assert "resnet50" in str(caught.value) and "chain" in str(caught.value) and "div_f32" in str(caught.value)


@pytest.mark.parametrize("seed", [-1, 1.5, "3", True])
def test_bad_seed_is_rejected(seed: object) -> None:
    with pytest.raises(HeliaError, match="seed"):
        synthesize("chain", seed)  # type: ignore[arg-type]


def test_save_model_writes_the_serialized_bytes(tmp_path: Path) -> None:
    model = synthesize("chain", 2)
    save_model(model, tmp_path / "chain.tflite")
    assert (tmp_path / "chain.tflite").read_bytes() == model_bytes(model)


# ---------------------------------------------------------------- int8 networks


def test_chain_structure() -> None:
    model = chain_network(0)
    assert operator_names(model) == [
        "CONV_2D",
        "DEPTHWISE_CONV_2D",
        "CONV_2D",
        "DEPTHWISE_CONV_2D",
        "CONV_2D",
        "AVERAGE_POOL_2D",
        "RESHAPE",
        "FULLY_CONNECTED",
        "SOFTMAX",
    ]
    subgraph = model.subgraphs[0]
    assert list(subgraph.tensors[subgraph.inputs[0]].shape) == [1, 49, 10, 1]
    assert "conv2d/Relu" in [t.name for t in subgraph.tensors]


def test_residual_structure_has_blocks_with_two_live_tensors() -> None:
    model = residual_network(0)
    names = operator_names(model)
    assert names[0] == "CONV_2D" and names[-4:] == ["AVERAGE_POOL_2D", "RESHAPE", "FULLY_CONNECTED", "SOFTMAX"]
    assert names.count("ADD") == 3
    subgraph = model.subgraphs[0]
    tensors = subgraph.tensors
    assert list(tensors[subgraph.inputs[0]].shape) == [1, 32, 32, 3]
    one_by_one_skips = [
        op
        for op, name in zip(subgraph.operators, names, strict=True)
        if name == "CONV_2D" and list(tensors[op.inputs[1]].shape)[1:3] == [1, 1]
    ]
    assert len(one_by_one_skips) == 2
    # A cut after any operator inside a block carries the skip tensor and the main path.
    operators = subgraph.operators
    for cut in range(len(operators) - 1):
        produced = {t for op in operators[: cut + 1] for t in op.outputs} | set(subgraph.inputs)
        consumed_later = {t for op in operators[cut + 1 :] for t in op.inputs}
        live = produced & consumed_later
        inside_block = "ADD" in names[cut + 1 :] and names[cut] != "ADD" and cut > 0
        assert len(live) >= (2 if inside_block else 1), (cut, names[cut])


@pytest.mark.parametrize("build", [chain_network, residual_network], ids=["chain", "residual"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_int8_networks_are_valid_and_run_unsaturated(build: Callable[[int], Model], seed: int) -> None:
    model = build(seed)
    check_converter_like(model)
    check_int8_quantization(model)
    check_not_saturated(model)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(min_value=0, max_value=2**32 - 1),
    depth=st.one_of(st.none(), st.integers(min_value=0, max_value=6)),
    residual=st.one_of(st.none(), st.booleans()),
)
def test_int8_network_property(seed: int, depth: int | None, residual: bool | None) -> None:
    model = int8_network(seed, depth=depth, residual=residual)
    data = model_bytes(model)
    assert data == model_bytes(int8_network(seed, depth=depth, residual=residual))
    assert model_bytes(load_model(data)) == data
    assert len(data) < 100_000
    names = operator_names(model)
    assert set(names) <= {
        "CONV_2D",
        "DEPTHWISE_CONV_2D",
        "ADD",
        "FULLY_CONNECTED",
        "AVERAGE_POOL_2D",
        "RESHAPE",
        "SOFTMAX",
    }
    if residual:
        assert "ADD" in names or depth == 0
    if residual is False:
        assert "ADD" not in names
    check_converter_like(model)
    check_int8_quantization(model)
    run_int8(interpreter(model), seed=seed % 1000)


def test_int8_network_varies_operator_mix() -> None:
    mixes = {tuple(sorted(set(operator_names(int8_network(seed))))) for seed in range(20)}
    assert len(mixes) >= 3
    depths = {len(int8_network(seed).subgraphs[0].operators) for seed in range(20)}
    assert len(depths) >= 4


def test_int8_network_rejects_negative_depth() -> None:
    with pytest.raises(ValueError, match="depth"):
        int8_network(0, depth=-1)


# ---------------------------------------------------------------- Vela


def compile_with_vela(model: Model, accelerator: str, directory: Path) -> tuple[Model, str]:
    source = directory / "model.tflite"
    save_model(model, source)
    output_dir = directory / accelerator
    command = [
        sys.executable,
        "-m",
        "ethosu.vela",
        "--accelerator-config",
        accelerator,
        str(source),
        "--output-dir",
        str(output_dir),
    ]
    result = subprocess.run(command, capture_output=True, text=True, timeout=300, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    return load_model(output_dir / "model_vela.tflite"), result.stdout


def assert_fully_on_npu(compiled: Model, summary: str) -> None:
    (subgraph,) = compiled.subgraphs
    assert len(subgraph.operators) == 1
    code = compiled.operator_codes[subgraph.operators[0].opcodeIndex]
    assert code.customCode in ("ethos-u", b"ethos-u")
    assert "CPU operators = 0 (0.0%)" in summary


@pytest.mark.slow
@pytest.mark.parametrize("accelerator", VELA_ACCELERATORS)
@pytest.mark.parametrize("kind", ["chain", "residual"])
def test_vela_maps_network_fully_to_npu(kind: str, accelerator: str, tmp_path: Path) -> None:
    compiled, summary = compile_with_vela(synthesize(kind, seed=1), accelerator, tmp_path)
    assert_fully_on_npu(compiled, summary)


@pytest.mark.slow
@pytest.mark.parametrize("seed", [7, 8, 9])
def test_vela_maps_random_networks_fully_to_npu(seed: int, tmp_path: Path) -> None:
    accelerator = VELA_ACCELERATORS[seed % 2]
    compiled, summary = compile_with_vela(int8_network(seed, residual=True), accelerator, tmp_path)
    assert_fully_on_npu(compiled, summary)


# ---------------------------------------------------------------- single-operator models


def _inputs_for(model: Model, seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    values: dict[str, np.ndarray] = {}
    for index in model.subgraphs[0].inputs:
        tensor = model.subgraphs[0].tensors[index]
        name = tensor.name.decode() if isinstance(tensor.name, bytes) else tensor.name
        shape = tuple(tensor.shape)
        if tensor.type == schema.TensorType.BOOL:
            values[name] = rng.integers(0, 2, size=shape).astype(bool)
        elif tensor.type == schema.TensorType.INT32:
            values[name] = rng.integers(-3, 4, size=shape).astype(np.int32)
        else:
            magnitude = rng.uniform(0.5, 4.0, size=shape)
            values[name] = (magnitude * rng.choice([-1.0, 1.0], size=shape)).astype(np.float32)
    return values


REFERENCE: dict[str, Callable[..., np.ndarray]] = {
    "div": np.divide,
    "neg": np.negative,
    "squared_difference": lambda x, y: np.square(x - y),
    "equal": np.equal,
    "not_equal": np.not_equal,
    "greater": np.greater,
    "greater_equal": np.greater_equal,
    "less": np.less,
    "less_equal": np.less_equal,
    "select_v2": np.where,
}


def check_single_op(model: Model, op: str, activation: str = "NONE") -> None:
    check_converter_like(model, dynamic_batch=False)
    runner = interpreter(model)
    values = _inputs_for(model, seed=len(op))
    subgraph = model.subgraphs[0]
    for index, value in zip(subgraph.inputs, values.values(), strict=True):
        runner.set_tensor(index, value)
    runner.invoke()
    got = runner.get_tensor(subgraph.outputs[0])
    expected = REFERENCE[op](*values.values())
    if activation == "RELU":
        expected = np.maximum(expected, 0)
    assert got.shape == expected.shape and got.dtype == expected.dtype
    np.testing.assert_allclose(got, expected, rtol=1e-6)


@pytest.mark.parametrize("kind", [k for k in KINDS if k.endswith(("_f32", "_i32"))])
def test_single_op_kinds_match_numpy(kind: str) -> None:
    op = kind.rsplit("_", 1)[0]
    check_single_op(synthesize(kind), op)


@pytest.mark.parametrize(
    ("op", "dtype", "shapes", "activation"),
    [
        ("div", "float32", [[2, 1, 3], [4, 1]], "RELU"),
        ("div", "float32", [[5], []], "NONE"),
        ("squared_difference", "float32", [[1, 3, 1, 2], [3, 4, 1]], "NONE"),
        ("neg", "int32", [[3, 5]], "NONE"),
        ("equal", "int32", [[4, 1], [1, 6]], "NONE"),
        ("less", "float32", [[2, 3], [3]], "NONE"),
        ("greater_equal", "int32", [[1], [2, 2, 2]], "NONE"),
        ("select_v2", "int32", [[2, 1, 4], [3, 1], [1, 4]], "NONE"),
        ("select_v2", "float32", [[4], [2, 4], [2, 1]], "NONE"),
    ],
)
def test_single_op_broadcasting_matches_numpy(op: str, dtype: str, shapes: list[list[int]], activation: str) -> None:
    check_single_op(single_op_model(op, dtype, shapes, activation), op, activation)


@pytest.mark.parametrize("kind", [k for k in KINDS if k.endswith("_f16")])
def test_float16_kinds_are_valid_flatbuffers(kind: str) -> None:
    model = load_model(model_bytes(synthesize(kind)))
    check_converter_like(model, dynamic_batch=False)
    tensors = model.subgraphs[0].tensors
    assert {tensors[i].type for i in model.subgraphs[0].inputs} == {schema.TensorType.FLOAT16}
    assert tensors[model.subgraphs[0].outputs[0]].type == schema.TensorType.FLOAT16


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("mul", "float32", [[1], [1]]), "unknown operator 'mul'"),
        (("div", "int8", [[1], [1]]), "data type 'int8'"),
        (("div", "float32", [[1]]), "1 input shapes given, expected 2"),
        (("equal", "int32", [[2, 3], [4]]), "do not broadcast"),
        (("neg", "float32", [[0, 2]]), "positive integer dimensions"),
        (("neg", "float32", [[2]], "RELU"), "fused activation 'RELU'"),
        (("div", "float32", [[2], [2]], "SIGMOID"), "fused activation 'SIGMOID'"),
    ],
)
def test_single_op_bad_arguments_raise_helia_error(args: tuple, message: str) -> None:
    with pytest.raises(HeliaError, match=message):
        single_op_model(*args)


# ---------------------------------------------------------------- large


@pytest.fixture(scope="module")
def large_bytes() -> bytes:
    return model_bytes(synthesize("large", seed=0))


def test_large_model_size_and_operators(large_bytes: bytes) -> None:
    model = load_model(large_bytes)
    operators = len(model.subgraphs[0].operators)
    assert 900 <= operators <= 1100
    assert operators == large_model_operator_count()
    weight_bytes = sum(len(b.data) for b in model.buffers if b.data is not None)
    assert 40_000_000 <= weight_bytes <= 60_000_000
    check_converter_like(model)
    assert model_bytes(model) == large_bytes


def test_large_model_is_deterministic(large_bytes: bytes) -> None:
    assert model_bytes(synthesize("large", seed=0)) == large_bytes
    assert model_bytes(large_model(1, blocks=3)) != model_bytes(large_model(0, blocks=3))


def test_large_model_loads_in_litert(large_bytes: bytes) -> None:
    runner = Interpreter(model_content=large_bytes)
    runner.allocate_tensors()
    assert len(runner.get_tensor_details()) > 2000
