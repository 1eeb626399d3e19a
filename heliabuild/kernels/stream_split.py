"""The ETHOS_U_STREAM_SPLIT identity copy over N (input, output) pairs, contract version 1.

The fence copies each pair's bytes unchanged. `stream_split_prepare` checks a
request and returns a plan; `StreamSplitPlan.run` copies; `stream_split_copy`
does both. `NativeStreamSplit` runs the same request through the C kernel
(`c/stream_split.c`) via ctypes, with the same checks in the same order and
the same status codes, so the two can be compared case for case.

What the kernel promises (fence-contract.md, "Boundary semantics"):

- The input and output lists are nonempty and equally long; pair i is
  (inputs[i], outputs[i]). Pairs may differ from each other in dtype and shape.
- Within a pair: the same dtype, one of version 1's int8, uint8, int16, int32,
  int64, float16, float32 and bool (anything else is refused), the same shape
  (static extents 0..INT32_MAX), and on both sides a byte length equal to flat
  size x element size. A mismatch is refused, never truncated.
- An exact alias within a pair (the output's bytes are the input's) is a no-op.
  A partial overlap within a pair, or an output overlapping any byte of another
  pair's input or output, is refused. Tensors with zero bytes overlap nothing;
  inputs may share bytes (they are only read).
- Every check runs before any byte moves: a refused request modifies nothing.

Checks run in this order, and the first failure is reported with its pair:
the pair count; then per pair the buffers (C-contiguous; the output writable;
Python only, since C receives raw pointers); then per pair the input and
output dtypes (supported, then equal), shapes (valid, then equal), the size
(fits size_t) and the two byte lengths; then per pair i, a partial overlap
of its own input and output, followed by its output against every other
pair's input and output. This is the order of `helia_stream_split_prepare`.

A tensor is given as a numpy array or memoryview (dtype and shape are its
own), or as `TensorBuffer(data, dtype, shape)`: raw bytes from an arena plus
the tensor's metadata, which is what the run stage holds.
"""

from __future__ import annotations

import ctypes
import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, TypeAlias

import numpy as np

from heliabuild.errors import StreamSplitError
from heliabuild.fence.contract import ELEMENT_BYTES, TYPE_NAMES
from heliabuild.kernels.native import Status

ELEMENT_SIZES: dict[str, int] = {TYPE_NAMES[code].lower(): size for code, size in ELEMENT_BYTES.items()}
"""Element size in bytes of each dtype contract version 1 carries, by lower-case name."""

TYPE_CODES: dict[str, int] = {name.lower(): code for code, name in TYPE_NAMES.items()}
"""TFLite TensorType code of every dtype name the schema knows (the C API's dtype codes)."""

INT32_MAX = 2**31 - 1
SIZE_MAX = 2 ** (8 * ctypes.sizeof(ctypes.c_size_t)) - 1
_UNKNOWN_CODE = -1


@dataclass(frozen=True)
class TensorBuffer:
    """One side of a pair: `data` (any C-contiguous buffer; its bytes are the tensor's storage)
    and the tensor metadata they must match: `dtype` (a name such as 'int8', a numpy dtype or a
    TFLite TensorType code) and `shape`."""

    data: Any
    dtype: Any
    shape: tuple[int, ...]


Tensor: TypeAlias = np.ndarray | memoryview | TensorBuffer


@dataclass(frozen=True)
class _Side:
    """A tensor reduced to what the checks need."""

    role: str
    raw: np.ndarray | None  # the bytes as uint8; None when the buffer cannot be viewed
    problem: str | None  # why the buffer is unusable, or None
    dtype_name: str
    dtype_code: int
    shape: tuple[Any, ...]
    address: int  # of the first byte (0 when raw is None)
    nbytes: int  # bytes of raw (0 when raw is None)


def _dtype_identity(dtype: Any) -> tuple[str, int]:
    """(lower-case name, TFLite code or -1) of a dtype given as a name, numpy dtype or TFLite code (memoized:
    numpy's dtype names are computed in Python and would dominate a small request)."""
    try:
        return _dtype_identity_cached(dtype)
    except TypeError:  # unhashable
        return _dtype_identity_uncached(dtype)


def _dtype_identity_uncached(dtype: Any) -> tuple[str, int]:
    if isinstance(dtype, int | np.integer) and not isinstance(dtype, bool):
        code = int(dtype)
        return TYPE_NAMES.get(code, f"type {code}").lower(), code if code in TYPE_NAMES else _UNKNOWN_CODE
    if isinstance(dtype, str) and dtype.lower() in TYPE_CODES:
        return dtype.lower(), TYPE_CODES[dtype.lower()]
    try:
        numpy_type = np.dtype(dtype)
    except TypeError:
        return str(dtype), _UNKNOWN_CODE
    if not numpy_type.isnative and numpy_type.itemsize > 1:
        return f"{numpy_type.name} (non-native byte order {numpy_type.str})", _UNKNOWN_CODE
    return numpy_type.name, TYPE_CODES.get(numpy_type.name, _UNKNOWN_CODE)


_dtype_identity_cached = functools.lru_cache(maxsize=256, typed=True)(_dtype_identity_uncached)


def _side(tensor: Tensor, role: str, writable: bool) -> _Side:
    if isinstance(tensor, TensorBuffer):
        data, dtype, shape = tensor.data, tensor.dtype, tuple(tensor.shape)
    elif isinstance(tensor, np.ndarray):
        data, dtype, shape = tensor, tensor.dtype, tensor.shape
    elif isinstance(tensor, memoryview):
        try:
            dtype = np.dtype(tensor.format)
        except TypeError:
            dtype = tensor.format
        data, shape = tensor, tuple(tensor.shape or ())
    else:
        raise TypeError(
            f"stream-split: {role} is a {type(tensor).__name__}; expected numpy array, memoryview or TensorBuffer"
        )
    name, code = _dtype_identity(dtype)
    raw, problem = None, None
    try:
        view = memoryview(data)
    except TypeError:
        problem = f"a {type(data).__name__}, which exposes no buffer"
    else:
        if not view.c_contiguous:
            problem = "not C-contiguous"
        elif writable and view.readonly:
            problem = "read-only"
        elif view.nbytes == 0:
            raw = np.empty(0, np.uint8)
        else:
            try:
                raw = np.frombuffer(view.cast("B"), dtype=np.uint8)
            except (TypeError, ValueError):
                problem = f"not byte-addressable (format {view.format!r})"
    address = 0 if raw is None else int(raw.ctypes.data)
    return _Side(role, raw, problem, name, code, shape, address, 0 if raw is None else int(raw.size))


def _shape_problem(shape: tuple[Any, ...]) -> bool:
    return any(not isinstance(d, int | np.integer) or isinstance(d, bool) or not 0 <= d <= INT32_MAX for d in shape)


def _byte_count(shape: tuple[Any, ...], element_size: int) -> int:
    return math.prod(int(d) for d in shape) * element_size


def _overlap(a: _Side, b: _Side) -> bool:
    if a.nbytes == 0 or b.nbytes == 0:
        return False
    return a.address < b.address + b.nbytes and b.address < a.address + a.nbytes


def _span(side: _Side) -> str:
    return f"{side.nbytes} bytes at {side.address:#x}"


_SUPPORTED_TEXT = ", ".join(ELEMENT_SIZES)


def _check_pair(index: int, source: _Side, destination: _Side) -> None:
    where = f"stream-split pair {index}"
    for side in (source, destination):
        if side.dtype_name not in ELEMENT_SIZES:
            raise StreamSplitError(
                Status.UNSUPPORTED_DTYPE,
                index,
                f"{where}: {side.role} dtype {side.dtype_name} is not carried by contract version 1; "
                f"expected one of {_SUPPORTED_TEXT}",
            )
    if source.dtype_name != destination.dtype_name:
        raise StreamSplitError(
            Status.DTYPE_MISMATCH,
            index,
            f"{where}: output dtype {destination.dtype_name} differs from input dtype {source.dtype_name}",
        )
    for side in (source, destination):
        if _shape_problem(side.shape):
            raise StreamSplitError(
                Status.BAD_SHAPE,
                index,
                f"{where}: {side.role} shape {list(side.shape)} has an extent outside 0..{INT32_MAX} "
                "(static, nonnegative extents are required)",
            )
    if tuple(int(d) for d in source.shape) != tuple(int(d) for d in destination.shape):
        raise StreamSplitError(
            Status.SHAPE_MISMATCH,
            index,
            f"{where}: output shape {[int(d) for d in destination.shape]} differs from input shape "
            f"{[int(d) for d in source.shape]}",
        )
    element_size = ELEMENT_SIZES[source.dtype_name]
    expected = _byte_count(source.shape, element_size)
    if expected > SIZE_MAX:
        raise StreamSplitError(
            Status.SIZE_OVERFLOW,
            index,
            f"{where}: shape {[int(d) for d in source.shape]} x {element_size} bytes does not fit size_t",
        )
    for side in (source, destination):
        if side.nbytes != expected:
            raise StreamSplitError(
                Status.BYTE_LENGTH_MISMATCH,
                index,
                f"{where}: {side.role} byte length {side.nbytes} differs from flat size x element size = "
                f"{expected} ({source.dtype_name} {[int(d) for d in source.shape]})",
            )


def _check_buffers(index: int, source: _Side, destination: _Side) -> None:
    for side in (source, destination):
        if side.problem is not None:
            raise StreamSplitError(
                Status.INVALID_BUFFER, index, f"stream-split pair {index}: {side.role} buffer is {side.problem}"
            )


def _any_bytes_shared(sides: Sequence[_Side]) -> bool:
    """Whether any two nonempty tensors share a byte (aliases and shared inputs included): a sorted sweep,
    O(N log N). False proves the ordered scan below would find nothing, so it is skipped."""
    spans = sorted((side.address, side.address + side.nbytes) for side in sides if side.nbytes)
    reach = 0
    for start, end in spans:
        if start < reach:
            return True
        reach = max(reach, end)
    return False


def _check_overlaps(sources: Sequence[_Side], destinations: Sequence[_Side]) -> None:
    if not _any_bytes_shared([*sources, *destinations]):
        return
    for i, (source, destination) in enumerate(zip(sources, destinations, strict=True)):
        if source.address != destination.address and _overlap(source, destination):
            raise StreamSplitError(
                Status.PARTIAL_OVERLAP,
                i,
                f"stream-split pair {i}: input ({_span(source)}) and output ({_span(destination)}) overlap "
                "partially; only an exact alias is allowed within a pair",
            )
        for j in range(len(sources)):
            if j == i:
                continue
            for other in (sources[j], destinations[j]):
                if _overlap(destination, other):
                    raise StreamSplitError(
                        Status.CROSS_PAIR_OVERLAP,
                        i,
                        f"stream-split pair {i}: output ({_span(destination)}) overlaps the {other.role} of "
                        f"pair {j} ({_span(other)})",
                    )


def _sides(inputs: Sequence[Tensor], outputs: Sequence[Tensor]) -> tuple[list[_Side], list[_Side]]:
    if len(inputs) != len(outputs) or not inputs:
        raise StreamSplitError(
            Status.PAIR_COUNT,
            None,
            f"stream-split: {len(inputs)} inputs and {len(outputs)} outputs; the fence takes matching nonempty lists",
        )
    sources = [_side(tensor, "input", writable=False) for tensor in inputs]
    destinations = [_side(tensor, "output", writable=True) for tensor in outputs]
    for index, pair in enumerate(zip(sources, destinations, strict=True)):
        _check_buffers(index, *pair)
    return sources, destinations


@dataclass(frozen=True)
class StreamSplitPlan:
    """A checked request: `copies` holds (source, destination) uint8 views of the pairs that move
    bytes (exact aliases and empty pairs are left out). The views keep the buffers alive."""

    pair_count: int
    copies: tuple[tuple[np.ndarray, np.ndarray], ...]

    def run(self) -> None:
        """Copy every pair. The plan's checks hold as long as the buffers are the ones it was made from."""
        for source, destination in self.copies:
            np.copyto(destination, source)


def stream_split_prepare(inputs: Sequence[Tensor], outputs: Sequence[Tensor]) -> StreamSplitPlan:
    """Check the pairs (inputs[i], outputs[i]) against the contract without touching any data.

    Returns the plan that copies them; raises StreamSplitError (a KernelError)
    naming the first failing rule, the pair and what differs.
    """
    sources, destinations = _sides(inputs, outputs)
    for index, pair in enumerate(zip(sources, destinations, strict=True)):
        _check_pair(index, *pair)
    _check_overlaps(sources, destinations)
    copies = tuple(
        (source.raw, destination.raw)
        for source, destination in zip(sources, destinations, strict=True)
        if source.raw is not None and destination.raw is not None
        if source.nbytes and source.address != destination.address
    )
    return StreamSplitPlan(len(sources), copies)


def stream_split_copy(inputs: Sequence[Tensor], outputs: Sequence[Tensor]) -> None:
    """Check, then copy each pair's bytes (stream_split_prepare(...).run()); a refused request writes nothing."""
    stream_split_prepare(inputs, outputs).run()


# --- the C kernel through ctypes ----------------------------------------------------------------


class TensorDesc(ctypes.Structure):
    """`helia_tensor_desc` of c/stream_split.h."""

    _fields_ = [
        ("data", ctypes.c_void_p),
        ("byte_length", ctypes.c_size_t),
        ("dims", ctypes.POINTER(ctypes.c_int32)),
        ("rank", ctypes.c_int32),
        ("dtype", ctypes.c_int32),
    ]


_NO_PAIR = SIZE_MAX


def _dims_for_c(shape: tuple[Any, ...]) -> ctypes.Array[ctypes.c_int32]:
    """Extents as int32; one the C type cannot hold becomes -1, which C refuses as BAD_SHAPE, as Python does."""
    values = [-1 if _shape_problem((d,)) else int(d) for d in shape]
    return (ctypes.c_int32 * max(len(values), 1))(*values)


class BoundNativeCopy:
    """Descriptors for one request, built once; `copy()` calls the C kernel (which re-checks them)."""

    def __init__(self, owner: NativeStreamSplit, sources: list[_Side], destinations: list[_Side]) -> None:
        self._owner = owner
        self._keep = (sources, destinations)
        self._dims: list[ctypes.Array[ctypes.c_int32]] = []
        self.inputs = self._descriptors(sources)
        self.outputs = self._descriptors(destinations)
        self.failing_pair = ctypes.c_size_t(_NO_PAIR)

    def _descriptors(self, sides: list[_Side]) -> ctypes.Array[TensorDesc]:
        array = (TensorDesc * max(len(sides), 1))()
        for slot, side in zip(array, sides, strict=False):
            dims = _dims_for_c(side.shape)
            self._dims.append(dims)
            slot.data = side.address or None
            slot.byte_length = side.nbytes
            slot.dims = ctypes.cast(dims, ctypes.POINTER(ctypes.c_int32))
            slot.rank = len(side.shape)
            slot.dtype = side.dtype_code
        return array

    def _call(self, function: Any) -> tuple[Status, int | None]:
        count_in, count_out = len(self._keep[0]), len(self._keep[1])
        status = function(self.inputs, count_in, self.outputs, count_out, ctypes.byref(self.failing_pair))
        pair = self.failing_pair.value
        return Status(status), None if pair == _NO_PAIR else int(pair)

    def prepare_status(self) -> tuple[Status, int | None]:
        """(status, failing pair or None) of helia_stream_split_prepare."""
        return self._call(self._owner.library.helia_stream_split_prepare)

    def copy_status(self) -> tuple[Status, int | None]:
        """(status, failing pair or None) of helia_stream_split_copy."""
        return self._call(self._owner.library.helia_stream_split_copy)

    def copy(self) -> None:
        """Run helia_stream_split_copy; raise StreamSplitError when it refuses."""
        status, pair = self.copy_status()
        if status != Status.OK:
            raise _native_error(status, pair)


def _native_error(status: Status, pair: int | None) -> StreamSplitError:
    where = "stream-split (C)" if pair is None else f"stream-split (C) pair {pair}"
    return StreamSplitError(status, pair, f"{where}: refused with HELIA_STATUS_{status.name}")


class NativeStreamSplit:
    """The C kernel of a loaded `libheliakernels` (heliabuild.kernels.native.load_host_library)."""

    def __init__(self, library: ctypes.CDLL) -> None:
        self.library = library
        descriptors = ctypes.POINTER(TensorDesc)
        arguments = [descriptors, ctypes.c_size_t, descriptors, ctypes.c_size_t, ctypes.POINTER(ctypes.c_size_t)]
        for name in ("helia_stream_split_prepare", "helia_stream_split_copy"):
            function = getattr(library, name)
            function.argtypes = arguments
            function.restype = ctypes.c_int
        library.helia_stream_split_element_size.argtypes = [ctypes.c_int32]
        library.helia_stream_split_element_size.restype = ctypes.c_size_t

    def element_size(self, dtype_code: int) -> int:
        """helia_stream_split_element_size: bytes per element, 0 for a dtype version 1 does not carry."""
        return int(self.library.helia_stream_split_element_size(dtype_code))

    def bind(self, inputs: Sequence[Tensor], outputs: Sequence[Tensor]) -> BoundNativeCopy:
        """Descriptors for the request. Raises StreamSplitError for what only Python can see (the pair
        count before any buffer is looked at, and unusable buffers); the rest is the C kernel's to check."""
        if len(inputs) != len(outputs) or not inputs:
            sources = [_side(tensor, "input", writable=False) for tensor in inputs]
            destinations = [_side(tensor, "output", writable=True) for tensor in outputs]
            return BoundNativeCopy(self, sources, destinations)
        sources, destinations = _sides(inputs, outputs)
        return BoundNativeCopy(self, sources, destinations)

    def prepare(self, inputs: Sequence[Tensor], outputs: Sequence[Tensor]) -> None:
        """Check the request in C; raise StreamSplitError with the C status and pair when it is refused."""
        status, pair = self.bind(inputs, outputs).prepare_status()
        if status != Status.OK:
            raise _native_error(status, pair)

    def copy(self, inputs: Sequence[Tensor], outputs: Sequence[Tensor]) -> None:
        """Check and copy in C; a refused request writes nothing and raises StreamSplitError."""
        self.bind(inputs, outputs).copy()
