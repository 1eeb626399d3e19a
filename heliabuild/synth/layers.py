"""Int8 layers with calibrated quantization, emitted into a GraphBuilder.

Int8Graph draws float weights from a seeded generator, quantizes them, and
runs a small calibration batch (random int8 inputs over the whole input
range) through every layer as it is added, so each activation's scale and
zero point cover the values that layer really produces, with some headroom,
instead of saturating. Calibration values are carried as int8 codes between
layers, as the int8 runtime sees them. Names follow Keras/converter style: "conv2d_1/Relu",
"conv2d_1/kernel", "add/add", "dense/BiasAdd".
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from ai_edge_litert import schema_py_generated as schema

from heliabuild.model.io import Model
from heliabuild.synth.builder import GraphBuilder
from heliabuild.synth.quant import (
    ActivationQuant,
    activation_quant,
    quantization_parameters,
    quantize_bias,
    quantize_symmetric,
)

OP = schema.BuiltinOperator
# Operator versions as the TFLite converter assigns them for int8 operands.
VERSIONS: dict[int, int] = {
    OP.CONV_2D: 3,
    OP.DEPTHWISE_CONV_2D: 3,
    OP.FULLY_CONNECTED: 4,
    OP.ADD: 2,
    OP.AVERAGE_POOL_2D: 2,
    OP.RESHAPE: 1,
    OP.SOFTMAX: 2,
}
SOFTMAX_QUANT = ActivationQuant(1.0 / 256.0, -128)
# Calibrated ranges are widened by this factor: a small calibration batch
# rarely sees the extremes of other inputs.
HEADROOM = 1.25
_PADDING = {"SAME": schema.Padding.SAME, "VALID": schema.Padding.VALID}


@dataclass(frozen=True)
class QTensor:
    """An int8 activation: its tensor index, shape, quantization and calibration codes.

    `codes` holds the int8 values of the calibration batch (the batch axis is
    the calibration batch instead of 1).
    """

    index: int
    shape: tuple[int, ...]
    quant: ActivationQuant
    codes: np.ndarray

    def centred(self) -> np.ndarray:
        """The calibration codes minus the zero point, as exact integers in float64."""
        return self.codes.astype(np.float64) - self.quant.zero_point

    def real(self) -> np.ndarray:
        """The calibration values as real numbers (float64)."""
        return self.centred() * self.quant.scale


def _activation(relu: bool, relu6: bool = False) -> int:
    if relu6:
        return schema.ActivationFunctionType.RELU6
    return schema.ActivationFunctionType.RELU if relu else schema.ActivationFunctionType.NONE


def _activated(real: np.ndarray, relu: bool, relu6: bool) -> tuple[np.ndarray, str]:
    """The fused activation applied to a layer's real values, and the converter's name suffix for it."""
    if relu6:
        return np.clip(real, 0, 6), "Relu6"
    if relu:
        return np.maximum(real, 0), "Relu"
    return real, "BiasAdd"


def _same_padding(size: int, kernel: int, stride: int) -> tuple[int, int, int]:
    """(output size, pad before, pad after) of TensorFlow SAME padding."""
    out = -(-size // stride)
    total = max((out - 1) * stride + kernel - size, 0)
    return out, total // 2, total - total // 2


def _windows(x: np.ndarray, kernel: tuple[int, int], stride: int, padding: str) -> np.ndarray:
    """Sliding windows of NHWC `x`: shape (N, OH, OW, C, KH, KW)."""
    kh, kw = kernel
    if padding == "SAME":
        _, top, bottom = _same_padding(x.shape[1], kh, stride)
        _, left, right = _same_padding(x.shape[2], kw, stride)
        x = np.pad(x, ((0, 0), (top, bottom), (left, right), (0, 0)))
    view = np.lib.stride_tricks.sliding_window_view(x, (kh, kw), axis=(1, 2))
    return view[:, ::stride, ::stride]


def _output_size(size: int, kernel: int, stride: int, padding: str) -> int:
    if padding == "SAME":
        return -(-size // stride)
    return (size - kernel) // stride + 1


def _rms(x: QTensor) -> float:
    """Root mean square of the calibration values, from exact integer sums."""
    centred = x.codes.astype(np.int64) - x.quant.zero_point
    mean_square = int(np.sum(centred * centred)) / centred.size
    return float(np.sqrt(mean_square)) * x.quant.scale or x.quant.scale


class Int8Graph:
    """Builds an int8 network layer by layer from a seeded generator.

    Every method returns the new QTensor. Shapes are NHWC with batch 1; a
    layer whose parameters do not fit its input raises ValueError. Calibration
    sums products of int8 codes in float64, which is exact for any summation
    order, so the chosen scales do not depend on the BLAS or the machine.
    """

    def __init__(self, rng: np.random.Generator, bias_fraction: float = 0.1, batch: int = 8) -> None:
        self.rng = rng
        self.builder = GraphBuilder()
        self.bias_fraction = bias_fraction
        self.batch = batch
        self._counts: dict[str, int] = {}
        self._input: QTensor | None = None

    def layer_name(self, base: str) -> str:
        """The next Keras-style layer name: base, base_1, base_2, ..."""
        count = self._counts.get(base, 0)
        self._counts[base] = count + 1
        return base if count == 0 else f"{base}_{count}"

    def _emit(self, name: str, shape: tuple[int, ...], quant: ActivationQuant, real: np.ndarray) -> QTensor:
        index = self.builder.activation(name, shape, np.int8, quant.parameters())
        return QTensor(index, shape, quant, quant.quantize(real))

    def _calibrated(self, name: str, shape: tuple[int, ...], real: np.ndarray) -> QTensor:
        low, high = float(real.min()), float(real.max())
        if not (np.isfinite(low) and np.isfinite(high) and high - low < 1e30):
            raise ValueError(f"{name}: calibration range [{low}, {high}] is out of bounds")
        quant = activation_quant(low * HEADROOM, high * HEADROOM)
        return self._emit(name, shape, quant, real)

    def input(self, shape: tuple[int, ...], low: float = -1.0, high: float = 1.0, name: str = "input") -> QTensor:
        """The graph input; calibration codes are uniform over all int8 values."""
        if self._input is not None:
            raise ValueError("the graph already has an input")
        quant = activation_quant(low, high)
        codes = self.rng.integers(-128, 128, size=(self.batch, *shape[1:]), dtype=np.int8)
        index = self.builder.activation(name, shape, np.int8, quant.parameters())
        self._input = QTensor(index, tuple(shape), quant, codes)
        return self._input

    def _weights_and_bias(
        self, layer: str, weights: np.ndarray, axis: int | None, x: QTensor
    ) -> tuple[int, int, np.ndarray, np.ndarray, np.ndarray]:
        """Quantize and emit weights and bias.

        Returns (weight index, bias index, int8 weights as float64, int32 bias
        as float64, accumulator-to-real scale per output channel).
        """
        out_channels = weights.shape[axis if axis is not None else 0]
        bias = self.rng.standard_normal(out_channels, dtype=np.float32)
        bias *= np.float32(self.bias_fraction * _rms(x) * np.sqrt(2.0))
        q_w, w_scales = quantize_symmetric(weights, axis)
        q_b, b_scales = quantize_bias(bias, x.quant.scale, w_scales)
        zeros = np.zeros(w_scales.size, np.int64)
        w_index = self.builder.constant(f"{layer}/kernel", q_w, quantization_parameters(w_scales, zeros, axis or 0))
        b_index = self.builder.constant(f"{layer}/bias", q_b, quantization_parameters(b_scales, zeros))
        accumulator_scale = np.float64(x.quant.scale) * w_scales.astype(np.float64)
        return w_index, b_index, q_w.astype(np.float64), q_b.astype(np.float64), accumulator_scale

    def _he_normal(self, shape: tuple[int, ...], fan_in: int, gain: float = 1.0) -> np.ndarray:
        w = self.rng.standard_normal(shape, dtype=np.float32)
        w *= np.float32(gain * np.sqrt(2.0 / fan_in))
        return w

    def conv2d(
        self,
        x: QTensor,
        filters: int,
        kernel: tuple[int, int] = (3, 3),
        stride: int = 1,
        padding: str = "SAME",
        relu: bool = True,
        gain: float = 1.0,
        relu6: bool = False,
    ) -> QTensor:
        """CONV_2D with per-channel weights [O,KH,KW,I] and int32 bias; `relu6` fuses RELU6 instead of RELU.

        Weights are He-normal times `gain` (below 1 keeps long residual chains bounded).
        """
        _n, h, w, c = x.shape
        kh, kw = kernel
        shape = (1, _output_size(h, kh, stride, padding), _output_size(w, kw, stride, padding), filters)
        layer = self.layer_name("conv2d")
        if min(shape) < 1:
            raise ValueError(f"{layer}: kernel {kernel} stride {stride} does not fit input {x.shape}")
        fan_in = kh * kw * c
        weights = self._he_normal((filters, kh, kw, c), fan_in, gain)
        w_index, b_index, q_w, q_b, acc_scale = self._weights_and_bias(layer, weights, 0, x)
        windows = _windows(x.centred(), kernel, stride, padding)
        n, oh, ow = windows.shape[:3]
        patches = windows.transpose(0, 1, 2, 4, 5, 3).reshape(n * oh * ow, fan_in)
        accumulator = patches @ q_w.reshape(filters, fan_in).T + q_b
        real = (accumulator * acc_scale).reshape(n, oh, ow, filters)
        real, suffix = _activated(real, relu, relu6)
        y = self._calibrated(f"{layer}/{suffix}", shape, real)
        options = schema.Conv2DOptionsT()
        options.padding = _PADDING[padding]
        options.strideH = options.strideW = stride
        options.fusedActivationFunction = _activation(relu, relu6)
        self.builder.operator(OP.CONV_2D, [x.index, w_index, b_index], [y.index], options, VERSIONS[OP.CONV_2D])
        return y

    def depthwise_conv2d(
        self,
        x: QTensor,
        kernel: tuple[int, int] = (3, 3),
        stride: int = 1,
        padding: str = "SAME",
        relu: bool = True,
        relu6: bool = False,
    ) -> QTensor:
        """DEPTHWISE_CONV_2D (multiplier 1) with per-channel weights [1,KH,KW,C]; `relu6` fuses RELU6."""
        _n, h, w, c = x.shape
        kh, kw = kernel
        shape = (1, _output_size(h, kh, stride, padding), _output_size(w, kw, stride, padding), c)
        layer = self.layer_name("depthwise_conv2d")
        if min(shape) < 1:
            raise ValueError(f"{layer}: kernel {kernel} stride {stride} does not fit input {x.shape}")
        weights = self._he_normal((1, kh, kw, c), kh * kw)
        w_index, b_index, q_w, q_b, acc_scale = self._weights_and_bias(layer, weights, 3, x)
        windows = _windows(x.centred(), kernel, stride, padding)
        accumulator = np.einsum("nhwcij,ijc->nhwc", windows, q_w[0]) + q_b
        real, suffix = _activated(accumulator * acc_scale, relu, relu6)
        y = self._calibrated(f"{layer}/{suffix}", shape, real)
        options = schema.DepthwiseConv2DOptionsT()
        options.padding = _PADDING[padding]
        options.strideH = options.strideW = stride
        options.depthMultiplier = 1
        options.fusedActivationFunction = _activation(relu, relu6)
        self.builder.operator(
            OP.DEPTHWISE_CONV_2D, [x.index, w_index, b_index], [y.index], options, VERSIONS[OP.DEPTHWISE_CONV_2D]
        )
        return y

    def add(self, a: QTensor, b: QTensor, relu: bool = True) -> QTensor:
        """Element-wise ADD of two tensors of the same shape."""
        if a.shape != b.shape:
            raise ValueError(f"add: shapes {a.shape} and {b.shape} differ")
        layer = self.layer_name("add")
        real = a.real() + b.real()
        if relu:
            real = np.maximum(real, 0)
        y = self._calibrated(f"{layer}/{'Relu' if relu else 'add'}", a.shape, real)
        options = schema.AddOptionsT()
        options.fusedActivationFunction = _activation(relu)
        self.builder.operator(OP.ADD, [a.index, b.index], [y.index], options, VERSIONS[OP.ADD])
        return y

    def mean(self, x: QTensor, axes: tuple[int, ...], keep_dims: bool, base: str = "mean") -> QTensor:
        """MEAN over the constant `axes`, as the converter emits a Keras global average pooling (axes (1, 2)) or a
        layer norm's mean (the last axis, keep_dims); the output calibrated to a quantization of its own."""
        layer = self.layer_name(base)
        axes_index = self.builder.constant(f"{layer}/Mean/reduction_indices", np.array(axes, np.int32))
        real = x.real().mean(axis=axes, keepdims=keep_dims)
        shape = tuple(1 if a in axes else d for a, d in enumerate(x.shape) if keep_dims or a not in axes)
        y = self._calibrated(f"{layer}/Mean", shape, real)
        options = schema.ReducerOptionsT()
        options.keepDims = keep_dims
        self.builder.operator(OP.MEAN, [x.index, axes_index], [y.index], options, version=2)
        return y

    def global_average_pool(self, x: QTensor) -> QTensor:
        """AVERAGE_POOL_2D over the whole H x W (VALID), keeping the input's quantization."""
        _n, h, w, c = x.shape
        layer = self.layer_name("average_pooling2d")
        real = x.centred().sum(axis=(1, 2), keepdims=True) / (h * w) * x.quant.scale
        y = self._emit(f"{layer}/AvgPool", (1, 1, 1, c), x.quant, real)
        options = schema.Pool2DOptionsT()
        options.padding = schema.Padding.VALID
        options.strideH = options.strideW = 1
        options.filterHeight, options.filterWidth = h, w
        options.fusedActivationFunction = schema.ActivationFunctionType.NONE
        self.builder.operator(OP.AVERAGE_POOL_2D, [x.index], [y.index], options, VERSIONS[OP.AVERAGE_POOL_2D])
        return y

    def flatten(self, x: QTensor) -> QTensor:
        """RESHAPE to [1, N] with a constant int32 shape input, keeping the quantization."""
        layer = self.layer_name("flatten")
        size = int(np.prod(x.shape))
        new_shape = np.array([1, size], dtype=np.int32)
        shape_index = self.builder.constant(f"{layer}/shape", new_shape)
        index = self.builder.activation(f"{layer}/Reshape", (1, size), np.int8, x.quant.parameters())
        y = QTensor(index, (1, size), x.quant, x.codes.reshape(x.codes.shape[0], size))
        options = schema.ReshapeOptionsT()
        options.newShape = [int(v) for v in new_shape]
        self.builder.operator(OP.RESHAPE, [x.index, shape_index], [y.index], options, VERSIONS[OP.RESHAPE])
        return y

    def fully_connected(self, x: QTensor, units: int, relu: bool = False) -> QTensor:
        """FULLY_CONNECTED on a [1, K] input with per-tensor weights [units, K]."""
        if len(x.shape) != 2:
            raise ValueError(f"fully_connected: input shape {x.shape} is not [1, K]")
        k = x.shape[1]
        layer = self.layer_name("dense")
        weights = self._he_normal((units, k), k)
        w_index, b_index, q_w, q_b, acc_scale = self._weights_and_bias(layer, weights, None, x)
        real = (x.centred() @ q_w.T + q_b) * acc_scale
        if relu:
            real = np.maximum(real, 0)
        y = self._calibrated(f"{layer}/{'Relu' if relu else 'BiasAdd'}", (1, units), real)
        options = schema.FullyConnectedOptionsT()
        options.fusedActivationFunction = _activation(relu)
        self.builder.operator(
            OP.FULLY_CONNECTED, [x.index, w_index, b_index], [y.index], options, VERSIONS[OP.FULLY_CONNECTED]
        )
        return y

    def softmax(self, x: QTensor) -> QTensor:
        """SOFTMAX (beta 1) with the int8 output quantization 1/256, zero point -128."""
        layer = self.layer_name("softmax")
        logits = x.real()
        shifted = np.exp(logits - logits.max(axis=-1, keepdims=True))
        real = shifted / shifted.sum(axis=-1, keepdims=True)
        y = self._emit(f"{layer}/Softmax", x.shape, SOFTMAX_QUANT, real)
        options = schema.SoftmaxOptionsT()
        options.beta = 1.0
        self.builder.operator(OP.SOFTMAX, [x.index], [y.index], options, VERSIONS[OP.SOFTMAX])
        return y

    def finish(self, output: QTensor, description: str, name: str) -> Model:
        """The Model with the graph input and `output`; signature names 'input' and 'output_0'."""
        if self._input is None:
            raise ValueError("the graph has no input")
        return self.builder.finish(
            [self._input.index],
            [output.index],
            description=description,
            name=name,
            signature_names=(["input"], ["output_0"]),
        )
