"""heliabuild.aot.entries: the kernel-entry table, kernel choices, requantization and CORE calls."""

from __future__ import annotations

import math

import numpy as np
import pytest
from ai_edge_litert import schema_py_generated as schema
from test_aot_facts import npu_model
from test_aot_facts_builders import OP, float_conv_layer, int8_conv_model, int8_fc_model, reload

from heliabuild.aot import entries as E
from heliabuild.aot import entry_table as T
from heliabuild.aot import requantization as R
from heliabuild.aot.facts import model_facts
from heliabuild.model import load_model
from heliabuild.synth import GraphBuilder
from heliabuild.synth.quant import quantization_parameters

M4 = ("DSP", "MCU")
M55 = ("DSP", "FP16", "MCU", "MVE")


def only(model):
    (facts,) = model_facts(model)
    return facts


# --- quantize_multiplier and requantization ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (0.0, (0, 0)),
        (0.5, (1 << 30, 0)),
        (1.0, (1 << 30, 1)),
        (0.25, (1 << 30, -1)),
        (0.75, (3 << 29, 0)),
        (1 - 2**-40, (1 << 30, 1)),  # rounds up to 2^31: halved, shift raised
        (2**-40, (0, 0)),  # shift below -31
        (3.0, (3 << 29, 2)),
    ],
)
def test_quantize_multiplier(value, expected):
    assert R.quantize_multiplier(value) == expected


def test_quantize_multiplier_reconstructs_the_scale():
    for value in (0.0003, 0.0123, 0.37, 0.99, 1.7, 12.5):
        multiplier, shift = R.quantize_multiplier(value)
        assert (1 << 30) <= multiplier < (1 << 31)
        assert multiplier * 2.0 ** (shift - 31) == pytest.approx(value, rel=2**-30)


@pytest.mark.parametrize(
    ("scales", "expected"),
    [
        ([0.4, 0.1], R.RSHIFT_ONLY),
        ([0.5], R.GENERAL),  # frexp(0.5) has shift 0: not below 0
        ([0.499999], R.RSHIFT_ONLY),
        ([0.1, 2.0], R.GENERAL),
        ([0.0, 0.3], R.RSHIFT_ONLY),  # a zero multiplier counts as right-shift only
        ([1e-15], R.RSHIFT_ONLY),
    ],
)
def test_requantization_of(scales, expected):
    assert R.requantization_of(scales) == expected


def test_requantization_from_the_model_scales():
    # effective scale = 0.05 * w / 0.1 = w / 2
    general = int8_conv_model(weight_scales=[0.2, 1.0, 0.4, 0.1])  # 0.5 in channel 1
    rshift = int8_conv_model(weight_scales=[0.2, 0.9, 0.4, 0.1])  # all below 0.5
    assert R.requantization(only(general)) == R.GENERAL
    assert R.requantization(only(rshift)) == R.RSHIFT_ONLY
    assert R.effective_scales(only(rshift)) == pytest.approx([0.1, 0.45, 0.2, 0.05])
    int16 = int8_conv_model(dtype="int16", input_scale=1.0, output_scale=0.25, weight_scales=[0.2] * 4)
    assert R.requantization(only(int16)) == R.GENERAL
    assert E.kernel_choice(only(int16), {}, M4).requantization == R.GENERAL
    dw = int8_conv_model(op="DEPTHWISE_CONV_2D", weight_scales=[0.1] * 4)
    assert E.kernel_choice(only(dw), {}, M4).requantization == R.RSHIFT_ONLY


def _reference_requantization(model, facts):
    """An independent statement: TFLite's double effective scale, numpy's frexp, Q31 rounding."""
    tensors = model.subgraphs[0].tensors
    op = model.subgraphs[0].operators[facts.index]
    data, weights, out = (tensors[op.inputs[0]], tensors[op.inputs[1]], tensors[op.outputs[0]])
    shifts = []
    for w in np.asarray(weights.quantization.scale, dtype=np.float32):
        scale = np.float64(np.float32(data.quantization.scale[0])) * np.float64(w)
        scale /= np.float64(np.float32(out.quantization.scale[0]))
        fraction, shift = np.frexp(scale)
        if round(float(fraction) * 2**31) == 2**31:
            shift += 1
        shifts.append((scale != 0 and shift >= -31, int(shift)))
    general = any(nonzero and shift >= 0 for nonzero, shift in shifts)
    return R.GENERAL if general else R.RSHIFT_ONLY


def test_requantization_on_the_real_models(shared_model_path):
    model = load_model(shared_model_path)
    checked = 0
    for facts in model_facts(model):
        choice = E.kernel_choice(facts, {}, M55)
        if facts.op_type in ("CONV_2D", "DEPTHWISE_CONV_2D", "FULLY_CONNECTED"):
            assert choice.requantization == _reference_requantization(model, facts)
            scales = R.effective_scales(facts)
            assert scales and all(0 < s < 0.5 for s in scales)
            checked += 1
        else:
            assert choice.requantization is None
    assert checked >= 10


# --- the shared models ---------------------------------------------------------------------------------------------


def test_kws_entries(kws_path):
    facts = model_facts(load_model(kws_path))
    plain = [E.kernel_choice(f, {"kernel": "specialized"}, M4) for f in facts]
    mve = [E.kernel_choice(f, {"kernel": "specialized"}, M55) for f in facts]
    assert [c.entry for c in plain] == [
        "arm_convolve_s8",  # 10x4 filter, stride 2
        *["arm_depthwise_conv_3x3_s8", "arm_convolve_1x1_s8_fast"] * 4,
        "arm_avgpool_s8",
        None,  # RESHAPE: no table entry
        "arm_fully_connected_s8",
        None,  # SOFTMAX records no entry
    ]
    assert [c.entry for c in mve][1:3] == ["arm_depthwise_conv_s8_opt", "arm_convolve_1x1_s8_fast"]
    assert plain[1].candidates == ("arm_depthwise_conv_3x3_s8", "arm_depthwise_conv_s8_opt", "arm_depthwise_conv_s8")
    assert mve[1].candidates == ("arm_depthwise_conv_s8_opt", "arm_depthwise_conv_s8")
    assert plain[2].candidates == ("arm_convolve_1x1_s8_fast", "arm_convolve_s8")
    assert plain[9].candidates is None and plain[9].provider == T.PROVIDER_POOLING
    assert plain[12].symbol == "arm_softmax_s8" and plain[12].provider is None and plain[12].candidates is None
    assert plain[10] == E.NO_CHOICE
    assert all(c.local_scratch_bytes is None for c in plain)


def test_resnet_entries(resnet_path):
    facts = model_facts(load_model(resnet_path))
    choices = [E.kernel_choice(f, {}, M55) for f in facts]
    by_index = {f.index: c for f, c in zip(facts, choices, strict=True)}
    assert by_index[6].entry == "arm_convolve_1x1_s8"  # 1x1, stride 2
    assert by_index[10].candidates == ("arm_convolve_1x1_s8", "arm_convolve_s8")
    assert by_index[0].entry == "arm_convolve_s8"
    assert [by_index[i].symbol for i in (3, 7, 11)] == ["arm_elementwise_add_s8"] * 3
    assert [by_index[i].entry for i in (3, 7, 11)] == [None] * 3


# --- rules on synthetic layers -------------------------------------------------------------------------------------


def test_generic_keeps_the_specialized_candidates_listed():
    facts = only(int8_conv_model(kernel=(1, 1)))
    specialized = E.kernel_choice(facts, {"kernel": "specialized"}, M4)
    generic = E.kernel_choice(facts, {"kernel": "generic"}, M4)
    assert specialized.entry == "arm_convolve_1x1_s8_fast"
    assert generic.entry == "arm_convolve_s8"
    assert generic.candidates == specialized.candidates == ("arm_convolve_1x1_s8_fast", "arm_convolve_s8")
    assert E.kernel_choice(facts, None, M4).entry == "arm_convolve_1x1_s8_fast"  # specialized by default
    assert generic.to_plan() == {
        "entry": "arm_convolve_s8",
        "provider": T.PROVIDER_CONV,
        "candidates": ["arm_convolve_1x1_s8_fast", "arm_convolve_s8"],
        "requantization": R.RSHIFT_ONLY,
        "local_scratch_bytes": None,
    }


@pytest.mark.parametrize(
    ("layer", "caps", "candidates"),
    [
        (dict(kernel=(1, 1), padding="SAME"), M4, ["arm_convolve_1x1_s8_fast", "arm_convolve_s8"]),
        (dict(kernel=(1, 1), stride=(2, 2)), M4, ["arm_convolve_1x1_s8", "arm_convolve_s8"]),
        (dict(kernel=(1, 1), dilation=(2, 2)), M4, ["arm_convolve_s8"]),  # the wrapper asks dilation 1
        (dict(input_shape=(1, 1, 8, 4), kernel=(1, 3)), M4, ["arm_convolve_1_x_n_s8", "arm_convolve_s8"]),
        (dict(input_shape=(1, 1, 8, 3), kernel=(1, 3)), M4, ["arm_convolve_s8"]),  # 1 * 3 not a multiple of 4
        (
            dict(input_shape=(1, 1, 8, 3), kernel=(1, 3), stride=(1, 4)),
            M4,
            ["arm_convolve_1_x_n_s8", "arm_convolve_s8"],
        ),
        (
            dict(input_shape=(1, 1, 8, 4), kernel=(1, 1)),
            M4,
            ["arm_convolve_1x1_s8_fast", "arm_convolve_1_x_n_s8", "arm_convolve_s8"],
        ),
        (dict(input_shape=(1, 3, 3, 4), kernel=(3, 3)), M4, ["arm_convolve_s8"]),
        (dict(input_shape=(1, 3, 3, 4), kernel=(3, 3)), M55, ["arm_convolve_1x1_out_s8", "arm_convolve_s8"]),
        (dict(input_shape=(1, 8, 8, 4), kernel=(3, 3), padding="SAME"), M55, ["arm_convolve_s8"]),
        (
            dict(op="DEPTHWISE_CONV_2D", padding="SAME"),
            M4,
            ["arm_depthwise_conv_3x3_s8", "arm_depthwise_conv_s8_opt", "arm_depthwise_conv_s8"],
        ),
        (
            dict(op="DEPTHWISE_CONV_2D", kernel=(5, 5), padding="SAME"),
            M4,
            ["arm_depthwise_conv_s8_opt", "arm_depthwise_conv_s8"],
        ),
        (dict(op="DEPTHWISE_CONV_2D", out_channels=8), M4, ["arm_depthwise_conv_s8"]),  # depth multiplier 2
        (dict(op="DEPTHWISE_CONV_2D", dilation=(2, 2)), M4, ["arm_depthwise_conv_s8"]),
        (dict(op="DEPTHWISE_CONV_2D", input_shape=(2, 8, 8, 4)), M4, ["arm_depthwise_conv_s8"]),  # batch 2
        (dict(dtype="int16", kernel=(1, 1)), M55, ["arm_convolve_1x1_s16_ns_np_nd", "arm_convolve_s16"]),
        (dict(dtype="int16", kernel=(1, 1)), M4, ["arm_convolve_s16"]),
        (dict(dtype="int16", op="DEPTHWISE_CONV_2D"), M4, ["arm_depthwise_conv_fast_s16", "arm_depthwise_conv_s16"]),
        (dict(dtype="int16", op="DEPTHWISE_CONV_2D", out_channels=8), M4, ["arm_depthwise_conv_s16"]),
    ],
)
def test_candidates_follow_the_rules(layer, caps, candidates):
    choice = E.kernel_choice(only(int8_conv_model(**layer)), {}, caps)
    assert list(choice.candidates) == candidates
    assert choice.entry == candidates[0]


def test_a_grouped_convolution_runs_the_generic_entry():
    b = GraphBuilder()
    q = quantization_parameters([0.1], [0])
    x = b.activation("x", (1, 4, 4, 8), np.int8, q)
    w = b.constant("w", np.ones((4, 1, 1, 4), np.int8), quantization_parameters([0.01] * 4, [0] * 4))
    y = b.activation("y", (1, 4, 4, 4), np.int8, q)
    b.operator(OP.CONV_2D, [x, w, -1], [y], schema.Conv2DOptionsT())
    facts = only(reload(b.finish([x], [y], "grouped", "m")))
    assert facts.groups == 2
    assert E.kernel_choice(facts, {}, M55).candidates == ("arm_convolve_s8",)


def test_single_input_channel_depthwise_on_mve_is_unresolved():
    facts = only(int8_conv_model(op="DEPTHWISE_CONV_2D", input_shape=(1, 8, 8, 1), out_channels=8))
    mve = E.kernel_choice(facts, {}, M55)
    assert mve.entry is None and mve.candidates is None and mve.symbol is None
    assert mve.provider == T.PROVIDER_DEPTHWISE and mve.requantization == R.RSHIFT_ONLY
    assert E.core_calls(facts, mve) is None
    assert E.kernel_choice(facts, {}, M4).entry == "arm_depthwise_conv_s8"  # multiplier 8 without MVE


def test_fully_connected_entries_follow_the_weight_quantization():
    per_tensor = only(int8_fc_model())
    per_channel = only(int8_fc_model(per_channel=True))
    for value in ("specialized", "generic"):
        assert E.kernel_choice(per_tensor, {"kernel": value}, M4).entry == "arm_fully_connected_s8"
        assert E.kernel_choice(per_channel, {"kernel": value}, M4).entry == "arm_fully_connected_per_channel_s8"
    choice = E.kernel_choice(per_tensor, {}, M4)
    assert choice.candidates == ("arm_fully_connected_s8",) and choice.provider == T.PROVIDER_FULLY_CONNECTED
    assert E.kernel_choice(only(int8_fc_model(dtype="int16")), {}, M4).entry == "arm_fully_connected_s16"


def _fp16_conv(input_shape, weights_shape, **kwargs):
    b = GraphBuilder()
    x = b.activation("x", input_shape, kwargs.get("dtype", np.float16))
    y, _ = float_conv_layer(b, x, input_shape, np.ones(weights_shape), np.zeros(weights_shape[0]), **kwargs)
    return only(reload(b.finish([x], [y], "fp16", "m")))


def test_fp16_convolution_entries_and_packed_weights():
    one = _fp16_conv((1, 4, 4, 8), (16, 1, 1, 8))
    row = _fp16_conv((1, 1, 10, 8), (16, 1, 3, 8))
    square = _fp16_conv((1, 6, 6, 8), (16, 3, 3, 8))
    assert E.kernel_choice(one, {}, M55).candidates == ("arm_convolve_1x1_f16", "arm_convolve_f16")
    assert E.kernel_choice(row, {}, M55).candidates == ("arm_convolve_1_x_n_f16", "arm_convolve_f16")
    assert E.kernel_choice(square, {}, M55).candidates == ("arm_convolve_f16",)
    assert E.kernel_choice(square, {}, M55).requantization is None
    no_fp16 = E.kernel_choice(one, {}, M4)
    assert no_fp16.entry is None and no_fp16.candidates == () and no_fp16.provider == T.PROVIDER_CONV
    packed = E.kernel_choice(one, {}, M55)
    assert E.fixed_choices(one, packed) == {"weight_layout": {"value": "packed", "set_by": "heuristic"}}
    assert E.fixed_choices(one, E.kernel_choice(one, {"kernel": "generic"}, M55)) == {}
    assert E.fixed_choices(square, E.kernel_choice(square, {}, M55)) == {}
    # A float32 convolution has no table entry.
    f32 = _fp16_conv((1, 4, 4, 8), (16, 1, 1, 8), dtype=np.float32)
    assert E.kernel_choice(f32, {}, M55) == E.NO_CHOICE


def _pool_or_elementwise(code, dtype, shapes, out_shape, options):
    b = GraphBuilder()
    q = quantization_parameters([0.1], [0])
    inputs = [b.activation(f"x{i}", shape, dtype, q) for i, shape in enumerate(shapes)]
    y = b.activation("y", out_shape, dtype, q)
    b.operator(code, inputs, [y], options)
    return only(reload(b.finish(inputs, [y], "op", "m")))


def _pool_options():
    options = schema.Pool2DOptionsT()
    options.filterHeight = options.filterWidth = options.strideH = options.strideW = 2
    options.padding = schema.Padding.VALID
    return options


@pytest.mark.parametrize(
    ("code", "dtype", "symbol"),
    [
        (OP.AVERAGE_POOL_2D, np.int8, "arm_avgpool_s8"),
        (OP.AVERAGE_POOL_2D, np.int16, "arm_avgpool_s16"),
        (OP.MAX_POOL_2D, np.int8, "arm_max_pool_s8"),
        (OP.MAX_POOL_2D, np.int16, "arm_max_pool_s16"),
    ],
)
def test_pooling_records_its_entry_without_candidates(code, dtype, symbol):
    facts = _pool_or_elementwise(code, dtype, [(1, 4, 4, 2)], (1, 2, 2, 2), _pool_options())
    choice = E.kernel_choice(facts, {"kernel": "generic"}, M4)
    assert (choice.entry, choice.provider, choice.candidates, choice.requantization) == (
        symbol,
        T.PROVIDER_POOLING,
        None,
        None,
    )
    assert E.core_calls(facts, choice) == [symbol]


def test_elementwise_calls_and_broadcasting():
    same = _pool_or_elementwise(OP.ADD, np.int8, [(1, 4), (1, 4)], (1, 4), schema.AddOptionsT())
    broadcast = _pool_or_elementwise(OP.MUL, np.int8, [(1, 4), (1, 1)], (1, 4), schema.MulOptionsT())
    mul = _pool_or_elementwise(OP.MUL, np.int8, [(2, 4), (2, 4)], (2, 4), schema.MulOptionsT())
    assert E.core_calls(same, E.kernel_choice(same, {}, M4)) == ["arm_elementwise_add_s8"]
    assert E.core_calls(mul, E.kernel_choice(mul, {}, M4)) == ["arm_elementwise_mul_s8"]
    assert E.kernel_choice(same, {}, M4).entry is None
    assert E.core_calls(broadcast, E.kernel_choice(broadcast, {}, M4)) is None


def test_core_calls_of_npu_fence_and_uncovered_operators():
    npu = only(npu_model())
    assert E.core_calls(npu, E.kernel_choice(npu, {}, M55)) == []
    div = _pool_or_elementwise(OP.DIV, np.float32, [(1, 4), (1, 4)], (1, 4), schema.DivOptionsT())
    assert E.core_calls(div, E.kernel_choice(div, {}, M55)) is None


def test_every_family_is_well_formed():
    seen = set()
    for family in T.FAMILIES:
        key = (family.op_type, family.dtype)
        assert key not in seen
        seen.add(key)
        assert family.entries and all(not e.specialized for e in family.entries[-1:])
        assert len({e.symbol for e in family.entries}) == len(family.entries)
        if family.provider is None:
            assert not family.records_entry and not family.enumerates
    assert T.covered_dtypes("CONV_2D") == ("int8", "int16", "float16")
    assert T.covered_dtypes("TRANSPOSE_CONV") == ()
    # Scales are stored as float32 and widened: 0.05 * 0.2 / 0.1 of the stored values.
    stored = float(np.float32(0.05)) * float(np.float32(0.2)) / float(np.float32(0.1))
    assert math.isclose(R.effective_scales(only(int8_conv_model(weight_scales=[0.2] * 4)))[0], stored, rel_tol=1e-15)
