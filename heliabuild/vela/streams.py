"""The command streams of a Vela-compiled model, and what Vela left on the CPU."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from heliabuild.fence.contract import is_fence_name
from heliabuild.model.graph import indices, tensor_name
from heliabuild.model.io import Model
from heliabuild.model.opcodes import operator_type

NPU_OPERATOR = "ethos-u"


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
