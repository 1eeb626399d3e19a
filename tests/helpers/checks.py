"""Assertions shared by the CLI and rejection tests."""

from __future__ import annotations

from pathlib import Path


def assert_one_line_error(result, *fragments: str) -> str:
    """Exit status 2, exactly one stderr line starting `heliabuild`, no traceback; returns the line."""
    assert result.code == 2, (result.code, result.out, result.err)
    lines = result.err.strip("\n").splitlines()
    assert len(lines) == 1, result.err
    assert lines[0].startswith("heliabuild"), lines[0]
    assert "Traceback" not in result.err
    for fragment in fragments:
        assert fragment in lines[0], (fragment, lines[0])
    return lines[0]


def assert_not_written(*paths: Path) -> None:
    """None of `paths` exists, and no temporary file of theirs is left beside them."""
    for path in paths:
        assert not path.exists(), f"{path} was written"
        if path.parent.is_dir():
            leftovers = [p.name for p in path.parent.iterdir() if p.name.startswith(f".{path.name}.")]
            assert leftovers == [], leftovers
