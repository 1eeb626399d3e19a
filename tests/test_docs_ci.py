"""docs/ci.md's GitHub Actions and GitLab CI jobs are ready to copy: each is valid YAML of its service's shape,
and every `heliabuild` command in them is one the command's own parser accepts (the arguments a shell would
pass it, before a redirection), including the gate `compare ... --max-regression` and `doctor --backend`."""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from typing import Any

import pytest
import yaml

from heliabuild.cli import build_parser

DOCS = Path(__file__).resolve().parents[1] / "docs" / "ci.md"


def jobs() -> dict[str, Any]:
    """The YAML blocks of docs/ci.md, by the file name given on the line before each."""
    text = DOCS.read_text(encoding="utf-8")
    blocks = re.findall(r"^`([^`]+)`:\n\n```yaml\n(.*?)^```$", text, re.MULTILINE | re.DOTALL)
    return {name: yaml.safe_load(body) for name, body in blocks}


def shell_lines(document: dict[str, Any], name: str) -> list[str]:
    """Each shell command line of a GitHub workflow's `run` steps or a GitLab job's `before_script` and `script`."""
    if name.startswith(".github/workflows/"):
        runs = [step["run"] for job in document["jobs"].values() for step in job["steps"] if "run" in step]
        return [line.strip() for run in runs for line in run.splitlines() if line.strip()]
    return [
        line
        for job in document.values()
        if isinstance(job, dict)
        for line in [*job.get("before_script", []), *job["script"]]
    ]


def heliabuild_commands(lines: list[str]) -> list[list[str]]:
    """The arguments of each `heliabuild` command of `lines`, each `&&`-joined command apart, up to the first
    redirection or pipe."""
    commands = []
    for line in lines:
        for command in line.split("&&"):
            words = shlex.split(command)
            cut = next((i for i, word in enumerate(words) if word in {">", ">>", "|", "2>&1"}), len(words))
            if words and words[0] == "heliabuild":
                commands.append(words[1:cut])
    return commands


def test_ci_md_has_a_github_actions_and_a_gitlab_ci_job() -> None:
    found = jobs()
    assert sorted(found) == [".github/workflows/heliabuild.yml", ".gitlab-ci.yml"]
    github = found[".github/workflows/heliabuild.yml"]
    assert "pull_request" in github[True]  # YAML 1.1 reads the key `on` as true, as GitHub's own reader does not
    (job,) = github["jobs"].values()
    assert job["runs-on"] and any(step.get("uses", "").startswith("actions/checkout@") for step in job["steps"])
    gitlab = found[".gitlab-ci.yml"]["heliabuild-gate"]
    assert gitlab["image"].startswith("python:3.11") and gitlab["artifacts"]["when"] == "always"


@pytest.mark.parametrize("name", [".github/workflows/heliabuild.yml", ".gitlab-ci.yml"])
def test_every_heliabuild_command_of_a_job_parses(name: str) -> None:
    commands = heliabuild_commands(shell_lines(jobs()[name], name))
    parser = build_parser()
    for argv in commands:
        args = parser.parse_args(argv)  # argparse exits 2 on a command that does not parse
        assert args.run is not None
    verbs = [argv[0] for argv in commands]
    assert verbs == ["doctor", "compare", "compare"], verbs
    gate = parser.parse_args(commands[-1])
    assert gate.max_regression == 5.0 and not gate.gate_noisy
    assert parser.parse_args(commands[1]).format == "md" and parser.parse_args(commands[1]).max_regression is None
    assert parser.parse_args(commands[0]).backend == ["qemu-m55"]


def test_the_gate_of_a_litert_pipeline_parses_with_gate_noisy() -> None:
    """docs/ci.md: `add --gate-noisy to the gate line` for a litert pipeline."""
    name = ".gitlab-ci.yml"
    gate = heliabuild_commands(shell_lines(jobs()[name], name))[-1]
    assert build_parser().parse_args([*gate, "--gate-noisy"]).gate_noisy is True
    assert "add `--gate-noisy` to the gate line" in DOCS.read_text(encoding="utf-8")
