"""Detess admission: every rule of the contract refuses its violation with its own code, in numpy and in C alike."""

from __future__ import annotations

import ctypes
from dataclasses import replace
from pathlib import Path

import pytest
from helpers.detess_goldens import load_c_detess

from heliabuild.kernels.detess import (
    DetessError,
    DetessTensorSpec,
    DType,
    Error,
    ErrorCode,
    MlaTiled,
    Padding,
    Plan,
    Request,
    Strided,
    check_inference,
    unwrap,
)

TILED = MlaTiled((-1, -1, 0, 1), (1, 1, 2, 3))


@pytest.fixture(scope="module")
def c_detess(host_kernel_library: Path):
    return load_c_detess(host_kernel_library)


def req(
    shape=(2, 3),
    dtype=DType.INT8,
    layout=TILED,
    out_shape=None,
    out_dtype=None,
    out_layout=None,
    params=(),
) -> Request:
    source = DetessTensorSpec(shape, dtype, layout)
    target = DetessTensorSpec(
        shape if out_shape is None else out_shape, dtype if out_dtype is None else out_dtype, out_layout
    )
    return Request([source], [target], params)


def tiled(axes=(-1, -1, 0, 1), tile=(1, 1, 2, 3), padding=Padding.COMPACT) -> MlaTiled:
    return MlaTiled(axes, tile, padding)


BASE = req()
INVALID = {
    # one input spec, one output spec
    "no-inputs": (Request([], BASE.outputs), ErrorCode.PORT_COUNT),
    "two-inputs": (Request([BASE.inputs[0]] * 2, BASE.outputs), ErrorCode.PORT_COUNT),
    "two-outputs": (Request(BASE.inputs, [BASE.outputs[0]] * 2), ErrorCode.PORT_COUNT),
    "no-outputs": (Request(BASE.inputs, []), ErrorCode.PORT_COUNT),
    # params is empty
    "params-mapping": (req(params={"zero_point": 0}), ErrorCode.PARAMS),
    "params-sequence": (req(params=[1.0]), ErrorCode.PARAMS),
    # direction: MlaTiled -> contiguous or Strided
    "input-contiguous": (req(layout=None), ErrorCode.DIRECTION),
    "input-strided": (req(layout=Strided((3, 1))), ErrorCode.DIRECTION),
    "output-tiled": (req(out_layout=TILED), ErrorCode.DIRECTION),
    # INT8 or BF16, same on both ports
    **{
        f"dtype-{d.name.lower()}": (req(dtype=d), ErrorCode.DTYPE)
        for d in (DType.FP16, DType.FP32, DType.UINT8, DType.INT16, DType.INT32, DType.INT64)
    },
    "dtype-output-fp32": (req(out_dtype=DType.FP32), ErrorCode.DTYPE),
    "dtype-unknown": (req(dtype=99), ErrorCode.DTYPE),
    "dtype-int8-to-bf16": (req(out_dtype=DType.BF16), ErrorCode.DTYPE_MISMATCH),
    "dtype-bf16-to-int8": (req(dtype=DType.BF16, out_dtype=DType.INT8), ErrorCode.DTYPE_MISMATCH),
    # rank 1..6, explicit extents >= 0, equal shapes
    "rank-0": (req(shape=()), ErrorCode.RANK),
    "rank-0-output": (req(out_shape=()), ErrorCode.RANK),
    "rank-7": (req(shape=(1, 1, 1, 1, 1, 2, 3)), ErrorCode.RANK),
    "extent-negative": (req(shape=(2, -1)), ErrorCode.EXTENT),
    "extent-unknown-output": (req(out_shape=(-1, 3)), ErrorCode.EXTENT),
    "extent-too-large": (req(shape=(2**63, 3)), ErrorCode.EXTENT),
    "shape-transposed": (req(out_shape=(3, 2)), ErrorCode.SHAPE_MISMATCH),
    "shape-leading-one": (req(out_shape=(1, 2, 3)), ErrorCode.SHAPE_MISMATCH),
    # Compact or PadTo16
    "padding-mla-c-blocked": (req(layout=tiled(padding=Padding.MLA_C_BLOCKED)), ErrorCode.PADDING),
    "padding-unknown": (req(layout=tiled(padding=5)), ErrorCode.PADDING),
    # explicit unique D/H/W/C axes, C required
    "axis-out-of-range": (req(layout=tiled(axes=(-1, -1, 0, 2))), ErrorCode.AXES),
    "axis-below-minus-one": (req(layout=tiled(axes=(-2, -1, 0, 1))), ErrorCode.AXES),
    "axis-mapped-twice": (req(layout=tiled(axes=(-1, 0, 0, 1))), ErrorCode.AXES),
    "axes-three-entries": (req(layout=tiled(axes=(-1, 0, 1))), ErrorCode.AXES),
    "channel-unmapped": (req(layout=tiled(axes=(-1, 0, 1, -1))), ErrorCode.CHANNEL_AXIS),
    # tile extents >= 1, one on an omitted axis
    "tile-zero": (req(layout=tiled(tile=(1, 1, 0, 3))), ErrorCode.TILE_SHAPE),
    "tile-negative": (req(layout=tiled(tile=(1, 1, 2, -16))), ErrorCode.TILE_SHAPE),
    "tile-on-omitted-axis": (req(layout=tiled(tile=(2, 1, 2, 3))), ErrorCode.TILE_SHAPE),
    "tile-three-entries": (req(layout=tiled(tile=(1, 2, 3))), ErrorCode.TILE_SHAPE),
    # strides: count, nonnegative, scalar aligned, zero only on extent <= 1, proven nonoverlapping
    "stride-count": (req(out_layout=Strided((3,))), ErrorCode.STRIDE_COUNT),
    "stride-negative": (req(out_layout=Strided((-3, 1))), ErrorCode.STRIDE_NEGATIVE),
    "stride-misaligned-bf16": (req(dtype=DType.BF16, out_layout=Strided((8, 3))), ErrorCode.STRIDE_ALIGNMENT),
    "stride-broadcast": (req(out_layout=Strided((0, 1))), ErrorCode.STRIDE_ZERO),
    "stride-overlap-rows": (req(out_layout=Strided((2, 1))), ErrorCode.STRIDE_OVERLAP),
    "stride-equal": (req(out_layout=Strided((1, 1))), ErrorCode.STRIDE_OVERLAP),
    # offsets 2i + 3j over [3, 2] are {0, 2, 4, 3, 5, 7}: injective, but the sorted-span proof cannot show it
    "stride-injective-unproven": (
        req(shape=(3, 2), layout=tiled(tile=(1, 1, 2, 2)), out_layout=Strided((2, 3))),
        ErrorCode.STRIDE_OVERLAP,
    ),
    # sizes fit int64
    "overflow-tiled": (req(shape=(2**62, 3)), ErrorCode.OVERFLOW),
    "overflow-strided-span": (req(out_layout=Strided((2**63 - 1, 1))), ErrorCode.OVERFLOW),
    "overflow-empty-but-huge-slice": (
        req(shape=(0, 2**40, 2**40), layout=tiled(axes=(-1, -1, 1, 2), tile=(1, 1, 1, 1))),
        ErrorCode.OVERFLOW,
    ),
}

VALID = {
    "contract-example": req(dtype=DType.BF16),
    "pad-to-16": req(layout=tiled(padding=Padding.PAD_TO_16)),
    "channel-only": req(shape=(5,), layout=tiled(axes=(-1, -1, -1, 0), tile=(1, 1, 1, 4))),
    "rank-6": req(shape=(2, 1, 3, 2, 2, 5), layout=tiled(axes=(1, 2, 4, 5), tile=(1, 2, 1, 3))),
    "empty-channel": req(shape=(2, 0)),
    "empty-outer": req(shape=(0, 2, 3), layout=tiled(axes=(-1, -1, 1, 2))),
    "empty-strided-overlapping-is-still-checked-first": req(shape=(2, 0), out_layout=Strided((1, 1))),
    "tile-larger-than-extent": req(layout=tiled(tile=(1, 1, 64, 1000))),
    "tile-huge": req(layout=tiled(tile=(1, 1, 2**63 - 1, 2**63 - 1))),
    "zero-stride-extent-one": req(shape=(1, 3), out_layout=Strided((0, 1))),
    "huge-stride-extent-one": req(shape=(1, 3), out_layout=Strided((2**62, 1))),
    "column-major": req(out_layout=Strided((1, 2))),
    "pitched": req(dtype=DType.BF16, out_layout=Strided((10, 2))),
    "numpy-integers": req(shape=(__import__("numpy").int64(2), 3)),
}


@pytest.mark.parametrize(("request_", "code"), INVALID.values(), ids=INVALID.keys())
def test_invalid_request_is_refused_with_its_rule(request_: Request, code: ErrorCode, c_detess) -> None:
    outcome = check_inference(request_)
    assert isinstance(outcome, Error), outcome
    assert outcome.code == code, outcome
    assert outcome.message and "\n" not in outcome.message
    c_outcome = c_detess.check_inference(request_)
    assert isinstance(c_outcome, Error) and c_outcome.code == code, c_outcome


@pytest.mark.parametrize("request_", VALID.values(), ids=VALID.keys())
def test_valid_request_is_admitted_alike(request_: Request, c_detess) -> None:
    plan = check_inference(request_)
    assert isinstance(plan, Plan), plan
    cplan = c_detess.check_inference(request_)
    assert not isinstance(cplan, Error), cplan
    assert (cplan.input_bytes, cplan.output_bytes, cplan.row_path) == (
        plan.input_bytes,
        plan.output_bytes,
        plan.row_path,
    )
    assert (cplan.input_alignment, cplan.output_alignment) == (16, plan.dtype.width)


def test_empty_tensor_needs_no_storage() -> None:
    for name in ("empty-channel", "empty-outer"):
        plan = check_inference(VALID[name])
        assert (plan.input_bytes, plan.output_bytes, plan.element_count) == (0, 0, 0)


def test_refusal_order_first_broken_rule_wins(c_detess) -> None:
    """A request breaking several rules reports the first in the documented order, in both implementations."""
    cases = [
        (req(dtype=DType.FP32, shape=()), ErrorCode.DTYPE),
        (req(shape=(2, -1), layout=tiled(padding=Padding.MLA_C_BLOCKED)), ErrorCode.EXTENT),
        (req(layout=tiled(axes=(-1, 0, 0, -1), tile=(0, 1, 1, 1))), ErrorCode.AXES),
        (req(layout=tiled(tile=(0, 1, 1, 1)), out_layout=Strided((-1,))), ErrorCode.TILE_SHAPE),
        (req(out_layout=Strided((-1,))), ErrorCode.STRIDE_COUNT),
        (req(shape=(2**62, 3), out_layout=Strided((1, 1))), ErrorCode.STRIDE_OVERLAP),
        (req(layout=None, params=[1]), ErrorCode.PARAMS),
    ]
    for request_, code in cases:
        assert check_inference(request_).code == code
        assert c_detess.check_inference(request_).code == code


def test_check_inference_never_raises_on_malformed_metadata() -> None:
    odd = [
        Request([DetessTensorSpec("23", DType.INT8, TILED)], BASE.outputs),
        Request([DetessTensorSpec((2, 3.0), DType.INT8, TILED)], BASE.outputs),
        Request([DetessTensorSpec((2, 3), "int8", TILED)], BASE.outputs),
        Request([DetessTensorSpec((2, 3), DType.INT8, MlaTiled(None, (1, 1, 1, 1)))], BASE.outputs),
        Request([DetessTensorSpec((2, 3), DType.INT8, MlaTiled((-1, -1, 0, 1), 5))], BASE.outputs),
        Request([DetessTensorSpec((2, 3), DType.INT8, object())], BASE.outputs),
        Request(BASE.inputs, [DetessTensorSpec((2, 3), DType.INT8, Strided(None))]),
        Request(BASE.inputs, [DetessTensorSpec((2, 3), DType.INT8, Strided((3, "1")))]),
        Request([object()], BASE.outputs),
    ]
    for request_ in odd:
        assert isinstance(check_inference(request_), Error)


def test_plan_owns_its_metadata() -> None:
    """No request span is retained: changing the caller's sequences after admission changes nothing."""
    shape, axes, tile, strides = [2, 3], [-1, -1, 0, 1], [1, 1, 2, 3], [4, 1]
    request_ = req(shape=shape, layout=MlaTiled(axes, tile), out_layout=Strided(strides))
    plan = check_inference(request_)
    before = (plan.shape, plan.geometry, plan.output_strides, plan.input_bytes, plan.output_bytes)
    shape[1], axes[3], tile[2], strides[0] = 9, 0, 5, 0
    assert (plan.shape, plan.geometry, plan.output_strides, plan.input_bytes, plan.output_bytes) == before
    with pytest.raises(AttributeError):
        plan.shape = (1,)  # type: ignore[misc]


def test_error_raises_as_detess_error() -> None:
    error = check_inference(req(dtype=DType.FP16))
    with pytest.raises(DetessError) as raised:
        unwrap(error)
    assert raised.value.error is error
    assert "FP16" in str(raised.value) and "INT8 or BF16" in str(raised.value)
    assert isinstance(unwrap(check_inference(BASE)), Plan)


def test_c_null_request_and_plan(c_detess) -> None:
    library = c_detess.library
    storage = (ctypes.c_uint8 * c_detess.plan_size)()
    assert library.helia_detess_check_inference(None, storage) == ErrorCode.PORT_COUNT
    assert library.helia_detess_check_inference(None, None) == ErrorCode.PLAN


def test_messages_name_value_and_expectation() -> None:
    cases = {
        ErrorCode.PADDING: (req(layout=tiled(padding=Padding.MLA_C_BLOCKED)), ["MLA_C_BLOCKED", "COMPACT"]),
        ErrorCode.STRIDE_ZERO: (req(out_layout=Strided((0, 1))), ["stride 0", "extent 2"]),
        ErrorCode.RANK: (req(shape=()), ["rank 0", "1 to 6"]),
        ErrorCode.CHANNEL_AXIS: (req(layout=tiled(axes=(-1, 0, 1, -1))), ["C unmapped"]),
    }
    for code, (request_, fragments) in cases.items():
        error = check_inference(request_)
        assert error.code == code
        for fragment in fragments:
            assert fragment in error.message, (fragment, error.message)


def test_replace_keeps_records_frozen() -> None:
    spec = BASE.inputs[0]
    assert replace(spec, dtype=DType.BF16).dtype == DType.BF16
    with pytest.raises(AttributeError):
        spec.dtype = DType.BF16  # type: ignore[misc]
