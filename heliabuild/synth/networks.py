"""Small int8 networks that Vela maps entirely to the Ethos-U NPU.

Three generators, each a pure function of its seed (weights, and a few shape
choices such as channel counts, come from numpy.random.default_rng(seed)):

- chain_network: a keyword-spotting DS-CNN-like chain on a [1,49,10,1] input;
- residual_network: a ResNet-8-like network on a [1,32,32,3] input with three
  residual blocks (the last two with a strided 1x1 convolution on the skip path);
- int8_network: random valid networks of varying depth and operator mix, for
  property tests.

Every operator is one Vela 5.2 supports on Ethos-U55 and Ethos-U85 with the
parameters used here (strides 1-2, kernels up to 10x4, SAME/VALID padding,
int8 throughout, softmax last), and every model runs in the LiteRT interpreter.
"""

from __future__ import annotations

import numpy as np

from heliabuild.model.io import Model
from heliabuild.synth.layers import Int8Graph, QTensor

KWS_INPUT_SHAPE = (1, 49, 10, 1)
KWS_CLASSES = 12
RESNET_INPUT_SHAPE = (1, 32, 32, 3)
RESNET_CLASSES = 10


def _choice(rng: np.random.Generator, options: tuple[int, ...]) -> int:
    return int(options[int(rng.integers(len(options)))])


def chain_network(seed: int = 0) -> Model:
    """A DS-CNN-like keyword-spotting chain (9 operators), deterministic in `seed`.

    input int8 [1,49,10,1] -> CONV_2D 10x4/2 -> DEPTHWISE_CONV_2D -> CONV_2D 1x1
    -> DEPTHWISE_CONV_2D -> CONV_2D 1x1 -> AVERAGE_POOL_2D -> RESHAPE
    -> FULLY_CONNECTED -> SOFTMAX [1,12]. The channel count (24, 32, 48 or 64)
    depends on the seed.
    """
    rng = np.random.default_rng(seed)
    channels = _choice(rng, (24, 32, 48, 64))
    g = Int8Graph(rng)
    x = g.input(KWS_INPUT_SHAPE)
    x = g.conv2d(x, channels, kernel=(10, 4), stride=2)
    for _ in range(2):
        x = g.depthwise_conv2d(x)
        x = g.conv2d(x, channels, kernel=(1, 1))
    x = g.global_average_pool(x)
    x = g.flatten(x)
    x = g.fully_connected(x, KWS_CLASSES)
    x = g.softmax(x)
    return g.finish(
        x,
        description=f"heliabuild.synth chain: int8 DS-CNN keyword spotting, {channels} channels, seed {seed}",
        name=f"<synth chain seed={seed}>",
    )


def _residual_block(g: Int8Graph, x: QTensor, filters: int, stride: int, second: str = "conv") -> QTensor:
    """Two convolutions whose result is added to the block input (through a 1x1
    convolution when the shape changes); the skip tensor stays live across both."""
    y = g.conv2d(x, filters, stride=stride)
    y = g.depthwise_conv2d(y, relu=False) if second == "depthwise" else g.conv2d(y, filters, relu=False)
    skip = x
    if stride != 1 or x.shape[3] != filters:
        skip = g.conv2d(x, filters, kernel=(1, 1), stride=stride, relu=False)
    return g.add(skip, y, relu=True)


def residual_network(seed: int = 0) -> Model:
    """A ResNet-8-like CIFAR network (16 operators), deterministic in `seed`.

    input int8 [1,32,32,3] -> CONV_2D -> 3 residual blocks (the 2nd and 3rd
    stride 2 with a 1x1 CONV_2D on the skip path) -> AVERAGE_POOL_2D ->
    RESHAPE -> FULLY_CONNECTED -> SOFTMAX [1,10]. The base width (8 or 16
    channels, doubled per strided block) depends on the seed.
    """
    rng = np.random.default_rng(seed)
    base = _choice(rng, (8, 16))
    g = Int8Graph(rng)
    x = g.input(RESNET_INPUT_SHAPE)
    x = g.conv2d(x, base)
    x = _residual_block(g, x, base, stride=1)
    x = _residual_block(g, x, 2 * base, stride=2)
    x = _residual_block(g, x, 4 * base, stride=2)
    x = g.global_average_pool(x)
    x = g.flatten(x)
    x = g.fully_connected(x, RESNET_CLASSES)
    x = g.softmax(x)
    return g.finish(
        x,
        description=f"heliabuild.synth residual: int8 ResNet-8, base width {base}, seed {seed}",
        name=f"<synth residual seed={seed}>",
    )


def int8_network(seed: int, depth: int | None = None, residual: bool | None = None) -> Model:
    """A random valid int8 network, deterministic in (seed, depth, residual).

    A CONV_2D stem is followed by `depth` body units (1..6 drawn from the seed
    when None), each a CONV_2D, a DEPTHWISE_CONV_2D or, when `residual` (drawn
    when None), a residual block ending in ADD; at least one unit is a residual
    block when `residual` is true. The head is one of AVERAGE_POOL_2D/RESHAPE/
    FULLY_CONNECTED/SOFTMAX, RESHAPE/FULLY_CONNECTED(/FULLY_CONNECTED)/SOFTMAX,
    or AVERAGE_POOL_2D/RESHAPE/FULLY_CONNECTED. Every such network compiles
    fully to the NPU and runs in LiteRT. ValueError for depth < 0.
    """
    if depth is not None and depth < 0:
        raise ValueError(f"depth must be 0 or more, got {depth}")
    rng = np.random.default_rng(seed)
    if depth is None:
        depth = int(rng.integers(1, 7))
    if residual is None:
        residual = bool(rng.integers(2))
    size = _choice(rng, (8, 12, 16))
    g = Int8Graph(rng)
    x = g.input((1, size, _choice(rng, (8, 12, 16)), _choice(rng, (1, 3, 4))))
    x = g.conv2d(x, _choice(rng, (4, 8, 16)), kernel=(_choice(rng, (1, 3)), 3))

    kinds = ["conv", "depthwise", "residual"] if residual else ["conv", "depthwise"]
    units = [kinds[int(rng.integers(len(kinds)))] for _ in range(depth)]
    if residual and depth > 0 and "residual" not in units:
        units[int(rng.integers(depth))] = "residual"
    for unit in units:
        stride = 2 if min(x.shape[1:3]) >= 8 and rng.random() < 0.3 else 1
        if unit == "conv":
            kernel = _choice(rng, (1, 3))
            x = g.conv2d(x, _choice(rng, (4, 8, 16, 24)), kernel=(kernel, kernel), stride=stride)
        elif unit == "depthwise":
            x = g.depthwise_conv2d(x, stride=stride)
        else:
            second = "depthwise" if rng.random() < 0.5 else "conv"
            x = _residual_block(g, x, _choice(rng, (4, 8, 16)), stride, second)

    head = _choice(rng, (0, 1, 2))
    if head == 1 and int(np.prod(x.shape)) > 1024:
        head = 0
    if head != 1:
        x = g.global_average_pool(x)
    x = g.flatten(x)
    if head == 1 and rng.random() < 0.5:
        x = g.fully_connected(x, _choice(rng, (8, 16, 32)), relu=True)
    x = g.fully_connected(x, _choice(rng, (4, 10, 12)))
    if head != 2:
        x = g.softmax(x)
    return g.finish(
        x,
        description=f"heliabuild.synth int8_network: seed {seed}, depth {depth}, residual {residual}",
        name=f"<synth int8_network seed={seed}>",
    )
