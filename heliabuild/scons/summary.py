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
import sys
from collections.abc import Sequence

import SCons.Node
from SCons.Node import Node

from heliabuild.results.summary import bundle_facts
from heliabuild.scons.runner import verified_result
from heliabuild.tables import text_table

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


def print_summary() -> None:
    """Print summary_table of the registered pipelines whose run stage was built or up to date, if the build
    succeeded (build_succeeded); a Ctrl-C while it reads the bundles prints nothing more."""
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
            sys.stdout.write(summary_table(rows))
        for table, _ in tables:
            sys.stdout.write(sweep_summary(table.get_internal_path()))
        sys.stdout.flush()
    except KeyboardInterrupt:
        return


def sweep_summary(table_json: str) -> str:
    """The text of the sweep table in `table_json` (heliabuild.sweeps.table), then the names of its files."""
    from heliabuild.documents import read_json
    from heliabuild.errors import ResultError
    from heliabuild.sweeps.table import CSV_SUFFIX, HTML_SUFFIX, JSON_SUFFIX, SweepTable

    table = SweepTable.from_json(read_json(table_json, "sweep table", error=ResultError), table_json)
    stem = table_json.removesuffix(JSON_SUFFIX)
    files = ", ".join(f"{stem}{suffix}" for suffix in (CSV_SUFFIX, JSON_SUFFIX, HTML_SUFFIX))
    return f"{table.to_text()}sweep {table.name}: {files}\n"


def summary_row(name: str, result_dir: str, facts: Sequence[str] | None = None) -> list[str]:
    """One row of summary_table: the pipeline, then bundle_facts of its verified bundle (read with
    heliabuild.api, or `facts` when the build's integrity check verified the bundle already:
    runner.verified_result), then the bundle path."""
    if facts is None:
        from heliabuild.api import load_result

        facts = bundle_facts(load_result(result_dir))
    return [name, *facts, result_dir]


def summary_table(rows: Sequence[Sequence[str]]) -> str:
    """The table print_summary prints: a header, a rule, then `rows` (each a summary_row) in columns."""
    header = [
        "pipeline",
        "backend",
        "segments",
        "estimated cycles per segment",
        "Vela SRAM",
        "Vela flash",
        "measured median",
        "verification",
        "inputs",
        "bundle",
    ]
    return "\n".join(text_table(header, rows)) + "\n"
