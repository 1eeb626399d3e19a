"""The HeliaSweep pseudo-builder: one HeliaPipeline per point of a grid, and their comparison table.

    env.HeliaSweep('kws_sweep', model, grid={'accelerator': ['ethos-u55-128', 'ethos-u85-256'],
                                             'budget_cycles': [20000, 40000]}, policy='policy.yaml')

Contract (docs/sweeps.md is the full one):

- The grid maps HeliaPipeline keywords or construction variables (or tuples of them, linked axes) to lists
  of values; its points (heliabuild.sweeps.grid.expand) are the pipelines `<name>.<k>`, each in
  `<build_dir>/<point folder>/`, with the common keywords and the point's values.
- Stages whose inputs are identical are built once: each group of stages (CHAIN_STAGES) goes in a folder
  named by the axes it reads (heliabuild.scons.sharing.reads), shared by the points that agree on them.
- One HeliaSweepTable call (heliabuild.scons.sweep_table) writes the table from every point's segments.json
  and bundle; the build prints it instead of the points' summary rows (heliabuild.scons.summary).
- Returns a Sweep. A grid that cannot work is one UserError naming the SConscript line.
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

import SCons.Node.Alias
from SCons.Environment import Base as Environment
from SCons.Errors import UserError
from SCons.Node import Node

from heliabuild.runner.backends import BACKENDS
from heliabuild.scons import fence, fence_plan, pipeline, sharing, summary
from heliabuild.scons.messages import configuration_error, node_path
from heliabuild.scons.sweep_table import TABLE_SUFFIXES
from heliabuild.sweeps.grid import GridError, Point, canonical, expand, groups

METHOD_NAME = "HeliaSweep"
UNFENCED_FOLDER = "unfenced"

CHAIN_STAGES: Mapping[str, tuple[str, ...]] = MappingProxyType(
    {"unfenced": ("vela-unfenced",), "fenced": ("plan-fences", "fence", "vela"), "aot": ("aot-plan", "firmware")}
)
"""The stages each shared folder holds, in build order: a folder is named by the axes its stages and those
of the folders before it read."""

SHARED_FOLDER = "shared"
"""The folder of a chain's stages when no axis changes them: every point shares them."""

AXIS_VARIABLES: Mapping[str, str] = MappingProxyType(
    {**pipeline.KEYWORD_VARIABLES, "budget_cycles": fence_plan.BUDGET_CYCLES, "fences": fence.FENCES}
)
"""The construction variable each keyword axis sets; an upper-case axis is its own variable."""

NOT_AXES = ("name", "model", "build_dir", "unfenced_dir", "stem", "stage_dirs")
"""HeliaPipeline keywords the sweep sets itself: neither axes nor common keywords."""

_CALLED_AT = re.compile(r" \(called at [^()]*\)$")


@dataclass(frozen=True)
class SweepPoint:
    """One point of a sweep: its values and folder (heliabuild.sweeps.grid.Point) and the pipeline that builds it."""

    point: Point
    pipeline: pipeline.Pipeline


@dataclass(frozen=True)
class Sweep:
    """What HeliaSweep returns: its points in grid order, the table's nodes (JSON, CSV, HTML) and its alias."""

    name: str
    points: tuple[SweepPoint, ...]
    table: tuple[Node, ...]
    alias: Node

    def __iter__(self) -> Iterator[SweepPoint]:
        return iter(self.points)

    def __len__(self) -> int:
        return len(self.points)

    @property
    def pipelines(self) -> list[pipeline.Pipeline]:
        return [point.pipeline for point in self.points]


def _json_value(value: Any) -> Any:
    """A grid value as heliabuild.sweeps.grid takes it: a node as its path, lists and mappings item by item."""
    if isinstance(value, Node):
        return node_path(value)
    if isinstance(value, list | tuple):
        return [_json_value(item) for item in value]
    if isinstance(value, Mapping):
        return {key: _json_value(item) for key, item in value.items()}
    return value


def _check_name(name: object) -> None:
    if not isinstance(name, str) or not pipeline.NAME_PATTERN.fullmatch(name):
        raise configuration_error(
            METHOD_NAME, str(name), "a sweep name is letters, digits, '_', '.', '+' and '-' (it names aliases)"
        )
    existing = SCons.Node.Alias.default_ans.lookup(name)
    if existing is not None and existing.sources:
        raise configuration_error(METHOD_NAME, name, f"the alias {name!r} exists already; give each sweep its name")


def _check_axes(name: str, axes: Mapping[str, Sequence[object]], common: Mapping[str, object]) -> None:
    """Refuse an axis or common keyword that is no HeliaPipeline keyword (with a did-you-mean), one the sweep
    sets itself, or an axis that is a common keyword too."""
    pipeline.check_keywords(name, axes, METHOD_NAME, "grid axis")
    pipeline.check_keywords(name, common, METHOD_NAME)
    for keyword in NOT_AXES:
        if keyword in axes or keyword in common:
            raise configuration_error(
                METHOD_NAME, name, f"{keyword} is set by the sweep; it is neither a grid axis nor a keyword"
            )
    twice = sorted(set(axes) & set(common))
    if twice:
        raise configuration_error(
            METHOD_NAME, name, f"{', '.join(twice)} given both as a grid axis and as a keyword of every point"
        )


def _check_choice(name: str, keyword: str, values: Sequence[object], known: Sequence[str], what: str) -> None:
    """A UserError for a string of `values` not in `known`, with the closest of them as a did-you-mean."""
    for value in values:
        if isinstance(value, str) and value not in known:
            close = pipeline.close_matches(value, known, n=2)
            hint = f"; did you mean {' or '.join(close)}?" if close else ""
            raise configuration_error(
                METHOD_NAME, name, f"{keyword} {value!r} is not {what}{hint} (they are {', '.join(known)})"
            )


def _check_values(name: str, axes: Mapping[str, Sequence[object]], common: Mapping[str, object]) -> None:
    """Refuse an accelerator Vela does not know or a backend heliabuild does not have, before any pipeline."""

    def values(keyword: str) -> list[object]:
        return [common[keyword]] if keyword in common else list(axes.get(keyword, ()))

    if values("accelerator"):
        from ethosu.vela.architecture_features import Accelerator  # only Vela's table, not its compiler

        known = Accelerator.member_list()
        _check_choice(name, "accelerator", values("accelerator"), known, "an accelerator Vela knows")
    _check_choice(name, "backend", values("backend"), BACKENDS, "a backend")


def _chain_axes(axes: Mapping[str, Sequence[object]], stages: Sequence[str]) -> list[str]:
    """The axes whose values change one of `stages` (heliabuild.scons.sharing.reads), in grid order. The
    backend is one for the AOT plan when a point runs on qemu-m55, whose plan is of the model itself."""
    on_qemu = pipeline.QEMU_BACKEND in axes.get("backend", ())
    return [
        axis
        for axis in axes
        if any(sharing.reads(stage, AXIS_VARIABLES.get(axis, axis)) for stage in stages)
        or (axis == "backend" and on_qemu and "aot-plan" in stages)
    ]


def _chain_folders(points: Sequence[Point], chain_axes: Sequence[str]) -> list[str]:
    """Each point's folder name for a chain of stages that reads `chain_axes`: named by the point's values on
    them (heliabuild.sweeps.grid, as the points' folders are), or "" when there are none."""
    if not chain_axes:
        return [""] * len(points)
    distinct = {canonical([p.values[a] for a in chain_axes]): [p.values[a] for a in chain_axes] for p in points}
    named = {canonical(list(p.values.values())): p.folder for p in expand({tuple(chain_axes): list(distinct.values())})}
    return [named[canonical([p.values[a] for a in chain_axes])] for p in points]


def _chain_dir(sweep_dir: Node, chain: str, folder: str) -> Node:
    """The folder of a chain's stages: `unfenced/<folder>` for the unfenced compile, else `<folder>`, or
    `unfenced/` and SHARED_FOLDER where no axis changes the chain."""
    if chain == "unfenced":
        return sweep_dir.Dir(UNFENCED_FOLDER).Dir(folder) if folder else sweep_dir.Dir(UNFENCED_FOLDER)
    return sweep_dir.Dir(folder or SHARED_FOLDER)


def _pipeline_error(name: str, point: Point, error: UserError) -> UserError:
    """The pipeline's UserError for one point, as the sweep's, naming the point."""
    problem = _CALLED_AT.sub("", str(error)).removeprefix("heliabuild: ")
    return configuration_error(METHOD_NAME, name, f"point {point.folder}: {problem}")


def helia_sweep(
    env: Environment,
    name: str,
    model: object,
    grid: Mapping[Any, Sequence[object]] | None = None,
    build_dir: object = None,
    **common: object,
) -> Sweep:
    """One HeliaPipeline per point of `grid`, sharing their common stages, and their table; see the module
    docstring. `build_dir` (default: `build/<name>`) is relative to the calling SConscript's folder."""
    _check_name(name)
    try:
        found = groups(grid)
    except GridError as error:
        raise configuration_error(METHOD_NAME, name, error.message) from None
    axes = {axis: [value[k] for value in values] for linked, values in found for k, axis in enumerate(linked)}
    _check_axes(name, axes, common)
    _check_values(name, axes, common)
    try:
        points = expand({key: _json_value(values) for key, values in grid.items()})
        folders: dict[str, list[str]] = {}
        read: list[str] = []
        for chain, stages in CHAIN_STAGES.items():
            read += stages
            folders[chain] = _chain_folders(points, _chain_axes(axes, read))
    except GridError as error:
        raise configuration_error(METHOD_NAME, name, error.message) from None
    sweep_dir = env.Dir(f"{pipeline.DEFAULT_BUILD_FOLDER}/{name}" if build_dir is None else build_dir)
    width = len(str(len(points)))
    made: list[SweepPoint] = []
    combinations = itertools.product(*(values for _, values in found))
    for index, (point, combination) in enumerate(zip(points, combinations, strict=True), 1):
        chain_dirs = {
            chain: _chain_dir(sweep_dir, chain, chain_folders[index - 1]) for chain, chain_folders in folders.items()
        }
        stage_dirs = {stage: chain_dirs[chain] for chain, stages in CHAIN_STAGES.items() for stage in stages}
        values = [item for value in combination for item in value]
        options = {"stem": name, **common, **dict(zip(axes, values, strict=True))}
        pipeline_name = f"{name}.{index:0{width}d}"
        try:
            made_pipeline = pipeline.helia_pipeline(
                env, pipeline_name, model, build_dir=sweep_dir.Dir(point.folder), stage_dirs=stage_dirs, **options
            )
        except UserError as error:
            raise _pipeline_error(name, point, error) from None
        made.append(SweepPoint(point=point, pipeline=made_pipeline))
    table = _table(env, name, sweep_dir, tuple(axes), made)
    alias = env.Alias(name, [*(point.pipeline.alias for point in made), *table])[0]
    summary.register_sweep(table[0], [point.pipeline.result for point in made])
    return Sweep(name=name, points=tuple(made), table=tuple(table), alias=alias)


def _table(env: Environment, name: str, sweep_dir: Node, axes: tuple[str, ...], made: list[SweepPoint]) -> list[Node]:
    """The HeliaSweepTable call of a sweep: its JSON, CSV and HTML from each point's segments.json and bundle."""
    description = {
        "sweep": name,
        "axes": list(axes),
        "points": [{"pipeline": p.pipeline.name, **p.point.to_json()} for p in made],
    }
    sources: list[Node] = [env.Value(json.dumps(description, sort_keys=True))]
    for point in made:
        sources += [point.pipeline["vela"][3], point.pipeline.result]
    targets = [sweep_dir.File(f"{name}{suffix}") for suffix in TABLE_SUFFIXES]
    return env.HeliaSweepTable(targets, sources)
