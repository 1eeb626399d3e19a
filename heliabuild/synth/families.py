"""Int8 architecture families with the operator patterns the TFLite converter emits for them.

- `mobilenet_v3_block`: a MobileNetV3-small inverted residual block with squeeze-excite (CONV_2D, HARD_SWISH,
  DEPTHWISE_CONV_2D, MEAN over H and W keeping them, LOGISTIC, MUL broadcast over H x W, ADD), then the
  classifier head (MEAN over H and W, FULLY_CONNECTED, SOFTMAX);
- `transformer_block`: one pre-norm transformer encoder block on [1, tokens, width] (layer norm as MEAN over
  the last axis keeping it, SQUARED_DIFFERENCE, ADD of epsilon, RSQRT and MUL; single-head attention with
  FULLY_CONNECTED projections, BATCH_MATMUL, SOFTMAX; residual ADDs);
- `unet_decoder`: a U-Net decoder (TRANSPOSE_CONV up-sampling, CONCATENATION with the skip connection,
  RESIZE_BILINEAR and RESIZE_NEAREST_NEIGHBOR up-sampling, CONV_2D).

Each is an `Int8Graph` with calibrated quantization (heliabuild.synth.layers), seeded and deterministic. The
global poolings and the layer norm's means are MEAN, as the TFLite converter emits Keras's
GlobalAveragePooling2D and LayerNormalization; each MEAN's output has a calibrated quantization of its own.
"""

from __future__ import annotations

import numpy as np
from ai_edge_litert import schema_py_generated as schema

from heliabuild.model.io import Model
from heliabuild.synth.layers import _PADDING, OP, Int8Graph, QTensor
from heliabuild.synth.quant import ActivationQuant, activation_quant, quantization_parameters

LOGISTIC_QUANT = ActivationQuant(1.0 / 256.0, -128)
"""The int8 output quantization LiteRT requires of LOGISTIC."""
_VERSIONS = {
    OP.HARD_SWISH: 1, OP.LOGISTIC: 2, OP.MUL: 2, OP.SQUARED_DIFFERENCE: 2, OP.RSQRT: 2, OP.BATCH_MATMUL: 1,
    OP.TRANSPOSE_CONV: 3, OP.RESIZE_BILINEAR: 3, OP.RESIZE_NEAREST_NEIGHBOR: 3, OP.CONCATENATION: 2,
}  # fmt: skip


class FamilyGraph(Int8Graph):
    """Int8Graph plus the layers of the families above; each returns the new QTensor."""

    def _finish_layer(
        self,
        code: int,
        inputs: list[int],
        name: str,
        shape: tuple[int, ...],
        real: np.ndarray,
        options: object = None,
        quant: ActivationQuant | None = None,
    ) -> QTensor:
        y = self._calibrated(name, shape, real) if quant is None else self._emit(name, shape, quant, real)
        self.builder.operator(code, inputs, [y.index], options, _VERSIONS.get(code, 1))
        return y

    def hard_swish(self, x: QTensor) -> QTensor:
        real = x.real()
        return self._finish_layer(
            OP.HARD_SWISH, [x.index], f"{self.layer_name('hard_swish')}/HardSwish", x.shape,
            real * np.clip(real + 3.0, 0.0, 6.0) / 6.0,
        )  # fmt: skip

    def logistic(self, x: QTensor) -> QTensor:
        real = 1.0 / (1.0 + np.exp(-x.real()))
        name = f"{self.layer_name('sigmoid')}/Sigmoid"
        return self._finish_layer(OP.LOGISTIC, [x.index], name, x.shape, real, quant=LOGISTIC_QUANT)

    def mul(self, a: QTensor, b: QTensor) -> QTensor:
        """MUL with NumPy broadcasting."""
        real = a.real() * b.real()
        shape = tuple(int(d) for d in np.broadcast_shapes(a.shape, b.shape))
        options = schema.MulOptionsT()
        return self._finish_layer(
            OP.MUL, [a.index, b.index], f"{self.layer_name('multiply')}/mul", shape, real, options
        )

    def add_broadcast(self, a: QTensor, b: QTensor) -> QTensor:
        real = a.real() + b.real()
        shape = tuple(int(d) for d in np.broadcast_shapes(a.shape, b.shape))
        return self._finish_layer(OP.ADD, [a.index, b.index], f"{self.layer_name('add')}/add", shape, real,
                                  schema.AddOptionsT())  # fmt: skip

    def constant(self, name: str, value: float, shape: tuple[int, ...] = (1,)) -> QTensor:
        """An int8 constant filled with `value` (its own quantization covering it)."""
        quant = activation_quant(min(value, 0.0), max(value, 0.0))
        codes = quant.quantize(np.full(shape, value))
        index = self.builder.constant(name, codes, quant.parameters())
        return QTensor(index, shape, quant, np.broadcast_to(codes, (self.batch, *shape[1:])).copy())

    def squared_difference(self, a: QTensor, b: QTensor) -> QTensor:
        real = (a.real() - b.real()) ** 2
        shape = tuple(int(d) for d in np.broadcast_shapes(a.shape, b.shape))
        name = f"{self.layer_name('squared_difference')}/SquaredDifference"
        return self._finish_layer(OP.SQUARED_DIFFERENCE, [a.index, b.index], name, shape, real)

    def rsqrt(self, x: QTensor) -> QTensor:
        real = 1.0 / np.sqrt(np.maximum(x.real(), 1e-2))
        return self._finish_layer(OP.RSQRT, [x.index], f"{self.layer_name('rsqrt')}/Rsqrt", x.shape, real)

    def reshape(self, x: QTensor, shape: tuple[int, ...]) -> QTensor:
        layer = self.layer_name("reshape")
        shape_index = self.builder.constant(f"{layer}/shape", np.array(shape, np.int32))
        index = self.builder.activation(f"{layer}/Reshape", shape, np.int8, x.quant.parameters())
        options = schema.ReshapeOptionsT()
        options.newShape = [int(d) for d in shape]
        self.builder.operator(OP.RESHAPE, [x.index, shape_index], [index], options, 1)
        return QTensor(index, shape, x.quant, x.codes.reshape(x.codes.shape[0], *shape[1:]))

    def dense_tokens(self, x: QTensor, units: int) -> QTensor:
        """FULLY_CONNECTED on [1, T, D] per token, keep_num_dims: [1, T, units]."""
        _, tokens, width = x.shape
        layer = self.layer_name("dense")
        weights = self._he_normal((units, width), width)
        w_index, b_index, q_w, q_b, acc_scale = self._weights_and_bias(layer, weights, None, x)
        real = (x.centred() @ q_w.T + q_b) * acc_scale
        options = schema.FullyConnectedOptionsT()
        options.keepNumDims = True
        return self._finish_layer(
            OP.FULLY_CONNECTED, [x.index, w_index, b_index], f"{layer}/BiasAdd", (1, tokens, units), real, options
        )

    def batch_matmul(self, a: QTensor, b: QTensor, adj_y: bool = False) -> QTensor:
        right = np.swapaxes(b.real(), -1, -2) if adj_y else b.real()
        real = a.real() @ right
        shape = (*a.shape[:-1], int(b.shape[-2] if adj_y else b.shape[-1]))
        options = schema.BatchMatMulOptionsT()
        options.adjY = adj_y
        name = f"{self.layer_name('batch_matmul')}/MatMul"
        return self._finish_layer(OP.BATCH_MATMUL, [a.index, b.index], name, shape, real, options)

    def transpose_conv(self, x: QTensor, filters: int, kernel: int = 3, stride: int = 2) -> QTensor:
        """TRANSPOSE_CONV, SAME padding: [1, H, W, C] to [1, H x stride, W x stride, filters], with a bias."""
        _, h, w, c = x.shape
        layer = self.layer_name("conv2d_transpose")
        weights = self._he_normal((filters, kernel, kernel, c), kernel * kernel * c // (stride * stride))
        w_index, b_index, q_w, q_b, acc_scale = self._weights_and_bias(layer, weights, 0, x)
        oh, ow = h * stride, w * stride
        pad = max((h - 1) * stride + kernel - oh, 0) // 2
        out = np.zeros((x.codes.shape[0], oh + kernel + stride, ow + kernel + stride, filters))
        centred = x.centred()
        for i in range(h):
            for j in range(w):
                contribution = np.einsum("nc,oklc->nklo", centred[:, i, j, :], q_w)
                out[:, i * stride : i * stride + kernel, j * stride : j * stride + kernel, :] += contribution
        real = (out[:, pad : pad + oh, pad : pad + ow, :] + q_b) * acc_scale
        shape_index = self.builder.constant(f"{layer}/output_shape", np.array([1, oh, ow, filters], np.int32))
        options = schema.TransposeConvOptionsT()
        options.padding = _PADDING["SAME"]
        options.strideH = options.strideW = stride
        return self._finish_layer(
            OP.TRANSPOSE_CONV, [shape_index, w_index, x.index, b_index], f"{layer}/BiasAdd", (1, oh, ow, filters),
            real, options,
        )  # fmt: skip

    def resize(self, x: QTensor, factor: int, bilinear: bool) -> QTensor:
        """RESIZE_BILINEAR or RESIZE_NEAREST_NEIGHBOR by `factor` (half-pixel centers), keeping the quantization."""
        _, h, w, c = x.shape
        layer = self.layer_name("up_sampling2d")
        size = self.builder.constant(f"{layer}/size", np.array([h * factor, w * factor], np.int32))
        real = np.repeat(np.repeat(x.real(), factor, axis=1), factor, axis=2)
        if bilinear:
            options, code = schema.ResizeBilinearOptionsT(), OP.RESIZE_BILINEAR
        else:
            options, code = schema.ResizeNearestNeighborOptionsT(), OP.RESIZE_NEAREST_NEIGHBOR
        options.halfPixelCenters = True
        name = f"{layer}/{'resize/ResizeBilinear' if bilinear else 'resize/ResizeNearestNeighbor'}"
        return self._finish_layer(code, [x.index, size], name, (1, h * factor, w * factor, c), real, options, x.quant)

    def concatenate(self, tensors: list[QTensor]) -> QTensor:
        """CONCATENATION on the channel axis of tensors that share one quantization (LiteRT requires it)."""
        quant = tensors[0].quant
        if any(t.quant != quant for t in tensors):
            raise ValueError("concatenate: the inputs are quantized differently")
        real = np.concatenate([t.real() for t in tensors], axis=-1)
        shape = (*tensors[0].shape[:-1], sum(t.shape[-1] for t in tensors))
        options = schema.ConcatenationOptionsT()
        options.axis = len(shape) - 1
        name = f"{self.layer_name('concatenate')}/concat"
        return self._finish_layer(OP.CONCATENATION, [t.index for t in tensors], name, shape, real, options, quant)

    def requantized_conv(self, x: QTensor, filters: int, quant: ActivationQuant) -> QTensor:
        """A 1x1 CONV_2D whose output takes `quant` (a concatenation's shared quantization)."""
        y = self.conv2d(x, filters, (1, 1), relu=True)
        self.builder.tensors[y.index].quantization = quantization_parameters([quant.scale], [quant.zero_point])
        return QTensor(y.index, y.shape, quant, quant.quantize(y.real()))


def mobilenet_v3_block(seed: int = 0) -> Model:
    """[1, 16, 16, 8] -> MobileNetV3-small block with squeeze-excite -> pooled classifier of 10 classes."""
    g = FamilyGraph(np.random.default_rng(seed))
    x = g.input((1, 16, 16, 8))
    stem = g.hard_swish(g.conv2d(x, 16, (3, 3), stride=2, relu=False))
    expanded = g.hard_swish(g.conv2d(stem, 32, (1, 1), relu=False))
    depthwise = g.hard_swish(g.depthwise_conv2d(expanded, (3, 3), relu=False))
    squeezed = g.mean(depthwise, (1, 2), keep_dims=True, base="global_average_pooling2d")
    excite = g.logistic(g.conv2d(g.conv2d(squeezed, 8, (1, 1), relu=True), 32, (1, 1), relu=False))
    scaled = g.mul(depthwise, excite)
    projected = g.conv2d(scaled, 16, (1, 1), relu=False)
    block = g.add(stem, projected, relu=False)
    head = g.hard_swish(g.conv2d(block, 32, (1, 1), relu=False))
    logits = g.fully_connected(g.mean(head, (1, 2), keep_dims=False, base="global_average_pooling2d"), 10)
    return g.finish(g.softmax(logits), "int8 MobileNetV3-small block with squeeze-excite", "mobilenet_v3_block")


def transformer_block(seed: int = 0, tokens: int = 8, width: int = 16) -> Model:
    """[1, tokens, width] -> layer norm -> single-head self-attention -> residual ADD (one encoder block)."""
    g = FamilyGraph(np.random.default_rng(seed))
    x = g.input((1, tokens, width))
    mean = g.mean(x, (2,), keep_dims=True, base="layer_normalization")
    variance = g.mean(g.squared_difference(x, mean), (2,), keep_dims=True, base="layer_normalization")
    inverse = g.rsqrt(g.add_broadcast(variance, g.constant("layer_norm/epsilon", 1e-3, (1, 1, 1))))
    centred = g.add_broadcast(x, g.mul(mean, g.constant("layer_norm/minus_one", -1.0, (1, 1, 1))))
    normed = g.mul(centred, inverse)
    query, key, value = (g.dense_tokens(normed, width) for _ in range(3))
    scores = g.batch_matmul(
        g.mul(query, g.constant("attention/scale", 1.0 / np.sqrt(width), (1, 1, 1))), key, adj_y=True
    )
    attended = g.batch_matmul(g.softmax(scores), value)
    output = g.add(x, g.dense_tokens(attended, width), relu=False)
    return g.finish(output, "int8 transformer encoder block: layer norm, self-attention, residual", "transformer")


def unet_decoder(seed: int = 0) -> Model:
    """[1, 16, 16, 4] -> encoder to 4x4 -> decoder: TRANSPOSE_CONV + skip CONCATENATION, RESIZE_BILINEAR and
    RESIZE_NEAREST_NEIGHBOR up-sampling, CONV_2D -> a [1, 32, 32, 2] map."""
    g = FamilyGraph(np.random.default_rng(seed))
    x = g.input((1, 16, 16, 4))
    skip_full = g.conv2d(x, 8, (3, 3))
    skip_half = g.conv2d(skip_full, 8, (3, 3), stride=2)
    bottleneck = g.conv2d(skip_half, 16, (3, 3), stride=2)
    up = g.transpose_conv(bottleneck, 8)
    shared = activation_quant(
        min(float(up.real().min()), float(skip_half.real().min())) * 1.25,
        max(float(up.real().max()), float(skip_half.real().max())) * 1.25,
    )
    merged = g.concatenate([g.requantized_conv(up, 8, shared), g.requantized_conv(skip_half, 8, shared)])
    decoded = g.conv2d(merged, 8, (3, 3))
    upsampled = g.resize(decoded, 2, bilinear=True)
    refined = g.conv2d(upsampled, 4, (3, 3))
    nearest = g.resize(refined, 2, bilinear=False)
    output = g.conv2d(nearest, 2, (1, 1), relu=False)
    return g.finish(output, "int8 U-Net decoder: transpose conv, skip concatenation, resizes", "unet_decoder")
