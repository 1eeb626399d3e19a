"""LEAKY_RELU and PRELU: their int8 parameters as LiteRT prepares them, and ctypes bindings.

- `leaky_relu_params(input, output, alpha)`: the quantized multipliers of in_scale / out_scale and
  in_scale x alpha / out_scale, each computed in float32 (LiteRT's LeakyReluPrepare multiplies and divides the
  float scales before widening to double); a negative alpha is refused (its multiplier would be negative);
- `prelu_params(input, alpha, output)`: helia_binary_s8_args values for `helia_prelu_s8`: input1 the data,
  input2 alpha, input1_multiplier the rescale of x >= zp (float32 in_scale / out_scale), output_multiplier the
  rescale of the product (float32 in_scale x alpha_scale / out_scale), bounds [-128, 127];
- `ActivationKernels(load_host_library(...))`: `.leaky_relu(params, x)`; PRELU runs through
  `heliabuild.kernels.int8.Int8Kernels.binary("prelu", ...)`.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from heliabuild.kernels.fixed_point import quantize_multiplier
from heliabuild.kernels.int8 import (
    _I8,
    BinaryParams,
    HostKernelCall,
    Int8KernelError,
    Int8Kernels,
    Quant,
    _fields,
)


@dataclass(frozen=True)
class LeakyReluParams:
    input_zero_point: int
    output_zero_point: int
    identity_multiplier: int
    identity_shift: int
    alpha_multiplier: int
    alpha_shift: int


def _f32(value: float) -> float:
    return float(np.float32(value))


def leaky_relu_params(input_quant: Quant, output_quant: Quant, alpha: float) -> LeakyReluParams:
    """LiteRT's int8 LeakyReluPrepare (module docstring)."""
    if not alpha >= 0:
        raise Int8KernelError(f"int8 leaky relu: alpha {alpha!r} is negative; the kernel takes alpha >= 0")
    scale_in, scale_out = np.float32(input_quant.scale), np.float32(output_quant.scale)
    identity = quantize_multiplier(_f32(scale_in / scale_out))
    scaled = quantize_multiplier(_f32(np.float32(scale_in * np.float32(alpha)) / scale_out))
    return LeakyReluParams(input_quant.zero_point, output_quant.zero_point, *identity, *scaled)


def prelu_params(input_quant: Quant, alpha_quant: Quant, output_quant: Quant) -> BinaryParams:
    """LiteRT's int8 PreluPrepare as helia_binary_s8_args values (module docstring)."""
    scale_in, scale_out = np.float32(input_quant.scale), np.float32(output_quant.scale)
    m1, s1 = quantize_multiplier(_f32(scale_in / scale_out))
    m2, s2 = quantize_multiplier(_f32(np.float32(scale_in * np.float32(alpha_quant.scale)) / scale_out))
    return BinaryParams(
        input_quant.zero_point, alpha_quant.zero_point, output_quant.zero_point, 0, m1, s1, 0, 0, m2, s2, -128, 127
    )


class LeakyReluArgs(ctypes.Structure):
    _fields_ = [
        ("input", _I8), ("output", _I8),
        *_fields("count", "input_zero_point", "output_zero_point", "identity_multiplier", "identity_shift",
                 "alpha_multiplier", "alpha_shift"),
    ]  # fmt: skip


class ActivationKernels(Int8Kernels):
    """Int8Kernels with LEAKY_RELU."""

    def __init__(self, library: ctypes.CDLL, recorder: Callable[[HostKernelCall], None] | None = None) -> None:
        super().__init__(library)
        self.recorder = recorder
        function = library.helia_leaky_relu_s8
        function.argtypes = [ctypes.POINTER(LeakyReluArgs)]
        function.restype = ctypes.c_int

    def leaky_relu(self, params: LeakyReluParams, input: np.ndarray) -> np.ndarray:
        x = np.ascontiguousarray(input, dtype=np.int8)
        out = np.zeros(x.shape, np.int8)
        args = LeakyReluArgs(
            x.ctypes.data_as(_I8), out.ctypes.data_as(_I8), x.size, params.input_zero_point,
            params.output_zero_point, params.identity_multiplier, params.identity_shift, params.alpha_multiplier,
            params.alpha_shift,
        )  # fmt: skip
        self._call("helia_leaky_relu_s8", args, arrays=(x, out))
        return out
