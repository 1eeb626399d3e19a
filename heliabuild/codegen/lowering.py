"""Lowering: each operator of a model to one call of heliabuild's own C kernels (docs/firmware.md, "Kernels").

`lower_model` admits a model only when every operator has a kernel here, with the types, shapes and options
that kernel supports; otherwise it raises one CodegenError listing every refused operator by its stable id and
the reason. The quantized parameters (multipliers, shifts, activation bounds, padding) are derived in Python by
`heliabuild.kernels.int8`, the same derivation the kernels' bit-exactness tests use against LiteRT. The INT32
comparisons, SELECT_V2 and float DIV, NEG and SQUARED_DIFFERENCE are admitted by their operator contracts
(`heliabuild.kernels.operators.admit`, on the Cortex-M55 target) and lowered to `c/ops_contracts.c`.

The lowerings live by operator family (`lowering_conv`, `lowering_pool`, `lowering_shape`, `lowering_math`,
`lowering_contracts`, `lowering_data`, `npu`), the call they give in `calls` and the operand checks they share
in `operands`; this module holds the base table of lowerings (`_LOWERINGS`), the forms each admits (`FORMS`)
and `lower_model`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from heliabuild.aot.facts import FENCE_OPERATOR, OperatorFacts, model_facts
from heliabuild.codegen.calls import KernelCall, Lowering
from heliabuild.codegen.lowering_contracts import _contract_binary, _neg, _select_v2
from heliabuild.codegen.lowering_conv import _batch_matmul, _conv, _fully_connected, _transpose_conv
from heliabuild.codegen.lowering_math import (
    _ELEMENT_WISE_S8,
    _add_or_mul,
    _element_wise_s8,
    _l2_normalization,
    _log_softmax,
    _softmax,
    _squared_difference,
)
from heliabuild.codegen.lowering_pool import _pool, _resize
from heliabuild.codegen.lowering_shape import _concatenation, _conversion, _fence, _pad, _reshape
from heliabuild.codegen.operands import _Refusal
from heliabuild.codegen.refusals import ModuleRefusal, summary, supported_hint
from heliabuild.errors import HeliaError
from heliabuild.kernels import int8
from heliabuild.kernels import operators as contracts
from heliabuild.model.io import Model
from heliabuild.model.opcodes import operator_type


class CodegenError(HeliaError):
    """A model or plan the module generator cannot honour; the message names the operator or unit."""


class ModelRefusedError(CodegenError):
    """Operators without a kernel or in a form no kernel takes: `refusals` lists each one, the message groups
    them by type (heliabuild.codegen.refusals.summary)."""

    def __init__(self, message: str, refusals: Sequence[ModuleRefusal], hint: str | None = None) -> None:
        super().__init__(message, hint=hint)
        self.refusals = tuple(refusals)


_LOWERINGS: dict[str, Callable[[OperatorFacts, Model], KernelCall]] = {
    "CONV_2D": lambda op, model: _conv(op, model, depthwise=False),
    "DEPTHWISE_CONV_2D": lambda op, model: _conv(op, model, depthwise=True),
    "FULLY_CONNECTED": _fully_connected,
    "AVERAGE_POOL_2D": lambda op, _: _pool(op),
    "MAX_POOL_2D": lambda op, _: _pool(op),
    "ADD": lambda op, _: _add_or_mul(op),
    "MUL": lambda op, _: _add_or_mul(op),
    "RESHAPE": lambda op, _: _reshape(op),
    "SOFTMAX": lambda op, _: _softmax(op),
    "PAD": _pad,
    "CONCATENATION": lambda op, _: _concatenation(op),
    "QUANTIZE": lambda op, _: _conversion(op),
    "DEQUANTIZE": lambda op, _: _conversion(op),
    **dict.fromkeys((*contracts.comparisons.OPERATORS, "DIV", "SQUARED_DIFFERENCE"), _contract_binary),
    "SELECT_V2": _select_v2,
    "NEG": _neg,
    **dict.fromkeys(_ELEMENT_WISE_S8, lambda op, _: _element_wise_s8(op, _ELEMENT_WISE_S8[op.op_type])),
    "SQUARED_DIFFERENCE": _squared_difference,
    "L2_NORMALIZATION": lambda op, _: _l2_normalization(op),
    "LOG_SOFTMAX": lambda op, _: _log_softmax(op),
    "BATCH_MATMUL": lambda op, _: _batch_matmul(op),
    "TRANSPOSE_CONV": lambda op, _: _transpose_conv(op),
    **dict.fromkeys(("RESIZE_NEAREST_NEIGHBOR", "RESIZE_BILINEAR"), lambda op, _: _resize(op)),
    FENCE_OPERATOR: lambda op, _: _fence(op),
}
"""Operator type -> lowering; every other type is refused at admission (unless lower_model's `extra` has it)."""


_INT8 = "int8"


FORMS: dict[str, str] = {
    **dict.fromkeys(("CONV_2D", "DEPTHWISE_CONV_2D", "FULLY_CONNECTED", "AVERAGE_POOL_2D", "MAX_POOL_2D"), _INT8),
    **dict.fromkeys(("ADD", "MUL"), "int8 and int16 (16x8)"),
    **dict.fromkeys(("SOFTMAX", "PAD", "CONCATENATION"), _INT8),
    "RESHAPE": "any dtype",
    "QUANTIZE": "float32 to int8",
    "DEQUANTIZE": "int8 to float32",
    **dict.fromkeys(contracts.comparisons.OPERATORS, "int32"),
    "SELECT_V2": "int32 values",
    **dict.fromkeys(("DIV", "NEG"), "float32 and float16"),
    "SQUARED_DIFFERENCE": "int8, float32 and float16",
    **dict.fromkeys((*_ELEMENT_WISE_S8, "L2_NORMALIZATION", "LOG_SOFTMAX", "BATCH_MATMUL", "TRANSPOSE_CONV"), _INT8),
    **dict.fromkeys(("RESIZE_NEAREST_NEIGHBOR", "RESIZE_BILINEAR"), _INT8),
    FENCE_OPERATOR: "fences",
}
"""The forms each type of _LOWERINGS admits, as the refusal hint lists them (a test keeps the keys equal)."""


STATE_OPERATORS = ("CALL_ONCE", "VAR_HANDLE", "READ_VARIABLE", "ASSIGN_VARIABLE")
"""The operators of resource variables and their one-time initialization."""
CARRIED_STATE = ("UNIDIRECTIONAL_SEQUENCE_LSTM", "SVDF")
"""The operator types whose kernels carry their variable tensors across invokes (heliabuild.codegen.lowering_state;
heliabuild.codegen.layout places those tensors in the carried state region)."""


def _state_operators(model: Model) -> list[str]:
    """Each state operator type the model's subgraphs use with its count, e.g. ['CALL_ONCE x1', ...]."""
    counts: dict[str, int] = {}
    for graph in model.subgraphs:
        for op in graph.operators or []:
            name = operator_type(model.operator_codes[op.opcodeIndex])
            if name in STATE_OPERATORS:
                counts[name] = counts.get(name, 0) + 1
    return [f"{name} x{counts[name]}" for name in STATE_OPERATORS if name in counts]


def lower_model(
    model: Model,
    source: str = "model",
    *,
    extra: Mapping[str, Lowering] | None = None,
    extra_forms: Mapping[str, str] | None = None,
) -> list[KernelCall]:
    """One KernelCall per operator of subgraph 0, in execution order; ModelRefusedError grouping every refused
    operator (heliabuild.codegen.refusals), its hint listing the forms admitted. `extra` admits further
    operator types (a target's own: heliabuild.codegen.npu for an Ethos-U), `extra_forms` states their forms."""
    table = {**_LOWERINGS, **(extra or {})}
    state = _state_operators(model)
    if state and not all(name in table for name in STATE_OPERATORS):
        raise CodegenError(
            f"{source}: the model holds state ({', '.join(state)}): the generated module keeps no resource "
            "variables between invokes, so the acquisition lifecycle's carry could not hold them; stateful models "
            "are not supported yet",
            hint='docs/firmware.md, "Admission"',
        )
    if len(model.subgraphs) != 1 and not state:
        raise CodegenError(f"{source}: {len(model.subgraphs)} subgraphs; the module generator runs one")
    facts = model_facts(model)
    if not facts:
        raise CodegenError(f"{source}: the model has no operator to generate code for")
    calls: list[KernelCall] = []
    refused: list[ModuleRefusal] = []
    for op in facts:
        lowering = table.get(op.op_type)
        if lowering is None:
            refused.append(ModuleRefusal(op.index, op.id, op.op_type, f"no heliabuild kernel for {op.op_type}", True))
            continue
        variable = next((t for t in (*op.inputs, *op.outputs) if t is not None and t.is_variable), None)
        if variable is not None and op.op_type not in CARRIED_STATE:
            reason = (
                f"variable tensor {variable.name!r} (state): only the {' and '.join(CARRIED_STATE)} kernels carry "
                "variable tensors"
            )
            refused.append(ModuleRefusal(op.index, op.id, op.op_type, reason))
            continue
        try:
            calls.append(lowering(op, model))
        except (_Refusal, int8.Int8KernelError) as refusal:
            reason = refusal.reason if isinstance(refusal, _Refusal) else refusal.message
            refused.append(ModuleRefusal(op.index, op.id, op.op_type, reason))
    if refused:
        forms = {**FORMS, **(extra_forms or {})}
        raise ModelRefusedError(
            f"{source}: the module generator {summary(refused, len(facts))}", refused, hint=supported_hint(forms)
        )
    return calls
