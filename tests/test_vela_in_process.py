"""Vela inside one process, many compiles in a row (heliabuild.vela.in_process), against Vela as a fresh
subprocess for each compile: every output byte-identical, each compile's warnings its own.

This is the evidence behind running Vela inside SCons at -j1 (docs/scons.md, "Where Vela runs"): Vela
would have to keep no state from one compile to the next that changes what it writes or prints. One
process compiles every case (models of heliabuild.synth fenced and not, the real models when present,
five accelerator configurations) three times, in order, reversed and shuffled, with refused compiles in
between; each compile is compared with the same compile run as its own Vela subprocess.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.paths import KWS, RESNET, SHARED_MODELS, shared_models_present
from helpers.skips import require

from heliabuild.errors import VelaError
from heliabuild.fence import rewrite_model_with_fences
from heliabuild.model import save_model
from heliabuild.synth import chain_network, residual_network
from heliabuild.vela import compile

CONFIGS: dict[str, dict[str, object]] = {
    "u55-64": {"accelerator": "ethos-u55-64"},
    "u55-128": {"accelerator": "ethos-u55-128"},
    "u55-256-size": {"accelerator": "ethos-u55-256", "optimise": "Size"},
    "u65-256": {"accelerator": "ethos-u65-256"},
    "u85-256": {
        "accelerator": "ethos-u85-256",
        "system_config": "Ethos_U85_SYS_DRAM_High",
        "memory_mode": "Dedicated_Sram_512KB",
    },
}
REFUSED: dict[str, object] = {"accelerator": "ethos-u55-128", "extra_args": ["--cpu-tensor-alignment", "7"]}
"""Options Vela itself refuses (argparse's error, exit 2), after heliabuild's own checks pass."""

DRIVER = """\
import json, sys
from heliabuild.errors import VelaError
from heliabuild.vela import compile

started = []
sys.addaudithook(lambda event, args: started.append(str(args[1])) if event == "subprocess.Popen" else None)
cases, root = json.loads(sys.argv[1]), sys.argv[2]
results = []
for number, (model, options) in enumerate(cases):
    try:
        result = compile(model, f"{root}/{number}", **options, in_process=True)
    except VelaError as error:
        results.append({"error": str(error)})
    else:
        results.append({"warnings": list(result.warnings)})
json.dump({"results": results, "subprocesses": started}, sys.stdout)
"""


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    folder = tmp_path_factory.mktemp("models")
    chain, residual = folder / "chain.tflite", folder / "residual.tflite"
    save_model(chain_network(0), chain)
    save_model(residual_network(1), residual)
    rewrite_model_with_fences(chain, [3, 6]).save(folder / "chain_fenced.tflite")
    rewrite_model_with_fences(residual, [3, 7]).save(folder / "residual_fenced.tflite")
    found = [chain, residual, folder / "chain_fenced.tflite", folder / "residual_fenced.tflite"]
    if shared_models_present():
        found += [SHARED_MODELS / KWS, SHARED_MODELS / RESNET]
    return found


def files(folder: Path) -> dict[str, bytes]:
    return {path.name: path.read_bytes() for path in sorted(folder.iterdir())}


def apart(model: Path, options: dict[str, object], out: Path) -> dict[str, object]:
    """The compile as its own Vela subprocess: its warnings, or its error."""
    try:
        return {"warnings": list(compile(model, out, **options).warnings)}
    except VelaError as error:
        return {"error": str(error)}


@pytest.mark.slow
def test_many_compiles_in_one_process_write_what_fresh_subprocesses_write(models: list[Path], tmp_path: Path) -> None:
    cases = [(str(model), options) for model in models for options in CONFIGS.values()]
    refused = (str(models[0]), REFUSED)
    shuffled = random.Random(13).sample(cases, len(cases))
    sequence = [*cases, refused, *reversed(cases), refused, *shuffled]

    reference = {}
    for number, (model, options) in enumerate([*cases, refused]):
        out = tmp_path / "apart" / str(number)
        reference[json.dumps([model, options])] = (apart(Path(model), options, out), out)
    run = subprocess.run(
        [sys.executable, "-c", DRIVER, json.dumps(sequence), str(tmp_path / "one")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert run.returncode == 0, run.stderr
    assert run.stderr == ""  # nothing Vela printed got past the capture
    report = json.loads(run.stdout)
    assert report["subprocesses"] == []  # every compile ran inside the one process

    assert len(report["results"]) == len(sequence)
    for number, ((model, options), got) in enumerate(zip(sequence, report["results"], strict=True)):
        expected, expected_out = reference[json.dumps([model, options])]
        assert got == expected, (number, model, options)
        out = tmp_path / "one" / str(number)
        if "error" in expected:
            assert not out.exists(), (number, model, options)
        else:
            assert files(out) == files(expected_out), (number, model, options)


def test_vela_refusing_its_arguments_in_process_is_the_subprocess_error(tmp_path: Path) -> None:
    model = tmp_path / "chain.tflite"
    save_model(chain_network(0), model)
    with pytest.raises(VelaError) as apart_error:
        compile(model, tmp_path / "apart", **REFUSED)
    driver = (
        "import sys\nfrom heliabuild.errors import VelaError\nfrom heliabuild.vela import compile\n"
        "try:\n"
        f"    compile(sys.argv[1], sys.argv[2], **{REFUSED!r}, in_process=True)\n"
        "except VelaError as error:\n"
        "    print(error)\n"
    )
    run = subprocess.run(
        [sys.executable, "-c", driver, model, tmp_path / "own"], capture_output=True, text=True, check=False
    )
    assert (run.returncode, run.stderr) == (0, "")
    assert run.stdout == f"{apart_error.value}\n"
    assert "cpu-tensor-alignment" in run.stdout
    assert not (tmp_path / "own").exists() and not (tmp_path / "apart").exists()


def test_the_shared_models_are_among_the_cases() -> None:
    """The cases above include the real models only where they are present: without them this test is the
    skip (a failure under CI) that says so."""
    require(shared_models_present(), f"real models not available: {SHARED_MODELS} is absent")
