"""`heliabuild compare BASE NEW`: real bundles of the synthetic chain (runner, then run), hand-made bundles
with chosen samples (heliabuild.results.bundle.write_bundle) for deltas and --max-regression, and two Vela
segments.json; two segment layouts compared by the totals and the segments that line up; the refusals
(another model, two kinds) and --force. The gate's rule itself is tests/test_results_gate.py."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from helpers.checks import assert_one_line_error
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from heliabuild.cli import EXIT_REGRESSION
from heliabuild.fence import rewrite_model_with_fences
from heliabuild.model import save_model
from heliabuild.results.bundle import Sample, signatures_of, write_bundle
from heliabuild.results.compare import CompareError, compare
from heliabuild.results.receipt import Receipt
from heliabuild.runner.freeze import RUNNER_FILE
from heliabuild.synth import chain_network
from heliabuild.vela import compile

MODEL_A = "a" * 64
MODEL_B = "b" * 64
SEGMENTS = [
    {"index": 0, "op_range_start": 0, "op_range_end": 3, "estimated_cycles": 1000},
    {"index": 1, "op_range_start": 4, "op_range_end": 8, "estimated_cycles": 500},
]


def hand_made(
    target: Path,
    latencies: list[float],
    *,
    model: str = MODEL_A,
    segments: list[dict[str, Any]] | None = None,
    policy: dict[str, Any] | None = None,
    segment_latencies: list[list[float]] | None = None,
) -> Path:
    """A verified litert bundle of one measured sample per latency (seconds, host wall clock), with the
    sample's per-segment latencies when given."""
    samples, outputs = [], []
    for index, latency in enumerate(latencies):
        out = [("out", bytes([index]))]
        samples.append(
            Sample(
                index=index,
                latency_s=latency,
                signatures=signatures_of(out),
                segment_latency_s=None if segment_latencies is None else segment_latencies[index],
            )
        )
        outputs.append(out)
    count = len(latencies)
    write_bundle(
        target,
        runner_info={"sha256": "c" * 64, "format": 2},
        run_identity={
            "runner_sha256": "c" * 64,
            "model_sha256": model,
            "backend": "litert",
            "policy": policy or {"state": "carry", "warmup_invokes": 0, "measured_invokes": count},
        },
        receipt=Receipt(
            state="carry",
            warmup_invokes=0,
            measured_invokes=count,
            initialization="interpreter_allocate_and_first_invoke",
            call_once_present=False,
        ),
        samples=samples,
        output_bytes=outputs,
        segments=SEGMENTS if segments is None else segments,
        provider_versions={"ai-edge-litert": "1.2.0", "heliabuild": "0.1.0"},
        created_at=None,
        scopes={"latency_s": "host_wall_clock", "segment_latency_s": "host_wall_clock"},
    )
    return target


@pytest.fixture(scope="module")
def real(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Two runs of one runner of the chain fenced after 3 and 6, one run of the chain fenced after 2 and 6,
    and the segments.json of the first fenced model compiled for two accelerators."""
    from heliabuild.cli import main

    folder = tmp_path_factory.mktemp("compare")
    model = folder / "chain.tflite"
    save_model(chain_network(0), model)
    # one cold invoke per run, as the layout of the measured rows below assumes (litert's default measures 1 + 10)
    policy = folder / "policy.yaml"
    policy.write_text("defaults:\n  fvp:\n    acquisition: {state: single, warmup_invokes: 0, measured_invokes: 1}\n")
    found: dict[str, Path] = {}
    for name, fences in (("a", [3, 6]), ("b", [2, 6])):
        fenced = folder / f"chain_{name}.tflite"
        sidecar = rewrite_model_with_fences(model, fences).save(fenced)
        vela = compile(fenced, folder / f"vela_{name}")
        found[f"segments_{name}"] = Path(vela.segments_json)
        runner = folder / f"runner_{name}"
        argv = ["runner", "--model", fenced, "--sidecar", sidecar, "--segments", vela.segments_json, "-o", runner]
        argv += ["--policy", policy]
        assert main([str(a) for a in argv]) == 0
        runs = ("1", "2") if name == "a" else ("1",)
        for run in runs:
            found[f"bundle_{name}{run}"] = folder / f"result_{name}{run}"
            assert main(["run", str(runner / RUNNER_FILE), "-o", str(found[f"bundle_{name}{run}"])]) == 0
    found["segments_u55_256"] = Path(
        compile(folder / "chain_a.tflite", folder / "vela_u55_256", accelerator="ethos-u55-256").segments_json
    )
    argv = ["runner", "--model", folder / "chain_a.tflite", "--sidecar", folder / "chain_a.fenced_boundaries.json"]
    argv += ["--segments", found["segments_u55_256"], "--policy", policy, "-o", folder / "runner_u55_256"]
    assert main([str(a) for a in argv]) == 0
    found["bundle_u55_256"] = folder / "result_u55_256"
    assert main(["run", str(folder / "runner_u55_256" / RUNNER_FILE), "-o", str(found["bundle_u55_256"])]) == 0
    return found


def test_two_runs_of_one_runner_compare_estimates_and_measurements(cli, real: dict[str, Path]) -> None:
    result = cli("compare", real["bundle_a1"], real["bundle_a2"])
    assert result.code == 0, result.err
    lines = result.out.splitlines()
    assert lines[0] == f"compare {real['bundle_a1']} -> {real['bundle_a2']}"
    assert "options that differ" not in result.out  # one runner: the same options
    assert "estimates (Vela's estimated cycles, not measurements)" in lines
    estimates = [line.split() for line in lines if line.startswith(("  ops ", "  total"))]
    assert [row[1] for row in estimates[:3]] == ["0..3", "4..6", "7..8"] and estimates[3][0] == "total"
    assert all(row[-2:] == ["+0", "+0.00%"] for row in estimates)  # the same estimate on both sides
    measured = [line.split() for line in lines if line.startswith("  latency_s")]
    # figure, two medians, delta, percent, and each side's spread with its share of the median
    assert len(measured) == 1 and len(measured[0]) == 9 and measured[0][5:7] == ["0", "(0.0%)"]


def test_another_segment_layout_is_compared_by_totals_and_the_segments_that_line_up(cli, real: dict[str, Path]) -> None:
    result = cli("compare", real["bundle_a1"], real["bundle_b1"])
    assert result.code == 0, result.err
    assert result.out.splitlines()[1] == (
        f"another segment layout: {real['bundle_a1']} has ops 0..3, ops 4..6, ops 7..8, {real['bundle_b1']} has "
        "ops 0..2, ops 3..6, ops 7..8; compared by the totals and the segments that line up (ops 7..8)"
    )
    assert "  fences  3,6   2,6" in result.out  # the options that differ
    rows = {line.split()[1]: line.split() for line in result.out.splitlines() if line.startswith("  ops ")}
    assert rows["0..3"][3] == "-" and rows["0..2"][2] == "-" and rows["7..8"][4] != "-"  # paired by range

    gated = json.loads(
        cli("compare", real["bundle_a1"], real["bundle_b1"], "--max-regression", "0", "--format", "json").out
    )
    assert gated["comparable"] is True and gated["refusals"] == [] and gated["layout"].startswith("another segment")
    judged = {entry["name"]: entry for entry in gated["gate"]["judgements"]}
    assert {name for name, entry in judged.items() if entry["gated"]} == {"ops 7..8", "total"}
    assert judged["ops 0..3"]["reason"] == judged["ops 0..2"]["reason"] == "only one side has it"
    # a per-segment measured figure is paired by its operator range, and only where the ranges line up
    measured = {entry["name"]: entry for entry in gated["measurements"]}
    segment = [name for name in measured if name.endswith("[ops 7..8]")]
    assert segment and all(measured[name]["base"] and measured[name]["new"] for name in segment)
    assert all(measured[name]["new"] is None for name in measured if name.endswith("[ops 0..3]"))
    # --force is still accepted, and lists no refusal where there is none
    forced = cli("compare", real["bundle_a1"], real["bundle_b1"], "--force")
    assert forced.code == 0 and "not comparable" not in forced.out


def test_another_layout_of_another_model_is_refused_unless_forced(cli, tmp_path: Path) -> None:
    """Two layouts of fenced models whose hashes differ anyway: the operators they cover tell another model."""
    base = hand_made(tmp_path / "base", [0.001, 0.001])
    longer = [
        {"index": 0, "op_range_start": 0, "op_range_end": 4, "estimated_cycles": 1000},
        {"index": 1, "op_range_start": 5, "op_range_end": 12, "estimated_cycles": 500},
    ]
    other = hand_made(tmp_path / "other", [0.001, 0.001], model=MODEL_B, segments=longer)
    line = assert_one_line_error(cli("compare", base, other), "not comparable: another model:")
    assert f"{base} covers ops 0..8, {other} covers ops 0..12" in line
    assert cli("compare", base, other, "--force").code == 0


def test_another_model_is_refused_unless_forced(cli, tmp_path: Path) -> None:
    base = hand_made(tmp_path / "base", [0.001, 0.001])
    other = hand_made(tmp_path / "other", [0.001, 0.001], model=MODEL_B)
    line = assert_one_line_error(cli("compare", base, other), "not comparable: another model:")
    assert f"{base} is of model sha256 {MODEL_A}, {other} of model sha256 {MODEL_B}" in line
    forced = cli("compare", base, other, "--force", "--format", "json")
    assert forced.code == 0, forced.err
    document = json.loads(forced.out)
    assert document["comparable"] is False and document["refusals"][0].startswith("another model:")


def test_deltas_percent_and_max_regression(cli, tmp_path: Path) -> None:
    base = hand_made(tmp_path / "base", [0.001, 0.001, 0.001])
    slower = hand_made(tmp_path / "slower", [0.0012, 0.0012, 0.0012])
    result = cli("compare", base, slower, "--max-regression", "10")
    assert result.code == 0, result.err  # host time is noisy: reported, not gated by default
    assert "  latency_s  0.001        0.0012      +0.0002  +20.00%  0 (0.0%)     0 (0.0%)" in result.out
    assert result.out.endswith(
        "gate: Vela estimates and deterministic figures (QEMU instructions, FVP NPU cycles and beats)\n"
        "not gated (reported only):\n"
        "  latency_s: +20.00%, not gated: host_wall_clock, a noisy scope: gated only with --gate-noisy\n"
        "no figure regresses by more than 10%\n"
    )
    few = cli("compare", base, slower, "--max-regression", "10", "--gate-noisy")
    assert few.code == 0 and "the bootstrap test needs 5 on each side" in few.out  # n=3 says too little
    base, slower = (
        hand_made(tmp_path / name, [seconds * (1 + k / 1000) for k in range(10)])
        for name, seconds in (("base10", 0.001), ("slower10", 0.0012))
    )
    noisy = cli("compare", base, slower, "--max-regression", "10", "--gate-noisy")
    assert noisy.code == EXIT_REGRESSION == 4, noisy.err
    last = noisy.out.splitlines()[-2:]
    assert last[0] == "1 figure(s) regress by more than 10%:"
    assert last[1] == (  # the line docs/cli.md shows
        "  latency_s: +20.00% (noisy: 95% bootstrap interval of the median ratio new/base 1.1952..1.2048, "
        "n=10 base and 10 new, 2000 resamples, seed 0)"
    )
    within = cli("compare", base, slower, "--max-regression", "25", "--gate-noisy")
    assert within.code == 0 and within.out.endswith("no figure regresses by more than 25%\n")
    faster = cli("compare", slower, base, "--max-regression", "0", "--gate-noisy")
    assert faster.code == 0 and "-16.67%" in faster.out  # an improvement is no regression
    # the estimates regress too: a segment's estimated cycles grew by 20%
    grown = [dict(SEGMENTS[0], estimated_cycles=1200), SEGMENTS[1]]
    estimate = hand_made(tmp_path / "estimate", [0.001, 0.001, 0.001], segments=grown)
    regressed = cli("compare", base, estimate, "--max-regression", "10", "--format", "json")
    assert regressed.code == EXIT_REGRESSION
    names = [pair["name"] for pair in json.loads(regressed.out)["regressions"]]
    assert names == ["ops 0..3", "total"]


def test_median_spread_and_a_figure_only_one_side_has(cli, tmp_path: Path) -> None:
    base = hand_made(tmp_path / "base", [0.001, 0.003, 0.0011])
    timed = [[0.0006, 0.0004], [0.0006, 0.0005], [0.0006, 0.0005]]
    new = hand_made(tmp_path / "new", [0.001, 0.0011, 0.0011], segment_latencies=timed)
    document = json.loads(cli("compare", base, new, "--format", "json").out)
    figures = {entry["name"]: entry for entry in document["measurements"]}
    assert figures["latency_s"]["base"]["median"] == 0.0011 and figures["latency_s"]["base"]["unsteady"] is True
    assert figures["latency_s"]["base"]["spread"] == pytest.approx(0.002)
    assert figures["latency_s"]["new"]["unsteady"] is False
    only = figures["segment_latency_s.0"]
    assert only["base"] is None and only["new"]["median"] == 0.0006
    assert only["delta"] is None and only["percent"] is None
    text = cli("compare", base, new).out
    assert "  segment_latency_s.0  -            0.0006" in text
    assert "(181.8% !)" in text  # the base's spread, flagged above 10% of its median


def test_policy_options_that_differ_are_listed(cli, tmp_path: Path) -> None:
    base = hand_made(tmp_path / "base", [0.001, 0.001])
    policy = {"state": "reset", "warmup_invokes": 0, "measured_invokes": 2}
    new = hand_made(tmp_path / "new", [0.001, 0.001], policy=policy)
    text = cli("compare", base, new).out
    assert "options that differ\n  option        base   new\n" in text
    assert "  policy.state  carry  reset\n" in text


def test_markdown_for_a_ci_comment(cli, tmp_path: Path) -> None:
    base = hand_made(tmp_path / "base", [0.001, 0.001])
    new = hand_made(tmp_path / "new", [0.0011, 0.0011])
    text = cli("compare", base, new, "--format", "md").out
    assert text.startswith(f"## compare {base} -> {new}\n")
    assert (
        "### estimates (Vela's estimated cycles, not measurements)\n\n| segment | base | new | delta | percent |\n"
        in text
    )
    assert "| ops 0..3 | 1000 | 1000 | +0 | +0.00% |\n" in text
    assert "| latency_s | 0.001 | 0.0011 | +0.0001 | +10.00% | 0 (0.0%) | 0 (0.0%) |\n" in text
    gated = cli("compare", base, new, "--format", "md", "--max-regression", "5").out
    assert gated.endswith(  # the gate's lists as Markdown lists
        "not gated (reported only):\n"
        "- latency_s: +10.00%, not gated: host_wall_clock, a noisy scope: gated only with --gate-noisy\n"
        "no figure regresses by more than 5%\n"
    )


def test_output_is_deterministic(cli, tmp_path: Path) -> None:
    base = hand_made(tmp_path / "base", [0.001, 0.002])
    new = hand_made(tmp_path / "new", [0.0015, 0.002])
    for fmt in ("text", "md", "json"):
        assert cli("compare", base, new, "--format", fmt).out == cli("compare", base, new, "--format", fmt).out


def test_two_segments_json_compare_vela_options_and_estimates(cli, real: dict[str, Path], tmp_path: Path) -> None:
    result = cli("compare", real["segments_a"], real["segments_u55_256"])
    assert result.code == 0, result.err
    assert "  accelerator  ethos-u55-128  ethos-u55-256" in result.out
    assert "measurements (" not in result.out  # Vela's outputs hold estimates only
    assert "memory (Vela's allocation for the compiled model, KiB)\n" in result.out
    memory = {
        entry["name"]: entry
        for entry in json.loads(cli("compare", real["segments_a"], real["segments_u55_256"], "--format", "json").out)[
            "memory"
        ]
    }
    assert set(memory) == {"sram_memory_used_kib", "off_chip_flash_memory_used_kib"}
    assert all(entry["base"] is not None and entry["new"] is not None for entry in memory.values())
    layout = cli("compare", real["segments_a"], real["segments_b"])  # one source model, two layouts
    assert layout.code == 0 and layout.out.splitlines()[1].startswith("another segment layout: ")
    other = json.loads(real["segments_b"].read_text(encoding="utf-8"))
    other["source_sha256"] = "f" * 64
    (tmp_path / "other_segments.json").write_text(json.dumps(other), encoding="utf-8")
    refused = cli("compare", real["segments_a"], tmp_path / "other_segments.json")
    assert_one_line_error(refused, "not comparable: another model:", f"from model sha256 {'f' * 64}")


def test_two_kinds_or_a_bad_input_exit_2(cli, real: dict[str, Path], tmp_path: Path) -> None:
    assert_one_line_error(
        cli("compare", real["bundle_a1"], real["segments_a"]),
        f"{real['bundle_a1']} is a result bundle and {real['segments_a']} a Vela segments.json; "
        "compare two of one kind",
    )
    missing = cli("compare", real["bundle_a1"], tmp_path / "missing")
    assert_one_line_error(missing, "missing", "e.g. results/kws.previous results/kws")  # the name a rebuild keeps
    assert_one_line_error(cli("compare", real["bundle_a1"], real["bundle_a2"], "--max-regression", "x"), "percent")
    tampered = tmp_path / "tampered"
    for path in real["bundle_a2"].rglob("*"):
        if path.is_file():
            (tampered / path.relative_to(real["bundle_a2"])).parent.mkdir(parents=True, exist_ok=True)
            (tampered / path.relative_to(real["bundle_a2"])).write_bytes(path.read_bytes())
    (tampered / "run_summary.csv").write_text("index\n", encoding="utf-8")
    assert_one_line_error(cli("compare", real["bundle_a1"], tampered), "run_summary.csv")


def test_the_library_raises_compare_error(real: dict[str, Path], tmp_path: Path) -> None:
    other = hand_made(tmp_path / "other", [0.001], model=MODEL_B, segments=[dict(SEGMENTS[0], op_range_end=12)])
    with pytest.raises(CompareError, match="another model"):
        compare(real["bundle_a1"], other)
    assert compare(real["bundle_a1"], other, force=True).refusals
    assert compare(real["bundle_a1"], real["bundle_b1"]).layout is not None
    with pytest.raises(CompareError, match="--gate-noisy gates with --max-regression"):
        compare(real["bundle_a1"], real["bundle_a2"], gate_noisy=True)


def test_a_bundle_carries_vela_memory_and_options_which_show_and_compare_label_as_vela(
    cli, real: dict[str, Path]
) -> None:
    from heliabuild.results.reader import load_result
    from heliabuild.vela.summary import read_summary

    summary = read_summary(next((real["segments_a"].parent).glob("*_summary_*.csv")))
    vela = load_result(real["bundle_a1"]).vela
    assert vela == {
        "version": vela["version"],
        "accelerator": "ethos-u55-128",
        "system_config": summary.system_config,
        "memory_mode": summary.memory_mode,
        "sram_memory_used_kib": summary.sram_memory_used_kib,
        "off_chip_flash_memory_used_kib": summary.off_chip_flash_memory_used_kib,
    }
    shown = cli("show", real["bundle_a1"]).out
    assert (
        f"  memory (Vela's allocation, not measured): SRAM used {summary.sram_memory_used_kib:.1f} KiB, "
        f"off-chip flash used {summary.off_chip_flash_memory_used_kib:.1f} KiB\n"
    ) in shown
    result = cli("compare", real["bundle_a1"], real["bundle_u55_256"])
    assert result.code == 0, result.err
    assert "  accelerator  ethos-u55-128  ethos-u55-256" in result.out
    assert "memory (Vela's allocation for the compiled model, KiB)\n" in result.out
    report = json.loads(cli("compare", real["bundle_a1"], real["bundle_u55_256"], "--format", "json").out)
    memory = {entry["name"]: entry for entry in report["memory"]}
    assert memory["sram_memory_used_kib"]["base"] == summary.sram_memory_used_kib
    assert memory["off_chip_flash_memory_used_kib"]["new"] is not None
    assert not any(pair["name"] in memory for pair in report["regressions"])


def _layout(fences: set[int]) -> list[dict[str, Any]]:
    """The segments of the 9-operator chain fenced after `fences`, each estimated at 100 cycles per operator."""
    segments, start = [], 0
    for index, end in enumerate([*sorted(fences), 8]):
        segments.append(
            {"index": index, "op_range_start": start, "op_range_end": end, "estimated_cycles": 100 * (end - start + 1)}
        )
        start = end + 1
    return segments


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sets(st.integers(0, 7), max_size=4), st.sets(st.integers(0, 7), max_size=4))
def test_two_layouts_are_gated_by_the_total_and_the_segments_that_line_up(before: set[int], after: set[int]) -> None:
    import tempfile

    layouts = [_layout(before), _layout(after)]
    with tempfile.TemporaryDirectory() as folder:
        sides = [
            hand_made(
                Path(folder) / name,
                [0.001, 0.001],
                model=MODEL_A if before == after else model,
                segments=segments,
                segment_latencies=[[0.0001] * len(segments)] * 2,
            )
            for name, model, segments in (("base", MODEL_A, layouts[0]), ("new", MODEL_B, layouts[1]))
        ]
        comparison = compare(*sides, max_regression=0)
    ranges = [{(s["op_range_start"], s["op_range_end"]) for s in segments} for segments in layouts]
    common = {f"ops {start}..{end}" for start, end in ranges[0] & ranges[1]}
    assert not comparison.refusals and (comparison.layout is None) == (before == after)
    assert {j.name for j in comparison.judgements if j.nature == "estimate" and j.gated} == common | {"total"}
    assert not comparison.regressions  # 100 cycles per operator on both sides: every total and segment agrees
    paired = {name for name, base, new in comparison.measurements if base is not None and new is not None}
    if before == after:
        assert paired == {"latency_s", *(f"segment_latency_s.{k}" for k in range(len(layouts[0])))}
    else:
        assert paired == {"latency_s", *(f"segment_latency_s[{name}]" for name in common)}
