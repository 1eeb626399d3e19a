"""Real Vela: N fences between NPU operators compile to N+1 command streams with the fences between."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from helpers.skips import require
from helpers.tflite import FENCE_CODE, op_types

from heliabuild.fence import rewrite_model_with_fences
from heliabuild.model import load_model
from heliabuild.model.graph import indices
from heliabuild.synth import chain_network, residual_network

pytestmark = pytest.mark.slow

VELA = Path(sys.executable).with_name("vela")
ACCELERATORS = ["ethos-u55-128", "ethos-u85-256"]


def compile_with_vela(model: Path, accelerator: str, output_dir: Path):
    require(VELA.exists(), f"ethos-u-vela is not installed beside {sys.executable} (pip install .)")
    output_dir.mkdir(parents=True, exist_ok=True)
    run = subprocess.run(
        [str(VELA), str(model), "--accelerator-config", accelerator, "--output-dir", str(output_dir)],
        capture_output=True,
        text=True,
        cwd=output_dir,
        timeout=120,
        check=False,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    compiled = output_dir / f"{model.stem}_vela.tflite"
    assert compiled.is_file()
    return load_model(compiled)


def assert_command_streams(compiled, after_ops: list[int], live: dict[int, int]) -> None:
    """ethos-u, fence, ethos-u, ...: each fence carries the live set between two NPU streams."""
    count = len(after_ops)
    assert op_types(compiled) == ["ethos-u", FENCE_CODE] * count + ["ethos-u"]
    operators = compiled.subgraphs[0].operators
    for number, after_op in enumerate(after_ops):
        position = 2 * number + 1
        fence = operators[position]
        inputs, outputs = indices(fence.inputs), indices(fence.outputs)
        assert len(inputs) == len(outputs) == live[after_op]
        # the first pair comes from the NPU stream just before; a tensor crossing several
        # fences comes through the previous fence
        assert inputs[0] in indices(operators[position - 1].outputs)
        produced_before = {t for op in operators[:position] for t in indices(op.outputs)}
        assert set(inputs) <= produced_before
        assert outputs[0] in indices(operators[position + 1].inputs)
        read_after = {t for op in operators[position + 1 :] for t in indices(op.inputs)}
        assert set(outputs) <= read_after | set(indices(compiled.subgraphs[0].outputs))


def fence_and_compile(tmp_path: Path, source, after_ops: list[int], accelerator: str):
    fenced = tmp_path / "model_fenced.tflite"
    result = rewrite_model_with_fences(source, after_ops)
    result.save(fenced)
    live = {a: len(s.tensor_pairs) for a, s in zip(result.boundary_after_ops, result.segments, strict=False)}
    return compile_with_vela(fenced, accelerator, tmp_path / "vela"), live


@pytest.mark.parametrize("accelerator", ACCELERATORS)
def test_fenced_kws_compiles_to_one_stream_per_segment(tmp_path: Path, kws_path: Path, accelerator: str) -> None:
    after_ops = [2, 5, 9]
    compiled, live = fence_and_compile(tmp_path, kws_path, after_ops, accelerator)
    assert set(live.values()) == {1}
    assert_command_streams(compiled, after_ops, live)


@pytest.mark.parametrize("accelerator", ACCELERATORS)
def test_fenced_resnet_inside_blocks_carries_two_tensors(tmp_path: Path, resnet_path: Path, accelerator: str) -> None:
    after_ops = [2, 7, 9, 13]
    compiled, live = fence_and_compile(tmp_path, resnet_path, after_ops, accelerator)
    assert live == {2: 2, 7: 1, 9: 2, 13: 1}
    assert_command_streams(compiled, after_ops, live)


@pytest.mark.parametrize("accelerator", ACCELERATORS)
def test_fenced_synthetic_chain_compiles(tmp_path: Path, accelerator: str) -> None:
    after_ops = [0, 4]
    compiled, live = fence_and_compile(tmp_path, chain_network(3), after_ops, accelerator)
    assert_command_streams(compiled, after_ops, live)


@pytest.mark.parametrize("accelerator", ACCELERATORS)
def test_fenced_synthetic_residual_compiles(tmp_path: Path, accelerator: str) -> None:
    after_ops = [1, 5, 11]
    compiled, live = fence_and_compile(tmp_path, residual_network(2), after_ops, accelerator)
    assert live[1] == 2 and live[5] == 2
    assert_command_streams(compiled, after_ops, live)


def test_unfenced_model_compiles_to_one_stream(tmp_path: Path, resnet_path: Path) -> None:
    model = tmp_path / "resnet.tflite"
    model.write_bytes(resnet_path.read_bytes())
    compiled = compile_with_vela(model, "ethos-u55-128", tmp_path / "vela")
    assert op_types(compiled) == ["ethos-u"]
