/* SPDX-License-Identifier: MIT */
/* infer-gemv.c - module "infer" (its other kernels are in infer-ops.c): gemv with f16, bf16, Q8_0, Q4_0, Q4_K and
 * Q6_K weights (f32 x and y), one kernel per weight format: gemvq_<dtype>.
 *
 * Decode streams every weight once, so the kernel is built to keep memory
 * busy: each warp owns one row at a time and walks it in tiles of 32 "units"
 * (a unit is what one lane decodes: a Q8_0/Q4_0 block, 16 f16/bf16 values, a
 * quarter of a Q4_K block, half a Q6_K block).  A tile is copied from global
 * memory into the warp's shared staging area with 16-byte loads (aligned
 * down: rows of 34-byte Q8_0 blocks start anywhere; the bytes of the tile's
 * first and last 16-byte chunks that lie outside it are not read), then each
 * lane reads its unit from shared memory at any byte alignment (two words and
 * a funnel shift per word).  x is staged in chunks of xchunk floats (12288),
 * padded with 4 floats after every PP floats so that the lanes' 16-byte reads
 * of x hit distinct banks (a lane's unit starts a multiple of PP + 4 floats =
 * 4 mod 32 banks after the previous lane's).  The grid is one wave (the
 * launch sizes it to the SMs) and blocks loop over groups of 16 rows.  When
 * x fits one chunk (n <= xchunk: every LLM shape) it is staged once per
 * block, after the warp's first tile is requested, and each warp then
 * streams its rows as one sequence of tiles, nbuf - 1 in flight while one is
 * decoded, across row ends; longer rows take the chunks block by block.
 *
 * Quantized values become floats without a conversion instruction: a byte
 * permute puts the code into the low byte of 0x4B000000 (2^23 + code,
 * exactly), and one float subtraction removes 2^23 and the format's offset.
 * Sums are float: per unit in four chains, times the unit's scales, into one
 * accumulator per lane, then across the warp - within the op's contract
 * (1e-5 of the sum of |terms|) for rows of any length the conformance suite
 * tries.  Values past n in a partial f16/bf16 unit are zeros in both the
 * staged row and x, so they add nothing. */
#include "gen-ptx.h"
#include "../core/rayo-dtype.h"
#include "../plugins/cuda/cuda-ptx.h"

#include <stdlib.h>

#define ROWS RAYO_PTX_GEMVQ_ROWS         /* warps per block, one row each */
#define THREADS (32 * ROWS)
#define MAX_NBUF 3

typedef struct unit_regs {
    int wb;   /* .b32 shared address: the unit's bytes (its block for K-quants) */
    int sub;  /* .b32 which part of the block the unit is (K-quants), else unused */
    int xa;   /* .b32 shared address of the unit's first x (16-byte aligned) */
    int xsum; /* .b32 shared address of the unit's first sum of 32 x (Q4_K) */
    int acc;  /* .f32 the lane's sum, updated in place */
} unit_regs;

typedef struct qformat {
    const char *name;
    rayo_dtype dtype;
    int block_elems, block_bytes;
    int unit_elems;   /* values of one unit */
    int lane_units;   /* units one lane decodes per tile: tiles of 2-4 KiB keep the memory busy */
    int xchunk;       /* x values staged at once: a multiple of the tile */
    int nbuf;         /* staging buffers per warp (2 or 3): nbuf - 1 tiles in flight while one is decoded */
    void (*decode)(kern *k, const unit_regs *u);
} qformat;

static int tile_elems(const qformat *f) { return 32 * f->lane_units * f->unit_elems; }
static int tile_bytes(const qformat *f) { return tile_elems(f) / f->block_elems * f->block_bytes; }
static int pad_period(const qformat *f) { return f->unit_elems > 32 ? f->unit_elems : 32; }
/* one staging buffer of a warp: a tile, its shift (< 16) and room for the
 * extra word a funnel shift reads; each warp has two (the next tile loads
 * while this one is decoded) */
static int stage_bytes(const qformat *f) { return tile_bytes(f) + 32; }
/* shared memory before x: the staging buffers and the sums of 32 x */
static int xsum_bytes(const qformat *f) { return 4 * f->xchunk / 32; } /* sums of 32 x (Q4_K's mins) */
static int fixed_bytes(const qformat *f) { return f->nbuf * ROWS * stage_bytes(f) + xsum_bytes(f); }

/* ---- small pieces ------------------------------------------------------------ */
/* nw words of the bytes at shared address addr (any alignment) */
static void load_words(kern *k, int addr, int nw, int *out)
{
    int al = nr(k), sh = nr(k), w[40];
    emit(k, "and.b32 %s, %s, -4;", R(al), R(addr));
    emit(k, "and.b32 %s, %s, 3;", R(sh), R(addr));
    emit(k, "shl.b32 %s, %s, 3;", R(sh), R(sh));
    for (int i = 0; i <= nw; i++) {
        w[i] = nr(k);
        emit(k, "ld.shared.b32 %s, [%s+%d];", R(w[i]), R(al), 4 * i);
    }
    for (int i = 0; i < nw; i++) {
        out[i] = nr(k);
        emit(k, "shf.r.wrap.b32 %s, %s, %s, %s;", R(out[i]), R(w[i]), R(w[i + 1]), R(sh));
    }
}

static int reg_plus(kern *k, int base, int off)
{
    int r = nr(k);
    emit(k, "add.u32 %s, %s, %d;", R(r), R(base), off);
    return r;
}

/* the f16 in the low (hi = 0) or high half of w as f32 */
static int half_to_f32(kern *k, int w, int hi)
{
    int f = nf(k);
    emit(k, "{ .reg .b16 lo, hi; mov.b32 {lo, hi}, %s; cvt.f32.f16 %s, %s; }", R(w), F(f), hi ? "hi" : "lo");
    return f;
}

/* four x values at shared address xa + 4*first */
static void load_x4(kern *k, int xa, int first, int *x)
{
    for (int i = 0; i < 4; i++)
        x[i] = nf(k);
    emit(k, "ld.shared.v4.f32 {%s, %s, %s, %s}, [%s+%d];", F(x[0]), F(x[1]), F(x[2]), F(x[3]), R(xa), 4 * first);
}

/* part += code * x for the 4 byte codes of w: (2^23 + byte) - bias */
void codes_dot4(kern *k, int w, float bias, const int *x, int part)
{
    for (int b = 0; b < 4; b++) {
        int v = nf(k);
        emit(k, "prmt.b32 %s, %s, 0x4B000000, 0x%x;", F(v), R(w), 0x7540 + b);
        emit(k, "sub.f32 %s, %s, %s;", F(v), F(v), C(8388608.0f + bias));
        emit(k, "fma.rn.f32 %s, %s, %s, %s;", F(part), F(v), F(x[b]), F(part));
    }
}

static int zero_f(kern *k)
{
    return fmov(k, 0.0f);
}

static void sum_chains(kern *k, int *part, int n)
{
    for (int i = 1; i < n; i++)
        emit(k, "add.f32 %s, %s, %s;", F(part[0]), F(part[0]), F(part[i]));
}

/* ---- decoders: acc += the unit's dot product with x ---------------------------- */
/* The unit's 8 words: two 16-byte loads when it is 16-byte aligned (rows
 * whose bytes are: the usual case), else word by word with funnel shifts. */
static void load_words_8(kern *k, int addr, int *w)
{
    int t = nr(k), pa = np(k), l_slow = nlabel(k), l_done = nlabel(k), slow[8];
    for (int i = 0; i < 8; i++)
        w[i] = nr(k);
    emit(k, "and.b32 %s, %s, 15;", R(t), R(addr));
    emit(k, "setp.ne.u32 %s, %s, 0;", P(pa), R(t));
    emit(k, "@%s bra %s;", P(pa), L(l_slow));
    emit(k, "ld.shared.v4.b32 {%s, %s, %s, %s}, [%s];", R(w[0]), R(w[1]), R(w[2]), R(w[3]), R(addr));
    emit(k, "ld.shared.v4.b32 {%s, %s, %s, %s}, [%s+16];", R(w[4]), R(w[5]), R(w[6]), R(w[7]), R(addr));
    emit(k, "bra.uni %s;", L(l_done));
    label(k, l_slow);
    load_words(k, addr, 8, slow);
    for (int i = 0; i < 8; i++)
        emit(k, "mov.b32 %s, %s;", R(w[i]), R(slow[i]));
    label(k, l_done);
}

static void decode_half(kern *k, const unit_regs *u, int brain)
{
    int w[8], part[4];
    load_words_8(k, u->wb, w);
    for (int c = 0; c < 4; c++)
        part[c] = zero_f(k);
    for (int i = 0; i < 4; i++) { /* words 2i, 2i+1: values 4i..4i+3 */
        int x[4], v[4];
        load_x4(k, u->xa, 4 * i, x);
        for (int j = 0; j < 4; j++) {
            int word = w[2 * i + j / 2];
            if (brain) {
                v[j] = nf(k);
                if (j % 2)
                    emit(k, "and.b32 %s, %s, 0xffff0000;", F(v[j]), R(word));
                else
                    emit(k, "shl.b32 %s, %s, 16;", F(v[j]), R(word));
            } else {
                v[j] = half_to_f32(k, word, j % 2);
            }
            emit(k, "fma.rn.f32 %s, %s, %s, %s;", F(part[j]), F(v[j]), F(x[j]), F(part[j]));
        }
    }
    sum_chains(k, part, 4);
    emit(k, "add.f32 %s, %s, %s;", F(u->acc), F(u->acc), F(part[0]));
}

static void decode_f16(kern *k, const unit_regs *u) { decode_half(k, u, 0); }
static void decode_bf16(kern *k, const unit_regs *u) { decode_half(k, u, 1); }

/* the f16 scale d at the unit's first two bytes (Q8_0, Q4_0) */
static int block_scale(kern *k, int addr)
{
    int w;
    load_words(k, addr, 1, &w);
    return half_to_f32(k, w, 0);
}

static void decode_q8_0(kern *k, const unit_regs *u)
{
    int d = block_scale(k, u->wb), w[8], part[4];
    load_words(k, reg_plus(k, u->wb, 2), 8, w);
    for (int c = 0; c < 4; c++)
        part[c] = zero_f(k);
    for (int i = 0; i < 8; i++) {
        int x[4];
        emit(k, "xor.b32 %s, %s, 0x80808080;", R(w[i]), R(w[i])); /* signed -> 128 + q */
        load_x4(k, u->xa, 4 * i, x);
        codes_dot4(k, w[i], 128.0f, x, part[i % 4]);
    }
    sum_chains(k, part, 4);
    emit(k, "fma.rn.f32 %s, %s, %s, %s;", F(u->acc), F(d), F(part[0]), F(u->acc));
}

/* lo, hi: the low and high nibbles of w, one per byte */
static void nibbles(kern *k, int w, int *lo, int *hi)
{
    *lo = nr(k);
    *hi = nr(k);
    emit(k, "and.b32 %s, %s, 0x0f0f0f0f;", R(*lo), R(w));
    emit(k, "shr.u32 %s, %s, 4;", R(*hi), R(w));
    emit(k, "and.b32 %s, %s, 0x0f0f0f0f;", R(*hi), R(*hi));
}

static void decode_q4_0(kern *k, const unit_regs *u)
{
    int d = block_scale(k, u->wb), w[4], part[4];
    load_words(k, reg_plus(k, u->wb, 2), 4, w);
    for (int c = 0; c < 4; c++)
        part[c] = zero_f(k);
    for (int i = 0; i < 4; i++) { /* byte j: value j (low nibble), j + 16 (high) */
        int lo, hi, xl[4], xh[4];
        nibbles(k, w[i], &lo, &hi);
        load_x4(k, u->xa, 4 * i, xl);
        load_x4(k, u->xa, 16 + 4 * i, xh);
        codes_dot4(k, lo, 8.0f, xl, part[i % 2]);
        codes_dot4(k, hi, 8.0f, xh, part[2 + i % 2]);
    }
    sum_chains(k, part, 4);
    emit(k, "fma.rn.f32 %s, %s, %s, %s;", F(u->acc), F(d), F(part[0]), F(u->acc));
}

/* Q4_K sub-block j = 2 * sub + e (e = 0, 1): its 6-bit scale and min as
 * floats (rayo_q4_k_scale_min), from the 12 scale bytes in s[3]. */
void q4_k_scale_min(kern *k, const int *s, int sub, int e, int *scf, int *mf)
{
    int jj = nr(k), pos = nr(k), b[3], high = np(k);
    emit(k, "shl.b32 %s, %s, 1;", R(jj), R(sub));
    emit(k, "add.u32 %s, %s, %d;", R(jj), R(jj), e);
    emit(k, "setp.ge.u32 %s, %s, 4;", P(high), R(jj));
    emit(k, "and.b32 %s, %s, 3;", R(pos), R(jj));
    emit(k, "shl.b32 %s, %s, 3;", R(pos), R(pos));
    for (int i = 0; i < 3; i++) {
        b[i] = nr(k);
        emit(k, "bfe.u32 %s, %s, %s, 8;", R(b[i]), R(s[i]), R(pos));
    }
    int sc = nr(k), m = nr(k), t = nr(k), t2 = nr(k);
    /* j < 4: sc = s[j] & 63, m = s[j + 4] & 63 */
    emit(k, "and.b32 %s, %s, 63;", R(sc), R(b[0]));
    emit(k, "and.b32 %s, %s, 63;", R(m), R(b[1]));
    /* j >= 4: sc = (s[j + 4] & 15) | (s[j - 4] >> 6) << 4, m = (s[j + 4] >> 4) | (s[j] >> 6) << 4 */
    emit(k, "and.b32 %s, %s, 15;", R(t), R(b[2]));
    emit(k, "shr.u32 %s, %s, 6;", R(t2), R(b[0]));
    emit(k, "shl.b32 %s, %s, 4;", R(t2), R(t2));
    emit(k, "@%s or.b32 %s, %s, %s;", P(high), R(sc), R(t), R(t2));
    emit(k, "shr.u32 %s, %s, 4;", R(t), R(b[2]));
    emit(k, "shr.u32 %s, %s, 6;", R(t2), R(b[1]));
    emit(k, "shl.b32 %s, %s, 4;", R(t2), R(t2));
    emit(k, "@%s or.b32 %s, %s, %s;", P(high), R(m), R(t), R(t2));
    *scf = nf(k);
    *mf = nf(k);
    emit(k, "cvt.rn.f32.u32 %s, %s;", F(*scf), R(sc));
    emit(k, "cvt.rn.f32.u32 %s, %s;", F(*mf), R(m));
}

/* Unit = sub-blocks 2 sub (low nibbles of qs[32 sub ..]) and 2 sub + 1 (high). */
static void decode_q4_k(kern *k, const unit_regs *u)
{
    int dd, s[3], w[8];
    load_words(k, u->wb, 1, &dd);
    int d = half_to_f32(k, dd, 0), dmin = half_to_f32(k, dd, 1);
    load_words(k, reg_plus(k, u->wb, RAYO_Q4_K_SCALES), 3, s);
    int qa = nr(k);
    emit(k, "mad.lo.u32 %s, %s, 32, %s;", R(qa), R(u->sub), R(u->wb));
    load_words(k, reg_plus(k, qa, RAYO_Q4_K_QS), 8, w);
    int plo[2] = {zero_f(k), zero_f(k)}, phi[2] = {zero_f(k), zero_f(k)};
    for (int i = 0; i < 8; i++) {
        int lo, hi, xl[4], xh[4];
        nibbles(k, w[i], &lo, &hi);
        load_x4(k, u->xa, 4 * i, xl);
        load_x4(k, u->xa, 32 + 4 * i, xh);
        codes_dot4(k, lo, 0.0f, xl, plo[i % 2]);
        codes_dot4(k, hi, 0.0f, xh, phi[i % 2]);
    }
    sum_chains(k, plo, 2);
    sum_chains(k, phi, 2);
    int part[2] = {plo[0], phi[0]};
    for (int e = 0; e < 2; e++) {
        int scf, mf, sx = nf(k), ds = nf(k), dm = nf(k);
        q4_k_scale_min(k, s, u->sub, e, &scf, &mf);
        emit(k, "ld.shared.f32 %s, [%s+%d];", F(sx), R(u->xsum), 4 * e);
        emit(k, "mul.f32 %s, %s, %s;", F(ds), F(d), F(scf));
        emit(k, "mul.f32 %s, %s, %s;", F(dm), F(dmin), F(mf));
        emit(k, "fma.rn.f32 %s, %s, %s, %s;", F(u->acc), F(ds), F(part[e]), F(u->acc));
        emit(k, "neg.f32 %s, %s;", F(dm), F(dm));
        emit(k, "fma.rn.f32 %s, %s, %s, %s;", F(u->acc), F(dm), F(sx), F(u->acc));
    }
}

/* Unit = half h = sub of a Q6_K block: value 32 kk + l (kk < 4, l < 32) has
 * its low bits in ql[64 h + 32 (kk & 1) + l] (high nibble for kk >= 2) and
 * its high bits at 2 kk in qh[32 h + l]; 16 values share a scale. */
static void decode_q6_k(kern *k, const unit_regs *u)
{
    int dw, sw[2], ql[16], qh[8];
    load_words(k, reg_plus(k, u->wb, RAYO_Q6_K_D), 1, &dw);
    int d = half_to_f32(k, dw, 0);
    int base = nr(k), qha = nr(k), sca = nr(k);
    emit(k, "mad.lo.u32 %s, %s, 64, %s;", R(base), R(u->sub), R(u->wb));
    emit(k, "mad.lo.u32 %s, %s, 32, %s;", R(qha), R(u->sub), R(u->wb));
    emit(k, "mad.lo.u32 %s, %s, 8, %s;", R(sca), R(u->sub), R(u->wb));
    load_words(k, reg_plus(k, sca, RAYO_Q6_K_SCALES), 2, sw);
    load_words(k, base, 16, ql);
    load_words(k, reg_plus(k, qha, RAYO_Q6_K_QH), 8, qh);
    int part[8];
    for (int g = 0; g < 8; g++)
        part[g] = zero_f(k);
    static const int hshift[4] = {4, 2, 0, -2}; /* moves bits 2kk..2kk+1 of qh to 4..5 */
    for (int i = 0; i < 8; i++) { /* l = 4i .. 4i + 3 */
        for (int kk = 0; kk < 4; kk++) {
            int low = nr(k), hb = nr(k), x[4];
            int src = ql[(kk & 1) * 8 + i];
            if (kk < 2) {
                emit(k, "and.b32 %s, %s, 0x0f0f0f0f;", R(low), R(src));
            } else {
                emit(k, "shr.u32 %s, %s, 4;", R(low), R(src));
                emit(k, "and.b32 %s, %s, 0x0f0f0f0f;", R(low), R(low));
            }
            if (hshift[kk] > 0)
                emit(k, "shl.b32 %s, %s, %d;", R(hb), R(qh[i]), hshift[kk]);
            else if (hshift[kk] < 0)
                emit(k, "shr.u32 %s, %s, %d;", R(hb), R(qh[i]), -hshift[kk]);
            else
                emit(k, "mov.b32 %s, %s;", R(hb), R(qh[i]));
            emit(k, "and.b32 %s, %s, 0x30303030;", R(hb), R(hb));
            emit(k, "or.b32 %s, %s, %s;", R(low), R(low), R(hb));
            load_x4(k, u->xa, 32 * kk + 4 * i, x);
            codes_dot4(k, low, 32.0f, x, part[2 * kk + i / 4]);
        }
    }
    for (int g = 0; g < 8; g++) {
        int sc = nr(k), scf = nf(k);
        emit(k, "bfe.s32 %s, %s, %d, 8;", R(sc), R(sw[g / 4]), 8 * (g % 4));
        emit(k, "cvt.rn.f32.s32 %s, %s;", F(scf), R(sc));
        emit(k, "mul.f32 %s, %s, %s;", F(scf), F(scf), F(d));
        emit(k, "fma.rn.f32 %s, %s, %s, %s;", F(u->acc), F(scf), F(part[g]), F(u->acc));
    }
}

/* nbuf as measured on the H200 (doc/benchmarks-cuda.md): 3 where
 * decoding is dear, 2 for f16 / bf16 (two blocks share an SM at n = 4096)
 * and Q6_K (whose three buffers leave little shared memory) */
static const qformat formats[] = {
    {"f16", RAYO_DTYPE_F16, 1, 2, 16, 2, 12288, 2, decode_f16},
    {"bf16", RAYO_DTYPE_BF16, 1, 2, 16, 2, 12288, 2, decode_bf16},
    {"q8_0", RAYO_DTYPE_Q8_0, RAYO_QK8_0, RAYO_Q8_0_BYTES, 32, 2, 12288, 3, decode_q8_0},
    {"q4_0", RAYO_DTYPE_Q4_0, RAYO_QK4_0, RAYO_Q4_0_BYTES, 32, 4, 12288, 3, decode_q4_0},
    {"q4_k", RAYO_DTYPE_Q4_K, RAYO_QK_K, RAYO_Q4_K_BYTES, 64, 2, 12288, 3, decode_q4_k},
    {"q6_k", RAYO_DTYPE_Q6_K, RAYO_QK_K, RAYO_Q6_K_BYTES, 128, 1, 12288, 2, decode_q6_k},
};
#define FORMAT_COUNT (sizeof formats / sizeof formats[0])

/* ---- the kernel's parts ---------------------------------------------------------- */
typedef struct gemvq_regs {
    int a, x, m, n, lda;        /* .b64 parameters (a, x global addresses) */
    int tid, lane, warp;        /* .b32 */
    int row, rs, has_row;       /* .b64 row, .b64 its global address, .pred row < m */
    int xs, xsum, ws;           /* .b32 shared: x chunk, its sums of 32, this warp's staging */
    int c0, len, acc;           /* .b64 chunk start, .b64 its length, .f32 lane sum */
} gemvq_regs;

static void round_up64(kern *k, int dst, int v, int step)
{
    emit(k, "add.u64 %s, %s, %d;", D(dst), D(v), step - 1);
    emit(k, "and.b64 %s, %s, %d;", D(dst), D(dst), -step);
}

/* x[c0 .. c0 + len) into the padded shared chunk, zeros up to a whole unit
 * (cp.async: every thread's copies are in flight at once); for Q4_K also the
 * sums of each 32 values. */
static void stage_x(kern *k, const qformat *f, const gemvq_regs *g)
{
    int pp_shift = __builtin_ctz((unsigned)pad_period(f));
    int end = nd(k), i = nd(k), pi = np(k), l_loop = nlabel(k), l_done = nlabel(k);
    round_up64(k, end, g->len, f->unit_elems);
    emit(k, "cvt.u64.u32 %s, %s;", D(i), R(g->tid));
    emit(k, "setp.ge.u64 %s, %s, %s;", P(pi), D(i), D(end));
    emit(k, "@%s bra %s;", P(pi), L(l_done));
    label(k, l_loop);
    int pin = np(k), ga = nd(k), si = nr(k), sp = nr(k), sa = nr(k), bytes = nr(k);
    emit(k, "setp.lt.u64 %s, %s, %s;", P(pin), D(i), D(g->len));
    emit(k, "add.u64 %s, %s, %s;", D(ga), D(i), D(g->c0));
    emit(k, "mad.lo.u64 %s, %s, 4, %s;", D(ga), D(ga), D(g->x));
    emit(k, "selp.u64 %s, %s, %s, %s;", D(ga), D(ga), D(g->x), P(pin)); /* a zero fill reads nothing */
    emit(k, "selp.u32 %s, 4, 0, %s;", R(bytes), P(pin));
    emit(k, "cvt.u32.u64 %s, %s;", R(si), D(i));
    emit(k, "shr.u32 %s, %s, %d;", R(sp), R(si), pp_shift);
    emit(k, "mad.lo.u32 %s, %s, 4, %s;", R(si), R(sp), R(si));
    emit(k, "mad.lo.u32 %s, %s, 4, %s;", R(sa), R(si), R(g->xs));
    emit(k, "cp.async.ca.shared.global [%s], [%s], 4, %s;", R(sa), D(ga), R(bytes));
    emit(k, "add.u64 %s, %s, %d;", D(i), D(i), THREADS);
    emit(k, "setp.lt.u64 %s, %s, %s;", P(pi), D(i), D(end));
    emit(k, "@%s bra %s;", P(pi), L(l_loop));
    label(k, l_done);
    emit(k, "cp.async.wait_all;");
    emit(k, "bar.sync 0;");
    if (f->dtype != RAYO_DTYPE_Q4_K)
        return;
    /* thread t < len / 32 sums x[32 t .. 32 t + 32) (a Q4_K chunk is whole blocks) */
    int groups = nr(k), g0 = nr(k), pg = np(k), l_sum = nlabel(k), l_skip = nlabel(k);
    emit(k, "cvt.u32.u64 %s, %s;", R(groups), D(g->len));
    emit(k, "shr.u32 %s, %s, 5;", R(groups), R(groups));
    emit(k, "mov.u32 %s, %s;", R(g0), R(g->tid));
    emit(k, "setp.ge.u32 %s, %s, %s;", P(pg), R(g0), R(groups));
    emit(k, "@%s bra %s;", P(pg), L(l_skip));
    label(k, l_sum);
    int e = nr(k), src = nr(k), s = zero_f(k), dst = nr(k);
    emit(k, "shl.b32 %s, %s, 5;", R(e), R(g0));
    emit(k, "shr.u32 %s, %s, %d;", R(src), R(e), pp_shift);
    emit(k, "mad.lo.u32 %s, %s, 4, %s;", R(src), R(src), R(e));
    emit(k, "mad.lo.u32 %s, %s, 4, %s;", R(src), R(src), R(g->xs));
    for (int q = 0; q < 8; q++) {
        int x[4];
        load_x4(k, src, 4 * q, x);
        for (int j = 0; j < 4; j++)
            emit(k, "add.f32 %s, %s, %s;", F(s), F(s), F(x[j]));
    }
    emit(k, "mad.lo.u32 %s, %s, 4, %s;", R(dst), R(g0), R(g->xsum));
    emit(k, "st.shared.f32 [%s], %s;", R(dst), F(s));
    emit(k, "add.u32 %s, %s, %d;", R(g0), R(g0), THREADS);
    emit(k, "setp.lt.u32 %s, %s, %s;", P(pg), R(g0), R(groups));
    emit(k, "@%s bra %s;", P(pg), L(l_sum));
    label(k, l_skip);
    emit(k, "bar.sync 0;");
}

/* Starts copying the tile at element t of the chunk (tn of its elements)
 * into the staging buffer buf: its bytes [gaddr, gaddr + tbytes) land at
 * buf + sh (sh = gaddr & 15, returned), through the 16-byte chunks of the
 * aligned-down window, with cp.async; the window's edge chunks, which the
 * tile covers in part, byte by byte, with zeros outside the tile up to the
 * end of its last unit.  Ends the lane's cp.async group. */
static int stage_tile(kern *k, const qformat *f, const gemvq_regs *g, int t, int buf)
{
    int te = tile_elems(f);
    /* elements of this tile, its bytes, the bytes of whole units */
    int rem = nd(k), tn = nr(k), tbytes = nr(k), zbytes = nr(k), ze = nr(k), gaddr = nd(k), e0 = nd(k);
    emit(k, "sub.u64 %s, %s, %s;", D(rem), D(g->len), D(t));
    emit(k, "min.u64 %s, %s, %d;", D(rem), D(rem), te);
    emit(k, "cvt.u32.u64 %s, %s;", R(tn), D(rem));
    emit(k, "div.u32 %s, %s, %d;", R(tbytes), R(tn), f->block_elems);
    emit(k, "mul.lo.u32 %s, %s, %d;", R(tbytes), R(tbytes), f->block_bytes);
    emit(k, "add.u32 %s, %s, %d;", R(ze), R(tn), f->unit_elems - 1);
    emit(k, "and.b32 %s, %s, %d;", R(ze), R(ze), -f->unit_elems);
    emit(k, "div.u32 %s, %s, %d;", R(zbytes), R(ze), f->block_elems);
    emit(k, "mul.lo.u32 %s, %s, %d;", R(zbytes), R(zbytes), f->block_bytes);
    emit(k, "add.u64 %s, %s, %s;", D(e0), D(g->c0), D(t));
    emit(k, "div.u64 %s, %s, %d;", D(gaddr), D(e0), f->block_elems);
    emit(k, "mad.lo.u64 %s, %s, %d, %s;", D(gaddr), D(gaddr), f->block_bytes, D(g->rs));
    int sh = nr(k), gw = nd(k), sh64 = nd(k), endz = nr(k), end = nr(k), cnt = nr(k);
    emit(k, "cvt.u32.u64 %s, %s;", R(sh), D(gaddr));
    emit(k, "and.b32 %s, %s, 15;", R(sh), R(sh));
    emit(k, "cvt.u64.u32 %s, %s;", D(sh64), R(sh));
    emit(k, "sub.u64 %s, %s, %s;", D(gw), D(gaddr), D(sh64));
    emit(k, "add.u32 %s, %s, %s;", R(end), R(sh), R(tbytes));
    emit(k, "add.u32 %s, %s, %s;", R(endz), R(sh), R(zbytes));
    emit(k, "add.u32 %s, %s, 15;", R(cnt), R(endz));
    emit(k, "shr.u32 %s, %s, 4;", R(cnt), R(cnt));
    int ci = nr(k), pc = np(k), l_loop = nlabel(k), l_done = nlabel(k), l_next = nlabel(k), l_edge = nlabel(k);
    emit(k, "mov.u32 %s, %s;", R(ci), R(g->lane));
    emit(k, "setp.ge.u32 %s, %s, %s;", P(pc), R(ci), R(cnt));
    emit(k, "@%s bra %s;", P(pc), L(l_done));
    label(k, l_loop);
    int off = nr(k), off16 = nr(k), pfull = np(k), ga = nd(k), sa = nr(k);
    emit(k, "shl.b32 %s, %s, 4;", R(off), R(ci));
    emit(k, "add.u32 %s, %s, 16;", R(off16), R(off));
    emit(k, "mad.wide.u32 %s, %s, 1, %s;", D(ga), R(off), D(gw));
    emit(k, "add.u32 %s, %s, %s;", R(sa), R(off), R(buf));
    emit(k, "setp.ge.u32 %s, %s, %s;", P(pfull), R(off), R(sh));
    emit(k, "setp.le.and.u32 %s, %s, %s, %s;", P(pfull), R(off16), R(end), P(pfull));
    emit(k, "@!%s bra %s;", P(pfull), L(l_edge));
    emit(k, "cp.async.cg.shared.global [%s], [%s], 16;", R(sa), D(ga));
    emit(k, "bra.uni %s;", L(l_next));
    label(k, l_edge);
    for (int b = 0; b < 16; b++) {
        int pos = nr(k), pin = np(k), byte = nr(k);
        emit(k, "add.u32 %s, %s, %d;", R(pos), R(off), b);
        emit(k, "setp.ge.u32 %s, %s, %s;", P(pin), R(pos), R(sh));
        emit(k, "setp.lt.and.u32 %s, %s, %s, %s;", P(pin), R(pos), R(end), P(pin));
        emit(k, "mov.b32 %s, 0;", R(byte));
        emit(k, "@%s ld.global.nc.u8 %s, [%s+%d];", P(pin), R(byte), D(ga), b);
        emit(k, "st.shared.u8 [%s+%d], %s;", R(sa), b, R(byte));
    }
    label(k, l_next);
    emit(k, "add.u32 %s, %s, 32;", R(ci), R(ci));
    emit(k, "setp.lt.u32 %s, %s, %s;", P(pc), R(ci), R(cnt));
    emit(k, "@%s bra %s;", P(pc), L(l_loop));
    label(k, l_done);
    emit(k, "cp.async.commit_group;");
    return sh;
}

/* Lane's units of the tile at element t, staged in buf at shift sh. */
static void decode_tile(kern *k, const qformat *f, const gemvq_regs *g, int t, int buf, int sh)
{
    int pp_shift = __builtin_ctz((unsigned)pad_period(f));
    int tn = nr(k), rem = nd(k);
    emit(k, "sub.u64 %s, %s, %s;", D(rem), D(g->len), D(t));
    emit(k, "min.u64 %s, %s, %d;", D(rem), D(rem), tile_elems(f));
    emit(k, "cvt.u32.u64 %s, %s;", R(tn), D(rem));
    int upb = f->block_elems > f->unit_elems ? f->block_elems / f->unit_elems : 1; /* units per block */
    int unit_bytes = upb > 1 ? f->block_bytes : f->unit_elems / f->block_elems * f->block_bytes;
    for (int j = 0; j < f->lane_units; j++) {
        int unit = nr(k), ue = nr(k), pu = np(k), l_skip = nlabel(k);
        emit(k, "add.u32 %s, %s, %d;", R(unit), R(g->lane), 32 * j);
        emit(k, "mul.lo.u32 %s, %s, %d;", R(ue), R(unit), f->unit_elems);
        emit(k, "setp.ge.u32 %s, %s, %s;", P(pu), R(ue), R(tn));
        emit(k, "@%s bra %s;", P(pu), L(l_skip));
        unit_regs u = {nr(k), nr(k), nr(k), nr(k), g->acc};
        int blk = nr(k);
        emit(k, "shr.u32 %s, %s, %d;", R(blk), R(unit), __builtin_ctz((unsigned)upb));
        emit(k, "and.b32 %s, %s, %d;", R(u.sub), R(unit), upb - 1);
        emit(k, "mad.lo.u32 %s, %s, %d, %s;", R(u.wb), R(blk), unit_bytes, R(sh));
        emit(k, "add.u32 %s, %s, %s;", R(u.wb), R(u.wb), R(buf));
        int xe = nr(k), xp = nr(k);
        emit(k, "cvt.u32.u64 %s, %s;", R(xe), D(t));
        emit(k, "add.u32 %s, %s, %s;", R(xe), R(xe), R(ue));
        emit(k, "shr.u32 %s, %s, %d;", R(xp), R(xe), pp_shift);
        emit(k, "mad.lo.u32 %s, %s, 4, %s;", R(xp), R(xp), R(xe));
        emit(k, "mad.lo.u32 %s, %s, 4, %s;", R(u.xa), R(xp), R(g->xs));
        emit(k, "shr.u32 %s, %s, 5;", R(xp), R(xe));
        emit(k, "mad.lo.u32 %s, %s, 4, %s;", R(u.xsum), R(xp), R(g->xsum));
        f->decode(k, &u);
        label(k, l_skip);
    }
}

/* The warp's row over the chunk, tile by tile; tile t + 1 loads while tile t
 * is decoded (two staging buffers, cp.async groups). */
static void row_chunk(kern *k, const qformat *f, const gemvq_regs *g)
{
    int te = tile_elems(f);
    int t = nd(k), tnext = nd(k), pt = np(k), pn = np(k), l_tile = nlabel(k), l_last = nlabel(k),
        l_go = nlabel(k);
    int bcur = nr(k), bnext = nr(k), shcur = nr(k), tmp = nr(k);
    emit(k, "mov.u64 %s, 0;", D(t));
    emit(k, "mov.u32 %s, %s;", R(bcur), R(g->ws));
    emit(k, "add.u32 %s, %s, %d;", R(bnext), R(g->ws), stage_bytes(f)); /* two of the nbuf buffers */
    int sh0 = stage_tile(k, f, g, t, bcur);
    emit(k, "mov.u32 %s, %s;", R(shcur), R(sh0));
    label(k, l_tile);
    emit(k, "add.u64 %s, %s, %d;", D(tnext), D(t), te);
    emit(k, "setp.ge.u64 %s, %s, %s;", P(pn), D(tnext), D(g->len));
    emit(k, "@%s bra %s;", P(pn), L(l_last));
    int shn = stage_tile(k, f, g, tnext, bnext);
    emit(k, "bra.uni %s;", L(l_go));
    label(k, l_last);
    emit(k, "cp.async.commit_group;"); /* an empty group: wait_group 1 below then waits for tile t */
    label(k, l_go);
    emit(k, "cp.async.wait_group 1;");
    emit(k, "bar.warp.sync -1;");
    decode_tile(k, f, g, t, bcur, shcur);
    emit(k, "bar.warp.sync -1;"); /* the next tile's copies overwrite this buffer */
    emit(k, "mov.u32 %s, %s;", R(tmp), R(bcur));
    emit(k, "mov.u32 %s, %s;", R(bcur), R(bnext));
    emit(k, "mov.u32 %s, %s;", R(bnext), R(tmp));
    emit(k, "mov.u32 %s, %s;", R(shcur), R(shn));
    emit(k, "mov.u64 %s, %s;", D(t), D(tnext));
    emit(k, "setp.lt.u64 %s, %s, %s;", P(pt), D(t), D(g->len));
    emit(k, "@%s bra %s;", P(pt), L(l_tile));
    emit(k, "cp.async.wait_all;");
}

/* y[row] = alpha * sum + beta * y[row] (y read only when beta != 0); a
 * sum that overflowed in float is redone in float64 (product-redo.c) */
static void store_row(kern *k, const qformat *f, const gemvq_regs *g, int y, int alpha, int beta)
{
    int s = g->acc;
    for (int o = 16; o >= 1; o /= 2) {
        int t = nf(k);
        emit(k, "shfl.sync.bfly.b32 %s, %s, %d, 31, -1;", F(t), F(s), o);
        emit(k, "add.f32 %s, %s, %s;", F(s), F(s), F(t));
    }
    int pw = np(k), l_skip = nlabel(k), ya = nd(k), old = nf(k), pb = np(k), out = nf(k);
    emit(k, "setp.ne.u32 %s, %s, 0;", P(pw), R(g->lane));
    emit(k, "@%s bra %s;", P(pw), L(l_skip));
    int rs = nd(k);
    emit(k, "mad.lo.u64 %s, %s, %s, %s;", D(rs), D(g->row), D(g->lda), D(g->a));
    redo_operand wr = {rs, -1, f->dtype}, xr = {g->x, -1, RAYO_DTYPE_F32};
    redo_if_not_finite_f32(k, s, &wr, &xr, g->n);
    emit(k, "mad.lo.u64 %s, %s, 4, %s;", D(ya), D(g->row), D(y));
    emit(k, "mov.f32 %s, %s;", F(old), C(0.0f));
    emit(k, "setp.ne.f32 %s, %s, %s;", P(pb), F(beta), C(0.0f));
    emit(k, "@%s ld.global.f32 %s, [%s];", P(pb), F(old), D(ya));
    emit(k, "@%s mul.f32 %s, %s, %s;", P(pb), F(old), F(old), F(beta));
    emit(k, "fma.rn.f32 %s, %s, %s, %s;", F(out), F(alpha), F(s), F(old));
    emit(k, "st.global.f32 [%s], %s;", D(ya), F(out));
    label(k, l_skip);
}

/* The rows r0, r0 + stride, ... (below m) of one warp when x is staged
 * once (n <= xchunk: a chunk at 0 of length n), as one stream of tiles:
 * nbuf staging buffers, nbuf - 1 tiles in flight while one is decoded, and
 * the next row's first tiles load while the last tiles of this one are
 * decoded.  The loop body is unrolled nbuf times so that every buffer has
 * its own registers (the tile's row, start and shift, and whether it
 * exists); `ahead` is the next tile to load.  The first tile is requested
 * before x is staged (first_tile), the rest after (row_stream). */
typedef struct stream_regs {
    int row[MAX_NBUF], t[MAX_NBUF], sh[MAX_NBUF], ok[MAX_NBUF]; /* .b64, .b64, .b32, .pred per buffer */
    int buf[MAX_NBUF];                                          /* .b32 shared address of each buffer */
    int arow, ars, at;                          /* .b64 the next tile to load: row, its address, start */
    int stride;                                 /* .b64 rows between a warp's rows */
} stream_regs;

/* loads the tile `ahead` into buffer s (if its row is below m) and moves
 * `ahead` on; commits a cp.async group either way */
static void stream_stage(kern *k, const qformat *f, const gemvq_regs *g, stream_regs *sr, int s)
{
    int l_none = nlabel(k), l_done = nlabel(k);
    emit(k, "setp.lt.u64 %s, %s, %s;", P(sr->ok[s]), D(sr->arow), D(g->m));
    emit(k, "@!%s bra %s;", P(sr->ok[s]), L(l_none));
    gemvq_regs ga = *g;
    ga.rs = sr->ars;
    int sh = stage_tile(k, f, &ga, sr->at, sr->buf[s]);
    emit(k, "mov.u32 %s, %s;", R(sr->sh[s]), R(sh));
    emit(k, "mov.u64 %s, %s;", D(sr->t[s]), D(sr->at));
    emit(k, "mov.u64 %s, %s;", D(sr->row[s]), D(sr->arow));
    int pw = np(k);
    emit(k, "add.u64 %s, %s, %d;", D(sr->at), D(sr->at), tile_elems(f));
    emit(k, "setp.ge.u64 %s, %s, %s;", P(pw), D(sr->at), D(g->len));
    emit(k, "@%s mov.u64 %s, 0;", P(pw), D(sr->at));
    emit(k, "@%s add.u64 %s, %s, %s;", P(pw), D(sr->arow), D(sr->arow), D(sr->stride));
    emit(k, "@%s mad.lo.u64 %s, %s, %s, %s;", P(pw), D(sr->ars), D(sr->arow), D(g->lda), D(g->a));
    emit(k, "bra.uni %s;", L(l_done));
    label(k, l_none);
    emit(k, "cp.async.commit_group;"); /* empty: wait_group counts stay in step */
    label(k, l_done);
}

static void first_tile(kern *k, const qformat *f, const gemvq_regs *g, stream_regs *sr)
{
    for (int s = 0; s < f->nbuf; s++) {
        sr->row[s] = nd(k);
        sr->t[s] = nd(k);
        sr->sh[s] = nr(k);
        sr->ok[s] = np(k);
        sr->buf[s] = reg_plus(k, g->ws, s * stage_bytes(f));
    }
    sr->arow = g->row;
    sr->ars = g->rs;
    sr->at = nd(k);
    emit(k, "mov.u64 %s, 0;", D(sr->at));
    stream_stage(k, f, g, sr, 0);
}

static void row_stream(kern *k, const qformat *f, const gemvq_regs *g, stream_regs *sr, int y, int alpha, int beta)
{
    for (int s = 1; s < f->nbuf - 1; s++)
        stream_stage(k, f, g, sr, s);
    int l_loop = nlabel(k), l_end = nlabel(k);
    label(k, l_loop);
    int nb = f->nbuf;
    for (int j = 0; j < nb; j++) {
        emit(k, "bar.warp.sync -1;"); /* every lane is done with the buffer staged next */
        stream_stage(k, f, g, sr, (j + nb - 1) % nb);
        emit(k, "cp.async.wait_group %d;", nb - 1);
        emit(k, "bar.warp.sync -1;");
        emit(k, "@!%s bra %s;", P(sr->ok[j]), L(l_end));
        decode_tile(k, f, g, sr->t[j], sr->buf[j], sr->sh[j]);
        int pl = np(k), te = nd(k), l_more = nlabel(k);
        emit(k, "add.u64 %s, %s, %d;", D(te), D(sr->t[j]), tile_elems(f));
        emit(k, "setp.lt.u64 %s, %s, %s;", P(pl), D(te), D(g->len));
        emit(k, "@%s bra %s;", P(pl), L(l_more));
        gemvq_regs gr = *g;
        gr.row = sr->row[j];
        store_row(k, f, &gr, y, alpha, beta);
        emit(k, "mov.f32 %s, %s;", F(g->acc), C(0.0f));
        label(k, l_more);
    }
    emit(k, "bra.uni %s;", L(l_loop));
    label(k, l_end);
    emit(k, "cp.async.wait_all;");
}

/* The grid-stride walk over row groups of gen_gemvq, its registers and
 * parameters: what both of its paths take. */
typedef struct {
    int grp, gstride, w64, y, alpha, beta, l_end;
} gemvq_walk;

/* n <= xchunk: stage x once, then each warp streams its rows. */
static void gemvq_one_chunk(kern *k, const qformat *f, gemvq_regs *g, const gemvq_walk *w)
{
    stream_regs sr;
    emit(k, "mov.u64 %s, %s;", D(g->len), D(g->n));
    emit(k, "mad.lo.u64 %s, %s, %d, %s;", D(g->row), D(w->grp), ROWS, D(w->w64));
    emit(k, "mad.lo.u64 %s, %s, %s, %s;", D(g->rs), D(g->row), D(g->lda), D(g->a));
    sr.stride = nd(k);
    emit(k, "mul.lo.u64 %s, %s, %d;", D(sr.stride), D(w->gstride), ROWS);
    first_tile(k, f, g, &sr);
    stage_x(k, f, g);
    row_stream(k, f, g, &sr, w->y, w->alpha, w->beta);
    emit(k, "bra.uni %s;", L(w->l_end));
}

/* n > xchunk: each group of rows walks the chunks of x, staging each for
 * the block's warps together. */
static void gemvq_chunked(kern *k, const qformat *f, gemvq_regs *g, const gemvq_walk *w)
{
    int groups = nd(k), pg = np(k), l_group = nlabel(k);
    emit(k, "add.u64 %s, %s, %d;", D(groups), D(g->m), ROWS - 1);
    emit(k, "div.u64 %s, %s, %d;", D(groups), D(groups), ROWS);
    label(k, l_group);
    emit(k, "setp.ge.u64 %s, %s, %s;", P(pg), D(w->grp), D(groups));
    emit(k, "@%s bra %s;", P(pg), L(w->l_end));
    emit(k, "mad.lo.u64 %s, %s, %d, %s;", D(g->row), D(w->grp), ROWS, D(w->w64));
    emit(k, "setp.lt.u64 %s, %s, %s;", P(g->has_row), D(g->row), D(g->m));
    emit(k, "mad.lo.u64 %s, %s, %s, %s;", D(g->rs), D(g->row), D(g->lda), D(g->a));
    emit(k, "mov.f32 %s, %s;", F(g->acc), C(0.0f));
    int pc = np(k), l_chunk = nlabel(k), l_skip = nlabel(k), l_store = nlabel(k);
    emit(k, "mov.u64 %s, 0;", D(g->c0));
    label(k, l_chunk);
    emit(k, "sub.u64 %s, %s, %s;", D(g->len), D(g->n), D(g->c0));
    emit(k, "min.u64 %s, %s, %d;", D(g->len), D(g->len), f->xchunk);
    emit(k, "bar.sync 0;"); /* every warp is done with the previous chunk */
    stage_x(k, f, g);
    emit(k, "@!%s bra %s;", P(g->has_row), L(l_skip));
    row_chunk(k, f, g);
    label(k, l_skip);
    emit(k, "add.u64 %s, %s, %d;", D(g->c0), D(g->c0), f->xchunk);
    emit(k, "setp.lt.u64 %s, %s, %s;", P(pc), D(g->c0), D(g->n));
    emit(k, "@%s bra %s;", P(pc), L(l_chunk));
    emit(k, "@!%s bra %s;", P(g->has_row), L(l_store));
    store_row(k, f, g, w->y, w->alpha, w->beta);
    label(k, l_store);
    emit(k, "add.u64 %s, %s, %s;", D(w->grp), D(w->grp), D(w->gstride));
    emit(k, "bra.uni %s;", L(l_group));
}

/* Blocks loop over groups of ROWS rows (the grid may be smaller than the
 * groups: one wave).  When x fits one chunk (n <= xchunk) it is staged once
 * and each warp streams its rows (row_stream); else each group walks the
 * chunks, staging x for each (row_chunk), as the block's warps go together. */
static void gen_gemvq(strbuf *mod, const qformat *f)
{
    kern kk = {0}, *k = &kk;
    gemvq_regs g;
    int y = param_global(k, "p_y");
    g.a = param_global(k, "p_a");
    g.x = param_global(k, "p_x");
    g.m = param_u64(k, "p_m");
    g.n = param_u64(k, "p_n");
    g.lda = param_u64(k, "p_lda");
    int alpha = param_f32(k, "p_alpha"), beta = param_f32(k, "p_beta");
    lane_warp(k, &g.tid, &g.lane, &g.warp);
    int ctaid = sreg(k, "%ctaid.x"), nctaid = sreg(k, "%nctaid.x");
    int grp = nd(k), gstride = nd(k), w64 = nd(k);
    emit(k, "cvt.u64.u32 %s, %s;", D(grp), R(ctaid));
    emit(k, "cvt.u64.u32 %s, %s;", D(gstride), R(nctaid));
    emit(k, "cvt.u64.u32 %s, %s;", D(w64), R(g.warp));
    g.row = nd(k);
    g.rs = nd(k);
    g.has_row = np(k);
    g.xs = nr(k);
    g.xsum = nr(k);
    g.ws = nr(k);
    /* shared: the warps' staging buffers, the sums of 32 x, the x chunk */
    emit(k, "mov.u32 %s, gq_smem;", R(g.ws));
    emit(k, "add.u32 %s, %s, %d;", R(g.xsum), R(g.ws), f->nbuf * ROWS * stage_bytes(f));
    emit(k, "add.u32 %s, %s, %d;", R(g.xs), R(g.xsum), xsum_bytes(f));
    emit(k, "mad.lo.u32 %s, %s, %d, %s;", R(g.ws), R(g.warp), f->nbuf * stage_bytes(f), R(g.ws));
    g.acc = zero_f(k);
    g.c0 = nd(k);
    g.len = nd(k);
    emit(k, "mov.u64 %s, 0;", D(g.c0));
    int psingle = np(k), l_multi = nlabel(k), l_end = nlabel(k);
    emit(k, "setp.gt.u64 %s, %s, %d;", P(psingle), D(g.n), f->xchunk);
    emit(k, "@%s bra %s;", P(psingle), L(l_multi));
    gemvq_walk walk = {grp, gstride, w64, y, alpha, beta, l_end};
    gemvq_one_chunk(k, f, &g, &walk);
    label(k, l_multi);
    gemvq_chunked(k, f, &g, &walk);
    label(k, l_end);
    char name[32], dir[64];
    snprintf(name, sizeof name, "gemvq_%s", f->name);
    snprintf(dir, sizeof dir, ".maxntid %d, 1, 1\n", THREADS);
    kern_finish(mod, k, name,
                ".param .u64 p_y, .param .u64 p_a, .param .u64 p_x, .param .u64 p_m, .param .u64 p_n, "
                ".param .u64 p_lda, .param .f32 p_alpha, .param .f32 p_beta", dir, NULL);
}

void module_infer(strbuf *mod)
{
    sb_printf(mod, "\n.extern .shared .align 16 .b8 gq_smem[];\n");
    for (size_t i = 0; i < FORMAT_COUNT; i++)
        gen_gemvq(mod, &formats[i]);
    infer_gemv8(mod);
    infer_ops(mod);
    infer_prompt(mod);
    infer_attention(mod);
    infer_attention_prefill(mod);
}

/* The C table rayo_cuda_gemvq_configs (plugins/cuda/cuda-ptx.h). */
void infer_write_config_table(strbuf *c)
{
    sb_printf(c, "const rayo_ptx_gemvq_config rayo_cuda_gemvq_configs[] = {\n");
    for (size_t i = 0; i < FORMAT_COUNT; i++)
        sb_printf(c, "    {\"gemvq_%s\", %d, %d, %d, %d, %d},\n", formats[i].name, (int)formats[i].dtype,
                  fixed_bytes(&formats[i]), pad_period(&formats[i]), tile_elems(&formats[i]), formats[i].xchunk);
    sb_printf(c, "};\nconst unsigned rayo_cuda_gemvq_config_count = %u;\n", (unsigned)FORMAT_COUNT);
}
