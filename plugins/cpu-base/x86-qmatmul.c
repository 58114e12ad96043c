/* SPDX-License-Identifier: MIT */
/* x86-qmatmul.c - the prompt's matmul with quantized weights in integers
 * (x86-qmatmul.h says what and why). */
#include "cpu-rounding-budget.h"
#include "x86-plugin.h"
#include "x86-prepared.h"
#include "x86-qmatmul.h"
#include "x86-quant.h"

#include <float.h>
#include <immintrin.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#define BLOCK 32     /* values of A per int8 block, and of B per code block */
#define ROUND_ROWS 8 /* rows of A per task of its rounding */
#if defined(__AVX512F__) && defined(__AVX512VL__)
#define COLS_MAX 16 /* the avx512 plugin's 512-bit tiles: 16 columns, 8 rows */
#define ROWS_MAX 8
#else
#define COLS_MAX 8 /* 256-bit tiles: 8 columns, 4 rows */
#define ROWS_MAX 4
#endif

/* 32 values of `cols` (8 or 16: the tile's) columns of B: codes[4 cols g +
 * 4 j + i] is value 4 g + i of column j (u8, 0..15; Q8_0: its signed bytes
 * as they are); the column's value v is scale[j] code - min[j]. */
typedef struct panel_block {
    uint8_t codes[BLOCK * COLS_MAX];
    float scale[COLS_MAX], min[COLS_MAX];
} panel_block;

/* A rounded: row r's value i is d[r][i / 32] q[r][i]; dsum16 is d times the
 * sum of q over each 16 values (for Q6_K's offset per 16); dsum is d times the
 * block's sum of q (for the weights' offsets). */
typedef struct rounded_a {
    int8_t *q;
    float *d, *dsum, *dsum16;
} rounded_a;

/* out[COLS_MAX t + j] = row t of A times column j of the panel
 * (x86-qmatmul-tile_tmpl.c). */
typedef void tile_fn(const panel_block *panel, size_t blocks, int shift, const int8_t *const x[ROWS_MAX],
                     const float *const d[ROWS_MAX], const float *const dsum[ROWS_MAX], float *out);

/* A tile function and its shape. */
typedef struct tile_kind {
    tile_fn *fn;
    size_t cols; /* columns of a panel: one 32-bit lane each */
    int rows;    /* rows of A: their integer and float sums stay in registers */
    int q8_offset; /* Q8_0's codes packed as q + 128, unsigned (min 128 d) */
} tile_kind;

typedef struct qmatmul_job {
    const rayo_call *call;
    rayo_dtype bdt;
    size_t blocks;       /* k / 32 */
    int shift;           /* panel blocks per 32 values of A: 1 << shift */
    size_t b_stride;     /* bytes between rows of B */
    size_t row_bytes;    /* bytes of k values of B */
    rounded_a a;
    panel_block *panels; /* one panel of blocks << shift blocks per worker */
    panel_block *kept;   /* a constant B's panels, all of them, else NULL (prepared_panels) */
    int kept_ready;      /* 1: kept holds them; 0: the call packs them there */
    size_t panels_per_task; /* consecutive panels of a task (panel_task) */
    tile_kind tile;      /* the tile for this CPU */
    unsigned char *row_ok; /* per row of A: 1 rounded within the budget, 0 left to the f32 path */
    float *row_dmax;     /* per row of A: its largest block scale */
} qmatmul_job;

/* ---- A to int8 ------------------------------------------------------------- */

/* The horizontal sum and maximum of 8 lanes. */
static float sum8(__m256 v)
{
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    return _mm_cvtss_f32(_mm_add_ss(s, _mm_shuffle_ps(s, s, 1)));
}

static float max8(__m256 v)
{
    __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    m = _mm_max_ps(m, _mm_movehl_ps(m, m));
    return _mm_cvtss_f32(_mm_max_ss(m, _mm_shuffle_ps(m, m, 1)));
}

/* The 32 values at x as int8 at q, their scale and the sums of q over each
 * half, their errors added
 * to err; 0 when one is not finite or the largest |x| is in (0, 1e-30)
 * (its reciprocal overflows). */
static int round_block(const float *x, int8_t *q, float *d, int sum[2], rounding_error *err)
{
    const __m256 sign = _mm256_set1_ps(-0.0f);
    __m256 v[4], amax = _mm256_setzero_ps(), bad = _mm256_setzero_ps(), abs = _mm256_setzero_ps();
    __m256 sq_x = _mm256_setzero_ps(); /* inf past 1.8e19: the row then fails the budget */
    for (int i = 0; i < 4; i++) {
        v[i] = _mm256_loadu_ps(x + 8 * i);
        __m256 a = _mm256_andnot_ps(sign, v[i]);
        bad = _mm256_or_ps(bad, _mm256_cmp_ps(a, _mm256_set1_ps(FLT_MAX), _CMP_NLE_UQ));
        amax = _mm256_max_ps(amax, a);
        abs = _mm256_add_ps(abs, a);
        sq_x = _mm256_fmadd_ps(a, a, sq_x);
    }
    float max = max8(amax);
    if (_mm256_movemask_ps(bad) || (max != 0.0f && max < 1e-30f))
        return 0;
    __m256 inv = _mm256_set1_ps(max != 0.0f ? 127.0f / max : 0.0f), step = _mm256_set1_ps(max / 127.0f);
    __m256i i32[4];
    __m256 sq = _mm256_setzero_ps();
    for (int i = 0; i < 4; i++) {
        i32[i] = _mm256_cvtps_epi32(_mm256_mul_ps(v[i], inv)); /* nearest, |q| <= 127 */
        __m256 e = _mm256_fnmadd_ps(_mm256_cvtepi32_ps(i32[i]), step, v[i]);
        sq = _mm256_fmadd_ps(e, e, sq);
    }
    /* The packs interleave 128-bit lanes; the permutation puts values back in order. */
    __m256i p = _mm256_packs_epi16(_mm256_packs_epi32(i32[0], i32[1]), _mm256_packs_epi32(i32[2], i32[3]));
    p = _mm256_permutevar8x32_epi32(p, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
    _mm256_storeu_si256((__m256i *)q, p);
    for (int h = 0; h < 2; h++) { /* values 0-15, 16-31 */
        __m256i half = _mm256_add_epi32(i32[2 * h], i32[2 * h + 1]);
        __m128i s = _mm_add_epi32(_mm256_castsi256_si128(half), _mm256_extracti128_si256(half, 1));
        s = _mm_hadd_epi32(s, s);
        sum[h] = _mm_cvtsi128_si32(_mm_hadd_epi32(s, s));
    }
    *d = max / 127.0f;
    err->sq += sum8(sq), err->abs += sum8(abs), err->sq_x += sum8(sq_x);
    err->max = max > err->max ? max : err->max;
    return 1;
}

/* The largest |value| a weight of this dtype can hold (f16 scales up to
 * 65504; Q4_K: d sc q - dmin m with 6-bit sc and m). */
static double weight_bound(rayo_dtype bdt)
{
    if (bdt == RAYO_DTYPE_Q4_0)
        return 8.0 * 65504.0;
    if (bdt == RAYO_DTYPE_Q8_0)
        return 128.0 * 65504.0;
    if (bdt == RAYO_DTYPE_Q6_K)
        return 65504.0 * 128.0 * 32.0;
    return 65504.0 * 63.0 * 16.0;
}

/* Row r of A into job->a; whether it rounds within the error budget into
 * job->row_ok[r] (else its codes are zeros and the f32 path computes it),
 * its largest block scale into job->row_dmax[r]. */
static void round_row(const qmatmul_job *job, size_t r)
{
    const rayo_call *c = job->call;
    const float *x = (const float *)c->a + r * (c->lda ? c->lda : c->k);
    rounding_error err = { 0.0, 0.0, 0.0, 0.0 };
    float dmax = 0.0f;
    int ok = 1;
    for (size_t b = 0, i = r * job->blocks; ok && b < job->blocks; b++, i++) {
        int sum[2];
        if (!(ok = round_block(x + b * BLOCK, job->a.q + i * BLOCK, job->a.d + i, sum, &err)))
            break;
        job->a.dsum[i] = job->a.d[i] * (float)(sum[0] + sum[1]);
        job->a.dsum16[2 * i] = job->a.d[i] * (float)sum[0], job->a.dsum16[2 * i + 1] = job->a.d[i] * (float)sum[1];
        dmax = job->a.d[i] > dmax ? job->a.d[i] : dmax;
    }
    ok = ok && rounding_within_budget(&err);
    if (!ok) {
        memset(job->a.q + r * job->blocks * BLOCK, 0, job->blocks * BLOCK);
        memset(job->a.d + r * job->blocks, 0, job->blocks * sizeof(float));
        memset(job->a.dsum + r * job->blocks, 0, job->blocks * sizeof(float));
        memset(job->a.dsum16 + 2 * r * job->blocks, 0, 2 * job->blocks * sizeof(float));
    }
    job->row_ok[r] = (unsigned char)ok;
    job->row_dmax[r] = ok ? dmax : 0.0f;
}

/* Task t: rows ROUND_ROWS t .. of A. */
static void round_task(void *arg, size_t t, unsigned worker)
{
    const qmatmul_job *job = arg;
    (void)worker;
    for (size_t r = t * ROUND_ROWS; r < job->call->m && r < (t + 1) * ROUND_ROWS; r++)
        round_row(job, r);
}

/* Every row of A, over the threads; the number of rows that take the f32
 * path, or SIZE_MAX when the float sums of the tiles could pass FLT_MAX
 * (k max|A| max|B| near it): the whole call then takes the sgemm path,
 * which redoes such sums in double, as rayo-ops.h promises no intermediate
 * overflow where the exact result is finite. */
static size_t round_a(const cpu_state *st, const qmatmul_job *job)
{
    const rayo_call *c = job->call;
    cpu_parallel(st, (c->m + ROUND_ROWS - 1) / ROUND_ROWS, round_task, (void *)job);
    float dmax = 0.0f;
    size_t f32_rows = 0;
    for (size_t r = 0; r < c->m; r++) {
        f32_rows += !job->row_ok[r];
        dmax = job->row_dmax[r] > dmax ? job->row_dmax[r] : dmax;
    }
    if (128.0 * (double)dmax * (double)c->k * weight_bound(job->bdt) * 4.0 >= (double)FLT_MAX)
        return SIZE_MAX;
    return f32_rows;
}

/* ---- B to panels ---------------------------------------------------------- */

/* Block b (32 values) of a Q6_K row: its 6-bit codes q, and for each
 * half h of 16 values (Q6_K has a scale per 16) what makes d sc (q - 32)
 * there: scale[h] = d sc, min[h] = 32 d sc. */
static __m256i codes_q6_k(const uint8_t *row, size_t b, float scale[2], float min[2])
{
    const uint8_t *blk = row + b / 8 * RAYO_Q6_K_BYTES;
    int s = (int)(b % 8);
    float d = x86_f16_at(blk + RAYO_Q6_K_D);
    for (int h = 0; h < 2; h++) {
        scale[h] = d * (float)(int8_t)blk[RAYO_Q6_K_SCALES + 2 * s + h];
        min[h] = 32.0f * scale[h];
    }
    return x86_q6_k_codes(blk, x86_load256(blk + RAYO_Q6_K_QH + 32 * (s / 4)), s / 4, s % 4);
}

/* The 8 x 8 transpose of 32-bit elements: out[g] holds element g of each of
 * in[0..7], so lane j of out[g] is codes 4 g .. 4 g + 3 of column j. */
static inline __attribute__((always_inline)) void transpose8(const __m256i in[8], __m256i out[8])
{
    __m256i t[8], u[8];
    for (int i = 0; i < 4; i++) {
        t[2 * i] = _mm256_unpacklo_epi32(in[2 * i], in[2 * i + 1]);
        t[2 * i + 1] = _mm256_unpackhi_epi32(in[2 * i], in[2 * i + 1]);
    }
    for (int h = 0; h < 2; h++) { /* columns 0-3, then 4-7 */
        u[4 * h] = _mm256_unpacklo_epi64(t[4 * h], t[4 * h + 2]);
        u[4 * h + 1] = _mm256_unpackhi_epi64(t[4 * h], t[4 * h + 2]);
        u[4 * h + 2] = _mm256_unpacklo_epi64(t[4 * h + 1], t[4 * h + 3]);
        u[4 * h + 3] = _mm256_unpackhi_epi64(t[4 * h + 1], t[4 * h + 3]);
    }
    for (int g = 0; g < 4; g++) {
        out[g] = _mm256_permute2x128_si256(u[g], u[4 + g], 0x20);
        out[g + 4] = _mm256_permute2x128_si256(u[g], u[4 + g], 0x31);
    }
}

/* Eight rows of B (8 columns of op(B)) being packed: rows[j] is column j's
 * row (the last valid one repeated past n), valid has lane j all ones where
 * column j exists, so that the missing columns get zero scales and mins. */
typedef struct pack_cols {
    const uint8_t *rows[8];
    __m256 valid;
    size_t h; /* the first column's place in the panel */
} pack_cols;

/* The f16 at offset of each of the 8 rows, as float lanes, zero in the
 * missing columns (gathered in a register: 8 stores and a vector load of
 * them would stall the store forwarding). */
static __m256 f16_lanes(const pack_cols *pc, size_t offset)
{
#define F16_OF(j) rayo__le16(pc->rows[j] + offset)
    __m128i v = _mm_cvtsi32_si128(F16_OF(0));
    v = _mm_insert_epi16(v, F16_OF(1), 1), v = _mm_insert_epi16(v, F16_OF(2), 2);
    v = _mm_insert_epi16(v, F16_OF(3), 3), v = _mm_insert_epi16(v, F16_OF(4), 4);
    v = _mm_insert_epi16(v, F16_OF(5), 5), v = _mm_insert_epi16(v, F16_OF(6), 6);
    v = _mm_insert_epi16(v, F16_OF(7), 7);
#undef F16_OF
    return _mm256_and_ps(_mm256_cvtph_ps(v), pc->valid);
}

/* The repacking's prefetch: while it packs block `offset` (bytes into each
 * row) of its 8 rows, the same share of the next 8 rows (the weights' rows
 * follow each other: one run of memory) goes to L2, so that they are there
 * when their turn comes (the panel's next 8 columns, or the next panel's
 * first, which the same task packs next but at the end of its run:
 * panel_task).  Each row prefetched on its own a few blocks ahead into L1
 * (the 8 streams side by side) left the repacking of a Q8_0 or Q4_K matrix
 * from memory (1 x 32000 x 2048, 1 thread, Zen 5 EPYC) 15-20% slower. */
static void pack_prefetch(const qmatmul_job *job, const pack_cols *pc, size_t offset, size_t bytes)
{
    const char *next = (const char *)pc->rows[0] + 8 * job->b_stride;
    for (size_t at = 8 * offset; at < 8 * (offset + bytes); at += 64)
        _mm_prefetch(next + at, _MM_HINT_T1);
}

/* Stores codes group g of 8 columns into panel block blk. */
static void store_group(panel_block *blk, size_t cols, const pack_cols *pc, int g, __m256i codes)
{
    _mm256_storeu_si256((__m256i *)(blk->codes + 4 * cols * (size_t)g + 4 * pc->h), codes);
}

/* Q4_0 block b of the 8 columns: byte i holds value i (low nibble) and
 * i + 16 (high), so word g of the bytes holds code groups g and g + 4: the
 * 16 bytes of each column are transposed by words (columns j and j + 4 in
 * the two halves of one vector), then split into nibbles. */
static void pack_q4_0(const qmatmul_job *job, const pack_cols *pc, size_t b, panel_block *blk)
{
    const __m256i nibble = _mm256_set1_epi8(15);
    size_t at = b * RAYO_Q4_0_BYTES;
    pack_prefetch(job, pc, at, RAYO_Q4_0_BYTES);
    __m256i v[4];
    for (int j = 0; j < 4; j++)
        v[j] = _mm256_set_m128i(x86_load128(pc->rows[j + 4] + at + 2), x86_load128(pc->rows[j] + at + 2));
    __m256i t0 = _mm256_unpacklo_epi32(v[0], v[1]), t1 = _mm256_unpackhi_epi32(v[0], v[1]);
    __m256i t2 = _mm256_unpacklo_epi32(v[2], v[3]), t3 = _mm256_unpackhi_epi32(v[2], v[3]);
    __m256i w[4] = { _mm256_unpacklo_epi64(t0, t2), _mm256_unpackhi_epi64(t0, t2), _mm256_unpacklo_epi64(t1, t3),
                     _mm256_unpackhi_epi64(t1, t3) };
    for (int g = 0; g < 4; g++) {
        store_group(blk, job->tile.cols, pc, g, _mm256_and_si256(w[g], nibble));
        store_group(blk, job->tile.cols, pc, g + 4, _mm256_and_si256(_mm256_srli_epi16(w[g], 4), nibble));
    }
    __m256 d = f16_lanes(pc, at);
    _mm256_storeu_ps(blk->scale + pc->h, d);
    _mm256_storeu_ps(blk->min + pc->h, _mm256_mul_ps(d, _mm256_set1_ps(8.0f)));
}

/* Q8_0 block b of the 8 columns: its signed bytes transposed by words,
 * or, for a tile of unsigned codes (q8_offset), q + 128 (the sign bit
 * flipped) with a min of 128 d: value = d (q + 128) - 128 d. */
static void pack_q8_0(const qmatmul_job *job, const pack_cols *pc, size_t b, panel_block *blk)
{
    size_t at = b * RAYO_Q8_0_BYTES;
    pack_prefetch(job, pc, at, RAYO_Q8_0_BYTES);
    __m256i in[8], out[8], flip = _mm256_set1_epi8(job->tile.q8_offset ? (char)0x80 : 0);
    for (int j = 0; j < 8; j++)
        in[j] = x86_load256(pc->rows[j] + at + 2);
    transpose8(in, out);
    for (int g = 0; g < 8; g++)
        store_group(blk, job->tile.cols, pc, g, _mm256_xor_si256(out[g], flip));
    __m256 d = f16_lanes(pc, at);
    _mm256_storeu_ps(blk->scale + pc->h, d);
    _mm256_storeu_ps(blk->min + pc->h, _mm256_mul_ps(d, _mm256_set1_ps(job->tile.q8_offset ? 128.0f : 0.0f)));
}

/* Q4_K super-block sb of the 8 columns into panel blocks 8 sb .. 8 sb + 7:
 * chunk c's 32 bytes hold sub-block 2c (low nibbles) and 2c + 1 (high),
 * transposed by words before the split; the 6-bit scales and mins of each
 * column as 8 float lanes (one per sub-block), transposed into 8 columns
 * per sub-block and times the columns' d and dmin. */
static void pack_q4_k(const qmatmul_job *job, const pack_cols *pc, size_t sb, panel_block *blk)
{
    const __m256i nibble = _mm256_set1_epi8(15);
    size_t at = sb * RAYO_Q4_K_BYTES;
    pack_prefetch(job, pc, at, RAYO_Q4_K_BYTES);
    __m256i in[8], out[8];
    for (int c = 0; c < 4; c++) {
        for (int j = 0; j < 8; j++)
            in[j] = x86_load256(pc->rows[j] + at + RAYO_Q4_K_QS + 32 * c);
        transpose8(in, out);
        for (int g = 0; g < 8; g++) {
            store_group(&blk[2 * c], job->tile.cols, pc, g, _mm256_and_si256(out[g], nibble));
            store_group(&blk[2 * c + 1], job->tile.cols, pc, g, _mm256_and_si256(_mm256_srli_epi16(out[g], 4), nibble));
        }
    }
    __m256i sc[8], mn[8], sc_t[8], mn_t[8];
    for (int j = 0; j < 8; j++) {
        __m128i sc8, m8;
        x86_q4_k_scales_mins(pc->rows[j] + at + RAYO_Q4_K_SCALES, &sc8, &m8);
        sc[j] = _mm256_cvtepu8_epi32(sc8);
        mn[j] = _mm256_cvtepu8_epi32(m8);
    }
    transpose8(sc, sc_t);
    transpose8(mn, mn_t);
    __m256 d = f16_lanes(pc, at), dmin = f16_lanes(pc, at + RAYO_Q4_K_DMIN);
    for (int s = 0; s < 8; s++) {
        _mm256_storeu_ps(blk[s].scale + pc->h, _mm256_mul_ps(d, _mm256_cvtepi32_ps(sc_t[s])));
        _mm256_storeu_ps(blk[s].min + pc->h, _mm256_mul_ps(dmin, _mm256_cvtepi32_ps(mn_t[s])));
    }
}

/* Q6_K block b of the 8 columns, a column at a time, into panel blocks
 * 2b (the 32 codes; the first half's scales and mins) and 2b + 1 (the
 * second half's scales and mins; its codes unused: the tiles take a half's
 * codes from block 2b, x86-qmatmul-tile_tmpl.c). */
static void pack_q6_k(const qmatmul_job *job, const pack_cols *pc, size_t b, panel_block *blk)
{
    __m256i in[8], out[8];
    float scale[2][8], min[2][8];
    size_t block_bytes = job->row_bytes / job->blocks; /* of 32 values: a Q6_K block's eighth */
    pack_prefetch(job, pc, b * block_bytes, block_bytes);
    for (int j = 0; j < 8; j++) {
        float sc[2], mn[2];
        in[j] = codes_q6_k(pc->rows[j], b, sc, mn);
        scale[0][j] = sc[0], scale[1][j] = sc[1], min[0][j] = mn[0], min[1][j] = mn[1];
    }
    transpose8(in, out);
    for (int g = 0; g < 8; g++)
        store_group(&blk[0], job->tile.cols, pc, g, out[g]);
    for (int h = 0; h < 2; h++) {
        _mm256_storeu_ps(blk[h].scale + pc->h, _mm256_and_ps(_mm256_loadu_ps(scale[h]), pc->valid));
        _mm256_storeu_ps(blk[h].min + pc->h, _mm256_and_ps(_mm256_loadu_ps(min[h]), pc->valid));
    }
}

/* Columns col0 .. col0 + cols - 1 of op(B) (rows of B) into panel, 8 at a
 * time, each 8 over all of k before the next; columns past n get zero
 * scales and mins (their codes those of the last column, never stored). */
static void pack_panel(const qmatmul_job *job, size_t col0, panel_block *panel)
{
    const rayo_call *c = job->call;
    size_t valid = c->n - col0 < job->tile.cols ? c->n - col0 : job->tile.cols;
    for (size_t h = 0; h < job->tile.cols; h += 8) {
        pack_cols pc;
        pc.h = h;
        pc.valid = _mm256_castsi256_ps(
            _mm256_cmpgt_epi32(_mm256_set1_epi32((int)valid - (int)h), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7)));
        for (size_t j = 0; j < 8; j++)
            pc.rows[j] = (const uint8_t *)c->b + (col0 + (h + j < valid ? h + j : valid - 1)) * job->b_stride;
        switch (job->bdt) {
        case RAYO_DTYPE_Q4_0:
            for (size_t b = 0; b < job->blocks; b++)
                pack_q4_0(job, &pc, b, &panel[b]);
            break;
        case RAYO_DTYPE_Q8_0:
            for (size_t b = 0; b < job->blocks; b++)
                pack_q8_0(job, &pc, b, &panel[b]);
            break;
        case RAYO_DTYPE_Q4_K:
            for (size_t sb = 0; sb < job->blocks / 8; sb++)
                pack_q4_k(job, &pc, sb, &panel[8 * sb]);
            break;
        default:
            for (size_t b = 0; b < job->blocks; b++)
                pack_q6_k(job, &pc, b, &panel[2 * b]);
        }
    }
}

/* ---- the tiles -------------------------------------------------------------- */

/* AVX2: vpmaddubsw sums pairs of products into 16 bits, 8 groups of 4
 * values at most 8 x 2 x 15 x 127 = 30480; vpmaddwd widens them. */
#define TILE_BITS 256
#define TILE_ROWS 4
#define TILE_NAME tile_maddubs
#define TILE_SUM(s, w, x) _mm256_add_epi16((s), _mm256_maddubs_epi16((w), (x)))
#define TILE_WIDEN(s) _mm256_madd_epi16((s), _mm256_set1_epi16(1))
#include "x86-qmatmul-tile_tmpl.c"

/* Q8_0's signed codes w: vpmaddubsw takes |w| (u8, 128 for -128) and x
 * with w's sign, pairs of products exact in 16 bits (at most 2 x 128 x
 * 127 = 32512) but two groups could overflow them: each group is widened
 * at once.  One pass of 8-bit products where 4-bit codes took two. */
#define TILE_NAME tile_maddubs_signed
#define TILE_SUM(s, w, x)                                                                                 \
    _mm256_add_epi32((s), _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_abs_epi8(w), _mm256_sign_epi8((x), (w))), \
                                            _mm256_set1_epi16(1)))
#define TILE_WIDEN(s) (s)
#include "x86-qmatmul-tile_tmpl.c"

/* Q6_K's 6-bit codes: pairs of products at most 2 x 63 x 127 = 16002, so
 * each group's are widened at once too (vpdpbusd needs no such tile). */
#define TILE_NAME tile_maddubs_wide
#define TILE_SUM(s, w, x) _mm256_add_epi32((s), _mm256_madd_epi16(_mm256_maddubs_epi16((w), (x)), _mm256_set1_epi16(1)))
#define TILE_WIDEN(s) (s)
#include "x86-qmatmul-tile_tmpl.c"

#if COLS_MAX == 8
/* The avx2 plugin where AVX-VNNI is on (x86_state.avx_vnni): vpdpbusd
 * (VEX) in place of vpmaddubsw, vpmaddwd and the add: the same 32-bit
 * sums as the tiles above for Q4_0 and Q4_K, Q6_K's without the widening
 * per group, Q8_0's with its codes as q + 128 (as the avx512 plugin's
 * VNNI tile below).  Compiled for AVX-VNNI in this function only (as the
 * gemv's kernels, x86-quant.h). */
#pragma GCC push_options
#pragma GCC target("avxvnni")
#define TILE_NAME tile_avx_vnni
#define TILE_SUM(s, w, x) _mm256_dpbusd_avx_epi32((s), (w), (x))
#define TILE_WIDEN(s) (s)
#include "x86-qmatmul-tile_tmpl.c"
#pragma GCC pop_options
#endif
#undef TILE_BITS
#undef TILE_ROWS

#if COLS_MAX == 16
/* The avx512 plugin, on a CPU with AVX512_VNNI: vpdpbusd sums the products
 * of 4 codes with 4 values straight into 32 bits (the same exact integer
 * sums as the AVX2 tiles, so the same results, but for Q8_0), 16 columns
 * at a time; 8 rows keep 8 integer and 8 float sums, the codes, scales and
 * mins in 19 of the 32 registers, and read each vector of codes once per
 * 8 products.  Q8_0's codes go as q + 128 (pack_q8_0), unsigned like the
 * 4-bit ones, with 128 d sum x taken off as Q4_0's 8 d sum x: a block's
 * lane sums at most 32 x 255 x 127, exact in int32 and in float.  (|q|
 * against x negated where q < 0 took a masked subtraction per product
 * vector and row as well: AVX-512 has no vpsignb.) */
#pragma GCC push_options
#pragma GCC target("avx512vnni")
#define TILE_BITS 512
#define TILE_ROWS 8
#define TILE_NAME tile_vnni
#define TILE_SUM(s, w, x) _mm512_dpbusd_epi32((s), (w), (x))
#define TILE_WIDEN(s) (s)
#include "x86-qmatmul-tile_tmpl.c"
#undef TILE_BITS
#undef TILE_ROWS
#pragma GCC pop_options
#endif

/* The tile for this CPU and B's codes (signed for Q8_0, 6-bit for Q6_K);
 * avx_vnni: the avx2 plugin's setting (x86_state). */
static tile_kind tile_for_cpu(rayo_dtype bdt, int avx_vnni)
{
    int is_signed = bdt == RAYO_DTYPE_Q8_0;
#if COLS_MAX == 16
    (void)avx_vnni;
    if (__builtin_cpu_supports("avx512vnni"))
        return (tile_kind){ tile_vnni, 16, 8, 1 };
#else
    if (avx_vnni)
        return (tile_kind){ tile_avx_vnni, 8, 4, 1 };
#endif
    if (bdt == RAYO_DTYPE_Q6_K)
        return (tile_kind){ tile_maddubs_wide, 8, 4, 0 };
    return (tile_kind){ is_signed ? tile_maddubs_signed : tile_maddubs, 8, 4, 0 };
}

/* C[r0 + t][col0 ..] = alpha out[t] + beta C (C unread when beta == 0),
 * for the rows rounded within the budget, 8 columns at a time. */
static void store_tile(const qmatmul_job *job, size_t r0, int rows, size_t col0, const float *out)
{
    const rayo_call *c = job->call;
    size_t ldc = c->ldy ? c->ldy : c->n;
    __m256 alpha = _mm256_set1_ps(c->alpha), beta = _mm256_set1_ps(c->beta);
    for (int t = 0; t < rows; t++) {
        if (!job->row_ok[r0 + t])
            continue; /* the f32 path's row */
        for (size_t h = 0; h < job->tile.cols && col0 + h < c->n; h += 8) {
            float v[8], *y = (float *)c->y + (r0 + t) * ldc + col0 + h;
            size_t cols = c->n - col0 - h < 8 ? c->n - col0 - h : 8;
            __m256 o = _mm256_mul_ps(alpha, _mm256_loadu_ps(out + COLS_MAX * t + h));
            if (cols == 8) { /* one store: the scalar stores cost a cache miss each */
                _mm256_storeu_ps(y, c->beta == 0.0f ? o : _mm256_fmadd_ps(beta, _mm256_loadu_ps(y), o));
                continue;
            }
            _mm256_storeu_ps(v, o);
            for (size_t j = 0; j < cols; j++)
                y[j] = c->beta == 0.0f ? v[j] : v[j] + c->beta * y[j];
        }
    }
}

/* Rows r0 .. r0 + rows - 1 of C, columns col0 ..; a tile of fewer rows than
 * the tile's repeats its last row (computed, not stored). */
static void run_tile(const qmatmul_job *job, const panel_block *panel, size_t r0, int rows, size_t col0)
{
    const int8_t *x[ROWS_MAX];
    const float *d[ROWS_MAX], *dsum[ROWS_MAX];
    float out[ROWS_MAX * COLS_MAX];
    for (int t = 0; t < job->tile.rows; t++) {
        size_t r = r0 + (size_t)(t < rows ? t : rows - 1);
        x[t] = job->a.q + r * job->blocks * BLOCK;
        d[t] = job->a.d + r * job->blocks;
        dsum[t] = job->bdt == RAYO_DTYPE_Q6_K ? job->a.dsum16 + 2 * r * job->blocks : job->a.dsum + r * job->blocks;
    }
    job->tile.fn(panel, job->blocks, job->shift, x, d, dsum, out);
    store_tile(job, r0, rows, col0, out);
}

/* The panels of the call: n / cols, rounded up. */
static size_t panel_count(const qmatmul_job *job)
{
    return (job->call->n + job->tile.cols - 1) / job->tile.cols;
}

/* Share t of `shares` of a kept panel of `blocks` blocks into L2: the
 * next panel comes in while the tiles of this one run (kept panels are
 * read from memory; the tiles' first pass over one waited on it). */
static void prefetch_share(const panel_block *panel, size_t blocks, size_t t, size_t shares)
{
    const char *base = (const char *)panel;
    size_t bytes = blocks * sizeof(panel_block), lo = bytes * t / shares, hi = bytes * (t + 1) / shares;
    for (size_t at = lo & ~(size_t)63; at < hi; at += 64)
        _mm_prefetch(base + at, _MM_HINT_T1);
}

/* Panel p: columns 16p .. 16p + 15 (8p .. with 8-column tiles) for every
 * row of A; the panel (k / 32 blocks of 320 or 640 bytes: 55 or 110 KiB at
 * k = 5632) stays in L2 while the rows stream past it. */
static void run_panel(const qmatmul_job *job, size_t p, panel_block *panel)
{
    const rayo_call *c = job->call;
    size_t rows = (size_t)job->tile.rows, col0 = p * job->tile.cols;
    if (job->kept)
        panel = job->kept + (p * job->blocks << job->shift);
    if (!job->kept_ready)
        pack_panel(job, col0, panel);
    size_t tiles = (c->m + rows - 1) / rows;
    for (size_t r0 = 0, t = 0; r0 < c->m; r0 += rows, t++) {
        if (job->kept_ready && p + 1 < panel_count(job))
            prefetch_share(job->kept + ((p + 1) * job->blocks << job->shift), job->blocks << job->shift, t, tiles);
        run_tile(job, panel, r0, (int)(c->m - r0 < rows ? c->m - r0 : rows), col0);
    }
}

/* The panels a task runs, one after the other: PANEL_TASKS_PER_THREAD
 * tasks a thread (the pool hands them out as threads come free), so that
 * the rows that pack_prefetch brings in after a panel's are mostly the
 * next panel of the same thread. */
#define PANEL_TASKS_PER_THREAD 4

static size_t panels_per_task(const cpu_state *st, size_t panels)
{
    size_t tasks = cpu_threads(st) * PANEL_TASKS_PER_THREAD;
    return (panels + tasks - 1) / tasks;
}

/* Task t: panels t * job->panels_per_task .. (up to the last) */
static void panel_task(void *arg, size_t t, unsigned worker)
{
    const qmatmul_job *job = arg;
    size_t panels = panel_count(job);
    size_t end = (t + 1) * job->panels_per_task < panels ? (t + 1) * job->panels_per_task : panels;
    for (size_t p = t * job->panels_per_task; p < end; p++)
        run_panel(job, p, job->kept ? NULL : job->panels + (worker * job->blocks << job->shift));
}

/* ---- constant weights ---------------------------------------------------------
 * With [backend.NAME] prepared_weights = all, a B in a constant buffer
 * (RAYO_CONSTANT_B) keeps its panels (x86-prepared.h): the first call packs
 * every panel into memory of its own (instead of a worker's scratch
 * panel), later calls with the same B only run the tiles.  The panels take
 * 2.2 times the bytes of Q4_0 and Q4_K weights, 1.2 times Q8_0's, 3 times
 * Q6_K's, and are read from memory where the per-call packing read the
 * smaller blocks: a product whose panels stay in the caches gains (128 x
 * 5632 x 2048 Q4_0, 1 thread, Zen 5 EPYC: 8.4 against 13.7-19.8 ms), one
 * from memory does not at 1 thread and gains a tenth at 2, a model's prompt
 * did not (doc/benchmarks-cpu.md), so the default leaves them out. */

/* The key of B's panels: the tile's layout is part of it. */
static x86_prepared_key panels_key(const qmatmul_job *job)
{
    const rayo_call *c = job->call;
    return (x86_prepared_key){ c->b, 2 * (int)job->tile.cols + job->tile.q8_offset, job->bdt, c->n, c->k,
                               job->b_stride };
}

/* The job's B kept already (kept_ready 1), or fresh memory for the call to
 * pack B's panels into (kept_ready 0: x86_prepared_keep once they are), or
 * neither (the scratch panels: B is not constant, the setting leaves it
 * out, or the memory is not there). */
static void find_panels(x86_state *st, qmatmul_job *job)
{
    if (!(job->call->constant_operands & RAYO_CONSTANT_B) || st->prepared_weights < X86_PREPARED_ALL)
        return;
    x86_prepared_key key = panels_key(job);
    job->kept = x86_prepared_find(st, &key);
    job->kept_ready = job->kept != NULL;
    if (!job->kept)
        job->kept = (panel_block *)(void *)cpu_alloc_floats(
            &st->cpu, panel_count(job) * (job->blocks << job->shift) * (sizeof(panel_block) / sizeof(float)));
}

/* After the call: panels it packed (packed: all of them) are kept, others freed. */
static void keep_panels(x86_state *st, const qmatmul_job *job, int packed)
{
    if (!job->kept || job->kept_ready)
        return;
    x86_prepared_key key = panels_key(job);
    if (packed)
        x86_prepared_keep(st, &key, job->kept);
    else
        cpu_free(&st->cpu, job->kept);
}

/* ---- the call ----------------------------------------------------------------- */

static int takes(const rayo_call *c)
{
    rayo_dtype bdt = RAYO_DTYPE_OF(c->dtypes, 1);
    return c->precision == RAYO_PRECISION_RELAXED && c->flags == RAYO_TRANS_B &&
           c->dtypes == RAYO_DTYPES(RAYO_DTYPE_F32, bdt, 0, RAYO_DTYPE_F32) &&
           (bdt == RAYO_DTYPE_Q4_0 || bdt == RAYO_DTYPE_Q4_K || bdt == RAYO_DTYPE_Q8_0 || bdt == RAYO_DTYPE_Q6_K) &&
           c->k >= QMATMUL_MIN_K;
}

/* The rows of A that failed the budget (f32_rows of them), through the
 * typed sgemm path at strict precision: gathered into a dense call of
 * their own, their C rows scattered back.  Runs before the integer tiles
 * so that C is untouched when it fails. */
static rayo_status f32_rows_run(void *state, const qmatmul_job *job, size_t f32_rows, x86_sgemm_fn *sgemm)
{
    const cpu_state *st = state;
    const rayo_call *c = job->call;
    size_t lda = c->lda ? c->lda : c->k, ldc = c->ldy ? c->ldy : c->n;
    float *a = cpu_alloc_floats(st, f32_rows * c->k), *y = cpu_alloc_floats(st, f32_rows * c->n);
    rayo_status s = RAYO_E_NOMEM;
    if (a && y) {
        for (size_t r = 0, i = 0; r < c->m; r++)
            if (!job->row_ok[r]) {
                memcpy(a + i * c->k, (const float *)c->a + r * lda, c->k * sizeof(float));
                if (c->beta != 0.0f)
                    memcpy(y + i * c->n, (const float *)c->y + r * ldc, c->n * sizeof(float));
                i++;
            }
        rayo_call sub = *c;
        sub.m = f32_rows, sub.a = a, sub.y = y, sub.lda = 0, sub.ldy = 0;
        sub.precision = RAYO_PRECISION_STRICT;
        s = typed_matmul_run(state, &sub, sgemm);
        for (size_t r = 0, i = 0; s == RAYO_OK && r < c->m; r++)
            if (!job->row_ok[r])
                memcpy((float *)c->y + r * ldc, y + c->n * i++, c->n * sizeof(float));
    }
    cpu_free(st, a);
    cpu_free(st, y);
    return s;
}

/* The call once A is rounded: the rows left to f32 first, then the tiles
 * (*packed: whether they ran, so every panel was packed). */
static rayo_status run_rounded(void *state, const qmatmul_job *job, size_t f32_rows, x86_sgemm_fn *sgemm, int *packed)
{
    const rayo_call *call = job->call;
    *packed = 0;
    if (f32_rows == SIZE_MAX || f32_rows == call->m)
        return RAYO_E_UNSUPPORTED; /* the whole call on the sgemm path */
    if (f32_rows) {
        rayo_status s = f32_rows_run(state, job, f32_rows, sgemm);
        if (s != RAYO_OK)
            return s;
    }
    size_t panels = panel_count(job);
    cpu_parallel(state, (panels + job->panels_per_task - 1) / job->panels_per_task, panel_task, (void *)job);
    *packed = 1;
    return RAYO_OK;
}

rayo_status x86_qmatmul_run(void *state, const rayo_call *call, x86_sgemm_fn *sgemm)
{
    const cpu_state *st = state;
    if (!takes(call))
        return RAYO_E_UNSUPPORTED;
    if (call->m == 0 || call->n == 0)
        return RAYO_OK;
    rayo_dtype bdt = RAYO_DTYPE_OF(call->dtypes, 1);
    int shift = bdt == RAYO_DTYPE_Q6_K; /* Q6_K: a pass per 16 values */
    qmatmul_job job = { call, bdt, call->k / BLOCK, shift, 0, 0,
                        { NULL, NULL, NULL, NULL }, NULL, NULL, 0, 0,
                        tile_for_cpu(bdt, ((const x86_state *)state)->avx_vnni), NULL, NULL };
    job.panels_per_task = panels_per_task(st, panel_count(&job));
    rayo_dtype_row_bytes(bdt, call->ldb ? call->ldb : call->k, &job.b_stride); /* validated by the core */
    rayo_dtype_row_bytes(bdt, call->k, &job.row_bytes);
    size_t values = call->m * call->k, blocks = call->m * job.blocks, threads = cpu_threads(st);
    find_panels((x86_state *)state, &job);
    float *a = cpu_alloc_floats(st, values / 4 + 4 * blocks + call->m + (call->m + 3) / 4);
    if (!job.kept)
        job.panels = (panel_block *)(void *)cpu_alloc_floats(st, (threads * job.blocks << job.shift) * sizeof(panel_block) / 4);
    rayo_status s = RAYO_E_UNSUPPORTED; /* out of memory too: the sgemm path may still run */
    int packed = 0;
    if (a && (job.panels || job.kept)) {
        job.a = (rounded_a){ (int8_t *)(void *)a, a + values / 4, a + values / 4 + blocks, a + values / 4 + 2 * blocks };
        job.row_dmax = a + values / 4 + 4 * blocks;
        job.row_ok = (unsigned char *)(void *)(job.row_dmax + call->m);
        s = run_rounded(state, &job, round_a(st, &job), sgemm, &packed);
    }
    keep_panels((x86_state *)state, &job, packed);
    cpu_free(st, a);
    cpu_free(st, job.panels);
    return s;
}
