"""The data-movement and simple element-wise int8 operators (issue 22, part A) end to end on QEMU mps3-an547:
a model chaining standalone RELU6, int8 -> int8 QUANTIZE, RELU, EXPAND_DIMS, SQUEEZE and RELU_N1_TO_1 becomes a
Cortex-M55 firmware whose outputs equal LiteRT's reference kernels byte for byte, fenced and unfenced, and the
kernels' random cases replayed on the target equal LiteRT there too; the MobileNetV2 family runs end to end."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from ai_edge_litert import schema_py_generated as schema
from conftest import require_firmware_tools
from helpers.data_models import data_model, options_of
from helpers.int8_models import broadcast_model, mean_model, requantize_model, run_all, run_reference
from test_codegen_qemu import _assert_matches_reference, _build, _fenced, _run
from test_kernels_int8_m55 import STRUCT_TYPES, Emitter

from heliabuild.kernels import data_movement as dm
from heliabuild.kernels import int8
from heliabuild.kernels.activations import ActivationKernels, LeakyReluArgs, leaky_relu_params, prelu_params
from heliabuild.kernels.int8 import HostKernelCall, Int8Kernels, Quant, add_params, mean_params, requantize_params
from heliabuild.kernels.native import load_host_library
from heliabuild.model import load_model, save_model
from heliabuild.model.io import Model
from heliabuild.synth.builder import GraphBuilder
from heliabuild.synth.quant import quantization_parameters

OP = schema.BuiltinOperator
Emitter.C_TYPES = {**Emitter.C_TYPES, "int64": "int64_t"}
STRUCT_TYPES.update(
    {
        LeakyReluArgs: "helia_leaky_relu_s8_args",
        dm.ArgArgs: "helia_arg_s8_args",
        int8.RequantizeArgs: "helia_requantize_s8_args",
        int8.MeanArgs: "helia_mean_s8_args",
        dm.IndexCopyArgs: "helia_index_copy_args",
    }
)


@pytest.fixture(autouse=True)
def _tools() -> None:
    require_firmware_tools()


def data_chain() -> Model:
    builder = GraphBuilder()

    def tensor(name: str, shape: tuple[int, ...], scale: float, zero_point: int) -> int:
        return builder.activation(name, shape, "int8", quantization_parameters([scale], [zero_point]))

    x = tensor("input", (1, 4, 4, 3), 0.05, -3)
    relu6 = tensor("relu6", (1, 4, 4, 3), 0.05, -3)
    builder.operator(OP.RELU6, [x], [relu6], version=2)
    requantized = tensor("requantized", (1, 4, 4, 3), 0.031, 11)
    builder.operator(OP.QUANTIZE, [relu6], [requantized], schema.QuantizeOptionsT(), version=2)
    relu = tensor("relu", (1, 4, 4, 3), 0.02, -128)
    builder.operator(OP.RELU, [requantized], [relu], version=2)
    expanded = tensor("expanded", (1, 4, 4, 1, 3), 0.02, -128)
    axis = builder.constant("axis", np.array([3], np.int32))
    builder.operator(OP.EXPAND_DIMS, [relu, axis], [expanded], version=1)
    squeezed = tensor("squeezed", (4, 4, 3), 0.02, -128)
    options = schema.SqueezeOptionsT()
    options.squeezeDims = [0, 3]
    builder.operator(OP.SQUEEZE, [expanded], [squeezed], options, version=1)
    output = tensor("output", (4, 4, 3), 0.01, 5)
    builder.operator(OP.RELU_N1_TO_1, [squeezed], [output], version=1)
    return builder.finish([x], [output], description="data ops", name="data_chain", dynamic_batch=False)


def broadcast_chain() -> Model:
    """SUB both ways with broadcasting, their MAXIMUM and MINIMUM, and the SUB of those under RELU6."""
    builder = GraphBuilder()

    def tensor(name: str, shape: tuple[int, ...], scale: float, zero_point: int) -> int:
        return builder.activation(name, shape, "int8", quantization_parameters([scale], [zero_point]))

    def sub(first: int, second: int, out: int, activation: int = 0) -> None:
        options = schema.SubOptionsT()
        options.fusedActivationFunction = activation
        builder.operator(OP.SUB, [first, second], [out], options, version=2)

    a, b = tensor("a", (1, 4, 4, 3), 0.05, -3), tensor("b", (1, 1, 1, 3), 0.08, 10)
    ab, ba = tensor("ab", (1, 4, 4, 3), 0.1, 2), tensor("ba", (1, 4, 4, 3), 0.1, 2)
    sub(a, b, ab)
    sub(b, a, ba)
    high, low = tensor("high", (1, 4, 4, 3), 0.1, 2), tensor("low", (1, 4, 4, 3), 0.1, 2)
    builder.operator(OP.MAXIMUM, [ab, ba], [high], schema.MaximumMinimumOptionsT(), version=2)
    builder.operator(OP.MINIMUM, [ab, ba], [low], schema.MaximumMinimumOptionsT(), version=2)
    output = tensor("output", (1, 4, 4, 3), 0.04, -128)
    sub(high, low, output, schema.ActivationFunctionType.RELU6)
    return builder.finish([a, b], [output], description="broadcast ops", name="broadcast_chain", dynamic_batch=False)


def movement_chain() -> Model:
    """Every data-movement operator once, chained: TRANSPOSE, SPACE_TO_DEPTH, DEPTH_TO_SPACE, MIRROR_PAD,
    STRIDED_SLICE, SLICE, GATHER, SPLIT, SPLIT_V, UNPACK, PACK and PADV2; three outputs."""
    builder = GraphBuilder()
    q = quantization_parameters([0.05], [-3])

    def tensor(name: str, shape: tuple[int, ...]) -> int:
        return builder.activation(name, shape, "int8", q)

    def ints(name: str, values: object) -> int:
        return builder.constant(name, np.array(values, np.int32))

    def op(code: int, inputs: list[int], outputs: list[int], options: object = None, version: int = 1) -> None:
        builder.operator(code, inputs, outputs, options, version=version)

    x = tensor("input", (1, 4, 4, 4))
    t = tensor("transposed", (1, 4, 4, 4))
    op(OP.TRANSPOSE, [x, ints("perm", [0, 2, 1, 3])], [t], schema.TransposeOptionsT(), 2)
    s2d, d2s = tensor("s2d", (1, 2, 2, 16)), tensor("d2s", (1, 4, 4, 4))
    op(OP.SPACE_TO_DEPTH, [t], [s2d], options_of(schema.SpaceToDepthOptionsT, blockSize=2), 2)
    op(OP.DEPTH_TO_SPACE, [s2d], [d2s], options_of(schema.DepthToSpaceOptionsT, blockSize=2))
    mirrored = tensor("mirrored", (1, 6, 6, 4))
    op(OP.MIRROR_PAD, [d2s, ints("mirror_paddings", [[0, 0], [1, 1], [2, 0], [0, 0]])], [mirrored],
       options_of(schema.MirrorPadOptionsT, mode=schema.MirrorPadMode.REFLECT), 2)  # fmt: skip
    strided = tensor("strided", (1, 3, 6, 4))
    bounds = [ints("begin", [0, 0, 0, 0]), ints("end", [1, 6, 6, 4]), ints("strides", [1, 2, 1, 1])]
    op(OP.STRIDED_SLICE, [mirrored, *bounds], [strided], schema.StridedSliceOptionsT(), 2)
    sliced = tensor("sliced", (1, 2, 4, 4))
    op(OP.SLICE, [strided, ints("slice_begin", [0, 1, 1, 0]), ints("slice_size", [1, 2, 4, -1])], [sliced],
       schema.SliceOptionsT(), 2)  # fmt: skip
    gathered = tensor("gathered", (1, 2, 4, 3))
    op(OP.GATHER, [sliced, ints("indices", [3, 0, 2])], [gathered], options_of(schema.GatherOptionsT, axis=3), 2)
    halves = [tensor(f"half{k}", (1, 2, 2, 3)) for k in range(2)]
    op(OP.SPLIT, [ints("split_axis", 2), gathered], halves, options_of(schema.SplitOptionsT, numSplits=2), 2)
    pieces = [tensor(f"piece{k}", (1, 1, 2, 3)) for k in range(2)]
    op(OP.SPLIT_V, [halves[0], ints("sizes", [1, -1]), ints("split_v_axis", 1)], pieces,
       options_of(schema.SplitVOptionsT, numSplits=2), 2)  # fmt: skip
    rows = [tensor(f"row{k}", (1, 2, 3)) for k in range(2)]
    op(OP.UNPACK, [halves[1]], rows, options_of(schema.UnpackOptionsT, num=2, axis=1), 2)
    packed = tensor("packed", (2, 1, 2, 3))
    op(OP.PACK, rows, [packed], options_of(schema.PackOptionsT, valuesCount=2, axis=0), 2)
    padded = tensor("padded", (2, 2, 3, 3))
    fill = builder.constant("fill", np.array(17, np.int8), q)
    op(OP.PADV2, [packed, ints("pad_paddings", [[0, 0], [0, 1], [1, 0], [0, 0]]), fill], [padded],
       schema.PadV2OptionsT(), 2)  # fmt: skip
    return builder.finish([x], [padded, *pieces], description="movement", name="movement", dynamic_batch=False)


def activation_chain() -> Model:
    """LEAKY_RELU, PRELU with a per-channel constant alpha, and ARG_MAX (int32) and ARG_MIN (int64) of it."""
    builder = GraphBuilder()

    def tensor(name: str, shape: tuple[int, ...], scale: float, zero_point: int, dtype: str = "int8") -> int:
        return builder.activation(name, shape, dtype, quantization_parameters([scale], [zero_point]))

    x = tensor("input", (1, 4, 4, 3), 0.05, -3)
    leaky = tensor("leaky", (1, 4, 4, 3), 0.04, -20)
    builder.operator(OP.LEAKY_RELU, [x], [leaky], options_of(schema.LeakyReluOptionsT, alpha=0.2), version=2)
    alpha = builder.constant("alpha", np.array([[[40, -30, 90]]], np.int8), quantization_parameters([0.01], [5]))
    prelu = tensor("prelu", (1, 4, 4, 3), 0.03, 1)
    builder.operator(OP.PRELU, [leaky, alpha], [prelu], version=1)
    high = builder.activation("arg_max", (1, 4, 4), "int32")
    low = builder.activation("arg_min", (1, 4, 3), "int64")
    axis_c, axis_h = (
        builder.constant("axis_c", np.array([3], np.int32)),
        builder.constant("axis_h", np.array([-3], np.int32)),
    )
    builder.operator(
        OP.ARG_MAX,
        [prelu, axis_c],
        [high],
        options_of(schema.ArgMaxOptionsT, outputType=schema.TensorType.INT32),
        version=2,
    )
    builder.operator(
        OP.ARG_MIN,
        [prelu, axis_h],
        [low],
        options_of(schema.ArgMinOptionsT, outputType=schema.TensorType.INT64),
        version=2,
    )
    return builder.finish([x], [prelu, high, low], description="activations", name="activations", dynamic_batch=False)


CHAINS = [("data", data_chain, []), ("data", data_chain, [1, 3]), ("broadcast", broadcast_chain, []),
          ("broadcast", broadcast_chain, [1, 3]), ("movement", movement_chain, []),
          ("movement", movement_chain, [2, 7]), ("activation", activation_chain, []),
          ("activation", activation_chain, [0, 2])]  # fmt: skip


@pytest.mark.parametrize(("name", "chain", "fences"), CHAINS, ids=[f"{n}-{f}" for n, _, f in CHAINS])
def test_a_chain_of_data_operators_is_bit_exact_on_qemu(
    firmware_library: Path, tmp_path: Path, name: str, chain: object, fences: list[int]
) -> None:
    source = tmp_path / f"{name}_chain.tflite"
    save_model(chain(), source)  # type: ignore[operator]
    model = _fenced(source, fences, tmp_path) if fences else source
    built = _build(firmware_library, model, tmp_path / "fw", seed=3)
    run = _run(built)
    _assert_matches_reference(model, built, run)
    assert len(run.samples[0].segment_ticks) == len(fences) + 1


def _requantize_case(kernels: Int8Kernels, rng: np.random.Generator, kind: str) -> np.ndarray:
    shape = tuple(int(v) for v in rng.integers(1, 6, size=int(rng.integers(1, 4))))
    iq = Quant(float(rng.uniform(1e-3, 0.5)), int(rng.integers(-128, 128)))
    oq = Quant(iq.scale * float(rng.uniform(0.05, 20.0)), int(rng.integers(-128, 128)))
    x = rng.integers(-128, 128, size=shape, dtype=np.int8)
    expected = run_reference(requantize_model(kind, shape, iq, oq), [x])
    kernels.requantize(requantize_params(iq, oq, "NONE" if kind == "QUANTIZE" else kind), x)
    return expected


def _mean_case(kernels: Int8Kernels, rng: np.random.Generator, kind: str) -> np.ndarray:
    rank = int(rng.integers(1, 5))
    shape = tuple(int(v) for v in rng.integers(1, 7, size=rank))
    first = int(rng.integers(rank))
    axes = list(range(first, int(rng.integers(first, rank)) + 1))
    keep_dims = bool(rng.integers(2))
    iq = Quant(float(rng.uniform(1e-3, 0.5)), int(rng.integers(-128, 128)))
    oq = iq if rng.integers(4) == 0 else Quant(float(rng.uniform(1e-3, 0.5)), int(rng.integers(-128, 128)))
    params = mean_params(shape, axes, keep_dims, iq, oq)
    x = rng.integers(-128, 128, size=shape, dtype=np.int8)
    expected = run_reference(mean_model(shape, axes, keep_dims, iq, oq, params.output_shape), [x])
    kernels.mean(params, x)
    return expected


def _broadcast_case(kernels: Int8Kernels, rng: np.random.Generator, kind: str) -> np.ndarray:
    shape = tuple(int(v) for v in rng.integers(1, 5, size=int(rng.integers(1, 5))))
    other = tuple(1 if rng.integers(3) == 0 else d for d in shape)[int(rng.integers(len(shape))) :]
    a = rng.integers(-128, 128, size=shape, dtype=np.int8)
    b = rng.integers(-128, 128, size=other, dtype=np.int8)
    q1 = Quant(float(rng.uniform(1e-3, 0.5)), int(rng.integers(-128, 128)))
    q2, qo = (Quant(float(rng.uniform(1e-3, 0.5)), int(rng.integers(-128, 128))) for _ in range(2))
    activation = str(rng.choice(["NONE", "RELU", "RELU6", "RELU_N1_TO_1"]))
    if kind != "SUB":
        q2, qo, activation = q1, q1, "NONE"
    expected = run_reference(broadcast_model(kind.lower(), a.shape, b.shape, q1, q2, qo, activation), [a, b])
    kernels.binary(kind.lower(), add_params(q1, q2, qo, activation), a, b)
    return expected


def _index_copy_case(kernels: Int8Kernels, rng: np.random.Generator, kind: str) -> np.ndarray:
    """A random TRANSPOSE, reversed STRIDED_SLICE, GATHER or SYMMETRIC MIRROR_PAD through helia_index_copy."""
    shape = tuple(int(v) for v in rng.integers(1, 5, size=int(rng.integers(1, 5))))
    x = rng.integers(-128, 128, size=shape, dtype=np.int8)
    quant = Quant(0.05, -3)
    choice = int(rng.integers(4))
    if choice == 0:
        perm = [int(p) for p in rng.permutation(len(shape))]
        copy, code, constants = dm.transpose(shape, perm), OP.TRANSPOSE, [(1, np.array(perm, np.int32))]
        options: object = schema.TransposeOptionsT()
    elif choice == 1:
        begin, end, strides = [d - 1 for d in shape], [-d - 1 for d in shape], [-1] * len(shape)
        copy, code = dm.strided_slice(shape, begin, end, strides), OP.STRIDED_SLICE
        constants = [(1, np.array(begin, np.int32)), (2, np.array(end, np.int32)), (3, np.array(strides, np.int32))]
        options = schema.StridedSliceOptionsT()
    elif choice == 2:
        indices = rng.integers(0, shape[-1], size=3, dtype=np.int32)
        copy, code, constants = dm.gather(shape, indices, -1), OP.GATHER, [(1, indices)]
        options = options_of(schema.GatherOptionsT, axis=-1)
    else:
        paddings = [(int(rng.integers(0, d + 1)), int(rng.integers(0, d + 1))) for d in shape]
        copy, code = dm.mirror_pad(shape, paddings, "SYMMETRIC"), OP.MIRROR_PAD
        constants = [(1, np.array(paddings, np.int32).reshape(len(shape), 2))]
        options = options_of(schema.MirrorPadOptionsT, mode=schema.MirrorPadMode.SYMMETRIC)
    model = data_model(code, [shape], [copy.output_shape], quant, constants=constants, options=options, version=2)
    expected = run_all(model, [x])[0]
    movement = dm.DataKernels(kernels.library)
    movement.recorder = kernels.recorder
    movement.index_copy(copy, x)
    return expected


def _leaky_relu_case(kernels: Int8Kernels, rng: np.random.Generator, kind: str) -> np.ndarray:
    shape = tuple(int(v) for v in rng.integers(1, 6, size=int(rng.integers(1, 4))))
    iq = Quant(float(rng.uniform(1e-3, 0.5)), int(rng.integers(-128, 128)))
    oq = Quant(float(rng.uniform(1e-3, 0.5)), int(rng.integers(-128, 128)))
    alpha = float(rng.choice([0.0, 0.01, 0.2, 0.3, float(rng.uniform(0, 3))]))
    x = rng.integers(-128, 128, size=shape, dtype=np.int8)
    model = data_model(OP.LEAKY_RELU, [shape], [shape], iq, options=options_of(schema.LeakyReluOptionsT, alpha=alpha),
                       version=2)  # fmt: skip
    output = model.subgraphs[0].tensors[model.subgraphs[0].outputs[0]]
    output.quantization = quantization_parameters([oq.scale], [oq.zero_point])
    expected = run_reference(model, [x])
    ActivationKernels(kernels.library, recorder=kernels.recorder).leaky_relu(leaky_relu_params(iq, oq, alpha), x)
    return expected


def _prelu_case(kernels: Int8Kernels, rng: np.random.Generator, kind: str) -> np.ndarray:
    shape = tuple(int(v) for v in rng.integers(1, 5, size=int(rng.integers(1, 5))))
    alpha_shape = tuple(1 if rng.integers(3) == 0 else d for d in shape)[int(rng.integers(len(shape))) :]
    x = rng.integers(-128, 128, size=shape, dtype=np.int8)
    alpha = rng.integers(-128, 128, size=alpha_shape, dtype=np.int8)
    iq, aq, oq = (Quant(float(rng.uniform(1e-3, 0.3)), int(rng.integers(-128, 128))) for _ in range(3))
    builder = GraphBuilder()
    xi = builder.activation("x", shape, "int8", quantization_parameters([iq.scale], [iq.zero_point]))
    ai = builder.constant("alpha", alpha, quantization_parameters([aq.scale], [aq.zero_point]))
    yi = builder.activation("y", shape, "int8", quantization_parameters([oq.scale], [oq.zero_point]))
    builder.operator(OP.PRELU, [xi, ai], [yi], version=1)
    expected = run_reference(builder.finish([xi], [yi], description="p", name="p", dynamic_batch=False), [x])
    kernels.binary("prelu", prelu_params(iq, aq, oq), x, alpha)
    return expected


def _arg_case(kernels: Int8Kernels, rng: np.random.Generator, kind: str) -> np.ndarray:
    shape = tuple(int(v) for v in rng.integers(1, 6, size=int(rng.integers(1, 4))))
    axis = int(rng.integers(-len(shape), len(shape)))
    x = rng.integers(-2, 2, size=shape, dtype=np.int8) * 60
    which, index_dtype = ("max", "min")[int(rng.integers(2))], ("int32", "int64")[int(rng.integers(2))]
    builder = GraphBuilder()
    xi = builder.activation("x", shape, "int8", quantization_parameters([0.1], [0]))
    yi = builder.activation("y", tuple(d for a, d in enumerate(shape) if a != axis % len(shape)), index_dtype)
    options_type = schema.ArgMaxOptionsT if which == "max" else schema.ArgMinOptionsT
    options = options_of(options_type, outputType=getattr(schema.TensorType, index_dtype.upper()))
    code = OP.ARG_MAX if which == "max" else OP.ARG_MIN
    builder.operator(code, [xi, builder.constant("axis", np.array([axis], np.int32))], [yi], options, version=2)
    expected = run_all(builder.finish([xi], [yi], description="a", name="a", dynamic_batch=False), [x])[0]
    movement = dm.DataKernels(kernels.library)
    movement.recorder = kernels.recorder
    movement.arg(which, x, axis, index_dtype)
    return expected


REPLAYED = {
    "LEAKY_RELU": _leaky_relu_case,
    "PRELU": _prelu_case,
    "ARG_MAX_MIN": _arg_case,
    "INDEX_COPY": _index_copy_case,
    **{kind: _broadcast_case for kind in ("SUB", "MAXIMUM", "MINIMUM")},
    **{kind: _requantize_case for kind in ("RELU", "RELU6", "RELU_N1_TO_1", "QUANTIZE")},
    "MEAN": _mean_case,
}
CASES_PER_KIND = 20


def test_the_kernels_random_cases_are_bit_exact_on_the_cortex_m55(
    tmp_path: Path, host_kernel_library: Path, firmware_library: Path
) -> None:
    """Each kernel's random cases, LiteRT's outputs beside them, replayed by one firmware on QEMU."""
    from heliabuild.firmware.build import link_firmware
    from heliabuild.firmware.qemu import run_on_qemu

    kernels = Int8Kernels(load_host_library(host_kernel_library))
    recorded: list[HostKernelCall] = []
    kernels.recorder = recorded.append
    emitter = Emitter()
    rng = np.random.default_rng(20261201)
    for kind, case in REPLAYED.items():
        for _ in range(CASES_PER_KIND):
            recorded.clear()
            expected = case(kernels, rng, kind)
            (call,) = recorded
            assert isinstance(call.arrays[-1], np.ndarray) and call.arrays[-1].tobytes() == expected.tobytes()
            emitter.add(len(emitter.calls), kind, call, expected)
    source = tmp_path / "data_cases.c"
    source.write_text(emitter.source())
    elf = link_firmware(firmware_library, [source], [], tmp_path / "data_cases.elf")
    run = run_on_qemu(elf, timeout_s=120)
    total = len(REPLAYED) * CASES_PER_KIND
    assert run.console.strip().splitlines()[-1] == f"helia-int8 OK {total}/{total}", run.console[-2000:]
    assert run.exit_status == 0


FAMILY_CASES = [("mobilenet_v2", []), ("mobilenet_v2", [4, 11, 20])]


@pytest.mark.parametrize(("kind", "fences"), FAMILY_CASES, ids=[f"{k}-{f}" for k, f in FAMILY_CASES])
def test_synth_families_run_end_to_end_on_qemu(
    firmware_library: Path, tmp_path: Path, kind: str, fences: list[int]
) -> None:
    """The MobileNetV2 family (MEAN pooling, residual ADDs), fenced and unfenced: outputs equal LiteRT's
    reference kernels, and the per-segment instruction counts (QEMU icount) add up to the invoke's."""
    from heliabuild.synth import synthesize

    source = tmp_path / f"{kind}.tflite"
    save_model(synthesize(kind, seed=1), source)
    model = _fenced(source, fences, tmp_path) if fences else source
    built = _build(firmware_library, model, tmp_path / "fw", seed=len(fences))
    run = _run(built)
    _assert_matches_reference(model, built, run)
    segments = run.samples[0].segment_ticks
    assert len(segments) == len(fences) + 1 and all(ticks > 0 for ticks in segments)
    print(f"{kind} fences {fences}: segment instructions {[t * 125 // 4 for t in segments]}")


def _gru_admitted() -> bool:
    from heliabuild.codegen.module import kernel_tables

    return {"LOGISTIC", "TANH"} <= set(kernel_tables()[1])


@pytest.mark.parametrize("fences", [[], [16, 50]], ids=["unfenced", "fenced"])
def test_the_unrolled_gru_runs_end_to_end_on_qemu_once_part_b_is_merged(
    firmware_library: Path, tmp_path: Path, fences: list[int]
) -> None:
    """With LOGISTIC and TANH (issue 22 part B) admitted, the GRU runs bit-exact, fenced and unfenced; until
    then its module generation is refused naming those two types and nothing else."""
    from heliabuild.codegen.lowering import ModelRefusedError
    from heliabuild.codegen.module import lower
    from heliabuild.synth import synthesize

    source = tmp_path / "gru.tflite"
    save_model(synthesize("gru", seed=1), source)
    model = _fenced(source, fences, tmp_path) if fences else source
    if not _gru_admitted():
        with pytest.raises(ModelRefusedError) as refused:
            lower(load_model(model), str(model))
        assert {r.op_type for r in refused.value.refusals} == {"LOGISTIC", "TANH"}
        return
    built = _build(firmware_library, model, tmp_path / "fw", seed=len(fences))
    run = _run(built)
    _assert_matches_reference(model, built, run)
    segments = run.samples[0].segment_ticks
    assert len(segments) == len(fences) + 1
    print(f"gru fences {fences}: segment instructions {[t * 125 // 4 for t in segments]}")
