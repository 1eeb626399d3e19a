"""Detess: MLA-tiled to linear or strided layout conversion (numpy reference and C).

    from heliabuild.kernels.detess import (
        DType, Padding, MlaTiled, Strided, DetessTensorSpec, Request,  # request metadata
        check_inference, Plan, Error, ErrorCode,                       # admission
        execute,                                                       # numpy reference execution
    )

    layout = MlaTiled(axes=(-1, -1, 0, 1), tile_shape=(1, 1, 2, 3))   # logical [W, C]
    request = Request([DetessTensorSpec((2, 3), DType.BF16, layout)], [DetessTensorSpec((2, 3), DType.BF16)])
    plan = check_inference(request)
    if isinstance(plan, Error): ...
    error = execute(plan, [tiled_bytes], [linear_bytes])              # None on success

The C kernel (`heliabuild/kernels/c/detess.c`) is reached through
`heliabuild.kernels.detess.c_kernel`. See docs/detess.md.
"""

from heliabuild.kernels.detess.admission import Plan, check_inference
from heliabuild.kernels.detess.geometry import TileGeometry
from heliabuild.kernels.detess.reference import execute
from heliabuild.kernels.detess.request import (
    AXIS_UNMAPPED,
    MAX_RANK,
    TILE_ALIGNMENT,
    DetessTensorSpec,
    DType,
    MlaTiled,
    Padding,
    Request,
    Strided,
)
from heliabuild.kernels.detess.status import DetessError, Error, ErrorCode, unwrap

__all__ = [
    "AXIS_UNMAPPED",
    "MAX_RANK",
    "TILE_ALIGNMENT",
    "DType",
    "DetessError",
    "DetessTensorSpec",
    "Error",
    "ErrorCode",
    "MlaTiled",
    "Padding",
    "Plan",
    "Request",
    "Strided",
    "TileGeometry",
    "check_inference",
    "execute",
    "unwrap",
]
