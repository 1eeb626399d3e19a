"""ctypes binding of the C Detess kernel (`heliabuild/kernels/c/detess.{h,c}` in libheliakernels).

    from heliabuild.kernels.native import build_native, load_host_library
    kernel = CDetess(load_host_library(build_dir))
    plan = kernel.check_inference(request)          # CPlan | Error, the C check's answer
    error = kernel.execute(plan, [tiled], [linear])  # None | Error, the C execution's answer

The same `Request` records and buffers as the numpy reference go in, and the
same `ErrorCode`s come out, so tests compare the two case by case. Requests
whose values C cannot hold are mapped onto the C value that breaks the same
rule at the same step (e.g. a three-entry `axes` becomes an out-of-range axis),
so even invalid requests compare code for code; only a stride that is not an
integer in int64 range cannot be expressed and raises ValueError.
"""

from __future__ import annotations

import ctypes
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from heliabuild.kernels.detess.admission import integer_or_none, integers_or_none
from heliabuild.kernels.detess.bindings import as_binding
from heliabuild.kernels.detess.linear import INT64_MAX
from heliabuild.kernels.detess.request import MAX_RANK, DetessTensorSpec, MlaTiled, Request, Strided
from heliabuild.kernels.detess.status import Error, ErrorCode

LAYOUT_CONTIGUOUS, LAYOUT_STRIDED, LAYOUT_MLA_TILED = 0, 1, 2
_INVALID = 0x7FFF  # an enum value no rule admits (dtype, layout, padding)
_INT64_MIN = -(2**63)


class TensorSpecC(ctypes.Structure):
    """`helia_detess_tensor_spec`."""

    _fields_ = [
        ("rank", ctypes.c_int32),
        ("dtype", ctypes.c_int32),
        ("layout", ctypes.c_int32),
        ("padding", ctypes.c_int32),
        ("axes", ctypes.c_int32 * 4),
        ("shape", ctypes.c_int64 * MAX_RANK),
        ("tile_shape", ctypes.c_int64 * 4),
        ("strides", ctypes.c_int64 * MAX_RANK),
    ]


class RequestC(ctypes.Structure):
    """`helia_detess_request`."""

    _fields_ = [
        ("inputs", ctypes.POINTER(TensorSpecC)),
        ("input_count", ctypes.c_size_t),
        ("outputs", ctypes.POINTER(TensorSpecC)),
        ("output_count", ctypes.c_size_t),
        ("param_count", ctypes.c_size_t),
    ]


class BufferC(ctypes.Structure):
    """`helia_detess_buffer` (and, with the same layout, `helia_detess_const_buffer`)."""

    _fields_ = [("data", ctypes.c_void_p), ("capacity", ctypes.c_size_t)]


@dataclass(frozen=True)
class CPlan:
    """A plan filled by `helia_detess_check_inference`: its storage and the requirements read back from it."""

    storage: ctypes.Array
    input_bytes: int
    output_bytes: int
    input_alignment: int
    output_alignment: int
    row_path: str


def _int32(value: Any, fallback: int) -> int:
    number = integer_or_none(value)
    return number if number is not None and -(2**31) <= number < 2**31 else fallback


def _spec(spec: Any) -> TensorSpecC:
    """The C record of one port (see the module docstring for unrepresentable values)."""
    record = TensorSpecC()
    if not isinstance(spec, DetessTensorSpec):
        record.layout = _INVALID
        return record
    shape = integers_or_none(spec.shape)
    record.rank = -1 if shape is None else min(len(shape), 2**31 - 1)
    for axis, extent in enumerate((shape or [])[:MAX_RANK]):
        record.shape[axis] = extent if extent is not None and 0 <= extent <= INT64_MAX else -1
    record.dtype = _int32(spec.dtype, _INVALID)
    layout = spec.layout
    if layout is None:
        record.layout = LAYOUT_CONTIGUOUS
    elif isinstance(layout, Strided):
        record.layout = LAYOUT_STRIDED
        strides = integers_or_none(layout.strides) or []
        if shape is not None and len(strides) != len(shape):
            raise _StrideCount
        for axis, stride in enumerate(strides[:MAX_RANK]):
            if stride is None or not _INT64_MIN <= stride <= INT64_MAX:
                raise ValueError(f"stride {axis} = {stride!r} cannot be expressed in the C request")
            record.strides[axis] = stride
    elif isinstance(layout, MlaTiled):
        record.layout = LAYOUT_MLA_TILED
        record.padding = _int32(layout.padding, _INVALID)
        axes = integers_or_none(layout.axes)
        axes = axes if axes is not None and len(axes) == 4 else [-2] * 4
        for a, axis in enumerate(axes):
            record.axes[a] = _int32(axis, -2)
        tile = integers_or_none(layout.tile_shape)
        tile = tile if tile is not None and len(tile) == 4 else [0] * 4
        for a, extent in enumerate(tile):
            record.tile_shape[a] = extent if extent is not None and 1 <= extent <= INT64_MAX else 0
    else:
        record.layout = _INVALID
    return record


def _placeholder_strides(spec: Any) -> Any:
    """`spec` with one (zero) stride per axis when it is strided, else `spec`.

    Only used to learn C's answer to the rules checked before the strides,
    which do not depend on them; any answer from the stride checks on is
    reported as STRIDE_COUNT.
    """
    if not isinstance(spec, DetessTensorSpec) or not isinstance(spec.layout, Strided):
        return spec
    return DetessTensorSpec(spec.shape, spec.dtype, Strided((0,) * len(integers_or_none(spec.shape) or [])))


class _StrideCount(Exception):
    """A strided spec whose stride count differs from its rank (C's record cannot say so)."""


class CDetess:
    """The C kernel's check and execute, called through ctypes on a loaded libheliakernels."""

    def __init__(self, library: ctypes.CDLL) -> None:
        """Bind the Detess entry points of `library`; checks that the C structs match these ctypes records."""
        self.library = library
        library.helia_detess_check_inference.argtypes = [ctypes.POINTER(RequestC), ctypes.c_void_p]
        library.helia_detess_check_inference.restype = ctypes.c_int
        library.helia_detess_execute.argtypes = [
            ctypes.c_void_p,
            ctypes.POINTER(BufferC),
            ctypes.c_size_t,
            ctypes.POINTER(BufferC),
            ctypes.c_size_t,
        ]
        library.helia_detess_execute.restype = ctypes.c_int
        for name in ("helia_detess_plan_size", "helia_detess_tensor_spec_size"):
            getattr(library, name).argtypes = []
            getattr(library, name).restype = ctypes.c_size_t
        for name, result in (
            ("helia_detess_plan_input_bytes", ctypes.c_uint64),
            ("helia_detess_plan_output_bytes", ctypes.c_uint64),
            ("helia_detess_plan_input_alignment", ctypes.c_size_t),
            ("helia_detess_plan_output_alignment", ctypes.c_size_t),
            ("helia_detess_plan_row_path", ctypes.c_int32),
        ):
            getattr(library, name).argtypes = [ctypes.c_void_p]
            getattr(library, name).restype = result
        if library.helia_detess_tensor_spec_size() != ctypes.sizeof(TensorSpecC):
            raise RuntimeError("helia_detess_tensor_spec in the library does not match heliabuild's ctypes record")
        self.plan_size = int(library.helia_detess_plan_size())

    def _check(self, request: Request, replace_strides: bool) -> tuple[int, ctypes.Array]:
        inputs = list(request.inputs)
        outputs = list(request.outputs)
        if replace_strides:
            inputs = [_placeholder_strides(s) for s in inputs]
            outputs = [_placeholder_strides(s) for s in outputs]
        in_array = (TensorSpecC * max(len(inputs), 1))(*[_spec(s) for s in inputs])
        out_array = (TensorSpecC * max(len(outputs), 1))(*[_spec(s) for s in outputs])
        params = request.params
        record = RequestC(in_array, len(inputs), out_array, len(outputs), 0 if params is None else len(params))
        storage = (ctypes.c_uint8 * self.plan_size)()
        status = self.library.helia_detess_check_inference(ctypes.byref(record), storage)
        return int(status), storage

    def check_inference(self, request: Request) -> CPlan | Error:
        """The C admission of `request`: a `CPlan`, or an `Error` carrying the C status code."""
        try:
            status, storage = self._check(request, replace_strides=False)
        except _StrideCount:
            # Every check before the strides' is independent of them: ask C with placeholder strides, and
            # report the stride count where C would reach the strides (or would succeed).
            status, storage = self._check(request, replace_strides=True)
            if status == 0 or status >= ErrorCode.STRIDE_COUNT:
                status = ErrorCode.STRIDE_COUNT
        if status:
            code = ErrorCode(status)
            return Error(code, f"the C kernel refused the request: {code.name}")
        lib = self.library
        return CPlan(
            storage=storage,
            input_bytes=int(lib.helia_detess_plan_input_bytes(storage)),
            output_bytes=int(lib.helia_detess_plan_output_bytes(storage)),
            input_alignment=int(lib.helia_detess_plan_input_alignment(storage)),
            output_alignment=int(lib.helia_detess_plan_output_alignment(storage)),
            row_path="contiguous-channel" if lib.helia_detess_plan_row_path(storage) == 0 else "scattered-channel",
        )

    def execute(self, plan: CPlan | Any, inputs: Sequence[Any], outputs: Sequence[Any]) -> Error | None:
        """Run the C execution on the caller's buffers (no copy): None on success, else the C status as `Error`.

        A buffer that is not C-contiguous (or a read-only output) cannot be
        handed to C and is refused here with BINDING, before C is called.
        """
        arrays = []
        records = []
        for where, buffers, writable in (("input", inputs, False), ("output", outputs, True)):
            array = (BufferC * max(len(buffers), 1))()
            for index, buffer in enumerate(buffers):
                binding = as_binding(buffer, writable=writable, where=f"{where} binding {index}")
                if isinstance(binding, Error):
                    return binding
                arrays.append(binding.array)  # keeps the views alive during the call
                array[index].data = binding.address or None
                array[index].capacity = binding.capacity
            records.append(array)
        storage = plan.storage if isinstance(plan, CPlan) else (ctypes.c_uint8 * self.plan_size)()
        status = self.library.helia_detess_execute(storage, records[0], len(inputs), records[1], len(outputs))
        if status:
            code = ErrorCode(int(status))
            return Error(code, f"the C kernel refused the bindings: {code.name}")
        return None
