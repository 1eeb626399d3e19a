"""Lowering of the operators that carry state across invokes (docs/firmware.md, "Models with state").

- UNIDIRECTIONAL_SEQUENCE_LSTM in TFLite's integer form (int8 input, weights and output state, int16 cell state
  with a power-of-two scale, five intermediates; no peephole, CIFG, projection or layer norm): one
  `helia_lstm_s8` call (c/ops_lstm.c), the parameters from heliabuild.kernels.lstm.lstm_params, its scratch
  (the four gates of one row) in the arena.
- SVDF in TFLite's integer form (int8 input, weights_feature and output, int16 weights_time and activation state
  with zero point 0, fused RELU, which LiteRT requires and does not apply): one `helia_svdf_s8` call
  (c/ops_svdf.c), the parameters from heliabuild.kernels.svdf.svdf_params; no scratch.

- Resource variables (heliabuild.codegen.variables): READ_VARIABLE and ASSIGN_VARIABLE copy the value out of
  or into the variable's storage (`helia_reshape`, the byte copy); VAR_HANDLE and CALL_ONCE are zero-byte
  copies (one call per operator), their work done by the layout (the storage) and by model_init (the CALL_ONCE
  values).

Their variable tensors and resource storage are not arena buffers: heliabuild.codegen.layout places them in the
carried state region, set by model_init only. `STATE_LOWERINGS` and `STATE_FORMS` are added to the base table by
heliabuild.codegen.module.lower.
"""

from __future__ import annotations

import numpy as np
from ai_edge_litert import schema_py_generated as schema

from heliabuild.aot.facts import OperatorFacts, TensorFacts
from heliabuild.codegen.calls import InlineInts, IntArray, KernelCall, Lowering, ScratchRef, TensorRef
from heliabuild.codegen.operands import _constant, _dtype, _need, _quant, _Refusal
from heliabuild.codegen.variables import resource_variables
from heliabuild.kernels import int8, lstm, svdf
from heliabuild.model.io import Model

LSTM_INPUTS = 24
_INPUT_WEIGHTS = (1, 2, 3, 4)
_RECURRENT_WEIGHTS = (5, 6, 7, 8)
_BIASES = (12, 13, 14, 15)
_ABSENT = {
    "peephole": (9, 10, 11),
    "projection": (16, 17),
    "layer norm": (20, 21, 22, 23),
}
_OUTPUT_STATE, _CELL_STATE = 18, 19


def _variable(tensor: TensorFacts | None, dtype: str, what: str) -> TensorFacts:
    found = _dtype(tensor, dtype, what)
    _need(found.is_variable, f"{what} {found.name!r} is not a variable tensor")
    return found


def _weights(model: Model, tensor: TensorFacts | None, what: str) -> tuple[TensorFacts, np.ndarray, float]:
    weights = _dtype(_constant(tensor, what), "int8", what)
    q = weights.quantization
    _need(q is not None and len(q.scales) == 1, f"{what} {weights.name!r} is not quantized per tensor")
    assert q is not None
    _need(all(z == 0 for z in q.zero_points), f"{what} {weights.name!r} is not symmetric (zero point 0)")
    data = model.buffer_data(weights.buffer)
    assert data is not None
    return weights, np.frombuffer(data.tobytes(), np.int8).reshape(weights.shape), q.scales[0]


def _hidden_quant(model: Model, op: OperatorFacts) -> int8.Quant:
    """The quantization of the fifth intermediate (the hidden state), which LiteRT's integer LSTM reads."""
    graph = model.subgraphs[0]
    found = graph.operators[op.index].intermediates
    intermediates = [] if found is None else [int(t) for t in found]
    _need(len(intermediates) == 5, f"{len(intermediates)} intermediates; the integer LSTM has 5")
    tensor = graph.tensors[intermediates[4]]
    q = tensor.quantization
    _need(q is not None and q.scale is not None and len(q.scale) == 1, "the hidden intermediate has no scale")
    assert q is not None and q.scale is not None
    zero_point = int(q.zeroPoint[0]) if q.zeroPoint is not None and len(q.zeroPoint) else 0
    return int8.Quant(float(q.scale[0]), zero_point)


def _lstm(op: OperatorFacts, model: Model) -> KernelCall:
    _need(len(op.inputs) == LSTM_INPUTS, f"{len(op.inputs)} inputs; UNIDIRECTIONAL_SEQUENCE_LSTM has {LSTM_INPUTS}")
    data = _dtype(op.input(0), "int8", "input")
    _need(len(data.shape) == 3, f"input {data.name!r} is rank {len(data.shape)}, expected 3")
    for what, positions in _ABSENT.items():
        _need(all(op.input(k) is None for k in positions), f"{what} has no integer LSTM kernel")
    _need(op.input(1) is not None and op.input(5) is not None, "CIFG (no input gate) has no integer LSTM kernel")
    output_state = _variable(op.input(_OUTPUT_STATE), "int8", "output state")
    cell_state = _variable(op.input(_CELL_STATE), "int16", "cell state")
    output = _dtype(op.output, "int8", "output")
    time_major = bool(op.option("time_major", False))
    steps, batches, features = data.shape if time_major else (data.shape[1], data.shape[0], data.shape[2])
    units = output_state.shape[-1]
    _need(tuple(output_state.shape) == (batches, units), f"output state shape {list(output_state.shape)}")
    _need(tuple(cell_state.shape) == (batches, units), f"cell state shape {list(cell_state.shape)}")
    expected = (steps, batches, units) if time_major else (batches, steps, units)
    _need(tuple(output.shape) == expected, f"output shape {list(output.shape)}, expected {list(expected)}")
    input_w = [_weights(model, op.input(k), "input weights") for k in _INPUT_WEIGHTS]
    recurrent_w = [_weights(model, op.input(k), "recurrent weights") for k in _RECURRENT_WEIGHTS]
    for tensor, codes, _ in input_w:
        _need(codes.shape == (units, features), f"input weights {tensor.name!r} are not [{units}, {features}]")
    for tensor, codes, _ in recurrent_w:
        _need(codes.shape == (units, units), f"recurrent weights {tensor.name!r} are not [{units}, {units}]")
    biases: list[np.ndarray | None] = []
    for k in _BIASES:
        bias = op.input(k)
        _need(bias is not None, "a gate without a bias has no integer LSTM kernel")
        bias = _dtype(_constant(bias, "bias"), "int32", "bias")
        _need(bias.element_count == units, f"bias {bias.name!r} has {bias.element_count} values for {units} units")
        data_b = model.buffer_data(bias.buffer)
        assert data_b is not None
        biases.append(np.frombuffer(data_b.tobytes(), np.int32))
    cell_q = cell_state.quantization
    _need(cell_q is not None and len(cell_q.scales) == 1, "the cell state has no scale")
    assert cell_q is not None
    _need(all(z == 0 for z in cell_q.zero_points), "the cell state's zero point is not 0")
    try:
        params = lstm.lstm_params(
            _quant(data, "input"), _quant(output_state, "output state"), cell_q.scales[0], _hidden_quant(model, op),
            [(codes, scale) for _, codes, scale in input_w], [(codes, scale) for _, codes, scale in recurrent_w],
            biases, float(op.option("cell_clip", 0.0) or 0.0),
        )  # fmt: skip
    except int8.Int8KernelError as error:
        raise _Refusal(error.message) from None
    gates = ("input", "forget", "cell", "output")
    scratch = lstm.scratch_bytes(units)
    return KernelCall.of(
        op,
        "helia_lstm_s8",
        "helia_lstm_s8_args",
        fields=(
            ("input", TensorRef(data.index)),
            *((f"input_to_{g}_weights", TensorRef(w.index)) for g, (w, _, _) in zip(gates, input_w, strict=True)),
            *(
                (f"recurrent_to_{g}_weights", TensorRef(w.index))
                for g, (w, _, _) in zip(gates, recurrent_w, strict=True)
            ),
            *((f"{g}_gate_bias", IntArray("int32_t", b)) for g, b in zip(gates, params.input_biases, strict=True)),
            *(
                (f"recurrent_{g}_gate_bias", IntArray("int32_t", b))
                for g, b in zip(gates, params.recurrent_biases, strict=True)
            ),
            ("input_multipliers", InlineInts(params.input_multipliers)),
            ("input_shifts", InlineInts(params.input_shifts)),
            ("recurrent_multipliers", InlineInts(params.recurrent_multipliers)),
            ("recurrent_shifts", InlineInts(params.recurrent_shifts)),
            ("output_state", TensorRef(output_state.index)),
            ("cell_state", TensorRef(cell_state.index)),
            ("output", TensorRef(output.index)),
            ("scratch", ScratchRef(scratch)),
            ("scratch_bytes", scratch),
            ("batches", batches),
            ("time_steps", steps),
            ("input_size", features),
            ("units", units),
            ("time_major", int(time_major)),
            ("cell_log2", params.cell_log2),
            ("cell_clip", params.cell_clip),
            ("hidden_multiplier", params.hidden_multiplier),
            ("hidden_shift", params.hidden_shift),
            ("hidden_zero_point", params.hidden_zero_point),
        ),
        reads=(data.index, *(t.index for t in op.inputs if t is not None and t.is_constant), output_state.index,
               cell_state.index),
        writes=(output.index, output_state.index, cell_state.index),
    )  # fmt: skip


def _svdf(op: OperatorFacts, model: Model) -> KernelCall:
    _need(len(op.inputs) == 5, f"{len(op.inputs)} inputs; SVDF has 5")
    data = _dtype(op.input(0), "int8", "input")
    feature = _dtype(_constant(op.input(1), "weights_feature"), "int8", "weights_feature")
    time = _dtype(_constant(op.input(2), "weights_time"), "int16", "weights_time")
    state = _variable(op.input(4), "int16", "activation state")
    output = _dtype(op.output, "int8", "output")
    _need(len(data.shape) == 2 and len(feature.shape) == 2 and len(time.shape) == 2, "SVDF tensors are rank 2")
    batches, input_size = data.shape
    filters, memory = time.shape
    rank = int(op.option("rank", 0) or 0)
    _need(rank >= 1 and filters % rank == 0, f"rank {rank} does not divide the {filters} filters")
    _need(tuple(feature.shape) == (filters, input_size), f"weights_feature shape {list(feature.shape)}")
    _need(tuple(state.shape) == (batches, filters * memory), f"activation state shape {list(state.shape)}")
    _need(tuple(output.shape) == (batches, filters // rank), f"output shape {list(output.shape)}")
    feature_q = _quant(feature, "weights_feature")
    _need(feature_q.zero_point == 0, f"weights_feature {feature.name!r} is not symmetric (zero point 0)")
    bias = op.input(3)
    if bias is not None:
        _dtype(_constant(bias, "bias"), "int32", "bias")
        _need(bias.element_count == filters // rank, f"bias {bias.name!r} has {bias.element_count} values")
    try:
        params = svdf.svdf_params(
            _quant(data, "input"), feature_q.scale, _quant(time, "weights_time"), _quant(state, "activation state"),
            _quant(output, "output"), rank, op.fused_activation or "NONE",
        )  # fmt: skip
    except int8.Int8KernelError as error:
        raise _Refusal(error.message) from None
    return KernelCall.of(
        op,
        "helia_svdf_s8",
        "helia_svdf_s8_args",
        fields=(
            ("input", TensorRef(data.index)),
            ("weights_feature", TensorRef(feature.index)),
            ("weights_time", TensorRef(time.index)),
            ("bias", None if bias is None else TensorRef(bias.index)),
            ("state", TensorRef(state.index)),
            ("output", TensorRef(output.index)),
            ("batches", batches),
            ("input_size", input_size),
            ("filters", filters),
            ("memory_size", memory),
            *((name, getattr(params, name)) for name in ("rank", "input_zero_point", "output_zero_point",
                                                          "feature_multiplier", "feature_shift", "time_multiplier",
                                                          "time_shift", "act_min", "act_max")),
        ),
        reads=tuple(t.index for t in op.inputs if t is not None),
        writes=(output.index, state.index),
    )  # fmt: skip


def _copy(op: OperatorFacts, source: TensorRef | None, size: int, destination: TensorRef | None) -> KernelCall:
    reads = () if source is None else (source.index,)
    writes = () if destination is None else (destination.index,)
    return KernelCall.of(
        op,
        "helia_reshape",
        None,
        fields=(("input", source), ("input_bytes", size), ("output", destination), ("output_bytes", size)),
        reads=reads,
        writes=writes,
    )


def _resource(op: OperatorFacts, model: Model) -> KernelCall:
    variables = resource_variables(model, model.name)
    if op.op_type in ("VAR_HANDLE", "CALL_ONCE"):
        return _copy(op, None, 0, None)
    handle = op.input(0)
    _need(handle is not None and handle.index in variables, f"{op.op_type} names no resource variable")
    assert handle is not None
    variable = variables[handle.index]
    value = op.output if op.op_type == "READ_VARIABLE" else op.input(1)
    _need(value is not None, f"{op.op_type} has no value tensor")
    assert value is not None
    _need(
        value.static and tuple(value.shape) == variable.shape and value.dtype == _DTYPE_NAMES.get(variable.dtype),
        f"{op.op_type} value {value.name!r} is {value.dtype} {list(value.shape)}; the variable {variable.name!r} "
        f"holds {_DTYPE_NAMES.get(variable.dtype)} {list(variable.shape)}",
    )
    if op.op_type == "READ_VARIABLE":
        return _copy(op, TensorRef(handle.index), variable.bytes, TensorRef(value.index))
    return _copy(op, TensorRef(value.index), variable.bytes, TensorRef(handle.index))


_DTYPE_NAMES = {value: name.lower() for name, value in vars(schema.TensorType).items() if not name.startswith("_")}


STATE_LOWERINGS: dict[str, Lowering] = {
    "UNIDIRECTIONAL_SEQUENCE_LSTM": _lstm,
    "SVDF": _svdf,
    **dict.fromkeys(("CALL_ONCE", "VAR_HANDLE", "READ_VARIABLE", "ASSIGN_VARIABLE"), _resource),
}
"""Operator type -> lowering, for the operators whose kernels carry variable tensors across invokes."""

STATE_FORMS: dict[str, str] = {
    "UNIDIRECTIONAL_SEQUENCE_LSTM": "integer int8 with an int16 cell state (no peephole, projection or layer norm)",
    "SVDF": "integer int8 with int16 weights_time and state (the fused relu LiteRT requires)",
    **dict.fromkeys(
        ("CALL_ONCE", "VAR_HANDLE", "READ_VARIABLE", "ASSIGN_VARIABLE"),
        "resource variables of any dtype, initialized by constants",
    ),
}
"""The forms each type of STATE_LOWERINGS admits, as the refusal hint lists them."""
