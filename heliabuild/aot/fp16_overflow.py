"""FP16 overflow thresholds of packed FP16 convolutions fed from a model input (the report's `fp16_overflow`).

A packed FP16 convolution on `arm_convolve_1x1_f16` or `arm_convolve_1_x_n_f16`
sums each output in float16 lanes: the bias and the first 32 taps, then each
later block of 32 taps, each block folded into float32. A block partial that
reaches 65504 overflows whatever later blocks subtract. The report lists each
such layer whose data input is a model input read through value-preserving
operators only (RESHAPE, SQUEEZE, EXPAND_DIMS, TRANSPOSE, SLICE, STRIDED_SLICE,
and PAD with a zero fill value), with `threshold`, the input magnitude below
which no sign pattern can make a lane block reach 65504:

- a block of `n` round-to-nearest fused multiply-adds (`n` its taps, plus one
  for the bias in block 0 when the layer has a bias) is at most `(1 + g)`
  times the exact sum of magnitudes, `g = n*u / (1 - n*u)`, `u = 2^-11`;
- per output channel and block, the threshold is
  `(65504 / (1 + g) - |bias|) / sum|w|` for block 0 and
  `65504 / (1 + g) / sum|w|` for later blocks; the layer's threshold is the
  minimum over channels and blocks, with the `channel`, `block`, `weight_sum`
  and `bias` attaining it (the first channel, then the first block, on a tie;
  `bias` is the channel's bias, whichever block attains the minimum).

Taps are counted in the order the packed kernels read them: the weights'
OHWI order per output channel (input channels fastest). The arithmetic is
exact: sums of at most 32 float16 magnitudes are exact in float64, and the
minimum is settled with fractions; the threshold is then rounded to the
nearest float64. A block whose weights are all zero cannot overflow and is
skipped; a layer with no such block is not listed. A threshold below zero
(a bias too large for the headroom) is reported as computed.

A PAD counts as zero-filled when it has no fill operand, or its fill operand
(PADV2's `constant_values`) is a constant whose values are all zero. The list
is a fact about the weights: it changes no generated code and no decision.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from heliabuild.aot.entries import kernel_choice, weight_layout
from heliabuild.aot.entry_table import PACKED, PACKED_FP16_ENTRIES
from heliabuild.aot.facts import OperatorFacts, model_facts
from heliabuild.model.graph import Graph, indices, tensor_name
from heliabuild.model.io import Model

FP16_MAX = 65504
UNIT_ROUNDOFF = Fraction(1, 2**11)
BLOCK_TAPS = 32
VALUE_PRESERVING = ("RESHAPE", "SQUEEZE", "EXPAND_DIMS", "TRANSPOSE", "SLICE", "STRIDED_SLICE")
ZERO_FILL_PADS = ("PAD", "PADV2")
# Candidates whose float64 threshold lies within this relative distance of the float64 minimum are compared
# exactly; float64 rounding moves a threshold by far less.
_RELATIVE_SLACK = 1e-9


@dataclass(frozen=True)
class OverflowThreshold:
    """One listed layer: see the module docstring. `path` lists the operator types from the model input to the
    layer (empty when the layer reads the model input directly)."""

    operator_id: str
    operator_index: int
    op_type: str
    entry: str
    model_input: str
    path: tuple[str, ...]
    threshold: float
    channel: int
    block: int
    weight_sum: float
    bias: float

    def to_json(self) -> dict[str, Any]:
        return {
            "operator_id": self.operator_id,
            "entry": self.entry,
            "model_input": self.model_input,
            "path": list(self.path),
            "threshold": self.threshold,
            "channel": self.channel,
            "block": self.block,
            "weight_sum": self.weight_sum,
            "bias": self.bias,
        }


def growth(taps: int) -> Fraction:
    """g = n*u / (1 - n*u) for a block of n round-to-nearest operations."""
    nu = taps * UNIT_ROUNDOFF
    return nu / (1 - nu)


def block_threshold(weight_sum: Fraction, operations: int, bias: Fraction | None) -> Fraction:
    """The exact threshold of one block: `(65504/(1+g) - |bias|) / sum|w|` for block 0 (give `bias`), and
    `65504/(1+g) / sum|w|` for later blocks (`bias` None). `operations` is n (taps, plus one for a bias)."""
    headroom = FP16_MAX / (1 + growth(operations))
    if bias is not None:
        headroom -= abs(bias)
    return headroom / weight_sum


@dataclass(frozen=True)
class LayerThreshold:
    threshold: Fraction
    channel: int
    block: int
    weight_sum: Fraction
    bias: Fraction


def layer_threshold(weights: np.ndarray, bias: np.ndarray | None) -> LayerThreshold | None:
    """The minimum threshold of a layer: `weights` (output channels, taps) in tap order, `bias` per output
    channel or None. None when every block's weights are zero."""
    w = np.abs(np.asarray(weights, dtype=np.float64))
    channels, taps = w.shape
    if taps == 0 or channels == 0:
        return None
    blocks = (taps + BLOCK_TAPS - 1) // BLOCK_TAPS
    padded = np.zeros((channels, blocks * BLOCK_TAPS), dtype=np.float64)
    padded[:, :taps] = w
    sums = padded.reshape(channels, blocks, BLOCK_TAPS).sum(axis=2)  # exact: see the module docstring
    b = np.zeros(channels, dtype=np.float64) if bias is None else np.asarray(bias, dtype=np.float64).reshape(-1)
    extra = 0 if bias is None else 1
    counts = [min(BLOCK_TAPS, taps - k * BLOCK_TAPS) + (extra if k == 0 else 0) for k in range(blocks)]
    headroom = np.array([float(FP16_MAX / (1 + growth(n))) for n in counts], dtype=np.float64)
    numerators = np.broadcast_to(headroom, (channels, blocks)).copy()
    numerators[:, 0] -= np.abs(b)
    with np.errstate(divide="ignore", invalid="ignore"):
        approx = np.where(sums > 0, numerators / np.where(sums > 0, sums, 1.0), np.inf)
    if not np.isfinite(approx).any():
        return None
    floor = float(approx.min())
    slack = abs(floor) * _RELATIVE_SLACK + 1e-300
    best: LayerThreshold | None = None
    for channel, block in zip(*np.nonzero(approx <= floor + slack), strict=True):
        channel, block = int(channel), int(block)
        weight_sum = Fraction(float(sums[channel, block]))
        bias_value = Fraction(float(b[channel]))
        exact = block_threshold(weight_sum, counts[block], bias_value if block == 0 else None)
        if best is None or exact < best.threshold:
            best = LayerThreshold(exact, channel, block, weight_sum, bias_value)
    return best


def _constant_array(model: Model, tensor_index: int, dtype: np.dtype) -> np.ndarray | None:
    tensor = model.subgraphs[0].tensors[tensor_index]
    data = model.buffer_data(int(tensor.buffer))
    if data is None:
        return None
    values = np.frombuffer(np.asarray(data, dtype=np.uint8).tobytes(), dtype=np.dtype(dtype).newbyteorder("<"))
    return values.reshape([int(d) for d in indices(tensor.shape)] or [values.size])


_NUMPY_DTYPES = {"float16": np.float16, "float32": np.float32, "int8": np.int8, "int16": np.int16, "int32": np.int32}


def _zero_fill(model: Model, facts: OperatorFacts) -> bool:
    fill = facts.input(2)
    if fill is None:
        return True
    if not fill.is_constant or fill.dtype not in _NUMPY_DTYPES:
        return False
    values = _constant_array(model, fill.index, _NUMPY_DTYPES[fill.dtype])
    return values is not None and bool(np.all(values == 0))


def input_path(model: Model, facts: Sequence[OperatorFacts], op_index: int) -> tuple[int, tuple[str, ...]] | None:
    """(model input tensor, operator types from it to the layer) when operator `op_index`'s data input is a
    model input read through value-preserving operators only; None otherwise."""
    subgraph = model.subgraphs[0]
    graph = Graph.of(subgraph)
    inputs = set(graph.graph_inputs)
    data = facts[op_index].data_input
    if data is None:
        return None
    tensor = data.index
    path: list[str] = []
    for _ in range(len(facts) + 1):
        if tensor in inputs:
            return tensor, tuple(reversed(path))
        producer = graph.producer.get(tensor)
        if producer is None:
            return None
        step = facts[producer]
        if step.op_type in ZERO_FILL_PADS:
            if not _zero_fill(model, step):
                return None
        elif step.op_type not in VALUE_PRESERVING:
            return None
        source = step.input(0)
        if source is None:
            return None
        path.append(step.op_type)
        tensor = source.index
    return None


def fp16_overflow(
    model: Model,
    facts: Sequence[OperatorFacts] | None = None,
    *,
    entries: Mapping[int, str | None] | None = None,
    weight_layouts: Mapping[int, str | None] | None = None,
    capabilities: Sequence[str] = ("FP16", "MVE"),
) -> list[OverflowThreshold]:
    """The listed layers in execution order.

    `entries` maps an operator index to its kernel entry as the plan records
    it, and `weight_layouts` to its `fixed.weight_layout` value (None or
    absent: heliabuild's own rule, `entries.fixed_choices`). Without
    `entries`, each layer's entry is heliabuild's choice under `kernel:
    specialized` on `capabilities`.
    """
    facts = model_facts(model) if facts is None else facts
    tensors = model.subgraphs[0].tensors or []
    listed: list[OverflowThreshold] = []
    for layer in facts:
        if layer.op_type != "CONV_2D" or layer.dtype != "float16":
            continue
        if entries is not None:
            entry = entries.get(layer.index)
        else:
            entry = kernel_choice(layer, {"kernel": "specialized"}, capabilities).entry
        if entry not in PACKED_FP16_ENTRIES:
            continue
        layout = (weight_layouts or {}).get(layer.index) or weight_layout(layer, entry)
        if layout != PACKED:
            continue
        weights, bias_facts = layer.weights, layer.bias
        if weights is None or not weights.is_constant or weights.dtype != "float16" or len(weights.shape) != 4:
            continue
        bias = None
        if bias_facts is not None:
            if not bias_facts.is_constant or bias_facts.dtype != "float16":
                continue
            bias = _constant_array(model, bias_facts.index, np.float16)
        found = input_path(model, facts, layer.index)
        if found is None:
            continue
        w = _constant_array(model, weights.index, np.float16)
        if w is None:
            continue
        result = layer_threshold(w.reshape(w.shape[0], -1), None if bias is None else bias.reshape(-1))
        if result is None:
            continue
        model_input, path = found
        listed.append(
            OverflowThreshold(
                operator_id=layer.id,
                operator_index=layer.index,
                op_type=layer.op_type,
                entry=str(entry),
                model_input=tensor_name(tensors[model_input]),
                path=path,
                threshold=float(result.threshold),
                channel=result.channel,
                block=result.block,
                weight_sum=float(result.weight_sum),
                bias=float(result.bias),
            )
        )
    return listed
