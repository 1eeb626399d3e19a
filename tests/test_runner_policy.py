"""heliabuild.runner.policy: the typed acquisition policy and each of its rejections."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from heliabuild.errors import HeliaError, PolicyError
from heliabuild.runner.policy import Policy, TensorInput, load_policy


def _doc(acquisition: dict | None = None, **fvp: object) -> dict:
    block: dict = dict(fvp)
    if acquisition is not None:
        block["acquisition"] = acquisition
    return {"defaults": {"fvp": block}}


def test_yaml_policy_from_the_design(tmp_path: Path) -> None:
    path = tmp_path / "policy.yaml"
    path.write_text(
        "defaults:\n  fvp:\n    enabled: true\n    acquisition:\n      state: carry\n"
        "      warmup_invokes: 2\n      measured_invokes: 3\n"
        "    tensor_io:\n      inputs:\n        - {index: 0, file: input0.bin}\n"
    )
    policy = load_policy(path)
    assert (policy.state, policy.warmup_invokes, policy.measured_invokes) == ("carry", 2, 3)
    assert policy.tensor_io == (TensorInput(0, "input0.bin"),)
    assert policy.input_path(policy.tensor_io[0]) == tmp_path / "input0.bin"
    assert policy.warmup_source == "explicit"


def test_json_policy_and_defaults(tmp_path: Path) -> None:
    path = tmp_path / "policy.json"
    path.write_text(json.dumps(_doc({"state": "single"})))
    policy = load_policy(path)
    assert (policy.state, policy.warmup_invokes, policy.measured_invokes, policy.fvp_enabled) == (
        "single",
        None,
        1,
        True,
    )
    assert Policy.from_json({}) == Policy(source="<policy>")


def test_automatic_warmup() -> None:
    automatic = Policy.from_json(_doc({"state": "carry", "measured_invokes": 2}))
    assert automatic.warmup_source == "automatic"
    assert automatic.warmups_for(call_once_present=True) == 1
    assert automatic.warmups_for(call_once_present=False) == 0
    assert automatic.warmups_for(call_once_present=None, aot=True) == 0
    assert automatic.warmups_for(call_once_present=True, aot=True) == 0
    explicit = Policy.from_json(_doc({"warmup_invokes": 0}))
    assert explicit.warmups_for(call_once_present=True) == 0
    single = Policy.from_json(_doc({"state": "single"}))
    assert single.warmups_for(call_once_present=True) == 0


@pytest.mark.parametrize(
    ("document", "field", "words"),
    [
        ({"defaults": {"fvp": {}}, "extra": 1}, "(top level)", "unknown key 'extra' (accepts defaults)"),
        ({"defaults": {"fvp": {}, "heliart": {}}}, "defaults", "unknown key 'heliart' (accepts fvp)"),
        (
            _doc({"state": "carry", "warmups": 1}),
            "defaults.fvp.acquisition",
            "unknown key 'warmups'; did you mean 'warmup_invokes'? (accepts measured_invokes, state, warmup_invokes)",
        ),
        (_doc(trace=True), "defaults.fvp", "unknown key 'trace' (accepts acquisition, bus_tracing, enabled,"),
        (
            _doc(tensor_io={"inputs": [{"index": 0, "fiel": "a"}]}),
            "defaults.fvp.tensor_io.inputs[0]",
            "unknown key 'fiel'; did you mean 'file'? (accepts file, index)",
        ),
        (_doc({"warmup_invokes": -1}), "defaults.fvp.acquisition.warmup_invokes", "found -1"),
        (_doc({"measured_invokes": -2}), "defaults.fvp.acquisition.measured_invokes", "found -2"),
        (_doc({"warmup_invokes": 1.5}), "defaults.fvp.acquisition.warmup_invokes", "non-negative integer"),
        (_doc({"measured_invokes": 2.0}), "defaults.fvp.acquisition.measured_invokes", "non-negative integer"),
        (_doc({"measured_invokes": "3"}), "defaults.fvp.acquisition.measured_invokes", "non-negative integer"),
        (_doc({"warmup_invokes": True}), "defaults.fvp.acquisition.warmup_invokes", "non-negative integer"),
        (_doc({"measured_invokes": 0}), "defaults.fvp.acquisition.measured_invokes", "at least 1"),
        (_doc({"state": "single", "warmup_invokes": 1}), "defaults.fvp.acquisition.warmup_invokes", "single"),
        (_doc({"state": "single", "measured_invokes": 2}), "defaults.fvp.acquisition.measured_invokes", "single"),
        (_doc({"state": "restore"}), "defaults.fvp.acquisition.state", "carry, single"),
        (_doc(bus_tracing=True), "defaults.fvp.bus_tracing", "not supported"),
        (_doc(per_layer_fencing=True), "defaults.fvp.per_layer_fencing", "not supported"),
        (_doc(enabled="yes"), "defaults.fvp.enabled", "true or false"),
        (_doc(tensor_io={"inputs": [{"index": 0}]}), "defaults.fvp.tensor_io.inputs[0].file", "file name"),
        (
            _doc(tensor_io={"inputs": [{"index": 0, "file": "a"}, {"index": 0, "file": "b"}]}),
            "defaults.fvp.tensor_io.inputs[1].index",
            "twice",
        ),
        (["not", "a", "mapping"], "(top level)", "expected a mapping"),
    ],
)
def test_rejections_name_file_and_field(tmp_path: Path, document: object, field: str, words: str) -> None:
    path = tmp_path / "policy.yaml"
    path.write_text(json.dumps(document))
    with pytest.raises(PolicyError) as caught:
        load_policy(path)
    message = caught.value.message
    assert message.startswith(f"{path}: {field}:"), message
    assert words in message
    assert isinstance(caught.value, HeliaError)


def test_explicit_false_for_unsupported_features_is_accepted() -> None:
    policy = Policy.from_json(_doc(bus_tracing=False, per_layer_fencing=False))
    assert policy.state == "carry"


def test_unreadable_and_malformed_files(tmp_path: Path) -> None:
    with pytest.raises(PolicyError, match="cannot read the policy"):
        load_policy(tmp_path / "absent.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("defaults: [unclosed\n")
    with pytest.raises(PolicyError, match=r"bad.yaml: the policy is not valid YAML: .* at line 2 column 1"):
        load_policy(bad)
