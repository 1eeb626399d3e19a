"""The HeliaSweepTable builder: a sweep's comparison table, as JSON, CSV and a self-contained HTML report.

    env.HeliaSweepTable(['kws_sweep/kws_sweep_sweep.json', 'kws_sweep/kws_sweep_sweep.csv',
                         'kws_sweep/kws_sweep_sweep.html'], [points_value, *segments_and_results])

HeliaSweep (heliabuild.scons.sweep) makes the one call of each sweep. Contract (docs/sweeps.md): the targets
are the JSON, CSV and HTML files (TABLE_SUFFIXES); the sources a Value of the sweep's description (its name,
axes and points), then each point's segments.json and result.json; the files are written all or none from
every point's row (heliabuild.sweeps.table, .report), and a HeliaError is one `heliabuild: error:`
line with none of them left. The tool adds this builder to every environment, so it imports nothing of the
sweep itself: a project without sweeps never reads the grid and sharing modules.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from SCons.Action import Action
from SCons.Builder import Builder
from SCons.Environment import Base as Environment
from SCons.Node import Node

from heliabuild.errors import HeliaError
from heliabuild.scons.leftovers import remove_leftovers
from heliabuild.scons.messages import configuration_error, stage_comstr, stage_failed
from heliabuild.scons.signatures import add_stage_dependencies

TABLE_BUILDER_NAME = "HeliaSweepTable"
STAGE = "sweep"
COMSTR = "HELIA_SWEEPCOMSTR"
DEFAULTS: dict[str, object] = {COMSTR: stage_comstr(STAGE)}
# heliabuild.sweeps.table's names, restated so that reading the SConscripts does not import it (a test
# checks they agree).
TABLE_SUFFIXES = ("_sweep.json", "_sweep.csv", "_sweep.html")


def table_emitter(target: list[Node], source: list[Node], env: Environment) -> tuple[list[Node], list[Node]]:
    """Check the call (the JSON, CSV and HTML targets; the points' Value, then segments.json and result.json
    of each point) and add the tool-version dependencies."""
    if len(target) != len(TABLE_SUFFIXES) or len(source) % 2 != 1 or len(source) < 3:
        raise configuration_error(
            TABLE_BUILDER_NAME,
            target,
            "give the JSON, CSV and HTML targets, and the points' Value, then each point's segments.json and "
            "result.json",
        )
    add_stage_dependencies(env, target)
    return target, source


def table_action(target: list[Node], source: list[Node], env: Environment) -> int:
    """Read every point's row and write the table's three files, all or none; EXIT_BAD_INPUT after one
    `heliabuild: error:` line for a HeliaError (a bundle that does not verify, say)."""
    # Imported here, not at module level: reading the SConscripts must not pay for the readers.
    from heliabuild.files import write_all_or_nothing
    from heliabuild.sweeps.grid import Point
    from heliabuild.sweeps.report import sweep_html
    from heliabuild.sweeps.table import SweepTable, read_row

    remove_leftovers(target)
    description = json.loads(source[0].read())
    folder = os.path.dirname(str(target[0])) or os.curdir
    try:
        rows = [
            read_row(
                entry["pipeline"],
                Point.from_json(entry),
                str(segments),
                os.path.dirname(str(result)) or os.curdir,
                folder,
            )
            for entry, segments, result in zip(description["points"], source[1::2], source[2::2], strict=True)
        ]
        table = SweepTable(name=description["sweep"], axes=tuple(description["axes"]), rows=tuple(rows))
        files = {**table.files(), TABLE_SUFFIXES[2]: sweep_html(table).encode("utf-8")}
        write_all_or_nothing(
            {Path(str(node)): files[suffix] for node, suffix in zip(target, TABLE_SUFFIXES, strict=True)}
        )
    except HeliaError as error:
        return stage_failed(error, target)
    return 0


def table_builder() -> Builder:
    """A new HeliaSweepTable builder (see the module docstring)."""
    return Builder(action=Action(table_action, cmdstr=f"${COMSTR}"), emitter=table_emitter)
