"""The two validators behind heliabuild.schema_files agree, and every file a pipeline writes is valid.

heliabuild.schema_files asks jsonschema-rs whether a document is valid and runs python-jsonschema only for an
invalid one (to name the failing field). These tests run a real pipeline (synth chain, fence, Vela, aot-plan
with and without a stream pool, runner, run), then check that every JSON file it wrote validates against its
schema by python-jsonschema itself (the written files stay valid, whatever the fast path says), and that both
validators give the same verdict on those documents and on random mutations of them (hypothesis).
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from heliabuild.aot.config import AotConfig
from heliabuild.aot.stage import write_plan
from heliabuild.errors import SchemaError
from heliabuild.fence import rewrite_model_with_fences
from heliabuild.model import save_model
from heliabuild.runner.freeze import build_runner
from heliabuild.runner.lifecycle import run_runner
from heliabuild.schema_files import first_error, is_valid, load_schema_file, validate
from heliabuild.synth import synthesize
from heliabuild.vela import compile as vela_compile

SCHEMA_OF = (
    ("_plan.json", "plan-schema.json"),
    ("_report.json", "report-schema.json"),
    (".fenced_boundaries.json", "fenced-boundaries.schema.json"),
    ("segments.json", "segments.schema.json"),
    ("runner.json", "runner.schema.json"),
    ("result.json", "result.schema.json"),
    ("manifest.json", "manifest.schema.json"),
    ("acquisition.json", "acquisition-receipt.schema.json"),
)
"""File-name ending -> the schema of the files a pipeline writes."""

POOL = AotConfig(
    tensors=[{"pattern": "*", "residency": "stream", "memory": "PSRAM"}],
    stream_pool={"memory": "DTCM", "bytes": 16384},
)


def _schema_of(path: Path) -> str | None:
    return next((schema for ending, schema in SCHEMA_OF if path.name.endswith(ending)), None)


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> list[tuple[Path, str, Any]]:
    """Every JSON file of one real pipeline, with its schema and its document."""
    folder = tmp_path_factory.mktemp("schema_validators")
    save_model(synthesize("chain", seed=0), folder / "chain.tflite")
    fenced = rewrite_model_with_fences(folder / "chain.tflite", [3, 6])
    fenced.save(folder / "chain_fenced.tflite")
    compiled = vela_compile(folder / "chain_fenced.tflite", folder)
    plan = write_plan(compiled.model, folder, "chain", "corstone300_ethos_u55", None, compiled.per_layer_csv)
    write_plan(folder / "chain.tflite", folder / "pool", "pooled", "apollo510_evb", POOL)
    runner = build_runner(
        folder / "runner",
        model=folder / "chain_fenced.tflite",
        policy={"defaults": {"fvp": {"acquisition": {"state": "carry", "warmup_invokes": 1, "measured_invokes": 2}}}},
        sidecar=folder / "chain_fenced.fenced_boundaries.json",
        vela_model=compiled.model,
        segments=compiled.segments_json,
        aot_plan=plan.plan,
    )
    run_runner(runner, folder / "results")
    files = []
    for path in sorted(folder.rglob("*.json")):
        schema = _schema_of(path)
        if schema is not None:
            files.append((path, schema, json.loads(path.read_text(encoding="utf-8"))))
    assert {schema for _, schema, _ in files} == {schema for _, schema in SCHEMA_OF}
    return files


def _python_valid(document: Any, schema: str) -> bool:
    return jsonschema.Draft202012Validator(load_schema_file(schema)).is_valid(document)


def test_every_file_a_pipeline_writes_is_valid_by_python_jsonschema(written) -> None:
    for path, schema, document in written:
        errors = list(jsonschema.Draft202012Validator(load_schema_file(schema)).iter_errors(document))
        assert errors == [], f"{path.name}: {errors[0].message}"
        assert is_valid(document, schema) and first_error(document, schema) is None


def test_an_invalid_document_gets_python_jsonschemas_message(written) -> None:
    _, schema, document = next(item for item in written if item[1] == "result.schema.json")
    broken = copy.deepcopy(document)
    broken["schema_version"] = "four"
    assert not is_valid(broken, schema)
    expected = jsonschema.exceptions.best_match(
        jsonschema.Draft202012Validator(load_schema_file(schema)).iter_errors(broken)
    )
    assert first_error(broken, schema).message == expected.message
    with pytest.raises(SchemaError, match=r"^result\.json: schema_version: 4 was expected \(schema result\)$"):
        validate(broken, "result", "result.json")


def _paths(value: Any, prefix: tuple = ()) -> list[tuple]:
    """Every place in a JSON value, as the keys and indices that lead to it."""
    found = [prefix]
    if isinstance(value, dict):
        for key, item in value.items():
            found += _paths(item, (*prefix, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found += _paths(item, (*prefix, index))
    return found


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**40), 2**40) | st.floats(allow_nan=False) | st.text(max_size=70),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=12), inner, max_size=3),
    max_leaves=6,
)


@st.composite
def mutations(draw: st.DrawFn, documents: list[tuple[Path, str, Any]]) -> tuple[str, Any]:
    """A written document with one place replaced, removed or given an extra key."""
    _, schema, document = draw(st.sampled_from(documents))
    mutated = copy.deepcopy(document)
    places = _paths(mutated)
    place = draw(st.sampled_from(places))
    value = draw(
        st.one_of(JSON_VALUES, st.sampled_from(["0" * 64, "ethos-u55-128", "latency_s", -1, 0, 1, 2.5, "", [], {}]))
    )
    if not place:
        return schema, value
    parent: Any = mutated
    for step in place[:-1]:
        parent = parent[step]
    action = draw(st.sampled_from(["replace", "remove", "extra"]))
    if action == "remove":
        del parent[place[-1]]
    elif action == "extra" and isinstance(parent[place[-1]], dict):
        parent[place[-1]][draw(st.text(max_size=12))] = value
    else:
        parent[place[-1]] = value
    return schema, mutated


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_both_validators_agree_on_mutations_of_written_documents(written, data) -> None:
    schema, document = data.draw(mutations(written))
    assert is_valid(document, schema) == _python_valid(document, schema)
