"""Detess properties (hypothesis): numpy == C == golden writer on random valid requests, and the two
admissions agree on random (mostly invalid) metadata."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest
from helpers.detess_goldens import Case, Guarded, linear_golden, load_c_detess, tiled_golden
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from heliabuild.kernels.detess import (
    DetessTensorSpec,
    DType,
    Error,
    MlaTiled,
    Padding,
    Request,
    Strided,
    check_inference,
    execute,
)

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@pytest.fixture(scope="module")
def c_detess(host_kernel_library: Path):
    return load_c_detess(host_kernel_library)


@st.composite
def valid_cases(draw) -> Case:
    dtype = draw(st.sampled_from([DType.INT8, DType.BF16]))
    rank = draw(st.integers(1, 6))
    shape = tuple(draw(st.lists(st.integers(0, 7), min_size=rank, max_size=rank)))
    if np.prod([max(e, 1) for e in shape]) > 400:
        shape = tuple(min(e, 2) for e in shape)
    logical = draw(st.permutations(range(rank)))
    mapped = logical[: draw(st.integers(1, min(4, rank)))]
    axes = [-1, -1, -1, -1]
    axes[3] = mapped[0]
    slots = draw(st.permutations([0, 1, 2]))
    for slot, axis in zip(slots, mapped[1:], strict=False):
        axes[slot] = axis
    tile = tuple(1 if a == -1 else draw(st.integers(1, 18)) for a in axes)
    padding = draw(st.sampled_from([Padding.COMPACT, Padding.PAD_TO_16]))
    strides = None
    if draw(st.booleans()):
        order = draw(st.permutations(range(rank)))
        width = dtype.width
        step = width * draw(st.integers(1, 2))
        built = [0] * rank
        for axis in reversed(order):
            built[axis] = step if shape[axis] > 1 or draw(st.booleans()) else 0
            step = step * max(shape[axis], 1) + width * draw(st.integers(0, 3))
        strides = tuple(built)
    return Case(dtype, shape, tuple(axes), tile, padding, strides)  # type: ignore[arg-type]


@SETTINGS
@given(case=valid_cases(), seed=st.integers(0, 2**32 - 1))
def test_numpy_c_and_golden_agree(case: Case, seed: int, c_detess) -> None:
    values = case.values(np.random.default_rng(seed))
    request = case.request()
    plan = check_inference(request)
    cplan = c_detess.check_inference(request)
    assert not isinstance(plan, Error) and not isinstance(cplan, Error), (plan, cplan)
    golden = tiled_golden(values, case.axes, case.tile, case.padding, random.Random(seed))
    assert len(golden) == plan.input_bytes == cplan.input_bytes
    expected = linear_golden(values, case.view_strides, plan.output_bytes, bytes([0x5A]) * plan.output_bytes)
    tiled = Guarded(plan.input_bytes, 16)
    tiled.view[:] = np.frombuffer(golden, dtype=np.uint8)
    for run, p in ((execute, plan), (c_detess.execute, cplan)):
        out = Guarded(plan.output_bytes, case.width, fill=0x5A)
        assert run(p, [tiled.view], [out.view]) is None
        assert out.view.tobytes() == expected
        assert out.guards_intact() and tiled.guards_intact()


extents = st.one_of(st.integers(-2, 6), st.just(2**40), st.just(2**62), st.just(2**63))
MUTATIONS = [
    "rank",
    "extent",
    "out_shape",
    "dtype",
    "out_dtype",
    "axes",
    "tile",
    "padding",
    "input_layout",
    "output_layout",
    "stride",
    "stride_count",
    "params",
]


@st.composite
def any_requests(draw) -> Request:
    """A valid request with zero to three fields replaced by arbitrary (often invalid) values."""
    case = draw(valid_cases())
    shape, dtype, axes, tile, padding = list(case.shape), case.dtype, list(case.axes), list(case.tile), case.padding
    out_shape, out_dtype, strides = list(case.shape), case.dtype, case.strides
    input_tiled, output_kind, params = True, "strided" if strides is not None else "contiguous", ()
    for mutation in draw(st.lists(st.sampled_from(MUTATIONS), max_size=3)):
        if mutation == "rank":
            shape = out_shape = draw(st.lists(st.integers(0, 3), min_size=0, max_size=8))
        elif mutation == "extent" and shape:
            shape = list(shape)
            shape[draw(st.integers(0, len(shape) - 1))] = draw(extents)
            out_shape = shape if draw(st.booleans()) else out_shape
        elif mutation == "out_shape":
            out_shape = draw(st.lists(st.integers(0, 4), max_size=7))
        elif mutation == "dtype":
            dtype = draw(st.sampled_from(list(DType)))
        elif mutation == "out_dtype":
            out_dtype = draw(st.sampled_from(list(DType)))
        elif mutation == "axes":
            axes[draw(st.integers(0, 3))] = draw(st.integers(-3, 7))
        elif mutation == "tile":
            tile[draw(st.integers(0, 3))] = draw(st.one_of(st.integers(-1, 20), st.just(2**62), st.just(2**63 - 1)))
        elif mutation == "padding":
            padding = draw(st.sampled_from([*Padding, 9]))
        elif mutation == "input_layout":
            input_tiled = False
        elif mutation == "output_layout":
            output_kind = draw(st.sampled_from(["contiguous", "strided", "tiled"]))
            if output_kind == "strided" and strides is None:
                strides = tuple(draw(st.lists(st.integers(0, 64), min_size=len(out_shape), max_size=len(out_shape))))
        elif mutation in ("stride", "stride_count"):
            output_kind = "strided"
            rank = len(out_shape) if mutation == "stride" else draw(st.integers(0, 7))
            values = st.one_of(st.integers(-2, 64), st.just(2**62), st.just(2**63 - 1))
            strides = tuple(draw(st.lists(values, min_size=rank, max_size=rank)))
        elif mutation == "params":
            params = (0,)
    source = DetessTensorSpec(tuple(shape), dtype, MlaTiled(tuple(axes), tuple(tile), padding) if input_tiled else None)
    layout = {
        "contiguous": None,
        "strided": Strided(strides or ()),
        "tiled": MlaTiled(tuple(axes), tuple(tile), padding),
    }[output_kind]
    return Request([source], [DetessTensorSpec(tuple(out_shape), out_dtype, layout)], params)


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(request_=any_requests())
def test_admissions_agree_on_any_metadata(request_: Request, c_detess) -> None:
    """Same code for every refusal (the rules run in the same order), same requirements for every admission."""
    ours = check_inference(request_)
    theirs = c_detess.check_inference(request_)
    event(ours.code.name if isinstance(ours, Error) else "admitted")
    if isinstance(ours, Error) or isinstance(theirs, Error):
        assert isinstance(ours, Error) and isinstance(theirs, Error), (ours, theirs)
        assert ours.code == theirs.code, (ours, theirs)
    else:
        assert (ours.input_bytes, ours.output_bytes, ours.row_path) == (
            theirs.input_bytes,
            theirs.output_bytes,
            theirs.row_path,
        )
