"""Kernels the pipeline relies on: numpy references (the executable statement of each
contract) and portable C99 implementations for targets.

- `heliabuild.kernels.stream_split`: the ETHOS_U_STREAM_SPLIT identity copy over N
  pairs (Python on numpy arrays / memoryviews, and the C kernel through ctypes)
- `heliabuild.kernels.operators`: reference semantics and admission checks of the AOT
  operator contracts (INT32 comparisons, SELECT_V2, FP DIV, NEG, SQUARED_DIFFERENCE)
- `heliabuild.kernels.detess`: Detess, MLA-tiled to linear/strided layout conversion
- `heliabuild.kernels.native`: building `c/` with SCons (host shared library, Cortex-M55
  static library and code-size report) and loading the host library

See docs/kernels.md.
"""

from heliabuild.kernels.native import Status, build_native, load_host_library
from heliabuild.kernels.stream_split import (
    NativeStreamSplit,
    StreamSplitError,
    StreamSplitPlan,
    TensorBuffer,
    stream_split_copy,
    stream_split_prepare,
)

__all__ = [
    "NativeStreamSplit",
    "Status",
    "StreamSplitError",
    "StreamSplitPlan",
    "TensorBuffer",
    "build_native",
    "load_host_library",
    "stream_split_copy",
    "stream_split_prepare",
]
