"""Lowering of the operator contracts (heliabuild.kernels.operators): the INT32 comparisons, SELECT_V2, float
DIV, NEG and SQUARED_DIFFERENCE, to c/ops_contracts.c. Admission is the contracts' own `admit` on the M55
target."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from heliabuild.aot.facts import OperatorFacts, TensorFacts
from heliabuild.codegen.calls import Field, InlineInts, KernelCall, TensorRef
from heliabuild.codegen.operands import MAX_RANK, _need, _Refusal
from heliabuild.errors import ContractKernelError
from heliabuild.kernels import contracts_native
from heliabuild.kernels import operators as contracts
from heliabuild.kernels.operators.admission import CORTEX_M55, TensorSpec, activation_name
from heliabuild.model.io import Model

CONTRACT_TARGET = CORTEX_M55
"""The capabilities the generated firmware has (qemu-m55: Cortex-M55, FP16 admitted)."""


_FLOAT_SUFFIX = {"float32": "f32", "float16": "f16"}


def _spec(tensor: TensorFacts) -> TensorSpec:
    q = tensor.quantization
    return TensorSpec(tensor.dtype, tuple(int(d) for d in tensor.shape), quantized=q is not None and bool(q.scales))


def _admitted(op: OperatorFacts, model: Model, arity: int) -> tuple[list[TensorFacts], TensorFacts, str]:
    """The operator's inputs, output and activation once its contract admits them (else a _Refusal naming the
    contract's rule)."""
    inputs = [t for t in op.inputs if t is not None]
    _need(len(inputs) == len(op.inputs) == arity and len(op.outputs) == 1, f"{op.op_type} needs {arity} inputs")
    for tensor in inputs:
        if tensor.is_constant and tensor.dtype == "float32":
            # The emitter writes float32 constants as decimal literals, which have no NaN or infinity.
            data = model.buffer_data(tensor.buffer)
            values = np.frombuffer(data.tobytes(), "<f4") if data is not None else np.zeros(0, np.float32)
            _need(bool(np.isfinite(values).all()), f"constant {tensor.name!r} holds a NaN or an infinity")
    activation = op.fused_activation or "NONE"
    refusal = contracts.admit(
        op.op_type, [_spec(t) for t in inputs], [_spec(op.outputs[0])], activation=activation, target=CONTRACT_TARGET
    )
    if refusal is not None:
        raise _Refusal(str(refusal))
    # The comparison contract admits zero extents (an empty output); the kernels take extents >= 1.
    empty = next((t for t in (*inputs, *op.outputs) if 0 in t.shape), None)
    _need(empty is None, f"tensor {empty.name if empty else ''!r} is empty; the kernels take extents >= 1")
    return inputs, op.outputs[0], activation


def _dims_fields(
    names: Sequence[str], tensors: Sequence[TensorFacts], output: TensorFacts, max_rank: int
) -> tuple[tuple[str, Field], ...]:
    try:
        rank, dims = contracts_native.kernel_dims([t.shape for t in tensors], output.shape, max_rank)
    except ContractKernelError as error:
        raise _Refusal(error.message) from None
    return (("rank", rank), *((f"{name}_dims", InlineInts(d)) for name, d in zip(names, dims, strict=True)))


def _contract_binary(op: OperatorFacts, model: Model) -> KernelCall:
    (first, second), output, activation = _admitted(op, model, 2)
    if op.op_type in contracts_native.COMPARISONS:
        run = contracts_native.COMPARISONS[op.op_type]
    else:
        run = f"helia_{op.op_type.lower()}_{_FLOAT_SUFFIX[first.dtype]}"
    return KernelCall.of(
        op,
        run,
        "helia_broadcast_args",
        fields=(
            ("input1", TensorRef(first.index)),
            ("input2", TensorRef(second.index)),
            ("output", TensorRef(output.index)),
            *_dims_fields(("input1", "input2", "output"), (first, second), output, MAX_RANK),
            ("activation", contracts_native.ACTIVATION_CODES[activation_name(activation)]),
        ),
        reads=(first.index, second.index),
        writes=(output.index,),
    )


def _select_v2(op: OperatorFacts, model: Model) -> KernelCall:
    (condition, x, y), output, _ = _admitted(op, model, 3)
    return KernelCall.of(
        op,
        "helia_select_v2_s32",
        "helia_select_v2_s32_args",
        fields=(
            ("condition", TensorRef(condition.index)),
            ("x", TensorRef(x.index)),
            ("y", TensorRef(y.index)),
            ("output", TensorRef(output.index)),
            *_dims_fields(
                ("condition", "x", "y", "output"), (condition, x, y), output, contracts_native.SELECT_MAX_RANK
            ),
        ),
        reads=(condition.index, x.index, y.index),
        writes=(output.index,),
    )


def _neg(op: OperatorFacts, model: Model) -> KernelCall:
    (data,), output, _ = _admitted(op, model, 1)
    run = f"helia_neg_{_FLOAT_SUFFIX[data.dtype]}"
    return KernelCall.of(
        op,
        run,
        None,
        fields=(("input", TensorRef(data.index)), ("output", TensorRef(output.index)), ("count", data.element_count)),
        reads=(data.index,),
        writes=(output.index,),
    )
