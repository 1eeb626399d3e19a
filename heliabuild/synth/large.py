"""A large int8 model for benchmarks: about 1,000 operators and 50 MB of weights.

The model is a long residual chain on a small [1,4,4,C] feature map, so the
weights dominate its size while calibration and generation stay fast (numpy
throughout, one vectorised draw per layer). It is a valid model the LiteRT
interpreter loads and allocates; it is not meant for Vela.
"""

from __future__ import annotations

import numpy as np

from heliabuild.model.io import Model
from heliabuild.synth.layers import Int8Graph

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
