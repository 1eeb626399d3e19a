"""Errors and warnings in colour on a terminal, plain elsewhere and with NO_COLOR (heliabuild.colour), and the
did-you-mean of a misspelt command or choice: the installed command on a pseudo-terminal and on pipes."""

from __future__ import annotations

import os
import pty
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.terminal import read_to_the_end

from heliabuild.colour import coloured

HELIABUILD = Path(sys.executable).with_name("heliabuild")
ERROR = "heliabuild: \x1b[1;31merror\x1b[0m: /nonexistent: not a result bundle folder"


def on_a_terminal(*arguments: str, **variables: str) -> tuple[int, str]:
    """Run the command with stdout and stderr on a pseudo-terminal; its status and what it wrote."""
    controller, terminal = pty.openpty()
    environment = {key: value for key, value in os.environ.items() if key not in ("NO_COLOR", "TERM")}
    process = subprocess.Popen(
        [str(HELIABUILD), *arguments], stdout=terminal, stderr=terminal, env={**environment, **variables}
    )
    os.close(terminal)
    written = read_to_the_end(controller)
    return process.wait(timeout=60), written.decode().replace("\r\n", "\n")


def test_an_error_is_red_on_a_terminal() -> None:
    assert on_a_terminal("show", "/nonexistent") == (2, ERROR + "\n")


@pytest.mark.parametrize("variables", [{"NO_COLOR": "1"}, {"TERM": "dumb"}])
def test_no_color_or_a_dumb_terminal_gets_plain_text(variables: dict[str, str]) -> None:
    assert on_a_terminal("show", "/nonexistent", **variables) == (
        2,
        ERROR.replace("\x1b[1;31m", "").replace("\x1b[0m", "") + "\n",
    )


def test_an_empty_no_color_is_unset(monkeypatch: pytest.MonkeyPatch) -> None:
    assert on_a_terminal("show", "/nonexistent", NO_COLOR="") == (2, ERROR + "\n")


def test_a_pipe_gets_plain_text() -> None:
    result = subprocess.run([str(HELIABUILD), "show", "/nonexistent"], capture_output=True, text=True, check=False)
    assert (result.returncode, result.stderr) == (2, "heliabuild: error: /nonexistent: not a result bundle folder\n")


class _Terminal:
    def isatty(self) -> bool:
        return True


def test_only_the_level_word_of_a_heliabuild_line_is_painted(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.delenv("TERM", raising=False)
    terminal = _Terminal()
    assert coloured("heliabuild: warning: vela x.tflite: text: error: y", terminal) == (  # type: ignore[arg-type]
        "heliabuild: \x1b[1;33mwarning\x1b[0m: vela x.tflite: text: error: y"
    )
    assert coloured("heliabuild: vela warning: z", terminal) == "heliabuild: vela \x1b[1;33mwarning\x1b[0m: z"  # type: ignore[arg-type]
    assert coloured("heliabuild: [1/6] synth kws.tflite", terminal) == "heliabuild: [1/6] synth kws.tflite"  # type: ignore[arg-type]


def test_a_misspelt_command_or_choice_gets_a_did_you_mean() -> None:
    result = subprocess.run([str(HELIABUILD), "fense", "x"], capture_output=True, text=True, check=False)
    assert result.returncode == 2
    assert result.stderr.startswith(
        "heliabuild: error: argument COMMAND: invalid choice: 'fense'; did you mean 'fence' or 'unfence'? "
        "(choose from 'fence', "
    ), result.stderr
    result = subprocess.run([str(HELIABUILD), "compare", "a", "b", "--format", "mdd"], capture_output=True, text=True)
    assert result.stderr == (
        "heliabuild compare: error: argument --format: invalid choice: 'mdd'; did you mean 'md'? "
        "(choose from 'text', 'md', 'json') (see heliabuild compare --help)\n"
    )
    result = subprocess.run([str(HELIABUILD), "zzzz"], capture_output=True, text=True, check=False)
    assert "invalid choice: 'zzzz' (choose from 'fence'," in result.stderr  # nothing near: no suggestion
