"""The exit statuses of every `heliabuild` command, as docs/cli.md's "Exit statuses" table states them: the table
names every command of the parser; each command exits 2 (one line, nothing written) for bad input; a refused
verification exits 3 from `run` and `run-build`; a regression exits 4 from `compare --max-regression`; an
uncaught exception exits 1; none of them shares a status with another meaning."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.trees import snapshot

from heliabuild.cli import EXIT_BAD_INPUT, EXIT_INTERNAL_FAULT, EXIT_REGRESSION, EXIT_VERIFICATION, build_parser

DOCS = Path(__file__).resolve().parents[1] / "docs" / "cli.md"


def documented() -> dict[str, set[int]]:
    """docs/cli.md's per-command table: command -> its exit statuses."""
    text = DOCS.read_text(encoding="utf-8")
    table = text[text.index("| command | exit statuses |") :].split("\n\n")[0]
    rows = re.findall(r"^\| `([a-z-]+)`(?: \(bare\))? \| ([0-9, ]+) \|$", table, re.MULTILINE)
    return {name: {int(code) for code in codes.split(",")} for name, codes in rows}


def commands() -> list[str]:
    parser = build_parser()
    (action,) = [a for a in parser._subparsers._group_actions]  # type: ignore[union-attr]
    return sorted(action.choices)  # type: ignore[arg-type]


def test_the_table_names_every_command_and_only_its_own_statuses() -> None:
    table = documented()
    missing = sorted(set(commands()) - set(table))
    assert not missing, f"docs/cli.md's exit-status table has no row for {missing}"
    assert sorted(set(table) - {"heliabuild"}) == commands()
    assert table["heliabuild"] == {0}
    for name in commands():
        extra = {"run": {EXIT_VERIFICATION}, "run-build": {EXIT_VERIFICATION}, "compare": {EXIT_REGRESSION}}
        assert table[name] == {0, EXIT_INTERNAL_FAULT, EXIT_BAD_INPUT, 130} | extra.get(name, set()), name
    assert len({EXIT_INTERNAL_FAULT, EXIT_BAD_INPUT, EXIT_VERIFICATION, EXIT_REGRESSION, 130}) == 5


BAD_INPUT = {
    "fence": ["{missing}", "-o", "{out}/f.tflite", "--after-ops", "1"],
    "verify-fenced": ["{missing}"],
    "unfence": ["{missing}", "-o", "{out}/u.tflite"],
    "synth": ["no-such-kind", "-o", "{out}/s.tflite"],
    "vela": ["{missing}", "-o", "{out}/vela"],
    "plan-fences": ["{missing}", "--budget-cycles", "1000", "-o", "{out}/plan.json"],
    "aot-plan": ["{missing}", "-o", "{out}/plan"],
    "module": ["{missing}", "{missing}", "-o", "{out}/module"],
    "runner": ["--model", "{missing}", "-o", "{out}/runner"],
    "run": ["{missing}", "-o", "{out}/result"],
    "run-build": ["{missing}", "-o", "{out}/result"],
    "show": ["{missing}"],
    "export": ["{missing}"],
    "ops": ["{missing}"],
    "compare": ["{missing}", "{missing}"],
    "doctor": ["--backend", "fvp"],  # no Arm FVP can be installed here or in CI (docs/dependencies.md)
    "docs": ["no-such-page"],
}
"""A bad-input invocation of each command: a missing input file (an unknown kind for synth)."""


def test_every_command_has_a_bad_input_case() -> None:
    assert sorted(BAD_INPUT) == commands(), "add the command's bad-input invocation to BAD_INPUT"


@pytest.mark.parametrize("command", sorted(BAD_INPUT))
def test_bad_input_exits_2_with_one_line_and_writes_nothing(cli, tmp_path: Path, command: str) -> None:  # type: ignore[no-untyped-def]
    out = tmp_path / "out"
    out.mkdir()
    argv = [a.format(missing=tmp_path / "missing.tflite", out=out) for a in BAD_INPUT[command]]
    before = snapshot(tmp_path)
    result = cli(command, *argv)
    assert result.code == EXIT_BAD_INPUT, (result.code, result.err)
    assert result.err.startswith("heliabuild: error: ") and result.err.count("\n") == 1, result.err
    assert snapshot(tmp_path) == before


def test_an_unknown_option_exits_2(cli) -> None:  # type: ignore[no-untyped-def]
    result = cli("show", "x", "--no-such-option")
    assert result.code == EXIT_BAD_INPUT and "unrecognized arguments" in result.err


def test_bare_heliabuild_exits_0(cli) -> None:  # type: ignore[no-untyped-def]
    result = cli()
    assert result.code == 0 and "compare" in result.out


def test_an_uncaught_exception_exits_1_apart_from_every_other_status(tmp_path: Path) -> None:
    """An internal fault (here a command made to raise a bug's ZeroDivisionError) is Python's own exit 1 with
    its traceback: no status a user's mistake, a refused verification or a regression gives."""
    script = (
        "import sys, heliabuild.cli as cli, heliabuild.cli.ops as ops\n"
        "def broken(args):\n    return 1 // 0\n"
        "ops.run_command = broken\n"
        "sys.exit(cli.main(['ops', 'x.tflite']))\n"
    )
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=tmp_path, check=False)
    assert run.returncode == EXIT_INTERNAL_FAULT == 1
    assert "Traceback" in run.stderr and "ZeroDivisionError" in run.stderr


@pytest.fixture(scope="module")
def refused_runner(tmp_path_factory: pytest.TempPathFactory, resnet_path: Path) -> Path:
    """A litert runner of the MLPerf ResNet bound to LiteRT's reference kernels at 0: LiteRT's default kernels
    differ from them on this model (docs/runner.md, "Verification"), so every run of it is refused."""
    from heliabuild.runner.freeze import build_runner

    policy = {"defaults": {"fvp": {"verification": {"resolver": "BUILTIN_REF", "max_abs_diff": 0}}}}
    return build_runner(tmp_path_factory.mktemp("refused") / "runner", model=resnet_path, policy=policy)


@pytest.mark.parametrize("command", ["run", "run-build"])
def test_a_refused_verification_exits_3_and_publishes_nothing(  # type: ignore[no-untyped-def]
    cli, refused_runner: Path, tmp_path: Path, command: str
) -> None:
    before = snapshot(tmp_path)
    result = cli(command, refused_runner, "-o", tmp_path / "result")
    assert result.code == EXIT_VERIFICATION == 3, result.err
    assert "differs from LiteRT reference kernels (BUILTIN_REF) by " in result.err
    assert result.err.count("\n") == 1 and snapshot(tmp_path) == before


def test_a_regression_exits_4_and_its_absence_0(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    from test_results_compare import SEGMENTS, hand_made

    base = hand_made(tmp_path / "base", [0.001, 0.001, 0.001])
    grown = [dict(segment, estimated_cycles=2 * segment["estimated_cycles"]) for segment in SEGMENTS]
    slower = hand_made(tmp_path / "slower", [0.001, 0.001, 0.001], segments=grown)  # Vela's estimate doubled
    regressed = cli("compare", base, slower, "--max-regression", "10")
    assert regressed.code == EXIT_REGRESSION == 4 and "regress by more than 10%" in regressed.out
    assert cli("compare", slower, base, "--max-regression", "10").code == 0
    assert cli("compare", base, slower).code == 0  # no gate asked for
