"""int8 MEAN: the C kernel byte for byte against LiteRT's reference kernels in each of its three forms
(keep_dims rank-4 spatial mean, equal quantization, rescaling), over shapes, runs of axes, zero points and
scales, and its refusals."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from helpers.int8_models import mean_model, run_reference
from hypothesis import given, settings
from hypothesis import strategies as st

from heliabuild.kernels.int8 import Int8KernelError, Int8Kernels, Quant, mean_params

QUANT = st.builds(Quant, st.floats(1e-3, 0.5), st.integers(-128, 127))


@pytest.fixture(scope="module")
def kernels(host_kernel_library: Path) -> Int8Kernels:
    from heliabuild.kernels.native import load_host_library

    return Int8Kernels(load_host_library(host_kernel_library))


@st.composite
def mean_cases(draw: st.DrawFn) -> tuple[tuple[int, ...], list[int], bool]:
    rank = draw(st.integers(1, 5))
    shape = tuple(draw(st.integers(1, 7)) for _ in range(rank))
    first = draw(st.integers(0, rank - 1))
    last = draw(st.integers(first, rank - 1))
    axes = list(range(first, last + 1))
    axes = [a - rank if draw(st.booleans()) else a for a in draw(st.permutations(axes))]
    return shape, axes, draw(st.booleans())


def _check(
    kernels: Int8Kernels,
    shape: tuple[int, ...],
    axes: list[int],
    keep_dims: bool,
    input_quant: Quant,
    output_quant: Quant,
    seed: int,
) -> None:
    params = mean_params(shape, axes, keep_dims, input_quant, output_quant)
    x = np.random.default_rng(seed).integers(-128, 128, size=shape, dtype=np.int8)
    model = mean_model(shape, axes, keep_dims, input_quant, output_quant, params.output_shape)
    expected = run_reference(model, [x])
    assert kernels.mean(params, x).tobytes() == expected.tobytes()


@settings(max_examples=250, deadline=None)
@given(case=mean_cases(), input_quant=QUANT, output_quant=QUANT, same=st.booleans(), seed=st.integers(0, 2**32 - 1))
def test_mean_is_bit_exact(
    kernels: Int8Kernels,
    case: tuple[tuple[int, ...], list[int], bool],
    input_quant: Quant,
    output_quant: Quant,
    same: bool,
    seed: int,
) -> None:
    shape, axes, keep_dims = case
    _check(kernels, shape, axes, keep_dims, input_quant, input_quant if same else output_quant, seed)


@settings(max_examples=150, deadline=None)
@given(
    h=st.integers(1, 12),
    w=st.integers(1, 12),
    c=st.integers(1, 16),
    axes=st.sampled_from([[1, 2], [2, 1]]),
    keep_dims=st.booleans(),
    input_quant=QUANT,
    ratio=st.floats(0.1, 10.0),
    output_zero_point=st.integers(-128, 127),
    seed=st.integers(0, 2**32 - 1),
)
def test_global_average_pooling_as_mean_is_bit_exact(
    kernels: Int8Kernels,
    h: int,
    w: int,
    c: int,
    axes: list[int],
    keep_dims: bool,
    input_quant: Quant,
    ratio: float,
    output_zero_point: int,
    seed: int,
) -> None:
    """Keras's GlobalAveragePooling2D (keep_dims false) and its keep_dims variant, on wide spatial extents."""
    output_quant = Quant(input_quant.scale * ratio, output_zero_point)
    _check(kernels, (1, h, w, c), axes, keep_dims, input_quant, output_quant, seed)


@pytest.mark.parametrize("extent", [1, 2, 3, 49, 64, 1000, 4096])
def test_wide_and_long_reductions(kernels: Int8Kernels, extent: int) -> None:
    for input_quant, output_quant in ((Quant(0.05, 3), Quant(0.05, 3)), (Quant(0.4, -128), Quant(0.001, 127))):
        _check(kernels, (1, extent, 256), [1], False, input_quant, output_quant, seed=extent)


def test_mean_refuses_axes_it_does_not_reduce() -> None:
    q = Quant(0.05, 3)
    with pytest.raises(Int8KernelError, match="not contiguous"):
        mean_params((2, 3, 4), [0, 2], False, q, q)
    with pytest.raises(Int8KernelError, match="not a nonempty list"):
        mean_params((2, 3, 4), [], False, q, q)
    with pytest.raises(Int8KernelError, match="not a nonempty list"):
        mean_params((2, 3, 4), [3], False, q, q)


def test_mean_refuses_bad_arguments_writing_nothing(kernels: Int8Kernels) -> None:
    import ctypes

    from heliabuild.kernels.int8 import _I8, MeanArgs, _pointer
    from heliabuild.kernels.native import Status

    x = np.arange(-128, 128, dtype=np.int8).reshape(4, 8, 8)
    out = np.full((4, 8), 7, np.int8)
    function = kernels.library.helia_mean_s8

    def args(**changes: object) -> MeanArgs:
        fields: dict[str, object] = {
            "input": _pointer(x, _I8), "output": _pointer(out, _I8), "outer": 4, "reduced": 8, "inner": 8,
            "input_zero_point": 0, "output_zero_point": 0, "multiplier": 2**30, "shift": 0, **changes,
        }  # fmt: skip
        return MeanArgs(**fields)

    for bad, status in (
        (args(input=ctypes.cast(None, _I8)), Status.NULL_POINTER),
        (args(reduced=0), Status.BAD_SHAPE),
        (args(reduced=2**24), Status.SIZE_OVERFLOW),
        (args(multiplier=-1), Status.BAD_PARAMETER),
        (args(shift=31), Status.BAD_PARAMETER),
        (args(output_zero_point=-129), Status.BAD_PARAMETER),
        (args(output=ctypes.cast(x.ctypes.data + 3, _I8)), Status.PARTIAL_OVERLAP),
    ):
        before = x.tobytes()
        assert function(ctypes.byref(bad)) == status
        assert out.tolist() == [[7] * 8] * 4 and x.tobytes() == before
