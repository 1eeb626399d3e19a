"""heliabuild.vela.compile with real Vela: files, command streams, coverage, segment sums, identity, errors.

The real models (kws, resnet) and their synthetic stand-ins are compiled fenced and
unfenced for Ethos-U55-128 and Ethos-U85-256 once per session; the tests share the runs.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path

import pytest
from helpers.tflite import mixed_model, op_types

from heliabuild.errors import HeliaError, ModelError, VelaError
from heliabuild.fence import FenceBoundaries, load_sidecar, rewrite_model_with_fences, sidecar_path_for
from heliabuild.model import load_model, model_sha256, save_model
from heliabuild.model.graph import indices, tensor_name
from heliabuild.model.opcodes import operator_type
from heliabuild.schema_files import validate
from heliabuild.synth import chain_network
from heliabuild.vela import (
    VelaResult,
    compile,
    default_memory_mode,
    default_system_config,
    output_names,
    read_per_layer,
    read_summary,
    vela_version,
)
from heliabuild.vela.attribution import RULE_NAME, RULE_NAME_PREFIX, RULE_PRECEDING_COPY
from heliabuild.vela.run import WORK_MARKER, WORK_MARKER_TEXT

FENCE = "ETHOS_U_STREAM_SPLIT"
ACCELERATORS = ("ethos-u55-128", "ethos-u85-256")
# Fence positions: kws and the synthetic chain as in the fence tests (the chain's [1, 3] puts a 1x1
# convolution right after each fence, where Ethos-U85 inserts a MemoryCopy); resnet and the synthetic
# residual network cut inside residual blocks, where two tensors cross the fence.
CUTS = {"kws": (2, 5, 9), "resnet": (2, 7, 9, 13), "synth-chain": (1, 3), "synth-residual": (1, 5, 11)}
MODELS = tuple(CUTS)


@dataclass(frozen=True)
class Case:
    key: str
    accelerator: str
    fenced: bool
    source: Path  # the unfenced model
    model: Path  # what Vela compiled (the source itself when unfenced)
    out: Path
    result: VelaResult
    boundaries: FenceBoundaries | None

    @property
    def document(self) -> dict:
        return json.loads(self.result.segments_json.read_text(encoding="utf-8"))


def source_model(request: pytest.FixtureRequest, key: str) -> Path:
    if key in ("kws", "resnet"):
        return request.getfixturevalue(f"{key}_path")
    return request.getfixturevalue("synth_models") / f"{key.replace('-', '_')}.tflite"


@pytest.fixture(scope="session")
def vela_root(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    return tmp_path_factory.mktemp("vela_compile"), {}


def get_case(request: pytest.FixtureRequest, vela_root: tuple[Path, dict], key: str, accelerator: str, fenced: bool):
    root, cache = vela_root
    if (key, accelerator, fenced) in cache:
        return cache[key, accelerator, fenced]
    original = source_model(request, key)
    folder = root / key
    folder.mkdir(exist_ok=True)
    source = folder / original.name
    if not source.exists():
        shutil.copyfile(original, source)
    model, boundaries = source, None
    if fenced:
        model = folder / f"{source.stem}_fenced.tflite"
        if not model.exists():
            rewrite_model_with_fences(source, CUTS[key]).save(model)
        boundaries = load_sidecar(sidecar_path_for(model))
    out = folder / f"{accelerator}-{'fenced' if fenced else 'plain'}"
    result = compile(model, out, accelerator=accelerator)
    case = Case(key, accelerator, fenced, source, model, out, result, boundaries)
    cache[key, accelerator, fenced] = case
    return case


ALL = [(key, acc, fenced) for key in MODELS for acc in ACCELERATORS for fenced in (True, False)]
FENCED = [(key, acc, True) for key in MODELS for acc in ACCELERATORS]


def ids(params: tuple[str, str, bool]) -> str:
    key, accelerator, fenced = params
    return f"{key}-{accelerator.removeprefix('ethos-')}-{'fenced' if fenced else 'plain'}"


@pytest.fixture(params=ALL, ids=ids)
def case(request: pytest.FixtureRequest, vela_root) -> Case:
    return get_case(request, vela_root, *request.param)


@pytest.fixture(params=FENCED, ids=ids)
def fenced_case(request: pytest.FixtureRequest, vela_root) -> Case:
    return get_case(request, vela_root, *request.param)


# ---------------------------------------------------------------- what compile writes


@pytest.mark.slow
def test_four_files_with_the_documented_names(case: Case) -> None:
    system_config = default_system_config(case.accelerator)
    names = output_names(case.model, system_config)
    stem = case.model.stem
    assert names == {
        "model": f"{stem}_vela.tflite",
        "per_layer": f"{stem}_per-layer.csv",
        "summary": f"{stem}_summary_{system_config}.csv",
        "segments": f"{stem}_segments.json",
    }
    result = case.result
    assert (result.model, result.per_layer_csv, result.summary_csv, result.segments_json) == tuple(
        case.out / name for name in names.values()
    )
    # nothing else: no work folder, no temporary file
    assert sorted(p.name for p in case.out.iterdir()) == sorted(names.values())


@pytest.mark.slow
def test_vela_version_and_the_configuration_vela_picked(case: Case) -> None:
    result = case.result
    assert result.vela_version == version("ethos-u-vela") == vela_version()
    vela = case.document["vela"]
    summary = read_summary(result.summary_csv)
    assert vela == {
        "version": version("ethos-u-vela"),
        "accelerator": case.accelerator,
        "system_config": default_system_config(case.accelerator),
        "memory_mode": default_memory_mode(case.accelerator),
        "sram_memory_used_kib": summary.sram_memory_used_kib,  # Vela's memory use, kept from its summary
        "off_chip_flash_memory_used_kib": summary.off_chip_flash_memory_used_kib,
    }
    assert (summary.system_config, summary.memory_mode) == (vela["system_config"], vela["memory_mode"])
    assert result.options.resolved_system_config == summary.system_config
    assert result.options.resolved_memory_mode == summary.memory_mode


@pytest.mark.slow
def test_command_streams_alternate_with_the_fences(case: Case) -> None:
    count = len(CUTS[case.key]) if case.fenced else 0
    expected = ["ethos-u", *[FENCE, "ethos-u"] * count]
    assert op_types(load_model(case.result.model)) == expected
    streams = case.result.command_streams
    assert list(streams.operator_types) == expected
    assert streams.count == count + 1
    assert streams.cpu_operators == ()
    assert case.result.report.streams_match_segments
    assert case.result.cpu_operators == []
    assert case.document["command_streams"] == {
        "count": count + 1,
        "operator_types": expected,
        "matches_segments": True,
        "cpu_operators": [],
    }
    assert not [w for w in case.result.warnings if "command streams" in w]


@pytest.mark.slow
def test_every_row_is_attributed(case: Case) -> None:
    rows = read_per_layer(case.result.per_layer_csv)
    coverage = case.result.report.coverage
    assert coverage.fraction == 1.0
    assert coverage.unmatched_rows == ()
    assert coverage.row_count == len(rows)
    assert coverage.total_cycles == coverage.matched_cycles == sum(row.op_cycles for row in rows) > 0
    assert all(entry["rule"] is not None for entry in case.document["rows"])


@pytest.mark.slow
def test_segment_figures_add_up_to_vela_totals(case: Case) -> None:
    rows = read_per_layer(case.result.per_layer_csv)
    summary = read_summary(case.result.summary_csv)
    segments = case.result.report.segments
    assert sum(s.op_cycles for s in segments) == sum(row.op_cycles for row in rows)
    assert sum(s.op_cycles for s in segments) == pytest.approx(summary.cycles_total, rel=1e-9)
    assert sum(s.mac_count for s in segments) == sum(row.mac_count for row in rows) == summary.nn_macs
    for figure in ("npu_cycles", "sram_access_cycles", "dram_access_cycles"):
        assert sum(getattr(s, figure) for s in segments) == sum(getattr(row, figure) for row in rows)
    # every row is in exactly one segment
    assert sorted(i for s in segments for i in s.rows) == list(range(len(rows)))


@pytest.mark.slow
def test_segment_ranges_match_the_sidecar(case: Case) -> None:
    segments = case.result.report.segments
    count = len(load_model(case.source).subgraphs[0].operators)
    if case.fenced:
        assert case.boundaries is not None
        assert case.result.report.boundary_after_ops == case.boundaries.boundary_after_ops == CUTS[case.key]
        assert [(s.index, s.op_range_start, s.op_range_end) for s in segments] == [
            (s.index, s.op_range_start, s.op_range_end) for s in case.boundaries.segments
        ]
    else:
        assert case.result.report.boundary_after_ops == ()
        assert [(s.index, s.op_range_start, s.op_range_end) for s in segments] == [(0, 0, count - 1)]
    assert segments[-1].op_range_end == count - 1


@pytest.mark.slow
def test_segments_json_validates_and_carries_the_source_hash(case: Case) -> None:
    document = case.document
    validate(document, "segments", str(case.result.segments_json))
    assert document == case.result.report.to_json()
    assert document["model"] == case.model.name
    assert document["model_sha256"] == model_sha256(case.model)
    if case.fenced:
        assert case.boundaries is not None
        assert document["source_sha256"] == case.boundaries.source_sha256 == model_sha256(case.source)
        assert document["model_sha256"] != document["source_sha256"]
    else:
        assert document["source_sha256"] == document["model_sha256"] == model_sha256(case.source)


@pytest.mark.slow
def test_rows_attributed_by_name_name_their_operator(case: Case) -> None:
    """Rule 1 means it: each such row names an output of its operator in the model Vela compiled."""
    source = load_model(case.source)
    subgraph = source.subgraphs[0]
    outputs = [{tensor_name(subgraph.tensors[t]) for t in indices(op.outputs)} for op in subgraph.operators]
    rows = read_per_layer(case.result.per_layer_csv)
    for row, where in zip(rows, case.result.report.attributions, strict=True):
        if where.rule == RULE_NAME:
            assert row.name in outputs[where.operator], (row, where)


@pytest.mark.slow
def test_decomposed_softmax_rows_go_to_the_softmax(case: Case) -> None:
    source = load_model(case.source)
    types = [operator_type(source.operator_codes[op.opcodeIndex]) for op in source.subgraphs[0].operators]
    softmax = types.index("SOFTMAX")
    rows = read_per_layer(case.result.per_layer_csv)
    decomposed = [(row, where) for row, where in zip(rows, case.result.report.attributions, strict=True)]
    decomposed = [(row, where) for row, where in decomposed if "_softmax_" in row.name]
    assert len(decomposed) > 10  # Vela lowers SOFTMAX into some 25 elementwise operations
    assert {(where.operator, where.rule) for _, where in decomposed} == {(softmax, RULE_NAME_PREFIX)}
    assert {row.original_operator for row, _ in decomposed} == {"Softmax"}
    broadcasted = [row.name for row, _ in decomposed if row.name.endswith("_broadcasted")]
    # the evidence docs/vela.md cites: Ethos-U55 adds a `_broadcasted` row, Ethos-U85 does not
    assert len(broadcasted) == (1 if case.accelerator.startswith("ethos-u55") else 0)


@pytest.mark.slow
def test_fenced_segments_hold_the_rows_between_their_fences(fenced_case: Case) -> None:
    """In CSV order, a segment's rows are one run that ends with its fence's row."""
    rows = read_per_layer(fenced_case.result.per_layer_csv)
    fence_rows = [row.index for row in rows if row.original_operator == "Custom"]
    assert len(fence_rows) == len(CUTS[fenced_case.key])
    starts = [0, *[index + 1 for index in fence_rows]]
    ends = [*fence_rows, len(rows) - 1]
    for segment, start, end in zip(fenced_case.result.report.segments, starts, ends, strict=True):
        assert segment.rows == tuple(range(start, end + 1))


@pytest.mark.slow
@pytest.mark.parametrize("key", ["kws", "synth-chain"])
def test_ethos_u85_memory_copies_go_to_the_operator_they_feed(request, vela_root, key: str) -> None:
    """Vela for Ethos-U85 copies a stream's input into `input_buffer_` before a 1x1 convolution reads it;
    the copy belongs to that convolution (the synthetic models also have a tensor named `input`)."""
    case = get_case(request, vela_root, key, "ethos-u85-256", True)
    rows = read_per_layer(case.result.per_layer_csv)
    attributions = case.result.report.attributions
    copies = [row.index for row in rows if row.nng_operator == "MemoryCopy"]
    assert copies, "Vela no longer inserts MemoryCopy rows here; update docs/vela.md"
    for index in copies:
        assert rows[index].name == "input_buffer_"
        assert rows[index].op_cycles > 0
        assert attributions[index].rule == RULE_PRECEDING_COPY
        assert attributions[index].operator == attributions[index + 1].operator
        assert rows[index + 1].original_operator == rows[index].original_operator == "Conv2D"
    # the Ethos-U55 compile of the same model has no such rows
    u55 = get_case(request, vela_root, key, "ethos-u55-128", True)
    assert not [row for row in read_per_layer(u55.result.per_layer_csv) if row.nng_operator == "MemoryCopy"]


@pytest.mark.slow
def test_two_runs_are_byte_identical(fenced_case: Case, tmp_path: Path) -> None:
    again = compile(fenced_case.model, tmp_path / "again", accelerator=fenced_case.accelerator)
    first = fenced_case.result
    for a, b in [
        (first.model, again.model),
        (first.per_layer_csv, again.per_layer_csv),
        (first.summary_csv, again.summary_csv),
        (first.segments_json, again.segments_json),
    ]:
        assert a.name == b.name
        assert a.read_bytes() == b.read_bytes(), a.name


@pytest.mark.slow
@pytest.mark.parametrize("accelerator", ["ethos-u55-64", "ethos-u65-256", "ethos-u85-512"])
def test_default_system_config_is_the_one_vela_picks(tmp_path: Path, accelerator: str) -> None:
    model = tmp_path / "chain.tflite"
    save_model(chain_network(0), model)
    result = compile(model, tmp_path / "out", accelerator=accelerator)
    summary = read_summary(result.summary_csv)
    assert summary.system_config == default_system_config(accelerator)
    assert summary.memory_mode == default_memory_mode(accelerator)
    assert result.summary_csv.name == f"chain_summary_{default_system_config(accelerator)}.csv"
    assert any(f"Using a default of {summary.system_config}." in w for w in result.warnings)


@pytest.mark.slow
def test_explicit_configuration_file_and_sections(tmp_path: Path) -> None:
    import ethosu.vela

    ini = tmp_path / "my.ini"
    shutil.copyfile(Path(ethosu.vela.__file__).parents[1] / "config_files" / "Arm" / "vela.ini", ini)
    model = tmp_path / "chain.tflite"
    save_model(chain_network(0), model)
    result = compile(
        model,
        tmp_path / "out",
        config=[ini],
        system_config="Ethos_U55_Deep_Embedded",
        memory_mode="Sram_Only",
        optimise="Size",
    )
    assert result.summary_csv.name == "chain_summary_Ethos_U55_Deep_Embedded.csv"
    assert result.report.memory_mode == "Sram_Only"
    assert result.warnings == ()  # nothing defaulted, nothing left on the CPU


# ---------------------------------------------------------------- a fenced model with other CPU operators


@pytest.mark.slow
@pytest.mark.parametrize("accelerator", ACCELERATORS)
def test_other_cpu_operators_in_a_fenced_model_are_reported(tmp_path: Path, accelerator: str) -> None:
    fenced = tmp_path / "mixed_fenced.tflite"
    rewrite_model_with_fences(mixed_model(), [0, 3]).save(fenced)
    result = compile(fenced, tmp_path / "out", accelerator=accelerator)

    cpu = "DEQUANTIZE at 2 ('f0'), ADD at 3 ('f1'), QUANTIZE at 4 ('q1')"
    ours = [w for w in result.warnings if "command streams" in w]
    assert ours == [f"Vela produced 2 command streams for 3 segments; operators on the CPU besides the fences: {cpu}"]
    # Vela's own reasons come through, each once; its warnings about the fences do not
    assert len(result.warnings) == len(set(result.warnings))
    supported = [w for w in result.warnings if w.startswith("Warning (supported operators)")]
    assert [w.split("ofm: ")[1].split()[0] for w in supported] == ["'q1'", "'f1'", "'f0'"]
    assert all("Reason:" in w for w in supported)
    assert not [w for w in result.warnings if "CUSTOM" in w]

    document = json.loads(result.segments_json.read_text(encoding="utf-8"))
    validate(document, "segments", str(result.segments_json))
    streams = document["command_streams"]
    assert streams["matches_segments"] is False
    assert streams["count"] == 2
    assert streams["operator_types"] == ["ethos-u", FENCE, "DEQUANTIZE", "ADD", "QUANTIZE", FENCE, "ethos-u"]
    assert streams["cpu_operators"] == [
        {"position": 2, "op_type": "DEQUANTIZE", "output_name": "f0"},
        {"position": 3, "op_type": "ADD", "output_name": "f1"},
        {"position": 4, "op_type": "QUANTIZE", "output_name": "q1"},
    ]
    assert result.cpu_operators == ["DEQUANTIZE at 2 (f0)", "ADD at 3 (f1)", "QUANTIZE at 4 (q1)"]
    # the CPU rows are named after their outputs, so the estimate is still fully attributed
    assert result.report.coverage.fraction == 1.0
    assert [(s.op_range_start, s.op_range_end) for s in result.report.segments] == [(0, 0), (1, 3), (4, 4)]


# ---------------------------------------------------------------- errors leave nothing behind


def assert_nothing_in(out: Path) -> None:
    assert not out.exists() or sorted(p.name for p in out.iterdir()) == []


@pytest.fixture
def chain_file(tmp_path: Path) -> Path:
    path = tmp_path / "in" / "chain.tflite"
    path.parent.mkdir()
    save_model(chain_network(0), path)
    return path


def test_unknown_accelerator(tmp_path: Path, chain_file: Path) -> None:
    out = tmp_path / "out"
    with pytest.raises(VelaError, match="unknown accelerator 'ethos-u99'") as caught:
        compile(chain_file, out, accelerator="ethos-u99")
    assert "ethos-u55-128" in caught.value.message and "ethos-u85-256" in caught.value.message
    assert str(chain_file) in caught.value.message
    assert_nothing_in(out)


def test_missing_configuration_file(tmp_path: Path, chain_file: Path) -> None:
    out = tmp_path / "out"
    missing = tmp_path / "nope.ini"
    with pytest.raises(VelaError, match="configuration file does not exist") as caught:
        compile(chain_file, out, config=[missing], system_config="A", memory_mode="B")
    assert caught.value.message.startswith(f"{missing}: ")
    assert_nothing_in(out)


@pytest.mark.parametrize("given", [{}, {"system_config": "A"}, {"memory_mode": "B"}], ids=["none", "sys", "mem"])
def test_configuration_file_without_sections(tmp_path: Path, chain_file: Path, given: dict) -> None:
    out = tmp_path / "out"
    ini = tmp_path / "my.ini"
    ini.write_text("[System_Config.A]\ncore_clock=1e9\n", encoding="utf-8")
    with pytest.raises(VelaError, match="needs an explicit system config and memory mode") as caught:
        compile(chain_file, out, config=[ini], **given)
    assert caught.value.hint
    assert_nothing_in(out)


def test_bad_optimise(tmp_path: Path, chain_file: Path) -> None:
    out = tmp_path / "out"
    with pytest.raises(VelaError, match="optimise is 'Fast'; expected one of Size, Performance"):
        compile(chain_file, out, optimise="Fast")
    assert_nothing_in(out)


@pytest.mark.parametrize("data", [b"", b"TFL3" * 3, None], ids=["empty", "garbage", "truncated"])
def test_corrupt_model(tmp_path: Path, chain_file: Path, data: bytes | None) -> None:
    bad = tmp_path / "bad.tflite"
    bad.write_bytes(chain_file.read_bytes()[:500] if data is None else data)
    out = tmp_path / "out"
    with pytest.raises(ModelError) as caught:
        compile(bad, out)
    assert str(bad) in caught.value.message
    assert_nothing_in(out)


def test_sidecar_of_another_model(tmp_path: Path) -> None:
    fenced = tmp_path / "in" / "m_fenced.tflite"
    rewrite_model_with_fences(chain_network(0), [2]).save(fenced)
    other = rewrite_model_with_fences(chain_network(1), [2])  # same graph, other weights
    fenced.write_bytes(bytes(other.fenced_bytes))  # the sidecar beside it is now the first model's
    out = tmp_path / "out"
    with pytest.raises(VelaError) as caught:
        compile(fenced, out)
    message = caught.value.message
    assert message.startswith(f"{sidecar_path_for(fenced)}: ")
    assert model_sha256(fenced) in message
    assert caught.value.hint and "fence stage" in caught.value.hint
    assert_nothing_in(out)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("options", "quoted"),
    [
        ({"extra_args": ["--cpu-tensor-alignment", "3"]}, "Invalid argument to --cpu-tensor-alignment = 3"),
        ({"extra_args": ["--arena-cache-size", "lots"]}, "argument --arena-cache-size: invalid int value: 'lots'"),
        ({"extra_args": ["--no-such-option"]}, "unrecognized arguments: --no-such-option"),
    ],
    ids=["value", "type", "argument"],
)
def test_vela_failure_quotes_vela_and_leaves_nothing(tmp_path: Path, chain_file: Path, options, quoted) -> None:
    out = tmp_path / "out"
    stale = out / ".chain.vela-killed"  # a killed run's work folder: heliabuild's marker, its lock released
    stale.mkdir(parents=True)
    (stale / WORK_MARKER).write_bytes(WORK_MARKER_TEXT)
    (stale / "chain_vela.tflite").write_bytes(b"half")
    with pytest.raises(VelaError) as caught:
        compile(chain_file, out, **options)
    message = caught.value.message
    assert message.startswith(f"{chain_file}: Vela failed: ")
    assert quoted in message
    assert "Traceback" not in message and "\n" not in message
    assert_nothing_in(out)


@pytest.mark.slow
def test_failure_after_vela_ran_leaves_nothing(tmp_path: Path, chain_file: Path, monkeypatch) -> None:
    import heliabuild.vela.run as run

    def broken(path):
        raise VelaError(f"{path}: broken on purpose")

    monkeypatch.setattr(run, "read_summary", broken)
    out = tmp_path / "out"
    with pytest.raises(VelaError, match="broken on purpose"):
        compile(chain_file, out)
    assert_nothing_in(out)


@pytest.mark.slow
def test_stale_work_folder_of_a_killed_run_is_removed(tmp_path: Path, chain_file: Path) -> None:
    out = tmp_path / "out"
    stale = out / ".chain.vela-x1y2z3"
    stale.mkdir(parents=True)
    (stale / WORK_MARKER).write_bytes(WORK_MARKER_TEXT)
    (stale / "chain_per-layer.csv").write_text("partial", encoding="utf-8")
    unrelated = out / ".other.vela-abc"
    unrelated.mkdir()
    result = compile(chain_file, out)
    assert not stale.exists()
    assert unrelated.is_dir()  # another model's work folder is not ours to remove
    names = output_names(chain_file, result.report.system_config)
    assert sorted(p.name for p in out.iterdir()) == sorted([*names.values(), ".other.vela-abc"])


def test_errors_derive_from_helia_error() -> None:
    assert issubclass(VelaError, HeliaError)


@pytest.mark.slow
def test_failure_removes_the_outputs_of_an_earlier_run(tmp_path: Path, chain_file: Path) -> None:
    out = tmp_path / "out"
    compile(chain_file, out)
    assert any(out.iterdir())
    with pytest.raises(VelaError, match=r"Invalid argument to --cpu-tensor-alignment"):
        compile(chain_file, out, extra_args=["--cpu-tensor-alignment", "3"])
    earlier = output_names(chain_file, "Ethos_U55_High_End_Embedded")
    assert [name for name in earlier.values() if (out / name).exists()] == []
