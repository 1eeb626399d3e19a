"""What a heliabuild target's signature covers besides its sources.

SCons decides what is stale from content signatures (the `content` decider)
of every source, the action's own signature (its code plus the construction
variables in its varlist, which hold the stage's options), Value nodes
for the version of every tool a stage runs, and a Value node per option
(option_nodes), so `scons --debug=explain` names the option that changed. Upgrading heliabuild or
ai-edge-litert therefore rebuilds every heliabuild target, upgrading
ethos-u-vela rebuilds the stages that run Vela's code, and a target whose
new output is byte-identical stops the rebuild from going further down.
Every target also depends on the integrity node (heliabuild.scons.integrity):
a target whose file is not what SCons built is rebuilt.

The Vela version is the construction variable `HELIA_VELA_VERSION`, the
recorded tool version, which defaults to the installed ethos-u-vela's; setting
it to anything else (for example in a test, to simulate an upgrade) reruns
every stage that depends on it.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache

from SCons.Environment import Base as Environment
from SCons.Node import Node

import heliabuild
from heliabuild.distributions import NotInstalled, version
from heliabuild.scons.integrity import integrity_node
from heliabuild.scons.leftovers import keep_folder_of
from heliabuild.scons.messages import node_path

VELA_DISTRIBUTION = "ethos-u-vela"
VELA_VERSION = "HELIA_VELA_VERSION"
"""The construction variable that holds the recorded ethos-u-vela version."""

TOOL_DISTRIBUTIONS: tuple[str, ...] = ("ai-edge-litert",)
"""Distributions, besides heliabuild itself, whose code runs in every heliabuild stage."""


@cache
def tool_versions() -> tuple[tuple[str, str], ...]:
    """`(distribution, version)` of heliabuild and of each of TOOL_DISTRIBUTIONS, in that order.

    A distribution that is not installed has version `not-installed` (the
    stage itself will then fail with the import error that explains it).
    """
    versions = [("heliabuild", heliabuild.__version__)]
    versions += [(name, installed_version(name)) for name in TOOL_DISTRIBUTIONS]
    return tuple(versions)


@cache
def installed_version(distribution: str) -> str:
    """The installed version of `distribution`, or `not-installed`."""
    try:
        return version(distribution)
    except NotInstalled:
        return "not-installed"


def tool_version_nodes(env: Environment) -> list[Node]:
    """One Value node `<distribution>==<version>` per entry of tool_versions()."""
    return [env.Value(f"{name}=={number}") for name, number in tool_versions()]


def vela_version_node(env: Environment) -> Node:
    """The Value node `ethos-u-vela==<$HELIA_VELA_VERSION>`."""
    return env.Value(f"{VELA_DISTRIBUTION}=={env.get(VELA_VERSION)}")


def readable(value: object) -> str:
    """`value` as option_nodes shows it: a node by its path (messages.node_path), a list or tuple item by
    item in brackets, anything else by its repr."""
    if isinstance(value, Node):
        return node_path(value)
    if isinstance(value, list | tuple):
        return "[" + ", ".join(readable(item) for item in value) + "]"
    return repr(value)


def option_nodes(env: Environment, options: Sequence[str]) -> list[Node]:
    """One Value node `option <NAME>=<value>` (readable) per construction variable of `options`.

    The variables are in the action's varlist too, which alone would make
    `scons --debug=explain` say only that the build action changed; with
    these nodes it names the option: ``rebuilding `x' because `option
    HELIA_VELA_ACCELERATOR='ethos-u85-256'' is a new dependency``.
    """
    return [env.Value(f"option {name}={readable(env.get(name))}") for name in options]


def add_stage_dependencies(
    env: Environment, targets: Sequence[Node], vela: bool = False, options: Sequence[str] = ()
) -> None:
    """Make `targets` depend on the tool version Value nodes, so a tool upgrade rebuilds them, on the
    integrity node (heliabuild.scons.integrity), so a target that is no longer what SCons built is rebuilt,
    and on option_nodes(env, options), so `--debug=explain` names an option that changed.
    While cleaning, their folders go when they end up empty (heliabuild.scons.leftovers.keep_folder_of).

    With `vela`, for a stage that runs Vela's code, they also depend on
    vela_version_node(env).
    """
    nodes = tool_version_nodes(env)
    if vela:
        nodes.append(vela_version_node(env))
    nodes.append(integrity_node(env))
    nodes += option_nodes(env, options)
    env.Depends(list(targets), nodes)
    keep_folder_of(targets)
