"""Lossless reading and writing of TFLite flatbuffers.

A model is read into the object API of the TFLite schema that ai-edge-litert
ships (`schema_py_generated`), so every field the schema knows survives a
read-modify-write: metadata, signature defs, shape signatures, sparsity,
variant sub-types, sub-graph fields and buffers stored outside the flatbuffer
(`Buffer.offset`/`size`, `Operator.large_custom_options_*`).

Reading is defensive: only a regular file of at most `MAX_MODEL_BYTES` is
read (never a FIFO or a device); the file identifier, every offset the object
API follows, every tensor, buffer and opcode index and every tensor's shape
(`check_tensor_shapes`) are checked, and a problem is a ModelError naming the
file, never an exception from inside flatbuffers or, later, from LiteRT.
"""

from __future__ import annotations

import copy
import os
import struct
from dataclasses import dataclass

import flatbuffers
import numpy as np
from ai_edge_litert import schema_py_generated as schema

from heliabuild.documents import read_regular_file, shown
from heliabuild.errors import ModelError
from heliabuild.files import sha256_bytes, write_atomic

FILE_IDENTIFIER = b"TFL3"
# Buffer data carries `force_align: 16` in the TFLite schema; the generated
# Python Pack ignores it, so buffers are packed here with that alignment.
BUFFER_ALIGNMENT = 16
# Offsets of data stored after the flatbuffer are valid only above 1 (schema.fbs).
_FIRST_VALID_EXTERNAL_OFFSET = 2
# Generous bytes per tensor or operator table (with its name and vectors)
# when sizing the flatbuffer builder up front.
_TABLE_BYTES_ESTIMATE = 1024

MAX_MODEL_BYTES = 1 << 31
"""The largest model file read (2 GiB): as far as a flatbuffer's signed 32-bit offsets reach, and far above
any model an Ethos-U target holds."""
MAX_CONSTANT_BYTES = MAX_MODEL_BYTES
"""The most bytes a tensor with data in its buffer may declare: its data lies in the file."""
MAX_ACTIVATION_BYTES = 1 << 32
"""The most bytes any other tensor may declare (4 GiB): the 32-bit address space of an Ethos-U target."""
_INT64_MAX = (1 << 63) - 1
_TT = schema.TensorType
# Bits per element of each tensor type whose elements have a fixed size (not STRING, RESOURCE, VARIANT).
_ELEMENT_BITS: dict[int, int] = {
    _TT.FLOAT32: 32,
    _TT.FLOAT16: 16,
    _TT.INT32: 32,
    _TT.UINT8: 8,
    _TT.INT64: 64,
    _TT.BOOL: 8,
    _TT.INT16: 16,
    _TT.COMPLEX64: 64,
    _TT.INT8: 8,
    _TT.FLOAT64: 64,
    _TT.COMPLEX128: 128,
    _TT.UINT64: 64,
    _TT.UINT32: 32,
    _TT.UINT16: 16,
    _TT.INT4: 4,
    _TT.BFLOAT16: 16,
    _TT.INT2: 2,
    _TT.UINT4: 4,
    _TT.FLOAT8_E4M3FN: 8,
    _TT.FLOAT8_E5M2: 8,
}

# Data that lay after the flatbuffer in the file hangs off the BufferT or
# OperatorT that pointed at it under this attribute, and is written back the
# same way; an attribute (not a side table) survives copies and index shifts.
_EXTERNAL_DATA = "heliabuild_external_data"


def external_data(owner: object) -> np.ndarray | None:
    """The bytes a BufferT or OperatorT stored after the flatbuffer, if any."""
    return getattr(owner, _EXTERNAL_DATA, None)


@dataclass(eq=False)
class Model:
    """A TFLite model held as the schema's object tree.

    `root` is the `ModelT` to read and edit. `name` names the model in
    messages (its file name, or `<bytes>`). `source_sha256` is the SHA-256 of
    the exact bytes it was read from, or None for a model built in memory.
    """

    root: schema.ModelT
    name: str = "<memory>"
    source_sha256: str | None = None

    @property
    def subgraphs(self) -> list[schema.SubGraphT]:
        return self.root.subgraphs or []

    @property
    def buffers(self) -> list[schema.BufferT]:
        if self.root.buffers is None:
            self.root.buffers = []
        return self.root.buffers

    @property
    def operator_codes(self) -> list[schema.OperatorCodeT]:
        if self.root.operatorCodes is None:
            self.root.operatorCodes = []
        return self.root.operatorCodes

    def buffer_data(self, index: int) -> np.ndarray | None:
        """The bytes of buffer `index` wherever they are stored, or None when it is empty."""
        buffer = self.buffers[index]
        stored_outside = external_data(buffer)
        if stored_outside is not None:
            return stored_outside
        if buffer.data is None or len(buffer.data) == 0:
            return None
        return np.asarray(buffer.data, dtype=np.uint8)


OFFLINE_ALLOCATION = b"OfflineMemoryAllocation"
"""Vela's metadata entry: a version, a subgraph and a count, then one arena offset per tensor (-1: none)."""


def offline_allocation(model: Model) -> tuple[schema.MetadataT, list[int]] | None:
    """The OfflineMemoryAllocation metadata entry of `model` and its values, or None when it has none; the
    values are [] when the buffer is not whole int32 words (the caller says why that is wrong)."""
    for metadata in model.root.metadata or []:
        name = metadata.name.encode() if isinstance(metadata.name, str) else metadata.name
        if name != OFFLINE_ALLOCATION:
            continue
        data = model.buffer_data(metadata.buffer)
        values = [] if data is None or len(data) % 4 else np.frombuffer(bytes(data), dtype="<i4").tolist()
        return metadata, values
    return None


class _BoundedBytes(bytearray):
    """File bytes whose slices raise instead of silently stopping at the end.

    The flatbuffers runtime reads strings by slicing; a slice past the end of
    a truncated file would otherwise come back short without complaint.
    """

    def __getitem__(self, key):  # type: ignore[override]
        if isinstance(key, slice) and key.stop is not None and key.stop > len(self):
            raise IndexError(f"read of bytes {key.start}..{key.stop} past the end ({len(self)})")
        return super().__getitem__(key)


def load_model(
    source: str | os.PathLike[str] | bytes | bytearray | memoryview | Model, *, name: str | None = None
) -> Model:
    """Read a TFLite model from a path or bytes; a Model is returned as it is.

    `name` names the model in messages and in `Model.name` (default: the path, or `<bytes>`). A path must
    be a regular file of at most MAX_MODEL_BYTES. Raises ModelError naming the model for a file that
    cannot be read, a corrupt flatbuffer, an index out of range or a tensor shape `check_tensor_shapes`
    refuses.
    """
    if isinstance(source, Model):
        return source
    if isinstance(source, bytes | bytearray | memoryview):
        return _parse(_BoundedBytes(source), "<bytes>" if name is None else name)
    data = read_regular_file(source, "model", error=ModelError, limit=MAX_MODEL_BYTES)
    return _parse(_BoundedBytes(data), str(source) if name is None else name)


def _parse(data: _BoundedBytes, name: str) -> Model:
    size = len(data)
    if size < 8:
        raise ModelError(f"{name}: not a TFLite model: {size} bytes is too short for a flatbuffer")
    identifier = bytes(data[4:8])
    if identifier != FILE_IDENTIFIER:
        raise ModelError(f"{name}: not a TFLite model: file identifier is {identifier!r}, expected {FILE_IDENTIFIER!r}")
    (root_offset,) = struct.unpack_from("<I", data, 0)
    if root_offset + 4 > size:
        raise ModelError(
            f"{name}: corrupt flatbuffer: root table offset {root_offset} lies outside the {size}-byte file"
        )
    try:
        root = schema.ModelT.InitFromPackedBuf(data, 0)
    except (
        struct.error,
        IndexError,
        ValueError,
        TypeError,
        OverflowError,
        RecursionError,
        UnicodeDecodeError,
    ) as error:
        raise ModelError(
            f"{name}: corrupt or truncated flatbuffer: an offset lies outside the {size}-byte file ({error})"
        ) from None
    model = Model(root=root, name=name, source_sha256=sha256_bytes(data))
    _resolve_external_data(model, data)
    check_indices(model)
    check_tensor_shapes(model)
    return model


def _resolve_external_data(model: Model, data: _BoundedBytes) -> None:
    size = len(data)
    view = np.frombuffer(data, dtype=np.uint8)
    for index, buffer in enumerate(model.buffers):
        if buffer.offset >= _FIRST_VALID_EXTERNAL_OFFSET:
            if buffer.offset + buffer.size > size:
                raise ModelError(
                    f"{model.name}: buffer {index} stores {buffer.size} bytes at offset {buffer.offset}, "
                    f"outside the {size}-byte file"
                )
            setattr(buffer, _EXTERNAL_DATA, view[buffer.offset : buffer.offset + buffer.size])
    for subgraph_index, subgraph in enumerate(model.subgraphs):
        for op_index, op in enumerate(subgraph.operators or []):
            if op.largeCustomOptionsOffset >= _FIRST_VALID_EXTERNAL_OFFSET:
                start, length = op.largeCustomOptionsOffset, op.largeCustomOptionsSize
                if start + length > size:
                    raise ModelError(
                        f"{model.name}: subgraph {subgraph_index} operator {op_index} stores {length} bytes "
                        f"of custom options at offset {start}, outside the {size}-byte file"
                    )
                setattr(op, _EXTERNAL_DATA, view[start : start + length])


def check_indices(model: Model) -> None:
    """Raise ModelError unless every tensor, buffer, opcode and subgraph index is in range."""
    name = model.name
    if not model.subgraphs:
        raise ModelError(f"{name}: the model has no subgraph")
    n_buffers = len(model.buffers)
    n_codes = len(model.operator_codes)
    for s, subgraph in enumerate(model.subgraphs):
        tensors = subgraph.tensors or []
        n_tensors = len(tensors)
        for t, tensor in enumerate(tensors):
            if not 0 <= tensor.buffer < max(n_buffers, 1):
                raise ModelError(
                    f"{name}: subgraph {s} tensor {t} ({_text(tensor.name)!r}) refers to buffer "
                    f"{tensor.buffer}, but the model has {n_buffers} buffers"
                )
        for role, indices in (("input", subgraph.inputs), ("output", subgraph.outputs)):
            for value in _ints(indices):
                if not 0 <= value < n_tensors:
                    raise ModelError(
                        f"{name}: subgraph {s} graph {role} refers to tensor {value}, "
                        f"but the subgraph has {n_tensors} tensors"
                    )
        for o, op in enumerate(subgraph.operators or []):
            if not 0 <= op.opcodeIndex < n_codes:
                raise ModelError(
                    f"{name}: subgraph {s} operator {o} uses opcode index {op.opcodeIndex}, "
                    f"but the model has {n_codes} operator codes"
                )
            for role, indices in (("input", op.inputs), ("output", op.outputs), ("intermediate", op.intermediates)):
                for value in _ints(indices):
                    if not -1 <= value < n_tensors or (value == -1 and role != "input"):
                        raise ModelError(
                            f"{name}: subgraph {s} operator {o} {role} refers to tensor {value}, "
                            f"but the subgraph has {n_tensors} tensors"
                        )
    for m, metadata in enumerate(model.root.metadata or []):
        if not 0 <= metadata.buffer < n_buffers:
            raise ModelError(
                f"{name}: metadata {m} ({_text(metadata.name)!r}) refers to buffer {metadata.buffer}, "
                f"but the model has {n_buffers} buffers"
            )
    for d, signature in enumerate(model.root.signatureDefs or []):
        if not 0 <= signature.subgraphIndex < len(model.subgraphs):
            raise ModelError(
                f"{name}: signature def {d} refers to subgraph {signature.subgraphIndex}, "
                f"but the model has {len(model.subgraphs)} subgraphs"
            )
        n_tensors = len(model.subgraphs[signature.subgraphIndex].tensors or [])
        for entry in (signature.inputs or []) + (signature.outputs or []):
            if not 0 <= entry.tensorIndex < n_tensors:
                raise ModelError(
                    f"{name}: signature def {d} entry {_text(entry.name)!r} refers to tensor "
                    f"{entry.tensorIndex}, but subgraph {signature.subgraphIndex} has {n_tensors} tensors"
                )


def check_tensor_shapes(model: Model) -> None:
    """Raise ModelError, naming the tensor and its shape, for the first tensor of any subgraph whose

    - `shape` or `shape_signature` has an extent below -1 (-1 marks an unknown extent);
    - known extents multiply to more elements than a 64-bit integer counts;
    - `shape` declares more bytes than MAX_CONSTANT_BYTES (a tensor with data in its buffer) or
      MAX_ACTIVATION_BYTES (any other tensor of a type with fixed-size elements).
    """
    for s, subgraph in enumerate(model.subgraphs):
        for t, tensor in enumerate(subgraph.tensors or []):
            for field, values in (("shape", tensor.shape), ("shape_signature", tensor.shapeSignature)):
                extents = _ints(values)
                count = 1
                for extent in extents:
                    if extent < -1:
                        raise _shape_error(model, s, t, tensor, field, extents, f"extent {extent} is negative")
                    if extent >= 0:
                        count *= extent
                if count > _INT64_MAX:
                    raise _shape_error(model, s, t, tensor, field, extents, "its element count overflows 64 bits")
                bits = _ELEMENT_BITS.get(int(tensor.type))
                if field == "shape" and bits is not None:
                    _check_tensor_bytes(model, s, t, tensor, extents, count, bits)


def _check_tensor_bytes(
    model: Model, s: int, t: int, tensor: schema.TensorT, extents: list[int], count: int, bits: int
) -> None:
    size = (count * bits + 7) // 8
    if 0 <= tensor.buffer < len(model.buffers) and model.buffer_data(tensor.buffer) is not None:
        bound, kind = MAX_CONSTANT_BYTES, "a constant (its data lies in the model file, at most 2 GiB)"
    else:
        bound, kind = MAX_ACTIVATION_BYTES, "a tensor without data (the 32-bit address space of an Ethos-U target)"
    if size > bound:
        problem = f"{count} elements of {bits} bits take {size} bytes, more than the {bound} bytes admitted for {kind}"
        raise _shape_error(model, s, t, tensor, "shape", extents, problem)


def _shape_error(
    model: Model, s: int, t: int, tensor: schema.TensorT, field: str, extents: list[int], problem: str
) -> ModelError:
    return ModelError(
        f"{model.name}: subgraph {s} tensor {t} ({shown(_text(tensor.name))}) has {field} {shown(extents)}: {problem}"
    )


def _ints(values: object) -> list[int]:
    return [] if values is None else [int(v) for v in values]  # type: ignore[union-attr]


def _text(value: str | bytes | None) -> str:
    if value is None:
        return ""
    return value.decode("utf-8", errors="replace") if isinstance(value, bytes) else value


def serialize(model: Model) -> bytearray:
    """The model's bytes: a TFL3 flatbuffer, followed by external data if the source had any."""
    check_indices(model)
    aligned = _AlignedBufferPacking(model)
    with aligned:
        owners = _external_data_owners(model)
        if not owners:
            return _pack(model.root, aligned.estimated_size(model))
        return _pack_with_external_data(model, owners, aligned.estimated_size(model))


def copy_model(model: Model) -> Model:
    """A deep copy of the object tree that shares the (read-only) buffer payloads."""
    memo: dict[int, object] = {}
    for buffer in model.buffers:
        for payload in (buffer.data, external_data(buffer)):
            if isinstance(payload, np.ndarray):
                memo[id(payload)] = payload
    for subgraph in model.subgraphs:
        for op in subgraph.operators or []:
            payload = external_data(op)
            if payload is not None:
                memo[id(payload)] = payload
    return Model(root=copy.deepcopy(model.root, memo), name=model.name, source_sha256=model.source_sha256)


def save_model(model: Model, path: str | os.PathLike[str]) -> None:
    """Write the model atomically to `path`."""
    write_atomic(path, serialize(model))


def model_sha256(source: str | os.PathLike[str] | bytes | bytearray | memoryview | Model) -> str:
    """SHA-256 of the model's bytes: as read for a path, bytes or loaded model, as
    serialized for a model built in memory."""
    if isinstance(source, Model):
        return source.source_sha256 or sha256_bytes(serialize(source))
    if isinstance(source, bytes | bytearray | memoryview):
        return sha256_bytes(source)
    from heliabuild.files import sha256_file

    try:
        return sha256_file(source)
    except OSError as error:
        raise ModelError(f"{source}: cannot read the model: {error.strerror or error}") from None


def _pack(root: schema.ModelT, capacity: int) -> bytearray:
    builder = flatbuffers.Builder(capacity)
    builder.Finish(root.Pack(builder), file_identifier=FILE_IDENTIFIER)
    return _finished_bytes(builder)


def _finished_bytes(builder: flatbuffers.Builder) -> bytearray:
    head = builder.Head()
    if head == 0:
        return builder.Bytes
    # Drop the unused front of the builder without keeping two full copies.
    data = builder.Bytes
    del data[:head]
    return data


def _external_data_owners(model: Model) -> list[tuple[object, str, str, np.ndarray]]:
    owners: list[tuple[object, str, str, np.ndarray]] = []
    for buffer in model.buffers:
        blob = external_data(buffer)
        if blob is not None:
            owners.append((buffer, "offset", "size", blob))
    for subgraph in model.subgraphs:
        for op in subgraph.operators or []:
            blob = external_data(op)
            if blob is not None:
                owners.append((op, "largeCustomOptionsOffset", "largeCustomOptionsSize", blob))
    return owners


def _pack_with_external_data(
    model: Model, owners: list[tuple[object, str, str, np.ndarray]], capacity: int
) -> bytearray:
    """Pack a model whose data lies after the flatbuffer, with offsets recomputed.

    The flatbuffer is packed once with placeholder offsets to learn its size
    (offset fields are fixed-width, so the real values do not change it), then
    again with each blob placed at the next 16-byte boundary after it.
    """
    for owner, offset_field, size_field, blob in owners:
        setattr(owner, offset_field, _FIRST_VALID_EXTERNAL_OFFSET)
        setattr(owner, size_field, len(blob))
    flat_size = len(_pack(model.root, capacity))
    layout: list[tuple[int, np.ndarray]] = []
    position = flat_size
    for owner, offset_field, _size_field, blob in owners:
        position = _align(position, BUFFER_ALIGNMENT)
        setattr(owner, offset_field, position)
        layout.append((position, blob))
        position += len(blob)
    output = _pack(model.root, capacity)
    if len(output) != flat_size:
        raise AssertionError("flatbuffer size changed between the two packing passes")
    output.extend(bytes(position - flat_size))
    for start, blob in layout:
        output[start : start + len(blob)] = blob.tobytes()
    return output


def _align(value: int, alignment: int) -> int:
    return (value + alignment - 1) // alignment * alignment


class _AlignedBuffer(schema.BufferT):
    """BufferT whose data vector is packed with the schema's 16-byte alignment."""

    def Pack(self, builder: flatbuffers.Builder) -> int:
        data_offset = None
        if self.data is not None:
            payload = np.ascontiguousarray(self.data, dtype=np.uint8)
            builder.StartVector(1, payload.size, BUFFER_ALIGNMENT)
            builder.head -= payload.size
            builder.Bytes[builder.head : builder.head + payload.size] = payload.data
            data_offset = builder.EndVector()
        schema.BufferStart(builder)
        if data_offset is not None:
            schema.BufferAddData(builder, data_offset)
        schema.BufferAddOffset(builder, self.offset)
        schema.BufferAddSize(builder, self.size)
        return schema.BufferEnd(builder)


class _AlignedBufferPacking:
    """Context in which the model's buffers pack with 16-byte alignment.

    Inside it every BufferT of the model is an _AlignedBuffer; the classes are
    restored on exit so callers keep plain schema objects.
    """

    def __init__(self, model: Model) -> None:
        self._buffers = model.buffers
        self._classes: list[type] = []
        self.payload_bytes = 0

    def __enter__(self) -> _AlignedBufferPacking:
        for buffer in self._buffers:
            self._classes.append(type(buffer))
            if type(buffer) is schema.BufferT:
                buffer.__class__ = _AlignedBuffer
            if buffer.data is not None:
                self.payload_bytes += len(buffer.data) + BUFFER_ALIGNMENT
        return self

    def estimated_size(self, model: Model) -> int:
        """Builder capacity that avoids regrowth (which would double the peak memory)."""
        tables = sum(len(g.tensors or []) + len(g.operators or []) for g in model.subgraphs)
        return self.payload_bytes + _TABLE_BYTES_ESTIMATE * tables + (1 << 16)

    def __exit__(self, *exc_info: object) -> None:
        for buffer, cls in zip(self._buffers, self._classes, strict=True):
            buffer.__class__ = cls
