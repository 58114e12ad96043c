# SPDX-License-Identifier: MIT
"""Ops through the Python package against float64 references computed here
with numpy, on fresh random inputs of many sizes (0, 1, odd, large),
unaligned and non-contiguous views, and float64 inputs."""
import math

import numpy as np
import pytest

SIZES = [0, 1, 7, 1000, 100003]


def assert_close(got, ref, rel, abs_=0.0, scale=None):
    """|got - ref| <= rel * scale + abs_ elementwise (scale: |ref| by default)."""
    scale = np.abs(ref) if scale is None else scale
    err = np.abs(got.astype(np.float64) - ref)
    bad = ~(err <= rel * scale + abs_)
    assert not bad.any(), f"{bad.sum()} of {bad.size} outside: worst error {err.max()}"


@pytest.mark.parametrize("n", SIZES)
def test_binary_exact(ctx, rng, n):
    a = rng.standard_normal(n).astype(np.float32)
    b = rng.standard_normal(n).astype(np.float32)
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    # f32 a + b, a - b, a * b are the float64 results rounded once: exact.
    assert np.array_equal(ctx.add(a, b), (a64 + b64).astype(np.float32))
    assert np.array_equal(ctx.sub(a, b), (a64 - b64).astype(np.float32))
    assert np.array_equal(ctx.mul(a, b), (a64 * b64).astype(np.float32))
    assert np.array_equal(ctx.maximum(a, b), np.maximum(a64, b64).astype(np.float32))


def test_views_and_float64_inputs(ctx, rng):
    base = rng.standard_normal(2001).astype(np.float32)
    x = base[1:]        # 4 bytes past an aligned start
    strided = base[::2]  # not contiguous: copied for the call
    assert np.array_equal(ctx.abs(x), np.abs(x))
    assert np.array_equal(ctx.relu(strided), np.maximum(strided, 0))
    x64 = rng.standard_normal(33)  # float64 in: rounded to float32 first
    assert np.array_equal(ctx.scale(x64, 2.0), (x64.astype(np.float32) * np.float32(2)))


@pytest.mark.parametrize("n", SIZES)
def test_unary(ctx, rng, n):
    x = rng.uniform(-6, 6, n).astype(np.float32)
    x64 = x.astype(np.float64)
    assert_close(ctx.exp(x), np.exp(x64), 2e-6)
    assert_close(ctx.tanh(x), np.tanh(x64), 2e-6, 1e-7)
    gelu = 0.5 * x64 * (1 + np.vectorize(math.erf)(x64 / math.sqrt(2))) if n else x64
    assert_close(ctx.gelu(x), gelu, 2e-6, 1e-7)
    assert_close(ctx.leaky_relu(x, 0.1), np.where(x64 > 0, x64, 0.1 * x64), 1e-7)
    assert_close(ctx.clip(x, -1.0, 2.0), np.clip(x64, -1, 2), 0)


def test_in_place_and_out(ctx, rng):
    x = rng.standard_normal(100).astype(np.float32)
    y = rng.standard_normal(100).astype(np.float32)
    ref = 0.5 * x.astype(np.float64) + y
    assert ctx.axpy(x, y, 0.5) is y
    assert_close(y, ref, 1.2e-7, scale=np.abs(0.5 * x.astype(np.float64)) + np.abs(ref))
    out = np.empty(100, dtype=np.float32)
    assert ctx.sqrt(np.abs(x), out=out) is out
    with pytest.raises(ValueError, match="float32"):
        ctx.sqrt(x, out=np.empty(100))


@pytest.mark.parametrize("n", [1, 7, 1000, 100003])
def test_reductions(ctx, rng, n):
    x = rng.standard_normal(n).astype(np.float32)
    b = rng.standard_normal(n).astype(np.float32)
    x64 = x.astype(np.float64)
    assert abs(ctx.sum(x) - x64.sum()) <= 1e-5 * np.abs(x64).sum()
    assert abs(ctx.dot(x, b) - x64 @ b) <= 1e-5 * np.abs(x64 * b).sum()
    assert ctx.max(x) == x.max() and ctx.argmax(x) == int(np.argmax(x))
    assert abs(ctx.norm_l2(x) - np.sqrt((x64 ** 2).sum())) <= 1e-5 * np.sqrt((x64 ** 2).sum())


@pytest.mark.parametrize("shape", [(1, 1), (3, 17), (64, 1000)])
def test_rows(ctx, rng, shape):
    x = rng.standard_normal(shape).astype(np.float32)
    x64 = x.astype(np.float64)
    e = np.exp(x64 - x64.max(axis=1, keepdims=True))
    assert_close(ctx.softmax(x), e / e.sum(axis=1, keepdims=True), 4e-6, 1e-9)
    g = rng.standard_normal(shape[1]).astype(np.float32)
    bta = rng.standard_normal(shape[1]).astype(np.float32)
    mean, var = x64.mean(axis=1, keepdims=True), x64.var(axis=1, keepdims=True)
    ref = (x64 - mean) / np.sqrt(var + 1e-5) * g + bta
    assert_close(ctx.layernorm(x, g, bta, eps=1e-5), ref, 4e-6, 4e-6)


def matmul_ref(a, b):
    """float64 product and its SUM scale (|a| |b|), the contract's scale."""
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    return a64 @ b64, np.abs(a64) @ np.abs(b64)


@pytest.mark.parametrize("m,n,k", [(1, 1, 1), (5, 3, 7), (33, 65, 129), (0, 4, 4)])
def test_matmul_f32(ctx, rng, m, n, k):
    a = rng.standard_normal((m, k)).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float32)
    ref, scale = matmul_ref(a, b)
    assert_close(ctx.matmul(a, b), ref, 1e-5, scale=scale)
    assert_close(ctx.matmul(a.T.copy(), b, trans_a=True), ref, 1e-5, scale=scale)
    assert_close(ctx.matmul(a, b.T.copy(), trans_b=True), ref, 1e-5, scale=scale)
    c = rng.standard_normal((m, n)).astype(np.float32)
    ref2 = 2 * ref + 0.5 * c
    got = ctx.matmul(a, b, C=c, alpha=2.0, beta=0.5)
    assert got is c
    assert_close(got, ref2, 1e-5, scale=2 * scale + np.abs(0.5 * c))


def test_matmul_f16(ctx, rng):
    a = rng.standard_normal((9, 40)).astype(np.float16)
    b = rng.standard_normal((40, 11)).astype(np.float16)
    ref, scale = matmul_ref(a, b)  # judged on the stored half values
    assert_close(ctx.matmul(a, b), ref, 1e-5, scale=scale)


def test_gemv(ctx, rng):
    a = rng.standard_normal((37, 53)).astype(np.float32)
    x = rng.standard_normal(53).astype(np.float32)
    ref, scale = matmul_ref(a, x)
    assert_close(ctx.gemv(a, x), ref, 1e-5, scale=scale)
    xt = rng.standard_normal(37).astype(np.float32)
    ref_t, scale_t = matmul_ref(a.T, xt)
    assert_close(ctx.gemv(a, xt, trans_a=True), ref_t, 1e-5, scale=scale_t)


def test_transpose_bias_act_glu(ctx, rng):
    x = rng.standard_normal((7, 13)).astype(np.float32)
    assert np.array_equal(ctx.transpose(x), x.T)
    bias = rng.standard_normal(13).astype(np.float32)
    ref = np.maximum(x.astype(np.float64) + bias, 0)
    assert_close(ctx.bias_act(x, bias, act="relu"), ref, 2e-6, 1e-7)
    up = rng.standard_normal((7, 13)).astype(np.float32)
    g64 = x.astype(np.float64)
    assert_close(ctx.swiglu(x, up), g64 / (1 + np.exp(-g64)) * up, 2e-6, 1e-7)


def test_rope(ctx, rng):
    n_tokens, heads, dim = 3, 2, 8
    x = rng.standard_normal((n_tokens, heads, dim)).astype(np.float32)
    pos = np.array([0, 5, 100], dtype=np.int32)
    ref = x.astype(np.float64).copy()
    for t in range(n_tokens):  # NORM pairs (2i, 2i + 1), theta = pos * 10000^(-2i / dim)
        for i in range(dim // 2):
            th = pos[t] * 10000.0 ** (-2 * i / dim)
            x0, x1 = x[t, :, 2 * i].astype(np.float64), x[t, :, 2 * i + 1].astype(np.float64)
            ref[t, :, 2 * i] = x0 * math.cos(th) - x1 * math.sin(th)
            ref[t, :, 2 * i + 1] = x0 * math.sin(th) + x1 * math.cos(th)
    assert_close(ctx.rope(x, pos, n_heads=heads), ref, 4e-6, 4e-6 * np.abs(x).max() + 4e-6)


@pytest.mark.parametrize("kv_dtype", [np.float32, np.float16])
def test_attention(ctx, rng, kv_dtype):
    n_q, n_kv, heads, kv_heads, dim = 2, 5, 4, 2, 8
    q = rng.standard_normal((n_q, heads, dim)).astype(np.float32)
    k = rng.standard_normal((n_kv, kv_heads, dim)).astype(kv_dtype)
    v = rng.standard_normal((n_kv, kv_heads, dim)).astype(kv_dtype)
    ref = np.empty(q.shape)
    for h in range(heads):
        kh = h // (heads // kv_heads)
        s = q[:, h].astype(np.float64) @ k[:, kh].astype(np.float64).T / math.sqrt(dim)
        for i in range(n_q):  # causal: query i sits at n_kv - n_q + i
            s[i, n_kv - n_q + i + 1:] = -np.inf
        p = np.exp(s - s.max(axis=1, keepdims=True))
        ref[:, h] = (p / p.sum(axis=1, keepdims=True)) @ v[:, kh].astype(np.float64)
    got = ctx.attention(q, k, v, causal=True)
    assert_close(got, ref, 1e-5, 1e-6, scale=np.abs(v.astype(np.float64)).max())


def test_concurrent_calls(ctx, rng):
    """Calls from several threads at once (ctypes releases the GIL in each)."""
    import threading
    a = rng.standard_normal((64, 64)).astype(np.float32)
    ref, scale = matmul_ref(a, a)
    results = [None] * 4

    def work(i):
        results[i] = ctx.matmul(a, a)
    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for r in results:
        assert_close(r, ref, 1e-5, scale=scale)
