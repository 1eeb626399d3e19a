"""Every reader of a user's JSON, YAML or CSV document, on hostile input.

For each reader: a corpus of hostile files (garbage, non-UTF-8, nesting of 900 and 100000 levels, NaN and
Infinity, 10^400, an alias bomb, a FIFO, a symlink to /dev/zero, a folder, a file over the size limit) each gives
one error of the reader's class, naming the file, on one short line, without blocking; random bytes, random JSON
values and valid documents with one value replaced by a hostile one give the reader's value or its error, never
another exception. The CLI turns a few representative cases into exit 2, one line, nothing written.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from helpers.checks import assert_not_written, assert_one_line_error
from hypothesis import given, settings
from hypothesis import strategies as st

from heliabuild.aot.config import ConfigError, load_config
from heliabuild.aot.platforms import PlatformError, load_platforms, platforms_document
from heliabuild.aot.records import load_plan as load_aot_plan
from heliabuild.aot.records import load_report
from heliabuild.aot.stage import write_plan
from heliabuild.documents import MAX_DOCUMENT_BYTES
from heliabuild.errors import FenceError, HeliaError, PlanReadError, PolicyError, RunnerError, SchemaError, VelaError
from heliabuild.fence import load_plan, load_sidecar, rewrite_model_with_fences
from heliabuild.fence.plan import Fence, FencePlan
from heliabuild.model import load_model, model_sha256, save_model
from heliabuild.runner.freeze import build_runner, load_runner
from heliabuild.runner.policy import load_policy, scan_policy_file
from heliabuild.runner.segments import cut_segments
from heliabuild.synth import chain_network
from heliabuild.vela import compile
from heliabuild.vela.per_layer import read_per_layer
from heliabuild.vela.summary import read_summary

PLATFORM = "corstone300_ethos_u55"
POLICY = {"defaults": {"fvp": {"acquisition": {"state": "carry", "warmup_invokes": 1, "measured_invokes": 2}}}}
CONFIG = {
    "optimization": {"goal": "latency", "allow_approximate": False},
    "operators": [{"index": 0, "knobs": {"kernel": "generic"}}],
    "memory": {"stream_pool": {"memory": "DTCM", "bytes": 65536, "alignment": 16}},
}


def alias_bomb() -> bytes:
    """About 600 bytes that expand to 9**9 strings in any code that walks the loaded document."""
    lines = ['a0: &a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    lines += [f"a{n}: &a{n} [{','.join([f'*a{n - 1}'] * 9)}]" for n in range(1, 9)]
    return ("\n".join(lines) + "\n").encode()


CORPUS: dict[str, bytes] = {
    "random bytes": bytes(range(256)) * 4,
    "non-UTF-8": b'{"defaults": "\xff\xfe"}\n',
    "nesting of 900 lists": b"[" * 900 + b"]" * 900,
    "nesting of 100000 objects": b'{"a":' * 100_000 + b"1" + b"}" * 100_000,
    "NaN and Infinity": b'{"a": NaN, "b": Infinity}',
    "10^400": b'{"a": 1' + b"0" * 400 + b"}",
    "an alias bomb": alias_bomb(),
    "a list": b"[1, 2, 3]\n",
    "a huge key and value": b'{"' + b"k" * 100_000 + b'": "' + b"v" * 1_000_000 + b'"}',
}
SPECIAL = ("a FIFO", "a symlink to /dev/zero", "a folder", "a missing file", "a file over the limit")


@pytest.fixture(autouse=True, scope="module")
def no_hang() -> Iterator[None]:
    """Fail, rather than hang, the module when a read blocks or spins (module-scoped: hypothesis tests use it)."""

    def expire(signum: int, frame: object) -> None:
        raise TimeoutError("a read blocked or spun")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.alarm(600)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, previous)


@dataclass(frozen=True, repr=False)  # no repr: a failing example would print every document
class World:
    """A fenced synthetic chain and one valid document of every kind heliabuild reads."""

    folder: Path
    model: Path
    fenced: Path
    documents: dict[str, bytes]
    scratch: Path
    """A copy of a valid runner folder, where a document under test is written (so a runner.json finds the
    files it lists)."""


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> World:
    folder = tmp_path_factory.mktemp("hostile")
    model = folder / "chain.tflite"
    save_model(chain_network(0), model)
    fenced = folder / "chain_fenced.tflite"
    sidecar = rewrite_model_with_fences(model, [3, 6]).save(fenced)
    vela = compile(fenced, folder / "vela")
    aot = write_plan(vela.model, folder / "aot", "m", PLATFORM)
    runner = build_runner(folder / "runner", model=fenced, policy=POLICY, sidecar=sidecar)
    loaded = load_model(model)
    plan = FencePlan(fences=(Fence(3), Fence(6)), operator_count=len(loaded.subgraphs[0].operators))
    plan = FencePlan(fences=plan.fences, operator_count=plan.operator_count, model_sha256=model_sha256(loaded))
    documents = {
        "fence plan": json.dumps(plan.to_json()).encode(),
        "sidecar": Path(sidecar).read_bytes(),
        "per-layer CSV": Path(vela.per_layer_csv).read_bytes(),
        "summary CSV": Path(vela.summary_csv).read_bytes(),
        "policy": json.dumps(POLICY).encode(),
        "AOT config": json.dumps(CONFIG).encode(),
        "AOT plan": aot.plan.read_bytes(),
        "AOT report": aot.report.read_bytes(),
        "platforms": json.dumps(platforms_document(load_platforms().values())).encode(),
        "runner.json": runner.read_bytes(),
        "runner's sidecar": Path(sidecar).read_bytes(),
        "runner's segments.json": Path(vela.segments_json).read_bytes(),
        "runner's policy": json.dumps(POLICY).encode(),
    }
    scratch = folder / "scratch"
    shutil.copytree(runner.parent, scratch)
    return World(folder, model, fenced, documents, scratch)


def _runner_with(world: World, **inputs: Path) -> Any:
    """build_runner of the fenced chain with `inputs`; on failure, nothing is written."""
    out = Path(tempfile.mkdtemp(dir=world.folder)) / "out"
    try:
        return build_runner(out, model=world.fenced, policy=inputs.pop("policy", None), **inputs)
    except HeliaError:
        assert not out.exists()
        raise
    finally:
        shutil.rmtree(out.parent)


@dataclass(frozen=True)
class Reader:
    """A reader of one kind of document: `read(world, path)`, the error classes it raises, the name of the
    file it reads and the key of its valid document in `World.documents`."""

    name: str
    file: str
    read: Callable[[World, Path], Any]
    errors: tuple[type[HeliaError], ...]
    document: str


READERS = [
    Reader("fence plan", "plan.json", lambda w, p: load_plan(p), (FenceError, SchemaError), "fence plan"),
    Reader("sidecar", "m.fenced_boundaries.json", lambda w, p: load_sidecar(p), (FenceError, SchemaError), "sidecar"),
    Reader("per-layer CSV", "m_per-layer.csv", lambda w, p: read_per_layer(p), (VelaError,), "per-layer CSV"),
    Reader("summary CSV", "m_summary.csv", lambda w, p: read_summary(p), (VelaError,), "summary CSV"),
    Reader("policy (YAML)", "policy.yaml", lambda w, p: load_policy(p), (PolicyError,), "policy"),
    Reader("policy (JSON)", "policy.json", lambda w, p: load_policy(p), (PolicyError,), "policy"),
    Reader("AOT config (YAML)", "aot.yaml", lambda w, p: load_config(p), (ConfigError,), "AOT config"),
    Reader("AOT config (JSON)", "aot.json", lambda w, p: load_config(p), (ConfigError,), "AOT config"),
    Reader("AOT plan", "m_plan.json", lambda w, p: load_aot_plan(p), (PlanReadError,), "AOT plan"),
    Reader("AOT report", "m_report.json", lambda w, p: load_report(p), (PlanReadError,), "AOT report"),
    Reader("platforms", "platforms.json", lambda w, p: load_platforms(p), (PlatformError,), "platforms"),
    Reader("runner.json", "runner.json", lambda w, p: load_runner(p), (RunnerError,), "runner.json"),
    Reader(
        "runner's sidecar",
        "s.fenced_boundaries.json",
        lambda w, p: _runner_with(w, sidecar=p),
        (RunnerError,),
        "runner's sidecar",
    ),
    Reader(
        "runner's segments.json",
        "s_segments.json",
        lambda w, p: _runner_with(w, segments=p),
        (RunnerError,),
        "runner's segments.json",
    ),
    Reader("runner's policy", "p.yaml", lambda w, p: _runner_with(w, policy=p), (PolicyError,), "runner's policy"),
]
IDS = [reader.name for reader in READERS]


def hostile_file(folder: Path, case: str, name: str) -> Path:
    path = folder / name
    if case in CORPUS:
        path.write_bytes(CORPUS[case])
    elif case == "a FIFO":
        os.mkfifo(path)
    elif case == "a symlink to /dev/zero":
        path.symlink_to("/dev/zero")
    elif case == "a folder":
        path.mkdir()
    elif case == "a file over the limit":
        with open(path, "wb") as handle:
            handle.truncate(MAX_DOCUMENT_BYTES + 1)  # sparse: costs no disk
    return path


def assert_one_error(reader: Reader, path: Path, error: HeliaError) -> None:
    assert isinstance(error, reader.errors), (type(error), error.message)
    message = error.message
    assert "\n" not in message and len(message) <= 600, message[:1000]
    assert path.name in message or str(path) in message, message


@pytest.mark.parametrize("case", [*CORPUS, *SPECIAL])
@pytest.mark.parametrize("reader", READERS, ids=IDS)
def test_a_hostile_file_is_one_error_of_the_readers_class(world: World, tmp_path: Path, reader: Reader, case: str):
    path = hostile_file(tmp_path, case, reader.file)
    with pytest.raises(HeliaError) as caught:
        reader.read(world, path)
    assert_one_error(reader, path, caught.value)


def _scratch(world: World, name: str, data: bytes) -> Path:
    path = world.scratch / name
    path.write_bytes(data)
    return path


def _read_or_refuse(world: World, reader: Reader, data: bytes) -> None:
    path = _scratch(world, reader.file, data)
    try:
        reader.read(world, path)
    except HeliaError as error:
        assert_one_error(reader, path, error)


json_leaves = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(1 << 63), max_value=(1 << 63) - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=30)
)
json_values = st.recursive(
    json_leaves,
    lambda children: st.lists(children, max_size=5) | st.dictionaries(st.text(max_size=10), children, max_size=5),
    max_leaves=25,
)
HOSTILE_VALUES = [1 << 62, (1 << 63) - 1, -1, 10**18, "x" * 100_000, "", None, True, 1.5, [], {}, [[[[[[0]]]]]]]
HOSTILE_TEXTS = ["1" + "0" * 400, "NaN", "-Infinity", "1e400", '"\\ud800"', '"a\\u0000b"', "[" * 900 + "]" * 900]
"""JSON texts no JSON value dumps to: spliced into a document in place of a marker string."""
HOSTILE = [json.dumps(value) for value in HOSTILE_VALUES] + HOSTILE_TEXTS
HOSTILE_KEYS = ["k" * 100_000, "", "format", "../outside", "/etc/passwd", "a.b[0]", "\ud800", "a\0b"]


@settings(max_examples=25)
@given(data=st.binary(max_size=300) | json_values.map(lambda value: json.dumps(value).encode()))
@pytest.mark.parametrize("reader", READERS, ids=IDS)
def test_random_bytes_and_json_values_are_read_or_refused(world: World, reader: Reader, data: bytes) -> None:
    _read_or_refuse(world, reader, data)


def _places(document: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every path to a value of `document` (keys and list positions), the root excluded."""
    places: list[tuple[Any, ...]] = []
    items = (
        document.items() if isinstance(document, dict) else enumerate(document) if isinstance(document, list) else ()
    )
    for key, item in items:
        places.append((*path, key))
        places.extend(_places(item, (*path, key)))
    return places


MARK = "@@hostile@@"


@settings(max_examples=40)
@given(data=st.data())
@pytest.mark.parametrize("reader", [r for r in READERS if not r.document.endswith("CSV")], ids=lambda r: r.name)
def test_a_valid_document_with_one_hostile_value_is_read_or_refused(
    world: World, reader: Reader, data: st.DataObject
) -> None:
    document = json.loads(world.documents[reader.document])
    place = data.draw(st.sampled_from(_places(document)))
    parent = document
    for key in place[:-1]:
        parent = parent[key]
    if isinstance(parent, dict) and data.draw(st.booleans()):  # a hostile key instead of a hostile value
        parent[data.draw(st.sampled_from(HOSTILE_KEYS))] = parent.pop(place[-1])
        text = json.dumps(document)
    else:
        parent[place[-1]] = MARK
        text = json.dumps(document).replace(json.dumps(MARK), data.draw(st.sampled_from(HOSTILE)))
    _read_or_refuse(world, reader, text.encode())


@settings(max_examples=25)
@given(
    row=st.lists(
        st.sampled_from(["1e400", "nan", "inf", "-1", "1.5", "x" * 200_000, '"a', "\x00", "9" * 5000, ""]), max_size=12
    )
)
@pytest.mark.parametrize("reader", [r for r in READERS if r.document.endswith("CSV")], ids=lambda r: r.name)
def test_a_vela_csv_with_hostile_cells_is_read_or_refused(world: World, reader: Reader, row: list[str]) -> None:
    lines = world.documents[reader.document].decode().splitlines()
    cells = lines[1].split(",")
    for position, cell in enumerate(row):
        cells[position % len(cells)] = cell
    _read_or_refuse(world, reader, "\n".join([lines[0], ",".join(cells), *lines[2:]]).encode() + b"\n")


# --- counts bounded by the schema and the model ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("field", "value", "fragment"),
    [
        ("measured_invokes", 10**12, "measured_invokes: 1000000000000 is greater than the maximum of 10000"),
        ("warmup_invokes", 1 << 62, "warmup_invokes: 4611686018427387904 is greater than the maximum of 1000"),
    ],
)
def test_runner_json_counts_are_bounded(world: World, tmp_path: Path, field: str, value: int, fragment: str) -> None:
    document = json.loads(world.documents["runner.json"])
    document["policy"][field] = value
    path = _scratch(world, "runner.json", json.dumps(document).encode())
    with pytest.raises(RunnerError) as caught:
        load_runner(path)
    assert fragment in caught.value.message


def test_a_sidecar_count_or_range_the_model_does_not_have_is_refused(world: World) -> None:
    document = json.loads(world.documents["sidecar"])
    document["num_segments"] = 999_999
    path = _scratch(world, "model.fenced_boundaries.json", json.dumps(document).encode())
    with pytest.raises(RunnerError, match=r"num_segments: found 999999 with 3 segments, but the model has 3 segments"):
        _runner_with(world, sidecar=path)
    document = json.loads(world.documents["sidecar"])
    document["segments"][2]["op_range_end"] = 999_999
    path.write_text(json.dumps(document))
    with pytest.raises(RunnerError, match=r"segments\[2\]: index 2 covers operators 7\.\.999999, but the model's"):
        _runner_with(world, sidecar=path)
    document["segments"][2]["op_range_end"] = 10**9
    path.write_text(json.dumps(document))
    with pytest.raises(RunnerError, match=r"op_range_end: 1000000000 is greater than the maximum of 999999"):
        _runner_with(world, sidecar=path)


def test_a_segments_json_range_the_model_does_not_have_is_refused(world: World) -> None:
    document = json.loads(world.documents["runner's segments.json"])
    document["segments"][0]["op_range_end"] = 5
    path = _scratch(world, "segments.json", json.dumps(document).encode())
    with pytest.raises(RunnerError, match=r"segments\[0\]: index 0 covers operators 0\.\.5, but the model's segment 0"):
        _runner_with(world, segments=path)


def test_a_fence_plan_operator_count_beyond_the_schema_is_refused(world: World) -> None:
    document = json.loads(world.documents["fence plan"])
    document["operator_count"] = 10**15
    path = _scratch(world, "plan.json", json.dumps(document).encode())
    with pytest.raises(SchemaError, match=r"plan\.json: operator_count: 1000000000000000 is greater than the maximum"):
        load_plan(path)


# --- the SConscript-time readers ---------------------------------------------------------------------------------


@pytest.mark.parametrize("case", [*CORPUS, *SPECIAL])
def test_the_sconscript_policy_reader_gives_up_quietly(tmp_path: Path, case: str) -> None:
    """While the SConscripts are read, a hostile policy is left for the action to report: None, or what YAML reads
    in it (`NaN` is a string there, a JSON list a list), never an exception."""
    path = hostile_file(tmp_path, case, "policy.yaml")
    document = scan_policy_file(str(path))
    assert document is None or isinstance(document, dict | list), document


# --- tensor_io files ---------------------------------------------------------------------------------------------


def _input_bytes(world: World) -> int:
    cut = cut_segments(load_model(world.fenced))
    return cut.tensors[cut.graph_inputs[0]].byte_length


def _policy_file(folder: Path, file: str, opt_in: bool | None = None) -> Path:
    tensor_io: dict[str, Any] = {"inputs": [{"index": 0, "file": file}]}
    if opt_in is not None:
        tensor_io["allow_outside_policy_folder"] = opt_in
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "policy.yaml"
    path.write_text(json.dumps({"defaults": {"fvp": {"tensor_io": tensor_io}}}), encoding="utf-8")
    return path


@pytest.mark.parametrize("file", ["../input0.bin", "ABSOLUTE", "link.bin"])
def test_a_tensor_io_file_outside_the_policy_folder_is_refused(world: World, tmp_path: Path, file: str) -> None:
    outside = tmp_path / "input0.bin"
    outside.write_bytes(b"\0" * _input_bytes(world))
    (tmp_path / "policies").mkdir()
    (tmp_path / "policies" / "link.bin").symlink_to(outside)
    name = str(outside) if file == "ABSOLUTE" else file
    policy = _policy_file(tmp_path / "policies", name)
    out = tmp_path / "runner"
    with pytest.raises(PolicyError) as caught:
        build_runner(out, model=world.fenced, policy=policy)
    assert caught.value.message == (
        f"{policy}: defaults.fvp.tensor_io.inputs (index 0): {name} lies outside the policy's folder "
        f"{(tmp_path / 'policies').resolve()}"
    )
    assert caught.value.hint == "move the file beside the policy, or set tensor_io.allow_outside_policy_folder: true"
    assert not out.exists()
    opted_in = _policy_file(tmp_path / "policies", name, opt_in=True)
    runner = build_runner(out, model=world.fenced, policy=opted_in)
    assert (runner.parent / "inputs" / "input_0.bin").read_bytes() == outside.read_bytes()


def test_a_tensor_io_file_inside_the_policy_folder_is_copied(world: World, tmp_path: Path) -> None:
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "input0.bin").write_bytes(b"\1" * _input_bytes(world))
    runner = build_runner(tmp_path / "runner", model=world.fenced, policy=_policy_file(tmp_path, "data/input0.bin"))
    assert (runner.parent / "inputs" / "input_0.bin").read_bytes() == b"\1" * _input_bytes(world)


@pytest.mark.parametrize("case", ["a FIFO", "a symlink to /dev/zero", "a folder"])
def test_a_tensor_io_file_that_is_not_a_regular_file_is_refused(world: World, tmp_path: Path, case: str) -> None:
    hostile_file(tmp_path, case, "input.bin")
    policy = _policy_file(tmp_path, "input.bin", opt_in=True)  # a device lies outside: the opt-in reaches it
    with pytest.raises(PolicyError) as caught:
        build_runner(tmp_path / "runner", model=world.fenced, policy=policy)
    assert caught.value.message.startswith(f"{policy}: defaults.fvp.tensor_io.inputs (index 0): {tmp_path}/input.bin")
    assert "expected a regular file" in caught.value.message
    assert not (tmp_path / "runner").exists()


def test_the_opt_in_must_be_a_boolean(tmp_path: Path) -> None:
    policy = _policy_file(tmp_path, "input.bin", opt_in=None)
    policy.write_text(
        json.dumps({"defaults": {"fvp": {"tensor_io": {"inputs": [], "allow_outside_policy_folder": "yes"}}}})
    )
    with pytest.raises(
        PolicyError, match=r"tensor_io\.allow_outside_policy_folder: found 'yes', expected true or false"
    ):
        load_policy(policy)


# --- the command line --------------------------------------------------------------------------------------------


def test_a_policy_alias_bomb_through_runner_exits_2(cli, world: World, tmp_path: Path) -> None:
    policy = tmp_path / "policy.yaml"
    policy.write_bytes(alias_bomb())
    out = tmp_path / "runner"
    result = cli("runner", "--model", world.fenced, "--policy", policy, "-o", out)
    assert_one_line_error(result, f"{policy}: line 1: the policy uses a YAML anchor or alias")
    assert_not_written(out)


def test_a_deeply_nested_fence_plan_through_fence_exits_2(cli, world: World, tmp_path: Path) -> None:
    plan = tmp_path / "plan.json"
    plan.write_bytes(b"[" * 100_000 + b"]" * 100_000)
    out = tmp_path / "fenced.tflite"
    result = cli("fence", world.model, "--plan", plan, "-o", out)
    assert_one_line_error(result, f"{plan}: the fence plan nests deeper than 64 levels")
    assert_not_written(out, tmp_path / "fenced.fenced_boundaries.json")


def test_a_non_utf8_aot_config_through_aot_plan_exits_2(cli, world: World, tmp_path: Path) -> None:
    config = tmp_path / "aot.yaml"
    config.write_bytes(b"optimization:\n  goal: lat\xe9ncy\n")
    out = tmp_path / "aot"
    result = cli("aot-plan", world.model, "--prefix", "m", "--platform", PLATFORM, "--config", config, "-o", out)
    assert_one_line_error(result, f"{config}: the configuration is not UTF-8 text: byte 0xe9 at offset 25")
    assert_not_written(out)


def test_a_binding_error_names_the_fence_plan(cli, world: World, tmp_path: Path) -> None:
    document = json.loads(world.documents["fence plan"])
    document["operator_count"] += 1
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps(document))
    out = tmp_path / "fenced.tflite"
    result = cli("fence", world.model, "--plan", plan, "-o", out)
    count = document["operator_count"]
    assert_one_line_error(
        result, f"{world.model}: fence plan {plan} operator_count is {count}, but the model has {count - 1}"
    )
    assert_not_written(out)
