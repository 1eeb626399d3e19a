"""Whole int8 networks operator by operator: every operator of the real MLPerf Tiny models (DS-CNN KWS,
ResNet-8) and of heliabuild.synth's networks, fed LiteRT's own input tensors, must give LiteRT's output
tensor byte for byte through the C kernels, with parameters derived from the model's tensors by
heliabuild.kernels.int8 the way the firmware generator derives them."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from ai_edge_litert import schema_py_generated as schema
from ai_edge_litert.interpreter import Interpreter, OpResolverType

from heliabuild.kernels import int8
from heliabuild.kernels.int8 import Int8Kernels, Quant
from heliabuild.kernels.native import load_host_library
from heliabuild.model import serialize
from heliabuild.model.io import Model
from heliabuild.synth import chain_network, residual_network, synthesize

OP = schema.BuiltinOperator
OP_NAMES = {value: name for name, value in vars(OP).items() if not name.startswith("_")}
ACTIVATIONS = {
    schema.ActivationFunctionType.NONE: "NONE",
    schema.ActivationFunctionType.RELU: "RELU",
    schema.ActivationFunctionType.RELU6: "RELU6",
    schema.ActivationFunctionType.RELU_N1_TO_1: "RELU_N1_TO_1",
}
PADDINGS = {schema.Padding.SAME: "SAME", schema.Padding.VALID: "VALID"}


@pytest.fixture(scope="module")
def kernels(host_kernel_library: Path) -> Int8Kernels:
    return Int8Kernels(load_host_library(host_kernel_library))


class Network:
    """A model, its tensors after one LiteRT reference invoke (all preserved), and per-tensor facts."""

    def __init__(self, model: Model, seed: int) -> None:
        self.root = model.root
        self.graph = model.root.subgraphs[0]
        interpreter = Interpreter(
            model_content=bytes(serialize(model)),
            experimental_op_resolver_type=OpResolverType.BUILTIN_REF,
            experimental_preserve_all_tensors=True,
        )
        interpreter.allocate_tensors()
        rng = np.random.default_rng(seed)
        for detail in interpreter.get_input_details():
            interpreter.set_tensor(detail["index"], rng.integers(-128, 128, size=detail["shape"], dtype=np.int8))
        interpreter.invoke()
        self.values = {i: interpreter.get_tensor(i) for i in range(len(self.graph.tensors)) if self._has_value(i)}

    def _has_value(self, index: int) -> bool:
        tensor = self.graph.tensors[index]
        return tensor.type in (schema.TensorType.INT8, schema.TensorType.INT32, schema.TensorType.FLOAT32)

    def quant(self, index: int) -> Quant:
        q = self.graph.tensors[index].quantization
        return Quant(q.scale[0], q.zeroPoint[0] if q.zeroPoint is not None and len(q.zeroPoint) else 0)

    def scales(self, index: int) -> np.ndarray:
        return np.asarray(self.graph.tensors[index].quantization.scale, np.float32)

    def value(self, index: int) -> np.ndarray | None:
        return None if index < 0 else self.values[index]


def code(root: schema.ModelT, operator: schema.OperatorT) -> int:
    opcode = root.operatorCodes[operator.opcodeIndex]
    return max(opcode.builtinCode, opcode.deprecatedBuiltinCode)


def run_operator(k: Int8Kernels, net: Network, operator: schema.OperatorT) -> np.ndarray:
    """The C kernel's output for `operator`, from LiteRT's values of its inputs."""
    op = code(net.root, operator)
    options = operator.builtinOptions
    ins, out = list(operator.inputs), operator.outputs[0]
    x = net.value(ins[0])
    activation = ACTIVATIONS[getattr(options, "fusedActivationFunction", 0)]
    if op in (OP.CONV_2D, OP.DEPTHWISE_CONV_2D):
        depthwise = op == OP.DEPTHWISE_CONV_2D
        w = net.value(ins[1])
        params = int8.conv_params(
            x.shape, w.shape, net.quant(ins[0]), net.scales(ins[1]), net.quant(out),
            stride=(options.strideH, options.strideW), dilation=(options.dilationHFactor, options.dilationWFactor),
            padding=PADDINGS[options.padding], activation=activation, depthwise=depthwise,
        )  # fmt: skip
        return k.conv(params, x, w, net.value(ins[2]) if len(ins) > 2 else None)
    if op == OP.FULLY_CONNECTED:
        w = net.value(ins[1])
        params = int8.fully_connected_params(
            x.size, w.shape, net.quant(ins[0]), net.scales(ins[1]), net.quant(out), activation
        )
        return k.fully_connected(params, x, w, net.value(ins[2]) if len(ins) > 2 else None)
    if op in (OP.AVERAGE_POOL_2D, OP.MAX_POOL_2D):
        params = int8.pool_params(
            x.shape, (options.filterHeight, options.filterWidth), net.quant(out),
            stride=(options.strideH, options.strideW), padding=PADDINGS[options.padding], activation=activation,
        )  # fmt: skip
        return k.pool("average" if op == OP.AVERAGE_POOL_2D else "max", params, x)
    if op in (OP.ADD, OP.MUL):
        derive = int8.add_params if op == OP.ADD else int8.mul_params
        params = derive(net.quant(ins[0]), net.quant(ins[1]), net.quant(out), activation)
        return k.binary("add" if op == OP.ADD else "mul", params, x, net.value(ins[1]))
    if op == OP.RESHAPE:
        return k.reshape(x, net.values[out].shape)
    if op == OP.SOFTMAX:
        return k.softmax(int8.softmax_params(net.quant(ins[0]).scale, options.beta), x)
    if op == OP.PAD:
        paddings = [tuple(int(v) for v in row) for row in net.value(ins[1])]
        return k.pad(x, paddings, net.quant(out).zero_point)
    if op == OP.CONCATENATION:
        return k.concatenation([net.value(i) for i in ins], options.axis)
    if op == OP.QUANTIZE:
        return k.quantize(x, net.quant(out))
    if op == OP.DEQUANTIZE:
        return k.dequantize(x, net.quant(ins[0]))
    raise AssertionError(f"no int8 kernel for {OP_NAMES.get(op, op)}")


def check_network(k: Int8Kernels, model: Model, seed: int = 0) -> list[str]:
    """Every operator bit-exact; returns the operator names, in order."""
    net = Network(model, seed)
    names = []
    for number, operator in enumerate(net.graph.operators):
        name = OP_NAMES[code(net.root, operator)]
        expected = net.values[operator.outputs[0]]
        got = run_operator(k, net, operator)
        assert got.tobytes() == expected.tobytes(), f"operator {number} ({name}) differs"
        names.append(name)
    return names


@pytest.mark.parametrize("seed", [0, 1])
def test_real_mlperf_tiny_models_are_bit_exact_operator_by_operator(
    kernels: Int8Kernels, shared_model_path: Path, seed: int
) -> None:
    from heliabuild.model import load_model

    names = check_network(kernels, load_model(shared_model_path), seed)
    assert {"CONV_2D", "FULLY_CONNECTED", "AVERAGE_POOL_2D", "RESHAPE", "SOFTMAX"} <= set(names)


@pytest.mark.parametrize("build", [chain_network, residual_network], ids=["chain", "residual"])
@pytest.mark.parametrize("seed", [0, 3])
def test_synthetic_networks_are_bit_exact_operator_by_operator(kernels: Int8Kernels, build, seed: int) -> None:
    names = check_network(kernels, build(seed), seed)
    assert "CONV_2D" in names and "SOFTMAX" in names


@pytest.mark.parametrize(
    ("kind", "seed"), [("chain", 0), ("kws", 0), ("residual", 0), *(("random", s) for s in range(6))]
)
def test_int8_synth_kinds_are_bit_exact_operator_by_operator(kernels: Int8Kernels, kind: str, seed: int) -> None:
    check_network(kernels, synthesize(kind, seed), seed)
