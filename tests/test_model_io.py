"""Lossless TFLite IO: round trips lose nothing, corrupt files give ModelError naming the file."""

from __future__ import annotations

import hashlib
import re
import struct
from pathlib import Path

import numpy as np
import pytest
from ai_edge_litert import schema_py_generated as schema
from helpers.checks import assert_not_written, assert_one_line_error
from helpers.paths import KWS, RESNET, SHARED_MODELS, shared_models_present
from helpers.skips import require
from helpers.tflite import OP, Net, T, chain, pack_unchecked, quantization, tensor_map
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from heliabuild.errors import ModelError
from heliabuild.model import load_model, model_sha256, save_model, serialize
from heliabuild.model.compare import differences
from heliabuild.synth import KINDS, int8_network, synthesize

SMALL_KINDS = sorted(kind for kind in KINDS if kind != "large")


def assert_lossless(original: bytes | Path) -> bytes:
    """load(original) and load(serialize(load(original))) agree field by field; serializing is stable."""
    first = load_model(original)
    once = bytes(serialize(first))
    second = load_model(once)
    assert differences(first.root, second.root) == []
    assert bytes(serialize(second)) == once
    assert bytes(serialize(first)) == once
    return once


def buffer_data_starts(data: bytes) -> list[tuple[int, int, int]]:
    """(buffer index, start of its inline data, length) for every buffer with inline data."""
    root = schema.Model.GetRootAs(data, 0)
    base = np.frombuffer(data, dtype=np.uint8).ctypes.data
    found = []
    for index in range(root.BuffersLength()):
        buffer = root.Buffers(index)
        if buffer.DataLength() > 0:
            found.append((index, buffer.DataAsNumpy().ctypes.data - base, buffer.DataLength()))
    return found


# ---------------------------------------------------------------- round trips


def test_shared_model_round_trip_is_lossless(shared_model_path: Path) -> None:
    assert_lossless(shared_model_path)
    assert_lossless(shared_model_path.read_bytes())


@pytest.mark.parametrize("kind", SMALL_KINDS)
def test_synthetic_model_round_trip_is_lossless(kind: str) -> None:
    model = synthesize(kind, 1)
    once = assert_lossless(bytes(serialize(model)))
    assert differences(model.root, load_model(once).root) == []


@pytest.mark.parametrize("seed", range(6))
def test_random_network_round_trip_is_lossless(seed: int) -> None:
    assert_lossless(bytes(serialize(int8_network(seed))))


@pytest.mark.slow
def test_large_model_round_trip_is_lossless() -> None:
    model = synthesize("large", 0)
    once = bytes(serialize(model))
    again = load_model(once)
    # A field-by-field walk of 50 MB of weights is slow; the structure is compared without them.
    assert bytes(serialize(again)) == once
    for index, buffer in enumerate(model.buffers):
        expected = model.buffer_data(index)
        if expected is not None:
            assert np.array_equal(again.buffer_data(index), expected)
        buffer.data = None
        again.buffers[index].data = None
    assert differences(model.root, again.root) == []


def test_shared_model_keeps_metadata_and_shape_signature(shared_model_path: Path) -> None:
    original = load_model(shared_model_path)
    again = load_model(bytes(serialize(original)))
    assert [m.name for m in again.root.metadata] == [b"min_runtime_version"]
    meta_buffer = again.root.metadata[0].buffer
    assert bytes(again.buffer_data(meta_buffer)) == bytes(original.buffer_data(original.root.metadata[0].buffer))
    subgraph = again.subgraphs[0]
    signature = subgraph.tensors[subgraph.inputs[0]].shapeSignature
    assert [int(d) for d in signature] == [-1, *list(subgraph.tensors[subgraph.inputs[0]].shape)[1:]]


def test_synthetic_model_keeps_signature_def() -> None:
    model = synthesize("residual", 0)
    again = load_model(bytes(serialize(model)))
    (signature,) = again.root.signatureDefs
    assert signature.signatureKey == b"serving_default"
    expected = model.root.signatureDefs[0]
    assert [(e.name, e.tensorIndex) for e in signature.outputs] == [
        (e.name.encode(), e.tensorIndex) for e in expected.outputs
    ]
    assert [(e.name, e.tensorIndex) for e in signature.inputs] == [
        (e.name.encode(), e.tensorIndex) for e in expected.inputs
    ]


def rich_root() -> schema.ModelT:
    """A model using the rarer parts of the schema: sparsity, variant sub-types, custom options, ..."""
    net = chain(2)
    root = net.root([0], [len(net.tensors) - 1], subgraph_name="rich subgraph")

    sparse = schema.TensorT()
    sparse.name = "sparse_weights"
    sparse.shape = [4, 4]
    sparse.type = T.INT8
    sparse.buffer = net.buffer(bytes([1, 2, 3, 4, 5]))
    sparsity = schema.SparsityParametersT()
    sparsity.traversalOrder = [0, 1]
    sparsity.blockMap = [1]
    dense = schema.DimensionMetadataT()
    dense.format = schema.DimensionType.DENSE
    dense.denseSize = 4
    csr = schema.DimensionMetadataT()
    csr.format = schema.DimensionType.SPARSE_CSR
    csr.arraySegmentsType = schema.SparseIndexVector.Int32Vector
    csr.arraySegments = schema.Int32VectorT()
    csr.arraySegments.values = [0, 2, 3, 4, 5]
    csr.arrayIndicesType = schema.SparseIndexVector.Uint16Vector
    csr.arrayIndices = schema.Uint16VectorT()
    csr.arrayIndices.values = [0, 3, 1, 2, 0]
    sparsity.dimMetadata = [dense, csr]
    sparse.sparsity = sparsity
    net.tensors.append(sparse)

    variant = schema.TensorT()
    variant.name = "variant_list"
    variant.shape = []
    variant.type = T.VARIANT
    variant.buffer = net.buffer()
    subtype = schema.VariantSubTypeT()
    subtype.shape = [2, 3]
    subtype.type = T.FLOAT32
    subtype.hasRank = True
    variant.variantTensors = [subtype]
    variant.hasRank = True
    net.tensors.append(variant)

    per_axis = net.tensors[1]
    per_axis.quantization = quantization(scale=(0.25, 0.5, 0.125), zero_point=(0, 0, 0), axis=3)
    per_axis.quantization.min = [-1.0]
    per_axis.quantization.max = [1.0]
    net.tensors[0].shapeSignature = [-1, 2, 2, 3]

    custom = schema.OperatorCodeT()
    custom.builtinCode = OP.CUSTOM
    custom.deprecatedBuiltinCode = OP.CUSTOM
    custom.customCode = "MyCustomOp"
    custom.version = 1
    root.operatorCodes.append(custom)
    op = schema.OperatorT()
    op.opcodeIndex = len(root.operatorCodes) - 1
    op.inputs = [len(net.tensors) - 2]
    op.outputs = [len(net.tensors) - 1]
    op.customOptions = [1, 2, 3, 250]
    op.customOptionsFormat = schema.CustomOptionsFormat.FLEXBUFFERS
    op.intermediates = [1]
    root.subgraphs[0].operators.append(op)
    options = schema.AddOptionsT()
    options.fusedActivationFunction = schema.ActivationFunctionType.RELU
    root.subgraphs[0].operators[0].builtinOptionsType = schema.BuiltinOptions.AddOptions
    root.subgraphs[0].operators[0].builtinOptions = options

    second = schema.MetadataT()
    second.name = "extra"
    second.buffer = net.buffer(b"\x00\x01\x02")
    root.metadata.append(second)
    root.buffers = net.buffers
    signature = schema.SignatureDefT()
    signature.signatureKey = "other"
    signature.subgraphIndex = 0
    signature.inputs = [tensor_map("x", 0)]
    signature.outputs = [tensor_map("y", 2), tensor_map("z", 4)]
    root.signatureDefs.append(signature)
    return root


def test_rare_schema_fields_survive_save_and_load(tmp_path: Path) -> None:
    root = rich_root()
    from heliabuild.model import Model

    path = tmp_path / "rich.tflite"
    save_model(Model(root=root), path)
    loaded = load_model(path)
    assert differences(root, loaded.root) == []

    subgraph = loaded.subgraphs[0]
    assert subgraph.name == b"rich subgraph"
    sparse = subgraph.tensors[-2]
    assert list(sparse.sparsity.traversalOrder) == [0, 1]
    assert list(sparse.sparsity.blockMap) == [1]
    csr = sparse.sparsity.dimMetadata[1]
    assert csr.format == schema.DimensionType.SPARSE_CSR
    assert csr.arraySegmentsType == schema.SparseIndexVector.Int32Vector
    assert list(csr.arraySegments.values) == [0, 2, 3, 4, 5]
    assert csr.arrayIndicesType == schema.SparseIndexVector.Uint16Vector
    assert list(csr.arrayIndices.values) == [0, 3, 1, 2, 0]
    variant = subgraph.tensors[-1]
    assert variant.type == T.VARIANT
    assert [(list(v.shape), v.type, v.hasRank) for v in variant.variantTensors] == [([2, 3], T.FLOAT32, True)]
    assert subgraph.tensors[1].quantization.quantizedDimension == 3
    assert list(subgraph.tensors[0].shapeSignature) == [-1, 2, 2, 3]
    assert [bytes(m.name) for m in loaded.root.metadata] == [b"min_runtime_version", b"extra"]
    assert bytes(loaded.buffer_data(loaded.root.metadata[1].buffer)) == b"\x00\x01\x02"
    assert [s.signatureKey for s in loaded.root.signatureDefs] == [b"serving_default", b"other"]
    assert list(subgraph.operators[-1].customOptions) == [1, 2, 3, 250]
    assert subgraph.operators[0].builtinOptions.fusedActivationFunction == schema.ActivationFunctionType.RELU
    again = bytes(serialize(loaded))
    assert again == path.read_bytes()


# ---------------------------------------------------------------- data stored after the flatbuffer

_SENTINEL = 0x0123456789ABC000


def external_data_file(misalign: int = 3) -> tuple[bytes, dict[int, bytes]]:
    """A model whose two constant buffers lie after the flatbuffer (as in models over 2 GB).

    The flatbuffer is packed with sentinel offsets, the data is appended at
    positions that are deliberately not 16-byte aligned, and the sentinels
    are patched with the real offsets.
    """
    net = chain(3)
    root = net.root([0], [len(net.tensors) - 1])
    blobs: dict[int, bytes] = {}
    for number, tensor_index in enumerate((1, 3)):
        buffer = root.buffers[net.tensors[tensor_index].buffer]
        blob = bytes(range(7 + 13 * number, 7 + 13 * number + 12 + number * 5))
        buffer.data = None
        buffer.offset = _SENTINEL + number
        buffer.size = len(blob)
        blobs[net.tensors[tensor_index].buffer] = blob
    data = bytearray(pack_unchecked(root))
    for number, (_, blob) in enumerate(blobs.items()):
        data.extend(bytes(misalign + number))
        if len(data) % 16 == 0:
            data.append(0)
        position = len(data)
        sentinel = struct.pack("<Q", _SENTINEL + number)
        assert data.count(sentinel) == 1
        at = data.index(sentinel)
        data[at : at + 8] = struct.pack("<Q", position)
        data.extend(blob)
    return bytes(data), blobs


def test_buffers_after_the_flatbuffer_round_trip_with_data_and_aligned_offsets(tmp_path: Path) -> None:
    data, blobs = external_data_file()
    path = tmp_path / "external.tflite"
    path.write_bytes(data)
    model = load_model(path)
    for index, blob in blobs.items():
        assert model.buffers[index].offset > 1
        assert model.buffers[index].offset % 16 != 0
        assert bytes(model.buffer_data(index)) == blob

    out = bytes(serialize(model))
    root = schema.Model.GetRootAs(out, 0)
    for index, blob in blobs.items():
        offset, size = root.Buffers(index).Offset(), root.Buffers(index).Size()
        assert offset > 1 and offset % 16 == 0
        assert size == len(blob)
        assert out[offset : offset + size] == blob
        assert root.Buffers(index).DataLength() == 0

    again = load_model(out)
    assert differences(model.root, again.root) == []
    assert bytes(serialize(again)) == out
    for index, blob in blobs.items():
        assert bytes(again.buffer_data(index)) == blob


def test_buffer_data_outside_the_file_is_a_model_error(tmp_path: Path) -> None:
    data, _ = external_data_file()
    path = tmp_path / "cut.tflite"
    path.write_bytes(data[:-4])
    with pytest.raises(ModelError, match=re.escape(str(path))):
        load_model(path)


def test_inline_buffer_data_is_16_byte_aligned(shared_model_path: Path) -> None:
    out = bytes(serialize(load_model(shared_model_path)))
    starts = buffer_data_starts(out)
    assert starts
    assert all(start % 16 == 0 for _, start, _ in starts), starts


@pytest.mark.parametrize("kind", ["chain", "residual", "div_f16"])
def test_inline_buffer_data_of_synthetic_models_is_16_byte_aligned(kind: str) -> None:
    out = bytes(serialize(synthesize(kind, 2)))
    starts = buffer_data_starts(out)
    assert starts
    assert all(start % 16 == 0 for _, start, _ in starts), starts


def test_odd_sized_buffers_are_each_aligned() -> None:
    net = Net()
    for size in (1, 3, 17, 33):
        net.tensor(f"c{size}", shape=(size,), data=bytes(range(size)))
    net.tensor("x", shape=(1,))
    net.op(OP.ADD, [0, 1], [4])
    from heliabuild.model import Model

    out = bytes(serialize(Model(root=net.root([0], [4]))))
    starts = buffer_data_starts(out)
    assert len(starts) == 5  # four constants and the metadata buffer
    assert all(start % 16 == 0 for _, start, _ in starts)
    again = load_model(out)
    assert [bytes(again.buffer_data(i)) for i in (1, 2, 3, 4)] == [bytes(range(n)) for n in (1, 3, 17, 33)]


# ---------------------------------------------------------------- corrupt input


def write(tmp_path: Path, data: bytes, name: str = "bad.tflite") -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


def test_empty_file_is_a_model_error_naming_the_file(tmp_path: Path) -> None:
    path = write(tmp_path, b"")
    with pytest.raises(ModelError) as caught:
        load_model(path)
    assert caught.value.message.startswith(f"{path}:")
    assert "0 bytes" in caught.value.message


def test_seven_bytes_is_a_model_error(tmp_path: Path) -> None:
    path = write(tmp_path, b"\x08\x00\x00\x00TFL")
    with pytest.raises(ModelError, match="7 bytes"):
        load_model(path)


def test_wrong_file_identifier_is_a_model_error(tmp_path: Path, kws_path: Path) -> None:
    data = bytearray(kws_path.read_bytes())
    data[4:8] = b"ABCD"
    path = write(tmp_path, bytes(data))
    with pytest.raises(ModelError) as caught:
        load_model(path)
    assert caught.value.message.startswith(f"{path}:")
    assert "ABCD" in caught.value.message and "TFL3" in caught.value.message


def test_missing_file_is_a_model_error_naming_it(tmp_path: Path) -> None:
    path = tmp_path / "nowhere" / "model.tflite"
    with pytest.raises(ModelError) as caught:
        load_model(path)
    assert caught.value.message.startswith(f"{path}:")
    with pytest.raises(ModelError, match=r"model\.tflite"):
        model_sha256(path)


def test_folder_instead_of_model_is_a_model_error(tmp_path: Path) -> None:
    with pytest.raises(ModelError, match=re.escape(str(tmp_path))):
        load_model(tmp_path)


def test_every_97th_truncation_is_a_model_error(shared_model_path: Path) -> None:
    data = shared_model_path.read_bytes()
    for length in range(0, len(data), 97):
        try:
            load_model(data[:length])
        except ModelError as error:
            assert error.message.startswith("<bytes>:")
        else:
            pytest.fail(f"a model truncated to {length} of {len(data)} bytes loaded without error")


def test_truncated_file_error_names_the_file(tmp_path: Path, resnet_path: Path) -> None:
    data = resnet_path.read_bytes()
    for length in (8, 100, len(data) // 2, len(data) - 1):
        path = write(tmp_path, data[:length], f"cut{length}.tflite")
        with pytest.raises(ModelError) as caught:
            load_model(path)
        assert caught.value.message.startswith(f"{path}:")


def test_every_97th_truncation_of_a_synthetic_model_is_a_model_error() -> None:
    data = bytes(serialize(synthesize("residual", 0)))
    for length in range(0, len(data), 97):
        with pytest.raises(ModelError):
            load_model(data[:length])


def load_or_model_error(data: bytes) -> None:
    try:
        model = load_model(data)
    except ModelError as error:
        assert error.message.startswith("<bytes>:")
        return
    serialize(model)  # whatever loads must also write


_FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.fixture(scope="module")
def fuzz_sources(synth_models: Path) -> list[bytes]:
    """The shared models where present, and synthetic ones always."""
    sources = [(synth_models / name).read_bytes() for name in ("synth_chain.tflite", "synth_residual.tflite")]
    if shared_models_present():
        sources += [(SHARED_MODELS / KWS).read_bytes(), (SHARED_MODELS / RESNET).read_bytes()]
    return sources


@_FUZZ
@given(which=st.integers(0, 3), fraction=st.floats(0.0, 1.0, exclude_max=True))
def test_random_truncation_is_a_model_error(fuzz_sources: list[bytes], which: int, fraction: float) -> None:
    data = fuzz_sources[which % len(fuzz_sources)]
    with pytest.raises(ModelError):
        load_model(data[: int(len(data) * fraction)])


@_FUZZ
@given(
    which=st.integers(0, 3),
    flips=st.lists(st.tuples(st.floats(0.0, 1.0, exclude_max=True), st.integers(0, 255)), min_size=1, max_size=8),
    head=st.booleans(),
)
def test_random_byte_flips_give_model_error_or_a_model(
    fuzz_sources: list[bytes], which: int, flips: list[tuple[float, int]], head: bool
) -> None:
    data = bytearray(fuzz_sources[which % len(fuzz_sources)])
    # Half of the examples flip bytes in the first 2 KiB, where the tables and vtables lie.
    span = min(len(data), 2048) if head else len(data)
    for where, value in flips:
        data[int(where * span)] = value
    load_or_model_error(bytes(data))


def corrupt(tmp_path: Path, edit) -> Path:
    net = chain(3)
    root = net.root([0], [len(net.tensors) - 1])
    edit(root)
    return write(tmp_path, pack_unchecked(root))


@pytest.mark.parametrize(
    ("edit", "expected"),
    [
        (lambda r: setattr(r.subgraphs[0].operators[1], "inputs", [2, 99]), "tensor 99"),
        (lambda r: setattr(r.subgraphs[0].operators[1], "outputs", [42]), "tensor 42"),
        (lambda r: setattr(r.subgraphs[0], "outputs", [77]), "tensor 77"),
        (lambda r: setattr(r.subgraphs[0], "inputs", [-1]), "tensor -1"),
        (lambda r: setattr(r.subgraphs[0].tensors[2], "buffer", 500), "buffer 500"),
        (lambda r: setattr(r.subgraphs[0].operators[2], "opcodeIndex", 9), "opcode index 9"),
        (lambda r: setattr(r.signatureDefs[0].outputs[0], "tensorIndex", 123), "tensor 123"),
        (lambda r: setattr(r.signatureDefs[0], "subgraphIndex", 3), "subgraph 3"),
        (lambda r: setattr(r.metadata[0], "buffer", 321), "buffer 321"),
        (lambda r: setattr(r, "subgraphs", []), "no subgraph"),
    ],
    ids=[
        "op-input",
        "op-output",
        "graph-output",
        "graph-input",
        "tensor-buffer",
        "opcode",
        "signature-tensor",
        "signature-subgraph",
        "metadata-buffer",
        "no-subgraph",
    ],
)
def test_index_out_of_range_is_a_model_error_naming_the_file(tmp_path: Path, cli, edit, expected: str) -> None:
    path = corrupt(tmp_path, edit)
    with pytest.raises(ModelError) as caught:
        load_model(path)
    assert caught.value.message.startswith(f"{path}:")
    assert expected in caught.value.message
    out = tmp_path / "out.tflite"
    assert_one_line_error(cli("unfence", path, "-o", out), f"heliabuild: error: {path}: ", expected)
    assert_not_written(out)


def test_optional_input_minus_one_is_accepted(tmp_path: Path) -> None:
    path = corrupt(tmp_path, lambda r: setattr(r.subgraphs[0].operators[1], "inputs", [2, -1]))
    assert list(load_model(path).subgraphs[0].operators[1].inputs) == [2, -1]


def test_serialize_refuses_an_index_out_of_range() -> None:
    net = chain(2)
    from heliabuild.model import Model

    model = Model(root=net.root([0], [4]), name="<edited>")
    model.subgraphs[0].operators[0].inputs = [0, 50]
    with pytest.raises(ModelError, match=r"<edited>: .*tensor 50"):
        serialize(model)


# ---------------------------------------------------------------- hashing


def test_model_sha256_of_path_bytes_and_model_agree(shared_model_path: Path) -> None:
    data = shared_model_path.read_bytes()
    expected = hashlib.sha256(data).hexdigest()
    assert model_sha256(shared_model_path) == expected
    assert model_sha256(str(shared_model_path)) == expected
    assert model_sha256(data) == expected
    assert model_sha256(load_model(shared_model_path)) == expected
    assert model_sha256(load_model(data)) == expected
    assert load_model(shared_model_path).source_sha256 == expected


def test_model_sha256_of_an_in_memory_model_is_that_of_its_bytes() -> None:
    model = synthesize("chain", 3)
    assert model.source_sha256 is None
    assert model_sha256(model) == hashlib.sha256(bytes(serialize(model))).hexdigest()


def test_save_model_writes_serialized_bytes(tmp_path: Path) -> None:
    model = synthesize("chain", 0)
    path = tmp_path / "sub" / "m.tflite"
    save_model(model, path)
    assert path.read_bytes() == bytes(serialize(model))
    assert [p.name for p in path.parent.iterdir()] == ["m.tflite"]


def test_the_shared_models_are_among_the_cases() -> None:
    """The cases above include the real models only where they are present: without them this test is the
    skip (a failure under CI) that says so."""
    require(shared_models_present(), f"real models not available: {SHARED_MODELS} is absent")
