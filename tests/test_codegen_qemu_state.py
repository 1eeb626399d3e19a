"""Models with state on QEMU mps3-an547: the LSTM sequence family (heliabuild.synth.lstm), unfenced and fenced,
through the AOT plan, the module generator and a Cortex-M55 firmware. The firmware runs model_init once and
then the warmups and measured invokes on one instance (the acquisition lifecycle's `carry`), so every sample
is compared with LiteRT's reference kernels run through the same invokes, sample k with invoke warmups + k."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from ai_edge_litert import schema_py_generated as schema
from test_codegen_qemu import DEFAULT_POLICY, _build, _fenced, _run

from heliabuild.aot.stage import write_plan
from heliabuild.codegen.lowering import ModelRefusedError
from heliabuild.codegen.module import check_admission, render_module
from heliabuild.fence import strip_fences
from heliabuild.firmware.protocol import FirmwareRun
from heliabuild.model import load_model, save_model, serialize
from heliabuild.model.io import Model
from heliabuild.runner.verification import compare_outputs, reference_outputs
from heliabuild.synth.builder import GraphBuilder
from heliabuild.synth.lstm import LstmQuant, lstm_model, lstm_network
from heliabuild.synth.quant import quantization_parameters

OP = schema.BuiltinOperator


def _assert_matches_carried_reference(model: Path, fills: list[bytes], run: FirmwareRun) -> list[list[bytes]]:
    unfenced = bytes(serialize(strip_fences(load_model(model))))
    warmups = DEFAULT_POLICY.warmup_invokes
    reference = reference_outputs(unfenced, fills, warmups + len(run.samples))
    for index, sample in enumerate(run.samples):
        checks = compare_outputs(reference[warmups + index], sample.outputs)
        assert [(c.max_abs_diff, c.differing) for c in checks] == [(0, 0)] * len(checks), (index, checks)
        assert sum(sample.segment_ticks) == sample.invoke_ticks
    return [[bytes(o.values.tobytes()) for o in outputs] for outputs in reference]


@pytest.mark.parametrize("fences", [[], [0, 1]], ids=["unfenced", "fenced"])
def test_the_lstm_family_carries_its_state_on_qemu_bit_exact_with_litert(
    firmware_library: Path, tmp_path: Path, fences: list[int]
) -> None:
    source = tmp_path / "lstm.tflite"
    save_model(lstm_network(seed=2), source)
    model = _fenced(source, fences, tmp_path) if fences else source
    built = _build(firmware_library, model, tmp_path / "fw", seed=3)
    run = _run(built)
    reference = _assert_matches_carried_reference(model, built.fills, run)
    # The state carried: a fresh instance's first invoke gives other bytes than the measured ones.
    assert all(sample.outputs != reference[0] for sample in run.samples)
    assert all(len(sample.segment_ticks) == len(fences) + 1 for sample in run.samples)
    print(f"lstm fences {fences}: invoke ticks {[s.invoke_ticks for s in run.samples]}, segments "
          f"{[s.segment_ticks for s in run.samples]}")  # fmt: skip


def _lstm_source(tmp_path: Path, edit: object = None) -> Path:
    model = lstm_model((1, 3, 4), 5, LstmQuant((0.02, 3), (0.01, -7)), seed=1)
    if callable(edit):
        edit(model)
    source = tmp_path / "lstm_op.tflite"
    save_model(model, source)
    return source


def test_the_layout_places_the_variable_tensors_in_the_carried_state_reset_by_model_init_only(tmp_path: Path) -> None:
    source = _lstm_source(tmp_path)
    write_plan(source, tmp_path / "plan", "net", "mps3_an547")
    rendered = render_module(source, tmp_path / "plan" / "net_plan.json", "net")
    layout = json.loads(rendered.files["net_layout.json"])
    graph = load_model(source).subgraphs[0]
    variables = sorted(t for t, tensor in enumerate(graph.tensors) if tensor.isVariable)
    assert layout["state"] == {
        "bytes": 32,
        "tensors": [
            {"tensor": variables[0], "name": "lstm/output_state", "offset": 0, "bytes": 5, "reset_byte": 256 - 7},
            {"tensor": variables[1], "name": "lstm/cell_state", "offset": 16, "bytes": 10, "reset_byte": 0},
        ],
    }
    assert not {str(t) for t in variables} & set(layout["arena"]["offsets"])
    assert layout["scratch"] == [{"operator": 0, "bytes": 40, "offset": layout["scratch"][0]["offset"]}]
    source_text = rendered.files["net_model.c"].decode()
    init, run = source_text.split("helia_model_result net_model_run(helia_model_context *ctx)\n{")
    assert "memset(&state[0], 249, 5u);" in init and "memset(&state[16], 0, 10u);" in init
    assert "memset(&state" not in run
    assert "static uint8_t state[32]" in source_text


def _set_cell_scale(model: Model, scale: float) -> None:
    for tensor in model.subgraphs[0].tensors:
        if tensor.name == "lstm/cell_state":
            tensor.quantization.scale = [scale]


def _add_projection(model: Model) -> None:
    graph = model.subgraphs[0]
    weights = next(t for t, tensor in enumerate(graph.tensors) if tensor.name == "lstm/input/kernel")
    graph.operators[0].inputs[16] = weights


def _not_variable(model: Model) -> None:
    for tensor in model.subgraphs[0].tensors:
        tensor.isVariable = False


@pytest.mark.parametrize(
    ("edit", "reason"),
    [
        (lambda m: _set_cell_scale(m, 3e-4), "cell state scale 0.0003 is not a power of two"),
        (lambda m: _set_cell_scale(m, 2.0**-7), r"cell state scale 2\^-7 is outside 2\^-15..2\^-9"),
        (_add_projection, "projection has no integer LSTM kernel"),
        (_not_variable, "output state 'lstm/output_state' is not a variable tensor"),
    ],
    ids=["cell-scale", "cell-range", "projection", "not-variable"],
)
def test_an_lstm_form_without_a_kernel_is_refused_saying_which(tmp_path: Path, edit: object, reason: str) -> None:
    with pytest.raises(ModelRefusedError) as refused:
        check_admission(_lstm_source(tmp_path, edit))
    assert [r.op_type for r in refused.value.refusals] == ["UNIDIRECTIONAL_SEQUENCE_LSTM"]
    assert re.search(reason, refused.value.refusals[0].reason), refused.value.refusals[0].reason


def test_a_variable_tensor_read_by_another_operator_is_refused_saying_why(tmp_path: Path) -> None:
    builder = GraphBuilder()
    quant = quantization_parameters([0.1], [0])
    x = builder.activation("x", (1, 4), "int8", quant)
    memory = builder.activation("memory", (1, 4), "int8", quant)
    builder.tensors[memory].isVariable = True
    y = builder.activation("y", (1, 4), "int8", quant)
    builder.operator(OP.ADD, [x, memory], [y], schema.AddOptionsT())
    source = tmp_path / "variable_add.tflite"
    save_model(builder.finish([x], [y], "variable add", "<variable add>", dynamic_batch=False), source)
    with pytest.raises(ModelRefusedError) as refused:
        check_admission(source)
    assert refused.value.refusals[0].reason == (
        "variable tensor 'memory' (state): only the UNIDIRECTIONAL_SEQUENCE_LSTM and SVDF kernels carry variable "
        "tensors"
    )
