"""The ETHOS_U_STREAM_SPLIT fence, contract version 1 (the spec's `helia_npu.fencing`).

Every public name is importable from here; each loads its module on first use. Cost-based planning, which
needs Vela's estimate too, is heliabuild.planning.plan_fences.
"""

from heliabuild.lazy import lazy_exports

_EXPORTS = {
    "CONTRACT_VERSION": "heliabuild.fence.contract",
    "CUSTOM_CODE": "heliabuild.fence.contract",
    "Fence": "heliabuild.fence.plan",
    "FenceBindingError": "heliabuild.errors",
    "FenceBoundaries": "heliabuild.fence.sidecar",
    "FenceConfig": "heliabuild.fence.plan",
    "FenceCoverage": "heliabuild.fence.coverage",
    "FenceError": "heliabuild.errors",
    "FencePlan": "heliabuild.fence.plan",
    "FenceVerificationError": "heliabuild.errors",
    "RewriteResult": "heliabuild.fence.rewrite",
    "Segment": "heliabuild.fence.sidecar",
    "TensorPair": "heliabuild.fence.sidecar",
    "UnmatchedRow": "heliabuild.fence.coverage",
    "check_plan_binding": "heliabuild.fence.binding",
    "fence_config_for": "heliabuild.fence.plan",
    "fence_model": "heliabuild.fence.rewrite",
    "load_plan": "heliabuild.fence.plan",
    "load_sidecar": "heliabuild.fence.sidecar",
    "rewrite_model_with_fences": "heliabuild.fence.rewrite",
    "sidecar_path_for": "heliabuild.fence.names",
    "strip_fences": "heliabuild.fence.strip",
    "verify_fenced_model": "heliabuild.fence.verify",
}
__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
