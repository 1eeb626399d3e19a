"""Rebuilding a heliabuild target whose file is no longer what SCons built.

SCons's `content` decider compares a target's dependencies with what they
were when the target was built, never the target itself: a compiled model
overwritten with another pipeline's, a plan cut short or a garbage sidecar
is reported up to date, and the next stage builds on it. Every heliabuild
target therefore also depends on one Value node, the integrity node, whose
decider (`target_changed`) answers "changed" when the target's own content
signature differs from the one SCons stored for it when it built it (or the
target is missing). SCons then rebuilds the target, so a corrupted
intermediate file is rebuilt by the next `scons`, and `scons --debug=explain`
names the integrity node as what changed.

A target may carry one more check (set_verifier): HeliaRun's `result.json`
verifies the whole result bundle against its manifest, so a tampered file
the builder could not declare (a per-sample output) reruns the run stage too.

The check costs one content signature per target on a no-op build, which
SCons computes anyway for every target a later stage reads; the signature is
memoized for the run and refreshed after a rebuild (SCons clears a target's
node info once it is built), so a rebuilt target is not reported again.
"""

from __future__ import annotations

from collections.abc import Callable

from SCons.Environment import Base as Environment
from SCons.Node import Node, NodeInfoBase

from heliabuild.scons.collector import freeze_the_graph, is_frozen

INTEGRITY_VALUE = "heliabuild: target content as built"
"""The integrity node's value; `scons --debug=explain` names it when a target was corrupted."""

_INTACT = "helia_intact"
"""Attribute of a target's `attributes`: (its node info, target_is_intact's verdict) for the node info."""
_VERIFIER = "helia_verifier"
"""Attribute of a target's `attributes`: a further check of the target (set_verifier)."""

Verifier = Callable[[Node], bool]


def target_is_intact(target: Node) -> bool:
    """Whether `target` exists, its content signature is the one SCons stored when it built it, and its
    verifier (if any) accepts it. A target SCons stored no signature for (never built) counts as intact:
    SCons rebuilds it anyway, for want of build information.

    SCons asks twice per target and run (deciding, then releasing it); the verdict is kept with the target's
    node info, which SCons replaces when it builds the target, so a rebuilt target is checked again."""
    ninfo = target.get_ninfo()
    known = getattr(target.attributes, _INTACT, None)
    if known is not None and known[0] is ninfo:
        return known[1]
    verdict = _is_intact(target)
    setattr(target.attributes, _INTACT, (ninfo, verdict))
    return verdict


def _is_intact(target: Node) -> bool:
    if not target.exists():
        return False
    stored = _stored_csig(target)
    if stored is not None and stored != target.get_csig():
        return False
    verifier: Verifier | None = getattr(target.attributes, _VERIFIER, None)
    return verifier is None or verifier(target)


def _stored_csig(target: Node) -> str | None:
    return getattr(target.get_stored_info().ninfo, "csig", None)


def as_stored(target: Node) -> bool:
    """Whether `target` exists and SCons stored a content signature for it that its bytes still have: they
    are the bytes its builder wrote."""
    stored = _stored_csig(target)
    return stored is not None and target.exists() and stored == target.get_csig()


def target_changed(node: Node, target: Node, prev_ni: NodeInfoBase | None, repo_node: Node | None = None) -> bool:
    """The integrity node's decider: True when the node's value changed (as for any Value node), or when
    `target` is not intact (target_is_intact). Its first call, when SCons starts deciding, freezes the graph
    for the garbage collector (heliabuild.scons.collector.freeze_the_graph)."""
    if not is_frozen():
        freeze_the_graph()
    return node.get_csig() != getattr(prev_ni, "csig", None) or not target_is_intact(target)


def integrity_node(env: Environment) -> Node:
    """The integrity node (one per SCons run: Value nodes are shared by value), its decider set."""
    node = env.Value(INTEGRITY_VALUE)
    node.Decider(target_changed)
    return node


def set_verifier(target: Node, verifier: Verifier) -> None:
    """Give `target` a further check: `verifier(target)` is False when the target must be rebuilt."""
    setattr(target.attributes, _VERIFIER, verifier)
