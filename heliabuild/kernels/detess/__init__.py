"""Detess: MLA-tiled to linear or strided layout conversion (numpy reference and C).

    from heliabuild.kernels.detess import (
        DType, Padding, MlaTiled, Strided, TensorSpec, Request,   # request metadata
        check_inference, Plan, Error, ErrorCode,                 # admission
        execute,                                                 # numpy reference execution
    )

    layout = MlaTiled(axes=(-1, -1, 0, 1), tile_shape=(1, 1, 2, 3))   # logical [W, C]
    plan = check_inference(Request([TensorSpec((2, 3), DType.BF16, layout)], [TensorSpec((2, 3), DType.BF16)]))
    if isinstance(plan, Error): ...
    error = execute(plan, [tiled_bytes], [linear_bytes])              # None on success

The C kernel (`heliabuild/kernels/c/detess.c`) is reached through
`heliabuild.kernels.detess.native`. See docs/detess.md.
"""

from heliabuild.kernels.detess.admission import Plan, check_inference
from heliabuild.kernels.detess.geometry import TileGeometry
from heliabuild.kernels.detess.reference import execute
from heliabuild.kernels.detess.request import (
    AXIS_UNMAPPED,
    MAX_RANK,
    TILE_ALIGNMENT,
    DType,
    MlaTiled,
    Padding,
    Request,
    Strided,
    TensorSpec,
)
from heliabuild.kernels.detess.status import DetessError, Error, ErrorCode, unwrap

__all__ = [
    "AXIS_UNMAPPED",
    "MAX_RANK",
    "TILE_ALIGNMENT",
    "DType",
    "DetessError",
    "Error",
    "ErrorCode",
    "MlaTiled",
    "Padding",
    "Plan",
    "Request",
    "Strided",
    "TensorSpec",
    "TileGeometry",
    "check_inference",
    "execute",
    "unwrap",
]
