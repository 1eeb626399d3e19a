"""A small helper that assembles one-subgraph TFLite models in the schema's object API.

GraphBuilder appends tensors, buffers, operator codes and operators in call
order and finishes them into a heliabuild.model.io.Model that looks like
converter output: buffer 0 is the empty sentinel, every activation tensor has
its own empty buffer, opcodes carry both builtin code fields, the model has a
description, a `min_runtime_version` metadata entry and a `serving_default`
signature def. Nothing depends on dict order or time, so the same calls give
byte-identical models.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from ai_edge_litert import schema_py_generated as schema

from heliabuild.model.io import Model

SCHEMA_VERSION = 3
SIGNATURE_KEY = "serving_default"
MIN_RUNTIME_VERSION = "1.14.0"

_TENSOR_TYPES: dict[str, int] = {
    "float32": schema.TensorType.FLOAT32,
    "float16": schema.TensorType.FLOAT16,
    "int32": schema.TensorType.INT32,
    "uint8": schema.TensorType.UINT8,
    "int64": schema.TensorType.INT64,
    "bool": schema.TensorType.BOOL,
    "int16": schema.TensorType.INT16,
    "int8": schema.TensorType.INT8,
}


def tensor_type(dtype: str | np.dtype) -> int:
    """The schema TensorType of a numpy dtype (or its name); ValueError for others."""
    name = np.dtype(dtype).name
    if name not in _TENSOR_TYPES:
        raise ValueError(f"no TFLite tensor type for numpy dtype {name!r}")
    return _TENSOR_TYPES[name]


def _options_type(options: object) -> int:
    """The BuiltinOptions union tag of an options object such as Conv2DOptionsT."""
    name = type(options).__name__
    if not name.endswith("T") or not hasattr(schema.BuiltinOptions, name[:-1]):
        raise ValueError(f"{name} is not a builtin options class of the TFLite schema")
    return int(getattr(schema.BuiltinOptions, name[:-1]))


def _payload(array: np.ndarray) -> np.ndarray:
    """The little-endian bytes of `array` as a flat uint8 array."""
    contiguous = np.ascontiguousarray(array, dtype=array.dtype.newbyteorder("<"))
    return contiguous.reshape(-1).view(np.uint8)


class GraphBuilder:
    """Builds one subgraph; indices returned by `constant`/`activation` are tensor indices.

    Tensor names must be unique (ValueError otherwise). Operator codes are
    deduplicated by (builtin code, version) in order of first use.
    """

    def __init__(self) -> None:
        self.tensors: list[schema.TensorT] = []
        self.buffers: list[schema.BufferT] = [schema.BufferT()]  # buffer 0: the empty sentinel
        self.operators: list[schema.OperatorT] = []
        self.operator_codes: list[schema.OperatorCodeT] = []
        self._code_index: dict[tuple[int, int], int] = {}
        self._names: set[str] = set()

    def _tensor(
        self,
        name: str,
        shape: Sequence[int],
        dtype: str | np.dtype,
        buffer: int,
        quantization: schema.QuantizationParametersT | None,
    ) -> int:
        if name in self._names:
            raise ValueError(f"tensor name {name!r} is used twice")
        self._names.add(name)
        tensor = schema.TensorT()
        tensor.name = name
        tensor.shape = [int(d) for d in shape]
        tensor.type = tensor_type(dtype)
        tensor.buffer = buffer
        tensor.quantization = quantization
        self.tensors.append(tensor)
        return len(self.tensors) - 1

    def _buffer(self, data: np.ndarray | None) -> int:
        buffer = schema.BufferT()
        buffer.data = data
        self.buffers.append(buffer)
        return len(self.buffers) - 1

    def constant(
        self,
        name: str,
        array: np.ndarray,
        quantization: schema.QuantizationParametersT | None = None,
    ) -> int:
        """A constant tensor holding `array` (its dtype and shape) in a buffer of its own."""
        return self._tensor(name, array.shape, array.dtype, self._buffer(_payload(array)), quantization)

    def activation(
        self,
        name: str,
        shape: Sequence[int],
        dtype: str | np.dtype,
        quantization: schema.QuantizationParametersT | None = None,
    ) -> int:
        """A runtime tensor with its own empty buffer."""
        return self._tensor(name, shape, dtype, self._buffer(None), quantization)

    def operator(
        self,
        code: int,
        inputs: Sequence[int],
        outputs: Sequence[int],
        options: object | None = None,
        version: int = 1,
    ) -> None:
        """Append a builtin operator; `options` is a schema options object (e.g. AddOptionsT)."""
        key = (int(code), int(version))
        if key not in self._code_index:
            opcode = schema.OperatorCodeT()
            opcode.builtinCode = key[0]
            opcode.deprecatedBuiltinCode = min(key[0], schema.BuiltinOperator.PLACEHOLDER_FOR_GREATER_OP_CODES)
            opcode.version = key[1]
            self._code_index[key] = len(self.operator_codes)
            self.operator_codes.append(opcode)
        op = schema.OperatorT()
        op.opcodeIndex = self._code_index[key]
        op.inputs = [int(i) for i in inputs]
        op.outputs = [int(o) for o in outputs]
        if options is not None:
            op.builtinOptionsType = _options_type(options)
            op.builtinOptions = options
        self.operators.append(op)

    def finish(
        self,
        inputs: Sequence[int],
        outputs: Sequence[int],
        description: str,
        name: str,
        signature_names: tuple[Sequence[str], Sequence[str]] | None = None,
        dynamic_batch: bool = True,
    ) -> Model:
        """The finished Model with graph `inputs`/`outputs`.

        With `dynamic_batch`, graph input and output tensors get a
        shapeSignature with -1 on axis 0. `signature_names` names the inputs
        and outputs in the signature def (default: the tensor names).
        """
        if signature_names is None:
            signature_names = (
                [self.tensors[i].name for i in inputs],
                [self.tensors[o].name for o in outputs],
            )
        if dynamic_batch:
            for index in (*inputs, *outputs):
                tensor = self.tensors[index]
                if tensor.shape:
                    tensor.shapeSignature = [-1, *tensor.shape[1:]]

        subgraph = schema.SubGraphT()
        subgraph.name = "main"
        subgraph.tensors = self.tensors
        subgraph.inputs = [int(i) for i in inputs]
        subgraph.outputs = [int(o) for o in outputs]
        subgraph.operators = self.operators

        runtime = np.zeros(16, dtype=np.uint8)
        text = np.frombuffer(MIN_RUNTIME_VERSION.encode("ascii"), dtype=np.uint8)
        runtime[: text.size] = text
        metadata = schema.MetadataT()
        metadata.name = "min_runtime_version"
        metadata.buffer = self._buffer(runtime)

        signature = schema.SignatureDefT()
        signature.signatureKey = SIGNATURE_KEY
        signature.subgraphIndex = 0
        signature.inputs = [_tensor_map(n, i) for n, i in zip(signature_names[0], inputs, strict=True)]
        signature.outputs = [_tensor_map(n, o) for n, o in zip(signature_names[1], outputs, strict=True)]

        root = schema.ModelT()
        root.version = SCHEMA_VERSION
        root.description = description
        root.operatorCodes = self.operator_codes
        root.subgraphs = [subgraph]
        root.buffers = self.buffers
        root.metadata = [metadata]
        root.signatureDefs = [signature]
        return Model(root=root, name=name)


def _tensor_map(name: str, index: int) -> schema.TensorMapT:
    entry = schema.TensorMapT()
    entry.name = name
    entry.tensorIndex = int(index)
    return entry
