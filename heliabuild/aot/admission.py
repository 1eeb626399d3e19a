"""Refusing operators a platform cannot run, before anything is planned.

Three sources of refusal, each naming the operator by its stable id:

- the AOT operator contracts (`heliabuild.kernels.operators.admit`), for the
  operators and routes they cover: EQUAL, NOT_EQUAL, GREATER, GREATER_EQUAL,
  LESS and LESS_EQUAL on INT32 inputs (the INT8/INT16 comparisons keep their
  quantized route and float comparisons another one, neither covered here);
  SELECT_V2 with an INT32 x or y; DIV and NEG always (integer DIV and NEG are
  refused); SQUARED_DIFFERENCE with a float operand (the integer route is
  another contract). FP16 passes only on a platform with the `FP16`
  capability. Shapes are the tensors' `shape` (the static shape the model
  runs with, as a converter writes it beside a dynamic `shape_signature`);
- the platform: an `ethos-u` command stream needs the `NPU` capability, and an NPU of the accelerator
  configuration Vela compiled it for (the platform's `npu`);
- the `ETHOS_U_STREAM_SPLIT` fence's contract version 1: opcode version 1,
  nonempty matching input and output lists, each pair with the same shape,
  dtype and quantization, per-tensor quantization on model inputs and
  outputs, version-1 dtypes (int8, uint8, int16, int32, int64, FP16, FP32,
  bool). The legacy `STREAM_SPLIT` name is refused as not a fence.

Every other operator is admitted: heliabuild plans it without a table (its
knobs none, its kernel fields null) rather than guessing. `check_admission`
raises one PlanRefusedError listing every refused operator by id and reason.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ai_edge_litert import schema_py_generated as schema

from heliabuild.aot.platforms import Platform
from heliabuild.errors import HeliaError
from heliabuild.fence.contract import CONTRACT_VERSION, CUSTOM_CODE, ELEMENT_BYTES, LEGACY_CUSTOM_CODE, type_name
from heliabuild.kernels import operators as contracts
from heliabuild.kernels.operators.admission import TensorSpec
from heliabuild.model.graph import Graph, indices, tensor_name
from heliabuild.model.ids import OperatorId, stable_operator_ids
from heliabuild.model.io import Model
from heliabuild.model.opcodes import custom_code
from heliabuild.vela.streams import stream_accelerator

ETHOS_U = "ethos-u"
COMPARISONS = frozenset(contracts.comparisons.OPERATORS)
FLOATS = frozenset({"float32", "float16"})

RULES: dict[str, str] = {
    "platform.npu": "an ethos-u command stream runs only on a platform with the NPU capability",
    "platform.npu-config": "an ethos-u command stream runs only on an NPU of the configuration Vela compiled it for",
    "fence.opcode-version": f"{CUSTOM_CODE} is opcode version {CONTRACT_VERSION}",
    "fence.pairs": "the fence takes matching nonempty input and output lists",
    "fence.dtype": "contract version 1 carries int8, uint8, int16, int32, int64, FP16, FP32 and bool",
    "fence.same-dtype": "each pair has the same dtype",
    "fence.same-shape": "each pair has the same shape",
    "fence.same-quantization": "each pair has the same quantization",
    "fence.per-tensor-io": "model inputs and outputs need per-tensor quantization",
    "fence.legacy": f"the legacy {LEGACY_CUSTOM_CODE} operator is not an alias of {CUSTOM_CODE}",
}
"""This module's refusals (rule id -> rule); the operator contracts' are in heliabuild.kernels.operators.RULES."""


@dataclass(frozen=True)
class OperatorRefusal:
    """Why one operator cannot be planned: its id, position and type, the rule id and one sentence."""

    id: str
    index: int
    op_type: str
    rule: str
    reason: str

    def __str__(self) -> str:
        return f"{self.id} ({self.op_type} at {self.index}): {self.reason} [{self.rule}]"


class PlanRefusedError(HeliaError):
    """Operators the platform cannot run: `refusals` lists each one; the message names them all."""

    def __init__(self, model: str, platform: Platform, refusals: Sequence[OperatorRefusal]) -> None:
        count = len(refusals)
        listed = "; ".join(str(r) for r in refusals)
        hint = None
        if any(r.rule == "platform.npu" for r in refusals):
            npu = "a platform with the NPU capability (heliabuild aot-plan --list-platforms)"
            hint = f"plan the model Vela compiled for {npu}, or plan the model from before Vela"
        elif any(r.rule == "platform.npu-config" for r in refusals):
            hint = (
                "plan for a platform whose NPU runs that configuration (heliabuild aot-plan --list-platforms), "
                "or compile the model with Vela for one of the configurations its NPU runs"
            )
        elif any(r.rule.endswith(".fp16-target") for r in refusals):
            hint = "plan for a platform with the FP16 capability (heliabuild aot-plan --list-platforms)"
        super().__init__(
            f"{model}: {count} operator{'s' if count != 1 else ''} cannot be planned for platform "
            f"{platform.name}: {listed}",
            hint=hint,
        )
        self.refusals = list(refusals)


_DTYPES: dict[int, str] = {
    value: name.lower() for name, value in vars(schema.TensorType).items() if not name.startswith("_")
}


def tensor_spec(tensor: schema.TensorT) -> TensorSpec:
    """The admission view of a TFLite tensor: lower-case dtype name, static shape, quantized or not."""
    shape = () if tensor.shape is None else tuple(int(d) for d in tensor.shape)
    return TensorSpec(_DTYPES.get(int(tensor.type), f"type{int(tensor.type)}"), shape, _quantized(tensor))


def _quantized(tensor: schema.TensorT) -> bool:
    q = tensor.quantization
    return q is not None and q.scale is not None and len(q.scale) > 0


def _quantization_key(tensor: schema.TensorT) -> tuple[object, ...]:
    """What 'the same quantization' compares: scales, zero points, and the axis when per-axis."""
    q = tensor.quantization
    if q is None:
        return ((), (), None)
    scales = tuple(float(s) for s in (q.scale if q.scale is not None else ()))
    zeros = tuple(int(z) for z in (q.zeroPoint if q.zeroPoint is not None else ()))
    axis = int(q.quantizedDimension) if len(scales) > 1 else None
    return (scales, zeros, axis)


def _specs(subgraph: schema.SubGraphT, tensor_indices: Sequence[int]) -> list[TensorSpec]:
    return [tensor_spec(subgraph.tensors[t]) for t in tensor_indices if t >= 0]


def _covered(op_type: str, inputs: Sequence[TensorSpec], outputs: Sequence[TensorSpec]) -> bool:
    """Whether one of the operator contracts covers this operator's route (see the module docstring)."""
    if op_type in COMPARISONS:
        return any(t.dtype == "int32" for t in inputs)
    if op_type == contracts.select.OPERATOR:
        return any(t.dtype == "int32" for t in (*inputs[1:], *outputs))
    if op_type in (contracts.div.OPERATOR, contracts.neg.OPERATOR):
        return True
    if op_type == contracts.squared_difference.OPERATOR:
        return any(t.dtype in FLOATS for t in (*inputs, *outputs))
    return False


def _activation(op: schema.OperatorT) -> int | str:
    options = op.builtinOptions
    value = getattr(options, "fusedActivationFunction", None)
    return "NONE" if value is None else int(value)


def _contract_refusal(
    subgraph: schema.SubGraphT, op: schema.OperatorT, operator: OperatorId, platform: Platform
) -> OperatorRefusal | None:
    inputs = _specs(subgraph, indices(op.inputs))
    outputs = _specs(subgraph, indices(op.outputs))
    if not _covered(operator.op_type, inputs, outputs):
        return None
    activation = _activation(op) if operator.op_type == contracts.div.OPERATOR else "NONE"
    refusal = contracts.admit(
        operator.op_type, inputs, outputs, activation=activation, target=platform.admission_target()
    )
    if refusal is None:
        return None
    return OperatorRefusal(operator.id, operator.index, operator.op_type, refusal.rule, refusal.message)


def _fence_refusal(
    model: Model, subgraph: schema.SubGraphT, graph: Graph, op: schema.OperatorT, operator: OperatorId
) -> OperatorRefusal | None:
    def refuse(rule: str, reason: str) -> OperatorRefusal:
        return OperatorRefusal(operator.id, operator.index, operator.op_type, rule, f"{CUSTOM_CODE}: {reason}")

    version = int(model.operator_codes[op.opcodeIndex].version)
    if version != CONTRACT_VERSION:
        return refuse("fence.opcode-version", f"opcode version {version}, expected {CONTRACT_VERSION}")
    inputs, outputs = indices(op.inputs), indices(op.outputs)
    if not inputs or len(inputs) != len(outputs) or -1 in inputs or -1 in outputs:
        return refuse(
            "fence.pairs",
            f"{len(inputs)} inputs and {len(outputs)} outputs; expected matching nonempty lists of tensors",
        )
    boundary = set(graph.graph_inputs) | set(graph.graph_outputs)
    for pair, (given_index, made_index) in enumerate(zip(inputs, outputs, strict=True)):
        given, made = subgraph.tensors[given_index], subgraph.tensors[made_index]
        label = f"pair {pair} ({tensor_name(given)!r} -> {tensor_name(made)!r})"
        for tensor in (given, made):
            if int(tensor.type) not in ELEMENT_BYTES:
                return refuse("fence.dtype", f"{label} carries {type_name(int(tensor.type))}; {RULES['fence.dtype']}")
        if int(given.type) != int(made.type):
            return refuse(
                "fence.same-dtype",
                f"{label}: dtypes {type_name(int(given.type))} and {type_name(int(made.type))} differ",
            )
        if indices(given.shape) != indices(made.shape):
            return refuse(
                "fence.same-shape", f"{label}: shapes {indices(given.shape)} and {indices(made.shape)} differ"
            )
        if _quantization_key(given) != _quantization_key(made):
            return refuse("fence.same-quantization", f"{label}: the quantization of input and output differs")
        for index, tensor in ((given_index, given), (made_index, made)):
            if index in boundary and len(_quantization_key(tensor)[0]) > 1:
                return refuse(
                    "fence.per-tensor-io",
                    f"{label}: model input/output {tensor_name(tensor)!r} has per-axis quantization; "
                    "model inputs and outputs need per-tensor quantization",
                )
    return None


def _npu_refusal(
    model: Model, op: schema.OperatorT, operator: OperatorId, platform: Platform
) -> OperatorRefusal | None:
    """An ethos-u command stream on a platform without an NPU, or compiled for an accelerator configuration
    the platform's NPU is not (heliabuild.vela.streams.stream_accelerator). A command stream whose payload
    does not name its accelerator (not Vela's driver payload) is not checked."""
    if not platform.has_npu:
        capabilities = ", ".join(platform.capabilities) or "none"
        return OperatorRefusal(
            operator.id,
            operator.index,
            operator.op_type,
            "platform.npu",
            f"an ethos-u command stream needs the NPU capability; {platform.name} has {capabilities}",
        )
    accelerator = stream_accelerator(model, op)
    if accelerator is None or platform.runs_accelerator(accelerator):
        return None
    return OperatorRefusal(
        operator.id,
        operator.index,
        operator.op_type,
        "platform.npu-config",
        f"Vela compiled it for {accelerator}, but the NPU of {platform.name} runs {', '.join(platform.npu)}",
    )


def operator_refusals(
    model: Model, platform: Platform, ids: Sequence[OperatorId] | None = None, subgraph_index: int = 0
) -> list[OperatorRefusal]:
    """Every operator of the subgraph that cannot be planned for `platform`, in operator order."""
    subgraph = model.subgraphs[subgraph_index]
    operator_ids = list(ids) if ids is not None else stable_operator_ids(model, subgraph_index)
    graph = Graph.of(subgraph)
    found: list[OperatorRefusal] = []
    for op, operator in zip(subgraph.operators or [], operator_ids, strict=True):
        refusal: OperatorRefusal | None = None
        code = custom_code(model.operator_codes[op.opcodeIndex])
        if operator.op_type == ETHOS_U:
            refusal = _npu_refusal(model, op, operator, platform)
        elif code is not None and code.upper() == CUSTOM_CODE:
            refusal = _fence_refusal(model, subgraph, graph, op, operator)
        elif code is not None and code.upper() == LEGACY_CUSTOM_CODE:
            refusal = OperatorRefusal(
                operator.id, operator.index, operator.op_type, "fence.legacy", RULES["fence.legacy"]
            )
        elif code is None:
            refusal = _contract_refusal(subgraph, op, operator, platform)
        if refusal is not None:
            found.append(refusal)
    return found


def check_admission(
    model: Model, platform: Platform, ids: Sequence[OperatorId] | None = None, subgraph_index: int = 0
) -> None:
    """Raise PlanRefusedError naming every refused operator; return when all are admitted."""
    refusals = operator_refusals(model, platform, ids, subgraph_index)
    if refusals:
        raise PlanRefusedError(model.name, platform, refusals)


def is_fence(model: Model, op: schema.OperatorT) -> bool:
    """Whether `op` is an ETHOS_U_STREAM_SPLIT fence (its custom code in any letter case)."""
    code = custom_code(model.operator_codes[op.opcodeIndex])
    return code is not None and code.upper() == CUSTOM_CODE
