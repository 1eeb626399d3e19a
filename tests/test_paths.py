"""heliabuild.paths.check_outputs: an output is refused exactly when it is an input, a folder containing
one, or (for an input read as a whole folder) lies inside it, however the paths are spelled."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from heliabuild.errors import HeliaError
from heliabuild.paths import check_outputs

parts = st.lists(st.sampled_from(["a", "b", "c"]), max_size=3).map(tuple)


def expected(output: tuple[str, ...], source: tuple[str, ...], whole_folder: bool) -> str | None:
    if output == source:
        return "is"
    if source[: len(output)] == output:
        return "contains"
    if whole_folder and output[: len(source)] == source:
        return "is inside"
    return None


def spell(root: Path, components: tuple[str, ...], style: int) -> str:
    """The same path spelled three ways: plainly, through a `..` detour, and through a symlink to the root."""
    if style == 1:
        return os.path.join(root, "a", "..", *components)
    if style == 2:
        return os.path.join(root, "alias", *components)
    return os.path.join(root, *components)


@given(
    output=parts,
    source=parts,
    whole_folder=st.booleans(),
    output_style=st.integers(0, 2),
    source_style=st.integers(0, 2),
)
def test_refused_exactly_when_the_paths_meet(
    output: tuple[str, ...], source: tuple[str, ...], whole_folder: bool, output_style: int, source_style: int
) -> None:
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder) / "root"
        (root / "a").mkdir(parents=True)
        (root / "alias").symlink_to(root, target_is_directory=True)
        out, src = spell(root, output, output_style), spell(root, source, source_style)
        given_inputs = ([] if whole_folder else [("input", src)], [("input", src)] if whole_folder else [])
        relation = expected(output, source, whole_folder)
        if relation is None:
            check_outputs([("output", out)], *given_inputs)
            return
        with pytest.raises(HeliaError) as caught:
            check_outputs([("output", out)], *given_inputs)
        assert caught.value.message.startswith(f"{out}: the output output {relation} the input input {src};")


def test_a_hard_link_is_the_same_file(tmp_path: Path) -> None:
    (tmp_path / "model.tflite").write_bytes(b"model")
    os.link(tmp_path / "model.tflite", tmp_path / "other.tflite")
    with pytest.raises(HeliaError, match="the output copy is the input model"):
        check_outputs([("copy", tmp_path / "other.tflite")], [("model", tmp_path / "model.tflite")])


def test_the_closest_relation_is_named_and_absent_paths_are_skipped(tmp_path: Path) -> None:
    inputs = [("folder", tmp_path / "d"), ("file", tmp_path / "d" / "f"), ("unused", None)]
    with pytest.raises(HeliaError, match="the output x is the input folder"):
        check_outputs([("x", tmp_path / "d"), ("y", None)], inputs)
    check_outputs([("x", None)], inputs)
