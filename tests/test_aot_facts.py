"""heliabuild.aot.facts: operator facts, storage roots, constants read and why a constant cannot be staged."""

from __future__ import annotations

import numpy as np
import pytest
from ai_edge_litert import schema_py_generated as schema
from test_aot_facts_builders import OP, int8_conv_model, int8_fc_model, reload

from heliabuild.aot import facts as F
from heliabuild.model import load_model, stable_operator_ids
from heliabuild.synth import GraphBuilder, chain_network


def test_conv_facts_read_shapes_options_and_scales():
    model = int8_conv_model(
        input_shape=(1, 9, 9, 4), kernel=(3, 3), stride=(2, 2), padding="SAME", weight_scales=[0.01, 0.02, 0.03, 0.04]
    )
    (conv,) = F.model_facts(model)
    assert conv.op_type == "CONV_2D" and conv.index == 0 and conv.custom_code is None
    assert conv.id == "0:output" and conv.id_source == "output_name" and conv.node_id == "0/0"
    assert conv.stride == (2, 2) and conv.padding == "SAME" and conv.dilation == (1, 1)
    assert conv.fused_activation == "NONE" and conv.depth_multiplier is None
    assert conv.weight_shape == (4, 3, 3, 4) and conv.kernel_hw == (3, 3) and conv.groups == 1
    data, weights, bias = conv.inputs
    assert data.name == "input" and data.dtype == "int8" and data.shape == (1, 9, 9, 4) and not data.is_constant
    assert weights.is_constant and weights.quantization.per_axis and weights.quantization.axis == 0
    assert weights.quantization.scales == pytest.approx((0.01, 0.02, 0.03, 0.04))
    assert bias.dtype == "int32" and conv.bias is bias and conv.weights is weights
    assert conv.output.shape == (1, 5, 5, 4)
    # SAME, 9 -> 5 with stride 2 and a 3x3 filter: total padding 2, CMSIS-NN gets the smaller half.
    assert conv.pads == (1, 1)
    assert conv.option("stride_h") == 2 and conv.option("missing", "x") == "x"


def test_same_padding_takes_the_smaller_half():
    model = int8_conv_model(input_shape=(1, 8, 8, 4), kernel=(3, 3), stride=(2, 2), padding="SAME")
    (conv,) = F.model_facts(model)
    assert conv.output.shape == (1, 4, 4, 4)
    assert conv.pads == (0, 0)  # total padding 1: 0 before, 1 after


def test_depthwise_and_fully_connected_facts():
    (dw,) = F.model_facts(int8_conv_model(op="DEPTHWISE_CONV_2D", input_shape=(1, 6, 6, 4), out_channels=8))
    assert dw.depth_multiplier == 2 and dw.weight_shape == (1, 3, 3, 8) and dw.groups is None
    (fc,) = F.model_facts(int8_fc_model(batch=3, depth=16, units=8))
    assert fc.keep_num_dims is False and fc.weight_shape == (8, 16) and fc.stride is None and fc.pads is None
    assert fc.weights.quantization.per_axis is False


def test_model_facts_ids_match_the_stable_ids(chain_file):
    model = load_model(chain_file)
    ids = stable_operator_ids(model)
    facts = F.model_facts(model)
    assert [f.id for f in facts] == [i.id for i in ids]
    assert [f.op_type for f in facts] == [i.op_type for i in ids]
    assert F.operator_facts(model, 1) == facts[1]


def test_optional_inputs_keep_their_positions():
    b = GraphBuilder()
    x = b.activation("x", (1, 4, 4, 2), np.float32)
    w = b.constant("w", np.ones((3, 1, 1, 2), np.float32))
    y = b.activation("y", (1, 4, 4, 3), np.float32)
    b.operator(OP.CONV_2D, [x, w, -1], [y], schema.Conv2DOptionsT())
    (conv,) = F.model_facts(reload(b.finish([x], [y], "d", "m")))
    assert len(conv.inputs) == 3 and conv.inputs[2] is None and conv.bias is None
    assert conv.input(7) is None


def _shared_buffer_model():
    """Two operators; the second reads a constant that shares the first one's buffer, and a reshape shape."""
    b = GraphBuilder()
    x = b.activation("x", (1, 4), np.float32)
    w = b.constant("w", np.ones((4, 4), np.float32))
    y = b.activation("y", (1, 4), np.float32)
    b.operator(OP.FULLY_CONNECTED, [x, w, -1], [y], schema.FullyConnectedOptionsT())
    alias = b.constant("w_alias", np.ones((4, 4), np.float32))
    b.tensors[alias].buffer = b.tensors[w].buffer
    z = b.activation("z", (1, 4), np.float32)
    b.operator(OP.FULLY_CONNECTED, [y, alias, w], [z], schema.FullyConnectedOptionsT())
    shape = b.constant("shape", np.array([4], np.int32))
    out = b.activation("out", (4,), np.float32)
    b.operator(OP.RESHAPE, [z, shape], [out], schema.ReshapeOptionsT())
    return reload(b.finish([x], [out], "aliases", "m"))


def test_storage_roots_are_buffers_in_first_reader_order():
    model = _shared_buffer_model()
    roots = F.storage_roots(model)
    assert [r.name for r in roots] == ["w", "shape"]
    w = roots[0]
    assert w.tensors == (1, 3) and w.readers == (0, 1) and w.aliased and w.bytes == 64
    reads = F.constants_by_operator(model)
    assert [[c.root_name for c in op] for op in reads] == [["w"], ["w"], ["shape"]]
    # The second operator names the alias first: the read keeps its own name, under the root.
    assert reads[1][0].name == "w_alias" and reads[1][0].root == 1
    assert F.constants_read(model, 2)[0].bytes == 4


def test_unstageable_reasons():
    reasons = F.unstageable_reasons(_shared_buffer_model())
    assert reasons == {1: F.REASON_ALIAS, 5: F.REASON_READ_AT_INIT}


def test_a_constant_model_output_cannot_be_staged():
    b = GraphBuilder()
    x = b.activation("x", (1, 4), np.float32)
    c = b.constant("c", np.ones((1, 4), np.float32))
    y = b.activation("y", (1, 4), np.float32)
    b.operator(OP.ADD, [x, c], [y], schema.AddOptionsT())
    model = reload(b.finish([x], [y, c], "constant output", "m"))
    assert F.unstageable_reasons(model) == {1: F.REASON_MODEL_OUTPUT}


def npu_model():
    """input -> ethos-u (command stream and weights as constants) -> output, as Vela writes it."""
    b = GraphBuilder()
    x = b.activation("input", (1, 8), np.int8)
    stream = b.constant("ethos_u_command_stream", np.arange(32, dtype=np.uint8))
    weights = b.constant("read_only", np.arange(64, dtype=np.uint8))
    scratch = b.activation("scratch", (128,), np.uint8)
    y = b.activation("output", (1, 8), np.int8)
    opcode = schema.OperatorCodeT()
    opcode.builtinCode = OP.CUSTOM
    opcode.deprecatedBuiltinCode = OP.CUSTOM
    opcode.customCode = "ethos-u"
    opcode.version = 1
    b.operator_codes.append(opcode)
    op = schema.OperatorT()
    op.opcodeIndex = len(b.operator_codes) - 1
    op.inputs = [stream, weights, scratch, scratch, x]
    op.outputs = [y]
    b.operators.append(op)
    return reload(b.finish([x], [y], "npu", "npu.tflite"))


def test_npu_constants_are_fixed_in_place():
    model = npu_model()
    (npu,) = F.model_facts(model)
    assert npu.op_type == F.NPU_OPERATOR and npu.custom_code == "ethos-u"
    assert F.unstageable_reasons(model) == {1: F.REASON_FIXED_IN_PLACE, 2: F.REASON_FIXED_IN_PLACE}


def test_kws_and_synthetic_chain_constants(chain_file):
    model = load_model(chain_file)
    roots = F.storage_roots(model)
    reads = F.constants_by_operator(model)
    # Every root is read, by the operators that list it; roots are in first-reader order.
    firsts = [r.readers[0] for r in roots]
    assert firsts == sorted(firsts)
    for root in roots:
        for reader in root.readers:
            assert root.tensor in [c.root for c in reads[reader]]
    reshape_shapes = [r for r in roots if F.unstageable_reasons(model)[r.tensor] == F.REASON_READ_AT_INIT]
    assert all(model.subgraphs[0].tensors[r.tensor].type == schema.TensorType.INT32 for r in reshape_shapes)


def test_dtype_names_cover_the_schema():
    assert F.DTYPE_NAMES[schema.TensorType.FLOAT16] == "float16"
    assert F.DTYPE_NAMES[schema.TensorType.INT8] == "int8"
    assert chain_network(0).subgraphs  # the synthetic chain builds
