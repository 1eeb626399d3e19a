"""The kernel-entry table heliabuild knows: ns-cmsis-nn entries by operator, dtype and shape rules.

This is the one place heliabuild states which CORE entry a layer calls. Each
`Family` covers one (operator type, dtype) and lists its entries in
precedence order; each `Entry` carries its rule (the conditions under which
the entry computes the layer) as a predicate that returns None when the rule
holds, else why it does not. The last entry of a family that chooses among
candidates is its generic entry, whose rule always holds on a target the
family admits.

The rules restate the public selection conditions of ns-cmsis-nn's wrappers
(`arm_convolve_wrapper_s8`, `arm_depthwise_conv_wrapper_s8`,
`arm_convolve_wrapper_s16`, `arm_depthwise_conv_wrapper_s16` and its
`USE_FAST_DW_CONV_S16_FUNCTION`) and the argument checks of the FP16
convolution entries (`arm_convolve_1x1_f16`, `arm_convolve_1_x_n_f16`).
Padding is the (top, left) padding CMSIS-NN receives (`OperatorFacts.pads`).
Entries compiled only under `ARM_MATH_MVEI` need the target's `MVE`
capability; `arm_depthwise_conv_3x3_s8` is compiled only without it; the FP16
entries need `FP16`.

heliabuild.aot.entries chooses among the entries (`kernel_choice`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from heliabuild.aot.facts import OperatorFacts

Rule = Callable[[OperatorFacts, frozenset[str]], "str | None"]


KERNEL_KNOB = "kernel"


SPECIALIZED = "specialized"


GENERIC = "generic"


PROVIDER_CONV = "heliabuild.cmsis_nn.conv/1"


PROVIDER_DEPTHWISE = "heliabuild.cmsis_nn.depthwise/1"


PROVIDER_FULLY_CONNECTED = "heliabuild.cmsis_nn.fully_connected/1"


PROVIDER_POOLING = "heliabuild.cmsis_nn.pooling/1"


WEIGHT_LAYOUT = "weight_layout"


PACKED = "packed"


PACKED_FP16_ENTRIES = ("arm_convolve_1x1_f16", "arm_convolve_1_x_n_f16")
"""The FP16 convolution entries heliabuild gives packed weights (`fixed.weight_layout: packed`, set by heuristic)."""


@dataclass(frozen=True)
class Entry:
    """One CORE entry: its `symbol`, whether it is shape-`specialized`, its rule in words and as a predicate."""

    symbol: str
    specialized: bool
    rule_text: str
    rule: Rule

    def check(self, facts: OperatorFacts, capabilities: frozenset[str]) -> str | None:
        """None when the entry's rule holds for the layer on the target, else the reason it does not."""
        return self.rule(facts, capabilities)


@dataclass(frozen=True)
class Family:
    """The entries of one (operator type, dtype), in precedence order.

    `enumerates`: the family lists its candidates (else `candidates` is null).
    `records_entry`: the plan's `kernel.entry` names the chosen entry (else
    null, the symbol being known only for the report's call records).
    `requantized`: the family has per-channel output requantization.
    """

    op_type: str
    dtype: str
    provider: str | None
    entries: tuple[Entry, ...]
    enumerates: bool = True
    records_entry: bool = True
    requantized: bool = False

    @property
    def generic(self) -> Entry:
        return self.entries[-1]


def _nhwc(facts: OperatorFacts) -> tuple[int, int, int, int] | None:
    data = facts.data_input
    if data is None or len(data.shape) != 4 or not data.static:
        return None
    n, h, w, c = data.shape
    return n, h, w, c


def _out_nhwc(facts: OperatorFacts) -> tuple[int, int, int, int] | None:
    out = facts.output
    if out is None or len(out.shape) != 4 or not out.static:
        return None
    n, h, w, c = out.shape
    return n, h, w, c


def _all(*checks: Callable[[OperatorFacts, frozenset[str]], str | None]) -> Rule:
    def rule(facts: OperatorFacts, capabilities: frozenset[str]) -> str | None:
        for check in checks:
            reason = check(facts, capabilities)
            if reason is not None:
                return reason
        return None

    return rule


def _needs(capability: str) -> Rule:
    def rule(_facts: OperatorFacts, capabilities: frozenset[str]) -> str | None:
        return None if capability in capabilities else f"needs the {capability} capability"

    return rule


def _without(capability: str) -> Rule:
    def rule(_facts: OperatorFacts, capabilities: frozenset[str]) -> str | None:
        return None if capability not in capabilities else f"is not built for targets with {capability}"

    return rule


def _always(_facts: OperatorFacts, _capabilities: frozenset[str]) -> str | None:
    return None


def _shapes_known(facts: OperatorFacts, _capabilities: frozenset[str]) -> str | None:
    if _nhwc(facts) is None or _out_nhwc(facts) is None or facts.kernel_hw is None:
        return "needs static NHWC input and output shapes"
    if facts.pads is None or facts.stride is None:
        return "needs the layer's stride and padding"
    return None


def _filter_1x1(facts: OperatorFacts, _c: frozenset[str]) -> str | None:
    return None if facts.kernel_hw == (1, 1) else f"needs a 1x1 filter, found {_hw(facts.kernel_hw)}"


def _no_padding(facts: OperatorFacts, _c: frozenset[str]) -> str | None:
    return None if facts.pads == (0, 0) else f"needs no padding, found {facts.pads}"


def _stride_1(facts: OperatorFacts, _c: frozenset[str]) -> str | None:
    return None if facts.stride == (1, 1) else f"needs stride 1, found {facts.stride}"


def _not_stride_1(facts: OperatorFacts, _c: frozenset[str]) -> str | None:
    return None if facts.stride != (1, 1) else "is the wrapper's choice for strides other than 1 (stride 1 goes fast)"


def _dilation_1(facts: OperatorFacts, _c: frozenset[str]) -> str | None:
    return None if (facts.dilation or (1, 1)) == (1, 1) else f"needs dilation 1, found {facts.dilation}"


def _dilation_w_1(facts: OperatorFacts, _c: frozenset[str]) -> str | None:
    return None if (facts.dilation or (1, 1))[1] == 1 else f"needs width dilation 1, found {facts.dilation}"


def _ungrouped(facts: OperatorFacts, _c: frozenset[str]) -> str | None:
    return None if facts.groups == 1 else f"needs an ungrouped convolution, found {facts.groups} groups"


def _input_h_1(facts: OperatorFacts, _c: frozenset[str]) -> str | None:
    dims = _nhwc(facts)
    return None if dims is not None and dims[1] == 1 else "needs input height 1"


def _output_h_1(facts: OperatorFacts, _c: frozenset[str]) -> str | None:
    dims = _out_nhwc(facts)
    return None if dims is not None and dims[1] == 1 else "needs output height 1"


def _output_1x1(facts: OperatorFacts, _c: frozenset[str]) -> str | None:
    dims = _out_nhwc(facts)
    return None if dims is not None and dims[1:3] == (1, 1) else "needs a 1x1 output"


def _filter_h_1(facts: OperatorFacts, _c: frozenset[str]) -> str | None:
    hw = facts.kernel_hw
    return None if hw is not None and hw[0] == 1 else f"needs filter height 1, found {_hw(hw)}"


def _filter_w_above_1(facts: OperatorFacts, _c: frozenset[str]) -> str | None:
    hw = facts.kernel_hw
    return None if hw is not None and hw[1] > 1 else f"needs filter width above 1, found {_hw(hw)}"


def _stride_h_1(facts: OperatorFacts, _c: frozenset[str]) -> str | None:
    return None if facts.stride is not None and facts.stride[0] == 1 else f"needs stride height 1, found {facts.stride}"


def _pad_h_0(facts: OperatorFacts, _c: frozenset[str]) -> str | None:
    return None if facts.pads is not None and facts.pads[0] == 0 else f"needs no vertical padding, found {facts.pads}"


def _stride_w_times_c_multiple_of_4(facts: OperatorFacts, _c: frozenset[str]) -> str | None:
    dims = _nhwc(facts)
    if dims is None or facts.stride is None or (facts.stride[1] * dims[3]) % 4:
        return "needs stride width x input channels to be a multiple of 4"
    return None


def _depth_multiplier(facts: OperatorFacts) -> int | None:
    dims, out = _nhwc(facts), _out_nhwc(facts)
    if dims is not None and out is not None and dims[3] > 0 and out[3] % dims[3] == 0:
        return out[3] // dims[3]
    return facts.depth_multiplier


def _channel_multiplier_1(facts: OperatorFacts, _c: frozenset[str]) -> str | None:
    multiplier = _depth_multiplier(facts)
    return None if multiplier == 1 else f"needs depth multiplier 1, found {multiplier}"


def _batch_1(facts: OperatorFacts, _c: frozenset[str]) -> str | None:
    dims = _nhwc(facts)
    return None if dims is not None and dims[0] == 1 else "needs batch 1"


def _filter_3x3(facts: OperatorFacts, _c: frozenset[str]) -> str | None:
    return None if facts.kernel_hw == (3, 3) else f"needs a 3x3 filter, found {_hw(facts.kernel_hw)}"


def _padding_at_most_1(facts: OperatorFacts, _c: frozenset[str]) -> str | None:
    pads = facts.pads
    return None if pads is not None and max(pads) <= 1 else f"needs padding of at most 1, found {pads}"


def _window_below_512(facts: OperatorFacts, _c: frozenset[str]) -> str | None:
    hw = facts.kernel_hw
    if hw is None or hw[0] * hw[1] >= 512:
        return f"needs a filter of fewer than 512 taps, found {_hw(hw)}"
    return None


def _per_tensor_weights(facts: OperatorFacts, _c: frozenset[str]) -> str | None:
    weights = facts.weights
    if weights is None or weights.quantization is None or weights.quantization.per_axis:
        return "needs per-tensor weight quantization"
    return None


def _per_channel_weights(facts: OperatorFacts, _c: frozenset[str]) -> str | None:
    weights = facts.weights
    if weights is None or weights.quantization is None or not weights.quantization.per_axis:
        return "needs per-channel weight quantization"
    return None


def _same_input_shapes(facts: OperatorFacts, _c: frozenset[str]) -> str | None:
    operands = [t for t in facts.inputs[:2] if t is not None]
    if len(operands) != 2 or operands[0].shape != operands[1].shape:
        return "needs two operands of the same shape (broadcasting goes through other code)"
    return None


def _int8_output(facts: OperatorFacts, _c: frozenset[str]) -> str | None:
    out = facts.output
    return None if out is not None and out.dtype == "int8" else "needs an int8 output"


def _hw(hw: tuple[int, int] | None) -> str:
    return "unknown" if hw is None else f"{hw[0]}x{hw[1]}"


_CONV_BASE = _all(_shapes_known)


FAMILIES: tuple[Family, ...] = (
    Family(
        "CONV_2D",
        "int8",
        PROVIDER_CONV,
        (
            Entry(
                "arm_convolve_1x1_s8_fast",
                True,
                "1x1 filter, no padding, dilation 1, ungrouped, stride 1",
                _all(_CONV_BASE, _filter_1x1, _no_padding, _dilation_1, _ungrouped, _stride_1),
            ),
            Entry(
                "arm_convolve_1x1_s8",
                True,
                "1x1 filter, no padding, dilation 1, ungrouped, stride other than 1",
                _all(_CONV_BASE, _filter_1x1, _no_padding, _dilation_1, _ungrouped, _not_stride_1),
            ),
            Entry(
                "arm_convolve_1_x_n_s8",
                True,
                "input height 1, filter height 1, width dilation 1, stride width x input channels a multiple of 4, "
                "ungrouped",
                _all(_CONV_BASE, _input_h_1, _filter_h_1, _dilation_w_1, _stride_w_times_c_multiple_of_4, _ungrouped),
            ),
            Entry(
                "arm_convolve_1x1_out_s8",
                True,
                "MVE; 1x1 output, stride width x input channels a multiple of 4, ungrouped",
                _all(_needs("MVE"), _CONV_BASE, _output_1x1, _stride_w_times_c_multiple_of_4, _ungrouped),
            ),
            Entry("arm_convolve_s8", False, "any", _always),
        ),
        requantized=True,
    ),
    Family(
        "CONV_2D",
        "int16",
        PROVIDER_CONV,
        (
            Entry(
                "arm_convolve_1x1_s16_ns_np_nd",
                True,
                "MVE; 1x1 filter, stride 1, no padding, dilation 1, ungrouped",
                _all(_needs("MVE"), _CONV_BASE, _filter_1x1, _stride_1, _no_padding, _dilation_1, _ungrouped),
            ),
            Entry("arm_convolve_s16", False, "any", _always),
        ),
        requantized=True,
    ),
    Family(
        "CONV_2D",
        "float16",
        PROVIDER_CONV,
        (
            Entry(
                "arm_convolve_1x1_f16",
                True,
                "FP16; 1x1 filter, no padding, ungrouped",
                _all(_needs("FP16"), _CONV_BASE, _filter_1x1, _no_padding, _ungrouped),
            ),
            Entry(
                "arm_convolve_1_x_n_f16",
                True,
                "FP16; input and output height 1, filter height 1 and width above 1, stride height 1, "
                "no vertical padding, dilation 1, ungrouped",
                _all(
                    _needs("FP16"),
                    _CONV_BASE,
                    _input_h_1,
                    _output_h_1,
                    _filter_h_1,
                    _filter_w_above_1,
                    _stride_h_1,
                    _pad_h_0,
                    _dilation_1,
                    _ungrouped,
                ),
            ),
            Entry("arm_convolve_f16", False, "FP16", _needs("FP16")),
        ),
    ),
    Family(
        "DEPTHWISE_CONV_2D",
        "int8",
        PROVIDER_DEPTHWISE,
        (
            Entry(
                "arm_depthwise_conv_3x3_s8",
                True,
                "not MVE; depth multiplier 1, batch 1, dilation 1, 3x3 filter, padding at most 1",
                _all(
                    _without("MVE"),
                    _CONV_BASE,
                    _channel_multiplier_1,
                    _batch_1,
                    _dilation_1,
                    _filter_3x3,
                    _padding_at_most_1,
                ),
            ),
            Entry(
                "arm_depthwise_conv_s8_opt",
                True,
                "depth multiplier 1, batch 1, dilation 1",
                _all(_CONV_BASE, _channel_multiplier_1, _batch_1, _dilation_1),
            ),
            Entry("arm_depthwise_conv_s8", False, "any", _always),
        ),
        requantized=True,
    ),
    Family(
        "DEPTHWISE_CONV_2D",
        "int16",
        PROVIDER_DEPTHWISE,
        (
            Entry(
                "arm_depthwise_conv_fast_s16",
                True,
                "depth multiplier 1, dilation 1, fewer than 512 filter taps",
                _all(_CONV_BASE, _channel_multiplier_1, _dilation_1, _window_below_512),
            ),
            Entry("arm_depthwise_conv_s16", False, "any", _always),
        ),
        requantized=True,
    ),
    Family(
        "FULLY_CONNECTED",
        "int8",
        PROVIDER_FULLY_CONNECTED,
        (
            Entry("arm_fully_connected_per_channel_s8", False, "per-channel weights", _per_channel_weights),
            Entry("arm_fully_connected_s8", False, "per-tensor weights", _per_tensor_weights),
        ),
        requantized=True,
    ),
    Family(
        "FULLY_CONNECTED",
        "int16",
        PROVIDER_FULLY_CONNECTED,
        (
            Entry("arm_fully_connected_per_channel_s16", False, "per-channel weights", _per_channel_weights),
            Entry("arm_fully_connected_s16", False, "per-tensor weights", _per_tensor_weights),
        ),
        requantized=True,
    ),
    Family("AVERAGE_POOL_2D", "int8", PROVIDER_POOLING, (Entry("arm_avgpool_s8", False, "any", _always),), False),
    Family("AVERAGE_POOL_2D", "int16", PROVIDER_POOLING, (Entry("arm_avgpool_s16", False, "any", _always),), False),
    Family("MAX_POOL_2D", "int8", PROVIDER_POOLING, (Entry("arm_max_pool_s8", False, "any", _always),), False),
    Family("MAX_POOL_2D", "int16", PROVIDER_POOLING, (Entry("arm_max_pool_s16", False, "any", _always),), False),
    Family(
        "SOFTMAX",
        "int8",
        None,
        (Entry("arm_softmax_s8", False, "int8 output", _int8_output),),
        enumerates=False,
        records_entry=False,
    ),
    Family(
        "ADD",
        "int8",
        None,
        (Entry("arm_elementwise_add_s8", False, "operands of one shape", _same_input_shapes),),
        enumerates=False,
        records_entry=False,
    ),
    Family(
        "MUL",
        "int8",
        None,
        (Entry("arm_elementwise_mul_s8", False, "operands of one shape", _same_input_shapes),),
        enumerates=False,
        records_entry=False,
    ),
)
"""Every family heliabuild knows, by (operator type, dtype)."""


_BY_KEY: dict[tuple[str, str], Family] = {(f.op_type, f.dtype): f for f in FAMILIES}


# The fully connected families select by the weights' quantization, not by shape: both entries are "generic"
# for the kernel knob, which has nothing to choose there.
_SELECTS_BY_QUANTIZATION = frozenset({("FULLY_CONNECTED", "int8"), ("FULLY_CONNECTED", "int16")})


def family_of(facts: OperatorFacts) -> Family | None:
    """The family covering the operator's type and dtype, or None."""
    dtype = facts.dtype
    return None if dtype is None else _BY_KEY.get((facts.op_type, dtype))


def covered_dtypes(op_type: str) -> tuple[str, ...]:
    """The dtypes the table covers for an operator type."""
    return tuple(f.dtype for f in FAMILIES if f.op_type == op_type)
