"""The executor's records and its local path, without a cluster: Job and JobResult round-trip through JSON and
the key follows the content; bad names, URLs and changed inputs are one clear error; the tool-version rule;
the local executor gives Vela's outputs byte for byte as the library writes them in place."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from heliabuild.executor import ExecutorError, InputFile, Job, JobResult, LocalExecutor, executor_for
from heliabuild.executor.job import Failure, check_name
from heliabuild.executor.stages import EXTERNAL, echo_job, job_name, vela_job
from heliabuild.executor.versions import heliabuild_version, mismatches
from heliabuild.executor.worker import Inputs, execute
from heliabuild.files import sha256_bytes

names = st.lists(st.sampled_from(["a", "b.tflite", "c_d", "e-1"]), min_size=1, max_size=3).map("/".join)
jobs = st.builds(
    Job,
    function=st.sampled_from(["vela", "run", "echo"]),
    inputs=st.lists(st.builds(InputFile, names, st.text("0123456789abcdef", min_size=64, max_size=64)), max_size=3).map(
        tuple
    ),
    options=st.dictionaries(st.sampled_from(["model", "n", "x"]), st.integers() | st.text(max_size=5), max_size=3),
    outputs=st.lists(names, min_size=1, max_size=3).map(tuple),
    tools=st.lists(st.sampled_from(["heliabuild", "ethos-u-vela"]), unique=True).map(tuple),
    resources=st.dictionaries(st.sampled_from(["qemu", "fvp"]), st.just(1.0), max_size=1),
)


@given(jobs)
def test_a_job_round_trips_through_json_and_its_key_is_its_content(job: Job) -> None:
    again = Job.from_json(job.to_json())
    assert again.key == job.key
    assert dataclasses.replace(job, options={**job.options, "other": 1}).key != job.key


@given(st.dictionaries(names, st.binary(max_size=64), max_size=3), st.lists(st.text(max_size=20), max_size=2))
def test_a_result_round_trips_through_json(outputs: dict[str, bytes], warnings: list[str]) -> None:
    result = JobResult(outputs=outputs, warnings=tuple(warnings), failure=Failure("VelaError", "m", None))
    assert JobResult.from_json(result.to_json()) == result


@pytest.mark.parametrize("name", ["", "/etc/passwd", "../x", "a/../../x", ".", "a\\b"])
def test_a_name_outside_the_job_folder_is_refused(name: str) -> None:
    with pytest.raises(ExecutorError, match="is not a relative path inside the job's folder"):
        check_name(name, "input")


def test_paths_outside_the_working_folder_get_names_that_keep_neighbours_together(tmp_path: Path) -> None:
    model, sidecar = job_name(tmp_path / "m.tflite"), job_name(tmp_path / "m.fenced_boundaries.json")
    assert model.startswith(f"{EXTERNAL}/") and model.rsplit("/", 1)[0] == sidecar.rsplit("/", 1)[0]
    assert job_name("build/x/m.tflite") == "build/x/m.tflite"


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("http://127.0.0.1:8786", "is not `local` or dask://host:port"),
        ("dask://127.0.0.1", "expected dask://host:port"),
        ("dask://:8786", "expected dask://host:port"),
        ("dask://host:99999", "expected dask://host:port"),
    ],
)
def test_an_executor_url_that_names_none_is_refused(url: str, message: str) -> None:
    with pytest.raises(ExecutorError, match=message):
        executor_for(url)


def test_the_environment_variable_chooses_the_executor(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HELIA_EXECUTOR", "dask://127.0.0.1:8786")
    assert executor_for().address == "dask://127.0.0.1:8786"
    monkeypatch.delenv("HELIA_EXECUTOR")
    assert isinstance(executor_for(), LocalExecutor)


def test_the_tool_rule_compares_what_the_client_has() -> None:
    assert mismatches({"qemu-system-arm": None}, {"qemu-system-arm": "QEMU 8"}) == []
    assert mismatches({"ethos-u-vela": "5.2.0"}, {"ethos-u-vela": "5.1.0"}) == [
        "ethos-u-vela: 5.2.0 on the client, 5.1.0 on the worker"
    ]
    assert mismatches({"ethos-u-vela": "5.2.0"}, {}) == [
        "ethos-u-vela: 5.2.0 on the client, not installed on the worker"
    ]
    assert heliabuild_version().count("+") == 1


def test_a_changed_or_missing_input_is_refused(tmp_path: Path) -> None:
    source = tmp_path / "in.txt"
    source.write_text("x")
    job, _ = echo_job({str(source): "out.txt"})
    (item,) = job.inputs
    changed = execute(job.to_json(), {}, Inputs(blobs={item.sha256: b"y"}))
    assert changed.failure is not None and changed.failure.kind == "ExecutorError" and changed.outputs == {}
    assert f"has sha256 {sha256_bytes(b'y')}, the job names {item.sha256}" in changed.failure.message
    missing = execute(job.to_json(), {}, Inputs())
    assert missing.failure is not None and "was neither shipped nor given by path" in missing.failure.message


def test_a_stage_error_names_the_clients_paths(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    Path("build").mkdir()
    Path("build/empty.tflite").write_bytes(b"not a model")
    job, files = vela_job(
        "build/empty.tflite", "out", accelerator="ethos-u55-128", system_config=None, memory_mode=None,
        optimise=None, extra_args=[],
    )  # fmt: skip
    result = LocalExecutor().run(job, files)
    assert result.outputs == {} and result.failure is not None
    assert result.failure.message.startswith("build/empty.tflite: "), result.failure.message
    assert "heliabuild-job-" not in result.failure.message
    assert not Path("out").exists()


@pytest.mark.slow
def test_the_local_executor_gives_vela_s_outputs_as_the_library_writes_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, synth_models: Path
) -> None:
    from heliabuild.vela import compile as vela_compile

    monkeypatch.chdir(tmp_path)
    (tmp_path / "m.tflite").write_bytes((synth_models / "synth_chain.tflite").read_bytes())
    options = {"accelerator": "ethos-u55-64", "system_config": None, "memory_mode": None, "optimise": None}
    job, files = vela_job("m.tflite", "job", extra_args=[], **options)
    result = LocalExecutor().run(job, files)
    assert result.failure is None and result.worker == "local"
    in_place = vela_compile("m.tflite", "direct", **options)
    direct = {path.name: path.read_bytes() for path in Path("direct").iterdir()}
    assert {name.removeprefix("job/"): data for name, data in result.outputs.items()} == direct
    assert result.warnings == in_place.warnings


def test_a_vela_job_into_the_top_folder_names_its_outputs_as_the_targets_are_named() -> None:
    """A pipeline without build_dir in the top folder compiles into `.`: the job's outputs are `x`, not `./x`
    (the SCons stage matches them to its targets by name: tests/test_scons_collector.py builds one)."""
    job, _ = vela_job(
        "m.tflite", ".", accelerator="ethos-u55-128", system_config=None, memory_mode=None, optimise=None,
        extra_args=[],
    )  # fmt: skip
    assert job.outputs and all(not name.startswith("./") and "/" not in name for name in job.outputs)
