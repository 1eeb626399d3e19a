"""Attributing Vela's per-layer rows to operators: the rules on hand-made rows and models (no Vela run)."""

from __future__ import annotations

import pytest
from helpers.tflite import OP, Net, T, chain_model

from heliabuild.errors import SchemaError
from heliabuild.fence import rewrite_model_with_fences
from heliabuild.fence.coverage import FenceCoverage, UnmatchedRow
from heliabuild.model import load_model
from heliabuild.schema_files import validate
from heliabuild.vela import (
    CommandStreams,
    SegmentsReport,
    attribute_rows,
    coverage_of,
    estimate_segments,
    parse_per_layer,
)
from heliabuild.vela.attribution import RULE_FENCE, RULE_NAME, RULE_NAME_PREFIX, RULE_PRECEDING_COPY
from heliabuild.vela.streams import CompiledOperator

# Vela 5.2's header with --verbose-performance; the reader looks columns up by name.
HEADER = (
    "Original Operator,NNG Operator,Target,Staging Usage,Peak% (Staging),Op Cycles,Network% (cycles),NPU,"
    "SRAM AC,DRAM AC,OnFlash AC,OffFlash AC,MAC Count,Network% (MAC),Util% (MAC),Name"
)


def csv_text(*rows: tuple[str, str, int, str] | tuple[str, str, int, str, int]) -> str:
    """(Original Operator, NNG Operator, Op Cycles, Name[, MAC Count]) rows in Vela's per-layer layout."""
    lines = [HEADER]
    for row in rows:
        original, nng, cycles, name = row[:4]
        macs = row[4] if len(row) > 4 else 0
        target = "CPU" if nng == "Passthrough" else "NPU"
        lines.append(f"{original},{nng},{target},0,0.0,{cycles},0.0,{cycles},0,0,0,0,{macs},0.0,0.0,{name}")
    return "\n".join(lines) + "\n"


def rules(model, text: str) -> list[tuple[int | None, int | None, str | None]]:
    return [(a.operator, a.fence, a.rule) for a in attribute_rows(model, parse_per_layer(text))]


def softmax_model():
    """input -> ADD -> x -> SOFTMAX -> out: the shape of every classifier head."""
    net = Net()
    source = net.tensor("input")
    constant = net.tensor("c", data=bytes(12))
    x = net.tensor("x")
    out = net.tensor("out")
    net.op(OP.ADD, [source, constant], [x])
    net.op(OP.SOFTMAX, [x], [out])
    return net.model([source], [out])


def fork_model():
    """ADD0 writes t; ADD1 and ADD2 both read it (ADD2 also reads ADD1's u)."""
    net = Net()
    source = net.tensor("input")
    constant = net.tensor("c", data=bytes(12))
    t, u, v = net.tensor("t"), net.tensor("u"), net.tensor("v")
    net.op(OP.ADD, [source, constant], [t])
    net.op(OP.ADD, [t, constant], [u])
    net.op(OP.ADD, [t, u], [v])
    return net.model([source], [v])


# ---------------------------------------------------------------- rule 1: name


def test_rows_named_after_an_output_belong_to_its_operator() -> None:
    model = chain_model(4)  # tensors input, c0, t0, c1, t1, c2, t2, c3, output
    text = csv_text(
        ("Add", "Add", 10, "t0"), ("Add", "Relu", 0, "t0"), ("Add", "Add", 5, "t2"), ("Add", "Add", 7, "output")
    )
    assert rules(model, text) == [
        (0, None, RULE_NAME),
        (0, None, RULE_NAME),
        (2, None, RULE_NAME),
        (3, None, RULE_NAME),
    ]


# ---------------------------------------------------------------- rule 2: name_prefix


def test_softmax_decomposition_goes_to_the_softmax_not_the_producer() -> None:
    """`x_softmax_<n>` touches both ADD (writes x) and SOFTMAX (reads x): the Original Operator decides."""
    text = csv_text(
        ("Add", "Add", 100, "x"),
        ("Softmax", "MaxPool", 134, "x_softmax_0"),
        ("Softmax", "Sub", 24, "x_softmax_2"),
        ("Softmax", "LUT", 0, "x_softmax_2"),
        ("Softmax", "Add", 80, "x_softmax_26_broadcasted"),
        ("Softmax", "Asr", 18, "out"),
    )
    assert rules(softmax_model(), text) == [
        (0, None, RULE_NAME),
        *[(1, None, RULE_NAME_PREFIX)] * 4,
        (1, None, RULE_NAME),
    ]


def test_prefix_of_matching_type_wins_over_a_reader() -> None:
    """The type tie-break comes first: an Add row named `x_...` goes to ADD (writes x), not SOFTMAX (reads x)."""
    text = csv_text(("Add", "Add", 100, "x_split_0"), ("Softmax", "Asr", 18, "out"))
    assert rules(softmax_model(), text)[0] == (0, None, RULE_NAME_PREFIX)


def test_prefix_prefers_a_reader_then_the_first_at_or_after_the_previous_row() -> None:
    model = fork_model()
    # t is written by ADD0 and read by ADD1 and ADD2, all of type Add: a reader wins, the first one in order.
    assert rules(model, csv_text(("Add", "Add", 1, "t"), ("Add", "Add", 2, "t_part")))[1] == (1, None, RULE_NAME_PREFIX)
    # ... unless the previous attributed row is already at ADD2: then ADD1 lies behind and ADD2 wins.
    text = csv_text(("Add", "Add", 1, "t"), ("Add", "Add", 1, "u"), ("Add", "Add", 1, "v"), ("Add", "Add", 2, "t_part"))
    assert rules(model, text)[3] == (2, None, RULE_NAME_PREFIX)
    # With no reader of the type, the writer is taken.
    assert rules(model, csv_text(("Add", "Add", 2, "v_part")))[0] == (2, None, RULE_NAME_PREFIX)


def test_the_longest_matching_prefix_wins() -> None:
    net = Net()
    source = net.tensor("input")
    constant = net.tensor("c", data=bytes(12))
    a, a_b, out = net.tensor("a"), net.tensor("a_b"), net.tensor("out")
    net.op(OP.ADD, [source, constant], [a])
    net.op(OP.ADD, [a, constant], [a_b])
    net.op(OP.ADD, [a_b, constant], [out])
    model = net.model([source], [out])
    # "a_b_c" has the prefixes "a" (ADD0, ADD1) and "a_b" (ADD1, ADD2); "a_b" is longer and ADD2 reads it.
    assert rules(model, csv_text(("Add", "Add", 3, "a_b_c")))[0] == (2, None, RULE_NAME_PREFIX)


def test_a_name_without_an_underscore_cut_at_a_tensor_is_unmatched() -> None:
    assert rules(softmax_model(), csv_text(("Add", "Add", 3, "xy"), ("Add", "Add", 3, "zz_x")))[0] == (None, None, None)


# ---------------------------------------------------------------- rule 3: preceding_copy


def test_memory_copy_before_an_operator_of_the_same_type_belongs_to_it() -> None:
    """Vela for Ethos-U85 names its MemoryCopy `input_buffer_`, even where a tensor is called `input`."""
    model = chain_model(3)  # the graph input is named "input"
    text = csv_text(
        ("Add", "Add", 10, "t0"),
        ("Add", "MemoryCopy", 500, "input_buffer_"),
        ("Add", "Add", 20, "t1"),
        ("Add", "Add", 30, "output"),
    )
    assert rules(model, text) == [
        (0, None, RULE_NAME),
        (1, None, RULE_PRECEDING_COPY),
        (1, None, RULE_NAME),
        (2, None, RULE_NAME),
    ]


def test_copy_followed_by_another_type_or_nothing_stays_unmatched() -> None:
    model = softmax_model()
    text = csv_text(
        ("Add", "MemoryCopy", 500, "input_buffer_"),
        ("Softmax", "Asr", 18, "out"),
        ("Softmax", "MemoryCopy", 7, "input_buffer_"),
    )
    assert rules(model, text) == [(None, None, None), (1, None, RULE_NAME), (None, None, None)]


def test_consecutive_unmatched_rows_of_the_same_type_all_take_the_following_operator() -> None:
    text = csv_text(
        ("Softmax", "Mul", 1, "mystery"), ("Softmax", "MemoryCopy", 1, "input_buffer_"), ("Softmax", "Asr", 1, "out")
    )
    assert rules(softmax_model(), text) == [(1, None, RULE_PRECEDING_COPY)] * 2 + [(1, None, RULE_NAME)]


# ---------------------------------------------------------------- fences, coverage, segments


def fenced_chain():
    result = rewrite_model_with_fences(chain_model(4), [1])
    return load_model(bytes(result.fenced_bytes))


def test_fence_rows_and_original_indices_in_a_fenced_model() -> None:
    text = csv_text(
        ("Add", "Add", 10, "t0"),
        ("Add", "Add", 20, "t1"),
        ("Custom", "Passthrough", 0, "t1/stream_split"),
        ("Add", "MemoryCopy", 400, "input_buffer_"),
        ("Add", "Add", 30, "t2"),
        ("Add", "Add", 40, "output"),
    )
    assert rules(fenced_chain(), text) == [
        (0, None, RULE_NAME),
        (1, None, RULE_NAME),
        (None, 0, RULE_FENCE),
        (2, None, RULE_PRECEDING_COPY),  # original index: the fence is not counted
        (2, None, RULE_NAME),
        (3, None, RULE_NAME),
    ]


def test_segments_sum_their_rows_and_the_closing_fence() -> None:
    text = csv_text(
        ("Add", "Add", 10, "t0", 100),
        ("Add", "Add", 20, "t1", 200),
        ("Custom", "Passthrough", 3, "t1/stream_split"),
        ("Add", "Add", 30, "t2", 300),
        ("Add", "Add", 40, "output", 400),
        ("Add", "Add", 5, "nobody"),
    )
    rows = parse_per_layer(text)
    segments, coverage, attributions = estimate_segments(fenced_chain(), rows)
    assert [(s.op_range_start, s.op_range_end, s.rows, s.op_cycles, s.mac_count) for s in segments] == [
        (0, 1, (0, 1, 2), 33, 300),
        (2, 3, (3, 4), 70, 700),
    ]
    assert coverage == FenceCoverage(
        total_cycles=108,
        matched_cycles=103,
        row_count=6,
        unmatched_rows=(
            UnmatchedRow(index=5, name="nobody", original_operator="Add", nng_operator="Add", op_cycles=5),
        ),
    )
    assert coverage.fraction == pytest.approx(103 / 108)
    assert attributions[5].matched is False


def test_coverage_of_rows_without_cycles() -> None:
    model = softmax_model()
    rows = parse_per_layer(csv_text(("Add", "Add", 0, "x")))
    assert coverage_of(rows, attribute_rows(model, rows)).fraction == 1.0
    rows = parse_per_layer(csv_text(("Add", "Add", 0, "x"), ("Add", "Add", 0, "elsewhere")))
    coverage = coverage_of(rows, attribute_rows(model, rows))
    assert coverage.fraction == 0.0
    assert [r.name for r in coverage.unmatched_rows] == ["elsewhere"]
    assert coverage_of([], []).fraction == 1.0


def test_float_model_operators_are_recognised_by_type() -> None:
    """The type keys come from the opcode whatever the tensor type."""
    net = Net()
    source = net.tensor("input", dtype=T.FLOAT32)
    out = net.tensor("out", dtype=T.FLOAT32)
    net.op(OP.SOFTMAX, [source], [out])
    model = net.model([source], [out])
    assert rules(model, csv_text(("Softmax", "Passthrough", 0, "input_softmax_0")))[0] == (0, None, RULE_NAME_PREFIX)


# ---------------------------------------------------------------- the segments.json document


def hand_report(cpu: tuple[CompiledOperator, ...] = ()) -> SegmentsReport:
    model = fenced_chain()
    text = csv_text(("Add", "Add", 10, "t0"), ("Add", "Add", 20, "t1"), ("Add", "Add", 5, "who"))
    segments, coverage, attributions = estimate_segments(model, parse_per_layer(text))
    types = ("ethos-u", "ETHOS_U_STREAM_SPLIT", *[op.op_type for op in cpu], "ethos-u")
    return SegmentsReport(
        model="m.tflite",
        model_sha256="a" * 64,
        source_sha256=None,
        vela_version="5.2.0",
        accelerator="ethos-u55-128",
        system_config="Ethos_U55_High_End_Embedded",
        memory_mode="Shared_Sram",
        boundary_after_ops=(1,),
        segments=tuple(segments),
        coverage=coverage,
        attributions=tuple(attributions),
        streams=CommandStreams(
            operator_types=types, npu_positions=(0, len(types) - 1), fence_positions=(1,), cpu_operators=cpu
        ),
    )


def test_segments_document_validates_with_unmatched_rows_and_cpu_operators() -> None:
    report = hand_report()
    assert report.streams_match_segments
    document = report.to_json()
    validate(document, "segments", "hand")
    assert document["rows"][2] == {"row": 2, "operator": None, "fence": None, "rule": None}

    cpu = hand_report((CompiledOperator(position=2, op_type="DEQUANTIZE", output_name="f0"),))
    assert not cpu.streams_match_segments
    document = cpu.to_json()
    validate(document, "segments", "hand")
    assert document["command_streams"]["matches_segments"] is False
    assert document["command_streams"]["cpu_operators"] == [
        {"position": 2, "op_type": "DEQUANTIZE", "output_name": "f0"}
    ]


@pytest.mark.parametrize(
    ("path", "value", "fragment"),
    [
        ((), {"extra": 1}, "extra"),
        (("vela",), {"clock": 1}, "clock"),
        (("segments", 0), {"latency_us": 1}, "latency_us"),
        (("rows", 0), {"rule": "guess"}, "rule"),
        (("coverage",), {"fraction": 1.5}, "fraction"),
        ((), {"source_sha256": "xyz"}, "source_sha256"),
        (("command_streams",), {"matches_segments": "yes"}, "matches_segments"),
    ],
)
def test_segments_schema_rejects(path: tuple, value: dict, fragment: str) -> None:
    document = hand_report().to_json()
    target = document
    for key in path:
        target = target[key]
    target.update(value)
    with pytest.raises(SchemaError, match="schema segments") as caught:
        validate(document, "segments", "hand")
    assert fragment in caught.value.message
