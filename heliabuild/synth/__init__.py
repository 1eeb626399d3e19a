"""Deterministic TFLite model factory: valid int8 and float models for examples, tests and benchmarks.

Models are built directly in the TFLite schema's object API and returned as
heliabuild.model.io.Model; write them with heliabuild.model.io.save_model.
The same arguments (including the seed) always give byte-identical models.

- synthesize(kind, seed) builds a named kind; KINDS describes every kind.
- chain_network / residual_network / int8_network: int8 networks that Vela
  compiles fully to the Ethos-U NPU and LiteRT runs.
- large_model: about 1,000 operators and 50 MB of weights, for benchmarks.
- long_chain_model: 100,000 tiny ADD and RESHAPE operators (by default), for scaling benchmarks.
- mobilenet_v3_block / transformer_block / unet_decoder: int8 architecture families with the converter's
  operator patterns (heliabuild.synth.families).
- single_op_model: one DIV, NEG, SQUARED_DIFFERENCE, comparison or SELECT_V2
  on float32/float16/int32 inputs with broadcasting shapes.
"""

from heliabuild.synth.builder import GraphBuilder
from heliabuild.synth.families import mobilenet_v3_block, transformer_block, unet_decoder
from heliabuild.synth.kinds import KINDS, SEEDED_KINDS, synthesize
from heliabuild.synth.large import large_model, large_model_operator_count, long_chain_model
from heliabuild.synth.layers import Int8Graph, QTensor
from heliabuild.synth.networks import chain_network, int8_network, residual_network
from heliabuild.synth.single_op import SINGLE_OPS, default_shapes, single_op_model

__all__ = [
    "KINDS",
    "SEEDED_KINDS",
    "SINGLE_OPS",
    "GraphBuilder",
    "Int8Graph",
    "QTensor",
    "chain_network",
    "default_shapes",
    "int8_network",
    "large_model",
    "large_model_operator_count",
    "long_chain_model",
    "mobilenet_v3_block",
    "residual_network",
    "single_op_model",
    "synthesize",
    "transformer_block",
    "unet_decoder",
]
