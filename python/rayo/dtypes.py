# SPDX-License-Identifier: MIT
"""rayo's element types as numpy sees them, and quantized weights.

float32 and float16 are numpy's own; bfloat16 is ml_dtypes.bfloat16 when
ml_dtypes is installed (else a bf16 array is handled as its uint16 bits).
The GGUF block formats (q8_0, q4_0, q4_k, q6_k) are held as Quantized: a
uint8 array of whole blocks per row, the bytes a GGUF file stores.
"""
import ctypes

import numpy as np

from ._lib import check, lib

try:
    import ml_dtypes
    bfloat16 = np.dtype(ml_dtypes.bfloat16)
except ImportError:  # bf16 then travels as uint16 bits (to_bf16_bits, from_bf16_bits)
    bfloat16 = None

__all__ = ["Quantized", "quantize", "dequantize", "dtype_id", "dtype_name", "block_size",
           "to_bf16_bits", "from_bf16_bits", "bfloat16"]


def dtype_id(name):
    """The rayo dtype number of a name ("f32", "q4_k"), or ValueError."""
    dt = lib.rayo_dtype_by_name(name.encode())
    if dt < 0:
        raise ValueError(f"rayo: unknown dtype {name!r}")
    return dt


def dtype_name(dt):
    """The name of a rayo dtype number."""
    name = lib.rayo_dtype_name(dt)
    if name is None:
        raise ValueError(f"rayo: unknown dtype {dt}")
    return name.decode()


def block_size(name):
    """(elements, bytes) of one block of the dtype: (1, 4) for f32, (256, 144) for q4_k."""
    dt = dtype_id(name)
    return lib.rayo_dtype_block_elems(dt), lib.rayo_dtype_block_bytes(dt)


def row_bytes(name, n):
    """Bytes of a row of n elements; ValueError when n is not whole blocks."""
    out = ctypes.c_size_t()
    if not lib.rayo_dtype_row_bytes(dtype_id(name), n, ctypes.byref(out)):
        raise ValueError(f"rayo: a row of {n} {name} values is not a whole number of "
                         f"{block_size(name)[0]}-value blocks")
    return out.value


def numpy_dtype_name(array):
    """The rayo dtype of a numpy array: f32, f16, bf16 or i32; TypeError otherwise."""
    names = {np.dtype(np.float32): "f32", np.dtype(np.float16): "f16", np.dtype(np.int32): "i32"}
    if bfloat16 is not None:
        names[bfloat16] = "bf16"
    try:
        return names[array.dtype]
    except KeyError:
        raise TypeError(f"rayo: arrays of {array.dtype} are not a rayo dtype "
                        "(float32, float16, bfloat16, int32; Quantized for blocks)") from None


class Quantized:
    """A matrix of GGUF blocks: shape (rows, cols) in values, data a uint8 array
    (rows, row_bytes) - the bytes of a GGUF tensor, used as they are."""

    def __init__(self, data, dtype, shape):
        rows, cols = shape
        data = np.ascontiguousarray(data, dtype=np.uint8)
        need = row_bytes(dtype, cols)
        if data.size != rows * need:
            raise ValueError(f"rayo: {rows} rows of {cols} {dtype} values take {rows * need} bytes, "
                             f"not {data.size}")
        self.data = data.reshape(rows, need)
        self.dtype = dtype
        self.shape = (rows, cols)

    def dequantize(self):
        """The stored values as float32, shape (rows, cols)."""
        out = np.empty(self.shape, dtype=np.float32)
        _convert(lib.rayo_dtype_to_f32, self.dtype, self.data, out, out.size)
        return out

    def __repr__(self):
        return f"rayo.Quantized({self.dtype}, shape={self.shape})"


def _convert(fn, name, src, dst, n):
    check(fn(dtype_id(name), src.ctypes.data, dst.ctypes.data, n))


def quantize(x, dtype):
    """x (float32 values, 1-D or 2-D; rows whole blocks) as dtype: a float16 or
    bfloat16 array (uint16 bits without ml_dtypes), or Quantized for blocks."""
    x = np.ascontiguousarray(x, dtype=np.float32)
    if dtype in ("f16", "bf16"):
        out = np.empty(x.shape, dtype=np.uint16)
        _convert(lib.rayo_dtype_from_f32, dtype, x, out, x.size)
        wanted = np.float16 if dtype == "f16" else bfloat16
        return out.view(wanted) if wanted is not None else out
    if dtype == "f32":
        return x.copy()
    matrix = x.reshape(1, -1) if x.ndim == 1 else x
    if matrix.ndim != 2:
        raise ValueError("rayo: quantize takes a vector or a matrix")
    rows, cols = matrix.shape
    out = np.empty(rows * row_bytes(dtype, cols), dtype=np.uint8)
    _convert(lib.rayo_dtype_from_f32, dtype, matrix, out, matrix.size)
    return Quantized(out, dtype, (rows, cols))


def dequantize(x):
    """float32 values of a Quantized, a float16 or a bfloat16 array."""
    if isinstance(x, Quantized):
        return x.dequantize()
    x = np.ascontiguousarray(x)
    out = np.empty(x.shape, dtype=np.float32)
    _convert(lib.rayo_dtype_to_f32, numpy_dtype_name(x), x, out, x.size)
    return out


def to_bf16_bits(x):
    """float32 values rounded to bfloat16 (nearest even), as uint16 bits."""
    out = quantize(x, "bf16")
    return out.view(np.uint16)


def from_bf16_bits(bits):
    """float32 values of bfloat16 given as uint16 bits."""
    bits = np.ascontiguousarray(bits, dtype=np.uint16)
    out = np.empty(bits.shape, dtype=np.float32)
    _convert(lib.rayo_dtype_to_f32, "bf16", bits, out, bits.size)
    return out
