"""The command streams of a Vela-compiled model, and what Vela left on the CPU."""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any

import numpy as np
from ai_edge_litert import schema_py_generated as schema

from heliabuild.fence.contract import is_fence_name
from heliabuild.model.graph import indices, tensor_name
from heliabuild.model.io import Model
from heliabuild.model.opcodes import operator_type

NPU_OPERATOR = "ethos-u"
_PAYLOAD_MAGIC = b"COP1"
_CONFIG_ACTION = 0x01
_PRODUCTS = {0: "ethos-u55", 1: "ethos-u65", 2: "ethos-u85"}
"""The `product` field of the NPU config word Vela writes into each command stream's driver payload."""


def stream_accelerator(compiled: Model, op: schema.OperatorT) -> str | None:
    """The accelerator configuration (`ethos-u85-256`, ...) Vela compiled the `ethos-u` operator `op` for, read
    from its command stream's driver payload (the `COP1` fourcc, then a config action whose word holds the
    product and log2 of the MACs per cycle); None when the payload does not say."""
    inputs = indices(op.inputs)
    if not inputs or inputs[0] < 0:
        return None
    tensor = compiled.subgraphs[0].tensors[inputs[0]]
    data = compiled.buffers[tensor.buffer].data if 0 <= tensor.buffer < len(compiled.buffers) else None
    payload = b"" if data is None else np.asarray(data, dtype=np.uint8).tobytes()
    if len(payload) < 12 or payload[:4] != _PAYLOAD_MAGIC:
        return None
    tag, config = struct.unpack_from("<II", payload, 4)
    product = _PRODUCTS.get(config >> 28)
    if tag & 0xFF != _CONFIG_ACTION or product is None:
        return None
    return f"{product}-{1 << (config & 0xF)}"


@dataclass(frozen=True)
class CompiledOperator:
    """An operator of the compiled model: its position, type and first output's name."""

    position: int
    op_type: str
    output_name: str

    def to_json(self) -> dict[str, Any]:
        return {"position": self.position, "op_type": self.op_type, "output_name": self.output_name}


@dataclass(frozen=True)
class CommandStreams:
    """The `ethos-u` operators (one per command stream), the fences, and
    every other operator, which runs on the CPU."""

    operator_types: tuple[str, ...]
    npu_positions: tuple[int, ...]
    fence_positions: tuple[int, ...]
    cpu_operators: tuple[CompiledOperator, ...]

    @property
    def count(self) -> int:
        return len(self.npu_positions)

    def alternates_with_fences(self) -> bool:
        """True when the model is `ethos-u (fence ethos-u)*` and nothing else."""
        expected = [NPU_OPERATOR]
        for _ in self.fence_positions:
            expected += ["ETHOS_U_STREAM_SPLIT", NPU_OPERATOR]
        return list(self.operator_types) == expected


def command_streams(compiled: Model) -> CommandStreams:
    subgraph = compiled.subgraphs[0]
    tensors = subgraph.tensors or []
    types: list[str] = []
    npu: list[int] = []
    fences: list[int] = []
    cpu: list[CompiledOperator] = []
    for position, op in enumerate(subgraph.operators or []):
        opcode = compiled.operator_codes[op.opcodeIndex]
        op_type = operator_type(opcode)
        if is_fence_name(opcode):
            op_type = "ETHOS_U_STREAM_SPLIT"
            fences.append(position)
        elif op_type == NPU_OPERATOR:
            npu.append(position)
        else:
            outputs = indices(op.outputs)
            name = tensor_name(tensors[outputs[0]]) if outputs and outputs[0] >= 0 else ""
            cpu.append(CompiledOperator(position=position, op_type=op_type, output_name=name))
        types.append(op_type)
    return CommandStreams(
        operator_types=tuple(types),
        npu_positions=tuple(npu),
        fence_positions=tuple(fences),
        cpu_operators=tuple(cpu),
    )
