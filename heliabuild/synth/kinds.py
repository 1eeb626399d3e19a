"""The named kinds of synthesized model, as the `heliabuild synth KIND` command offers them.

KINDS maps each kind name to a one-line description; synthesize(kind, seed)
builds it. Kinds in SEEDED_KINDS draw weights (and some shapes) from the
seed; the single-operator kinds have no weights and ignore it.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

from heliabuild.errors import HeliaError
from heliabuild.model.io import Model
from heliabuild.synth.fallback import cpu_fallback_network
from heliabuild.synth.families import mobilenet_v3_block, transformer_block, unet_decoder
from heliabuild.synth.large import large_model
from heliabuild.synth.lstm import lstm_network
from heliabuild.synth.mobilenet import mobilenet_v2_network
from heliabuild.synth.networks import chain_network, int8_network, residual_network
from heliabuild.synth.recurrent import gru_network
from heliabuild.synth.single_op import SINGLE_OPS, default_shapes, single_op_model
from heliabuild.synth.stateful import counter_model
from heliabuild.synth.svdf import svdf_network

_DTYPE_SUFFIX = {"float32": "f32", "float16": "f16", "int32": "i32"}
_SINGLE_OP_KINDS: tuple[tuple[str, str], ...] = (
    ("div", "float32"),
    ("div", "float16"),
    ("neg", "float32"),
    ("neg", "float16"),
    ("squared_difference", "float32"),
    ("squared_difference", "float16"),
    ("equal", "int32"),
    ("not_equal", "int32"),
    ("greater", "int32"),
    ("greater_equal", "int32"),
    ("less", "int32"),
    ("less_equal", "int32"),
    ("select_v2", "int32"),
)


def _single_op_builder(op: str, dtype: str) -> Callable[[int], Model]:
    def build(seed: int) -> Model:
        del seed  # no weights: the model does not depend on the seed
        return single_op_model(op, dtype, default_shapes(op))

    return build


def _single_op_description(op: str, dtype: str) -> str:
    shapes = default_shapes(op)
    shape_text = " and ".join("x".join(map(str, s)) for s in shapes)
    inputs = ", ".join(SINGLE_OPS[op].inputs)
    condition = " (condition bool)" if op == "select_v2" else ""
    broadcast = " (broadcasting)" if len(set(shapes)) > 1 else ""
    plural = "s" if len(shapes) > 1 else ""
    return f"single {op.upper()} on {dtype} input{plural} {inputs}{condition}, shape{plural} {shape_text}{broadcast}"


_BUILDERS: dict[str, tuple[str, Callable[[int], Model]]] = {
    "chain": (
        "int8 DS-CNN keyword-spotting chain [1,49,10,1] -> CONV/DEPTHWISE x5 -> AVERAGE_POOL -> "
        "RESHAPE -> FULLY_CONNECTED -> SOFTMAX (9 ops, Vela: all on the NPU)",
        chain_network,
    ),
    "kws": ("alias of chain", chain_network),
    "residual": (
        "int8 ResNet-8 [1,32,32,3] with 3 residual blocks (CONV_2D, ADD, 1x1 skip convs) -> "
        "AVERAGE_POOL -> RESHAPE -> FULLY_CONNECTED -> SOFTMAX (16 ops, Vela: all on the NPU)",
        residual_network,
    ),
    "random": (
        "a random valid int8 network drawn from the seed (int8_network): varying depth and mix of "
        "CONV_2D, DEPTHWISE_CONV_2D, ADD, AVERAGE_POOL_2D, RESHAPE, FULLY_CONNECTED, SOFTMAX",
        partial(int8_network, depth=None, residual=None),
    ),
    "mobilenet_v2": (
        "int8 MobileNetV2 [1,32,32,3]: inverted residual blocks (1x1 CONV_2D RELU6, PAD + stride-2 DEPTHWISE, "
        "residual ADD) -> MEAN (global average pooling) -> FULLY_CONNECTED -> SOFTMAX (23 ops)",
        mobilenet_v2_network,
    ),
    "gru": (
        "int8 unrolled GRU [1,8,8] -> UNPACK, per step FULLY_CONNECTED x2, SPLIT, STRIDED_SLICE x3, LOGISTIC x2, "
        "TANH, SUB, MUL, ADD (137 ops, as the converter emits keras GRU(unroll=True))",
        gru_network,
    ),
    "lstm": (
        "int8 LSTM sequence model [1,8,8] -> UNIDIRECTIONAL_SEQUENCE_LSTM (integer, 16 units, variable output and "
        "cell state carried across invokes) -> STRIDED_SLICE (last step) -> FULLY_CONNECTED -> SOFTMAX (4 ops)",
        lstm_network,
    ),
    "svdf": (
        "int8 streaming keyword model [1,16] (one frame an invoke) -> SVDF (integer, 16 filters, memory 8, "
        "variable activation state carried across invokes) -> FULLY_CONNECTED -> SOFTMAX (3 ops)",
        svdf_network,
    ),
    "counter": (
        "float32 stateful model: a CALL_ONCE init subgraph sets a resource variable to 0, each invoke adds 1 "
        "and returns x + counter + bias (for the acquisition lifecycle: carry keeps the state)",
        counter_model,
    ),
    "counter_no_init": (
        "float32 model with a resource variable reset to 0 on every invoke and no CALL_ONCE",
        partial(counter_model, call_once=False),
    ),
    "counter_int8": (
        "the counter model in int8 (the module generator's form): CALL_ONCE sets the resource variable to 0, each "
        "invoke adds 1 and returns x + counter + bias",
        partial(counter_model, int8=True),
    ),
    "counter_int8_no_init": (
        "the int8 counter model without CALL_ONCE: the resource variable is assigned 0 before every read",
        partial(counter_model, call_once=False, int8=True),
    ),
    "large": (
        "benchmark model: int8 residual chain of 998 ops (CONV_2D, ADD) with about 50 MB of weights; "
        "loads in LiteRT, not meant for Vela",
        large_model,
    ),
    "mobilenet_v3_block": (
        "int8 MobileNetV3-small block [1,16,16,8]: CONV_2D, HARD_SWISH, DEPTHWISE_CONV_2D, squeeze-excite "
        "(MEAN, LOGISTIC, MUL), residual ADD, MEAN-pooled FULLY_CONNECTED head, SOFTMAX (18 ops)",
        mobilenet_v3_block,
    ),
    "transformer": (
        "int8 transformer encoder block [1,8,16]: layer norm (MEAN, SQUARED_DIFFERENCE, RSQRT, "
        "MUL), self-attention (FULLY_CONNECTED, BATCH_MATMUL, SOFTMAX), residual ADD (17 ops)",
        transformer_block,
    ),
    "cpu_fallback": (
        "int8 [1,16,16,4]: SPACE_TO_DEPTH of the input (output 0) -> CONV_2D (output 1); CONV_2D -> SPACE_TO_DEPTH "
        "-> CONV_2D (output 2); Vela 5.2 leaves both SPACE_TO_DEPTH on the CPU, the second between two command streams",
        cpu_fallback_network,
    ),
    "unet_decoder": (
        "int8 U-Net decoder [1,16,16,4] -> [1,32,32,2]: CONV_2D encoder, TRANSPOSE_CONV, skip CONCATENATION, "
        "RESIZE_BILINEAR, RESIZE_NEAREST_NEIGHBOR (12 ops)",
        unet_decoder,
    ),
}
for _op, _dtype in _SINGLE_OP_KINDS:
    _BUILDERS[f"{_op}_{_DTYPE_SUFFIX[_dtype]}"] = (
        _single_op_description(_op, _dtype),
        _single_op_builder(_op, _dtype),
    )

KINDS: dict[str, str] = {name: description for name, (description, _build) in _BUILDERS.items()}
SEEDED_KINDS: frozenset[str] = frozenset(
    {"chain", "kws", "residual", "random", "counter", "counter_no_init", "counter_int8", "counter_int8_no_init"}
    | {"large"}
    | {"mobilenet_v3_block", "transformer", "unet_decoder"}
    | {"gru", "mobilenet_v2", "lstm", "svdf", "cpu_fallback"}
)


def synthesize(kind: str, seed: int = 0) -> Model:
    """Build the model of `kind` (a key of KINDS) from `seed` (an integer >= 0).

    The same kind and seed always give a byte-identical model. Raises
    HeliaError for an unknown kind (naming the known ones) or a bad seed.
    """
    if kind not in _BUILDERS:
        raise HeliaError(
            f"synth: unknown model kind {kind!r}; known kinds: {', '.join(KINDS)}",
            hint="`heliabuild synth --help` describes each kind",
        )
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise HeliaError(f"synth {kind}: seed {seed!r} is not valid; expected an integer >= 0")
    model = _BUILDERS[kind][1](seed)
    model.name = f"<synth {kind} seed={seed}>"
    return model
