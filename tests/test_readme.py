"""The README's SConstruct snippet works verbatim from a folder outside the checkout, with only the installed
package (no site_scons, no toolpath): the tool is `heliabuild.scons.tool`."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from test_scons import build_ok, heliabuild_lines, output_of

from heliabuild.api import load_result

README = Path(__file__).resolve().parents[1] / "README.md"

pytestmark = pytest.mark.slow


def sconstruct_snippet() -> str:
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), flags=re.DOTALL)
    (snippet,) = [block for block in blocks if "Environment(" in block]
    return snippet


def test_the_readme_sconstruct_builds_outside_the_checkout(tmp_path: Path) -> None:
    project = tmp_path / "my-project"
    project.mkdir()
    (project / "SConstruct").write_text(sconstruct_snippet(), encoding="utf-8")
    result = build_ok(project, "kws")
    stages = [line.split(" ")[1] for line in heliabuild_lines(result) if not line.startswith("heliabuild: warning")]
    assert stages == ["synth", "fence", "vela", "aot-plan", "runner", "run"], output_of(result)
    bundle = load_result(project / "build" / "kws" / "results" / "kws")
    assert bundle.receipt is not None and len(bundle.segments) == 3
    assert not (project / "site_scons").exists()
    again = build_ok(project, "kws")
    assert heliabuild_lines(again) == [], output_of(again)
