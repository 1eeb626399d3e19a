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
from heliabuild.codegen.lowering import CodegenError, ModelRefusedError
from heliabuild.codegen.module import check_admission, render_module
from heliabuild.fence import strip_fences
from heliabuild.firmware.protocol import FirmwareRun
from heliabuild.model import load_model, save_model, serialize
from heliabuild.model.io import Model
from heliabuild.model.opcodes import operator_type
from heliabuild.runner.verification import compare_outputs, reference_outputs
from heliabuild.synth import synthesize
from heliabuild.synth.builder import GraphBuilder
from heliabuild.synth.lstm import LstmQuant, lstm_model
from heliabuild.synth.quant import quantization_parameters
from heliabuild.synth.svdf import SvdfQuant, svdf_model

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


CASES = [("lstm", []), ("lstm", [0, 1]), ("svdf", []), ("svdf", [0])]


@pytest.mark.parametrize(("kind", "fences"), CASES, ids=[f"{k}-{'fenced' if f else 'unfenced'}" for k, f in CASES])
def test_the_stateful_families_carry_their_state_on_qemu_bit_exact_with_litert(
    firmware_library: Path, tmp_path: Path, kind: str, fences: list[int]
) -> None:
    source = tmp_path / f"{kind}.tflite"
    save_model(synthesize(kind, seed=2), source)
    model = _fenced(source, fences, tmp_path) if fences else source
    built = _build(firmware_library, model, tmp_path / "fw", seed=3)
    run = _run(built)
    reference = _assert_matches_carried_reference(model, built.fills, run)
    # The state carried: a fresh instance's first invoke gives other bytes than the measured ones.
    assert all(list(sample.outputs) != reference[0] for sample in run.samples)
    assert all(len(sample.segment_ticks) == len(fences) + 1 for sample in run.samples)
    print(f"{kind} fences {fences}: invoke ticks {[s.invoke_ticks for s in run.samples]}, segments "
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
            {
                "tensor": variables[0],
                "name": "lstm/output_state",
                "offset": 0,
                "bytes": 5,
                "reset_byte": 256 - 7,
                "resource_variable": None,
                "initialized_by": "reset",
            },
            {
                "tensor": variables[1],
                "name": "lstm/cell_state",
                "offset": 16,
                "bytes": 10,
                "reset_byte": 0,
                "resource_variable": None,
                "initialized_by": "reset",
            },
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


def test_an_svdf_without_the_relu_litert_requires_is_refused_saying_so(tmp_path: Path) -> None:
    source = tmp_path / "svdf_none.tflite"
    save_model(svdf_model(1, 4, 4, 3, 1, SvdfQuant((0.02, 0), (0.05, 0)), activation="NONE"), source)
    with pytest.raises(ModelRefusedError) as refused:
        check_admission(source)
    assert refused.value.refusals[0].reason == (
        "integer SVDF: fused activation NONE; LiteRT's integer SVDF takes only RELU"
    )


@pytest.mark.parametrize("kind", ["counter_int8", "counter_int8_no_init"])
def test_resource_variables_carry_on_qemu_bit_exact_with_litert(
    firmware_library: Path, tmp_path: Path, kind: str
) -> None:
    """VAR_HANDLE, READ_VARIABLE and ASSIGN_VARIABLE with and without a CALL_ONCE initialization subgraph: with
    CALL_ONCE each invoke adds one to the counter (samples differ), without it every invoke assigns 0 first."""
    source = tmp_path / f"{kind}.tflite"
    save_model(synthesize(kind, seed=1), source)
    built = _build(firmware_library, source, tmp_path / "fw", seed=4)
    run = _run(built)
    reference = _assert_matches_carried_reference(source, built.fills, run)
    carried = [list(sample.outputs) != reference[0] for sample in run.samples]
    print(f"{kind}: invoke ticks {[s.invoke_ticks for s in run.samples]}")
    assert carried == ([True, True] if kind == "counter_int8" else [False, False])


def _opcode(model: Model, name: str) -> int:
    return next(k for k, code in enumerate(model.operator_codes) if operator_type(code) == name)


def _init_runs_an_add(model: Model) -> None:
    model.subgraphs[1].operators[1].opcodeIndex = _opcode(model, "ADD")


def _read_before_assign(model: Model) -> None:
    """Drop the ASSIGN_VARIABLE of zeros that precedes the READ_VARIABLE."""
    graph = model.subgraphs[0]
    assert graph.operators[1].opcodeIndex == _opcode(model, "ASSIGN_VARIABLE")
    del graph.operators[1]


@pytest.mark.parametrize(
    ("kind", "edit", "reason"),
    [
        ("counter_int8", _init_runs_an_add, "subgraph 1 (init): the CALL_ONCE initialization holds ADD; the generated "
         "module applies only VAR_HANDLE and ASSIGN_VARIABLE of constants, in model_init"),
        ("counter_int8_no_init", _read_before_assign, "resource variable '/counter' is read before anything assigns "
         "it (no CALL_ONCE value)"),
    ],
    ids=["init-holds-add", "read-before-assign"],
)  # fmt: skip
def test_resource_variables_the_module_cannot_carry_are_refused_saying_why(
    tmp_path: Path, kind: str, edit: object, reason: str
) -> None:
    model = synthesize(kind, seed=1)
    assert callable(edit)
    edit(model)
    source = tmp_path / f"{kind}.tflite"
    save_model(model, source)
    with pytest.raises(CodegenError) as refused:
        check_admission(source)
    assert refused.value.message == f"{source}: {reason}"


def test_a_call_once_value_is_copied_into_the_carried_state_by_model_init(tmp_path: Path) -> None:
    source = tmp_path / "counter.tflite"
    save_model(synthesize("counter_int8", seed=1), source)
    write_plan(source, tmp_path / "plan", "net", "mps3_an547")
    rendered = render_module(source, tmp_path / "plan" / "net_plan.json", "net")
    (placement,) = json.loads(rendered.files["net_layout.json"])["state"]["tensors"]
    assert placement == {
        "tensor": placement["tensor"], "name": "counter_handle", "offset": 0, "bytes": 1, "reset_byte": 0,
        "resource_variable": "/counter", "initialized_by": "call_once",
    }  # fmt: skip
    text = rendered.files["net_model.c"].decode()
    init, run = text.split("helia_model_result net_model_run(helia_model_context *ctx)\n{")
    assert "static const uint8_t state_initial_0[1] = {\n    128,\n};" in text  # 0.0 at scale 1/8, zero point -128
    assert "memcpy(&state[0], state_initial_0, 1u);" in init and "state_initial_0" not in run


@pytest.mark.parametrize(("kind", "kernel"), [("lstm", "ops_lstm.c"), ("svdf", "ops_svdf.c")])
def test_a_stateful_export_carries_its_kernel_and_compiles(tmp_path: Path, kind: str, kernel: str) -> None:
    """`heliabuild module` derives the kernel sources from the calls: the export holds the stateful kernel's file
    and every source compiles with the export's own flags."""
    import subprocess

    from conftest import require_firmware_tools

    from heliabuild.module.export import compiler_flags, export_module

    require_firmware_tools()
    source = tmp_path / f"{kind}.tflite"
    save_model(synthesize(kind, seed=1), source)
    write_plan(source, tmp_path / "plan", "net", "mps3_an547")
    folder = tmp_path / "module"
    export_module(source, tmp_path / "plan" / "net_plan.json", folder)
    sources = sorted((folder / "src").glob("*.c"))
    assert kernel in {path.name for path in sources}
    for path in sources:
        compiled = subprocess.run(
            ["arm-none-eabi-gcc", *compiler_flags(), "-I", str(folder / "include"), "-I", str(folder / "src"),
             "-c", str(path), "-o", str(tmp_path / f"{path.stem}.o")],
            capture_output=True, text=True, check=False,
        )  # fmt: skip
        assert compiled.returncode == 0, compiled.stderr[-2000:]


def test_a_time_major_batched_lstm_with_a_state_zero_point_carries_on_qemu(
    firmware_library: Path, tmp_path: Path
) -> None:
    """The output state resets to its zero point (-7), not to 0, in model_init, as LiteRT resets it."""
    quant = LstmQuant((0.02, 3), (0.01, -7), -12, (0.03, 0.02, 0.04, 0.03), (0.02, 0.03, 0.02, 0.04), 2.0)
    source = tmp_path / "lstm_op.tflite"
    save_model(lstm_model((3, 2, 5), 6, quant, seed=5, time_major=True), source)
    built = _build(firmware_library, source, tmp_path / "fw", seed=6)
    run = _run(built)
    reference = _assert_matches_carried_reference(source, built.fills, run)
    assert all(list(sample.outputs) != reference[0] for sample in run.samples)
