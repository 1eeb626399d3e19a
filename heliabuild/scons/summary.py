"""The summary table a build prints: one row per pipeline whose run stage it built or found up to date.

Every HeliaPipeline with a run stage registers itself (register); loading the tool installs one exit hook
per SCons process (install) that prints the table on stdout after SCons's last line, with the pipelines
in the order they were made. Nothing is printed when the build failed or was interrupted (Ctrl-C), ran
with `-n`, `-c` or `-h`, or when no registered run stage was built or found up to date in it (a build of
`<name>-vela`, say). A row is read from the verified bundle with heliabuild.api.

A sweep (heliabuild.scons.sweep) registers its table too (register_sweep): a build that built or found up to
date the table's JSON prints the table after the pipelines' table, which then leaves out the sweep's
pipelines (a build of one point, `scons <sweep>.3`, prints that pipeline's row).
"""

from __future__ import annotations

import atexit
import contextlib
import os
import sys
from collections.abc import Sequence
from pathlib import Path

import SCons.Node
from SCons.Node import Node

from heliabuild.results.summary import (
    BundleFacts,
    SummaryRow,
    bundle_facts,
    holds_summary,
    summary_csv,
    summary_document,
    summary_text,
)
from heliabuild.scons.runner import verified_result

_registered: list[tuple[str, Node]] = []
"""(pipeline name, its result.json node) of every pipeline made in this SCons process, in order."""

_sweeps: list[tuple[Node, frozenset[Node]]] = []
"""(`<name>_sweep.json` node, its pipelines' result.json nodes) of every sweep made in this SCons process."""

_installed: list[bool] = []
"""Holds True once the exit hook is installed."""


def register(name: str, result: Node) -> None:
    """Give the pipeline `name`, whose run stage's first target is `result` (result.json), a row."""
    _registered.append((name, result))


def register_sweep(table_json: Node, results: Sequence[Node]) -> None:
    """Print the sweep table `table_json` (its `<name>_sweep.json`) after a build that built it or found it
    up to date, instead of the rows of the pipelines whose result.json nodes are `results`."""
    _sweeps.append((table_json, frozenset(results)))


def install() -> None:
    """Install print_summary as an exit hook of this process, once however many environments load the tool."""
    if not _installed:
        _installed.append(True)
        atexit.register(print_summary)


def build_succeeded() -> bool:
    """Whether this SCons run built targets (no `-c`, `-n` or `-h`) and ended with no failure and no interrupt."""
    import SCons.Script.Main
    from SCons.Script import GetBuildFailures, GetOption

    if GetOption("clean") or GetOption("no_exec") or GetOption("help"):
        return False
    return not GetBuildFailures() and not SCons.Script.Main.this_build_status


SUMMARY_FILES = ("build/heliabuild-summary.json", "build/heliabuild-summary.csv")
"""Where the summary is also written as data, relative to the build's top folder (the SConstruct's)."""


def print_summary() -> None:
    """Print summary_text of the registered pipelines whose run stage was built or up to date, then each sweep
    table, and write the rows as SUMMARY_FILES (write_summary), if the build succeeded (build_succeeded); a
    Ctrl-C while it reads the bundles prints nothing more. `scons -c` removes SUMMARY_FILES (remove_summary)."""
    from SCons.Script import GetOption

    if GetOption("clean") and not GetOption("no_exec"):
        remove_summary(_top())
    if not build_succeeded():
        return
    finished = (SCons.Node.executed, SCons.Node.up_to_date)
    tables = [(table, results) for table, results in _sweeps if table.get_state() in finished]
    claimed = frozenset().union(*(results for _, results in tables))
    try:
        rows = [
            summary_row(name, result.dir.get_internal_path(), verified_result(result))
            for name, result in _registered
            if result.get_state() in finished and result not in claimed
        ]
        if rows:
            sys.stdout.write(summary_text(rows))
        sweeps = []
        for table, _ in tables:
            text, files = sweep_summary(table.get_internal_path())
            sys.stdout.write(text)
            sweeps.append(files)
        sys.stdout.flush()
        if rows or sweeps:
            write_summary(_top(), rows, sweeps)
    except KeyboardInterrupt:
        return


def _top() -> Path:
    """The build's top folder (`#`, the SConstruct's)."""
    import SCons.Node.FS

    return Path(SCons.Node.FS.get_default_fs().Dir("#").get_abspath())


def write_summary(top: Path, rows: Sequence[SummaryRow], sweeps: Sequence[dict[str, str]]) -> None:
    """Unless a file at SUMMARY_FILES is not a summary (a user's own: then one warning, and nothing written),
    write the summary as JSON (schemas/summary.schema.json; not validated here, so that a no-op build imports
    no validator: tests/test_scons_summary_files.py validates what a build writes) and CSV at SUMMARY_FILES
    under `top`, each atomically, with no time, host name or absolute path in them."""
    from heliabuild.colour import coloured
    from heliabuild.files import json_text, make_folders, write_atomic

    document = summary_document(rows, sweeps)
    json_file, csv_file = (top / name for name in SUMMARY_FILES)
    foreign = [name for name in SUMMARY_FILES if os.path.lexists(top / name) and not holds_summary(top / name)]
    if foreign:
        line = f"heliabuild: warning: {foreign[0]} is not a summary heliabuild wrote: the summary is not written"
        print(coloured(line, sys.stderr), file=sys.stderr, flush=True)
        return
    try:
        make_folders(json_file.parent)
        write_atomic(json_file, json_text(document).encode("utf-8"))
        write_atomic(csv_file, summary_csv(rows).encode("utf-8"))
    except OSError as failure:
        line = f"heliabuild: warning: cannot write the summary {failure.filename}: {failure.strerror}"
        print(coloured(line, sys.stderr), file=sys.stderr, flush=True)


def remove_summary(top: Path) -> None:
    """Remove SUMMARY_FILES under `top` where they hold a summary (a JSON of this schema, a CSV with its header),
    then their folder when that leaves it empty: `scons -c` leaves no file of heliabuild's."""
    json_file, csv_file = (top / name for name in SUMMARY_FILES)
    removed = False
    for path in (json_file, csv_file):
        if holds_summary(path):
            path.unlink()
            removed = True
    if removed:
        with contextlib.suppress(OSError):
            json_file.parent.rmdir()


def sweep_summary(table_json: str) -> tuple[str, dict[str, str]]:
    """The text of the sweep table in `table_json` (heliabuild.sweeps.table), then the names of its files; and
    those files by kind, as the summary's JSON lists them."""
    from heliabuild.documents import read_json
    from heliabuild.errors import ResultError
    from heliabuild.sweeps.table import CSV_SUFFIX, HTML_SUFFIX, JSON_SUFFIX, SweepTable

    table = SweepTable.from_json(read_json(table_json, "sweep table", error=ResultError), table_json)
    stem = table_json.removesuffix(JSON_SUFFIX)
    names = {
        kind: f"{stem}{suffix}" for kind, suffix in (("csv", CSV_SUFFIX), ("json", JSON_SUFFIX), ("html", HTML_SUFFIX))
    }
    text = f"{table.to_text()}sweep {table.name}: {', '.join(names.values())}\n"
    return text, {"sweep": table.name, **names}


def summary_row(name: str, result_dir: str, facts: BundleFacts | None = None) -> SummaryRow:
    """The row of the pipeline `name`: bundle_facts of its verified bundle (read with heliabuild.api, or `facts`
    when the build's integrity check verified the bundle already: runner.verified_result) and its folder."""
    if facts is None:
        from heliabuild.api import load_result

        facts = bundle_facts(load_result(result_dir))
    return SummaryRow(pipeline=name, facts=facts, bundle=result_dir)
