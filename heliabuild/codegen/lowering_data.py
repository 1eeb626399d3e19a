"""Lowering of the data-movement and simple element-wise int8 operators (issue 22, part A) to their kernels.

- RELU, RELU6, RELU_N1_TO_1 and int8 -> int8 QUANTIZE: one `helia_requantize_s8` (c/ops_unary.c) call, the
  parameters from heliabuild.kernels.int8.requantize_params; a float32 QUANTIZE stays the base table's.
- SQUEEZE and EXPAND_DIMS: no kernel, the byte copy RESHAPE is (`helia_reshape`).

`DATA_LOWERINGS` and `DATA_FORMS` are added to the base table by heliabuild.codegen.module.lower.
"""

from __future__ import annotations

from heliabuild.aot.facts import OperatorFacts
from heliabuild.codegen.lowering import (
    KernelCall,
    Lowering,
    TensorRef,
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


DATA_LOWERINGS: dict[str, Lowering] = {
    **dict.fromkeys(("RELU", "RELU6", "RELU_N1_TO_1", "QUANTIZE"), _requantize),
    **dict.fromkeys(("SQUEEZE", "EXPAND_DIMS"), _reshape_like),
}
DATA_FORMS: dict[str, str] = {
    **dict.fromkeys(("RELU", "RELU6", "RELU_N1_TO_1"), "int8"),
    "QUANTIZE": "float32 or int8 to int8",
    **dict.fromkeys(("SQUEEZE", "EXPAND_DIMS"), "any dtype"),
}
"""The forms of DATA_LOWERINGS (a test keeps the keys equal)."""
