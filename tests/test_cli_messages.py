"""Error messages name what the user gave: the target of a write that fails (never heliabuild's temporary
file), a model with no operators, the .ini file that lacks a section; and a failed `vela` leaves no folder
it created."""

from __future__ import annotations

import errno
import os
import tempfile
from pathlib import Path

import pytest
from helpers.checks import assert_not_written, assert_one_line_error
from helpers.tflite import Net
from helpers.trees import snapshot

from heliabuild.model import save_model
from heliabuild.synth import chain_network


@pytest.fixture
def model(tmp_path: Path) -> Path:
    path = tmp_path / "chain.tflite"
    save_model(chain_network(0), path)
    return path


@pytest.fixture
def zero_model(tmp_path: Path) -> Path:
    """A valid model whose graph has no operator: its input is its output."""
    net = Net()
    tensor = net.tensor("input")
    path = tmp_path / "zero.tflite"
    save_model(net.model([tensor], [tensor]), path)
    return path


def test_an_unwritable_folder_names_the_target_not_a_temporary_file(cli, tmp_path: Path, monkeypatch) -> None:
    def refuse(*, prefix: str, suffix: str, dir: Path) -> tuple[int, str]:
        raise PermissionError(errno.EACCES, "Permission denied", os.path.join(dir, f"{prefix}abc{suffix}"))

    monkeypatch.setattr(tempfile, "mkstemp", refuse)
    target = tmp_path / "ro" / "m.tflite"
    result = cli("synth", "chain", "-o", target)
    line = assert_one_line_error(result)
    assert line == f"heliabuild: error: {target}: cannot write: Permission denied"
    assert not (tmp_path / "ro").exists()  # the folder it made for the file is removed again


def test_an_unwritable_bundle_folder_names_the_bundle(tmp_path: Path, monkeypatch) -> None:
    from test_results_bundle import make_bundle

    def refuse(*, prefix: str, suffix: str, dir: Path) -> str:
        raise PermissionError(errno.EACCES, "Permission denied", os.path.join(dir, f"{prefix}abc{suffix}"))

    monkeypatch.setattr(tempfile, "mkdtemp", refuse)
    target = tmp_path / "results" / "run"
    with pytest.raises(PermissionError) as caught:
        make_bundle(target)
    assert caught.value.filename == str(target)
    assert list(tmp_path.iterdir()) == []  # the results folder it made is removed again


def test_a_read_only_folder_names_the_target(cli, tmp_path: Path, monkeypatch) -> None:
    """The folder exists and refuses new files, as a read-only folder does for a user who is not root: the
    kernel's EACCES is injected where the file would be created, so the test runs as root too (CI)."""
    folder = tmp_path / "ro"
    folder.mkdir()
    real_mkstemp = tempfile.mkstemp

    def read_only(*, prefix: str, suffix: str, dir: Path) -> tuple[int, str]:
        if Path(dir) == folder:
            raise PermissionError(errno.EACCES, "Permission denied", os.path.join(dir, f"{prefix}abc{suffix}"))
        return real_mkstemp(prefix=prefix, suffix=suffix, dir=dir)

    monkeypatch.setattr(tempfile, "mkstemp", read_only)
    result = cli("synth", "chain", "-o", folder / "m.tflite")
    assert assert_one_line_error(result) == f"heliabuild: error: {folder / 'm.tflite'}: cannot write: Permission denied"
    assert list(folder.iterdir()) == []


@pytest.mark.parametrize("command", ["vela", "plan-fences"])
def test_a_model_without_operators_is_one_clear_error(cli, zero_model: Path, tmp_path: Path, command: str) -> None:
    out = tmp_path / "out"
    argv = [command, zero_model, "-o", out] + (["--budget-cycles", "9"] if command == "plan-fences" else [])
    before = snapshot(tmp_path)
    line = assert_one_line_error(cli(*argv))
    assert (
        line
        == f"heliabuild: error: {zero_model}: the model has no operators, so Vela has nothing to compile or estimate"
    )
    assert snapshot(tmp_path) == before


def test_a_missing_ini_section_names_the_ini(cli, model: Path, tmp_path: Path) -> None:
    ini = tmp_path / "my.ini"
    ini.write_text("[System_Config.Mine]\ncore_clock=1e8\n[Memory_Mode.Fast]\nconst_mem_area=Axi1\n", encoding="utf-8")
    before = snapshot(tmp_path)
    for options, missing in (
        (["--system-config", "Other", "--memory-mode", "Fast"], "[System_Config.Other] section for the system config"),
        (["--system-config", "Mine", "--memory-mode", "Slow"], "[Memory_Mode.Slow] section for the memory mode"),
    ):
        result = cli("vela", model, "-o", tmp_path / "out", "--config", ini, *options)
        line = assert_one_line_error(result, f"heliabuild: error: {ini}: no {missing}")
        assert line.endswith("the file defines Mine") or line.endswith("the file defines Fast")
        assert snapshot(tmp_path) == before


def test_an_ini_that_is_not_one_is_named(cli, model: Path, tmp_path: Path) -> None:
    ini = tmp_path / "bad.ini"
    ini.write_bytes(b"no section header\n")
    result = cli("vela", model, "-o", tmp_path / "out", "--config", ini, "--system-config", "A", "--memory-mode", "B")
    assert_one_line_error(result, f"{ini}: not a Vela configuration file")
    assert_not_written(tmp_path / "out")


def test_a_failed_vela_removes_the_folders_it_created(cli, model: Path, tmp_path: Path) -> None:
    before = snapshot(tmp_path)
    # a value Vela's own parser refuses (heliabuild checks --system-config before it creates anything)
    result = cli("vela", model, "-o", tmp_path / "a" / "b" / "out", "--", "--arena-cache-size", "lots")
    assert_one_line_error(result, "Vela failed")
    assert snapshot(tmp_path) == before


def test_an_os_error_says_what_failed_from_the_exception(cli, tmp_path: Path, monkeypatch) -> None:
    """An OSError no verb turned into a HeliaError names its path or paths and the system's reason, and the
    operation only where heliabuild noted it (heliabuild.files.errors_naming notes `write`): an error of a
    read, a move or the terminal is never reported as `cannot write`."""
    import heliabuild.cli.synth as synth

    source, target = tmp_path / "a", tmp_path / "b"
    for error, line in (
        (OSError(errno.EXDEV, "Invalid cross-device link", str(source), None, str(target)), f"{source} -> {target}"),
        (IsADirectoryError(errno.EISDIR, "Is a directory", str(source)), f"{source}"),
        (BrokenPipeError(errno.EPIPE, "Broken pipe"), None),
    ):

        def fail(args: object, error: OSError = error) -> int:
            raise error

        monkeypatch.setattr(synth, "run_command", fail)
        found = assert_one_line_error(cli("synth", "chain", "-o", target))
        reason = error.strerror
        assert found == (f"heliabuild: error: {line}: {reason}" if line else f"heliabuild: error: {reason}")
        assert "cannot write" not in found
