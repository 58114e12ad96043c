/* SPDX-License-Identifier: MIT */
/* cuda-infer.c - launches of the inference kernels (PTX module "infer",
 * ptx/infer-gemv.c and ptx/infer-ops.c): gemv with half and quantized
 * weights, swiglu / geglu / geglu_tanh, rope, get_rows, convert (f32 <->
 * f16 / bf16, quantization to Q8_0 / Q4_0, dequantization) and the fused
 * attention (ptx/attention.c). */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "cuda-internal.h"
#include "cuda-ptx.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define THREADS 256          /* the bandwidth kernels' blocks (ptx/infer-ops.c) */
#define MAX_GRID_Y 65535u

static size_t min_size(size_t a, size_t b)
{
    return a < b ? a : b;
}

static int rope_pair_suits(const cuda_op *a, const cuda_op *b);
static size_t rope_tail(const cuda_state *st, const cuda_op *ops, size_t n, size_t count, const cuda_op *norm);
static rayo_status launch_rope_pair(cuda_state *st, CUstream stream, const cuda_op *a, const cuda_op *b);

static const rayo_ptx_gemvq_config *gemvq_config(rayo_dtype dt)
{
    for (unsigned i = 0; i < rayo_cuda_gemvq_config_count; i++)
        if (rayo_cuda_gemvq_configs[i].dtype == (int)dt)
            return &rayo_cuda_gemvq_configs[i];
    return NULL;
}

/* The formats with gemv8 kernels: the dtype, its part of the kernels' names
 * and its gemv8_* kernel. */
static const struct {
    rayo_dtype dt;
    const char *part, *kernel;
} gemv8_formats[] = {
    {RAYO_DTYPE_Q8_0, "q8_0", "gemv8_q8_0"},
    {RAYO_DTYPE_Q4_0, "q4_0", "gemv8_q4_0"},
    {RAYO_DTYPE_Q4_K, "q4_k", "gemv8_q4_k"},
    {RAYO_DTYPE_Q6_K, "q6_k", "gemv8_q6_k"},
};

/* The dtype's entry in gemv8_formats, or -1. */
static int gemv8_format(rayo_dtype dt)
{
    for (int i = 0; i < (int)(sizeof gemv8_formats / sizeof gemv8_formats[0]); i++)
        if (gemv8_formats[i].dt == dt)
            return i;
    return -1;
}

/* The dtype's part of the gemv8 kernels' names, or NULL. */
static const char *gemv8_dtype(rayo_dtype dt)
{
    int i = gemv8_format(dt);
    return i < 0 ? NULL : gemv8_formats[i].part;
}

/* The gemv8_* kernel (x rounded to 8 bits, integer products) for a relaxed
 * Q8_0 / Q4_0 / Q4_K / Q6_K gemv with long rows, or NULL.  Its loads need x
 * on 16 bytes and rows on 4 (Q4_K: 16, its vector loads; Q6_K: 2, as its
 * 210-byte blocks are, read through the 16-byte pieces that hold them); its
 * shared memory stays within the 48 KiB every block gets without opting in. */
static const char *gemv8_kernel(const cuda_state *st, const cuda_op *op, rayo_dtype dt, size_t row_bytes)
{
    size_t align = dt == RAYO_DTYPE_Q4_K ? 16 : dt == RAYO_DTYPE_Q6_K ? 2 : 4;
    if (!st->use_gemv8 || op->precision != RAYO_PRECISION_RELAXED || op->n < RAYO_PTX_GEMV8_MIN_N ||
        op->n % 32 || op->b % 16 || op->a % align || row_bytes % align || rayo_ptx_gemv8_smem(op->n) > 48 * 1024 ||
        !gemv8_dtype(dt))
        return NULL;
    return gemv8_formats[gemv8_format(dt)].kernel;
}

/* Launches gemv kernel `name` (parameters y, a, x, m, n, row bytes, alpha,
 * beta: every kernel of ptx/infer-gemv.c and ptx/infer-gemv8.c). */
static rayo_status launch_gemv_kernel(cuda_state *st, CUstream stream, const cuda_op *op, const char *name,
                                      size_t blocks, unsigned threads, size_t smem, size_t row_bytes)
{
    CUfunction fn;
    rayo_status s = cuda_function(st, MOD_INFER, name, &fn);
    if (s != RAYO_OK)
        return s;
    CUdeviceptr y = op->y, a = op->a, x = op->b;
    unsigned long long m = op->m, n = op->n, lda = row_bytes;
    float alpha = op->alpha, beta = op->beta;
    void *params[] = {&y, &a, &x, &m, &n, &lda, &alpha, &beta};
    CUresult r = cuda_launch_kernel(st, fn, (unsigned)blocks, 1, 1, threads, 1, 1, (unsigned)smem, stream, params,
                                    NULL);
    if (r != CUDA_SUCCESS) {
        char what[96];
        snprintf(what, sizeof what, "launch of %s (%zu blocks)", name, blocks);
        return cuda_fail(st, r, what);
    }
    return RAYO_OK;
}

/* Half and quantized weights are gemv's A as stored (RAYO_TRANS_A refused). */
static rayo_status gemvq_check(const cuda_state *st, const cuda_op *op)
{
    (void)st;
    return op->flags ? RAYO_E_UNSUPPORTED : RAYO_OK;
}

/* y(m) = alpha A x + beta y, A m x n in its dtype (rows lda elements apart). */
static rayo_status launch_gemvq(cuda_state *st, CUstream stream, const cuda_op *op)
{
    rayo_dtype dt = RAYO_DTYPE_OF(op->dtypes, 0);
    const rayo_ptx_gemvq_config *cfg = gemvq_config(dt);
    size_t row_bytes;
    if (!cfg || (op->flags & RAYO_TRANS_A) || !rayo_dtype_row_bytes(dt, op->lda ? op->lda : op->n, &row_bytes))
        return RAYO_E_UNSUPPORTED;
    const char *g8 = gemv8_kernel(st, op, dt, row_bytes);
    if (g8 && op->m) /* one wave: two blocks per SM, their warps looping over rows */
        return launch_gemv_kernel(st, stream, op, g8,
                                  min_size((op->m + RAYO_PTX_GEMV8_WARPS - 1) / RAYO_PTX_GEMV8_WARPS,
                                           (size_t)st->sm_count * 2),
                                  32 * RAYO_PTX_GEMV8_WARPS, rayo_ptx_gemv8_smem(op->n), row_bytes);
    size_t smem = rayo_ptx_gemvq_smem(cfg, op->n);
    if (smem > (size_t)st->max_smem_optin)
        return RAYO_E_UNSUPPORTED;
    if (op->m == 0)
        return RAYO_OK;
    /* one wave: as many blocks as the SMs hold at once (by shared memory;
     * at most 2 of 16 warps), each looping over groups of ROWS rows */
    size_t blocks = op->m / RAYO_PTX_GEMVQ_ROWS + (op->m % RAYO_PTX_GEMVQ_ROWS != 0);
    size_t per_sm = ((size_t)st->max_smem_optin + 1024) / (smem + 1024);
    per_sm = per_sm < 1 ? 1 : per_sm > 2 ? 2 : per_sm;
    blocks = min_size(blocks, (size_t)st->sm_count * per_sm);
    return launch_gemv_kernel(st, stream, op, cfg->name, blocks, 32 * RAYO_PTX_GEMVQ_ROWS, smem, row_bytes);
}

/* ---- gemvs of one x in one launch (gemv8x_*) ----------------------------- */
/* Whether o runs through gemv8 like first, on the same x, n, row bytes and
 * scalars (each row then computes exactly as in its own launch). */
static int gemv8_alike(const cuda_state *st, const cuda_op *first, const cuda_op *o)
{
    rayo_dtype dt = RAYO_DTYPE_OF(o->dtypes, 0);
    size_t row_bytes;
    if (o->op != RAYO_OP_GEMV || o->dtypes != first->dtypes || !o->dtypes || (o->flags & RAYO_TRANS_A) ||
        !o->m || o->b != first->b || o->n != first->n || o->lda != first->lda || o->alpha != first->alpha ||
        o->beta != first->beta || o->precision != first->precision ||
        !rayo_dtype_row_bytes(dt, o->lda ? o->lda : o->n, &row_bytes))
        return 0;
    return gemv8_kernel(st, o, dt, row_bytes) != NULL;
}

/* Whether o's y leaves every operand of ops[0 .. n) alone and theirs o's:
 * running them at once then gives what running them in turn gives. */
static int independent(const cuda_op *ops, size_t n, const cuda_op *o, size_t row_bytes)
{
    size_t xb = 4 * o->n;
    for (size_t i = 0; i < n; i++) {
        const cuda_op *p = &ops[i];
        if (cuda_overlap(o->y, 4 * o->m, p->y, 4 * p->m) || cuda_overlap(o->y, 4 * o->m, p->a, p->m * row_bytes) ||
            cuda_overlap(p->y, 4 * p->m, o->a, o->m * row_bytes))
            return 0;
    }
    return !cuda_overlap(o->y, 4 * o->m, o->b, xb) && !cuda_overlap(o->y, 4 * o->m, o->a, o->m * row_bytes);
}

/* Whether swiglu s of gate's and up's outputs runs in their launch
 * (gemv8s_*): one row of each (a decode step), s's output apart from
 * everything else the launch reads or writes, or in place of gate's or
 * up's output (written by the same lane after it). */
static int swiglu_suits(const cuda_op *gate, const cuda_op *up, const cuda_op *s, size_t row_bytes)
{
    size_t yb = 4 * gate->m;
    if (s->op != RAYO_OP_SWIGLU || s->dtypes || s->m != 1 || s->n != gate->m || up->m != gate->m ||
        s->a != gate->y || s->b != up->y)
        return 0;
    return (s->y == gate->y || !cuda_overlap(s->y, yb, gate->y, yb)) &&
           (s->y == up->y || !cuda_overlap(s->y, yb, up->y, yb)) && !cuda_overlap(s->y, yb, gate->b, 4 * gate->n) &&
           !cuda_overlap(s->y, yb, gate->a, gate->m * row_bytes) && !cuda_overlap(s->y, yb, up->a, up->m * row_bytes);
}

/* The gemv8 ops at ops[0] that run as one launch (gemv8x_*, or gemv8s_*
 * with swiglu: 3), or 0 where ops[0] takes no gemv8 kernel. */
static size_t gemv8_group(const cuda_state *st, const cuda_op *ops, size_t count)
{
    size_t row_bytes = 0, n = 1;
    if (!count || !gemv8_alike(st, &ops[0], &ops[0]) ||
        !rayo_dtype_row_bytes(RAYO_DTYPE_OF(ops[0].dtypes, 0), ops[0].lda ? ops[0].lda : ops[0].n, &row_bytes) ||
        !independent(ops, 0, &ops[0], row_bytes))
        return 0;
    while (n < count && n < RAYO_PTX_GEMV8_PARTS && gemv8_alike(st, &ops[0], &ops[n]) &&
           independent(ops, n, &ops[n], row_bytes))
        n++;
    if (n == 2 && count > 2 && swiglu_suits(&ops[0], &ops[1], &ops[2], row_bytes))
        return 3;
    return n;
}

/* Whether rmsnorm `norm` of one row runs in the launch of the gemv8 group
 * ops[0 .. n) that reads its output (gemv8xn_*, gemv8sn_*): every block
 * computes the row's rstd as the rmsnorm kernels do and normalises x as it
 * stages it, block 0 also stores the output.  Nothing the launch writes may
 * touch x or gamma, and the output must be apart from both. */
static int norm_suits(const cuda_op *norm, const cuda_op *ops, size_t n)
{
    size_t b = 4 * norm->n;
    if (norm->op != RAYO_OP_RMSNORM || norm->dtypes || norm->m != 1 || norm->n != ops[0].n || norm->y != ops[0].b ||
        !norm->b || norm->a % 16 || norm->b % 16 || cuda_overlap(norm->a, b, norm->y, b) ||
        cuda_overlap(norm->b, b, norm->y, b))
        return 0;
    for (size_t i = 0; i < n; i++) {
        size_t yb = 4 * (ops[i].op == RAYO_OP_SWIGLU ? ops[i].n : ops[i].m);
        if (cuda_overlap(ops[i].y, yb, norm->a, b) || cuda_overlap(ops[i].y, yb, norm->b, b))
            return 0;
    }
    return 1;
}

size_t cuda_launch_group(const cuda_state *st, const cuda_op *ops, size_t count)
{
    if (count >= 2 && (cuda_add_rmsnorm_suits(st, &ops[0], &ops[1]) || rope_pair_suits(&ops[0], &ops[1])))
        return 2;
    if (count >= 2 && ops[0].op == RAYO_OP_RMSNORM && st->fuse_norm) {
        size_t n = gemv8_group(st, ops + 1, count - 1);
        return n && norm_suits(&ops[0], ops + 1, n) ? 1 + n + rope_tail(st, ops + 1, n, count - 1, &ops[0]) : 1;
    }
    size_t n = gemv8_group(st, ops, count);
    return n ? n + rope_tail(st, ops, n, count, NULL) : 1;
}

/* gemv8<kind>_<dtype> over `rows` warp rows of n columns, one wave: two
 * blocks per SM, their warps looping over rows. */
static rayo_status launch_gemv8_grid(cuda_state *st, CUstream stream, const char *kind, rayo_dtype dt, size_t rows,
                                     size_t n, void **params)
{
    char name[32];
    snprintf(name, sizeof name, "gemv8%s_%s", kind, gemv8_dtype(dt));
    CUfunction fn;
    rayo_status s = cuda_function(st, MOD_INFER, name, &fn);
    if (s != RAYO_OK)
        return s;
    size_t blocks = min_size((rows + RAYO_PTX_GEMV8_WARPS - 1) / RAYO_PTX_GEMV8_WARPS, (size_t)st->sm_count * 2);
    CUresult r = cuda_launch_kernel(st, fn, (unsigned)blocks, 1, 1, 32 * RAYO_PTX_GEMV8_WARPS, 1, 1,
                                    (unsigned)rayo_ptx_gemv8_smem(n), stream, params, NULL);
    return r == CUDA_SUCCESS ? RAYO_OK : cuda_fail(st, r, name);
}

/* The rmsnorm prologue's parameters (p_gamma, p_xn, p_eps) at tail. */
typedef struct norm_args {
    CUdeviceptr gamma, xn;
    float eps;
} norm_args;

static void norm_params(const cuda_op *norm, norm_args *na, void **tail)
{
    *na = (norm_args){norm->b, norm->y, norm->alpha};
    tail[0] = &na->gamma, tail[1] = &na->xn, tail[2] = &na->eps;
}

/* The rope parameters of gemv8xr_* / gemv8xnr_* (p_r0 .. p_scale) at tail,
 * for ropes ops[n], ops[n + 1] of parts of ops[0 .. n). */
typedef struct fused_rope_args {
    CUdeviceptr out[RAYO_PTX_GEMV8_PARTS], pos;
    unsigned long long head_dim, neox;
    double ratio, scale;
} fused_rope_args;

static void fused_rope_params(const cuda_op *ops, size_t n, fused_rope_args *fa, void **tail);

/* ops[0 .. n) as one gemv8x_* grid: parts past n have no rows; after
 * rmsnorm `norm` of x (gemv8xn_*) when not NULL; with the ropes of q and k
 * (gemv8xr_*, gemv8xnr_*) where the last two ops are those (rope_tail). */
static rayo_status launch_gemv8x(cuda_state *st, CUstream stream, const cuda_op *ops, size_t n, const cuda_op *norm)
{
    rayo_dtype dt = RAYO_DTYPE_OF(ops[0].dtypes, 0);
    size_t row_bytes = 0, rows = 0, ropes = ops[n - 1].op == RAYO_OP_ROPE ? 2 : 0;
    if (!rayo_dtype_row_bytes(dt, ops[0].lda ? ops[0].lda : ops[0].n, &row_bytes))
        return RAYO_E_UNSUPPORTED; /* cuda_launch_group checked it */
    n -= ropes;
    CUdeviceptr y[RAYO_PTX_GEMV8_PARTS] = {0}, a[RAYO_PTX_GEMV8_PARTS] = {0}, x = norm ? norm->a : ops[0].b;
    unsigned long long m[RAYO_PTX_GEMV8_PARTS] = {0}, cols = ops[0].n, lda = row_bytes;
    float alpha = ops[0].alpha, beta = ops[0].beta;
    norm_args na;
    fused_rope_args fa;
    void *params[4 * RAYO_PTX_GEMV8_PARTS + 13];
    for (size_t i = 0; i < RAYO_PTX_GEMV8_PARTS; i++) {
        if (i < n) {
            y[i] = ops[i].y, a[i] = ops[i].a, m[i] = ops[i].m;
            rows += ops[i].m;
        }
        params[3 * i] = &y[i], params[3 * i + 1] = &a[i], params[3 * i + 2] = &m[i];
    }
    void **tail = params + 3 * RAYO_PTX_GEMV8_PARTS;
    tail[0] = &x, tail[1] = &cols, tail[2] = &lda, tail[3] = &alpha, tail[4] = &beta;
    tail += 5;
    if (norm)
        norm_params(norm, &na, tail), tail += 3;
    if (ropes)
        fused_rope_params(ops, n, &fa, tail);
    static const char *const kinds[2][2] = {{"x", "xr"}, {"xn", "xnr"}};
    return launch_gemv8_grid(st, stream, kinds[norm != NULL][ropes != 0], dt, rows, ops[0].n, params);
}

/* gate ops[0], up ops[1] and swiglu ops[2] as one gemv8s_* grid; after
 * rmsnorm `norm` of x (gemv8sn_*) when not NULL. */
static rayo_status launch_gemv8s(cuda_state *st, CUstream stream, const cuda_op *ops, const cuda_op *norm)
{
    rayo_dtype dt = RAYO_DTYPE_OF(ops[0].dtypes, 0);
    size_t row_bytes = 0;
    if (!rayo_dtype_row_bytes(dt, ops[0].lda ? ops[0].lda : ops[0].n, &row_bytes))
        return RAYO_E_UNSUPPORTED; /* cuda_launch_group checked it */
    CUdeviceptr ys = ops[2].y, y0 = ops[0].y, a0 = ops[0].a, y1 = ops[1].y, a1 = ops[1].a;
    CUdeviceptr x = norm ? norm->a : ops[0].b;
    unsigned long long m = ops[0].m, cols = ops[0].n, lda = row_bytes;
    float alpha = ops[0].alpha, beta = ops[0].beta;
    norm_args na;
    void *params[14] = {&ys, &y0, &a0, &y1, &a1, &x, &m, &cols, &lda, &alpha, &beta};
    if (norm)
        norm_params(norm, &na, params + 11);
    return launch_gemv8_grid(st, stream, norm ? "sn" : "s", dt, m, ops[0].n, params);
}

/* rmsnorm ops[0] and the gemv8 group ops[1 .. n) of its output in one launch */
static rayo_status launch_norm_gemv8(cuda_state *st, CUstream stream, const cuda_op *ops, size_t n)
{
    if (n == 4 && ops[3].op == RAYO_OP_SWIGLU)
        return launch_gemv8s(st, stream, ops + 1, &ops[0]);
    return launch_gemv8x(st, stream, ops + 1, n - 1, &ops[0]);
}

rayo_status cuda_launch_ops(cuda_state *st, CUstream stream, const cuda_op *ops, size_t n)
{
    if (n == 1)
        return cuda_launch_op(st, stream, &ops[0]);
    if (ops[0].op == RAYO_OP_ROPE)
        return launch_rope_pair(st, stream, &ops[0], &ops[1]);
    if (ops[0].op == RAYO_OP_RMSNORM)
        return launch_norm_gemv8(st, stream, ops, n);
    if (n == 3 && ops[2].op == RAYO_OP_SWIGLU)
        return launch_gemv8s(st, stream, ops, NULL);
    return ops[0].op == RAYO_OP_ADD ? cuda_launch_add_rmsnorm(st, stream, &ops[0], &ops[1])
                                    : launch_gemv8x(st, stream, ops, n, NULL);
}

static rayo_status launch(cuda_state *st, CUstream stream, const char *name, size_t gx, size_t gy, void **params)
{
    CUfunction fn;
    rayo_status s = cuda_function(st, MOD_INFER, name, &fn);
    if (s != RAYO_OK)
        return s;
    CUresult r = cuda_launch_kernel(st, fn, (unsigned)(gx ? gx : 1), (unsigned)(gy ? gy : 1), 1, THREADS, 1, 1,
                                         0, stream, params, NULL);
    if (r != CUDA_SUCCESS) {
        char what[96];
        snprintf(what, sizeof what, "launch of %s", name);
        return cuda_fail(st, r, what);
    }
    return RAYO_OK;
}

/* A grid over rows x columns: columns in blocks of THREADS, rows up to the
 * grid's limit (the kernels loop over the rest). */
static void row_grid(const cuda_state *st, size_t rows, size_t cols, size_t *gx, size_t *gy)
{
    *gx = min_size((cols + THREADS - 1) / THREADS, 1024);
    *gy = min_size(rows, min_size(MAX_GRID_Y, (size_t)st->sm_count * 64 / (*gx ? *gx : 1) + 1));
}

static rayo_status launch_glu(cuda_state *st, CUstream stream, const cuda_op *op)
{
    static const char *const names[] = {"glu_swiglu", "glu_geglu", "glu_geglu_tanh"};
    CUdeviceptr y = op->y, a = op->a, b = op->b;
    unsigned long long m = op->m, n = op->n, lda = op->lda ? op->lda : op->n, ldb = op->ldb ? op->ldb : op->n,
                       ldy = op->ldy ? op->ldy : op->n;
    void *params[] = {&y, &a, &b, &m, &n, &lda, &ldb, &ldy};
    size_t gx, gy;
    row_grid(st, op->m, op->n, &gx, &gy);
    return launch(st, stream, names[op->op - RAYO_OP_SWIGLU], gx, gy, params);
}

/* y[r] = row idx[r] (or row r when idx is 0) of a table of k rows in dtype
 * dt, as f32; m rows of n values. */
static rayo_status launch_rows(cuda_state *st, CUstream stream, rayo_dtype dt, CUdeviceptr y, CUdeviceptr table,
                               CUdeviceptr idx, size_t m, size_t n, size_t k, size_t lda, size_t ldy)
{
    size_t row_bytes;
    if (!rayo_dtype_row_bytes(dt, lda ? lda : n, &row_bytes) || !rayo_dtype_name(dt))
        return RAYO_E_UNSUPPORTED;
    char name[32];
    snprintf(name, sizeof name, "rows_%s", rayo_dtype_name(dt));
    unsigned long long mm = m, nn = n, kk = k, rb = row_bytes, ly = ldy ? ldy : n;
    void *params[] = {&y, &table, &idx, &mm, &nn, &kk, &rb, &ly};
    size_t gx, gy;
    row_grid(st, m, n, &gx, &gy);
    return launch(st, stream, name, gx, gy, params);
}

rayo_status cuda_launch_dequant_rows(cuda_state *st, CUstream stream, rayo_dtype dt, CUdeviceptr y,
                                     CUdeviceptr table, size_t m, size_t n, size_t lda)
{
    return launch_rows(st, stream, dt, y, table, 0, m, n, m, lda, 0);
}

int cuda_check_host_call(const cuda_state *st, const rayo_call *call)
{
    if (call->op != RAYO_OP_GET_ROWS)
        return 0;
    const int32_t *idx = call->b;
    for (size_t r = 0; r < call->m; r++)
        if (idx[r] < 0 || (size_t)idx[r] >= call->k) {
            st->host->set_error(st->host, "cuda: get_rows: index %ld of row %zu is outside the table's %zu rows",
                                (long)idx[r], r, call->k);
            return -1;
        }
    return 0;
}

static rayo_status launch_convert(cuda_state *st, CUstream stream, const cuda_op *op)
{
    rayo_dtype from = RAYO_DTYPE_OF(op->dtypes, 0);
    if (rayo_dtype_is_block(from) && RAYO_DTYPE_OF(op->dtypes, 3) == RAYO_DTYPE_F32)
        return launch_rows(st, stream, from, op->y, op->a, 0, 1, op->n, 1, 0, 0);
    rayo_dtype to = RAYO_DTYPE_OF(op->dtypes, 3);
    if (from == RAYO_DTYPE_F32 && (to == RAYO_DTYPE_Q8_0 || to == RAYO_DTYPE_Q4_0)) {
        CUdeviceptr y = op->y, a = op->a;
        unsigned long long blocks = op->n / 32;
        void *params[] = {&y, &a, &blocks};
        return launch(st, stream, to == RAYO_DTYPE_Q8_0 ? "quant_q8_0" : "quant_q4_0",
                      min_size((blocks + THREADS - 1) / THREADS, (size_t)st->sm_count * 8), 1, params);
    }
    const char *name;
    switch (op->dtypes) {
    case RAYO_DTYPES(RAYO_DTYPE_F32, 0, 0, RAYO_DTYPE_F16): name = "cvt_f32_f16"; break;
    case RAYO_DTYPES(RAYO_DTYPE_F32, 0, 0, RAYO_DTYPE_BF16): name = "cvt_f32_bf16"; break;
    case RAYO_DTYPES(RAYO_DTYPE_F16, 0, 0, RAYO_DTYPE_F32): name = "cvt_f16_f32"; break;
    case RAYO_DTYPES(RAYO_DTYPE_BF16, 0, 0, RAYO_DTYPE_F32): name = "cvt_bf16_f32"; break;
    default: return RAYO_E_UNSUPPORTED;
    }
    CUdeviceptr y = op->y, a = op->a;
    unsigned long long n = op->n;
    void *params[] = {&y, &a, &n};
    return launch(st, stream, name, min_size((op->n + THREADS - 1) / THREADS, (size_t)st->sm_count * 8), 1, params);
}

/* A rope's kernel parameters (p_y .. p_scale of ptx/infer-ops.c), from its op. */
typedef struct rope_args {
    CUdeviceptr y, x, pos;
    unsigned long long m, cols, ldx, ldy, hsx, hsy, half, head_dim, rot;
    double ratio, scale;
} rope_args;

/* *r and 1, or 0 where the op's parameters are not valid; r->m == 0:
 * nothing to do. */
static int rope_setup(const cuda_op *op, rope_args *r)
{
    const rayo_rope_params *p = op->params;
    size_t rot = p->rot_dims ? p->rot_dims : p->head_dim, dense = p->n_heads * p->head_dim;
    if (rot % 2 || rot > p->head_dim || (p->mode != RAYO_ROPE_NORM && p->mode != RAYO_ROPE_NEOX))
        return 0;
    *r = (rope_args){op->y, op->a, op->b, op->m, p->n_heads * (rot / 2), op->lda ? op->lda : dense,
                     op->ldy ? op->ldy : dense, p->head_stride_x ? p->head_stride_x : p->head_dim,
                     p->head_stride_y ? p->head_stride_y : p->head_dim, rot / 2, p->head_dim, rot,
                     pow((double)p->freq_base, -2.0 / (double)rot), p->freq_scale};
    if (p->n_heads == 0 || p->head_dim == 0)
        r->m = 0;
    return 1;
}

static rayo_status launch_rope(cuda_state *st, CUstream stream, const cuda_op *op)
{
    rope_args r;
    const rayo_rope_params *p = op->params;
    if (!p)
        return RAYO_E_UNSUPPORTED;
    if (!rope_setup(op, &r)) {
        st->host->set_error(st->host, "cuda: rope: rot_dims %zu must be even and at most head_dim %zu, mode NORM "
                            "or NEOX", (size_t)(p->rot_dims ? p->rot_dims : p->head_dim), p->head_dim);
        return RAYO_E_INVALID;
    }
    if (r.m == 0)
        return RAYO_OK;
    void *params[] = {&r.y, &r.x, &r.pos, &r.m, &r.cols, &r.ldx, &r.ldy, &r.hsx, &r.hsy, &r.half, &r.head_dim,
                      &r.rot, &r.ratio, &r.scale};
    size_t gx, gy;
    row_grid(st, r.m, r.cols, &gx, &gy);
    return launch(st, stream, p->mode == RAYO_ROPE_NEOX ? "rope_neox" : "rope_norm", gx, gy, params);
}

/* ---- two ropes in one launch (rope2_*) ------------------------------------ */
/* Bytes from its start that a rope's x or y (token and head strides ld,
 * hs) spans. */
static size_t rope_span(const rope_args *r, const rayo_rope_params *p, unsigned long long ld, unsigned long long hs)
{
    return 4 * ((size_t)(r->m - 1) * ld + (p->n_heads - 1) * hs + p->head_dim);
}

/* Whether rope b runs with rope a as one rope2_* launch: the same tokens,
 * positions and frequencies, and neither's output touching what the other
 * reads or writes (so running them at once gives what running them in turn
 * gives, each pair computed as alone). */
static int rope_pair_suits(const cuda_op *a, const cuda_op *b)
{
    const rayo_rope_params *p = a->params, *q = b->params;
    rope_args ra, rb;
    if (a->op != RAYO_OP_ROPE || b->op != RAYO_OP_ROPE || !p || !q || a->dtypes != b->dtypes || a->m != b->m ||
        a->b != b->b || p->mode != q->mode || p->rot_dims != q->rot_dims || p->head_dim != q->head_dim ||
        p->freq_base != q->freq_base || p->freq_scale != q->freq_scale || !rope_setup(a, &ra) ||
        !rope_setup(b, &rb) || !ra.m || !rb.m)
        return 0;
    size_t ax = rope_span(&ra, p, ra.ldx, ra.hsx), ay = rope_span(&ra, p, ra.ldy, ra.hsy);
    size_t bx = rope_span(&rb, q, rb.ldx, rb.hsx), by = rope_span(&rb, q, rb.ldy, rb.hsy), pb = 4 * (size_t)ra.m;
    return !cuda_overlap(ra.y, ay, rb.x, bx) && !cuda_overlap(ra.y, ay, rb.y, by) &&
           !cuda_overlap(rb.y, by, ra.x, ax) && !cuda_overlap(ra.y, ay, ra.pos, pb) &&
           !cuda_overlap(rb.y, by, ra.pos, pb);
}

static rayo_status launch_rope_pair(cuda_state *st, CUstream stream, const cuda_op *a, const cuda_op *b)
{
    rope_args r, r2;
    if (!rope_setup(a, &r) || !rope_setup(b, &r2))
        return RAYO_E_INVALID; /* rope_pair_suits checked them */
    void *params[] = {&r.y,    &r.x,       &r.pos,  &r.m,    &r.cols, &r.ldx,  &r.ldy,   &r.hsx,
                      &r.hsy,  &r.half,    &r.head_dim, &r.rot, &r.ratio, &r.scale, &r2.y, &r2.x,
                      &r2.cols, &r2.ldx,   &r2.ldy, &r2.hsx, &r2.hsy};
    size_t gx, gy;
    row_grid(st, r.m, r.cols + r2.cols, &gx, &gy);
    const rayo_rope_params *p = a->params;
    return launch(st, stream, p->mode == RAYO_ROPE_NEOX ? "rope2_neox" : "rope2_norm", gx, gy, params);
}

/* ---- the ropes of q and k in the products' launch (gemv8xr_*, gemv8xnr_*) -- */
/* The part of the gemv8x group ops[0 .. n) whose output rope r takes as it
 * stands: one token, every dimension rotated, heads dense, its x the
 * part's whole y; -1 if none. */
static int roped_part(const cuda_op *ops, size_t n, const cuda_op *r)
{
    const rayo_rope_params *p = r->params;
    if (r->m != 1 || (p->rot_dims && p->rot_dims != p->head_dim) || p->head_dim < 2 ||
        (p->head_stride_x && p->head_stride_x != p->head_dim) || (p->head_stride_y && p->head_stride_y != p->head_dim))
        return -1;
    for (size_t i = 0; i < n; i++)
        if (ops[i].y == r->a && ops[i].m == p->n_heads * p->head_dim)
            return (int)i;
    return -1;
}

/* Whether bytes [at, at + bytes) are apart from everything the launch of
 * ops[0 .. n) (after rmsnorm `norm` when not NULL) reads or writes. */
static int apart_from_launch(const cuda_op *ops, size_t n, const cuda_op *norm, CUdeviceptr at, size_t bytes)
{
    size_t row_bytes = 0, xb = 4 * ops[0].n;
    rayo_dtype_row_bytes(RAYO_DTYPE_OF(ops[0].dtypes, 0), ops[0].lda ? ops[0].lda : ops[0].n, &row_bytes);
    if (cuda_overlap(at, bytes, ops[0].b, xb) ||
        (norm && (cuda_overlap(at, bytes, norm->a, xb) || cuda_overlap(at, bytes, norm->b, xb) ||
                  cuda_overlap(at, bytes, norm->y, xb))))
        return 0;
    for (size_t i = 0; i < n; i++)
        if (cuda_overlap(at, bytes, ops[i].y, 4 * ops[i].m) || cuda_overlap(at, bytes, ops[i].a, ops[i].m * row_bytes))
            return 0;
    return 1;
}

/* 2 where ropes ops[n] and ops[n + 1] (one token each, a rope pair) run in
 * the launch of the gemv8x group ops[0 .. n) (after rmsnorm `norm` when not
 * NULL): each takes a different part's output as it stands (roped_part),
 * that part starting at an even row of the launch (gemv8xr_*: a pair's two
 * rows go to two warps of a block), its output in place or apart from all
 * the launch touches, and the positions apart from what it writes; else 0.
 * The products then are as in gemv8x_*, the ropes as in rope2_*.  Only where
 * the launch's warps take one row each (the rows fit one pass of the grid):
 * with more, each row pair's exchange holds its two warps back from their
 * next rows, and on an H200 a 7B-shape decode (12288 rows of 4096 values)
 * ran 8% slower fused than with its own rope launch, where a TinyLlama-shape
 * one (2560 rows) ran 6% faster. */
static size_t rope_tail(const cuda_state *st, const cuda_op *ops, size_t n, size_t count, const cuda_op *norm)
{
    if (!st->fuse_rope || n + 2 > count || ops[n - 1].op != RAYO_OP_GEMV || !rope_pair_suits(&ops[n], &ops[n + 1]))
        return 0;
    size_t rows = 0;
    for (size_t i = 0; i < n; i++)
        rows += ops[i].m;
    if (rows > (size_t)st->sm_count * 2 * RAYO_PTX_GEMV8_WARPS)
        return 0;
    int part[2] = {roped_part(ops, n, &ops[n]), roped_part(ops, n, &ops[n + 1])};
    if (part[0] < 0 || part[1] < 0 || part[0] == part[1] || !apart_from_launch(ops, n, norm, ops[n].b, 4))
        return 0;
    for (int j = 0; j < 2; j++) {
        const cuda_op *r = &ops[n + j];
        size_t first = 0;
        for (int i = 0; i < part[j]; i++)
            first += ops[i].m;
        if (first % 2 || (r->y != r->a && !apart_from_launch(ops, n, norm, r->y, 4 * ops[part[j]].m)))
            return 0;
    }
    return 2;
}

static void fused_rope_params(const cuda_op *ops, size_t n, fused_rope_args *fa, void **tail)
{
    const rayo_rope_params *p = ops[n].params;
    rope_args r;
    (void)rope_setup(&ops[n], &r); /* rope_tail checked it */
    *fa = (fused_rope_args){{0}, ops[n].b, p->head_dim, p->mode == RAYO_ROPE_NEOX, r.ratio, r.scale};
    for (size_t j = n; j < n + 2; j++)
        fa->out[roped_part(ops, n, &ops[j])] = ops[j].y;
    for (size_t i = 0; i < RAYO_PTX_GEMV8_PARTS; i++)
        tail[i] = &fa->out[i];
    tail += RAYO_PTX_GEMV8_PARTS;
    tail[0] = &fa->pos, tail[1] = &fa->head_dim, tail[2] = &fa->neox, tail[3] = &fa->ratio, tail[4] = &fa->scale;
}

/* ---- attention ------------------------------------------------------------ */
/* ptx/attention.c, attn_warp_*: a warp per (key range, 4 query heads of a
 * KV group, query), attn_merge to combine the ranges.  Key ranges are whole
 * tiles of 32 keys, enough of them that about 2048 warps share the cache
 * (decode: one query), at most 256 (attn_merge).  Where the ranges are few
 * (a short cache: RAYO_PTX_ATTN_BLOCK_WARPS), attn_block_* runs them as the
 * warps of one block that merges them itself, the same results in one
 * launch.  Relaxed calls with aligned rows and head_dim up to 64 take the
 * _relaxed variants (float32 scores, sums and accumulators) with the same
 * plan and merges (at head_dim 128 they were slower than the float64 ones in
 * a 7B-shape prefill on an H200: 190 against 139 us a call at 128 tokens,
 * 2.11 against 1.42 ms at 512):
 * on an H200 they were slower with about 4096 warps (12-19% with 32 KV
 * heads, the same with 4) and with ranges of at least 128 keys (1.35-2x at
 * 192 and 4096 keys).  Relaxed decode steps on sm_90 take attn_dec_*
 * instead (attn_decode_cluster, below), relaxed prompts with an f16 or f32
 * cache attn_pf_* (attn_prefill, below). */
#define ATTN_WANT_WARPS 2048
#define ATTN_MAX_SPLITS 256

typedef struct attn_plan {
    size_t ng, nb, chunk, splits; /* warps per KV group, warps per query, keys per range, ranges */
} attn_plan;

static attn_plan attn_plan_of(const rayo_attention_params *p)
{
    attn_plan a;
    size_t group = p->n_heads / p->n_kv_heads, per_q;
    a.ng = (group + RAYO_PTX_ATTN_HEADS_PER_WARP - 1) / RAYO_PTX_ATTN_HEADS_PER_WARP;
    a.nb = p->n_kv_heads * a.ng;
    per_q = a.nb * p->n_q;
    size_t want = per_q >= ATTN_WANT_WARPS ? 1 : (ATTN_WANT_WARPS + per_q - 1) / per_q;
    if (want > ATTN_MAX_SPLITS)
        want = ATTN_MAX_SPLITS;
    a.chunk = (p->n_kv + want - 1) / want;
    a.chunk = (a.chunk + 31) / 32 * 32;
    a.splits = (p->n_kv + a.chunk - 1) / a.chunk;
    return a;
}

/* The partial results of the KV splits. */
static size_t attention_scratch(const cuda_state *st, const cuda_op *op)
{
    (void)st;
    const rayo_attention_params *p = op->params;
    if (!p || !p->n_q || !p->n_heads || !p->head_dim || !p->n_kv_heads ||
        p->n_heads % p->n_kv_heads || !p->n_kv)
        return 0;
    return p->n_q * p->n_heads * attn_plan_of(p).splits * (2 + p->head_dim) * sizeof(double);
}

/* K and V rows start on 16 bytes and hold whole 16-byte loads of 8 values:
 * the kernels' vector loads */
static int attn_rows_aligned(const cuda_op *op, const rayo_attention_params *p, size_t esize,
                             unsigned long long kt, unsigned long long kh, unsigned long long vt,
                             unsigned long long vh)
{
    return p->head_dim % 8 == 0 && op->b % 16 == 0 && op->c % 16 == 0 && kt * esize % 16 == 0 &&
           kh * esize % 16 == 0 && vt * esize % 16 == 0 && vh * esize % 16 == 0;
}

/* attn_dec_* (module attn_cluster, sm_90): relaxed calls of at most
 * ATTN_DEC_MAX_Q queries with aligned rows (a decode step), head_dim up to
 * 128.  A cluster of 2, 4 or 8 CTAs a (query, head): the fewest whose
 * warps take every key in one tile each (8 keys a warp at head_dim 128, 16
 * at 64), 8 past that, so that a replayed decode keeps one kernel (and its
 * graph) from 129 keys on at head_dim 128.  Past ATTN_DEC_MAX_KV keys a
 * CTA takes HG heads of one KV group (attn_dec_*_c8_g<HG>: 4, 2 or 1, the
 * most that divides the group), so that it reads their K and V rows once,
 * and the keys are split over S clusters (float64 partials in the scratch,
 * attn_merge) so that the CTAs fill the GPU (attn_dec_splits).  On an
 * H200 (cuda-bench-infer --attention, one query, 32 heads, f16, against
 * the older kernels in the same run): 32 KV heads, head_dim 128, 4096 keys
 * 25.2 against 47.2 us (S = 1), 32768 keys 130.9 against 243.6 (S = 2;
 * 154.5 with S = 1); head_dim 64 at 32768 keys 70.8 against 111.7 (S = 2;
 * 83.2 with S = 1); 4 KV heads, head_dim 64 (HG = 4): 4096 keys 14.1
 * against 15.7 (S = 4; 17.4 with S = 8), 32768 keys 36.2 against 39.5
 * (S = 4; 38.2 with S = 8).  Groups whose heads would read the rows
 * more than twice (3, 5, 6, 7 .. heads) keep attn_warp_* there: one head a
 * CTA, reading an 8-head group's rows 8 times, was slower than attn_warp_*
 * on an H200 (72 against 40 us, 32768 keys, 4 KV heads, head_dim 64). */
#define ATTN_DEC_MAX_Q 4
#define ATTN_DEC_MAX_KV 2048
#define ATTN_DEC_WANT_CTAS 256
#define ATTN_DEC_MIN_TILES 16

/* heads a CTA at n_kv keys: 1 for short caches, else the most (<= 4) that
 * divide the group (2 heads a CTA for an 8-head group: 42.3 against 35.6 us
 * at 32768 keys, 4 KV heads, head_dim 64, on an H200) */
static size_t attn_dec_heads(const rayo_attention_params *p)
{
    size_t group = p->n_heads / p->n_kv_heads;
    if (p->n_kv <= ATTN_DEC_MAX_KV)
        return 1;
    return group % 4 == 0 ? 4 : group % 2 == 0 ? 2 : 1;
}

static int attn_decode_cluster(const cuda_state *st, const cuda_op *op, const rayo_attention_params *p, int vec)
{
    size_t group = p->n_heads / p->n_kv_heads;
    return st->use_attn_cluster && st->ptx_target >= 90 && vec && op->precision == RAYO_PRECISION_RELAXED &&
           p->head_dim <= 128 && p->n_q <= ATTN_DEC_MAX_Q &&
           (p->n_kv <= ATTN_DEC_MAX_KV || group / attn_dec_heads(p) <= 2);
}

/* Clusters over the keys: at least ATTN_DEC_WANT_CTAS CTAs (two an SM of
 * an H200), twice that while each warp keeps ATTN_DEC_MIN_TILES tiles; at
 * most a tile a warp and the splits attention_scratch holds. */
static size_t attn_dec_splits(const rayo_attention_params *p, size_t cluster, size_t hg, size_t tile_keys)
{
    size_t ctas = cluster * (p->n_heads / hg) * p->n_q, s = (ATTN_DEC_WANT_CTAS + ctas - 1) / ctas,
           tiles = (p->n_kv + tile_keys - 1) / tile_keys, warps = cluster * RAYO_PTX_ATTN_DEC_WARPS,
           most = attn_plan_of(p).splits;
    while (ctas * s < 2 * ATTN_DEC_WANT_CTAS && 2 * s * warps * ATTN_DEC_MIN_TILES <= tiles)
        s *= 2;
    if (s * warps > tiles)
        s = tiles / warps;
    return s < 1 ? 1 : s > most ? most : s;
}

/* attn_merge over the splits' partial results (none to merge: nothing);
 * args: launch_attention's pd (out 0, ot 15, oh 16, part 18). */
static rayo_status launch_attn_merge(cuda_state *st, CUstream stream, const rayo_attention_params *p, void **args,
                                     size_t splits)
{
    if (splits == 1)
        return RAYO_OK;
    unsigned long long n_q = p->n_q, dd = p->head_dim, sp = splits;
    void *p2[] = {args[0], args[18], &n_q, &dd, &sp, args[15], args[16]};
    CUfunction fn;
    rayo_status s = cuda_function(st, MOD_INFER, "attn_merge", &fn);
    if (s != RAYO_OK)
        return s;
    CUresult r = cuda_launch_kernel(st, fn, (unsigned)p->n_heads, (unsigned)p->n_q, 1, 256, 1, 1, 0, stream, p2, NULL);
    return r == CUDA_SUCCESS ? RAYO_OK : cuda_fail(st, r, "launch of attn_merge");
}

/* args: launch_attention's pd (out 0, ot 15, oh 16, part 18, as attn_dec_* takes them) */
static rayo_status launch_attn_decode(cuda_state *st, CUstream stream, const cuda_op *op, void **args)
{
    const rayo_attention_params *p = op->params;
    size_t dm = p->head_dim <= 64 ? 64 : 128, tile_keys = 4 * (32 / (dm / 8)), cluster = 2,
           hg = attn_dec_heads(p);
    while (cluster < RAYO_PTX_ATTN_DEC_MAX_CLUSTER && cluster * RAYO_PTX_ATTN_DEC_WARPS * tile_keys < p->n_kv)
        cluster *= 2;
    size_t splits = p->n_kv <= ATTN_DEC_MAX_KV ? 1 : attn_dec_splits(p, cluster, hg, tile_keys);
    char name[40], sfx[8] = "";
    if (hg > 1)
        snprintf(sfx, sizeof sfx, "_g%zu", hg);
    snprintf(name, sizeof name, "attn_dec_%s_d%zu_c%zu%s", p->kv_dtype == RAYO_DTYPE_F16 ? "f16" : "f32", dm,
             cluster, sfx);
    CUfunction fn;
    rayo_status s = cuda_function(st, MOD_ATTN_CLUSTER, name, &fn);
    if (s != RAYO_OK)
        return s;
    CUresult r = cuda_launch_kernel(st, fn, (unsigned)(cluster * splits), (unsigned)(p->n_heads / hg),
                                    (unsigned)p->n_q, 32 * RAYO_PTX_ATTN_DEC_WARPS, 1, 1, 0, stream, args, NULL);
    if (r != CUDA_SUCCESS)
        return cuda_fail(st, r, "launch of attn_dec");
    return launch_attn_merge(st, stream, p, args, splits);
}

/* attn_<kind>_<f16|f32>_d<head_dim> of ptx/attention-prefill.c (kind pf or
 * group) and the dynamic shared memory it takes (the f32 cache's tiles). */
static rayo_status attn_tiles_function(cuda_state *st, const rayo_attention_params *p, const char *kind,
                                       CUfunction *fn, unsigned *smem)
{
    int f32 = p->kv_dtype == RAYO_DTYPE_F32;
    char name[32];
    snprintf(name, sizeof name, "attn_%s_%s_d%zu", kind, f32 ? "f32" : "f16", p->head_dim);
    *smem = f32 ? (unsigned)RAYO_PTX_ATTN_PF32_SMEM(p->head_dim) : 0;
    return cuda_function(st, MOD_INFER, name, fn);
}

/* attn_group_<f16|f32>_d<64|128> (ptx/attention-prefill.c): relaxed
 * decode calls (at most ATTN_DEC_MAX_Q queries) of groups of 4 to 16 query
 * heads a KV head, past ATTN_DEC_MAX_KV keys, with aligned rows and
 * head_dim 64 or 128 exactly (an f16 or f32 cache, as attn_pf_*), on
 * tensor cores: a block takes the group's heads as the 16 rows of its
 * products against one range of whole tiles of 64 keys, so that each K and
 * V row is read once for the whole group (attn_dec_* reads it once per 4
 * heads and makes every score with float32 fused multiply-adds).  The
 * ranges fill about ATTN_GROUP_WANT_BLOCKS blocks, at most the splits
 * attention_scratch holds; attn_merge combines them.  On an H200
 * (cuda-bench-infer --attention, one query, 32 heads, relaxed): 4 KV heads,
 * head_dim 64, f16, 32768 keys 23.1 against attn_dec_*'s 47.2 us, f32
 * 32.6 against 58.6; 8 KV heads, head_dim 128, f16, 32768 keys 49.1
 * against 84.8; with 512 blocks 21.1, 36.8 and 54.6, with 1024 25.8, 40.4
 * and 64.8.  At 192 keys (`attention_group = all`, which takes it at any
 * cache length) 8.6 against 4.7 us: short caches keep attn_dec_*. */
#define ATTN_GROUP_MIN 4
#define ATTN_GROUP_MAX 16
#define ATTN_GROUP_WANT_BLOCKS 256

static int attn_group(const cuda_state *st, const cuda_op *op, const rayo_attention_params *p, int vec)
{
    size_t group = p->n_heads / p->n_kv_heads;
    return st->use_attn_group && st->ptx_target >= 80 && vec && op->precision == RAYO_PRECISION_RELAXED &&
           (p->kv_dtype == RAYO_DTYPE_F16 || p->kv_dtype == RAYO_DTYPE_F32) &&
           (p->head_dim == 64 || p->head_dim == 128) &&
           p->n_q <= ATTN_DEC_MAX_Q && group >= ATTN_GROUP_MIN && group <= ATTN_GROUP_MAX &&
           (p->n_kv > ATTN_DEC_MAX_KV || st->use_attn_group > 1) && p->n_kv < (1u << 31);
}

/* Ranges of whole tiles of 64 keys, none empty (the kernel cuts the tiles
 * into ranges of ceil(tiles / splits) the same way). */
static size_t attn_group_splits(const rayo_attention_params *p)
{
    size_t tiles = (p->n_kv + 63) / 64, blocks = p->n_kv_heads * p->n_q,
           s = (ATTN_GROUP_WANT_BLOCKS + blocks - 1) / blocks, most = attn_plan_of(p).splits;
    if (s > tiles)
        s = tiles;
    if (s > most)
        s = most;
    size_t per = (tiles + s - 1) / s;
    return (tiles + per - 1) / per;
}

/* args: launch_attention's pd */
static rayo_status launch_attn_group(cuda_state *st, CUstream stream, const cuda_op *op, void **args)
{
    const rayo_attention_params *p = op->params;
    size_t splits = attn_group_splits(p);
    CUfunction fn;
    unsigned smem;
    rayo_status s = attn_tiles_function(st, p, "group", &fn, &smem);
    if (s != RAYO_OK)
        return s;
    CUresult r = cuda_launch_kernel(st, fn, (unsigned)splits, (unsigned)p->n_kv_heads, (unsigned)p->n_q, 128, 1, 1,
                                    smem, stream, args, NULL);
    if (r != CUDA_SUCCESS)
        return cuda_fail(st, r, "launch of attn_group");
    return launch_attn_merge(st, stream, p, args, splits);
}

/* attn_pf_<f16|f32>_d<64|128> (ptx/attention-prefill.c): relaxed calls of
 * at least ATTN_PREFILL_MIN_Q queries with an f16 or f32 cache, aligned
 * rows and head_dim 64 or 128 exactly, on tensor cores; a block per 64
 * queries and head, no scratch (the f32 cache's kernels: dynamic shared
 * memory, RAYO_PTX_ATTN_PF32_SMEM). */
#define ATTN_PREFILL_MIN_Q 16

static int attn_prefill(const cuda_state *st, const cuda_op *op, const rayo_attention_params *p, int vec)
{
    return st->use_attn_prefill && vec && op->precision == RAYO_PRECISION_RELAXED &&
           (p->kv_dtype == RAYO_DTYPE_F16 || p->kv_dtype == RAYO_DTYPE_F32) &&
           (p->head_dim == 64 || p->head_dim == 128) &&
           p->n_q >= ATTN_PREFILL_MIN_Q && p->n_kv < (1u << 31);
}

static rayo_status launch_attn_prefill(cuda_state *st, CUstream stream, const cuda_op *op, void **args)
{
    const rayo_attention_params *p = op->params;
    CUfunction fn;
    unsigned smem;
    rayo_status s = attn_tiles_function(st, p, "pf", &fn, &smem);
    if (s != RAYO_OK)
        return s;
    CUresult r = cuda_launch_kernel(st, fn, (unsigned)((p->n_q + 63) / 64), (unsigned)p->n_heads, 1, 128, 1, 1,
                                    smem, stream, args, NULL);
    return r == CUDA_SUCCESS ? RAYO_OK : cuda_fail(st, r, "launch of attn_pf");
}

static rayo_status launch_attention(cuda_state *st, CUstream stream, const cuda_op *op)
{
    const rayo_attention_params *p = op->params;
    if (!p || p->head_dim > RAYO_PTX_ATTN_MAX_DIM || RAYO_DTYPE_OF(op->dtypes, 1) != RAYO_DTYPE_OF(op->dtypes, 2) ||
        (p->kv_dtype != RAYO_DTYPE_F32 && p->kv_dtype != RAYO_DTYPE_F16))
        return RAYO_E_UNSUPPORTED;
    if (p->n_q == 0 || p->n_heads == 0 || p->head_dim == 0)
        return RAYO_OK;
    if (!p->n_kv_heads || p->n_heads % p->n_kv_heads || !p->n_kv || ((p->flags & RAYO_ATTN_CAUSAL) && p->n_q > p->n_kv))
        return RAYO_E_INVALID;
    size_t d = p->head_dim;
    attn_plan a = attn_plan_of(p);
    int half = p->kv_dtype == RAYO_DTYPE_F16;
    CUdeviceptr part = op->scratch, q = op->a, k = op->b, v = op->c, out = op->y;
    unsigned long long n_q = p->n_q, n_kv = p->n_kv, group = p->n_heads / p->n_kv_heads, dd = d,
                       causal = (p->flags & RAYO_ATTN_CAUSAL) != 0,
                       qt = p->q_token ? p->q_token : p->n_heads * d, qh = p->q_head ? p->q_head : d,
                       kt = p->k_token ? p->k_token : p->n_kv_heads * d, kh = p->k_head ? p->k_head : d,
                       vt = p->v_token ? p->v_token : p->n_kv_heads * d, vh = p->v_head ? p->v_head : d,
                       ot = p->o_token ? p->o_token : p->n_heads * d, oh = p->o_head ? p->o_head : d,
                       chunk = a.chunk, sp = a.splits, nb = a.nb, ng = a.ng;
    float scale = p->scale;
    size_t gy = (a.nb + 3) / 4;
    if (gy > MAX_GRID_Y || p->n_heads > MAX_GRID_Y)
        return RAYO_E_UNSUPPORTED;
    void *p1[] = {&part, &q, &k, &v, &n_q, &n_kv, &group, &dd, &causal, &qt, &qh, &kt, &kh, &vt, &vh,
                  &chunk, &sp, &nb, &ng, &scale, &out, &ot, &oh};
    int dmax = d <= 64 ? 64 : d <= 128 ? 128 : 256, merged = st->use_attn_block && a.splits <= RAYO_PTX_ATTN_BLOCK_WARPS(dmax);
    int vec = attn_rows_aligned(op, p, half ? 2 : 4, kt, kh, vt, vh);
    void *pd[] = {&out, &q, &k, &v, &n_q, &n_kv, &group, &dd, &causal, &qt, &qh, &kt, &kh, &vt, &vh, &ot, &oh,
                  &scale, &part}; /* attn_dec_* reads part (its splits), attn_pf_* not */
    if (attn_group(st, op, p, vec))
        return launch_attn_group(st, stream, op, pd);
    if (attn_decode_cluster(st, op, p, vec))
        return launch_attn_decode(st, stream, op, pd);
    if (attn_prefill(st, op, p, vec))
        return launch_attn_prefill(st, stream, op, pd);
    char name[48]; /* the variant for head_dim: 64, 128 or 256 dimensions at most */
    snprintf(name, sizeof name, "attn_%s_%s%s_d%d%s", merged ? "block" : "warp", half ? "f16" : "f32",
             vec ? "_v" : "", dmax, vec && dmax == 64 && op->precision == RAYO_PRECISION_RELAXED ? "_relaxed" : "");
    unsigned gz = (unsigned)min_size(p->n_q, MAX_GRID_Y);
    CUfunction fn;
    rayo_status s = cuda_function(st, MOD_INFER, name, &fn);
    if (s != RAYO_OK)
        return s;
    if (merged) { /* the ranges are the block's warps, merged in it: no attn_merge */
        CUresult r = cuda_launch_kernel(st, fn, (unsigned)a.nb, gz, 1, 32 * (unsigned)a.splits, 1, 1, 0, stream, p1,
                                        NULL);
        return r == CUDA_SUCCESS ? RAYO_OK : cuda_fail(st, r, "launch of attn_block");
    }
    CUresult r = cuda_launch_kernel(st, fn, (unsigned)a.splits, (unsigned)gy, gz, 128, 1, 1, 0, stream, p1, NULL);
    if (r != CUDA_SUCCESS)
        return cuda_fail(st, r, "launch of attn_warp");
    void *p2[] = {&out, &part, &n_q, &dd, &sp, &ot, &oh};
    if ((s = cuda_function(st, MOD_INFER, "attn_merge", &fn)) != RAYO_OK)
        return s;
    r = cuda_launch_kernel(st, fn, (unsigned)p->n_heads, gz, 1, 256, 1, 1, 0, stream, p2, NULL);
    return r == CUDA_SUCCESS ? RAYO_OK : cuda_fail(st, r, "launch of attn_merge");
}

static rayo_status launch_get_rows(cuda_state *st, CUstream stream, const cuda_op *op)
{
    return launch_rows(st, stream, RAYO_DTYPE_OF(op->dtypes, 0), op->y, op->a, op->b, op->m, op->n, op->k, op->lda,
                       op->ldy);
}

/* ---- the families of the inference ops (strided: each honours lda ... ldy) */
const cuda_family cuda_family_gemvq = {.name = "gemvq", .check = gemvq_check, .launch = launch_gemvq, .strided = 1};
const cuda_family cuda_family_convert = {.name = "convert", .launch = launch_convert};
const cuda_family cuda_family_get_rows = {.name = "get_rows", .launch = launch_get_rows, .strided = 1};
const cuda_family cuda_family_rope = {.name = "rope", .launch = launch_rope, .strided = 1};
const cuda_family cuda_family_attention = {.name = "attention", .scratch = attention_scratch,
                                           .launch = launch_attention};
const cuda_family cuda_family_glu = {.name = "glu", .launch = launch_glu, .strided = 1};
