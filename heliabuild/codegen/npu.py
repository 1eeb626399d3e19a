"""Lowering Vela's `ethos-u` operator to one call of the Ethos-U driver (docs/firmware.md, "Corstone-300 and the
Ethos-U driver"): the lowering heliabuild.codegen.module adds for a firmware target with an NPU.

The call is `helia_ethosu_run(&args)` (heliabuild/firmware/c/npu/helia_ethosu.h): the command stream (input 0,
a constant) and one base pointer per further input and per output, in order (the weights, the scratch, the
fast scratch, the feature maps read, those written), as TFLite Micro's Ethos-U operator passes them to
`ethosu_invoke_v3`. The scratch inputs are written by the NPU, so they are among the call's writes.
"""

from __future__ import annotations

from heliabuild.aot.facts import NPU_OPERATOR, OperatorFacts
from heliabuild.codegen.calls import IntArray, KernelCall, Lowering, TensorRef, TensorTable
from heliabuild.codegen.lowering_shape import _ELEMENT_BYTES, _byte_size
from heliabuild.codegen.operands import _constant, _need
from heliabuild.model.io import Model

NPU_CALL = ("helia_ethosu_prepare", "helia_ethosu_run", "helia_ethosu_args")
"""The check, run and argument struct of an `ethos-u` operator."""
NPU_HEADER = "helia_ethosu.h"


def lower_ethos_u(op: OperatorFacts, model: Model) -> KernelCall:
    """The KernelCall of one `ethos-u` operator (module docstring)."""
    stream = _constant(op.input(0), "the command stream (input 0)")
    regions = [*op.inputs[1:], *op.outputs]
    _need(all(t is not None for t in regions), "an ethos-u operator with an absent tensor")
    tensors = [t for t in regions if t is not None]
    for tensor in tensors:
        _need(
            tensor.dtype in _ELEMENT_BYTES and tensor.static, f"tensor {tensor.name!r}: {tensor.dtype} {tensor.shape}"
        )
    inputs = [t for t in op.inputs[1:] if t is not None]
    scratch = tuple(t.index for t in inputs[1:3] if not t.is_constant)
    check, run, args_type = NPU_CALL
    return KernelCall.of(
        op,
        "helia_ethosu",
        args_type,
        check=check,
        run=run,
        fields=(
            ("command_stream", TensorRef(stream.index)),
            ("command_stream_bytes", _byte_size(stream)),
            ("regions", TensorTable(tuple(t.index for t in tensors))),
            ("region_bytes", IntArray("uint32_t", tuple(_byte_size(t) for t in tensors))),
            ("region_count", len(tensors)),
        ),
        reads=tuple(t.index for t in inputs if not t.is_constant),
        writes=(*(t.index for t in op.outputs), *scratch),
    )


NPU_LOWERINGS: dict[str, Lowering] = {NPU_OPERATOR: lower_ethos_u}
NPU_FORMS: dict[str, str] = {NPU_OPERATOR: "Vela's command streams"}
