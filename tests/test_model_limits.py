"""The model reader's limits: tensor shapes no target can hold, and files that are not regular files.

A tensor of 2^40 bytes or a shape whose element count overflows 64 bits is refused by `load_model`, the
first step of every stage, as one ModelError naming the file, the tensor and the shape, so no stage
writes anything for it and `run` never meets it in LiteRT.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
from helpers.checks import assert_not_written, assert_one_line_error
from helpers.skips import require
from helpers.tflite import T, chain, pack_unchecked
from hypothesis import given
from hypothesis import strategies as st

from heliabuild.errors import ModelError
from heliabuild.model import load_model
from heliabuild.model.io import MAX_ACTIVATION_BYTES, MAX_CONSTANT_BYTES

# In chain(3): tensor 0 input, 1 c0 (constant), 2 t0, 3 c1, 4 t1, 5 c2, 6 output.
ACTIVATION, CONSTANT = 2, 1
TIB_SHAPE = [1, 1 << 20, 1 << 20, 1]  # 2^40 int8 elements


def hostile(tmp_path: Path, tensor: int, shape: list[int] | None = None, signature: list[int] | None = None) -> Path:
    """chain(3) with tensor `tensor` given `shape` and/or `shape_signature`, written unchecked."""
    net = chain(3, T.INT8)
    if shape is not None:
        net.tensors[tensor].shape = np.array(shape, dtype=np.int32)
    if signature is not None:
        net.tensors[tensor].shapeSignature = np.array(signature, dtype=np.int32)
    path = tmp_path / "hostile.tflite"
    path.write_bytes(pack_unchecked(net.root([0], [len(net.tensors) - 1])))
    return path


def refusal(path: Path) -> str:
    with pytest.raises(ModelError) as caught:
        load_model(path)
    return caught.value.message


def test_a_tebibyte_activation_is_refused_naming_file_tensor_and_shape(tmp_path: Path) -> None:
    path = hostile(tmp_path, ACTIVATION, TIB_SHAPE)
    assert refusal(path) == (
        f"{path}: subgraph 0 tensor 2 ('t0') has shape [1, 1048576, 1048576, 1]: 1099511627776 elements of 8 "
        "bits take 1099511627776 bytes, more than the 4294967296 bytes admitted for a tensor without data "
        "(the 32-bit address space of an Ethos-U target)"
    )


def test_a_constant_declaring_more_than_the_file_limit_is_refused(tmp_path: Path) -> None:
    path = hostile(tmp_path, CONSTANT, [1 << 16, 1 << 15, 2])  # 2^32 int8 elements, with 12 bytes of data
    assert refusal(path) == (
        f"{path}: subgraph 0 tensor 1 ('c0') has shape [65536, 32768, 2]: 4294967296 elements of 8 bits take "
        "4294967296 bytes, more than the 2147483648 bytes admitted for a constant (its data lies in the model "
        "file, at most 2 GiB)"
    )


def test_an_element_count_overflowing_int64_is_refused(tmp_path: Path) -> None:
    big = (1 << 31) - 1
    path = hostile(tmp_path, ACTIVATION, [big, big, big])
    assert refusal(path) == (
        f"{path}: subgraph 0 tensor 2 ('t0') has shape [2147483647, 2147483647, 2147483647]: its element count "
        "overflows 64 bits"
    )
    signature = hostile(tmp_path, ACTIVATION, signature=[-1, big, big, big])
    assert refusal(signature).endswith(
        "has shape_signature [-1, 2147483647, 2147483647, 2147483647]: its element count overflows 64 bits"
    )


def test_a_negative_extent_other_than_minus_one_is_refused(tmp_path: Path) -> None:
    path = hostile(tmp_path, ACTIVATION, signature=[-2, 2, 2, 3])
    assert (
        refusal(path) == f"{path}: subgraph 0 tensor 2 ('t0') has shape_signature [-2, 2, 2, 3]: extent -2 is negative"
    )
    assert refusal(hostile(tmp_path, ACTIVATION, [1, -5, 2, 3])).endswith(
        "has shape [1, -5, 2, 3]: extent -5 is negative"
    )


def test_unknown_extents_and_tensors_at_the_bounds_load(tmp_path: Path) -> None:
    assert (
        load_model(hostile(tmp_path, ACTIVATION, signature=[-1, 2, 2, 3])).subgraphs[0].tensors[2].shapeSignature[0]
        == -1
    )
    at_bound = [MAX_ACTIVATION_BYTES // 4, 4]  # int8: exactly MAX_ACTIVATION_BYTES
    assert load_model(hostile(tmp_path, ACTIVATION, at_bound)) is not None
    net = chain(3, T.FLOAT32)  # FLOAT32: the bound is in bytes, not elements
    net.tensors[ACTIVATION].shape = np.array([MAX_ACTIVATION_BYTES // 4 + 1], dtype=np.int32)
    with pytest.raises(ModelError, match=r"4294967300 bytes, more than the 4294967296 bytes admitted"):
        load_model(pack_unchecked(net.root([0], [len(net.tensors) - 1])))
    assert MAX_CONSTANT_BYTES == 1 << 31


@given(st.lists(st.integers(min_value=-1, max_value=(1 << 31) - 1), min_size=0, max_size=6))
def test_any_shape_is_loaded_or_refused_with_a_model_error(extents: list[int]) -> None:
    net = chain(3, T.INT8)
    net.tensors[ACTIVATION].shape = np.array(extents, dtype=np.int32)
    data = pack_unchecked(net.root([0], [len(net.tensors) - 1]))
    count = int(np.prod([e for e in extents if e >= 0], dtype=object)) if extents else 1
    if count <= MAX_ACTIVATION_BYTES:
        assert [int(e) for e in load_model(data).subgraphs[0].tensors[ACTIVATION].shape] == extents
    else:
        with pytest.raises(ModelError, match=r"^<bytes>: subgraph 0 tensor 2 \('t0'\) has shape "):
            load_model(data)


def test_bytes_read_elsewhere_are_named_as_the_caller_says(tmp_path: Path) -> None:
    data = hostile(tmp_path, ACTIVATION, TIB_SHAPE).read_bytes()
    with pytest.raises(ModelError, match=r"^models/m\.tflite: subgraph 0 tensor 2 \('t0'\) has shape "):
        load_model(data, name="models/m.tflite")
    assert load_model(pack_unchecked(chain(3).root([0], [6])), name="x").name == "x"


def test_a_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    require(hasattr(os, "mkfifo"), "this platform has no FIFOs")
    fifo = tmp_path / "model.tflite"
    os.mkfifo(fifo)
    assert refusal(fifo) == f"{fifo}: the model is a FIFO, expected a regular file"


def test_a_device_and_a_folder_are_refused(tmp_path: Path) -> None:
    device = tmp_path / "zero.tflite"
    device.symlink_to("/dev/zero")
    assert refusal(device) == f"{device}: the model is a character device, expected a regular file"
    assert refusal(tmp_path).startswith(f"{tmp_path}: the model is a folder")


@pytest.mark.parametrize("stage", ["fence", "runner", "aot-plan"])
def test_stages_exit_2_on_a_tebibyte_tensor_and_write_nothing(cli, tmp_path: Path, stage: str) -> None:
    path = hostile(tmp_path, ACTIVATION, TIB_SHAPE)
    out = tmp_path / "out"
    argv = {
        "fence": ["fence", path, "-o", out / "fenced.tflite", "--after-ops", "0"],
        "runner": ["runner", "--model", path, "-o", out],
        "aot-plan": ["aot-plan", path, "--prefix", "m", "--platform", "apollo510_evb", "-o", out],
    }[stage]
    line = assert_one_line_error(
        cli(*argv), "subgraph 0 tensor 2 ('t0') has shape [1, 1048576, 1048576, 1]: 1099511627776 elements"
    )
    if stage != "runner":  # build_runner reads the file itself and loads its bytes, named "<bytes>" so far
        assert line.startswith(f"heliabuild: error: {path}: subgraph 0 tensor 2")
    assert_not_written(out / "fenced.tflite", out / "runner.json", out / "m_plan.json", out / "m_report.json")
