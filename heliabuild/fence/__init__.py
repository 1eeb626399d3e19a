"""The ETHOS_U_STREAM_SPLIT fence, contract version 1 (the spec's `helia_npu.fencing`)."""

from heliabuild.errors import FenceBindingError, FenceError, FenceVerificationError
from heliabuild.fence.binding import check_plan_binding
from heliabuild.fence.contract import CONTRACT_VERSION, CUSTOM_CODE
from heliabuild.fence.coverage import FenceCoverage, UnmatchedRow
from heliabuild.fence.plan import Fence, FenceConfig, FencePlan, fence_config_for, load_plan
from heliabuild.fence.planning import plan_fences
from heliabuild.fence.rewrite import RewriteResult, fence_model, rewrite_model_with_fences
from heliabuild.fence.sidecar import FenceBoundaries, Segment, TensorPair, load_sidecar, sidecar_path_for
from heliabuild.fence.strip import strip_fences
from heliabuild.fence.verify import verify_fenced_model

__all__ = [
    "CONTRACT_VERSION",
    "CUSTOM_CODE",
    "Fence",
    "FenceBindingError",
    "FenceBoundaries",
    "FenceConfig",
    "FenceCoverage",
    "FenceError",
    "FencePlan",
    "FenceVerificationError",
    "RewriteResult",
    "Segment",
    "TensorPair",
    "UnmatchedRow",
    "check_plan_binding",
    "fence_config_for",
    "fence_model",
    "load_plan",
    "load_sidecar",
    "plan_fences",
    "rewrite_model_with_fences",
    "sidecar_path_for",
    "strip_fences",
    "verify_fenced_model",
]
