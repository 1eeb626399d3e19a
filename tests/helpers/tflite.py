"""Hand-built TFLite models in the schema's object API, for tests that need exact control.

`Net` assembles one subgraph; it does not check anything, so tests can also
build models that break the schema's rules and pack them with
`pack_unchecked` (heliabuild's own `serialize` refuses such models).
"""

from __future__ import annotations

from collections.abc import Sequence

import flatbuffers
import numpy as np
from ai_edge_litert import schema_py_generated as schema

from heliabuild.model import Model, load_model, serialize
from heliabuild.model.graph import indices, tensor_name
from heliabuild.model.opcodes import operator_type

T = schema.TensorType
OP = schema.BuiltinOperator
CUSTOM = OP.CUSTOM
FENCE_CODE = "ETHOS_U_STREAM_SPLIT"
# Element sizes of the dense types, as numpy dtypes (for building constants and inputs).
NUMPY_TYPES = {
    T.INT8: np.int8,
    T.UINT8: np.uint8,
    T.INT16: np.int16,
    T.INT32: np.int32,
    T.INT64: np.int64,
    T.FLOAT16: np.float16,
    T.FLOAT32: np.float32,
    T.BOOL: np.bool_,
}
ELEMENT_BYTES = {code: np.dtype(kind).itemsize for code, kind in NUMPY_TYPES.items()}


def quantization(scale: Sequence[float] = (0.5,), zero_point: Sequence[int] = (3,), axis: int = 0):
    q = schema.QuantizationParametersT()
    q.scale = np.array(scale, dtype=np.float32)
    q.zeroPoint = np.array(zero_point, dtype=np.int64)
    q.quantizedDimension = axis
    return q


def opcode(builtin: int, deprecated: int | None = None, custom: str | None = None, version: int = 1):
    entry = schema.OperatorCodeT()
    entry.builtinCode = builtin
    entry.deprecatedBuiltinCode = min(builtin, 127) if deprecated is None else deprecated
    entry.customCode = custom
    entry.version = version
    return entry


class Net:
    """A one-subgraph model under construction; every method returns an index."""

    def __init__(self) -> None:
        self.tensors: list[schema.TensorT] = []
        self.buffers: list[schema.BufferT] = [schema.BufferT()]
        self.codes: list[schema.OperatorCodeT] = []
        self.operators: list[schema.OperatorT] = []

    def buffer(self, data: bytes | np.ndarray | None = None) -> int:
        buffer = schema.BufferT()
        if data is not None:
            buffer.data = np.frombuffer(bytes(data), dtype=np.uint8).copy()
        self.buffers.append(buffer)
        return len(self.buffers) - 1

    def tensor(
        self,
        name: str | None,
        shape: Sequence[int] = (1, 2, 2, 3),
        dtype: int = T.INT8,
        data: bytes | np.ndarray | None = None,
        quant: schema.QuantizationParametersT | bool | None = True,
    ) -> int:
        tensor = schema.TensorT()
        tensor.name = name
        tensor.shape = np.array(shape, dtype=np.int32)
        tensor.type = dtype
        tensor.buffer = self.buffer(data)
        if quant is True:
            quant = quantization() if dtype in (T.INT8, T.UINT8, T.INT16) else None
        tensor.quantization = quant or None
        self.tensors.append(tensor)
        return len(self.tensors) - 1

    def code(self, entry: schema.OperatorCodeT) -> int:
        self.codes.append(entry)
        return len(self.codes) - 1

    def op(self, builtin: int, inputs: Sequence[int], outputs: Sequence[int], custom: str | None = None) -> int:
        key = (builtin, custom)
        index = next(
            (i for i, c in enumerate(self.codes) if (max(c.builtinCode, c.deprecatedBuiltinCode), c.customCode) == key),
            None,
        )
        if index is None:
            index = self.code(opcode(builtin, custom=custom))
        operator = schema.OperatorT()
        operator.opcodeIndex = index
        operator.inputs = list(inputs)
        operator.outputs = list(outputs)
        self.operators.append(operator)
        return len(self.operators) - 1

    def root(
        self,
        inputs: Sequence[int],
        outputs: Sequence[int],
        signature: bool = True,
        metadata: bool = True,
        subgraph_name: str | None = "main",
    ) -> schema.ModelT:
        subgraph = schema.SubGraphT()
        subgraph.tensors = self.tensors
        subgraph.inputs = list(inputs)
        subgraph.outputs = list(outputs)
        subgraph.operators = self.operators
        subgraph.name = subgraph_name
        root = schema.ModelT()
        root.version = 3
        root.description = "hand-built test model"
        root.operatorCodes = self.codes
        root.subgraphs = [subgraph]
        root.buffers = self.buffers
        if metadata:
            entry = schema.MetadataT()
            entry.name = "min_runtime_version"
            entry.buffer = self.buffer(b"1.14.0".ljust(16, b"\0"))
            root.metadata = [entry]
        if signature:
            sig = schema.SignatureDefT()
            sig.signatureKey = "serving_default"
            sig.subgraphIndex = 0
            sig.inputs = [tensor_map(f"in_{n}", t) for n, t in enumerate(inputs)]
            sig.outputs = [tensor_map(f"out_{n}", t) for n, t in enumerate(outputs)]
            root.signatureDefs = [sig]
        return root

    def model(self, inputs: Sequence[int], outputs: Sequence[int], name: str = "<test>", **options) -> Model:
        return Model(root=self.root(inputs, outputs, **options), name=name)


def tensor_map(name: str, index: int) -> schema.TensorMapT:
    entry = schema.TensorMapT()
    entry.name = name
    entry.tensorIndex = index
    return entry


def chain(
    n_ops: int = 4,
    dtype: int = T.INT8,
    shape: Sequence[int] = (1, 2, 2, 3),
    quant: schema.QuantizationParametersT | bool | None = True,
) -> Net:
    """input -> op0 -> t0 -> op1 -> t1 ... -> output; each op is ADD(previous, constant c<i>)."""
    net = Net()
    element = ELEMENT_BYTES.get(dtype, 1)
    x = net.tensor("input", shape, dtype, quant=quant)
    for i in range(n_ops):
        constant = net.tensor(f"c{i}", shape, dtype, data=bytes(int(np.prod(shape)) * element), quant=quant)
        name = "output" if i == n_ops - 1 else f"t{i}"
        y = net.tensor(name, shape, dtype, quant=quant)
        net.op(OP.ADD, [x, constant], [y])
        x = y
    return net


def chain_model(n_ops: int = 4, dtype: int = T.INT8, **options) -> Model:
    net = chain(n_ops, dtype)
    return net.model([0], [len(net.tensors) - 1], **options)


def pack_unchecked(root: schema.ModelT) -> bytes:
    """The root packed with the plain generated code: no index checks, no alignment."""
    builder = flatbuffers.Builder(1024)
    builder.Finish(root.Pack(builder), file_identifier=b"TFL3")
    return bytes(builder.Output())


def reload(model: Model) -> Model:
    """The model as a reader of its serialized bytes sees it."""
    return load_model(bytes(serialize(model)))


def op_types(model: Model) -> list[str]:
    codes = model.operator_codes
    return [operator_type(codes[op.opcodeIndex]) for op in model.subgraphs[0].operators or []]


def names(model: Model, tensors: Sequence[int] | object) -> list[str]:
    table = model.subgraphs[0].tensors
    return [tensor_name(table[t]) for t in indices(tensors)]


def fence_positions(model: Model) -> list[int]:
    return [p for p, kind in enumerate(op_types(model)) if kind == FENCE_CODE]


def run_litert(content: bytes, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
    from ai_edge_litert.interpreter import Interpreter

    interpreter = Interpreter(model_content=bytes(content))
    interpreter.allocate_tensors()
    for detail, value in zip(interpreter.get_input_details(), inputs, strict=True):
        interpreter.set_tensor(detail["index"], value)
    interpreter.invoke()
    return [interpreter.get_tensor(d["index"]).copy() for d in interpreter.get_output_details()]


def random_inputs(content: bytes, seed: int) -> list[np.ndarray]:
    from ai_edge_litert.interpreter import Interpreter

    rng = np.random.default_rng(seed)
    interpreter = Interpreter(model_content=bytes(content))
    arrays = []
    for detail in interpreter.get_input_details():
        info = np.iinfo(detail["dtype"])
        arrays.append(rng.integers(info.min, info.max + 1, size=detail["shape"], dtype=detail["dtype"]))
    return arrays


def mixed_model() -> Model:
    """int8 ADD -> DEQUANTIZE -> float ADD -> QUANTIZE -> int8 ADD: the middle three stay on the CPU."""
    net = Net()
    shape = (1, 4, 4, 8)
    source = net.tensor("input", shape)
    t0 = net.tensor("t0", shape)
    net.op(OP.ADD, [source, net.tensor("c0", shape, data=bytes(128))], [t0])
    f0 = net.tensor("f0", shape, T.FLOAT32, quant=None)
    net.op(OP.DEQUANTIZE, [t0], [f0])
    ones = np.ones(shape, np.float32).tobytes()
    f1 = net.tensor("f1", shape, T.FLOAT32, quant=None)
    net.op(OP.ADD, [f0, net.tensor("cf", shape, T.FLOAT32, data=ones, quant=None)], [f1])
    q1 = net.tensor("q1", shape)
    net.op(OP.QUANTIZE, [f1], [q1])
    out = net.tensor("output", shape)
    net.op(OP.ADD, [q1, net.tensor("c2", shape, data=bytes(128))], [out])
    return net.model([source], [out])
