"""Planning that uses more than one stage: cost-based fence plans from Vela's estimate (docs/plan-fences.md).

heliabuild.fence sits below heliabuild.vela (Vela compiles fenced models), and planning fences from Vela's
per-layer estimate needs both, so it lives here, above both. Every public name is importable from here; each
loads its module on first use.
"""

from heliabuild.lazy import lazy_exports

_EXPORTS = {
    "DEFAULT_MIN_COVERAGE": "heliabuild.planning.fences",
    "plan_fences": "heliabuild.planning.fences",
}
__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
