# SPDX-License-Identifier: MIT
"""The ops of rayo's op list as Python functions over numpy arrays.

One function per signature class of rayo-ops.h; Context gets one method per
op of the library's own list (rayo_op_at), so a new op of an existing class
needs no change here.  Every call goes through rayo_run (the GIL is released
while it runs).
"""
import ctypes
import math

import numpy as np

from . import _lib
from ._lib import check, lib
from .dtypes import Quantized, dtype_id, numpy_dtype_name, row_bytes

F32, I32 = 0, 3


def dtypes_word(a=F32, b=F32, c=F32, y=F32):
    """RAYO_DTYPES(a, b, c, y) of rayo.h."""
    return a | b << 8 | c << 16 | y << 24


def f32_in(x):
    """An input operand as contiguous float32 (a copy only when needed)."""
    return np.ascontiguousarray(x, dtype=np.float32)


def f32_out(out, shape):
    """The output array: out checked (float32, C-contiguous, writeable, shape), or a new one."""
    if out is None:
        return np.empty(shape, dtype=np.float32)
    if out.dtype != np.float32 or not out.flags.c_contiguous or not out.flags.writeable:
        raise ValueError("rayo: out must be a writeable, C-contiguous float32 array")
    if out.shape != tuple(shape):
        raise ValueError(f"rayo: out has shape {out.shape}, the result {tuple(shape)}")
    return out


def typed_in(x):
    """A matrix operand of any rayo dtype: (pointer owner, dtype id, rows, cols)."""
    if isinstance(x, Quantized):
        return x.data, dtype_id(x.dtype), x.shape[0], x.shape[1]
    x = np.asarray(x)
    if x.dtype not in (np.float16, np.float32) and x.dtype.name != "bfloat16":
        x = x.astype(np.float32)
    x = np.ascontiguousarray(x)
    if x.ndim != 2:
        raise ValueError(f"rayo: a matrix operand must be 2-D, not {x.ndim}-D")
    return x, dtype_id(numpy_dtype_name(x)), x.shape[0], x.shape[1]


def ptr(x):
    return None if x is None else x.ctypes.data


def run(ctx, op, *, a=None, b=None, c=None, y=None, params=None, **fields):
    """One rayo_run: a, b, c, y are numpy arrays (or None), params a ctypes struct."""
    call = _lib.Call(struct_size=ctypes.sizeof(_lib.Call), op=op,
                     a=ptr(a), b=ptr(b), c=ptr(c), y=ptr(y),
                     params=ctypes.addressof(params) if params is not None else None, **fields)
    check(lib.rayo_run(ctx.handle, ctypes.byref(call)))


def same_size(*arrays):
    sizes = {x.size for x in arrays}
    if len(sizes) != 1:
        raise ValueError(f"rayo: operands of different sizes {sorted(sizes)}")
    return sizes.pop()


# ---- one function per signature class ---------------------------------------
def binary(ctx, op, a, b, out=None):
    a, b = f32_in(a), f32_in(b)
    y = f32_out(out, a.shape)
    run(ctx, op, a=a, b=b, y=y, n=same_size(a, b, y))
    return y


def unary(ctx, op, x, out=None):
    x = f32_in(x)
    y = f32_out(out, x.shape)
    run(ctx, op, a=x, y=y, n=x.size)
    return y


def unary_p(ctx, op, x, alpha, out=None):
    x = f32_in(x)
    y = f32_out(out, x.shape)
    run(ctx, op, a=x, y=y, n=x.size, alpha=alpha)
    return y


def unary_p2(ctx, op, x, lo, hi, out=None):
    x = f32_in(x)
    y = f32_out(out, x.shape)
    run(ctx, op, a=x, y=y, n=x.size, alpha=lo, beta=hi)
    return y


def axpy(ctx, op, x, y, alpha):
    """y = alpha * x + y, in place: y must be a writeable float32 array."""
    x, y = f32_in(x), f32_out(y, np.shape(y))
    run(ctx, op, a=x, y=y, n=same_size(x, y), alpha=alpha)
    return y


def reduce(ctx, op, x):
    x, r = f32_in(x), np.zeros(1, dtype=np.float32)
    run(ctx, op, a=x, y=r, n=x.size)
    return float(r[0])


def reduce2(ctx, op, a, b):
    a, b, r = f32_in(a), f32_in(b), np.zeros(1, dtype=np.float32)
    run(ctx, op, a=a, b=b, y=r, n=same_size(a, b))
    return float(r[0])


def argreduce(ctx, op, x):
    x, r = f32_in(x), np.zeros(1, dtype=np.uintp)
    run(ctx, op, a=x, y=r, n=x.size)
    return int(r[0])


def rows_of(x):
    """(m, n) of an array taken as rows: its last axis is a row."""
    n = x.shape[-1] if x.ndim else 1
    return (x.size // n if n else 0), n


def rows(ctx, op, x, out=None):
    x = f32_in(x)
    y = f32_out(out, x.shape)
    m, n = rows_of(x)
    run(ctx, op, a=x, y=y, m=m, n=n)
    return y


def norm(ctx, op, x, gamma=None, beta=None, eps=1e-5, out=None):
    x = f32_in(x)
    y = f32_out(out, x.shape)
    m, n = rows_of(x)
    g, b = (None if v is None else f32_in(v) for v in (gamma, beta))
    for v in (g, b):
        if v is not None and v.size != n:
            raise ValueError(f"rayo: gamma and beta take one value per column ({n})")
    run(ctx, op, a=x, b=g, c=b, y=y, m=m, n=n, alpha=eps)
    return y


def matmul(ctx, op, A, B, C=None, alpha=1.0, beta=0.0, trans_a=False, trans_b=None,
           precision=None):
    """C = alpha op(A) op(B) + beta C.  A: float32/float16/bfloat16; B also a
    Quantized weight (n x k, as GGUF stores it: trans_b defaults to True)."""
    if trans_b is None:
        trans_b = isinstance(B, Quantized)
    a, adt, ar, ac = typed_in(A)
    b, bdt, br, bc = typed_in(B)
    m, k = (ac, ar) if trans_a else (ar, ac)
    kb, n = (bc, br) if trans_b else (br, bc)
    if k != kb:
        raise ValueError(f"rayo: matmul of {m}x{k} by {kb}x{n}")
    if C is None and beta != 0:
        raise ValueError("rayo: beta != 0 needs C")
    y = f32_out(C, (m, n))
    flags = (_lib.TRANS_A if trans_a else 0) | (_lib.TRANS_B if trans_b else 0)
    run(ctx, op, a=a, b=b, y=y, m=m, n=n, k=k, alpha=alpha, beta=beta, flags=flags,
        dtypes=dtypes_word(adt, bdt), precision=_lib.PRECISIONS[precision])
    return y


def gemv(ctx, op, A, x, y=None, alpha=1.0, beta=0.0, trans_a=False, precision=None):
    """y = alpha op(A) x + beta y; A (m x n) of any dtype, a Quantized weight included."""
    a, adt, m, n = typed_in(A)
    x = f32_in(x)
    if x.size != (m if trans_a else n):
        raise ValueError(f"rayo: gemv of a {m}x{n} matrix with a vector of {x.size}")
    if y is None and beta != 0:
        raise ValueError("rayo: beta != 0 needs y")
    out = f32_out(y, (n if trans_a else m,))
    run(ctx, op, a=a, b=x, y=out, m=m, n=n, alpha=alpha, beta=beta,
        flags=_lib.TRANS_A if trans_a else 0, dtypes=dtypes_word(adt),
        precision=_lib.PRECISIONS[precision])
    return out


def transpose(ctx, op, x, out=None):
    x = f32_in(x)
    if x.ndim != 2:
        raise ValueError("rayo: transpose takes a matrix")
    y = f32_out(out, x.shape[::-1])
    run(ctx, op, a=x, y=y, m=x.shape[0], n=x.shape[1])
    return y


def bias_act(ctx, op, x, bias, act="none", out=None):
    x, bias = f32_in(x), f32_in(bias)
    y = f32_out(out, x.shape)
    m, n = rows_of(x)
    if bias.size != n:
        raise ValueError(f"rayo: bias takes one value per column ({n})")
    run(ctx, op, a=x, b=bias, y=y, m=m, n=n, flags=_lib.ACTIVATIONS[act])
    return y


def convert(ctx, op, x, dtype):
    """x (an array of any rayo dtype, or Quantized) as dtype, through the backends."""
    src = x.data if isinstance(x, Quantized) else np.ascontiguousarray(x)
    xdt = dtype_id(x.dtype if isinstance(x, Quantized) else numpy_dtype_name(src))
    shape = x.shape
    n = math.prod(shape)
    ydt = dtype_id(dtype)
    y = np.empty(row_bytes(dtype, n), dtype=np.uint8)
    run(ctx, op, a=src, y=y, n=n, dtypes=dtypes_word(xdt, y=ydt))
    if dtype == "f32":
        return y.view(np.float32).reshape(shape)
    if dtype in ("f16", "bf16"):
        from .dtypes import bfloat16
        view = np.float16 if dtype == "f16" else (bfloat16 or np.uint16)
        return y.view(view).reshape(shape)
    rows, cols = (1, n) if len(shape) < 2 else (n // shape[-1], shape[-1])
    return Quantized(y, dtype, (rows, cols))


def get_rows(ctx, op, table, idx, out=None):
    t, tdt, trows, cols = typed_in(table)
    idx = np.ascontiguousarray(idx, dtype=np.int32)
    y = f32_out(out, (idx.size, cols))
    run(ctx, op, a=t, b=idx, y=y, m=idx.size, n=cols, k=trows, dtypes=dtypes_word(tdt, I32))
    return y


def rope(ctx, op, x, pos, n_heads, mode="norm", rot_dims=0, freq_base=10000.0, freq_scale=1.0,
         out=None):
    """x: (n_tokens, n_heads * head_dim) or (n_tokens, n_heads, head_dim); pos: one per token."""
    x = f32_in(x)
    pos = np.ascontiguousarray(pos, dtype=np.int32)
    n_tokens = pos.size
    head_dim = x.size // max(n_tokens * n_heads, 1)
    if x.size != n_tokens * n_heads * head_dim:
        raise ValueError("rayo: rope: x is not n_tokens x n_heads x head_dim")
    y = f32_out(out, x.shape)
    p = _lib.RopeParams(struct_size=ctypes.sizeof(_lib.RopeParams),
                        mode={"norm": 0, "neox": 1}[mode], rot_dims=rot_dims, freq_base=freq_base,
                        freq_scale=freq_scale, n_heads=n_heads, head_dim=head_dim)
    run(ctx, op, a=x, b=pos, y=y, m=n_tokens, n=head_dim, params=p,
        dtypes=dtypes_word(b=I32))
    return y


def attention(ctx, op, q, k, v, causal=False, scale=None):
    """q: (n_q, n_heads, head_dim) float32; k, v: (n_kv, n_kv_heads, head_dim)
    float32 or float16.  Returns out shaped like q."""
    q = f32_in(q)
    k = np.ascontiguousarray(k if np.asarray(k).dtype == np.float16 else f32_in(k))
    v = np.ascontiguousarray(v, dtype=k.dtype)
    if q.ndim != 3 or k.ndim != 3 or k.shape != v.shape or q.shape[2] != k.shape[2]:
        raise ValueError("rayo: attention takes q (n_q, heads, dim), k and v (n_kv, kv_heads, dim)")
    (n_q, n_heads, dim), (n_kv, n_kv_heads, _) = q.shape, k.shape
    out = np.empty(q.shape, dtype=np.float32)
    p = _lib.AttentionParams(struct_size=ctypes.sizeof(_lib.AttentionParams),
                             flags=_lib.ATTN_CAUSAL if causal else 0,
                             kv_dtype=dtype_id(numpy_dtype_name(k)), n_q=n_q, n_kv=n_kv,
                             n_heads=n_heads, n_kv_heads=n_kv_heads, head_dim=dim,
                             scale=1 / math.sqrt(dim) if scale is None else scale)
    run(ctx, op, a=q, b=k, c=v, y=out, m=n_q, n=dim, k=n_kv, params=p,
        dtypes=dtypes_word(b=p.kv_dtype, c=p.kv_dtype))
    return out


def glu(ctx, op, gate, up, out=None):
    gate, up = f32_in(gate), f32_in(up)
    y = f32_out(out, gate.shape)
    m, n = rows_of(gate)
    same_size(gate, up, y)
    run(ctx, op, a=gate, b=up, y=y, m=m, n=n)
    return y


BY_SIGNATURE = {name: globals()[name] for name in _lib.SIGNATURES}
