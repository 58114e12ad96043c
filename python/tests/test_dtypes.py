# SPDX-License-Identifier: MIT
"""Half and quantized types: conversions against independent references
(numpy's float16 rounding, a bfloat16 rounding written here), Q4_K/Q6_K
round trips within rayo.h's bound, GGUF Q8_0 blocks built here byte by byte
and used as weights (gemv, matmul, get_rows against float64), and errors."""
import ctypes

import numpy as np
import pytest

import rayo
from rayo._lib import lib


def bf16_reference(x):
    """float32 -> bfloat16 bits, round to nearest even, NaN quiet (integer arithmetic)."""
    u = x.astype(np.float32).view(np.uint32).astype(np.uint64)
    rounded = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    nan = np.isnan(x)
    rounded[nan] = ((u[nan] >> 16) | 0x40).astype(np.uint16)
    return rounded


def test_f16_matches_numpy(rng):
    x = (rng.standard_normal(5001) * 2.0 ** rng.uniform(-30, 18, 5001)).astype(np.float32)
    x[:4] = [np.inf, -np.inf, 65519.0, 65520.0]  # 65520 rounds to inf
    h = rayo.quantize(x, "f16")
    assert h.dtype == np.float16
    with np.errstate(over="ignore"):  # numpy warns when 65520 becomes inf, as it must
        want = x.astype(np.float16)
    assert np.array_equal(h.view(np.uint16), want.view(np.uint16))
    assert np.array_equal(rayo.dequantize(h), h.astype(np.float32))


def test_bf16(rng):
    x = rng.standard_normal(3001).astype(np.float32) * np.float32(1e3)
    x[:3] = [np.nan, np.inf, -0.0]
    bits = rayo.to_bf16_bits(x)
    assert np.array_equal(bits, bf16_reference(x))
    back = rayo.from_bf16_bits(bits)
    assert np.array_equal(back.view(np.uint32)[1:], (bits.astype(np.uint32) << 16)[1:])


def test_bf16_arrays(ctx, rng):
    if rayo.bfloat16 is None:
        pytest.skip("ml_dtypes is not installed: bfloat16 arrays travel as uint16 bits")
    x = rng.standard_normal((6, 32)).astype(np.float32)
    b = rayo.quantize(x, "bf16")
    assert b.dtype == rayo.bfloat16
    assert np.array_equal(b.view(np.uint16), bf16_reference(x))
    ref = b.astype(np.float64) @ b.astype(np.float64).T
    got = ctx.matmul(b, b, trans_b=True)
    assert (np.abs(got - ref) <= 1e-5 * (np.abs(b.astype(np.float64)) @ np.abs(b.astype(np.float64)).T)).all()


@pytest.mark.parametrize("dtype,rel", [("q4_k", 0.1), ("q6_k", 0.021)])
@pytest.mark.parametrize("rows", [1, 3])
def test_k_quant_round_trip(rng, dtype, rel, rows):
    x = rng.standard_normal((rows, 512)).astype(np.float32)
    x[0, :256] *= 1e-3  # a block much smaller than its neighbour
    w = rayo.quantize(x, dtype)
    assert w.data.shape == (rows, 2 * rayo.block_size(dtype)[1])
    err = np.abs(w.dequantize().astype(np.float64) - x)
    amax = np.abs(x).reshape(-1, 256).max(axis=1, keepdims=True)
    assert (err.reshape(-1, 256) <= rel * amax + 2.0 ** -19).all()


def q8_0_blocks(rng, rows, cols):
    """GGUF Q8_0 bytes made here (f16 scale, then 32 int8 codes per block),
    and the float64 values they stand for."""
    blocks = cols // 32
    d = rng.uniform(0.001, 0.05, (rows, blocks)).astype(np.float16)
    q = rng.integers(-127, 128, (rows, blocks, 32), dtype=np.int8)
    raw = np.concatenate([d.reshape(rows, blocks, 1).view(np.uint8), q.view(np.uint8)], axis=2)
    values = d.astype(np.float64)[:, :, None] * q
    return raw.reshape(rows, blocks * 34), values.reshape(rows, cols)


def test_gguf_blocks_as_weights(ctx, rng):
    raw, values = q8_0_blocks(rng, 24, 96)
    w = rayo.Quantized(raw, "q8_0", (24, 96))
    assert np.array_equal(w.dequantize(), values.astype(np.float32))
    x = rng.standard_normal(96).astype(np.float32)
    tol = 1e-5 * (np.abs(values) @ np.abs(x))
    assert (np.abs(ctx.gemv(w, x) - values @ x) <= tol).all()
    a = rng.standard_normal((5, 96)).astype(np.float32)
    tol = 1e-5 * (np.abs(a) @ np.abs(values).T)
    assert (np.abs(ctx.matmul(a, w) - a @ values.T) <= tol).all()  # C = A W^T
    idx = np.array([3, 0, 23, 3], dtype=np.int32)
    assert np.array_equal(ctx.get_rows(w, idx), values[idx].astype(np.float32))


def test_convert_through_backends(ctx, rng):
    x = rng.standard_normal((4, 64)).astype(np.float32)
    h = ctx.convert(x, "f16")
    assert np.array_equal(h.view(np.uint16), x.astype(np.float16).view(np.uint16))
    q = ctx.convert(x, "q8_0")
    assert isinstance(q, rayo.Quantized) and q.shape == (4, 64)
    assert np.array_equal(q.data, rayo.quantize(x, "q8_0").data)


def test_errors():
    with pytest.raises(ValueError, match="whole number"):
        rayo.quantize(np.ones(100, dtype=np.float32), "q4_k")
    with pytest.raises(ValueError, match="unknown dtype"):
        rayo.quantize(np.ones(32, dtype=np.float32), "q5_0")
    with pytest.raises(ValueError, match="take"):
        rayo.Quantized(np.zeros(10, dtype=np.uint8), "q8_0", (1, 32))
    with pytest.raises(TypeError, match="not a rayo dtype"):
        rayo.dequantize(np.ones(4, dtype=np.int64))
    with pytest.raises(rayo.RayoError, match="not a float format") as e:
        rayo.dequantize(np.ones(4, dtype=np.int32))
    assert e.value.status == 1 and e.value.status_name


def test_exported_helpers():
    """rayo-dtype.h's helpers are callable as library functions."""
    assert lib.rayo_f32_to_f16(1.0) == 0x3C00 and lib.rayo_f16_to_f32(0xC000) == -2.0
    assert lib.rayo_f32_to_bf16(1.0) == 0x3F80 and lib.rayo_bf16_to_f32(0x4049) == 3.140625
    size = ctypes.c_size_t()
    assert lib.rayo_dtype_row_bytes(10, 512, ctypes.byref(size)) == 1 and size.value == 288
    assert lib.rayo_dtype_row_bytes(10, 100, ctypes.byref(size)) == 0
    assert lib.rayo_dtype_name(11) == b"q6_k" and lib.rayo_dtype_block_bytes(11) == 210
