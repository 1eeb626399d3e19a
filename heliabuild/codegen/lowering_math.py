"""Lowering of the int8 arithmetic: broadcasting ADD and MUL (and their int16 16x8 forms), SOFTMAX, LOG_SOFTMAX,
L2_NORMALIZATION, SQUARED_DIFFERENCE and the LUT and arithmetic-heavy element-wise kernels
(heliabuild.kernels.int8_math, c/ops_lut.c, c/ops_arith.c)."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np

from heliabuild.aot.facts import OperatorFacts
from heliabuild.codegen.calls import Field, InlineInts, IntArray, KernelCall, TensorRef
from heliabuild.codegen.lowering_contracts import _contract_binary
from heliabuild.codegen.operands import MAX_RANK, _activation, _dtype, _need, _quant
from heliabuild.kernels import int8, int8_math, int16
from heliabuild.model.io import Model


def _broadcast_dims(shape: Sequence[int], rank: int) -> tuple[int, ...]:
    return (1,) * (rank - len(shape)) + tuple(int(d) for d in shape)


def _binary(op: OperatorFacts) -> KernelCall:
    first = _dtype(op.input(0), "int8", "input 0")
    second = _dtype(op.input(1), "int8", "input 1")
    output = _dtype(op.output, "int8", "output")
    rank = max(len(first.shape), len(second.shape), len(output.shape), 1)
    _need(rank <= MAX_RANK, f"rank {rank} is above the kernels' {MAX_RANK}")
    dims = [_broadcast_dims(t.shape, rank) for t in (first, second, output)]
    for axis in range(rank):
        expected = max(dims[0][axis], dims[1][axis])
        _need(
            dims[0][axis] in (1, expected) and dims[1][axis] in (1, expected) and dims[2][axis] == expected,
            f"shapes {list(first.shape)} and {list(second.shape)} do not broadcast to {list(output.shape)}",
        )
    derive = int8.add_params if op.op_type == "ADD" else int8.mul_params
    params = derive(_quant(first, "input 0"), _quant(second, "input 1"), _quant(output, "output"), _activation(op))
    kind = op.op_type.lower()
    return KernelCall.of(
        op,
        f"helia_{kind}_s8",
        "helia_binary_s8_args",
        fields=(
            ("input1", TensorRef(first.index)),
            ("input2", TensorRef(second.index)),
            ("output", TensorRef(output.index)),
            ("rank", rank),
            ("input1_dims", InlineInts(dims[0])),
            ("input2_dims", InlineInts(dims[1])),
            ("output_dims", InlineInts(dims[2])),
            ("input1_zero_point", params.input1_zero_point),
            ("input2_zero_point", params.input2_zero_point),
            ("output_zero_point", params.output_zero_point),
            ("left_shift", params.left_shift),
            ("input1_multiplier", params.input1_multiplier),
            ("input1_shift", params.input1_shift),
            ("input2_multiplier", params.input2_multiplier),
            ("input2_shift", params.input2_shift),
            ("output_multiplier", params.output_multiplier),
            ("output_shift", params.output_shift),
            ("act_min", params.act_min),
            ("act_max", params.act_max),
        ),
        reads=(first.index, second.index),
        writes=(output.index,),
    )


def _add_or_mul(op: OperatorFacts) -> KernelCall:
    """int8 ADD and MUL, or their int16 16x8 forms (zero points 0; ADD with pot_scale_int16 false)."""
    first = op.input(0)
    if first is None or first.dtype != "int16":
        return _binary(op)
    second = _dtype(op.input(1), "int16", "input 1")
    output = _dtype(op.output, "int16", "output")
    _need(
        op.op_type == "MUL" or not op.option("pot_scale_int16", True),
        "int16 ADD with power-of-two scales (pot_scale_int16) has no kernel; the general-scale form has",
    )
    # The int8 lowering's broadcast fields, at int16.
    rank = max(len(first.shape), len(second.shape), len(output.shape), 1)
    _need(rank <= MAX_RANK, f"rank {rank} is above the kernels' {MAX_RANK}")
    dims = [_broadcast_dims(t.shape, rank) for t in (first, second, output)]
    expected = tuple(max(a, b) for a, b in zip(dims[0], dims[1], strict=True))
    _need(
        all(d in (1, e) for d, e in zip(dims[0] + dims[1], expected + expected, strict=True)) and dims[2] == expected,
        f"shapes {list(first.shape)} and {list(second.shape)} do not broadcast to {list(output.shape)}",
    )
    derive = int16.add_s16_params if op.op_type == "ADD" else int16.mul_s16_params
    params = derive(_quant(first, "input 0"), _quant(second, "input 1"), _quant(output, "output"), _activation(op))
    kind = op.op_type.lower()
    return KernelCall.of(
        op,
        f"helia_{kind}_s16_run",
        "helia_binary_s16_args",
        check=f"helia_{kind}_s16_check",
        fields=(
            ("input1", TensorRef(first.index)),
            ("input2", TensorRef(second.index)),
            ("output", TensorRef(output.index)),
            ("rank", rank),
            ("input1_dims", InlineInts(dims[0])),
            ("input2_dims", InlineInts(dims[1])),
            ("output_dims", InlineInts(dims[2])),
            *((name, getattr(params, name)) for name, _ in int16.BinaryS16Args._fields_[7:]),
        ),
        reads=(first.index, second.index),
        writes=(output.index,),
    )


def _softmax(op: OperatorFacts) -> KernelCall:
    data = _dtype(op.input(0), "int8", "input")
    output = _dtype(op.output, "int8", "output")
    out = _quant(output, "output")
    _need(
        math.isclose(out.scale, 1.0 / 256.0, rel_tol=1e-6) and out.zero_point == -128,
        f"output quantization (scale {out.scale}, zero point {out.zero_point}) is not 1/256, -128",
    )
    params = int8.softmax_params(_quant(data, "input").scale, float(op.option("beta", 1.0)))
    depth = data.shape[-1] if data.shape else 1
    return KernelCall.of(
        op,
        "helia_softmax_s8",
        "helia_softmax_s8_args",
        fields=(
            ("input", TensorRef(data.index)),
            ("output", TensorRef(output.index)),
            ("rows", data.element_count // max(depth, 1)),
            ("depth", depth),
            ("input_multiplier", params.input_multiplier),
            ("input_left_shift", params.input_left_shift),
            ("diff_min", params.diff_min),
        ),
        reads=(data.index,),
        writes=(output.index,),
    )


def _element_wise_s8(op: OperatorFacts, derive: Callable[[int8.Quant, int8.Quant], object]) -> KernelCall:
    """An int8 element-wise operator as one `helia_<op>_s8` call: input, output, count, then the fields of
    `derive(input quant, output quant)` (a table, or a params dataclass whose fields the struct has)."""
    data = _dtype(op.input(0), "int8", "input")
    output = _dtype(op.output, "int8", "output")
    _need(tuple(data.shape) == tuple(output.shape), f"{op.op_type} input and output shapes differ")
    derived = derive(_quant(data, "input"), _quant(output, "output"))
    if isinstance(derived, np.ndarray):
        kernel, extra = "lookup", (("table", IntArray("int8_t", tuple(int(v) for v in derived))),)
    else:
        kernel, extra = op.op_type.lower(), tuple(vars(derived).items())
    fields: tuple[tuple[str, Field], ...] = (
        ("input", TensorRef(data.index)),
        ("output", TensorRef(output.index)),
        ("count", data.element_count),
        *extra,
    )
    return KernelCall.of(
        op,
        f"helia_{kernel}_s8_run",
        f"helia_{kernel}_s8_args",
        check=f"helia_{kernel}_s8_check",
        fields=fields,
        reads=(data.index,),
        writes=(output.index,),
    )


_ELEMENT_WISE_S8: dict[str, Callable[[int8.Quant, int8.Quant], object]] = {
    **{name: (lambda a, b, name=name: int8_math.lookup_table(name, a, b)) for name in int8_math.LOOKUP_OPERATORS},
    "HARD_SWISH": int8_math.hard_swish_params,
    "RSQRT": int8_math.rsqrt_params,
}
"""int8 element-wise operator -> the derivation of its kernel's table or parameters."""


def _squared_difference(op: OperatorFacts, model: Model) -> KernelCall:
    """int8 operands: the broadcasting int8 kernel; float operands: the operator contract's."""
    first = op.input(0)
    if first is None or first.dtype != "int8":
        return _contract_binary(op, model)
    # ADD's and MUL's lowering checks the operands and gives the broadcast fields; its multipliers are replaced.
    call = _binary(op)
    _need(op.fused_activation in (None, "NONE"), "SQUARED_DIFFERENCE has no fused activation")
    params = int8_math.squared_difference_params(
        _quant(first, "input 0"), _quant(_dtype(op.input(1), "int8", "input 1"), "input 1"), _quant(op.output, "output")
    )
    fields = dict(call.fields)
    fields.update(
        left_shift=params.left_shift,
        input1_multiplier=params.input1_multiplier,
        input1_shift=params.input1_shift,
        input2_multiplier=params.input2_multiplier,
        input2_shift=params.input2_shift,
        output_multiplier=params.output_multiplier,
        output_shift=params.output_shift,
    )
    return KernelCall.of(
        op,
        "helia_squared_difference_s8_run",
        "helia_binary_s8_args",
        check="helia_squared_difference_s8_check",
        fields=tuple(fields.items()),
        reads=call.reads,
        writes=call.writes,
    )


def _l2_normalization(op: OperatorFacts) -> KernelCall:
    data = _dtype(op.input(0), "int8", "input")
    output = _dtype(op.output, "int8", "output")
    _need(tuple(data.shape) == tuple(output.shape), "L2_NORMALIZATION input and output shapes differ")
    _need(_activation(op) == "NONE", "L2_NORMALIZATION with a fused activation has no kernel")
    required = int8_math.L2_NORMALIZATION_OUTPUT
    _need(
        _quant(output, "output") == required,
        f"output quantization is not LiteRT's ({required.scale}, {required.zero_point})",
    )
    depth = data.shape[-1] if data.shape else 1
    return KernelCall.of(
        op,
        "helia_l2_normalization_s8_run",
        "helia_l2_normalization_s8_args",
        check="helia_l2_normalization_s8_check",
        fields=(
            ("input", TensorRef(data.index)),
            ("output", TensorRef(output.index)),
            ("rows", data.element_count // max(depth, 1)),
            ("depth", depth),
            ("input_zero_point", _quant(data, "input").zero_point),
        ),
        reads=(data.index,),
        writes=(output.index,),
    )


def _log_softmax(op: OperatorFacts) -> KernelCall:
    data = _dtype(op.input(0), "int8", "input")
    output = _dtype(op.output, "int8", "output")
    _need(tuple(data.shape) == tuple(output.shape), "LOG_SOFTMAX input and output shapes differ")
    required = int8_math.LOG_SOFTMAX_OUTPUT
    _need(
        _quant(output, "output") == required,
        f"output quantization is not LiteRT's ({required.scale}, {required.zero_point})",
    )
    params = int8_math.log_softmax_params(_quant(data, "input").scale)
    depth = data.shape[-1] if data.shape else 1
    return KernelCall.of(
        op,
        "helia_log_softmax_s8_run",
        "helia_log_softmax_s8_args",
        check="helia_log_softmax_s8_check",
        fields=(
            ("input", TensorRef(data.index)),
            ("output", TensorRef(output.index)),
            ("rows", data.element_count // max(depth, 1)),
            ("depth", depth),
            *vars(params).items(),
        ),
        reads=(data.index,),
        writes=(output.index,),
    )
