"""heliabuild.synth.families: each architecture family carries the converter's operator pattern, is
deterministic, and runs in LiteRT's reference kernels with outputs that depend on the input."""

from __future__ import annotations

import numpy as np
import pytest
from ai_edge_litert.interpreter import Interpreter, OpResolverType

from heliabuild.aot.facts import model_facts
from heliabuild.model import serialize
from heliabuild.synth import synthesize

PATTERNS = {
    "mobilenet_v3_block": {
        "HARD_SWISH": 4,
        "LOGISTIC": 1,
        "MUL": 1,
        "DEPTHWISE_CONV_2D": 1,
        "ADD": 1,
        "MEAN": 2,
        "AVERAGE_POOL_2D": 0,
    },
    "transformer": {
        "SQUARED_DIFFERENCE": 1,
        "RSQRT": 1,
        "BATCH_MATMUL": 2,
        "SOFTMAX": 1,
        "MEAN": 2,
        "AVERAGE_POOL_2D": 0,
    },
    "unet_decoder": {"TRANSPOSE_CONV": 1, "CONCATENATION": 1, "RESIZE_BILINEAR": 1, "RESIZE_NEAREST_NEIGHBOR": 1},
}


def _run(model_bytes: bytes, seed: int) -> np.ndarray:
    interpreter = Interpreter(model_content=model_bytes, experimental_op_resolver_type=OpResolverType.BUILTIN_REF)
    interpreter.allocate_tensors()
    detail = interpreter.get_input_details()[0]
    interpreter.set_tensor(detail["index"], np.random.default_rng(seed).integers(-128, 128, detail["shape"], np.int8))
    interpreter.invoke()
    return interpreter.get_tensor(interpreter.get_output_details()[0]["index"]).copy()


@pytest.mark.parametrize("family", sorted(PATTERNS))
def test_family_has_the_converter_pattern_and_runs_in_litert(family: str) -> None:
    model = synthesize(family, seed=4)
    types = [op.op_type for op in model_facts(model)]
    for op_type, count in PATTERNS[family].items():
        assert types.count(op_type) == count, (op_type, types)
    data = bytes(serialize(model))
    assert data == bytes(serialize(synthesize(family, seed=4)))
    assert data != bytes(serialize(synthesize(family, seed=5)))
    first, second = _run(data, 0), _run(data, 1)
    assert first.dtype == np.int8 and first.tobytes() != second.tobytes()
    assert len(np.unique(first)) > 2  # not saturated to a constant
