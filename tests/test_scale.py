"""Models with many operators: the long synthetic chain, and every stage on 20,000 operators.

Time is measured in bench/scale.py, never here; these tests check that the chain is what it says and that
fence, the runner's cut and aot-plan handle 20,000 operators (each stage is linear in them).
"""

from __future__ import annotations

import numpy as np
import pytest

from heliabuild.aot.planner import make_plan
from heliabuild.fence import rewrite_model_with_fences, verify_fenced_model
from heliabuild.model import serialize
from heliabuild.model.opcodes import operator_type
from heliabuild.runner.litert import run_reference
from heliabuild.runner.segments import cut_segments
from heliabuild.synth import long_chain_model


def test_long_chain_alternates_add_and_reshape_and_computes_saturating_sums() -> None:
    model = long_chain_model(seed=3, operators=7)
    ops = model.subgraphs[0].operators
    assert [operator_type(model.operator_codes[op.opcodeIndex]) for op in ops] == ["ADD", "RESHAPE"] * 3 + ["ADD"]
    tensors = model.subgraphs[0].tensors
    constants = [model.buffer_data(tensors[op.inputs[1]].buffer).view(np.int8) for op in ops[::2]]
    x = np.array([[[5, -7], [127, -128]]], dtype=np.int8)
    expected = x.reshape(-1).astype(np.int64)
    for constant in constants:  # one scale, zero point 0: each ADD is a saturating integer sum
        expected = np.clip(expected + constant, -128, 127)
    (output,) = run_reference(model, [x])[0]
    assert output.shape == (1, 4) and output.reshape(-1).tolist() == expected.tolist()


def test_long_chain_is_deterministic_and_refuses_no_operators() -> None:
    assert bytes(serialize(long_chain_model(operators=50))) == bytes(serialize(long_chain_model(operators=50)))
    assert bytes(serialize(long_chain_model(operators=50))) != bytes(serialize(long_chain_model(1, 50)))
    with pytest.raises(ValueError, match="operators >= 1"):
        long_chain_model(operators=0)


def test_20k_operators_go_through_fence_verify_runner_cut_and_aot_plan() -> None:
    cuts = list(range(99, 19_999, 100))  # 199 fences
    fenced = rewrite_model_with_fences(long_chain_model(operators=20_000), cuts)
    assert fenced.num_segments == 200
    assert verify_fenced_model(fenced.model, sidecar=fenced.boundaries) == []

    cut = cut_segments(fenced.model)
    assert cut.boundary_after_ops == tuple(cuts)
    assert all(len(segment.inputs) == len(segment.outputs) == 1 for segment in cut.segments)

    plan = make_plan(fenced.model, "apollo510_evb", None, module_prefix="m").plan
    assert len(plan["operators"]) == 20_000 + len(cuts)
    assert len(plan["tensors"]) == 10_000  # one 4-byte constant per ADD
