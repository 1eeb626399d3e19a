"""The data-movement operators as index copies and splits: what `c/ops_data.c` runs, derived from TFLite's options.

An `IndexCopy` is one `helia_index_copy` call: output element [i0, ..., ik] is input element
sum_k maps[k][i_k] x input_strides[k], every map and stride computed here from the operator's shapes and
options as TFLite defines the operator:

- `strided_slice(shape, begin, end, strides, begin_mask, end_mask, shrink_axis_mask)`: TensorFlow's strided
  slice (a begin or end outside the axis is clamped, a negative one counts from the end; a masked begin or
  end is the axis's first or last element in the stride's direction; a shrunk axis takes `begin` alone, or
  its first element when its begin is masked, as LiteRT does);
- `slice_(shape, begin, size)`: SLICE (`size` -1 runs to the end);
- `transpose(shape, perm)`: TRANSPOSE (output axis k is input axis perm[k]);
- `gather(shape, indices, axis)`: GATHER with constant indices in [0, shape[axis]);
- `mirror_pad(shape, paddings, mode)`: MIRROR_PAD, REFLECT (the edge once) or SYMMETRIC (the edge twice);
- `space_to_depth(shape, block)` and `depth_to_space(shape, block)`: NHWC, TFLite's DCR channel order.

Each raises `DataMovementError` (a KernelError) for arguments TFLite refuses or the kernel does not take (an
empty output, a rank above 6). `DataKernels(load_host_library(...))` runs `helia_index_copy` and
`helia_split` on numpy arrays, and `helia_arg_s8` (ARG_MAX, ARG_MIN: the first index of the largest or
smallest code, as LiteRT's reference kernel picks it).
"""

from __future__ import annotations

import ctypes
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from heliabuild.errors import DataMovementError
from heliabuild.kernels.native import Status

MAX_RANK = 6
MIRROR_MODES = ("REFLECT", "SYMMETRIC")
ARG_KINDS = ("max", "min")
"""helia_arg_s8_args.kind: HELIA_ARG_MAX 0, HELIA_ARG_MIN 1."""


@dataclass(frozen=True)
class IndexCopy:
    """One helia_index_copy call: the input's element count, the output's extents (the rank the kernel
    iterates, which may split or merge the operator's axes), per output axis its input stride and index map,
    and the operator's output shape."""

    input_count: int
    dims: tuple[int, ...]
    strides: tuple[int, ...]
    maps: tuple[tuple[int, ...], ...]
    output_shape: tuple[int, ...]

    @property
    def flat_maps(self) -> tuple[int, ...]:
        return tuple(value for axis in self.maps for value in axis)


def _strides(shape: Sequence[int]) -> list[int]:
    strides = [1] * len(shape)
    for axis in range(len(shape) - 2, -1, -1):
        strides[axis] = strides[axis + 1] * int(shape[axis + 1])
    return strides


def _finish(
    shape: Sequence[int], dims: list[int], strides: list[int], maps: list[list[int]], out: Sequence[int]
) -> IndexCopy:
    if not dims:  # a scalar: one element
        dims, strides, maps = [1], [0], [[0]]
    if len(dims) > MAX_RANK:
        raise DataMovementError(f"data movement: rank {len(dims)} is above the kernel's {MAX_RANK}")
    if min(dims) < 1:
        raise DataMovementError(f"data movement: the output {list(out)} is empty; the kernels take extents >= 1")
    return IndexCopy(
        math.prod(int(d) for d in shape),
        tuple(dims),
        tuple(strides),
        tuple(tuple(m) for m in maps),
        tuple(int(d) for d in out),
    )


def _axis_bounds(dim: int, begin: int, end: int, stride: int, begin_masked: bool, end_masked: bool) -> list[int]:
    """The indices TensorFlow's strided slice takes along one axis."""
    low, high = (0, dim) if stride > 0 else (-1, dim - 1)

    def clamp(value: int) -> int:
        value = value + dim if value < 0 else value
        return min(max(value, low), high)

    start = (0 if stride > 0 else dim - 1) if begin_masked else clamp(begin)
    stop = (dim if stride > 0 else -1) if end_masked else clamp(end)
    return list(range(start, stop, stride))


def strided_slice(
    shape: Sequence[int],
    begin: Sequence[int],
    end: Sequence[int],
    strides: Sequence[int],
    begin_mask: int = 0,
    end_mask: int = 0,
    shrink_axis_mask: int = 0,
) -> IndexCopy:
    """STRIDED_SLICE (module docstring); the ellipsis and new-axis masks are refused by the caller."""
    rank = len(shape)
    if not len(begin) == len(end) == len(strides) <= rank:
        raise DataMovementError(f"strided slice: begin, end and strides {list(begin)}, {list(end)}, "
                                f"{list(strides)} do not fit a rank {rank} input")  # fmt: skip
    if any(int(s) == 0 for s in strides):
        raise DataMovementError(f"strided slice: a stride of 0 in {list(strides)}")
    input_strides = _strides(shape)
    dims, steps, maps, out = [], [], [], []
    for axis in range(rank):
        dim = int(shape[axis])
        if axis >= len(begin):
            taken = list(range(dim))
            out.append(dim)
        elif shrink_axis_mask >> axis & 1:
            if int(strides[axis]) < 0:  # LiteRT leaves the output unwritten (measured): not a defined result
                raise DataMovementError(f"strided slice: shrunk axis {axis} has a negative stride {strides[axis]}")
            # LiteRT takes a masked begin as the axis's first element on a shrunk axis too (TensorFlow ignores it).
            index = (
                0 if begin_mask >> axis & 1 else int(begin[axis]) + dim if int(begin[axis]) < 0 else int(begin[axis])
            )
            if not 0 <= index < dim:
                raise DataMovementError(f"strided slice: shrunk axis {axis} index {begin[axis]} is outside {dim}")
            taken = [index]
        else:
            masked_begin, masked_end = bool(begin_mask >> axis & 1), bool(end_mask >> axis & 1)
            taken = _axis_bounds(dim, int(begin[axis]), int(end[axis]), int(strides[axis]), masked_begin, masked_end)
            out.append(len(taken))
        dims.append(len(taken))
        steps.append(input_strides[axis])
        maps.append(taken)
    return _finish(shape, dims, steps, maps, out)


def slice_(shape: Sequence[int], begin: Sequence[int], size: Sequence[int]) -> IndexCopy:
    """SLICE: `size[k]` elements from `begin[k]` (-1: to the end); TFLite refuses a slice past the end."""
    if not len(begin) == len(size) == len(shape):
        raise DataMovementError(f"slice: begin {list(begin)} and size {list(size)} do not fit shape {list(shape)}")
    maps = []
    for axis, (dim, start, count) in enumerate(zip(shape, begin, size, strict=True)):
        count = int(dim) - int(start) if int(count) == -1 else int(count)
        if int(start) < 0 or count < 0 or int(start) + count > int(dim):
            raise DataMovementError(f"slice: axis {axis} takes [{start}, {int(start) + count}) of {dim}")
        maps.append(list(range(int(start), int(start) + count)))
    return _finish(shape, [len(m) for m in maps], _strides(shape), maps, [len(m) for m in maps])


def transpose(shape: Sequence[int], perm: Sequence[int]) -> IndexCopy:
    """TRANSPOSE: output axis k is input axis perm[k] (negative entries count from the end)."""
    rank = len(shape)
    resolved = [int(p) + rank if int(p) < 0 else int(p) for p in perm]
    if sorted(resolved) != list(range(rank)):
        raise DataMovementError(f"transpose: {list(perm)} is not a permutation of {rank} axes")
    strides = _strides(shape)
    dims = [int(shape[p]) for p in resolved]
    return _finish(shape, dims, [strides[p] for p in resolved], [list(range(d)) for d in dims], dims)


def gather(shape: Sequence[int], indices: np.ndarray, axis: int) -> IndexCopy:
    """GATHER along `axis` with constant `indices` (batch_dims 0), each in [0, shape[axis])."""
    rank = len(shape)
    axis = axis + rank if axis < 0 else axis
    if not 0 <= axis < rank:
        raise DataMovementError(f"gather: axis {axis} is outside rank {rank}")
    flat = [int(i) for i in np.asarray(indices).reshape(-1)]
    if any(not 0 <= i < int(shape[axis]) for i in flat):
        raise DataMovementError(f"gather: an index of {flat} is outside [0, {shape[axis]}) (LiteRT refuses it)")
    strides = _strides(shape)
    dims = [int(d) for d in shape]
    maps = [list(range(d)) for d in dims]
    dims[axis], maps[axis] = len(flat), flat
    out = [*shape[:axis], *np.asarray(indices).shape, *shape[axis + 1 :]]
    return _finish(shape, dims, strides, maps, out)


def mirror_pad(shape: Sequence[int], paddings: Sequence[tuple[int, int]], mode: str) -> IndexCopy:
    """MIRROR_PAD: REFLECT pads with at most extent - 1 values a side, SYMMETRIC with at most extent."""
    if mode not in MIRROR_MODES:
        raise DataMovementError(f"mirror pad: mode {mode!r} is not REFLECT or SYMMETRIC")
    if len(paddings) != len(shape):
        raise DataMovementError(f"mirror pad: {len(paddings)} paddings for a rank {len(shape)} input")
    reflect = mode == "REFLECT"
    maps = []
    for axis, (dim, (before, after)) in enumerate(zip(shape, paddings, strict=True)):
        limit = int(dim) - 1 if reflect else int(dim)
        if not (0 <= int(before) <= limit and 0 <= int(after) <= limit):
            raise DataMovementError(
                f"mirror pad: axis {axis} of {dim} padded ({before}, {after}); {mode} allows {limit}"
            )
        taken = []
        for position in range(int(before) + int(dim) + int(after)):
            j = position - int(before)
            if j < 0:
                j = -j if reflect else -j - 1
            elif j >= int(dim):
                j = 2 * int(dim) - 2 - j if reflect else 2 * int(dim) - 1 - j
            taken.append(j)
        maps.append(taken)
    return _finish(shape, [len(m) for m in maps], _strides(shape), maps, [len(m) for m in maps])


def _nhwc(shape: Sequence[int], what: str) -> tuple[int, int, int, int]:
    if len(shape) != 4:
        raise DataMovementError(f"{what}: input {list(shape)} is not rank 4 (NHWC)")
    n, h, w, c = (int(d) for d in shape)
    return n, h, w, c


def space_to_depth(shape: Sequence[int], block: int) -> IndexCopy:
    """SPACE_TO_DEPTH: output [n, h, w, (bh x block + bw) x c + k] = input [n, h x block + bh, w x block + bw, k]."""
    n, h, w, c = _nhwc(shape, "space to depth")
    if block < 1 or h % block or w % block:
        raise DataMovementError(f"space to depth: block {block} does not divide {h}x{w}")
    dims = [n, h // block, w // block, block, block, c]
    strides = [h * w * c, block * w * c, block * c, w * c, c, 1]
    return _finish(shape, dims, strides, [list(range(d)) for d in dims], [n, h // block, w // block, block * block * c])


def depth_to_space(shape: Sequence[int], block: int) -> IndexCopy:
    """DEPTH_TO_SPACE: output [n, h x block + bh, w x block + bw, k] = input [n, h, w, (bh x block + bw) x c' + k]."""
    n, h, w, c = _nhwc(shape, "depth to space")
    if block < 1 or c % (block * block):
        raise DataMovementError(f"depth to space: {block * block} does not divide the depth {c}")
    depth = c // (block * block)
    dims = [n, h, block, w, block, depth]
    strides = [h * w * c, w * c, block * depth, c, depth, 1]
    return _finish(shape, dims, strides, [list(range(d)) for d in dims], [n, h * block, w * block, depth])


# ---- ctypes -------------------------------------------------------------------------------------

_DIMS = ctypes.c_int32 * MAX_RANK


class IndexCopyArgs(ctypes.Structure):
    _fields_ = [
        ("input", ctypes.c_void_p), ("output", ctypes.c_void_p), ("element_size", ctypes.c_size_t),
        ("input_count", ctypes.c_int32), ("rank", ctypes.c_int32), ("output_dims", _DIMS),
        ("input_strides", _DIMS), ("maps", ctypes.POINTER(ctypes.c_int32)),
    ]  # fmt: skip


class ArgArgs(ctypes.Structure):
    _fields_ = [
        ("input", ctypes.c_void_p), ("output", ctypes.c_void_p),
        *((name, ctypes.c_int32) for name in ("outer", "axis_extent", "inner", "kind", "index_bytes")),
    ]  # fmt: skip


class SplitArgs(ctypes.Structure):
    _fields_ = [
        ("input", ctypes.c_void_p), ("outputs", ctypes.POINTER(ctypes.c_void_p)),
        ("axis_extents", ctypes.POINTER(ctypes.c_int32)), ("element_size", ctypes.c_size_t),
        ("output_count", ctypes.c_int32), ("outer", ctypes.c_int32), ("inner", ctypes.c_int32),
    ]  # fmt: skip


def _padded(values: Sequence[int]) -> ctypes.Array:
    return _DIMS(*(list(values) + [1] * (MAX_RANK - len(values))))


class DataKernels:
    """`helia_index_copy` and `helia_split` of a loaded kernel library, on numpy arrays (any element size of
    1, 2, 4 or 8 bytes). A refusal raises DataMovementError with the C status. `recorder`, when set, gets
    every call as heliabuild.kernels.int8.HostKernelCall before it runs."""

    recorder = None

    def __init__(self, library: ctypes.CDLL) -> None:
        self.library = library
        for name, args in (("helia_index_copy", IndexCopyArgs), ("helia_split", SplitArgs), ("helia_arg_s8", ArgArgs)):
            function = getattr(library, name)
            function.argtypes = [ctypes.POINTER(args)]
            function.restype = ctypes.c_int

    def _call(self, name: str, args: ctypes.Structure, arrays: Sequence[object]) -> None:
        if self.recorder is not None:
            from heliabuild.kernels.int8 import HostKernelCall

            self.recorder(HostKernelCall(name, (args,), tuple(arrays)))
        status = Status(getattr(self.library, name)(ctypes.byref(args)))
        if status != Status.OK:
            raise DataMovementError(f"{name}: refused with status {status.name} ({status.value})", status)

    def index_copy(self, copy: IndexCopy, input: np.ndarray) -> np.ndarray:
        x = np.ascontiguousarray(input)
        out = np.zeros(copy.output_shape, x.dtype)
        maps = np.array(copy.flat_maps, np.int32)
        args = IndexCopyArgs(
            x.ctypes.data, out.ctypes.data, x.itemsize, copy.input_count, len(copy.dims), _padded(copy.dims),
            _padded(copy.strides), maps.ctypes.data_as(ctypes.POINTER(ctypes.c_int32)),
        )  # fmt: skip
        self._call("helia_index_copy", args, (x, maps, out))
        return out

    def split(self, input: np.ndarray, axis: int, extents: Sequence[int], keep_axis: bool = True) -> list[np.ndarray]:
        """SPLIT / SPLIT_V (`keep_axis`) or UNPACK (extents all 1, the axis dropped) along `axis`."""
        x = np.ascontiguousarray(input)
        axis = axis % x.ndim
        outputs = []
        for extent in extents:
            shape = (
                [*x.shape[:axis], int(extent), *x.shape[axis + 1 :]]
                if keep_axis
                else [*x.shape[:axis], *x.shape[axis + 1 :]]
            )
            outputs.append(np.zeros(shape, x.dtype))
        pointers = (ctypes.c_void_p * len(outputs))(*[o.ctypes.data for o in outputs])
        table = np.array(list(extents), np.int32)
        args = SplitArgs(
            x.ctypes.data, ctypes.cast(pointers, ctypes.POINTER(ctypes.c_void_p)),
            table.ctypes.data_as(ctypes.POINTER(ctypes.c_int32)), x.itemsize, len(outputs),
            math.prod(x.shape[:axis]), math.prod(x.shape[axis + 1 :]),
        )  # fmt: skip
        self._call("helia_split", args, (x, table, *outputs, pointers))
        return outputs

    def arg(self, kind: str, input: np.ndarray, axis: int, index_dtype: str = "int32") -> np.ndarray:
        """ARG_MAX (`kind` 'max') or ARG_MIN ('min') of int8 `input` along `axis`, indices as `index_dtype`."""
        x = np.ascontiguousarray(input, dtype=np.int8)
        axis = axis % x.ndim
        out = np.zeros((*x.shape[:axis], *x.shape[axis + 1 :]), index_dtype)
        args = ArgArgs(
            x.ctypes.data, out.ctypes.data, math.prod(x.shape[:axis]), x.shape[axis], math.prod(x.shape[axis + 1 :]),
            ARG_KINDS.index(kind), out.itemsize,
        )  # fmt: skip
        self._call("helia_arg_s8", args, (x, out))
        return out
