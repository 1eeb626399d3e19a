"""heliabuild.aot.knobs: the knob table, where each knob applies, the auto table and the alternatives."""

from __future__ import annotations

import numpy as np
import pytest
from ai_edge_litert import schema_py_generated as schema
from test_aot_entries import M4, M55, _fp16_conv, _pool_or_elementwise, only
from test_aot_facts_builders import OP, int8_conv_model, int8_fc_model, reload

from heliabuild.aot import knobs as K
from heliabuild.aot.facts import model_facts
from heliabuild.aot.platforms import get_platform
from heliabuild.model import load_model
from heliabuild.synth import GraphBuilder


def test_the_table():
    assert list(K.KNOBS) == ["kernel", "accumulation"]
    assert K.KNOBS["kernel"].values == ("specialized", "generic") and not K.KNOBS["kernel"].has_approximate
    assert K.KNOBS["accumulation"].values == ("precise", "fast")
    assert K.KNOBS["accumulation"].approximate == {"fast"}
    assert K.KNOBS["kernel"].accepts("auto") and K.KNOBS["kernel"].accepts("generic")
    assert not K.KNOBS["kernel"].accepts("fast")
    with pytest.raises(KeyError, match="unknown knob"):
        K.knob("tiling")


@pytest.mark.parametrize(
    ("goal", "approximate", "kernel", "accumulation"),
    [
        ("latency", True, "specialized", "fast"),
        ("latency", False, "specialized", "precise"),
        ("balanced", True, "specialized", "precise"),
        ("balanced", False, "specialized", "precise"),
        ("size", True, "generic", "precise"),
        ("size", False, "generic", "precise"),
        ("accuracy", True, "specialized", "precise"),
        ("accuracy", False, "specialized", "precise"),
    ],
)
def test_auto_table(goal, approximate, kernel, accumulation):
    assert K.auto_value("kernel", goal, approximate) == kernel
    assert K.auto_value("accumulation", goal, approximate) == accumulation


def test_auto_never_picks_an_approximate_value_without_permission():
    for goal in K.GOALS:
        for name in K.KNOBS:
            assert not K.is_approximate(name, K.auto_value(name, goal, False))
    with pytest.raises(KeyError, match="unknown goal"):
        K.auto_value("kernel", "speed", False)


def test_is_approximate():
    assert K.is_approximate("accumulation", "fast") is True
    assert K.is_approximate("accumulation", "precise") is False
    assert K.is_approximate("kernel", "generic") is None


def test_kernel_applies_where_the_entry_table_covers_the_dtype():
    assert K.applies("kernel", only(int8_conv_model()), M4) is None
    assert K.applies("kernel", only(int8_conv_model(op="DEPTHWISE_CONV_2D", dtype="int16")), M4) is None
    assert K.applies("kernel", only(int8_fc_model()), M4) is None
    assert K.applies("kernel", _fp16_conv((1, 4, 4, 8), (4, 1, 1, 8)), M55) is None
    reason = K.applies("kernel", _fp16_conv((1, 4, 4, 8), (4, 1, 1, 8), dtype=np.float32), M55)
    assert reason == "heliabuild's entry table covers int8, int16, float16 for CONV_2D, not float32"
    softmax = _pool_or_elementwise(OP.SOFTMAX, np.int8, [(1, 4)], (1, 4), schema.SoftmaxOptionsT())
    assert "not SOFTMAX" in K.applies("kernel", softmax, M4)


def _transpose_conv():
    b = GraphBuilder()
    shape = b.constant("shape", np.array([1, 8, 8, 4], np.int32))
    w = b.constant("w", np.ones((4, 3, 3, 4), np.float32))
    x = b.activation("x", (1, 4, 4, 4), np.float32)
    y = b.activation("y", (1, 8, 8, 4), np.float32)
    options = schema.TransposeConvOptionsT()
    options.strideH = options.strideW = 2
    b.operator(OP.TRANSPOSE_CONV, [shape, w, x], [y], options)
    return only(reload(b.finish([x], [y], "tconv", "m")))


def test_transpose_conv_has_no_entry_here():
    tconv = _transpose_conv()
    assert K.applies("kernel", tconv, M55) == "heliabuild's entry table covers no dtype for TRANSPOSE_CONV, not float32"
    assert "applies to CONV_2D" in K.applies("accumulation", tconv, M55)


def test_accumulation_applies_to_fp16_layers_on_an_fp16_target():
    fp16 = _fp16_conv((1, 4, 4, 8), (4, 1, 1, 8))
    assert K.applies("accumulation", fp16, M55) is None
    assert K.applies("accumulation", fp16, M4) == "accumulation needs a target with the FP16 capability"
    assert K.applies("accumulation", fp16, get_platform("apollo510_evb")) is None
    assert K.applies("accumulation", only(int8_conv_model()), M55) == "accumulation applies to FP16 layers, not int8"
    assert K.applicable_knobs(fp16, M55) == ["kernel", "accumulation"]
    assert K.applicable_knobs(fp16, M4) == ["kernel"]


def test_alternatives():
    one_by_one = only(int8_conv_model(kernel=(1, 1)))
    assert K.alternatives("kernel", one_by_one, M4) == [("specialized", True, None), ("generic", True, None)]
    three = only(int8_conv_model(input_shape=(1, 8, 8, 4), kernel=(3, 3)))
    (specialized, generic) = K.alternatives("kernel", three, M4)
    assert specialized.value == "specialized" and not specialized.applies
    assert specialized.reason.startswith("arm_convolve_1x1_s8_fast needs a 1x1 filter, found 3x3;")
    assert "arm_convolve_1x1_out_s8 needs the MVE capability" in specialized.reason
    assert generic == ("generic", True, None)
    fc = K.alternatives("kernel", only(int8_fc_model()), M4)
    assert fc[0] == ("specialized", False, "heliabuild's table has no shape-specialized int8 FULLY_CONNECTED entry")
    fp16 = _fp16_conv((1, 4, 4, 8), (4, 1, 1, 8))
    assert K.alternatives("accumulation", fp16, M55) == [("precise", True, None), ("fast", True, None)]
    blocked = K.alternatives("accumulation", fp16, M4)
    assert [a.applies for a in blocked] == [False, False]
    assert {a.reason for a in blocked} == {"accumulation needs a target with the FP16 capability"}


def test_shared_models_knobs(shared_model_path):
    for facts in model_facts(load_model(shared_model_path)):
        names = K.applicable_knobs(facts, M55)
        if facts.op_type in ("CONV_2D", "DEPTHWISE_CONV_2D", "FULLY_CONNECTED"):
            assert names == ["kernel"]
        else:
            assert names == []
