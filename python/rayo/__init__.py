# SPDX-License-Identifier: MIT
"""rayo for Python: numpy arrays in and out of librayo's ops, over ctypes.

    import numpy as np, rayo
    with rayo.Context() as ctx:
        w = rayo.quantize(np.random.rand(64, 256).astype(np.float32), "q4_k")
        y = ctx.gemv(w, np.ones(256, dtype=np.float32))
        print(ctx.softmax(y), ctx.backend_for("gemv", 64 * 256))

The library is found through RAYO_LIBRARY, then the source tree's build/
folder, then the system's library path.  Errors are rayo.RayoError, with the
library's message (rayo_last_error).
"""
from ._lib import RayoError, library_path, lib
from .context import Context, op_list
from .device import Batch, Buffer
from .dtypes import (Quantized, bfloat16, block_size, dequantize, from_bf16_bits, quantize,
                     to_bf16_bits)

__all__ = ["Context", "Buffer", "Batch", "Quantized", "RayoError", "quantize", "dequantize",
           "block_size", "to_bf16_bits", "from_bf16_bits", "bfloat16", "op_list", "version",
           "library_path"]


def version():
    """The library's version string."""
    return lib.rayo_version().decode()
