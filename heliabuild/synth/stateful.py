"""A stateful float32 model: a CALL_ONCE init subgraph and a resource-variable counter.

`counter_model(seed)` builds two subgraphs:

- subgraph 0 (`main`): CALL_ONCE(init) ; VAR_HANDLE('counter') -> h ; READ_VARIABLE(h) -> c ;
  ADD(c, step) -> c1 ; ASSIGN_VARIABLE(h, c1) ; ADD(x, c1) -> y ; ADD(y, bias) -> out.
  Input `x` float32 [1, 4], output `out` float32 [1, 4].
- subgraph 1 (`init`): VAR_HANDLE('counter') -> h ; ASSIGN_VARIABLE(h, zeros).

Each invoke on one initialized instance adds `step` (1.0) to the counter, so with zero inputs the
n-th invoke returns n + bias: state that persists across invokes is visible in the outputs. The
seed only draws `bias`. With `call_once=False` there is no init subgraph: subgraph 0 assigns zeros to
the counter before reading it, so every invoke returns 1 + bias (a resource-variable model without
CALL_ONCE). With `int8` every tensor is int8 instead (x, y and out at scale 1/2, zero point 0; the counter at
scale 1/8, zero point -128, so it counts to 31.875 and then saturates), the module generator's form.
"""

from __future__ import annotations

import numpy as np
from ai_edge_litert import schema_py_generated as schema

from heliabuild.model.io import Model
from heliabuild.synth.builder import GraphBuilder
from heliabuild.synth.quant import quantization_parameters

_OP = schema.BuiltinOperator
SHAPE = (1, 4)
VARIABLE_NAME = "counter"


def _var_handle_options() -> schema.VarHandleOptionsT:
    options = schema.VarHandleOptionsT()
    options.container = ""
    options.sharedName = VARIABLE_NAME
    return options


def _resource(builder: GraphBuilder, name: str) -> int:
    index = builder.activation(name, [], "int32")
    builder.tensors[index].type = schema.TensorType.RESOURCE
    return index


def counter_model(seed: int = 0, call_once: bool = True, int8: bool = False) -> Model:
    """The counter model described in the module docstring (byte-identical for the same arguments)."""
    rng = np.random.default_rng(seed)
    bias = rng.integers(-4, 5, size=SHAPE).astype(np.float32)
    dtype = "int8" if int8 else "float32"
    value_q = quantization_parameters([0.5], [0]) if int8 else None
    count_q = quantization_parameters([0.125], [-128]) if int8 else None

    def constant(real: np.ndarray, quant: tuple[float, int]) -> np.ndarray:
        if not int8:
            return real.astype(np.float32)
        return np.clip(np.round(real / quant[0]) + quant[1], -128, 127).astype(np.int8)

    main = GraphBuilder()
    x = main.activation("x", SHAPE, dtype, value_q)
    step = main.constant("step", constant(np.ones((1,)), (0.125, -128)), count_q)
    bias_t = main.constant("bias", constant(bias, (0.5, 0)), value_q)
    handle = _resource(main, "counter_handle")
    count = main.activation("count", (1,), dtype, count_q)
    count_next = main.activation("count_next", (1,), dtype, count_q)
    y = main.activation("y", SHAPE, dtype, value_q)
    out = main.activation("out", SHAPE, dtype, value_q)
    if call_once:
        options = schema.CallOnceOptionsT()
        options.initSubgraphIndex = 1
        main.operator(_OP.CALL_ONCE, [], [], options)
    main.operator(_OP.VAR_HANDLE, [], [handle], _var_handle_options())
    if not call_once:
        zeros = main.constant("counter_zero", constant(np.zeros((1,)), (0.125, -128)), count_q)
        main.operator(_OP.ASSIGN_VARIABLE, [handle, zeros], [], schema.AssignVariableOptionsT())
    main.operator(_OP.READ_VARIABLE, [handle], [count], schema.ReadVariableOptionsT())
    main.operator(_OP.ADD, [count, step], [count_next], schema.AddOptionsT())
    main.operator(_OP.ASSIGN_VARIABLE, [handle, count_next], [], schema.AssignVariableOptionsT())
    main.operator(_OP.ADD, [x, count_next], [y], schema.AddOptionsT())
    main.operator(_OP.ADD, [y, bias_t], [out], schema.AddOptionsT())
    model = main.finish([x], [out], "heliabuild synth stateful counter", "<stateful_counter>", dynamic_batch=False)
    if not call_once:
        return model

    # The init subgraph shares the model's buffers and operator codes.
    init_tensors: list[schema.TensorT] = []

    def tensor(
        name: str, shape: list[int], type_: int, data: np.ndarray | None, quant: schema.QuantizationParametersT | None
    ) -> int:
        buffer = schema.BufferT()
        buffer.data = data
        model.buffers.append(buffer)
        entry = schema.TensorT()
        entry.name = name
        entry.shape = shape
        entry.type = type_
        entry.buffer = len(model.buffers) - 1
        entry.quantization = quant
        init_tensors.append(entry)
        return len(init_tensors) - 1

    init_handle = tensor("init/counter_handle", [], schema.TensorType.RESOURCE, None, None)
    zero = constant(np.zeros((1,)), (0.125, -128)).view(np.uint8)
    zero_type = schema.TensorType.INT8 if int8 else schema.TensorType.FLOAT32
    init_zero = tensor("init/zero", [1], zero_type, zero, count_q)
    codes = model.operator_codes
    by_code = {int(code.builtinCode): index for index, code in enumerate(codes)}
    init_ops = []
    for code, inputs, outputs, options_type, options in (
        (_OP.VAR_HANDLE, [], [init_handle], schema.BuiltinOptions.VarHandleOptions, _var_handle_options()),
        (
            _OP.ASSIGN_VARIABLE,
            [init_handle, init_zero],
            [],
            schema.BuiltinOptions.AssignVariableOptions,
            schema.AssignVariableOptionsT(),
        ),
    ):
        if code not in by_code:  # pragma: no cover - subgraph 0 uses both
            raise AssertionError(f"operator code {code} missing from subgraph 0")
        op = schema.OperatorT()
        op.opcodeIndex = by_code[code]
        op.inputs = inputs
        op.outputs = outputs
        op.builtinOptionsType = options_type
        op.builtinOptions = options
        init_ops.append(op)
    init = schema.SubGraphT()
    init.name = "init"
    init.tensors = init_tensors
    init.inputs = []
    init.outputs = []
    init.operators = init_ops
    model.root.subgraphs.append(init)
    return model
