"""Lowering of the data-movement and simple element-wise int8 operators (issue 22, part A) to their kernels.

- RELU, RELU6, RELU_N1_TO_1 and int8 -> int8 QUANTIZE: one `helia_requantize_s8` (c/ops_unary.c) call, the
  parameters from heliabuild.kernels.int8.requantize_params; a float32 QUANTIZE stays the base table's.
- SQUEEZE and EXPAND_DIMS: no kernel, the byte copy RESHAPE is (`helia_reshape`).
- SUB (int8, broadcasting through rank 6, fused activation): `helia_sub_s8` (c/ops_binary.c) with ADD's
  arguments and multipliers; MAXIMUM and MINIMUM (inputs and output quantized alike, raw codes compared):
  `helia_maximum_s8`, `helia_minimum_s8` on the same arguments.
- MEAN (int8, constant int32 axes forming one contiguous run, any keep_dims): one `helia_mean_s8` call
  (c/ops_data.c), the parameters from heliabuild.kernels.int8.mean_params.

`DATA_LOWERINGS` and `DATA_FORMS` are added to the base table by heliabuild.codegen.module.lower.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from heliabuild.aot.facts import OperatorFacts
from heliabuild.codegen.lowering import (
    KernelCall,
    Lowering,
    TensorRef,
    _binary,
    _constant,
    _conversion,
    _dtype,
    _need,
    _quant,
    _reshape,
)
from heliabuild.kernels import int8
from heliabuild.model.io import Model


def _requantize(op: OperatorFacts, _model: Model) -> KernelCall:
    source = op.input(0)
    if op.op_type == "QUANTIZE" and source is not None and source.dtype != "int8":
        return _conversion(op)
    data = _dtype(source, "int8", "input")
    output = _dtype(op.output, "int8", "output")
    _need(data.shape == output.shape, f"{op.op_type} input and output shapes differ")
    activation = "NONE" if op.op_type == "QUANTIZE" else op.op_type
    params = int8.requantize_params(_quant(data, "input"), _quant(output, "output"), activation)
    return KernelCall.of(
        op,
        "helia_requantize_s8",
        "helia_requantize_s8_args",
        fields=(
            ("input", TensorRef(data.index)),
            ("output", TensorRef(output.index)),
            ("count", data.element_count),
            ("input_zero_point", params.input_zero_point),
            ("output_zero_point", params.output_zero_point),
            ("multiplier", params.multiplier),
            ("shift", params.shift),
            ("act_min", params.act_min),
            ("act_max", params.act_max),
        ),
        reads=(data.index,),
        writes=(output.index,),
    )


def _reshape_like(op: OperatorFacts, _model: Model) -> KernelCall:
    data, output = op.input(0), op.output
    _need(data is not None and output is not None, f"{op.op_type} needs an input and an output")
    assert data is not None and output is not None
    _need(data.quantization == output.quantization, f"{op.op_type} input and output quantization differ")
    return _reshape(op)


def _mean(op: OperatorFacts, model: Model) -> KernelCall:
    data = _dtype(op.input(0), "int8", "input")
    output = _dtype(op.output, "int8", "output")
    axes_tensor = _dtype(_constant(op.input(1), "axes"), "int32", "axes")
    stored = model.buffer_data(axes_tensor.buffer)
    assert stored is not None
    axes = [int(a) for a in np.frombuffer(stored.tobytes(), "<i4")]
    params = int8.mean_params(
        data.shape, axes, bool(op.option("keep_dims", False)), _quant(data, "input"), _quant(output, "output")
    )
    _need(params.output_shape == tuple(output.shape), f"output shape {list(output.shape)} is not the mean's")
    return KernelCall.of(
        op,
        "helia_mean_s8",
        "helia_mean_s8_args",
        fields=(
            ("input", TensorRef(data.index)),
            ("output", TensorRef(output.index)),
            ("outer", params.outer),
            ("reduced", params.reduced),
            ("inner", params.inner),
            ("input_zero_point", params.input_zero_point),
            ("output_zero_point", params.output_zero_point),
            ("multiplier", params.multiplier),
            ("shift", params.shift),
        ),
        reads=(data.index,),
        writes=(output.index,),
    )


def _broadcast(op: OperatorFacts, _model: Model) -> KernelCall:
    """ADD's lowering (shapes, broadcasting, add_params) with the kernel of `op`'s type."""
    if op.op_type != "SUB":
        quants = [_quant(_dtype(t, "int8", what), what) for t, what in ((op.input(0), "input 0"),
                  (op.input(1), "input 1"), (op.output, "output"))]  # fmt: skip
        _need(
            quants[0] == quants[1] == quants[2], f"{op.op_type} inputs quantized unlike the output; no kernel rescales"
        )
    call = _binary(replace(op, op_type="ADD"))
    run = f"helia_{op.op_type.lower()}_s8"
    return replace(call, op_type=op.op_type, run=run, check=f"{run}_check")


DATA_LOWERINGS: dict[str, Lowering] = {
    **dict.fromkeys(("SUB", "MAXIMUM", "MINIMUM"), _broadcast),
    "MEAN": _mean,
    **dict.fromkeys(("RELU", "RELU6", "RELU_N1_TO_1", "QUANTIZE"), _requantize),
    **dict.fromkeys(("SQUEEZE", "EXPAND_DIMS"), _reshape_like),
}
DATA_FORMS: dict[str, str] = {
    **dict.fromkeys(("SUB", "MAXIMUM", "MINIMUM"), "int8"),
    "MEAN": "int8 over one run of axes",
    **dict.fromkeys(("RELU", "RELU6", "RELU_N1_TO_1"), "int8"),
    "QUANTIZE": "float32 or int8 to int8",
    **dict.fromkeys(("SQUEEZE", "EXPAND_DIMS"), "any dtype"),
}
"""The forms of DATA_LOWERINGS (a test keeps the keys equal)."""
