"""heliabuild.runner.policy.scan_policy_file: a policy it does not parse gives the facts its parse would.

While the SConscripts are read, the runner emitter (heliabuild.scons.runner) needs two facts of a policy
file: the `tensor_io` input files (dependencies and targets) and whether the policy executes (`enabled`). A
policy that cannot name either is not parsed (nor PyYAML imported). These tests check, over generated
policies in every YAML style and with keys written in the ways YAML allows (plain, quoted, escaped, continued
on the next line), that the facts are always those of a full parse.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from heliabuild.documents import parse_yaml
from heliabuild.errors import HeliaError
from heliabuild.runner.policy import scan_policy_file, scanned_executes, scanned_inputs

KEYS = ["tensor_io", "enabled", "inputs", "file", "index", "defaults", "fvp", "acquisition", "state", "x"]


def _facts(document: Any) -> tuple[list[tuple[int, str]], bool]:
    return [(entry["index"], entry["file"]) for entry in scanned_inputs(document)], scanned_executes(document)


def _parsed_facts(text: str) -> tuple[list[tuple[int, str]], bool]:
    try:
        document = parse_yaml(text, "policy", "policy")
    except HeliaError:
        document = None
    return _facts(document)


scalars = st.one_of(
    st.booleans(), st.integers(-3, 3), st.sampled_from(["a.bin", "in/0.bin", "tensor_io", "enabled", "no"])
)
documents = st.recursive(
    scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=3),
        st.dictionaries(st.sampled_from(KEYS), children, max_size=4),
    ),
    max_leaves=12,
)
policies = st.builds(
    lambda inputs, enabled, extra: {
        "defaults": {
            "fvp": {
                **({"tensor_io": {"inputs": inputs}} if inputs is not None else {}),
                **({"enabled": enabled} if enabled is not None else {}),
                **extra,
            }
        }
    },
    st.none() | st.lists(st.fixed_dictionaries({"index": st.integers(0, 3), "file": st.just("in.bin")}), max_size=2),
    st.none() | st.booleans(),
    st.dictionaries(st.sampled_from(KEYS), documents, max_size=2),
)

KEY_SPELLINGS = {
    "tensor_io": [
        "tensor_io",
        '"tensor_io"',
        "'tensor_io'",
        '"tensor\\x5fio"',
        '"tensor\\u005fio"',
        '"tensor\\\n  _io"',
    ],
    "enabled": ["enabled", '"enabled"', "'enabled'", '"\\x65nabled"', '"enab\\\n  led"'],
}
"""How YAML may write each key the emitters read: plain, quoted, escaped, and continued on the next line."""


def _respelled(text: str, key: str, spelling: str) -> str:
    return text.replace(f"{key}:", f"{spelling}:")


@settings(max_examples=300, deadline=None)
@given(
    policy=policies,
    flow=st.sampled_from([None, True, False]),
    style=st.sampled_from([None, '"', "'"]),
    spellings=st.fixed_dictionaries({key: st.sampled_from(values) for key, values in KEY_SPELLINGS.items()}),
)
def test_the_reader_gives_what_a_parse_gives(
    tmp_path_factory: Any, policy: Any, flow: Any, style: Any, spellings: dict[str, str]
) -> None:
    text = yaml.safe_dump(policy, default_flow_style=flow, default_style=style, sort_keys=False)
    for key, spelling in spellings.items():
        text = _respelled(text, key, spelling)
    path = tmp_path_factory.mktemp("policy") / "policy.yaml"
    path.write_text(text, encoding="utf-8")
    assert _facts(scan_policy_file(str(path))) == _parsed_facts(text), text


def test_an_escaped_key_is_still_read(tmp_path: Path) -> None:
    """A key only a backslash escape spells out is parsed: the policy's input file is a dependency."""
    path = tmp_path / "policy.yaml"
    path.write_text('defaults:\n  fvp:\n    "tensor\\x5fio": {inputs: [{index: 0, file: in.bin}]}\n', encoding="utf-8")
    assert _facts(scan_policy_file(str(path))) == ([(0, "in.bin")], True)
    path.write_text('defaults: {fvp: {"\\u0065nabled": false}}\n', encoding="utf-8")
    assert _facts(scan_policy_file(str(path))) == ([], False)


def test_a_policy_naming_no_key_read_imports_no_yaml(tmp_path: Path) -> None:
    """The policy of a no-op build that names neither key is not parsed: PyYAML is not imported for it."""
    import subprocess

    path = tmp_path / "policy.yaml"
    path.write_text("defaults:\n  fvp:\n    acquisition: {state: carry, measured_invokes: 3}\n", encoding="utf-8")
    probe = (
        "import sys; from heliabuild.runner.policy import scan_policy_file; "
        f"assert scan_policy_file({str(path)!r}) is None; print('yaml' in sys.modules)"
    )
    found = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert found.stdout.strip() == "False"
