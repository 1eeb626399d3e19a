"""The scope rule at the trust boundary (heliabuild.results.scopes): a figure is non-null only where the result's
`scopes` name how the backend measured it, refused by name on write (write_bundle) and on read (load_result, so
`show` and `compare` too), whoever wrote the bundle. The read side is tested on a real qemu-m55 bundle (real
firmware on real QEMU) whose result.json was edited by hand and its manifest re-hashed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import require_firmware_tools
from helpers.qemu_runs import chain_runs_on_qemu
from test_results_bundle import FVP_SCOPES, HOST_SCOPES, edit_json, make_bundle, make_samples, reseal

from heliabuild.errors import ResultError
from heliabuild.results.bundle import Sample
from heliabuild.results.reader import load_result
from heliabuild.results.scopes import MEASURED_BY

VELA_CYCLES = {"total": 300, "segments": [100, 200]}


def _with(samples: list[Sample], **figures: Any) -> list[Sample]:
    return [Sample(**{**sample.__dict__, **figures}) for sample in samples]


@pytest.mark.parametrize(
    ("backend", "scopes", "figures", "message"),
    [
        (
            "qemu-m55",
            {"instructions": "qemu_icount"},
            {"cycles": VELA_CYCLES},
            "measurements.samples[0].cycles: a figure with no scope (scopes.cycles is null) on backend qemu-m55",
        ),
        (
            "qemu-m55",
            {"instructions": "qemu_icount", "cycles": "vela_estimate"},
            {"cycles": VELA_CYCLES},
            "scopes.cycles: 'vela_estimate' is not a scope of backend qemu-m55, which measures instructions",
        ),
        (
            "qemu-m55",
            {"instructions": "qemu_icount"},
            {"latency_s": 0.002},
            "measurements.samples[0].latency_s: a figure with no scope (scopes.latency_s is null)",
        ),
        (
            "litert",
            {**HOST_SCOPES, "cycles": "npu_callbacks"},
            {"cycles": VELA_CYCLES},
            "scopes.cycles: 'npu_callbacks' is not a scope of backend litert",
        ),
        (
            "fvp",
            FVP_SCOPES,
            {"latency_s": 0.002},
            "measurements.samples[0].latency_s: a figure with no scope (scopes.latency_s is null) on backend fvp",
        ),
        (
            "fvp",
            FVP_SCOPES,
            {"energy": 1.5},
            "measurements.samples[0].energy: a figure with no scope (scopes.energy is null)",
        ),
    ],
    ids=["qemu-cycles", "qemu-cycles-scoped-as-vela", "qemu-latency", "litert-cycles", "fvp-latency", "energy"],
)
def test_a_figure_its_scope_does_not_name_is_refused_on_write(
    tmp_path: Path, backend: str, scopes: dict[str, str], figures: dict[str, Any], message: str
) -> None:
    samples, outputs = make_samples(2, backend="litert" if backend == "litert" else "fvp")
    if backend == "qemu-m55":
        samples = _with(samples, cycles=None, traffic_beats=None, instructions={"total": 30, "segments": [10, 20]})
    with pytest.raises(ResultError) as error:
        make_bundle(
            tmp_path / "run",
            count=2,
            backend=backend,
            samples=_with(samples, **figures),
            outputs=outputs,
            scopes=scopes,
            runtime="aot" if backend == "qemu-m55" else None if backend == "litert" else "tflm",
            **({"receipt": _aot_receipt()} if backend == "qemu-m55" else {}),
        )
    assert error.value.message.startswith(f"result.json: {message}"), error.value.message
    assert "a figure is non-null only where its scope names how it was measured" in error.value.message
    assert not (tmp_path / "run").exists()


def _aot_receipt():  # type: ignore[no-untyped-def]
    from heliabuild.results.receipt import Receipt

    return Receipt("carry", 1, 2, "before_measurement", None)


def test_every_backend_bundle_of_the_fixtures_is_accepted(tmp_path: Path) -> None:
    for backend in ("fvp", "litert"):
        result = load_result(make_bundle(tmp_path / backend, backend=backend))
        assert set(result.document["scopes"].items()) <= set(MEASURED_BY[backend].items())


@pytest.fixture(scope="module")
def qemu_bundle(tmp_path_factory: pytest.TempPathFactory, firmware_library: Path) -> Path:
    """A real qemu-m55 bundle: the synthetic chain on heliabuild's firmware on QEMU, through the CLI."""
    require_firmware_tools()
    return chain_runs_on_qemu(tmp_path_factory.mktemp("qemu-bundle"), firmware_library, ["result"])[0]


def _edited_copy(bundle: Path, target: Path, change) -> Path:  # type: ignore[no-untyped-def]
    import shutil

    shutil.copytree(bundle, target)
    edit_json(target / "result.json", change)
    reseal(target)  # the manifest re-hashed: only the scope rule can catch it
    return target


def _vela_cycles_and_a_latency(document: dict[str, Any]) -> None:
    """The issue's hand edit: Vela's estimated cycles copied into every sample, plus a latency."""
    estimates = [segment["estimated_cycles"] or 0 for segment in document["segments"]]
    for sample in document["measurements"]["samples"]:
        sample["cycles"] = {"total": sum(estimates), "segments": estimates}
        sample["latency_s"] = 0.0021


def test_a_qemu_bundle_edited_to_carry_vela_cycles_and_a_latency_is_refused_on_read(  # type: ignore[no-untyped-def]
    cli, qemu_bundle: Path, tmp_path: Path
) -> None:
    assert load_result(qemu_bundle).document["scopes"]["cycles"] is None
    edited = _edited_copy(qemu_bundle, tmp_path / "edited", _vela_cycles_and_a_latency)
    with pytest.raises(ResultError) as error:
        load_result(edited)
    assert error.value.message.startswith(
        "result.json: measurements.samples[0].cycles: a figure with no scope (scopes.cycles is null) on backend "
        "qemu-m55"
    )
    shown = cli("show", edited)
    assert shown.code == 2 and "measurements.samples[0].cycles: a figure with no scope" in shown.err
    assert shown.out == ""  # nothing of it printed as a measurement


def test_a_qemu_bundle_whose_scopes_were_edited_to_name_the_cycles_is_refused_on_read(  # type: ignore[no-untyped-def]
    cli, qemu_bundle: Path, tmp_path: Path
) -> None:
    def change(document: dict[str, Any]) -> None:
        _vela_cycles_and_a_latency(document)
        document["scopes"].update(cycles="vela_estimate", latency_s="host_wall_clock")

    edited = _edited_copy(qemu_bundle, tmp_path / "edited", change)
    with pytest.raises(ResultError, match=r"scopes\.cycles: 'vela_estimate' is not a scope of backend qemu-m55"):
        load_result(edited)
    compared = cli("compare", qemu_bundle, edited)
    assert compared.code == 2 and "scopes.cycles: 'vela_estimate' is not a scope" in compared.err


def test_a_qemu_bundle_is_accepted_as_written(qemu_bundle: Path) -> None:
    from heliabuild.api import acquisition_facts

    result = load_result(qemu_bundle)
    facts = acquisition_facts(result)
    assert facts is not None and facts.counter_scope == "qemu_icount"  # what QEMU counts, not NPU callbacks
    document = json.loads((qemu_bundle / "result.json").read_text())
    assert document["scopes"]["instructions"] == "qemu_icount"
    assert all(s.cycles is None and s.latency_s is None and s.instructions is not None for s in result.samples)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"max_abs_diff": None}, r"verification\[0\]\.max_abs_diff: None with 0 unbounded elements"),
        ({"unbounded_elements": 1}, r"verification\[0\]\.differing_elements: 0 of 12 elements, 1 of them unbounded"),
        ({"differing_elements": 13}, r"verification\[0\]\.differing_elements: 13 of 12 elements"),
        ({"max_abs_diff": 5}, r"verification\[0\]\.max_abs_diff: 5 with no differing element"),
    ],
    ids=["null-without-unbounded", "unbounded-not-differing", "more-than-elements", "difference-without-elements"],
)
def test_a_verification_record_edited_to_contradict_itself_is_refused_on_read(
    qemu_bundle: Path, tmp_path: Path, change: dict[str, Any], message: str
) -> None:
    def edit(document: dict[str, Any]) -> None:
        document["measurements"]["samples"][0]["verification"][0].update(change)

    edited = _edited_copy(qemu_bundle, tmp_path / "edited", edit)
    with pytest.raises(ResultError, match=r"result\.json: measurements\.samples\[0\]\." + message):
        load_result(edited)
