"""An unrolled int8 GRU with the operator pattern the TFLite converter emits for `keras.layers.GRU(unroll=True)`.

`gru_network(seed, steps, features, units)`: input int8 [1, steps, features] -> UNPACK over time, then per step

    gx = FULLY_CONNECTED(x_t, W)            [1, 3 units]   gh = FULLY_CONNECTED(h, U)
    xz, xr, xh = SPLIT(gx)                  hz, hr, hh = STRIDED_SLICE(gh) x3
    z = LOGISTIC(ADD(xz, hz))               r = LOGISTIC(ADD(xr, hr))
    c = TANH(ADD(xh, MUL(r, hh)))           h = ADD(MUL(z, h), MUL(SUB(1, z), c))

and the last h is the output [1, units]. The first step's h is a constant zero tensor. Every activation is
calibrated on a batch of random inputs as heliabuild.synth.layers does; LOGISTIC's output has TFLite's fixed
quantization 1/256, -128 and TANH's 1/128, 0; SPLIT, STRIDED_SLICE and UNPACK keep their input's.
"""

from __future__ import annotations

import numpy as np
from ai_edge_litert import schema_py_generated as schema

from heliabuild.model.io import Model
from heliabuild.synth.layers import Int8Graph, QTensor
from heliabuild.synth.quant import ActivationQuant

OP = schema.BuiltinOperator
LOGISTIC_QUANT = ActivationQuant(1.0 / 256.0, -128)
TANH_QUANT = ActivationQuant(1.0 / 128.0, 0)
GATES = ("z", "r", "h")


class _Gru:
    def __init__(self, g: Int8Graph) -> None:
        self.g = g
        self.b = g.builder

    def derived(self, name: str, source: QTensor, shape: tuple[int, ...], codes: np.ndarray) -> QTensor:
        """A tensor quantized like `source` (a slice or a piece of it)."""
        index = self.b.activation(name, shape, np.int8, source.quant.parameters())
        return QTensor(index, shape, source.quant, codes)

    def fixed(self, name: str, shape: tuple[int, ...], quant: ActivationQuant, real: np.ndarray) -> QTensor:
        index = self.b.activation(name, shape, np.int8, quant.parameters())
        return QTensor(index, shape, quant, quant.quantize(real))

    def unpack(self, x: QTensor) -> list[QTensor]:
        _n, steps, features = x.shape
        outputs = [self.derived(f"gru/unstack:{t}", x, (1, features), x.codes[:, t, :]) for t in range(steps)]
        options = schema.UnpackOptionsT()
        options.num, options.axis = steps, 1
        self.b.operator(OP.UNPACK, [x.index], [o.index for o in outputs], options, version=2)
        return outputs

    def split(self, x: QTensor, step: int) -> list[QTensor]:
        width = x.shape[1] // 3
        axis = self.b.constant(f"gru/step{step}/split/split_dim", np.array(1, np.int32))
        outputs = [
            self.derived(f"gru/step{step}/split:{k}", x, (1, width), x.codes[:, k * width : (k + 1) * width])
            for k in range(3)
        ]
        options = schema.SplitOptionsT()
        options.numSplits = 3
        self.b.operator(OP.SPLIT, [axis, x.index], [o.index for o in outputs], options, version=2)
        return outputs

    def strided_slices(self, x: QTensor, step: int) -> list[QTensor]:
        width = x.shape[1] // 3
        outputs = []
        for k, gate in enumerate(GATES):
            name = f"gru/step{step}/strided_slice_{gate}"
            begin = self.b.constant(f"{name}/begin", np.array([0, k * width], np.int32))
            end = self.b.constant(f"{name}/end", np.array([1, (k + 1) * width], np.int32))
            strides = self.b.constant(f"{name}/strides", np.array([1, 1], np.int32))
            y = self.derived(name, x, (1, width), x.codes[:, k * width : (k + 1) * width])
            options = schema.StridedSliceOptionsT()
            options.beginMask = options.endMask = 1
            self.b.operator(OP.STRIDED_SLICE, [x.index, begin, end, strides], [y.index], options, version=2)
            outputs.append(y)
        return outputs

    def binary(self, code: int, name: str, a: QTensor, b: QTensor, real: np.ndarray) -> QTensor:
        y = self.g._calibrated(name, tuple(np.broadcast_shapes(a.shape, b.shape)), real)
        options = {OP.ADD: schema.AddOptionsT, OP.MUL: schema.MulOptionsT, OP.SUB: schema.SubOptionsT}[code]()
        self.b.operator(code, [a.index, b.index], [y.index], options, version=2)
        return y

    def unary(self, code: int, name: str, x: QTensor, quant: ActivationQuant, real: np.ndarray) -> QTensor:
        y = self.fixed(name, x.shape, quant, real)
        self.b.operator(code, [x.index], [y.index], version=2)
        return y


def gru_network(seed: int = 0, steps: int = 8, features: int = 8, units: int = 8) -> Model:
    """An unrolled int8 GRU (module docstring): 1 + 17 x steps operators, deterministic in its arguments."""
    if min(steps, features, units) < 1:
        raise ValueError(f"steps, features and units must be 1 or more, got {steps}, {features}, {units}")
    rng = np.random.default_rng(seed)
    g = Int8Graph(rng)
    gru = _Gru(g)
    x = g.input((1, steps, features))
    one = gru.b.constant("gru/sub/x", np.array([127], np.int8), ActivationQuant(1.0 / 127.0, 0).parameters())
    one_tensor = QTensor(one, (1,), ActivationQuant(1.0 / 127.0, 0), np.full((g.batch, 1), 127, np.int8))
    zero_quant = ActivationQuant(1.0 / 255.0, 0)
    h_index = gru.b.constant("gru/zeros", np.zeros((1, units), np.int8), zero_quant.parameters())
    h = QTensor(h_index, (1, units), zero_quant, np.zeros((g.batch, units), np.int8))
    for step, x_t in enumerate(gru.unpack(x)):
        gx = g.fully_connected(x_t, 3 * units)
        gh = g.fully_connected(h, 3 * units)
        xz, xr, xh = gru.split(gx, step)
        hz, hr, hh = gru.strided_slices(gh, step)
        prefix = f"gru/step{step}"
        az = gru.binary(OP.ADD, f"{prefix}/add_z", xz, hz, xz.real() + hz.real())
        z = gru.unary(OP.LOGISTIC, f"{prefix}/z", az, LOGISTIC_QUANT, 1 / (1 + np.exp(-az.real())))
        ar = gru.binary(OP.ADD, f"{prefix}/add_r", xr, hr, xr.real() + hr.real())
        r = gru.unary(OP.LOGISTIC, f"{prefix}/r", ar, LOGISTIC_QUANT, 1 / (1 + np.exp(-ar.real())))
        rh = gru.binary(OP.MUL, f"{prefix}/mul_r", r, hh, r.real() * hh.real())
        ac = gru.binary(OP.ADD, f"{prefix}/add_h", xh, rh, xh.real() + rh.real())
        c = gru.unary(OP.TANH, f"{prefix}/tanh", ac, TANH_QUANT, np.tanh(ac.real()))
        zh = gru.binary(OP.MUL, f"{prefix}/mul_zh", z, h, z.real() * h.real())
        keep = gru.binary(OP.SUB, f"{prefix}/sub", one_tensor, z, one_tensor.real() - z.real())
        kc = gru.binary(OP.MUL, f"{prefix}/mul_c", keep, c, keep.real() * c.real())
        h = gru.binary(OP.ADD, f"{prefix}/h", zh, kc, zh.real() + kc.real())
    return g.finish(
        h,
        description=f"heliabuild.synth gru: int8 unrolled GRU, {steps} steps, {features} features, {units} units, "
        f"seed {seed}",
        name=f"<synth gru seed={seed}>",
    )
