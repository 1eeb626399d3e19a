"""Output verification (docs/runner.md, "Verification"): NaN equals NaN, a NaN against a number is an unbounded
difference no bound admits, every difference is recorded as JSON can carry it; the reference names its op
resolver and compares like with like; a qemu-m55 run is strict by default. Through the CLI on real QEMU and
LiteRT; where a test replaces QEMU it uses a TEST DOUBLE (a script named qemu-system-arm on PATH replaying the
real firmware's console with one output changed), and says so in its name."""

from __future__ import annotations

import json
import zlib
from pathlib import Path

import numpy as np
import pytest
from conftest import require_firmware_tools
from helpers.trees import snapshot
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from test_runner_qemu import _install_fake_qemu

from heliabuild.cli import EXIT_VERIFICATION
from heliabuild.fence import rewrite_model_with_fences
from heliabuild.results.reader import load_result
from heliabuild.runner.verification import (
    ReferenceOutput,
    compare_outputs,
    first_excess,
    outputs_finite,
    resolve_verification,
)

NAN = float("nan")
INF = float("inf")
HOST = "BUILTIN_WITHOUT_DEFAULT_DELEGATES"


def _check(expected: list[float], found: list[float]):  # type: ignore[no-untyped-def]
    reference = [ReferenceOutput("out", np.array(expected, np.float32))]
    (check,) = compare_outputs(reference, [np.array(found, np.float32).tobytes()])
    return check


def test_two_nans_are_equal_whatever_their_payload() -> None:
    quiet = np.array([NAN], np.float32)
    payload = np.array([0x7FC00001], np.uint32).view(np.float32)
    reference = [ReferenceOutput("out", np.concatenate([quiet, np.array([1.5], np.float32)]))]
    (check,) = compare_outputs(reference, [np.concatenate([payload, np.array([1.5], np.float32)]).tobytes()])
    assert (check.max_abs_diff, check.differing, check.unbounded, check.elements) == (0.0, 0, 0, 2)
    assert first_excess([check], 0) is None


@pytest.mark.parametrize(
    ("expected", "found", "differing"),
    [
        ([NAN, 1.0], [2.0, 1.0], 1),  # the reference NaN, the target a number
        ([2.0, 1.0], [NAN, 1.0], 1),  # the target NaN
        ([INF, 1.0], [3.0, 1.0], 1),  # an infinity against a number
        ([INF, -INF], [-INF, INF], 2),  # infinities of the other sign
        ([INF, 0.0], [NAN, 0.5], 2),  # an infinity against a NaN, and a bounded difference beside it
    ],
    ids=["nan-reference", "nan-target", "inf-number", "inf-signs", "inf-nan"],
)
def test_a_nan_or_an_infinity_against_another_value_is_unbounded_and_refused_by_any_bound(
    expected: list[float], found: list[float], differing: int
) -> None:
    check = _check(expected, found)
    assert check.max_abs_diff is None and check.differing == differing and check.unbounded >= 1
    assert first_excess([check], 1e30) is check and first_excess([check], 0) is check
    assert first_excess([check], None) is None  # no bound: recorded only
    assert json.loads(json.dumps(check.to_json(), allow_nan=False))["max_abs_diff"] is None


def test_equal_infinities_are_equal_and_a_bounded_difference_is_the_largest() -> None:
    check = _check([INF, -INF, 1.0, 2.0], [INF, -INF, 1.25, 2.0])
    assert (check.max_abs_diff, check.differing, check.unbounded) == (0.25, 1, 0)
    assert first_excess([check], 0.25) is None and first_excess([check], 0.2) is check


def test_integer_outputs_are_compared_in_quantized_steps() -> None:
    reference = [ReferenceOutput("q", np.array([-128, 0, 127], np.int8))]
    (check,) = compare_outputs(reference, [np.array([127, 0, 127], np.int8).tobytes()])
    assert (check.max_abs_diff, check.differing, check.unbounded) == (255, 1, 0)


@given(
    hnp.arrays(
        st.sampled_from([np.float32, np.float16, np.float64]),
        hnp.array_shapes(max_dims=2, max_side=8),
        elements=st.floats(allow_nan=True, allow_infinity=True, width=16),
    ),
    st.data(),
)
def test_every_comparison_is_json_and_an_output_equals_itself(values: np.ndarray, data: st.DataObject) -> None:
    reference = [ReferenceOutput("out", values)]
    (same,) = compare_outputs(reference, [values.tobytes()])
    assert (same.max_abs_diff, same.differing, same.unbounded) == (0, 0, 0)
    other = data.draw(hnp.arrays(values.dtype, values.shape, elements=st.floats(width=16)))
    (check,) = compare_outputs(reference, [other.tobytes()])
    json.dumps(check.to_json(), allow_nan=False)
    assert (check.max_abs_diff is None) == (check.unbounded > 0)
    assert check.unbounded <= check.differing <= check.elements
    assert outputs_finite(reference, [values.tobytes()]) == bool(np.isfinite(values).all())


@pytest.mark.parametrize(
    ("backend", "requested", "compares", "expected"),
    [
        ("qemu-m55", None, True, ("BUILTIN_REF", 0, "default")),
        ("qemu-m55", {"max_abs_diff": None}, True, ("BUILTIN_REF", None, "explicit")),
        ("qemu-m55", {"resolver": HOST}, True, (HOST, None, "default")),
        ("fvp", None, True, ("BUILTIN_REF", None, "default")),
        ("fvp", {"max_abs_diff": 3}, True, ("BUILTIN_REF", 3, "explicit")),
        ("litert", {"reference": "litert"}, False, (HOST, 0, "default")),
        ("litert", {"resolver": "BUILTIN_REF"}, False, ("BUILTIN_REF", None, "default")),
    ],
)  # fmt: skip
def test_the_reference_resolver_and_bound_are_resolved_per_backend(
    backend: str, requested: dict[str, object] | None, compares: bool, expected: tuple[object, ...]
) -> None:
    resolved = resolve_verification(requested, backend, compares_always=compares)
    assert resolved is not None and resolved["reference"] == "litert"
    assert (resolved["resolver"], resolved["max_abs_diff"], resolved["max_abs_diff_source"]) == expected
    assert resolve_verification(None, "litert", compares_always=False) is None


def replay_with_first_output_element(
    runner_dir: Path, bin_dir: Path, monkeypatch: pytest.MonkeyPatch, data: bytes
) -> None:
    """Capture the firmware's real console on QEMU, replace the first bytes of every output record with `data`
    (each record re-signed, so only its content differs) and install the TEST DOUBLE of QEMU replaying it."""
    from heliabuild.firmware.qemu import run_on_qemu

    lines = run_on_qemu(runner_dir / "firmware.elf", timeout_s=60).console.split("\n")
    for k, line in enumerate(lines):
        fields = line.split()
        if len(fields) > 2 and fields[2] == "output":
            payload = bytearray.fromhex(fields[5][1:])
            payload[: len(data)] = data
            body = " ".join([*fields[:5], "x" + payload.hex()]) + " "
            lines[k] = f"{body}*{zlib.crc32(body.encode()):08x}"
    replay = bin_dir / "console.txt"
    bin_dir.mkdir(parents=True, exist_ok=True)
    replay.write_text("\n".join(lines))
    _install_fake_qemu(bin_dir, monkeypatch, f"cat '{replay}'\n")


@pytest.fixture
def division(cli, tmp_path: Path, firmware_library: Path, monkeypatch: pytest.MonkeyPatch) -> Path:  # type: ignore[no-untyped-def]
    """The issue's reproduction, through the CLI: `synth div_f32`, its AOT plan for mps3_an547 and a qemu-m55
    runner; zero inputs make every output 0/0, a NaN on the firmware and on LiteRT alike."""
    require_firmware_tools()
    monkeypatch.setenv("HELIA_FIRMWARE_CACHE", str(firmware_library.parent.parent))
    model = tmp_path / "div.tflite"
    assert cli("synth", "div_f32", "-o", model).code == 0
    assert cli("aot-plan", model, "--prefix", "div", "--platform", "mps3_an547", "-o", tmp_path / "plan").code == 0
    built = cli(
        "runner", "--model", model, "--aot-plan", tmp_path / "plan" / "div_plan.json", "--backend", "qemu-m55",
        "-o", tmp_path / "runner",
    )  # fmt: skip
    assert built.code == 0, built.err
    return tmp_path / "runner"


def test_nan_outputs_on_both_sides_publish_on_qemu(cli, division: Path, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    ran = cli("run", division / "runner.json", "-o", tmp_path / "result")
    assert ran.code == 0, ran.err
    document = json.loads((tmp_path / "result" / "result.json").read_text())  # strict JSON: no NaN in it
    (sample,) = document["measurements"]["samples"]
    assert sample["verification"] == [
        {
            "differing_elements": 0,
            "elements": 1024,
            "max_abs_diff": 0.0,
            "name": "div",
            "position": 0,
            "unbounded_elements": 0,
        }
    ]
    assert sample["sanity"] == {"outputs_finite": False}  # the outputs are NaN, and the bundle says so
    assert document["run_identity"]["policy"]["verification"] == {
        "reference": "litert",
        "resolver": "BUILTIN_REF",
        "max_abs_diff": 0,
        "max_abs_diff_source": "default",
    }
    assert load_result(tmp_path / "result").samples[0].verification == sample["verification"]


def test_a_number_against_the_reference_nan_is_refused_replayed_by_a_qemu_test_double(  # type: ignore[no-untyped-def]
    cli, division: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    replay_with_first_output_element(division, tmp_path / "bin", monkeypatch, np.float32(1.0).tobytes())
    before = snapshot(tmp_path)
    refused = cli("run", division / "runner.json", "-o", tmp_path / "result")
    assert refused.code == EXIT_VERIFICATION == 3
    assert (
        "output 0 (div) differs from LiteRT reference kernels (BUILTIN_REF) without bound (a NaN or an infinity "
        "against another value) in 1 of its 1024 elements, more than the default verification.max_abs_diff 0"
    ) in refused.err
    assert snapshot(tmp_path) == before


def test_with_the_bound_opted_out_an_unbounded_difference_is_recorded_as_null_replayed_by_a_qemu_test_double(  # type: ignore[no-untyped-def]
    cli, tmp_path: Path, firmware_library: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    require_firmware_tools()
    monkeypatch.setenv("HELIA_FIRMWARE_CACHE", str(firmware_library.parent.parent))
    model = tmp_path / "div.tflite"
    assert cli("synth", "div_f32", "-o", model).code == 0
    assert cli("aot-plan", model, "--prefix", "div", "--platform", "mps3_an547", "-o", tmp_path / "plan").code == 0
    policy = tmp_path / "policy.yaml"
    policy.write_text("defaults:\n  fvp:\n    verification: {max_abs_diff: null}\n")
    built = cli(
        "runner", "--model", model, "--aot-plan", tmp_path / "plan" / "div_plan.json", "--backend", "qemu-m55",
        "--policy", policy, "-o", tmp_path / "runner",
    )  # fmt: skip
    assert built.code == 0, built.err
    replay_with_first_output_element(tmp_path / "runner", tmp_path / "bin", monkeypatch, np.float32(1.0).tobytes())
    assert cli("run", tmp_path / "runner" / "runner.json", "-o", tmp_path / "result").code == 0
    (sample,) = json.loads((tmp_path / "result" / "result.json").read_text())["measurements"]["samples"]
    ((check),) = sample["verification"]
    assert (check["max_abs_diff"], check["differing_elements"], check["unbounded_elements"]) == (None, 1, 1)


def _litert_run(cli, model: Path, folder: Path, verification: str):  # type: ignore[no-untyped-def]
    policy = folder / "policy.yaml"
    folder.mkdir(parents=True, exist_ok=True)
    policy.write_text(f"defaults:\n  fvp:\n    verification: {verification}\n")
    assert cli("runner", "--model", model, "--policy", policy, "-o", folder / "runner").code == 0
    return cli("run", folder / "runner" / "runner.json", "-o", folder / "result")


def test_litert_is_compared_like_for_like_so_a_zero_bound_accepts_the_unmodified_mlperf_resnet(  # type: ignore[no-untyped-def]
    cli, resnet_path: Path, tmp_path: Path
) -> None:
    ran = _litert_run(cli, resnet_path, tmp_path / "default", "{max_abs_diff: 0}")
    assert ran.code == 0, ran.err
    result = load_result(tmp_path / "default" / "result")
    assert result.document["run_identity"]["policy"]["verification"] == {
        "reference": "litert",
        "resolver": "BUILTIN_WITHOUT_DEFAULT_DELEGATES",
        "max_abs_diff": 0,
        "max_abs_diff_source": "explicit",
    }
    (sample,) = result.samples
    assert sample.verification is not None
    assert [(c["max_abs_diff"], c["differing_elements"], c["elements"]) for c in sample.verification] == [(0, 0, 10)]
    fenced = tmp_path / "resnet_fenced.tflite"
    rewrite_model_with_fences(resnet_path, [5, 11]).save(fenced)  # three segments, against the unfenced model
    segmented = _litert_run(cli, fenced, tmp_path / "fenced", "{}")
    assert segmented.code == 0, segmented.err
    (sample,) = load_result(tmp_path / "fenced" / "result").samples
    assert sample.verification is not None and sample.verification[0]["differing_elements"] == 0


def test_the_reference_kernels_are_an_explicit_choice_on_litert_and_differ_from_its_own(  # type: ignore[no-untyped-def]
    cli, resnet_path: Path, tmp_path: Path
) -> None:
    recorded = _litert_run(cli, resnet_path, tmp_path / "recorded", "{resolver: BUILTIN_REF}")
    assert recorded.code == 0, recorded.err  # not exact by construction: recorded, not bounded, by default
    (sample,) = load_result(tmp_path / "recorded" / "result").samples
    assert sample.verification is not None
    ((check),) = sample.verification
    assert check["max_abs_diff"] > 0 and check["differing_elements"] > 0  # LiteRT's two kernel sets disagree
    bounded = _litert_run(cli, resnet_path, tmp_path / "bounded", "{resolver: BUILTIN_REF, max_abs_diff: 0}")
    assert bounded.code == EXIT_VERIFICATION, bounded.err
    assert "differs from LiteRT reference kernels (BUILTIN_REF) by " in bounded.err
    assert not (tmp_path / "bounded" / "result").exists()


def test_nan_outputs_on_both_sides_publish_on_litert(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    model = tmp_path / "div.tflite"
    assert cli("synth", "div_f32", "-o", model).code == 0
    ran = _litert_run(cli, model, tmp_path, "{}")
    assert ran.code == 0, ran.err
    (sample,) = json.loads((tmp_path / "result" / "result.json").read_text())["measurements"]["samples"]
    assert [(c["max_abs_diff"], c["differing_elements"]) for c in sample["verification"]] == [(0.0, 0)]
    assert sample["sanity"]["outputs_finite"] is False


def _run_on_the_fake_fvp(cli, folder: Path, monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    """`heliabuild run` of the AOT runner in `folder`/runner, the FAKE FVP replaying the record stream its firmware
    writes on real QEMU (the Corstone-300 CPU and memory map)."""
    from helpers.qemu_uart import uart_until_eot

    records = folder / "uart.txt"
    records.write_text(uart_until_eot(folder / "runner" / "fvp" / "firmware.elf"), encoding="ascii")
    monkeypatch.setenv("FAKE_FVP_RECORDS", str(records))
    return cli("run", folder / "runner" / "runner.json", "-o", folder / "result")


def test_nan_outputs_on_both_sides_publish_on_the_aot_fvp_firmware_fake_fvp(  # type: ignore[no-untyped-def]
    cli, tmp_path: Path, firmware_library: Path, fake_fvp: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """div_f32 through Vela (DIV stays a CPU operator, so heliabuild's own kernel computes it in the AOT firmware,
    linked against the TEST DOUBLE of the Ethos-U driver); the firmware's record stream is captured on real QEMU
    and replayed by the FAKE FVP. 0/0 is NaN on both sides: equal, and published."""
    require_firmware_tools()
    monkeypatch.setenv("HELIA_FIRMWARE_CACHE", str(firmware_library.parent.parent))
    driver = Path(__file__).parent / "helpers" / "ethosu_driver_test_double"
    model = tmp_path / "div.tflite"
    assert cli("synth", "div_f32", "-o", model).code == 0
    assert cli("vela", model, "-o", tmp_path / "vela").code == 0
    compiled = tmp_path / "vela" / "div_vela.tflite"
    assert cli("aot-plan", compiled, "--platform", "corstone300_ethos_u55", "-o", tmp_path / "plan").code == 0
    built = cli(
        "runner", "--model", model, "--vela-model", compiled, "--segments", tmp_path / "vela" / "div_segments.json",
        "--aot-plan", tmp_path / "plan" / "div_plan.json", "--backend", "fvp", "--fvp-firmware", "aot",
        "--ethosu-driver-dir", driver, "-o", tmp_path / "runner",
    )  # fmt: skip
    assert built.code == 0, built.err
    ran = _run_on_the_fake_fvp(cli, tmp_path, monkeypatch)
    assert ran.code == 0, ran.err
    document = json.loads((tmp_path / "result" / "result.json").read_text())
    (sample,) = document["measurements"]["samples"]
    assert [(c["max_abs_diff"], c["differing_elements"]) for c in sample["verification"]] == [(0.0, 0)]
    assert document["run_identity"]["policy"]["verification"]["max_abs_diff"] is None  # the fvp default: recorded
    assert sample["sanity"]["outputs_finite"] is False  # read from the outputs, which are NaN


@pytest.mark.parametrize("bound", [None, 0], ids=["default-recorded", "bound-refuses"])
def test_the_aot_fvp_firmware_records_the_difference_unless_the_policy_bounds_it_fake_fvp(  # type: ignore[no-untyped-def]
    cli,
    tmp_path: Path,
    tmp_path_factory: pytest.TempPathFactory,
    firmware_library: Path,
    fake_fvp: Path,
    monkeypatch: pytest.MonkeyPatch,
    bound: int | None,
) -> None:
    """The residual network's command streams on the AOT firmware linked against the TEST DOUBLE of the Ethos-U
    driver (which computes nothing the NPU would), its record stream captured on real QEMU and replayed by the
    FAKE FVP: where the NPU computes, the difference is recorded by default, and refused (exit 3) only under the
    policy's bound."""
    from test_fvp_backend import _compiled

    require_firmware_tools()
    monkeypatch.setenv("HELIA_FIRMWARE_CACHE", str(firmware_library.parent.parent))
    inputs = _compiled(tmp_path_factory, "ethos-u55-128")
    plan = tmp_path / "plan"
    assert (
        cli("aot-plan", inputs["vela"], "--prefix", "model", "--platform", "corstone300_ethos_u55", "-o", plan).code
        == 0
    )
    policy = tmp_path / "policy.yaml"
    policy.write_text(
        "defaults:\n  fvp: {}\n"
        if bound is None
        else f"defaults:\n  fvp:\n    verification: {{max_abs_diff: {bound}}}\n"
    )
    built = cli(
        "runner", "--model", inputs["model"], "--sidecar", inputs["sidecar"], "--vela-model", inputs["vela"],
        "--segments", inputs["segments"], "--aot-plan", plan / "model_plan.json", "--backend", "fvp",
        "--fvp-firmware", "aot", "--ethosu-driver-dir", Path(__file__).parent / "helpers" / "ethosu_driver_test_double",
        "--policy", policy, "-o", tmp_path / "runner",
    )  # fmt: skip
    assert built.code == 0, built.err
    ran = _run_on_the_fake_fvp(cli, tmp_path, monkeypatch)
    if bound is None:
        assert ran.code == 0, ran.err
        (sample,) = load_result(tmp_path / "result").samples
        ((check),) = sample.verification or []
        assert check["differing_elements"] > 0 and check["max_abs_diff"] > 0
        shown = cli("show", tmp_path / "result").out
        assert (
            f"outputs differ from LiteRT reference kernels (BUILTIN_REF): largest difference {check['max_abs_diff']}"
            in shown
        )
        assert "(no bound, recorded)" in shown
    else:
        assert ran.code == EXIT_VERIFICATION, ran.err
        assert "more than the policy's verification.max_abs_diff 0; nothing is published" in ran.err
        assert not (tmp_path / "result").exists()
