"""int8 SUB, MAXIMUM, MINIMUM and PRELU with broadcasting, and LEAKY_RELU: the C kernels byte for byte against
LiteRT's reference kernels over shapes, zero points, scales, alphas and fused activations, in place, and their
refusals."""

from __future__ import annotations

import ctypes
from pathlib import Path

import numpy as np
import pytest
from ai_edge_litert import schema_py_generated as schema
from helpers.int8_models import broadcast_model, run_reference
from hypothesis import given, settings
from hypothesis import strategies as st
from test_kernels_int8_elementwise import ACTIVATION, broadcast_shapes, quants

from heliabuild.kernels.int8 import _I8, BinaryArgs, Int8Kernels, Quant, _dims, _pointer, add_params
from heliabuild.kernels.native import Status, load_host_library


@pytest.fixture(scope="module")
def library(host_kernel_library: Path) -> ctypes.CDLL:
    return load_host_library(host_kernel_library)


@pytest.fixture(scope="module")
def kernels(library: ctypes.CDLL) -> Int8Kernels:
    return Int8Kernels(library)


@settings(max_examples=250, deadline=None)
@given(
    shapes=broadcast_shapes(),
    quant1=quants(),
    quant2=quants(),
    output_quant=quants(1e-3, 1.0),
    activation=ACTIVATION,
    seed=st.integers(0, 2**32 - 1),
)
def test_sub_is_bit_exact(
    kernels: Int8Kernels,
    shapes: tuple[tuple[int, ...], tuple[int, ...]],
    quant1: Quant,
    quant2: Quant,
    output_quant: Quant,
    activation: str,
    seed: int,
) -> None:
    rng = np.random.default_rng(seed)
    a = rng.integers(-128, 128, size=shapes[0], dtype=np.int8)
    b = rng.integers(-128, 128, size=shapes[1], dtype=np.int8)
    params = add_params(quant1, quant2, output_quant, activation)
    model = broadcast_model("sub", a.shape, b.shape, quant1, quant2, output_quant, activation)
    assert kernels.binary("sub", params, a, b).tobytes() == run_reference(model, [a, b]).tobytes()


@pytest.mark.parametrize("kind", ["maximum", "minimum"])
@settings(max_examples=150, deadline=None)
@given(shapes=broadcast_shapes(), quant=quants(), seed=st.integers(0, 2**32 - 1))
def test_maximum_and_minimum_are_bit_exact(
    kernels: Int8Kernels, kind: str, shapes: tuple[tuple[int, ...], tuple[int, ...]], quant: Quant, seed: int
) -> None:
    rng = np.random.default_rng(seed)
    a = rng.integers(-128, 128, size=shapes[0], dtype=np.int8)
    b = rng.integers(-128, 128, size=shapes[1], dtype=np.int8)
    params = add_params(quant, quant, quant)
    expected = run_reference(broadcast_model(kind, a.shape, b.shape, quant, quant, quant), [a, b])
    assert kernels.binary(kind, params, a, b).tobytes() == expected.tobytes()


def test_sub_of_a_constant_one_as_a_gru_computes_it(kernels: Int8Kernels) -> None:
    """SUB(1, z) of the unrolled GRU: a [1] constant at scale 1/127 minus every LOGISTIC output code."""
    one, z, out = Quant(1.0 / 127.0, 0), Quant(1.0 / 256.0, -128), Quant(0.0039, -128)
    a = np.array([127], np.int8)
    b = np.arange(-128, 128, dtype=np.int8).reshape(1, 256)
    params = add_params(one, z, out)
    expected = run_reference(broadcast_model("sub", a.shape, b.shape, one, z, out), [a, b])
    assert kernels.binary("sub", params, a, b).tobytes() == expected.tobytes()


@pytest.mark.parametrize("kind", ["sub", "maximum", "minimum"])
def test_in_place_and_refusals_write_nothing(kernels: Int8Kernels, kind: str) -> None:
    rng = np.random.default_rng(2)
    a = rng.integers(-128, 128, size=(2, 8), dtype=np.int8)
    b = rng.integers(-128, 128, size=(1, 8), dtype=np.int8)
    params = add_params(Quant(0.1, 3), Quant(0.05, -7), Quant(0.2, 1), "RELU")
    expected = kernels.binary(kind, params, a, b)
    function = getattr(kernels.library, f"helia_{kind}_s8")

    def args(output: object, first: np.ndarray = a, **changes: object) -> BinaryArgs:
        fields: dict[str, object] = {
            "input1": _pointer(first, _I8), "input2": _pointer(b, _I8), "output": output, "rank": 2,
            "input1_dims": _dims((2, 8)), "input2_dims": _dims((1, 8)), "output_dims": _dims((2, 8)),
            "input1_zero_point": params.input1_zero_point, "input2_zero_point": params.input2_zero_point,
            "output_zero_point": params.output_zero_point, "left_shift": params.left_shift,
            "input1_multiplier": params.input1_multiplier, "input1_shift": params.input1_shift,
            "input2_multiplier": params.input2_multiplier, "input2_shift": params.input2_shift,
            "output_multiplier": params.output_multiplier, "output_shift": params.output_shift,
            "act_min": params.act_min, "act_max": params.act_max, **changes,
        }  # fmt: skip
        return BinaryArgs(**fields)

    in_place = a.copy()
    assert function(ctypes.byref(args(_pointer(in_place, _I8), in_place))) == Status.OK
    assert in_place.tobytes() == expected.tobytes()
    buffer = np.zeros(64, np.int8)
    buffer[:16] = a.reshape(-1)
    shifted = ctypes.cast(buffer.ctypes.data + 1, _I8)
    refusals = [
        (args(shifted, buffer), Status.PARTIAL_OVERLAP),
        (args(shifted, rank=7), Status.BAD_SHAPE),
        (args(shifted, output_dims=_dims((2, 9))), Status.SHAPE_MISMATCH),
        (args(ctypes.cast(None, _I8)), Status.NULL_POINTER),
    ]
    if kind == "sub":
        refusals += [(args(shifted, output_shift=1), Status.BAD_PARAMETER), (args(shifted, act_min=9, act_max=8),
                     Status.BAD_PARAMETER)]  # fmt: skip
    for bad, status in refusals:
        before = buffer.copy()
        assert function(ctypes.byref(bad)) == status
        assert buffer.tobytes() == before.tobytes()


@settings(max_examples=200, deadline=None)
@given(
    shape=st.lists(st.integers(1, 5), min_size=1, max_size=4).map(tuple),
    input_quant=quants(),
    output_quant=quants(1e-3, 1.0),
    alpha=st.floats(0.0, 3.0) | st.sampled_from([0.0, 0.01, 0.1, 0.2, 0.3, 1.0]),
    seed=st.integers(0, 2**32 - 1),
)
def test_leaky_relu_is_bit_exact(
    library: ctypes.CDLL, shape: tuple[int, ...], input_quant: Quant, output_quant: Quant, alpha: float, seed: int
) -> None:
    from helpers.data_models import OP, data_model, options_of

    from heliabuild.kernels.activations import ActivationKernels, leaky_relu_params

    x = np.random.default_rng(seed).integers(-128, 128, size=shape, dtype=np.int8)
    options = options_of(schema.LeakyReluOptionsT, alpha=alpha)
    model = data_model(OP.LEAKY_RELU, [shape], [shape], input_quant, options=options, version=2)
    model.subgraphs[0].tensors[model.subgraphs[0].outputs[0]].quantization.scale = [output_quant.scale]
    model.subgraphs[0].tensors[model.subgraphs[0].outputs[0]].quantization.zeroPoint = [output_quant.zero_point]
    found = ActivationKernels(library).leaky_relu(leaky_relu_params(input_quant, output_quant, alpha), x)
    assert found.tobytes() == run_reference(model, [x]).tobytes()


@settings(max_examples=200, deadline=None)
@given(
    shapes=broadcast_shapes(),
    input_quant=quants(),
    alpha_quant=quants(1e-3, 0.05),
    output_quant=quants(1e-3, 1.0),
    seed=st.integers(0, 2**32 - 1),
)
def test_prelu_is_bit_exact(
    kernels: Int8Kernels,
    shapes: tuple[tuple[int, ...], tuple[int, ...]],
    input_quant: Quant,
    alpha_quant: Quant,
    output_quant: Quant,
    seed: int,
) -> None:
    """PRELU with a constant alpha that broadcasts against the input (the output has the input's shape)."""
    from heliabuild.kernels.activations import prelu_params
    from heliabuild.synth.builder import GraphBuilder
    from heliabuild.synth.quant import quantization_parameters

    shape = np.broadcast_shapes(*shapes)
    alpha_shape = shapes[1]
    rng = np.random.default_rng(seed)
    x = rng.integers(-128, 128, size=shape, dtype=np.int8)
    alpha = rng.integers(-128, 128, size=alpha_shape, dtype=np.int8)
    builder = GraphBuilder()

    def q(quant: Quant) -> object:
        return quantization_parameters([quant.scale], [quant.zero_point])

    xi = builder.activation("x", shape, "int8", q(input_quant))
    ai = builder.constant("alpha", alpha, q(alpha_quant))
    yi = builder.activation("y", shape, "int8", q(output_quant))
    builder.operator(schema.BuiltinOperator.PRELU, [xi, ai], [yi], version=1)
    model = builder.finish([xi], [yi], description="prelu", name="prelu", dynamic_batch=False)
    found = kernels.binary("prelu", prelu_params(input_quant, alpha_quant, output_quant), x, alpha)
    assert found.tobytes() == run_reference(model, [x]).tobytes()
