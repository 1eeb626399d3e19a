"""An int8 network with operators Vela leaves on the CPU, one of them between two NPU command streams, for the AOT
firmware's CPU fallback (docs/firmware.md, "Corstone-300 and the Ethos-U driver").

`cpu_fallback_network(seed)`: input int8 [1, 16, 16, 4] -> SPACE_TO_DEPTH block 2 (output 0, [1, 8, 8, 16]) ->
CONV_2D 3x3 RELU (output 1); the input -> CONV_2D 3x3 RELU -> SPACE_TO_DEPTH -> CONV_2D 3x3 RELU (output 2).
Vela 5.2 has no NPU form of SPACE_TO_DEPTH: its model runs the first SPACE_TO_DEPTH on the CPU, a command
stream (the middle CONV_2D), the second SPACE_TO_DEPTH on the CPU, then a command stream of the other two
CONV_2D. The first CPU operator reads the graph input and its result is a graph output, so its bytes can be
checked without an NPU computing the rest.
"""

from __future__ import annotations

import numpy as np
from ai_edge_litert import schema_py_generated as schema

from heliabuild.model.io import Model
from heliabuild.synth.layers import OP, Int8Graph, QTensor

FALLBACK_INPUT_SHAPE = (1, 16, 16, 4)
BLOCK = 2


def _space_to_depth(g: Int8Graph, x: QTensor) -> QTensor:
    """SPACE_TO_DEPTH by BLOCK, the quantization kept (LiteRT requires it)."""
    n, h, w, c = x.shape
    layer = g.layer_name("space_to_depth")
    shape = (n, h // BLOCK, w // BLOCK, c * BLOCK * BLOCK)
    batch = x.codes.shape[0]
    codes = (
        x.codes.reshape(batch, h // BLOCK, BLOCK, w // BLOCK, BLOCK, c)
        .transpose(0, 1, 3, 2, 4, 5)
        .reshape(batch, *shape[1:])
    )
    index = g.builder.activation(f"{layer}/SpaceToDepth", shape, np.int8, x.quant.parameters())
    options = schema.SpaceToDepthOptionsT()
    options.blockSize = BLOCK
    g.builder.operator(OP.SPACE_TO_DEPTH, [x.index], [index], options, version=2)
    return QTensor(index, shape, x.quant, codes)


def cpu_fallback_network(seed: int = 0) -> Model:
    """The network of the module docstring (6 operators, 3 outputs), deterministic in `seed`."""
    g = Int8Graph(np.random.default_rng(seed))
    x = g.input(FALLBACK_INPUT_SHAPE)
    moved = _space_to_depth(g, x)
    side = g.conv2d(moved, 8)
    first = g.conv2d(x, 4)
    between = _space_to_depth(g, first)
    last = g.conv2d(between, 8)
    return g.builder.finish(
        [x.index],
        [moved.index, side.index, last.index],
        description=f"heliabuild.synth cpu_fallback: SPACE_TO_DEPTH on the CPU under Vela, seed {seed}",
        name=f"<synth cpu_fallback seed={seed}>",
        signature_names=(["input"], ["output_0", "output_1", "output_2"]),
    )
