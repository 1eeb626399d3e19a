"""heliabuild's integer UNIDIRECTIONAL_SEQUENCE_LSTM (`c/ops_lstm.c`): its parameters, derived from a model's
float32 scales as LiteRT prepares them, and its binding (docs/kernels.md, "Integer LSTM").

`lstm_params(...)` gives every integer the kernel takes:

- per gate the input and recurrent multipliers of weight_scale * activation_scale / 2^-12 (the gates'
  Q3.12), products and quotient in float32 as LiteRT computes them, then TFLite's QuantizeMultiplier;
- the hidden multiplier of 2^-15 / hidden_scale * 2^-15 (o times tanh(c), both Q0.15, to the hidden state);
- the effective biases: the gate bias minus input_zp times each weight row's sum on the input side, minus
  output_state_zp times each recurrent row's sum on the recurrent side (int32, wrapping);
- the cell state's scale as a power of two and the cell clip in cell-state codes.

Refused (Int8KernelError): a cell scale that is not a power of two in [2^-15, 2^-9], a hidden intermediate
with a zero point outside int8. `LstmKernels(load_host_library(build_dir)).lstm(params, ...)` runs the host
build; the state arrays are updated in place, as the generated module's carried state is.
"""

from __future__ import annotations

import ctypes
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from heliabuild.kernels.fixed_point import _wrap32, quantize_multiplier
from heliabuild.kernels.int8 import (
    _I8,
    Int8KernelError,
    Int8Kernels,
    Quant,
    _c_array,
    _pointer,
)

GATE_SCALE = 2.0**-12
CELL_LOG2_RANGE = (-15, -9)
_F32 = np.float32


@dataclass(frozen=True)
class LstmParams:
    """Every integer of helia_lstm_s8_args besides the buffers and extents (gate order input, forget, cell,
    output)."""

    input_multipliers: tuple[int, ...]
    input_shifts: tuple[int, ...]
    recurrent_multipliers: tuple[int, ...]
    recurrent_shifts: tuple[int, ...]
    input_biases: tuple[tuple[int, ...], ...]
    recurrent_biases: tuple[tuple[int, ...], ...]
    cell_log2: int
    cell_clip: int
    hidden_multiplier: int
    hidden_shift: int
    hidden_zero_point: int


def cell_log2(scale: float) -> int:
    """log2 of the cell state's scale, which must be a power of two in 2^-15..2^-9: LiteRT takes the log2, and
    its tanh of the cell state reads it with 15 + log2 integer bits, 0 to 6."""
    exponent = round(math.log2(scale)) if scale > 0 and math.isfinite(scale) else None
    if exponent is None or abs(math.log2(scale) - exponent) >= 1e-3:
        raise Int8KernelError(f"integer LSTM: cell state scale {scale:.6g} is not a power of two")
    if not CELL_LOG2_RANGE[0] <= exponent <= CELL_LOG2_RANGE[1]:
        raise Int8KernelError(f"integer LSTM: cell state scale 2^{exponent} is outside 2^-15..2^-9")
    return exponent


def _gate_multiplier(weight_scale: float, activation_scale: float) -> tuple[int, int]:
    effective = _F32(_F32(weight_scale) * _F32(activation_scale)) / _F32(GATE_SCALE)
    return quantize_multiplier(float(effective))


def lstm_params(
    input_quant: Quant,
    state_quant: Quant,
    cell_scale: float,
    hidden_quant: Quant,
    input_weights: Sequence[tuple[np.ndarray, float]],
    recurrent_weights: Sequence[tuple[np.ndarray, float]],
    biases: Sequence[np.ndarray | None],
    cell_clip: float = 0.0,
) -> LstmParams:
    """The kernel's parameters (module docstring). `input_weights` and `recurrent_weights` are per gate the int8
    codes and their per-tensor scale; `biases` per gate the int32 codes or None."""
    if not -128 <= hidden_quant.zero_point <= 127 or not -128 <= state_quant.zero_point <= 127:
        raise Int8KernelError("integer LSTM: the hidden and output state zero points must be int8")
    log2 = cell_log2(cell_scale)
    input_m = [_gate_multiplier(scale, input_quant.scale) for _, scale in input_weights]
    recurrent_m = [_gate_multiplier(scale, state_quant.scale) for _, scale in recurrent_weights]
    input_b = []
    recurrent_b = []
    for (w, _), (u, _), bias in zip(input_weights, recurrent_weights, biases, strict=True):
        folded = -int(input_quant.zero_point) * w.astype(np.int64).sum(axis=1)
        if bias is not None:
            folded = folded + bias.astype(np.int64)
        input_b.append(tuple(_wrap32(int(v)) for v in folded))
        recurrent_b.append(
            tuple(_wrap32(int(v)) for v in -int(state_quant.zero_point) * u.astype(np.int64).sum(axis=1))
        )
    hidden_real = _F32(2.0**-15 / float(_F32(hidden_quant.scale)) * 2.0**-15)
    hidden_multiplier, hidden_shift = quantize_multiplier(float(hidden_real))
    clip = 0
    if cell_clip > 0:
        clip = int(min(max(float(_F32(cell_clip) / _F32(cell_scale)), -32768.0), 32767.0))
    return LstmParams(
        tuple(m for m, _ in input_m),
        tuple(s for _, s in input_m),
        tuple(m for m, _ in recurrent_m),
        tuple(s for _, s in recurrent_m),
        tuple(input_b),
        tuple(recurrent_b),
        log2,
        clip,
        hidden_multiplier,
        hidden_shift,
        int(hidden_quant.zero_point),
    )


_I16 = ctypes.POINTER(ctypes.c_int16)
_I32 = ctypes.POINTER(ctypes.c_int32)
_GATES4 = ctypes.c_int32 * 4
GATE_NAMES = ("input", "forget", "cell", "output")


class LstmArgs(ctypes.Structure):
    _fields_ = [
        ("input", _I8),
        *[(f"input_to_{g}_weights", _I8) for g in GATE_NAMES],
        *[(f"recurrent_to_{g}_weights", _I8) for g in GATE_NAMES],
        *[(f"{g}_gate_bias", _I32) for g in GATE_NAMES],
        *[(f"recurrent_{g}_gate_bias", _I32) for g in GATE_NAMES],
        *[(name, _GATES4) for name in ("input_multipliers", "input_shifts", "recurrent_multipliers",
                                       "recurrent_shifts")],
        ("output_state", _I8), ("cell_state", _I16), ("output", _I8), ("scratch", ctypes.c_void_p),
        *[(name, ctypes.c_int32) for name in ("scratch_bytes", "batches", "time_steps", "input_size", "units",
                                              "time_major", "cell_log2", "cell_clip", "hidden_multiplier",
                                              "hidden_shift", "hidden_zero_point")],
    ]  # fmt: skip


def scratch_bytes(units: int) -> int:
    """The kernel's scratch: the four int16 gates of one batch row."""
    return 8 * units


class LstmKernels(Int8Kernels):
    """Int8Kernels plus the integer LSTM."""

    _SIGNATURES: ClassVar[dict[str, tuple[list[object], object]]] = {
        **Int8Kernels._SIGNATURES,
        "helia_lstm_s8": ([ctypes.POINTER(LstmArgs)], ctypes.c_int),
    }

    def lstm(
        self,
        params: LstmParams,
        x: np.ndarray,
        input_weights: Sequence[np.ndarray],
        recurrent_weights: Sequence[np.ndarray],
        output_state: np.ndarray,
        cell_state: np.ndarray,
        time_major: bool = False,
    ) -> np.ndarray:
        """The output sequence of one call on `x` ([batch, time, features], or time-major); `output_state` (int8)
        and `cell_state` (int16), C-contiguous [batch, units], are updated in place."""
        if output_state.dtype != np.int8 or cell_state.dtype != np.int16:
            raise Int8KernelError("integer LSTM: the state arrays must be int8 and int16")
        if not (output_state.flags.c_contiguous and cell_state.flags.c_contiguous):
            raise Int8KernelError("integer LSTM: the state arrays must be C-contiguous")
        data = _c_array(x, "int8")
        steps, batches = (data.shape[0], data.shape[1]) if time_major else (data.shape[1], data.shape[0])
        units = int(output_state.shape[-1])
        weights = [_c_array(w, "int8") for w in (*input_weights, *recurrent_weights)]
        biases = [_c_array(b, "int32") for b in (*params.input_biases, *params.recurrent_biases)]
        scratch = np.zeros(scratch_bytes(units) // 2, np.int16)
        out_shape = (steps, batches, units) if time_major else (batches, steps, units)
        out = np.zeros(out_shape, np.int8)
        args = LstmArgs(
            _pointer(data, _I8), *(_pointer(w, _I8) for w in weights), *(_pointer(b, _I32) for b in biases),
            _GATES4(*params.input_multipliers), _GATES4(*params.input_shifts),
            _GATES4(*params.recurrent_multipliers), _GATES4(*params.recurrent_shifts),
            _pointer(output_state, _I8), _pointer(cell_state, _I16), _pointer(out, _I8),
            _pointer(scratch, ctypes.c_void_p),
            scratch.nbytes, batches, steps, int(data.shape[2]), units, int(time_major), params.cell_log2,
            params.cell_clip, params.hidden_multiplier, params.hidden_shift, params.hidden_zero_point,
        )  # fmt: skip
        arrays = (data, *weights, *biases, scratch, output_state, cell_state, out)
        self._call("helia_lstm_s8", args, arrays=arrays, written=4)
        return out
