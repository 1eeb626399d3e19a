"""Large int8 models for benchmarks: about 1,000 operators and 50 MB of weights, or a long chain of tiny operators.

`large_model` is a long residual chain on a small [1,4,4,C] feature map, so
the weights dominate its size while calibration and generation stay fast
(numpy throughout, one vectorised draw per layer). `long_chain_model` is the
opposite: 100,000 operators (by default) on 4-byte tensors, so the operator
count dominates. Both are valid models the LiteRT interpreter loads and
allocates; they are not meant for Vela.
"""

from __future__ import annotations

import numpy as np
from ai_edge_litert import schema_py_generated as schema

from heliabuild.model.io import Model
from heliabuild.synth.builder import GraphBuilder
from heliabuild.synth.layers import OP, VERSIONS, Int8Graph
from heliabuild.synth.quant import ActivationQuant

LARGE_BLOCKS = 331
LARGE_CHANNELS = 92
LARGE_INPUT_SHAPE = (1, 4, 4, 8)
LARGE_CLASSES = 10
# Weight gain of the second convolution of each block, so 331 residual
# additions do not grow the activations without bound.
RESIDUAL_GAIN = 0.25


def large_model_operator_count(blocks: int = LARGE_BLOCKS) -> int:
    """The operators large_model(blocks=...) has: stem, 3 per block, 4 in the head."""
    return 1 + 3 * blocks + 4


def large_model(seed: int = 0, blocks: int = LARGE_BLOCKS, channels: int = LARGE_CHANNELS) -> Model:
    """A benchmark model, deterministic in its arguments.

    input int8 [1,4,4,8] -> CONV_2D 3x3 -> `blocks` x (CONV_2D 3x3 + RELU ->
    CONV_2D 3x3 -> ADD + RELU with the block input) -> AVERAGE_POOL_2D ->
    RESHAPE -> FULLY_CONNECTED -> SOFTMAX. With the defaults: 998 operators
    and about 50.4 MB of int8 weights (18 * channels**2 bytes per block).
    ValueError for blocks < 1 or channels < 1.
    """
    if blocks < 1 or channels < 1:
        raise ValueError(f"large_model needs blocks >= 1 and channels >= 1, got {blocks} and {channels}")
    rng = np.random.default_rng(seed)
    g = Int8Graph(rng, batch=2)
    x = g.input(LARGE_INPUT_SHAPE)
    x = g.conv2d(x, channels)
    for _ in range(blocks):
        y = g.conv2d(x, channels)
        y = g.conv2d(y, channels, relu=False, gain=RESIDUAL_GAIN)
        x = g.add(x, y, relu=True)
    x = g.global_average_pool(x)
    x = g.flatten(x)
    x = g.fully_connected(x, LARGE_CLASSES)
    x = g.softmax(x)
    return g.finish(
        x,
        description=(
            f"heliabuild.synth large: int8 residual chain, {blocks} blocks of {channels} channels, seed {seed}"
        ),
        name=f"<synth large seed={seed}>",
    )


CHAIN_OPERATORS = 100_000
CHAIN_SHAPES = ((1, 2, 2), (1, 4))
# One scale for every activation of the chain: ADD of two operands of this
# quantization saturates instead of growing, so the chain stays in range.
_CHAIN_QUANT = ActivationQuant(1.0 / 16.0, 0)


def long_chain_model(seed: int = 0, operators: int = CHAIN_OPERATORS) -> Model:
    """A benchmark model of `operators` tiny operators, deterministic in its arguments.

    input int8 [1,2,2] -> alternately ADD (with a 4-byte constant of its own,
    drawn from the seed) and RESHAPE (between [1,2,2] and [1,4], the shape in
    the options) -> output. Every activation holds 4 bytes and shares one
    quantization, so the model is a few hundred bytes per operator: it
    measures how stages scale with the operator count, not with the data.
    ValueError for operators < 1.
    """
    if operators < 1:
        raise ValueError(f"long_chain_model needs operators >= 1, got {operators}")
    rng = np.random.default_rng(seed)
    constants = rng.integers(-2, 3, size=(operators, 4), dtype=np.int8)
    builder = GraphBuilder()
    shape = CHAIN_SHAPES[0]
    x = first = builder.activation("input", shape, np.int8, _CHAIN_QUANT.parameters())
    for position in range(operators):
        if position % 2 == 0:
            y = builder.constant(f"add_{position}/y", constants[position].reshape(shape), _CHAIN_QUANT.parameters())
            x_next = builder.activation(f"add_{position}/add", shape, np.int8, _CHAIN_QUANT.parameters())
            builder.operator(OP.ADD, [x, y], [x_next], schema.AddOptionsT(), VERSIONS[OP.ADD])
        else:
            shape = CHAIN_SHAPES[1] if shape == CHAIN_SHAPES[0] else CHAIN_SHAPES[0]
            options = schema.ReshapeOptionsT()
            options.newShape = list(shape)
            x_next = builder.activation(f"reshape_{position}/Reshape", shape, np.int8, _CHAIN_QUANT.parameters())
            builder.operator(OP.RESHAPE, [x], [x_next], options, VERSIONS[OP.RESHAPE])
        x = x_next
    return builder.finish(
        [first],
        [x],
        description=f"heliabuild.synth long chain: {operators} tiny ADD and RESHAPE operators, seed {seed}",
        name=f"<synth long_chain operators={operators} seed={seed}>",
        signature_names=(["input"], ["output_0"]),
    )
