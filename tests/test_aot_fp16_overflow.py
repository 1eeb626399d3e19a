"""heliabuild.aot.fp16_overflow: thresholds of packed FP16 convolutions fed from a model input."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from ai_edge_litert import schema_py_generated as schema
from test_aot_facts_builders import OP, float_conv_layer, pad, reload, reshape

from heliabuild.aot import fp16_overflow as O
from heliabuild.aot.facts import model_facts
from heliabuild.synth import GraphBuilder


def two_channel_weights(last_taps: float = 4.0) -> tuple[np.ndarray, np.ndarray]:
    """(2, 1, 1, 40) weights and biases: channel 0 all 0.5 with bias 100; channel 1 0.25 on the first 32 taps,
    `last_taps` on the 8 others, bias -1000."""
    w = np.zeros((2, 1, 1, 40), dtype=np.float16)
    w[0] = 0.5
    w[1, ..., :32] = 0.25
    w[1, ..., 32:] = last_taps
    return w, np.array([100.0, -1000.0], dtype=np.float16)


def reshape_conv(weights, bias, *, path="reshape", fill=None):
    """A model input x (1, 4, 40) -> [RESHAPE | PAD | ...] -> CONV_2D with `weights` on (1, 2, 2, 40)."""
    b = GraphBuilder()
    if path == "reshape":
        x = b.activation("x", (1, 4, 40), np.float16)
        y = reshape(b, x, (1, 2, 2, 40), "reshaped")
        shape = (1, 2, 2, 40)
    elif path == "direct":
        x = y = b.activation("x", (1, 2, 2, 40), np.float16)
        shape = (1, 2, 2, 40)
    elif path == "pad":
        x = b.activation("x", (1, 2, 2, 40), np.float16)
        y = pad(b, x, (1, 2, 2, 40), [(0, 0), (1, 1), (1, 1), (0, 0)], "padded", fill=fill)
        shape = (1, 4, 4, 40)
    elif path == "relu":
        x = b.activation("x", (1, 2, 2, 40), np.float16)
        y = b.activation("relu", (1, 2, 2, 40), np.float16)
        b.operator(OP.RELU, [x], [y])
        shape = (1, 2, 2, 40)
    elif path == "reshape-transpose":
        x = b.activation("x", (1, 40, 4), np.float16)
        perm = b.constant("perm", np.array([0, 2, 1], np.int32))
        t = b.activation("transposed", (1, 4, 40), np.float16)
        b.operator(OP.TRANSPOSE, [x, perm], [t], schema.TransposeOptionsT())
        y = reshape(b, t, (1, 2, 2, 40), "reshaped")
        shape = (1, 2, 2, 40)
    else:
        raise AssertionError(path)
    out, _ = float_conv_layer(b, y, shape, weights, bias)
    return reload(b.finish([x], [out], "fp16 conv", "fp16.tflite"))


def listed(model, **kwargs):
    return O.fp16_overflow(model, **kwargs)


def test_reshape_then_1x1_conv_hand_computed():
    # Block 0 has 32 taps and the bias: n = 33, 65504 / (1 + g) = 65504 * 2015 / 2048 = 64448.515625.
    # Block 1 has 8 taps: 65504 * 2040 / 2048 = 65248.125.
    # ch0: (64448.515625 - 100) / 16 = 4021.7822265625 and 65248.125 / 4 = 16312.03125;
    # ch1: (64448.515625 - 1000) / 8 = 7931.064453125 and 65248.125 / 32 = 2039.00390625 (the minimum).
    (item,) = listed(reshape_conv(*two_channel_weights()))
    assert item.operator_id == "0:conv/out" and item.entry == "arm_convolve_1x1_f16"
    assert item.model_input == "x" and item.path == ("RESHAPE",)
    assert (item.channel, item.block, item.weight_sum, item.bias) == (1, 1, 32.0, -1000.0)
    assert item.threshold == 2039.00390625
    assert item.to_json()["path"] == ["RESHAPE"]


def test_the_first_block_with_its_bias_can_attain_the_minimum():
    (item,) = listed(reshape_conv(*two_channel_weights(last_taps=1.0)))
    # ch1 block 1 is now 65248.125 / 8 = 8156.015625; ch0 block 0 wins.
    assert (item.channel, item.block, item.weight_sum, item.bias) == (0, 0, 16.0, 100.0)
    assert item.threshold == 4021.7822265625


def test_without_a_bias_block_0_counts_only_its_taps():
    weights, _ = two_channel_weights(last_taps=1.0)
    (item,) = listed(reshape_conv(weights, None))
    # n = 32: 65504 * 2016 / 2048 = 64480.5, / 16 = 4030.03125
    assert (item.channel, item.block, item.bias) == (0, 0, 0.0)
    assert item.threshold == 4030.03125


@pytest.mark.parametrize(
    ("path", "fill", "expected"),
    [
        ("direct", None, ()),
        ("pad", None, ("PAD",)),
        ("pad", 0.0, ("PADV2",)),
        ("reshape-transpose", None, ("TRANSPOSE", "RESHAPE")),
    ],
)
def test_value_preserving_paths_are_listed(path, fill, expected):
    (item,) = listed(reshape_conv(*two_channel_weights(), path=path, fill=fill))
    assert item.path == expected and item.model_input == "x"


@pytest.mark.parametrize(("path", "fill"), [("pad", 1.0), ("relu", None)])
def test_other_paths_are_not_listed(path, fill):
    assert listed(reshape_conv(*two_channel_weights(), path=path, fill=fill)) == []


def test_a_constant_input_is_not_listed():
    b = GraphBuilder()
    c = b.constant("c", np.ones((1, 2, 2, 40), np.float16))
    x = b.activation("x", (1, 2, 2, 2), np.float16)
    out, _ = float_conv_layer(b, c, (1, 2, 2, 40), *two_channel_weights())
    s = b.activation("sum", (1, 2, 2, 2), np.float16)
    b.operator(OP.ADD, [out, x], [s], schema.AddOptionsT())
    model = reload(b.finish([x], [s], "constant input", "m"))
    assert listed(model) == []


def test_other_entries_and_standard_weights_are_not_listed():
    model = reshape_conv(*two_channel_weights())
    assert listed(model, entries={1: "arm_convolve_f16"}) == []
    assert listed(model, entries={1: "arm_convolve_1x1_f16"}, weight_layouts={1: "standard"}) == []
    assert len(listed(model, entries={1: "arm_convolve_1x1_f16"}, weight_layouts={1: None})) == 1
    assert listed(model, capabilities=("DSP", "MCU")) == []  # no FP16 entry without the capability
    b = GraphBuilder()
    x = b.activation("x", (1, 4, 4, 8), np.float16)
    out, _ = float_conv_layer(b, x, (1, 4, 4, 8), np.ones((2, 3, 3, 8)), np.zeros(2))
    assert listed(reload(b.finish([x], [out], "3x3", "m"))) == []  # generic entry


def test_1xn_taps_are_counted_in_ohwi_order():
    b = GraphBuilder()
    x = b.activation("x", (1, 1, 10, 16), np.float16)
    w = np.zeros((1, 1, 3, 16), dtype=np.float16)
    w[0, 0, 0] = 1.0  # taps 0..15: block 0
    w[0, 0, 1] = 1.0  # taps 16..31: block 0
    w[0, 0, 2] = 3.0  # taps 32..47: block 1, sum 48
    out, _ = float_conv_layer(b, x, (1, 1, 10, 16), w, np.array([0.0]))
    (item,) = listed(reload(b.finish([x], [out], "1xn", "m")))
    assert item.entry == "arm_convolve_1_x_n_f16" and item.path == ()
    # block 0: (65504 * 2015 / 2048 - 0) / 32 = 2014.016...; block 1: 65504 * 2032 / 2048 / 48 = 1354.0...
    assert item.block == 1 and item.weight_sum == 48.0
    assert item.threshold == float(Fraction(65504) * Fraction(2032, 2048) / 48)


def _brute_force(weights: np.ndarray, bias: np.ndarray) -> tuple[Fraction, int, int]:
    u = Fraction(1, 2048)
    best = None
    for c in range(weights.shape[0]):
        taps = [Fraction(float(v)) for v in weights[c]]
        for k in range(0, len(taps), 32):
            block = taps[k : k + 32]
            s = sum(abs(v) for v in block)
            if s == 0:
                continue
            n = len(block) + (1 if k == 0 else 0)
            g = n * u / (1 - n * u)
            head = Fraction(65504) / (1 + g) - (abs(Fraction(float(bias[c]))) if k == 0 else 0)
            value = head / s
            if best is None or value < best[0]:
                best = (value, c, k // 32)
    return best


def test_layer_threshold_matches_a_brute_force_computation():
    rng = np.random.default_rng(7)
    for taps in (5, 32, 33, 70, 96):
        weights = rng.normal(0, 0.3, size=(6, taps)).astype(np.float16)
        bias = rng.normal(0, 50, size=6).astype(np.float16)
        result = O.layer_threshold(weights, bias)
        exact, channel, block = _brute_force(weights, bias)
        assert (result.threshold, result.channel, result.block) == (exact, channel, block)


def test_layer_threshold_edge_cases():
    assert O.layer_threshold(np.zeros((2, 40), np.float16), np.zeros(2, np.float16)) is None
    negative = O.layer_threshold(np.ones((1, 4), np.float16), np.array([65504.0], np.float16))
    assert negative.threshold < 0  # the bias alone leaves no headroom
    assert O.growth(33) == Fraction(33, 2015)
    assert O.block_threshold(Fraction(8), 8, None) == Fraction(65504 * 2040, 2048 * 8)


def test_the_shared_int8_models_list_nothing(shared_model_path):
    from heliabuild.model import load_model

    model = load_model(shared_model_path)
    assert O.fp16_overflow(model, model_facts(model)) == []
