/* SPDX-License-Identifier: MIT */
/* infer-prompt.c - the kernels of module "infer" behind the half-precision
 * path of a relaxed matmul with an f32 A and a quantized or half B (an LLM
 * prompt's products, plugins/cuda/cuda-typed-matmul.c):
 *
 *   half_rows_<dtype>  each row of a table (rows of a multiple of 8 values) (f32 activations, or the weight's
 *                      blocks) to f16, times a power of two per row chosen
 *                      so the row's largest value lands near 2^14: no f16
 *                      overflow, and small rows keep f16's full precision.
 *                      The row's inverse scale goes to p_s.  A block a
 *                      row; f32 rows of up to 12288 values are held in
 *                      registers between their bound and their values (one
 *                      wait on memory, not one per batch of values).
 *   half_scale_c       C = alpha sa[i] sb[j] T + beta C: the tensor-core
 *                      product T of the scaled rows, scaled back (the powers
 *                      of two are exact), then alpha and beta as BLAS does.
 *   half_scale_c_parts the same with T the sum of p_parts partial products
 *                      m n apart (the split-k wgmma kernels' slices of k),
 *                      summed in float64.
 *
 * The weight's scale comes from a bound read from the block headers alone
 * (|d| times the largest code), so the first pass reads a few bytes per
 * block; activations and half weights take their exact maximum. */
#include "gen-ptx.h"
#include "../plugins/cuda/cuda-ptx.h"
#include "../core/rayo-dtype.h"

#define HP_THREADS RED_THREADS
#define HP_CHUNK 8 /* values per thread and step: one 16-byte store of f16 */
/* the scaled row's maximum lands in [2^14, 2^15): 2^(141 - e) for a
 * maximum of biased exponent e, at most 2^126 so the inverse stays normal */
#define HP_TARGET_BIAS 268
#define HP_MAX_SCALE_BIAS 253

/* The f16 at blk + off, as f32. */
static int f16_load(kern *k, int blk, int off)
{
    int h = nr(k), f = nf(k);
    emit(k, "ld.global.nc.u16 %s, [%s+%d];", R(h), D(blk), off);
    emit(k, "{ .reg .b16 t; cvt.u16.u32 t, %s; cvt.f32.f16 %s, t; }", R(h), F(f));
    return f;
}

static int f16_abs(kern *k, int blk, int off)
{
    int f = f16_load(k, blk, off);
    emit(k, "abs.f32 %s, %s;", F(f), F(f));
    return f;
}

/* An upper bound of |value| over the finite values of the block at blk
 * (|value| itself for one-value "blocks"). */
static int block_bound(kern *k, rayo_dtype dt, int blk)
{
    int b = nf(k);
    switch (dt) {
    case RAYO_DTYPE_Q8_0: /* codes in [-128, 127] */
    case RAYO_DTYPE_Q4_0: /* [-8, 7] */
    case RAYO_DTYPE_Q6_K: { /* scales in [-128, 127] times codes in [-32, 31] */
        int d = f16_abs(k, blk, dt == RAYO_DTYPE_Q6_K ? RAYO_Q6_K_D : 0);
        float most = dt == RAYO_DTYPE_Q8_0 ? 128.0f : dt == RAYO_DTYPE_Q4_0 ? 8.0f : 128.0f * 32.0f;
        emit(k, "mul.rn.f32 %s, %s, %s;", F(b), F(d), C(most));
        break;
    }
    case RAYO_DTYPE_Q4_K: { /* |d sc q - dmin m| <= 63 (15 |d| + |dmin|) */
        int d = f16_abs(k, blk, 0), dmin = f16_abs(k, blk, RAYO_Q4_K_DMIN);
        emit(k, "fma.rn.f32 %s, %s, %s, %s;", F(b), F(d), C(15.0f), F(dmin));
        emit(k, "mul.rn.f32 %s, %s, %s;", F(b), F(b), C(63.0f));
        break;
    }
    default: {
        int zero = nr(k);
        emit(k, "mov.u32 %s, 0;", R(zero));
        int v = dequant_value(k, dt, blk, zero);
        emit(k, "abs.f32 %s, %s;", F(b), F(v));
    }
    }
    /* infinities (and NaN, which max drops) stay as they are whatever the
     * scale: the scale follows the finite values */
    int pinf = np(k);
    emit(k, "setp.eq.f32 %s, %s, 0f7f800000;", P(pinf), F(b));
    emit(k, "@%s mov.f32 %s, 0f00000000;", P(pinf), F(b));
    return b;
}

/* The scale for a row whose bound is mx (.f32, >= 0): its bits into
 * scale, the inverse's into inv (1 and 1 for an infinite or NaN bound). */
static void row_scale(kern *k, int mx, int scale, int inv)
{
    int bits = nr(k), e = nr(k), sb = nr(k), ib = nr(k), pbig = np(k);
    emit(k, "mov.b32 %s, %s;", R(bits), F(mx));
    emit(k, "shr.u32 %s, %s, 23;", R(e), R(bits));
    emit(k, "sub.s32 %s, %d, %s;", R(sb), HP_TARGET_BIAS, R(e));
    emit(k, "min.s32 %s, %s, %d;", R(sb), R(sb), HP_MAX_SCALE_BIAS);
    emit(k, "setp.ge.u32 %s, %s, 255;", P(pbig), R(e));
    emit(k, "@%s mov.u32 %s, 127;", P(pbig), R(sb));
    emit(k, "sub.s32 %s, 254, %s;", R(ib), R(sb));
    emit(k, "shl.b32 %s, %s, 23;", R(sb), R(sb));
    emit(k, "shl.b32 %s, %s, 23;", R(ib), R(ib));
    emit(k, "mov.b32 %s, %s;", F(scale), R(sb));
    emit(k, "mov.b32 %s, %s;", F(inv), R(ib));
}

typedef struct hp_rows {
    rayo_dtype dt;
    int y, s, a, n, row_bytes, tid, tid64, lane, warp;
} hp_rows;

/* v[0 .. 7] (.f32) to f16 in one 16-byte store at ya + off; the lower
 * half of each pair holds the lower address's value. */
static void hp_store8(kern *k, const int *v, int ya, int off)
{
    int pair[HP_CHUNK / 2];
    for (int u = 0; u < HP_CHUNK / 2; u++) {
        pair[u] = nr(k);
        emit(k, "cvt.rn.f16x2.f32 %s, %s, %s;", R(pair[u]), F(v[2 * u + 1]), F(v[2 * u]));
    }
    emit(k, "st.global.v4.b32 [%s+%d], {%s, %s, %s, %s};", D(ya), off, R(pair[0]), R(pair[1]), R(pair[2]),
         R(pair[3]));
}

/* n 16-bit words from addr + off on into w[0 .. n - 1] (the block formats
 * are 2-byte aligned only). */
static void hp_load16(kern *k, int *w, int n, int addr, int off)
{
    for (int i = 0; i < n; i++) {
        w[i] = nr(k);
        emit(k, "ld.global.nc.u16 %s, [%s+%d];", R(w[i]), D(addr), off + 2 * i);
    }
}

/* Values j .. j + 7 of the row at base (j a multiple of 8), times scale,
 * to f16 at yrow + 2 j in one 16-byte store.  The 8 values lie in one block
 * of the quantized formats (blocks of 32 or 256); one-value "blocks" are
 * 8 blocks apart. */
static void hp_chunk(kern *k, const hp_rows *h, int base, int j, int scale, int yrow)
{
    size_t per = rayo_dtype_block_elems(h->dt), bytes = rayo_dtype_block_bytes(h->dt);
    int blk = nd(k), e0 = nr(k), w[HP_CHUNK];
    if (per >= HP_CHUNK) {
        int b = nd(k), e = nd(k);
        emit(k, "div.u64 %s, %s, %d;", D(b), D(j), (int)per);
        emit(k, "rem.u64 %s, %s, %d;", D(e), D(j), (int)per);
        emit(k, "cvt.u32.u64 %s, %s;", R(e0), D(e));
        emit(k, "mad.lo.u64 %s, %s, %d, %s;", D(blk), D(b), (int)bytes, D(base));
    } else {
        emit(k, "mov.u32 %s, 0;", R(e0));
        emit(k, "mad.lo.u64 %s, %s, %d, %s;", D(blk), D(j), (int)bytes, D(base));
    }
    for (int u = 0; u < HP_CHUNK; u++) {
        int e = e0, at = blk;
        if (per >= HP_CHUNK && u) {
            e = nr(k);
            emit(k, "add.u32 %s, %s, %d;", R(e), R(e0), u);
        } else if (u) {
            at = nd(k);
            emit(k, "add.u64 %s, %s, %d;", D(at), D(blk), u * (int)bytes);
        }
        int v = dequant_value(k, h->dt, at, e);
        w[u] = nf(k);
        emit(k, "mul.rn.f32 %s, %s, %s;", F(w[u]), F(v), F(scale));
    }
    hp_store8(k, w, addr_of(k, yrow, j, 2), 0);
}

/* Half h (0 or 1) of the Q4_0 or Q8_0 block at blk, times scale, to f16
 * in two 16-byte stores into ya, the block's 64 bytes of f16: the scale
 * and the 8 or 16 code bytes loaded once, 16 bits at a time (the blocks
 * are 18 and 34 bytes: 2-byte aligned only).  Q4_0's half h is code bytes
 * 8h .. 8h + 7: values 8h .. 8h + 7 (low nibbles) and 16 more (high);
 * Q8_0's is values 16h .. 16h + 15.  The operations of dequant_value, so
 * the same f16 values. */
static void hp_half_block(kern *k, rayo_dtype dt, int blk, int h, int ya, int scale)
{
    int q4 = dt == RAYO_DTYPE_Q4_0, words = q4 ? 4 : 8, w[8], d = f16_load(k, blk, 0), ca = nd(k), yh = nd(k);
    emit(k, "mad.lo.u64 %s, %s, %d, %s;", D(ca), D(h), 2 * words, D(blk));
    emit(k, "mad.lo.u64 %s, %s, %d, %s;", D(yh), D(h), q4 ? 16 : 32, D(ya));
    hp_load16(k, w, words, ca, 2);
    for (int g = 0; g < 2; g++) {
        int v[HP_CHUNK];
        for (int u = 0; u < HP_CHUNK; u++) {
            int byte = q4 ? u : 8 * g + u, q = nr(k), qf = nf(k), x = nf(k);
            if (q4) {
                emit(k, "bfe.u32 %s, %s, %d, 4;", R(q), R(w[byte / 2]), 8 * (byte % 2) + 4 * g);
                emit(k, "sub.s32 %s, %s, 8;", R(q), R(q));
            } else {
                emit(k, "bfe.s32 %s, %s, %d, 8;", R(q), R(w[byte / 2]), 8 * (byte % 2));
            }
            emit(k, "cvt.rn.f32.s32 %s, %s;", F(qf), R(q));
            emit(k, "mul.rn.f32 %s, %s, %s;", F(x), F(qf), F(d));
            v[u] = nf(k);
            emit(k, "mul.rn.f32 %s, %s, %s;", F(v[u]), F(x), F(scale));
        }
        hp_store8(k, v, yh, g * (q4 ? 32 : 16));
    }
}

/* The Q4_K block's 12 scale bytes at blk + RAYO_Q4_K_SCALES as 3 .b32
 * words s[0 .. 2] (for q4_k_scale_min), read 16 bits at a time. */
static void q4_k_scale_words(kern *k, int blk, int *s)
{
    int h[6];
    hp_load16(k, h, 6, blk, RAYO_Q4_K_SCALES);
    for (int i = 0; i < 3; i++) {
        s[i] = nr(k);
        emit(k, "prmt.b32 %s, %s, %s, 0x5410;", R(s[i]), R(h[2 * i]), R(h[2 * i + 1]));
    }
}

/* A K-quant block's part p (.u64) as hi = p / 4 and lo = 8 (p % 4)
 * (.u32): its group of rows and its first column. */
static void k_part(kern *k, int p, int *hi, int *lo)
{
    int p32 = nr(k);
    *hi = nr(k);
    *lo = nr(k);
    emit(k, "cvt.u32.u64 %s, %s;", R(p32), D(p));
    emit(k, "shr.u32 %s, %s, 2;", R(*hi), R(p32));
    emit(k, "and.b32 %s, %s, 3;", R(*lo), R(p32));
    emit(k, "shl.b32 %s, %s, 3;", R(*lo), R(*lo));
}

/* a + the u32 register x (a u64 register) */
static int plus_u32(kern *k, int a, int x)
{
    int x64 = nd(k), r = nd(k);
    emit(k, "cvt.u64.u32 %s, %s;", D(x64), R(x));
    emit(k, "add.u64 %s, %s, %s;", D(r), D(a), D(x64));
    return r;
}

/* Part p (.u64, 0 .. 15) of the Q4_K block at blk, times scale, to f16 at
 * ya (the block's 512 bytes of f16): code bytes 32 j + i .. i + 7 (j = p /
 * 4, i = 8 (p % 4)) hold values 64 j + i .. i + 7 in their low nibbles
 * (sub-block 2 j) and the 8 values 32 on in their high ones (2 j + 1).
 * The operations of dequant_value, so the same f16 values. */
static void hp_q4_k_part(kern *k, int blk, int p, int ya, int scale)
{
    int d = f16_load(k, blk, 0), dmin = f16_load(k, blk, RAYO_Q4_K_DMIN), j, i, off = nr(k), vi = nr(k), w[4];
    k_part(k, p, &j, &i);
    emit(k, "mad.lo.u32 %s, %s, 32, %s;", R(off), R(j), R(i));
    emit(k, "mad.lo.u32 %s, %s, 32, %s;", R(vi), R(j), R(off));
    emit(k, "shl.b32 %s, %s, 1;", R(vi), R(vi));
    hp_load16(k, w, 4, plus_u32(k, blk, off), RAYO_Q4_K_QS);
    int yp = plus_u32(k, ya, vi), sw[3];
    q4_k_scale_words(k, blk, sw);
    for (int g = 0; g < 2; g++) {
        int scf, mf, ds = nf(k), ms = nf(k), v[HP_CHUNK];
        q4_k_scale_min(k, sw, j, g, &scf, &mf);
        emit(k, "mul.rn.f32 %s, %s, %s;", F(ds), F(d), F(scf));
        emit(k, "mul.rn.f32 %s, %s, %s;", F(ms), F(dmin), F(mf));
        for (int u = 0; u < HP_CHUNK; u++) {
            int q = nr(k), qf = nf(k);
            v[u] = nf(k);
            emit(k, "bfe.u32 %s, %s, %d, 4;", R(q), R(w[u / 2]), 8 * (u % 2) + 4 * g);
            emit(k, "cvt.rn.f32.u32 %s, %s;", F(qf), R(q));
            emit(k, "mul.rn.f32 %s, %s, %s;", F(v[u]), F(ds), F(qf));
            emit(k, "sub.rn.f32 %s, %s, %s;", F(v[u]), F(v[u]), F(ms));
            emit(k, "mul.rn.f32 %s, %s, %s;", F(v[u]), F(v[u]), F(scale));
        }
        hp_store8(k, v, yp, 64 * g);
    }
}

/* Part p (.u64, 0 .. 7) of the Q6_K block at blk, times scale, to f16 at
 * ya: half h = p / 4 (values 128 h on), columns i .. i + 7 (i = 8 (p % 4))
 * of its four 32-value rows r, value 128 h + 32 r + l having the low 4 bits
 * of its code in byte 64 h + 32 (r % 2) + l (nibble r / 2), the high 2 in
 * byte 128 + 32 h + l (bits 2 r), its scale in byte 192 + 8 h + 2 r + i /
 * 16.  The operations of dequant_value, so the same f16 values. */
static void hp_q6_k_part(kern *k, int blk, int p, int ya, int scale)
{
    int d = f16_load(k, blk, RAYO_Q6_K_D), h, i, t = nr(k), lo[8], hi[4];
    k_part(k, p, &h, &i);
    emit(k, "mad.lo.u32 %s, %s, 64, %s;", R(t), R(h), R(i));
    int qa = plus_u32(k, blk, t);
    hp_load16(k, lo, 4, qa, 0);
    hp_load16(k, lo + 4, 4, qa, 32);
    emit(k, "mad.lo.u32 %s, %s, 32, %s;", R(t), R(h), R(i));
    hp_load16(k, hi, 4, plus_u32(k, blk, t), RAYO_Q6_K_QH);
    emit(k, "shr.u32 %s, %s, 4;", R(t), R(i));
    emit(k, "mad.lo.u32 %s, %s, 8, %s;", R(t), R(h), R(t));
    int sa = plus_u32(k, blk, t), vi = nr(k);
    emit(k, "mad.lo.u32 %s, %s, 128, %s;", R(vi), R(h), R(i));
    emit(k, "shl.b32 %s, %s, 1;", R(vi), R(vi));
    int yp = plus_u32(k, ya, vi);
    for (int r = 0; r < 4; r++) {
        int sc = nr(k), scf = nf(k), ds = nf(k), v[HP_CHUNK];
        emit(k, "ld.global.nc.s8 %s, [%s+%d];", R(sc), D(sa), RAYO_Q6_K_SCALES + 2 * r);
        emit(k, "cvt.rn.f32.s32 %s, %s;", F(scf), R(sc));
        emit(k, "mul.rn.f32 %s, %s, %s;", F(ds), F(d), F(scf));
        for (int u = 0; u < HP_CHUNK; u++) {
            int q = nr(k), top = nr(k), qf = nf(k);
            v[u] = nf(k);
            emit(k, "bfe.u32 %s, %s, %d, 4;", R(q), R(lo[4 * (r % 2) + u / 2]), 8 * (u % 2) + 4 * (r / 2));
            emit(k, "bfe.u32 %s, %s, %d, 2;", R(top), R(hi[u / 2]), 8 * (u % 2) + 2 * r);
            emit(k, "bfi.b32 %s, %s, %s, 4, 2;", R(q), R(top), R(q));
            emit(k, "sub.s32 %s, %s, 32;", R(q), R(q));
            emit(k, "cvt.rn.f32.s32 %s, %s;", F(qf), R(q));
            emit(k, "mul.rn.f32 %s, %s, %s;", F(v[u]), F(ds), F(qf));
            emit(k, "mul.rn.f32 %s, %s, %s;", F(v[u]), F(v[u]), F(scale));
        }
        hp_store8(k, v, yp, 64 * r);
    }
}

/* log2 of the threads a block takes in the write pass of the block formats
 * copied in parts (Q4_0 and Q8_0 halves, 16 parts of a Q4_K block, 8 of a
 * Q6_K one), -1 for the others (8 values a thread). */
static int hp_parts_log2(rayo_dtype dt)
{
    switch (dt) {
    case RAYO_DTYPE_Q4_0:
    case RAYO_DTYPE_Q8_0: return 1;
    case RAYO_DTYPE_Q4_K: return 4;
    case RAYO_DTYPE_Q6_K: return 3;
    default: return -1;
    }
}

/* The f16 values of the row at base (nblk blocks) to yrow: a part of a
 * block a thread and step for the block formats (hp_parts_log2: a
 * 4096-value row busies 256 threads), else 8 values. */
static void hp_write(kern *k, const hp_rows *h, int base, int nblk, int scale, int yrow)
{
    int lg = hp_parts_log2(h->dt);
    if (lg >= 0) {
        int units = nd(k), b = nd(k), p = nd(k);
        emit(k, "shl.b64 %s, %s, %d;", D(units), D(nblk), lg);
        ptx_loop lp = ptx_loop_begin(k, h->tid64, units, HP_THREADS);
        emit(k, "shr.u64 %s, %s, %d;", D(b), D(lp.i), lg);
        emit(k, "and.b64 %s, %s, %d;", D(p), D(lp.i), (1 << lg) - 1);
        int blk = addr_of(k, base, b, (int)rayo_dtype_block_bytes(h->dt));
        int ya = addr_of(k, yrow, b, 2 * (int)rayo_dtype_block_elems(h->dt));
        if (h->dt == RAYO_DTYPE_Q4_K)
            hp_q4_k_part(k, blk, p, ya, scale);
        else if (h->dt == RAYO_DTYPE_Q6_K)
            hp_q6_k_part(k, blk, p, ya, scale);
        else
            hp_half_block(k, h->dt, blk, p, ya, scale);
        ptx_loop_end(k, lp, units);
        return;
    }
    int j0 = nd(k);
    emit(k, "shl.b64 %s, %s, 3;", D(j0), D(h->tid64));
    ptx_loop lj = ptx_loop_begin(k, j0, h->n, HP_THREADS * HP_CHUNK);
    hp_chunk(k, h, base, lj.i, scale, yrow);
    ptx_loop_end(k, lj, h->n);
}

#define HP_BOUND_BATCH 4 /* blocks a thread bounds per step, their loads in flight together */

/* This thread's share (.f32) of the bound of the row at base (nblk >= 1
 * blocks): blocks tid, tid + 256, ... taken HP_BOUND_BATCH a step, an index
 * past the row clamped to its last block (a block bounded twice leaves the
 * maximum as it is), so that no load waits on another. */
static int row_bound(kern *k, const hp_rows *h, int base, int nblk)
{
    int mx = nf(k), last = nd(k);
    emit(k, "mov.f32 %s, 0f00000000;", F(mx));
    emit(k, "sub.u64 %s, %s, 1;", D(last), D(nblk));
    ptx_loop lb = ptx_loop_begin(k, h->tid64, nblk, HP_THREADS * HP_BOUND_BATCH);
    for (int j = 0; j < HP_BOUND_BATCH; j++) {
        int at = nd(k);
        emit(k, "add.u64 %s, %s, %d;", D(at), D(lb.i), HP_THREADS * j);
        emit(k, "min.u64 %s, %s, %s;", D(at), D(at), D(last));
        int bound = block_bound(k, h->dt, addr_of(k, base, at, (int)rayo_dtype_block_bytes(h->dt)));
        emit(k, "max.f32 %s, %s, %s;", F(mx), F(mx), F(bound));
    }
    ptx_loop_end(k, lb, nblk);
    return mx;
}

/* Row r's scale from this thread's share mx of its bound: the block's
 * maximum, the scale into *scale, the inverse to p_s[r] (thread 0); returns
 * the address of the row's f16 copy. */
static int hp_row_scale(kern *k, const hp_rows *h, int r, int mx, int *scale)
{
    int total = block_minmax_f32(k, mx, h->lane, h->warp, 1), inv = nf(k), p0 = np(k);
    *scale = nf(k);
    row_scale(k, total, *scale, inv);
    emit(k, "setp.eq.u32 %s, %s, 0;", P(p0), R(h->tid));
    int sa = addr_of(k, h->s, r, 4);
    emit(k, "@%s st.global.f32 [%s], %s;", P(p0), D(sa), F(inv));
    int yrow = nd(k);
    emit(k, "mul.lo.u64 %s, %s, %s;", D(yrow), D(r), D(h->n));
    emit(k, "mad.lo.u64 %s, %s, 2, %s;", D(yrow), D(yrow), D(h->y));
    return yrow;
}

/* One row r of the table: the bound, the inverse scale, the f16 values. */
static void hp_row(kern *k, const hp_rows *h, int r)
{
    int base = nd(k), nblk = nd(k), scale;
    emit(k, "mad.lo.u64 %s, %s, %s, %s;", D(base), D(r), D(h->row_bytes), D(h->a));
    emit(k, "div.u64 %s, %s, %d;", D(nblk), D(h->n), (int)rayo_dtype_block_elems(h->dt));
    int mx = row_bound(k, h, base, nblk);
    int yrow = hp_row_scale(k, h, r, mx, &scale);
    hp_write(k, h, base, nblk, scale, yrow);
}

#define HP_REG_UNITS 6 /* f32 row units (8 values) a thread holds: rows of up to 12288 values */

/* An f32 row r held in registers between its bound and its f16 values (one
 * memory round trip, not a pass per batch of values): unit u of 8 values
 * (two 16-byte loads) for u = tid + 256 j, j < HP_REG_UNITS, an index past
 * the row clamped to its last unit (bounded twice, stored once).  Needs
 * 16-byte aligned rows of at most 256 HP_REG_UNITS units.  The bound and
 * the arithmetic of block_bound and hp_chunk, so the same f16 values. */
static void hp_row_f32_regs(kern *k, const hp_rows *h, int r)
{
    int base = nd(k), units = nd(k), last = nd(k), mx = nf(k), idx[HP_REG_UNITS], v[HP_REG_UNITS][HP_CHUNK];
    emit(k, "mad.lo.u64 %s, %s, %s, %s;", D(base), D(r), D(h->row_bytes), D(h->a));
    emit(k, "shr.u64 %s, %s, 3;", D(units), D(h->n));
    emit(k, "sub.u64 %s, %s, 1;", D(last), D(units));
    emit(k, "mov.f32 %s, 0f00000000;", F(mx));
    for (int j = 0; j < HP_REG_UNITS; j++) {
        idx[j] = nd(k);
        emit(k, "add.u64 %s, %s, %d;", D(idx[j]), D(h->tid64), HP_THREADS * j);
        int at = nd(k), ua = nd(k);
        emit(k, "min.u64 %s, %s, %s;", D(at), D(idx[j]), D(last));
        emit(k, "mad.lo.u64 %s, %s, 32, %s;", D(ua), D(at), D(base));
        for (int e = 0; e < HP_CHUNK; e++)
            v[j][e] = nf(k);
        for (int q = 0; q < 2; q++)
            emit(k, "ld.global.nc.v4.f32 {%s, %s, %s, %s}, [%s+%d];", F(v[j][4 * q]), F(v[j][4 * q + 1]),
                 F(v[j][4 * q + 2]), F(v[j][4 * q + 3]), D(ua), 16 * q);
    }
    for (int j = 0; j < HP_REG_UNITS; j++)
        for (int e = 0; e < HP_CHUNK; e++) {
            int b = nf(k), pinf = np(k);
            emit(k, "abs.f32 %s, %s;", F(b), F(v[j][e]));
            emit(k, "setp.eq.f32 %s, %s, 0f7f800000;", P(pinf), F(b));
            emit(k, "@%s mov.f32 %s, 0f00000000;", P(pinf), F(b));
            emit(k, "max.f32 %s, %s, %s;", F(mx), F(mx), F(b));
        }
    int scale, yrow = hp_row_scale(k, h, r, mx, &scale), l_done = nlabel(k);
    for (int j = 0; j < HP_REG_UNITS; j++) {
        int pout = np(k), w[HP_CHUNK];
        emit(k, "setp.ge.u64 %s, %s, %s;", P(pout), D(idx[j]), D(units));
        emit(k, "@%s bra %s;", P(pout), L(l_done)); /* the later units are past the row too */
        for (int e = 0; e < HP_CHUNK; e++) {
            w[e] = nf(k);
            emit(k, "mul.rn.f32 %s, %s, %s;", F(w[e]), F(v[j][e]), F(scale));
        }
        hp_store8(k, w, addr_of(k, yrow, idx[j], 16), 0);
    }
    label(k, l_done);
}

/* Whether this launch's f32 rows take hp_row_f32_regs (.pred): 16-byte
 * aligned rows of at most 256 HP_REG_UNITS units of 8 values. */
static int hp_f32_regs_fit(kern *k, const hp_rows *h)
{
    int bits = nd(k), p = np(k), pa = np(k);
    emit(k, "or.b64 %s, %s, %s;", D(bits), D(h->a), D(h->row_bytes));
    emit(k, "and.b64 %s, %s, 15;", D(bits), D(bits));
    emit(k, "setp.eq.u64 %s, %s, 0;", P(pa), D(bits));
    emit(k, "setp.le.and.u64 %s, %s, %d, %s;", P(p), D(h->n), HP_THREADS * HP_REG_UNITS * HP_CHUNK, P(pa));
    return p;
}

static void gen_half_rows(strbuf *mod, rayo_dtype dt)
{
    kern kk = {0}, *k = &kk;
    hp_rows h = {.dt = dt};
    h.y = param_global(k, "p_y");
    h.s = param_global(k, "p_s");
    h.a = param_global(k, "p_a");
    int m = param_u64(k, "p_m");
    h.n = param_u64(k, "p_n");
    h.row_bytes = param_u64(k, "p_row_bytes");
    lane_warp(k, &h.tid, &h.lane, &h.warp);
    h.tid64 = nd(k);
    emit(k, "cvt.u64.u32 %s, %s;", D(h.tid64), R(h.tid));
    int r = nd(k), rstep = nd(k), pr = np(k), l_row = nlabel(k), l_end = nlabel(k);
    int ctaid = sreg(k, "%ctaid.x"), nctaid = sreg(k, "%nctaid.x");
    emit(k, "cvt.u64.u32 %s, %s;", D(r), R(ctaid));
    emit(k, "cvt.u64.u32 %s, %s;", D(rstep), R(nctaid));
    emit(k, "setp.ge.u64 %s, %s, %s;", P(pr), D(r), D(m));
    emit(k, "@%s bra %s;", P(pr), L(l_end));
    int pregs = dt == RAYO_DTYPE_F32 ? hp_f32_regs_fit(k, &h) : -1;
    label(k, l_row);
    if (pregs >= 0) {
        int l_general = nlabel(k), l_next = nlabel(k);
        emit(k, "@!%s bra %s;", P(pregs), L(l_general));
        hp_row_f32_regs(k, &h, r);
        emit(k, "bra.uni %s;", L(l_next));
        label(k, l_general);
        hp_row(k, &h, r);
        label(k, l_next);
    } else {
        hp_row(k, &h, r);
    }
    emit(k, "add.u64 %s, %s, %s;", D(r), D(r), D(rstep));
    emit(k, "setp.lt.u64 %s, %s, %s;", P(pr), D(r), D(m));
    emit(k, "@%s bra %s;", P(pr), L(l_row));
    label(k, l_end);
    char name[48];
    snprintf(name, sizeof name, "half_rows_%s", rayo_dtype_name(dt));
    kern_finish(mod, k, name,
                ".param .u64 p_y, .param .u64 p_s, .param .u64 p_a, .param .u64 p_m, .param .u64 p_n, "
                ".param .u64 p_row_bytes",
                ".maxntid 256, 1, 1\n", RED_SHARED);
}

#define SUM_PARTS_BATCH 4

/* w (f64) = the sum of the `parts` (>= 1) values total apart from ta on
 * (f32), added in order; loaded SUM_PARTS_BATCH at a time, so that their
 * latencies overlap. */
static void sum_parts(kern *k, int w, int ta, int total, int parts)
{
    int at = nd(k), step = nd(k), left = nd(k), pl = np(k), l_top = nlabel(k), v[SUM_PARTS_BATCH],
        p[SUM_PARTS_BATCH];
    emit(k, "mov.f64 %s, %s;", FD(w), CD(0.0));
    emit(k, "mov.u64 %s, %s;", D(at), D(ta));
    emit(k, "shl.b64 %s, %s, 2;", D(step), D(total));
    emit(k, "mov.u64 %s, %s;", D(left), D(parts));
    label(k, l_top);
    for (int j = 0; j < SUM_PARTS_BATCH; j++) {
        int a = nd(k);
        v[j] = nf(k);
        p[j] = np(k);
        emit(k, "mad.lo.u64 %s, %s, %d, %s;", D(a), D(step), j, D(at));
        emit(k, "setp.gt.u64 %s, %s, %d;", P(p[j]), D(left), j);
        emit(k, "@%s ld.global.f32 %s, [%s];", P(p[j]), F(v[j]), D(a));
    }
    for (int j = 0; j < SUM_PARTS_BATCH; j++) {
        int x = nfd(k);
        emit(k, "@%s cvt.f64.f32 %s, %s;", P(p[j]), FD(x), F(v[j]));
        emit(k, "@%s add.rn.f64 %s, %s, %s;", P(p[j]), FD(w), FD(w), FD(x));
    }
    emit(k, "mad.lo.u64 %s, %s, %d, %s;", D(at), D(step), SUM_PARTS_BATCH, D(at));
    emit(k, "setp.gt.u64 %s, %s, %d;", P(pl), D(left), SUM_PARTS_BATCH);
    emit(k, "sub.u64 %s, %s, %d;", D(left), D(left), SUM_PARTS_BATCH);
    emit(k, "@%s bra %s;", P(pl), L(l_top));
}

#define HALF_SCALE_C_PARAMS                                                                                 \
    ".param .u64 p_y, .param .u64 p_t, .param .u64 p_sa, .param .u64 p_sb, .param .u64 p_m, .param .u64 p_n, " \
    ".param .u64 p_ldy, .param .f32 p_alpha, .param .f32 p_beta"

typedef struct scale_back_regs {
    int w, zb, alpha, beta, pb; /* T (.f64), sb[j] (.f64), alpha and beta (.f32), beta != 0 (.pred) */
} scale_back_regs;

/* y at ya = alpha sa sb T (+ beta y when g->pb), sa the f32 at saa: in
 * float64, rounded once. */
static void scale_back(kern *k, const scale_back_regs *g, int saa, int ya)
{
    int w = g->w, x = nf(k), v = nf(k), z = nfd(k), xb = nfd(k), bb = nfd(k);
    emit(k, "ld.global.nc.f32 %s, [%s];", F(x), D(saa));
    emit(k, "cvt.f64.f32 %s, %s;", FD(z), F(x));
    emit(k, "mul.rn.f64 %s, %s, %s;", FD(w), FD(w), FD(z));
    emit(k, "mul.rn.f64 %s, %s, %s;", FD(w), FD(w), FD(g->zb));
    emit(k, "cvt.f64.f32 %s, %s;", FD(z), F(g->alpha));
    emit(k, "mul.rn.f64 %s, %s, %s;", FD(w), FD(w), FD(z));
    emit(k, "@%s ld.global.f32 %s, [%s];", P(g->pb), F(x), D(ya));
    emit(k, "@%s cvt.f64.f32 %s, %s;", P(g->pb), FD(xb), F(x));
    emit(k, "@%s cvt.f64.f32 %s, %s;", P(g->pb), FD(bb), F(g->beta));
    emit(k, "@%s fma.rn.f64 %s, %s, %s, %s;", P(g->pb), FD(w), FD(bb), FD(xb), FD(w));
    emit(k, "cvt.rn.f32.f64 %s, %s;", F(v), FD(w));
    emit(k, "st.global.f32 [%s], %s;", D(ya), F(v));
}

/* y[i][j] = alpha sa[i] sb[j] t[i][j] (+ beta y[i][j] when beta != 0): t
 * dense m x n, y ldy apart.  Column j = ctaid.x ntid.x + tid.x (its sb[j]
 * read once), rows ctaid.y, ctaid.y + nctaid.y, ...: no division per
 * element, coalesced rows.  With split (half_scale_c_parts), t[i][j] is the
 * sum of p_parts >= 1 partial products m n apart. */
static void gen_half_scale_c(strbuf *mod, int split)
{
    kern kk = {0}, *k = &kk;
    int y = param_global(k, "p_y"), t = param_global(k, "p_t");
    int sa = param_global(k, "p_sa"), sb = param_global(k, "p_sb");
    int m = param_u64(k, "p_m"), n = param_u64(k, "p_n"), ldy = param_u64(k, "p_ldy");
    scale_back_regs g = {.alpha = param_f32(k, "p_alpha"), .beta = param_f32(k, "p_beta"), .pb = np(k)};
    int parts = split ? param_u64(k, "p_parts") : -1;
    int total = nd(k), c = nd(k), t64 = nd(k), pc = np(k), l_end = nlabel(k);
    emit(k, "mul.lo.u64 %s, %s, %s;", D(total), D(m), D(n));
    emit(k, "setp.neu.f32 %s, %s, 0f00000000;", P(g.pb), F(g.beta)); /* a NaN beta too */
    int cx = sreg(k, "%ctaid.x"), ntid = sreg(k, "%ntid.x"), tid = sreg(k, "%tid.x");
    emit(k, "mul.wide.u32 %s, %s, %s;", D(c), R(cx), R(ntid));
    emit(k, "cvt.u64.u32 %s, %s;", D(t64), R(tid));
    emit(k, "add.u64 %s, %s, %s;", D(c), D(c), D(t64));
    emit(k, "setp.ge.u64 %s, %s, %s;", P(pc), D(c), D(n));
    emit(k, "@%s bra %s;", P(pc), L(l_end));
    int x = nf(k), r = nd(k), rstep = nd(k), pr = np(k), l_top = nlabel(k);
    g.zb = nfd(k);
    emit(k, "ld.global.nc.f32 %s, [%s];", F(x), D(addr_of(k, sb, c, 4)));
    emit(k, "cvt.f64.f32 %s, %s;", FD(g.zb), F(x));
    emit(k, "cvt.u64.u32 %s, %s;", D(r), R(sreg(k, "%ctaid.y")));
    emit(k, "cvt.u64.u32 %s, %s;", D(rstep), R(sreg(k, "%nctaid.y")));
    emit(k, "setp.ge.u64 %s, %s, %s;", P(pr), D(r), D(m));
    emit(k, "@%s bra %s;", P(pr), L(l_end));
    label(k, l_top);
    int i = nd(k), ya = nd(k);
    g.w = nfd(k);
    emit(k, "mad.lo.u64 %s, %s, %s, %s;", D(i), D(r), D(n), D(c));
    emit(k, "mad.lo.u64 %s, %s, %s, %s;", D(ya), D(r), D(ldy), D(c));
    int ta = addr_of(k, t, i, 4);
    if (split) {
        sum_parts(k, g.w, ta, total, parts);
    } else {
        emit(k, "ld.global.f32 %s, [%s];", F(x), D(ta));
        emit(k, "cvt.f64.f32 %s, %s;", FD(g.w), F(x));
    }
    scale_back(k, &g, addr_of(k, sa, r, 4), addr_of(k, y, ya, 4));
    emit(k, "add.u64 %s, %s, %s;", D(r), D(r), D(rstep));
    emit(k, "setp.lt.u64 %s, %s, %s;", P(pr), D(r), D(m));
    emit(k, "@%s bra %s;", P(pr), L(l_top));
    label(k, l_end);
    kern_finish(mod, k, split ? "half_scale_c_parts" : "half_scale_c",
                split ? HALF_SCALE_C_PARAMS ", .param .u64 p_parts" : HALF_SCALE_C_PARAMS, NULL, NULL);
}

void infer_prompt(strbuf *mod)
{
    static const rayo_dtype dts[] = {RAYO_DTYPE_F32, RAYO_DTYPE_F16, RAYO_DTYPE_BF16, RAYO_DTYPE_Q8_0,
                                     RAYO_DTYPE_Q4_0, RAYO_DTYPE_Q4_K, RAYO_DTYPE_Q6_K};
    for (size_t i = 0; i < sizeof dts / sizeof dts[0]; i++)
        gen_half_rows(mod, dts[i]);
    gen_half_scale_c(mod, 0);
    gen_half_scale_c(mod, 1);
}
