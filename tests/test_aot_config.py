"""The AOT configuration: YAML and JSON files, Python arguments, schema errors, input plan paths."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from heliabuild.aot.config import (
    AotConfig,
    ConfigError,
    OperatorRule,
    StreamPool,
    TensorRequest,
    TensorRule,
    as_config,
    config_from_document,
    load_config,
)
from heliabuild.schema_files import load_schema

YAML_TEXT = """\
optimization:
  goal: latency
  allow_approximate: true
  knobs: {kernel: generic}
  plan: plans/previous_plan.json
operators:
  - {type: CONV_2D, knobs: {kernel: generic}}
  - {id: "0:conv2d_1/Relu", index: 3, knobs: {kernel: auto}}
memory:
  tensors:
    - {pattern: "*", residency: stream}
    - {id: conv2d/kernel, residency: pin, destination_memory: DTCM}
  stream_pool: {memory: DTCM, bytes: 65536, alignment: 32}
"""


def test_a_yaml_file_and_the_same_python_arguments_give_the_same_configuration(tmp_path: Path) -> None:
    folder = tmp_path / "configs"
    folder.mkdir()
    (folder / "aot.yaml").write_text(YAML_TEXT, encoding="utf-8")
    from_file = load_config(folder / "aot.yaml")
    assert from_file.goal == "latency" and from_file.allow_approximate is True
    assert dict(from_file.knobs) == {"kernel": "generic"}
    assert from_file.operators == (
        OperatorRule(knobs={"kernel": "generic"}, type="CONV_2D"),
        OperatorRule(knobs={"kernel": "auto"}, index=3, id="0:conv2d_1/Relu"),
    )
    assert from_file.tensors == (
        TensorRule(pattern="*", residency="stream"),
        TensorRule(id="conv2d/kernel", residency="pin", destination_memory="DTCM"),
    )
    assert from_file.stream_pool == StreamPool("DTCM", 65536, 32)
    # The input plan resolves relative to the file's folder, and is stored absolute.
    assert from_file.plan_path == (folder / "plans" / "previous_plan.json").resolve()
    assert from_file.source == str(folder / "aot.yaml")

    from_python = AotConfig(
        goal="latency",
        allow_approximate=True,
        knobs={"kernel": "generic"},
        operators=[{"type": "CONV_2D", "knobs": {"kernel": "generic"}}, from_file.operators[1]],
        tensors=[{"pattern": "*", "residency": "stream"}, from_file.tensors[1]],
        stream_pool={"memory": "DTCM", "bytes": 65536, "alignment": 32},
        plan=from_file.plan_path,
    )
    assert from_python.to_json() == from_file.to_json()
    # A JSON file of the document reads the same.
    (folder / "aot.json").write_text(json.dumps(from_file.to_json()), encoding="utf-8")
    assert load_config(folder / "aot.json").to_json() == from_file.to_json()


def test_defaults_and_empty_files(tmp_path: Path) -> None:
    default = AotConfig()
    assert (default.goal, default.allow_approximate, default.operators, default.tensors) == ("balanced", False, (), ())
    assert default.stream_pool is None and default.plan_path is None
    assert default.to_json() == {"optimization": {"goal": "balanced", "allow_approximate": False}}
    for name in ("empty.yaml", "empty.json"):
        (tmp_path / name).write_text("\n", encoding="utf-8")
        assert load_config(tmp_path / name).to_json() == default.to_json()
    assert as_config(None) == AotConfig() and as_config({"optimization": {"goal": "size"}}).goal == "size"


def test_a_python_plan_path_resolves_against_the_working_directory(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    config = AotConfig(plan="plans/p.json")
    assert config.plan_path == tmp_path / "plans" / "p.json" and config.plan_path.is_absolute()
    assert config.with_plan("q.json").plan_path == tmp_path / "q.json"
    assert config.with_plan(None).plan_path is None
    assert config_from_document({"optimization": {"plan": "r.json"}}).plan_path == tmp_path / "r.json"


def test_tensor_rules_merge_field_by_field_later_wins() -> None:
    config = AotConfig(
        tensors=[
            {"pattern": "conv*", "residency": "stream", "memory": "PSRAM"},
            {"id": "conv1/w", "residency": "pin", "destination_memory": "DTCM"},
            {"pattern": "conv1/*", "memory": "MRAM"},
        ]
    )
    assert config.requested("conv1/w") == TensorRequest("pin", "MRAM", "DTCM")
    assert config.requested("conv2/w") == TensorRequest("stream", "PSRAM", None)
    assert config.requested("dense/w") == TensorRequest()


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        (
            "optimisation: {goal: latency}\n",
            "(top level): unknown key 'optimisation'; did you mean 'optimization'? "
            "(accepts memory, operators, optimization)",
        ),
        (
            "optimization: {goal: latency, speed: 3}\n",
            "optimization: unknown key 'speed' (accepts allow_approximate, goal, knobs, plan)",
        ),
        (
            "operators: [{type: CONV_2D, knob: {kernel: generic}}]\n",
            "operators.0: unknown key 'knob'; did you mean 'knobs'? (accepts id, index, knobs, type)",
        ),
        (
            "memory: {tensors: [{id: w, residency: stream, where: DTCM}]}\n",
            "memory.tensors.0: unknown key 'where' (accepts destination_memory, id, memory, pattern, residency)",
        ),
        (
            "memory: {stream_pool: {memory: DTCM, bytes: 64, size: 3}}\n",
            "memory.stream_pool: unknown key 'size' (accepts alignment, bytes, memory)",
        ),
        ("optimization: {goal: fastest}\n", "optimization.goal: 'fastest' is not one of"),
        ("optimization: {allow_approximate: maybe}\n", "optimization.allow_approximate: 'maybe' is not of type"),
        ("operators: [{knobs: {kernel: generic}}]\n", "operators.0: the rule selects no operator"),
        ("operators: [{index: -1, knobs: {kernel: generic}}]\n", "operators.0.index: -1 is less than the minimum"),
        ("operators: [{type: CONV_2D}]\n", "operators.0: 'knobs' is a required property"),
        ("memory: {tensors: [{id: w, pattern: '*', residency: pin}]}\n", "give exactly one of id"),
        ("memory: {tensors: [{id: w}]}\n", "memory.tensors.0: the rule sets nothing"),
        ("memory: {tensors: [{id: w, residency: cached}]}\n", "memory.tensors.0.residency: 'cached' is not one of"),
        ("memory: {stream_pool: {memory: DTCM}}\n", "memory.stream_pool: 'bytes' is a required property"),
        ("memory: {stream_pool: {memory: DTCM, bytes: 64, alignment: 24}}\n", "24 is not a power of two"),
        ("- just\n- a list\n", "a configuration is a mapping, found list"),
        ("optimization: [goal\n", "the configuration is not valid YAML"),
    ],
)
def test_configuration_file_errors_name_the_file_and_the_field(tmp_path: Path, text: str, fragment: str) -> None:
    path = tmp_path / "aot.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    assert caught.value.message.startswith(str(path)), caught.value.message
    assert fragment in caught.value.message, caught.value.message


def test_unreadable_and_non_json_files(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read the configuration"):
        load_config(tmp_path / "missing.yaml")
    (tmp_path / "aot.json").write_text("goal: latency\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="the configuration is not valid JSON") as caught:
        load_config(tmp_path / "aot.json")
    assert ".yaml" in caught.value.hint


def test_python_arguments_are_validated_the_same_way() -> None:
    with pytest.raises(ConfigError, match=r"<python>: optimization\.goal"):
        AotConfig(goal="fast")
    with pytest.raises(ConfigError, match=r"operators\.0: unknown key 'position' \(accepts id, index, knobs, type\)"):
        AotConfig(operators=[{"position": 1, "knobs": {"kernel": "generic"}}])
    with pytest.raises(ConfigError, match="not a string, number"):
        AotConfig(knobs={"kernel": object()})


def test_the_schema_lists_exactly_the_keys_the_reader_knows() -> None:
    schema = load_schema("aot-config")
    assert set(schema["properties"]) == {"optimization", "operators", "memory"}
    assert set(schema["properties"]["optimization"]["properties"]) == {"goal", "allow_approximate", "knobs", "plan"}
    assert set(schema["properties"]["operators"]["items"]["properties"]) == {"index", "type", "id", "knobs"}
    memory = schema["properties"]["memory"]["properties"]
    assert set(memory["tensors"]["items"]["properties"]) == {
        "id",
        "pattern",
        "residency",
        "memory",
        "destination_memory",
    }
    assert set(memory["stream_pool"]["properties"]) == {"memory", "bytes", "alignment"}
