"""Int8 quantization arithmetic for synthesized models.

Activations are asymmetric per-tensor int8; weights are symmetric int8
(zero point 0) per output channel or per tensor; biases are int32 with scale
input_scale * weight_scale. Scales are rounded to float32 before use, because
float32 is what the model stores and what the runtime computes with.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from ai_edge_litert import schema_py_generated as schema

INT8_MIN = -128
INT8_MAX = 127
# Symmetric weights use [-127, 127] so that negation never overflows.
WEIGHT_MAX = 127
# Smallest real range an activation gets, so a (near) constant tensor still
# has a finite, positive scale.
_MIN_RANGE = 1e-3


@dataclass(frozen=True)
class ActivationQuant:
    """Per-tensor int8 quantization of an activation: real = scale * (q - zero_point)."""

    scale: float
    zero_point: int

    def quantize(self, real: np.ndarray) -> np.ndarray:
        """Real values to int8, rounded to nearest and saturated."""
        q = np.round(real / np.float32(self.scale)) + self.zero_point
        return np.clip(q, INT8_MIN, INT8_MAX).astype(np.int8)

    def parameters(self) -> schema.QuantizationParametersT:
        """The schema quantization parameters (per tensor)."""
        return quantization_parameters([self.scale], [self.zero_point])


def activation_quant(low: float, high: float) -> ActivationQuant:
    """The int8 quantization covering [low, high], widened to include 0 exactly.

    A range that starts at 0 (e.g. after RELU) gets zero point -128.
    """
    low = min(float(low), 0.0)
    high = max(float(high), 0.0)
    if high - low < _MIN_RANGE:
        high = low + _MIN_RANGE
    scale = float(np.float32((high - low) / (INT8_MAX - INT8_MIN)))
    zero_point = int(np.clip(np.round(INT8_MIN - low / scale), INT8_MIN, INT8_MAX))
    return ActivationQuant(scale, zero_point)


def quantize_symmetric(weights: np.ndarray, axis: int | None) -> tuple[np.ndarray, np.ndarray]:
    """Symmetric int8 weights and their float32 scales.

    With `axis`, one scale per index along that axis (per channel); with None,
    one scale for the whole tensor. Returns (int8 weights, scales as a 1-D array).
    """
    w = np.asarray(weights, dtype=np.float32)
    if axis is None:
        peak = np.array([np.max(np.abs(w))], dtype=np.float32)
        broadcast = peak.reshape((1,) * w.ndim)
    else:
        others = tuple(a for a in range(w.ndim) if a != axis)
        peak = np.max(np.abs(w), axis=others).astype(np.float32)
        shape = [1] * w.ndim
        shape[axis] = w.shape[axis]
        broadcast = peak.reshape(shape)
    scales = (np.maximum(peak, np.float32(1e-6)) / np.float32(WEIGHT_MAX)).astype(np.float32)
    q = np.clip(np.round(w / scales.reshape(broadcast.shape)), -WEIGHT_MAX, WEIGHT_MAX).astype(np.int8)
    return q, scales


def quantize_bias(bias: np.ndarray, input_scale: float, weight_scales: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Int32 bias with scale input_scale * weight_scale; returns (q, scales).

    `weight_scales` has one entry per output channel or a single entry (per
    tensor); the returned scales have the same length.
    """
    scales = (np.float32(input_scale) * weight_scales.astype(np.float32)).astype(np.float32)
    q = np.clip(np.round(bias.astype(np.float64) / scales), -(2**31), 2**31 - 1).astype(np.int32)
    return q, scales


def quantization_parameters(
    scales: Sequence[float] | np.ndarray,
    zero_points: Sequence[int] | np.ndarray,
    axis: int = 0,
) -> schema.QuantizationParametersT:
    """Schema quantization parameters with the given scales, zero points and quantized dimension."""
    params = schema.QuantizationParametersT()
    params.scale = [float(s) for s in np.asarray(scales, dtype=np.float32)]
    params.zeroPoint = [int(z) for z in zero_points]
    params.quantizedDimension = int(axis)
    return params
