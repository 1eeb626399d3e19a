"""The summary table a build prints: one row per pipeline whose run stage it built or found up to date.

Every HeliaPipeline with a run stage registers itself (register); loading the tool installs one exit hook
per SCons process (install) that prints the table on stdout after SCons's last line, with the pipelines
in the order they were made. Nothing is printed when the build failed or was interrupted (Ctrl-C), ran
with `-n`, `-c` or `-h`, or when no registered run stage was built or found up to date in it (a build of
`<name>-vela`, say). A row is read from the verified bundle with heliabuild.api.
"""

from __future__ import annotations

import atexit
import statistics
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

import SCons.Node
from SCons.Node import Node

from heliabuild.scons.runner import verified_result

if TYPE_CHECKING:
    from heliabuild.results.reader import Result

_registered: list[tuple[str, Node]] = []
"""(pipeline name, its result.json node) of every pipeline made in this SCons process, in order."""

_installed: list[bool] = []
"""Holds True once the exit hook is installed."""


def register(name: str, result: Node) -> None:
    """Give the pipeline `name`, whose run stage's first target is `result` (result.json), a row."""
    _registered.append((name, result))


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
    try:
        rows = [
            summary_row(name, result.dir.get_internal_path(), verified_result(result))
            for name, result in _registered
            if result.get_state() in finished
        ]
        if rows:
            sys.stdout.write(summary_table(rows))
            sys.stdout.flush()
    except KeyboardInterrupt:
        return


def summary_row(name: str, result_dir: str, facts: Sequence[str] | None = None) -> list[str]:
    """One row of summary_table: the pipeline, then bundle_facts of its verified bundle (read with
    heliabuild.api, or `facts` when the build's integrity check verified the bundle already:
    runner.verified_result), then the bundle path."""
    from heliabuild.api import load_result

    return [name, *(facts if facts is not None else bundle_facts(load_result(result_dir))), result_dir]


def bundle_facts(result: Result) -> tuple[str, str, str, str]:
    """What a row shows of a verified bundle: its backend, its segments, Vela's estimated cycles per segment
    (an estimate) and the measured figure's median per invoke (instructions on QEMU, host wall time on
    LiteRT, each named by its unit)."""
    from heliabuild.api import measurement_samples

    cycles = [segment["estimated_cycles"] for segment in result.segments]
    samples = measurement_samples(result)
    latencies = [s.latency_s for s in samples if s.latency_s is not None]
    instructions = [s.instructions["total"] for s in samples if s.instructions is not None]
    if instructions:
        measured = f"{statistics.median(instructions):.0f} instructions"
    elif latencies:
        measured = f"{statistics.median(latencies) * 1e6:.1f} us host"
    else:
        measured = "-"
    estimated = "/".join("-" if value is None else str(value) for value in cycles) or "-"
    backend = result.document["run_identity"]["backend"]
    return backend, str(len(cycles)), estimated, measured


def summary_table(rows: Sequence[Sequence[str]]) -> str:
    """The table print_summary prints: a header, a rule, then `rows` (each a summary_row) in columns."""
    header = ["pipeline", "backend", "segments", "estimated cycles per segment", "measured median", "bundle"]
    widths = [max(len(str(cell)) for cell in column) for column in zip(header, *rows, strict=True)]
    lines = ["  ".join(cell.ljust(width) for cell, width in zip(header, widths, strict=True)).rstrip()]
    lines.append("  ".join("-" * width for width in widths))
    lines.extend("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in rows)
    return "\n".join(lines) + "\n"
