"""What a heliabuild target's signature covers besides its sources.

SCons decides what is stale from content signatures (the `content` decider)
of every source, the action's own signature (its code plus the construction
variables in its varlist, which hold the stage's options), and Value nodes
for the version of every tool a stage runs. Upgrading heliabuild or
ai-edge-litert therefore rebuilds every heliabuild target, and a target whose
new output is byte-identical stops the rebuild from going further down.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache
from importlib.metadata import PackageNotFoundError, version

from SCons.Environment import Base as Environment
from SCons.Node import Node

import heliabuild

TOOL_DISTRIBUTIONS: tuple[str, ...] = ("ai-edge-litert",)
"""Distributions, besides heliabuild itself, whose code runs in every heliabuild stage."""


@cache
def tool_versions() -> tuple[tuple[str, str], ...]:
    """`(distribution, version)` of heliabuild and of each of TOOL_DISTRIBUTIONS, in that order.

    A distribution that is not installed has version `not-installed` (the
    stage itself will then fail with the import error that explains it).
    """
    versions = [("heliabuild", heliabuild.__version__)]
    for name in TOOL_DISTRIBUTIONS:
        try:
            versions.append((name, version(name)))
        except PackageNotFoundError:
            versions.append((name, "not-installed"))
    return tuple(versions)


def tool_version_nodes(env: Environment) -> list[Node]:
    """One Value node `<distribution>==<version>` per entry of tool_versions()."""
    return [env.Value(f"{name}=={number}") for name, number in tool_versions()]


def depend_on_tool_versions(env: Environment, targets: Sequence[Node]) -> None:
    """Make `targets` depend on the tool version Value nodes, so a tool upgrade rebuilds them."""
    env.Depends(list(targets), tool_version_nodes(env))
