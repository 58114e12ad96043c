/* SPDX-License-Identifier: MIT */
/* cuda-launch.c - queues the kernels of one op on a stream, on device
 * pointers.  Used by host-memory calls (through the staging buffers) and by
 * batches (on the caller's device buffers). */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "cuda-internal.h"
#include "cuda-ptx.h"

#include <stdio.h>
#include <string.h>

#define THREADS 256
#define MAX_GRID_Y 65535u

const char *cuda_op_name(uint32_t op)
{
    switch (op) {
#define RAYO_OP(ID, ENUM, NAME, SIG, TR, TA, SC, DOC) case ID: return #NAME;
#include "rayo-ops.h"
#undef RAYO_OP
    default:
        return NULL;
    }
}

static const char *const act_names[RAYO_ACT_LIMIT] = {"none", "relu", "gelu", "silu", "tanh", "sigmoid"};

/* ---- the families' checks ------------------------------------------------ */
static rayo_status check_matmul(const cuda_state *st, const cuda_op *op)
{
    (void)st;
    return (op->flags & ~(uint32_t)(RAYO_TRANS_A | RAYO_TRANS_B)) ? RAYO_E_UNSUPPORTED : RAYO_OK;
}

static rayo_status check_gemv(const cuda_state *st, const cuda_op *op)
{
    (void)st;
    return (op->flags & ~(uint32_t)RAYO_TRANS_A) ? RAYO_E_UNSUPPORTED : RAYO_OK;
}

static rayo_status check_bias_act(const cuda_state *st, const cuda_op *op)
{
    (void)st;
    return op->flags < RAYO_ACT_LIMIT ? RAYO_OK : RAYO_E_UNSUPPORTED;
}

rayo_status cuda_op_check(const cuda_state *st, const cuda_op *op)
{
    if (!op->family)
        return RAYO_E_UNSUPPORTED;
    return op->family->check ? op->family->check(st, op) : RAYO_OK;
}

static size_t ceil_div(size_t a, size_t b)
{
    return a / b + (a % b != 0);
}

static size_t min_size(size_t a, size_t b)
{
    return a < b ? a : b;
}

/* Blocks of a grid-stride launch over `work` items: enough to fill the GPU,
 * no more. */
static unsigned grid_blocks(const cuda_state *st, size_t work, size_t per_sm)
{
    size_t b = min_size(ceil_div(work ? work : 1, THREADS), (size_t)st->sm_count * per_sm);
    return (unsigned)(b ? b : 1);
}

static unsigned reduce_blocks(const cuda_state *st, size_t n)
{
    size_t b = min_size(grid_blocks(st, n, 8), 1024);
    return (unsigned)b;
}

/* gemv_t_part_v4's grid: blocks per multiprocessor (5 fit by registers) */
#define GEMV_T_BLOCKS_PER_SM 4

/* gemv with A transposed: splits of the m rows so that the grid fills the
 * GPU.  n % 4 == 0 (gemv_t_part_v4): tiles of 128 columns, twice as many as
 * its grid (so that every multiprocessor gets the same number), splits of
 * at least 64 rows (few partials to add); otherwise (gemv_t_part) a thread
 * per column, 2048 per multiprocessor. */
static void gemv_t_shape(const cuda_state *st, const cuda_op *op, size_t *splits, size_t *chunk)
{
    size_t want, most;
    if (op->n % 4 == 0) {
        size_t cb = ceil_div(op->n ? op->n : 1, 128);
        want = ((size_t)st->sm_count * GEMV_T_BLOCKS_PER_SM * 2 + cb / 2) / cb;
        most = min_size(1024, op->m / 64 ? op->m / 64 : 1);
    } else {
        want = ceil_div((size_t)st->sm_count * 2048, ceil_div(op->n, THREADS) * THREADS);
        most = min_size(1024, op->m / 8 ? op->m / 8 : 1);
    }
    size_t s = want < 1 ? 1 : want > most ? most : want;
    *chunk = ceil_div(op->m, s);
    *splits = *chunk ? ceil_div(op->m, *chunk) : 1;
}

size_t cuda_scratch_bytes(const cuda_state *st, const cuda_op *op)
{
    return op->family && op->family->scratch ? op->family->scratch(st, op) : 0;
}

static size_t reduce_scratch(const cuda_state *st, const cuda_op *op)
{
    return (size_t)reduce_blocks(st, op->n) * 16;
}

static size_t matmul_scratch(const cuda_state *st, const cuda_op *op)
{
    size_t small = cuda_matmul_small_scratch_bytes(st, op), wg = cuda_wgmma_scratch_bytes(st, op);
    return wg > small ? wg : small;
}

static size_t gemv_scratch(const cuda_state *st, const cuda_op *op)
{
    if (!(op->flags & RAYO_TRANS_A))
        return 0;
    size_t splits, chunk;
    gemv_t_shape(st, op, &splits, &chunk);
    return splits * op->n * 8;
}

static rayo_status launch3(cuda_state *st, CUstream stream, int mod, const char *name, unsigned gx, unsigned gy,
                           unsigned gz, unsigned bx, unsigned by, unsigned smem, void **params)
{
    CUfunction fn;
    rayo_status s = cuda_function(st, mod, name, &fn);
    if (s != RAYO_OK)
        return s;
    CUresult r = cuda_launch_kernel(st, fn, gx, gy, gz, bx, by, 1, smem, stream, params, NULL);
    if (r != CUDA_SUCCESS) {
        char what[96];
        snprintf(what, sizeof what, "launch of %s (grid %ux%ux%u)", name, gx, gy, gz);
        return cuda_fail(st, r, what);
    }
    return RAYO_OK;
}

static rayo_status launch(cuda_state *st, CUstream stream, int mod, const char *name, unsigned gx, unsigned gy,
                          unsigned bx, unsigned by, unsigned smem, void **params)
{
    return launch3(st, stream, mod, name, gx, gy, 1, bx, by, smem, params);
}

rayo_status cuda_launch_grid(cuda_state *st, CUstream stream, int mod, const char *name, unsigned gx, unsigned gy,
                             unsigned gz, unsigned bx, unsigned smem, void **params)
{
    return launch3(st, stream, mod, name, gx, gy, gz, bx, 1, smem, params);
}

static int aligned16(CUdeviceptr p)
{
    return (p & 15u) == 0;
}

/* ---- elementwise ---------------------------------------------------------- */
static rayo_status launch_elementwise(cuda_state *st, CUstream stream, const cuda_op *op)
{
    CUdeviceptr y = op->y, a = op->a, b = op->op == RAYO_OP_AXPY ? op->y : op->b;
    int vec = aligned16(y) && aligned16(a) && aligned16(b);
    char name[64];
    snprintf(name, sizeof name, "ew_%s_%s", cuda_op_name(op->op), vec ? "v4" : "s1");
    unsigned long long n = op->n;
    float alpha = op->alpha, beta = op->beta;
    void *params[] = {&y, &a, &b, &n, &alpha, &beta};
    unsigned blocks = grid_blocks(st, vec ? op->n / 4 : op->n, 8);
    return launch(st, stream, MOD_ELEMENTWISE, name, blocks, 1, THREADS, 1, 0, params);
}

/* ---- reductions: partials per block, then one block combines them ------- */
static rayo_status launch_reduce(cuda_state *st, CUstream stream, const cuda_op *op)
{
    if (op->op == RAYO_OP_ARGMAX && op->n == 0) {
        st->host->set_error(st->host, "cuda: argmax of an empty vector");
        return RAYO_E_INVALID;
    }
    const char *opname = cuda_op_name(op->op);
    unsigned blocks = reduce_blocks(st, op->n);
    CUdeviceptr part = op->scratch, a = op->a, b = op->b ? op->b : op->a, y = op->y;
    unsigned long long n = op->n, count = blocks;
    char name[64];
    snprintf(name, sizeof name, "red_%s_part", opname);
    void *p1[] = {&part, &a, &b, &n};
    rayo_status s = launch(st, stream, MOD_REDUCE, name, blocks, 1, THREADS, 1, 0, p1);
    if (s != RAYO_OK)
        return s;
    snprintf(name, sizeof name, "red_%s_final", opname);
    void *p2[] = {&y, &part, &count};
    return launch(st, stream, MOD_REDUCE, name, 1, 1, THREADS, 1, 0, p2);
}

/* ---- rows ------------------------------------------------------------------
 * Rows that fit in shared memory: the row-cached kernels (rowc_*, one read
 * of the row), a warp per row for short rows, a block per row beyond, with
 * about 8 units (of 4 floats when aligned) per thread (2 when the rows are
 * fewer than the multiprocessors), on sm_90 a cluster of
 * up to 8 blocks per row past ROWC_CTA_BYTES.  Longer rows: the three-pass
 * kernels (row_*, one block per row). */
#define ROWC_CTA_BYTES (32u * 1024u)
static size_t pow2_at_least(size_t v)
{
    size_t p = 1;
    while (p < v)
        p *= 2;
    return p;
}

/* Threads of a block-per-row kernel whose CTA takes `per` units of a row. */
static unsigned rowc_block_threads(const cuda_state *st, size_t m, size_t per)
{
    /* fewer rows than multiprocessors (a decode step's one row): 2 units
     * a thread, so each pass is one trip to memory, not two */
    size_t per_thread = m < (size_t)st->sm_count ? 2 : 8, threads = pow2_at_least(ceil_div(per, per_thread));
    return (unsigned)(threads < 64 ? 64 : threads > 1024 ? 1024 : threads);
}

static rayo_status launch_rows(cuda_state *st, CUstream stream, const cuda_op *op)
{
    CUdeviceptr y = op->y, a = op->a, gamma = 0, beta = 0;
    float eps = 0.0f;
    if (op->op == RAYO_OP_LAYERNORM || op->op == RAYO_OP_RMSNORM) {
        gamma = op->b;
        beta = op->op == RAYO_OP_LAYERNORM ? op->c : 0;
        eps = op->alpha;
    }
    unsigned long long m = op->m, n = op->n;
    void *params[] = {&y, &a, &gamma, &beta, &m, &n, &eps};
    char name[64];
    size_t row_bytes = op->n * sizeof(float);
    size_t cache = st->max_smem_optin > RAYO_PTX_ROWC_STATIC_SMEM
                       ? (size_t)st->max_smem_optin - RAYO_PTX_ROWC_STATIC_SMEM : 0;
    if (st->ptx_target >= 90)
        cache *= RAYO_PTX_ROWC_MAX_CLUSTER; /* a row over a cluster (below: less a unit per CTA) */
    if (op->m > 0 && op->n > 0 && row_bytes + RAYO_PTX_ROWC_MAX_CLUSTER * 32 <= cache) {
        int vec = aligned16(y) && aligned16(a) && aligned16(gamma) && aligned16(beta) && op->n % 4 == 0;
        int warp = op->n <= RAYO_PTX_ROWC_WARP_MAX_N;
        size_t units = vec ? op->n / 4 : op->n;
        snprintf(name, sizeof name, "rowc_%s_%s_%s", cuda_op_name(op->op), warp ? "warp" : "block",
                 vec ? "v4" : "s1");
        if (warp) {
            /* lanes per row: about 2 units each, 4 to 32 (several rows per warp) */
            size_t lanes = pow2_at_least(ceil_div(units, 2));
            lanes = lanes < 4 ? 4 : lanes > 32 ? 32 : lanes;
            snprintf(name, sizeof name, "rowc_%s_warp%zu_%s", cuda_op_name(op->op), lanes, vec ? "v4" : "s1");
            size_t rows_per_block = RAYO_PTX_ROWC_WARP_THREADS / lanes;
            unsigned blocks = (unsigned)min_size(ceil_div(op->m, rows_per_block), (size_t)st->sm_count * 16);
            return launch(st, stream, MOD_ROWS, name, blocks, 1, RAYO_PTX_ROWC_WARP_THREADS, 1,
                          (unsigned)(rows_per_block * row_bytes), params);
        }
        /* long rows over a cluster of CTAs (sm_90), at most ROWC_CTA_BYTES each,
         * so that several CTAs share a multiprocessor and overlap their passes */
        size_t cluster = 1;
        while (st->ptx_target >= 90 && cluster < RAYO_PTX_ROWC_MAX_CLUSTER && row_bytes > cluster * ROWC_CTA_BYTES)
            cluster *= 2;
        size_t per = ceil_div(units, cluster);
        unsigned threads = rowc_block_threads(st, op->m, per);
        if (cluster > 1)
            snprintf(name, sizeof name, "rowc_%s_cluster%zu_%s", cuda_op_name(op->op), cluster, vec ? "v4" : "s1");
        unsigned blocks = (unsigned)(min_size(op->m, (size_t)st->sm_count * 16 / cluster) * cluster);
        return launch(st, stream, cluster > 1 ? MOD_ROWS_CLUSTER : MOD_ROWS, name, blocks, 1, threads, 1,
                      (unsigned)(per * (vec ? 16 : 4)), params);
    }
    snprintf(name, sizeof name, "row_%s", cuda_op_name(op->op));
    unsigned blocks = (unsigned)min_size(op->m ? op->m : 1, (size_t)st->sm_count * 16);
    return launch(st, stream, MOD_ROWS, name, blocks, 1, THREADS, 1, 0, params);
}

/* ---- a residual add, then rmsnorm of the sum --------------------------------
 * rowc_add_rmsnorm_block_v4 runs both when the rows take the block kernel
 * (vector units, longer than a warp's rows, one CTA each) and no output
 * touches what the other op still reads: rmsnorm's y is add's a or b (the
 * same units, read before the block's reduction, written after it) or
 * apart from both, and apart from add's y and gamma. */
int cuda_add_rmsnorm_suits(const cuda_state *st, const cuda_op *add, const cuda_op *norm)
{
    size_t bytes = 4 * add->n, gbytes = 4 * norm->n;
    if (add->op != RAYO_OP_ADD || norm->op != RAYO_OP_RMSNORM || add->dtypes || norm->dtypes || !norm->m ||
        norm->n <= RAYO_PTX_ROWC_WARP_MAX_N || norm->n % 4 || gbytes > ROWC_CTA_BYTES || norm->a != add->y ||
        norm->m * norm->n != add->n || st->max_smem_optin < (int)(gbytes + RAYO_PTX_ROWC_STATIC_SMEM) ||
        !aligned16(add->a) || !aligned16(add->b) || !aligned16(add->y) || !aligned16(norm->y) || !aligned16(norm->b))
        return 0;
    return !cuda_overlap(norm->y, bytes, add->y, bytes) &&
           (norm->y == add->a || !cuda_overlap(norm->y, bytes, add->a, bytes)) &&
           (norm->y == add->b || !cuda_overlap(norm->y, bytes, add->b, bytes)) &&
           (add->y == add->a || !cuda_overlap(add->y, bytes, add->a, bytes)) &&
           (add->y == add->b || !cuda_overlap(add->y, bytes, add->b, bytes)) &&
           (!norm->b || (!cuda_overlap(norm->b, gbytes, add->y, bytes) && !cuda_overlap(norm->b, gbytes, norm->y, bytes)));
}

rayo_status cuda_launch_add_rmsnorm(cuda_state *st, CUstream stream, const cuda_op *add, const cuda_op *norm)
{
    CUdeviceptr y = norm->y, a = add->a, gamma = norm->b, beta = 0, b = add->b, sum = add->y;
    float eps = norm->alpha;
    unsigned long long m = norm->m, n = norm->n;
    void *params[] = {&y, &a, &gamma, &beta, &m, &n, &eps, &b, &sum};
    unsigned blocks = (unsigned)min_size(norm->m, (size_t)st->sm_count * 16);
    return launch(st, stream, MOD_ROWS, "rowc_add_rmsnorm_block_v4", blocks, 1,
                  rowc_block_threads(st, norm->m, norm->n / 4), 1, (unsigned)(4 * norm->n), params);
}

/* ---- gemv ------------------------------------------------------------------ */
/* Rows of at least this many columns take a block each (gemv_n_block_*):
 * an even spread over the GPU; shorter ones a warp each (gemv_n). */
#define GEMV_BLOCK_MIN_N 1024

static rayo_status launch_gemv(cuda_state *st, CUstream stream, const cuda_op *op)
{
    CUdeviceptr y = op->y, a = op->a, x = op->b;
    unsigned long long m = op->m, n = op->n;
    float alpha = op->alpha, beta = op->beta;
    int vec = aligned16(a) && aligned16(x) && op->n % 4 == 0;
    if (!(op->flags & RAYO_TRANS_A)) {
        void *params[] = {&y, &a, &x, &m, &n, &alpha, &beta};
        if (op->n >= GEMV_BLOCK_MIN_N) {
            unsigned blocks = (unsigned)min_size(op->m ? op->m : 1, 0x7fffffff);
            return launch(st, stream, MOD_MATRIX, vec ? "gemv_n_block_v4" : "gemv_n_block_s1", blocks, 1, THREADS, 1,
                          0, params);
        }
        unsigned blocks = grid_blocks(st, op->m * 32, 8);
        return launch(st, stream, MOD_MATRIX, "gemv_n", blocks, 1, THREADS, 1, 0, params);
    }
    size_t splits, chunk;
    gemv_t_shape(st, op, &splits, &chunk);
    CUdeviceptr part = op->scratch;
    unsigned long long ch = chunk, sp = splits;
    rayo_status s;
    if (vec) {
        unsigned long long tiles = ceil_div(op->n, 128) * splits;
        void *p1[] = {&part, &a, &x, &m, &n, &ch, &tiles};
        unsigned blocks = (unsigned)min_size(tiles, (size_t)st->sm_count * GEMV_T_BLOCKS_PER_SM);
        s = launch(st, stream, MOD_MATRIX, "gemv_t_part_v4", blocks ? blocks : 1, 1, THREADS, 1, 0, p1);
    } else {
        void *p1[] = {&part, &a, &x, &m, &n, &ch};
        s = launch(st, stream, MOD_MATRIX, "gemv_t_part", (unsigned)ceil_div(op->n, THREADS), (unsigned)splits,
                   THREADS, 1, 0, p1);
    }
    if (s != RAYO_OK)
        return s;
    void *p2[] = {&y, &part, &n, &sp, &alpha, &beta};
    return launch(st, stream, MOD_MATRIX, "gemv_t_final", (unsigned)ceil_div(op->n, 32), 1, THREADS, 1, 0, p2);
}

/* ---- transpose, bias_act ------------------------------------------------- */
static rayo_status launch_transpose(cuda_state *st, CUstream stream, const cuda_op *op)
{
    CUdeviceptr y = op->y, a = op->a;
    unsigned long long m = op->m, n = op->n;
    void *params[] = {&y, &a, &m, &n};
    unsigned gx = (unsigned)ceil_div(op->n, 32);
    unsigned gy = (unsigned)min_size(ceil_div(op->m, 32), MAX_GRID_Y);
    return launch(st, stream, MOD_MATRIX, "transpose", gx ? gx : 1, gy ? gy : 1, 32, 8, 0, params);
}

static rayo_status launch_bias_act(cuda_state *st, CUstream stream, const cuda_op *op)
{
    CUdeviceptr y = op->y, a = op->a, bias = op->b;
    unsigned long long m = op->m, n = op->n;
    int vec = aligned16(y) && aligned16(a) && aligned16(bias) && op->n % 4 == 0;
    char name[48];
    snprintf(name, sizeof name, "bias_act_%s_%s", act_names[op->flags], vec ? "v4" : "s1");
    void *params[] = {&y, &a, &bias, &m, &n};
    unsigned blocks = grid_blocks(st, op->m * op->n / (vec ? 4 : 1), 8);
    return launch(st, stream, MOD_MATRIX, name, blocks, 1, THREADS, 1, 0, params);
}

/* ---- matmul ----------------------------------------------------------------
 * m = 1 or n = 1 runs as a gemv, and few tiles with a long k split k
 * (cuda-matmul-small.c).  The fp32 SIMT kernels cover all of C, edge tiles
 * too; the TF32 kernels (when the config allows) the largest block of C
 * that is a multiple of their tile, and the general kernel the edges.  The
 * general kernel computes everything when the shape or alignment does not
 * suit the tiled kernels. */
typedef struct mm_args {
    CUdeviceptr c, a, b;
    unsigned long long m, n, k;
    float alpha, beta;
} mm_args;

/* General kernel over rows [row0, row_end) and columns [col0, n). */
static rayo_status mm_general(cuda_state *st, CUstream stream, const cuda_op *op, mm_args *g, size_t row0,
                              size_t row_end, size_t col0)
{
    int ta = (op->flags & RAYO_TRANS_A) != 0, tb = (op->flags & RAYO_TRANS_B) != 0;
    unsigned long long sai = ta ? 1 : op->k, sap = ta ? op->m : 1;
    unsigned long long sbp = tb ? 1 : op->n, sbj = tb ? op->k : 1;
    if (row0 >= row_end || col0 >= op->n)
        return RAYO_OK;
    unsigned gx = (unsigned)ceil_div(op->n - col0, 64);
    for (size_t r = row0; r < row_end; r += (size_t)MAX_GRID_Y * 64) {
        size_t rows = min_size(row_end - r, (size_t)MAX_GRID_Y * 64);
        unsigned long long mb = r + rows, r0 = r, c0 = col0;
        void *params[] = {&g->c, &g->a, &g->b, &mb, &g->n, &g->k, &sai, &sap, &sbp, &sbj,
                          &g->alpha, &g->beta, &r0, &c0};
        rayo_status s = launch(st, stream, MOD_MATRIX, "sgemm_general", gx, (unsigned)ceil_div(rows, 64), THREADS,
                               1, 0, params);
        if (s != RAYO_OK)
            return s;
    }
    return RAYO_OK;
}

static const rayo_ptx_tf32_config *tf32_config(const char *name)
{
    for (unsigned i = 0; i < rayo_cuda_tf32_config_count; i++)
        if (strcmp(rayo_cuda_tf32_configs[i].name, name) == 0)
            return &rayo_cuda_tf32_configs[i];
    return NULL;
}

/* The fast fp32 kernels' float sums: blocks of RAYO_PTX_SGEMM_BLOCK_K terms
 * added into second float sums, so the error grows with BLOCK_K + K / BLOCK_K
 * terms.  Beyond this K (more than 512 second terms) the general kernel,
 * whose second sums are float64, keeps the contract instead. */
#define SGEMM_FAST_MAX_K 131072
/* Their static shared memory is at most 33,280 bytes (sgemm_nn_k16*). */
#define SGEMM_FAST_SMEM (RAYO_PTX_SGEMM_ACC_BYTES + 34 * 1024)

rayo_status cuda_launch_matmul_f32(cuda_state *st, CUstream stream, const cuda_op *op, int tf32)
{
    mm_args g = {op->y, op->a, op->b, op->m, op->n, op->k, op->alpha, op->beta};
    rayo_status s;
    if (cuda_matmul_as_gemv(st, stream, op, &s)) /* m = 1 or n = 1 (cuda-matmul-small.c) */
        return s;
    int ta = (op->flags & RAYO_TRANS_A) != 0, tb = (op->flags & RAYO_TRANS_B) != 0;
    size_t lda = ta ? op->m : op->k, ldb = tb ? op->k : op->n;
    int aligned = aligned16(op->a) && aligned16(op->b) && aligned16(op->y) && lda % 4 == 0 && ldb % 4 == 0 &&
                  op->n % 4 == 0;
    /* pick the tiled kernel */
    const char *kname = NULL;
    int mod = MOD_SGEMM, bm = 128, bn = 128, threads = THREADS, smem = 0;
    if (tf32) { /* sm_90: warpgroup MMA first; RAYO_E_UNSUPPORTED when it does not take the call */
        rayo_status ws = cuda_launch_wgmma_tf32(st, stream, op);
        if (ws != RAYO_E_UNSUPPORTED)
            return ws;
    }
    const rayo_ptx_tf32_config *tc = tf32 && !ta && !tb ? tf32_config(st->tf32_kernel) : NULL;
    if (tc && op->k % 32 == 0 && tc->smem_bytes <= st->max_smem_optin) {
        kname = tc->name;
        mod = MOD_TF32;
        bm = tc->block_m;
        bn = tc->block_n;
        threads = tc->threads;
        smem = tc->smem_bytes;
    } else if (op->k > SGEMM_FAST_MAX_K || st->max_smem_optin < SGEMM_FAST_SMEM) {
        return mm_general(st, stream, op, &g, 0, op->m, 0);
    } else {
        if (!ta && !tb)
            kname = (strstr(st->sgemm_kernel, "_k16") && op->k % 16 == 0) ? st->sgemm_kernel : st->sgemm_fallback;
        else if (strstr(st->sgemm_kernel, "_k16") && op->k % 16 == 0) /* k-step as the configured kernel's */
            kname = ta && tb ? "sgemm_tt_k16_async" : ta ? "sgemm_tn_k16_async" : "sgemm_nt_k16";
        else
            kname = ta && tb ? "sgemm_tt_k8" : ta ? "sgemm_tn_k8" : "sgemm_nt_k8";
        smem = RAYO_PTX_SGEMM_ACC_BYTES;
    }
    size_t mf = op->m - op->m % (size_t)bm, nf = op->n - op->n % (size_t)bn;
    if (mod == MOD_SGEMM) { /* its edge tiles store only what lies inside C */
        mf = ceil_div(op->m, (size_t)bm) * (size_t)bm;
        nf = ceil_div(op->n, (size_t)bn) * (size_t)bn;
    }
    int bk = strstr(kname, "_k16") ? 16 : mod == MOD_TF32 ? 32 : 8;
    int tiled = aligned && op->k > 0 && op->k % (size_t)bk == 0 && mf > 0 && nf > 0 && mf / (size_t)bm <= MAX_GRID_Y;
    if (!tiled)
        return mm_general(st, stream, op, &g, 0, op->m, 0);
    if (mod == MOD_SGEMM && cuda_matmul_split_k(st, stream, op, kname, bk, &s))
        return s; /* few tiles, long k */
    void *params[] = {&g.c, &g.a, &g.b, &g.m, &g.n, &g.k, &g.alpha, &g.beta};
    s = launch(st, stream, mod, kname, (unsigned)(nf / (size_t)bn), (unsigned)(mf / (size_t)bm),
                           (unsigned)threads, 1, (unsigned)smem, params);
    if (s == RAYO_OK) /* TF32: right edge of the tiled rows (none left for sgemm) */
        s = mm_general(st, stream, op, &g, 0, op->m < mf ? op->m : mf, nf);
    if (s == RAYO_OK) /* TF32: bottom rows */
        s = mm_general(st, stream, op, &g, mf, op->m, 0);
    return s;
}

static rayo_status launch_matmul(cuda_state *st, CUstream stream, const cuda_op *op)
{
    return cuda_launch_matmul_f32(st, stream, op, st->allow_tf32);
}

rayo_status cuda_launch_op(cuda_state *st, CUstream stream, const cuda_op *op)
{
    rayo_status s = cuda_op_check(st, op);
    return s != RAYO_OK ? s : op->family->launch(st, stream, op);
}

/* ---- the families of the f32 ops ----------------------------------------- */
const cuda_family cuda_family_elementwise = {.name = "elementwise", .launch = launch_elementwise};
const cuda_family cuda_family_reduce = {.name = "reduce", .scratch = reduce_scratch, .launch = launch_reduce};
const cuda_family cuda_family_rows = {.name = "rows", .launch = launch_rows};
const cuda_family cuda_family_matmul = {.name = "matmul", .check = check_matmul, .scratch = matmul_scratch,
                                        .launch = launch_matmul};
const cuda_family cuda_family_gemv = {.name = "gemv", .check = check_gemv, .scratch = gemv_scratch,
                                      .launch = launch_gemv};
const cuda_family cuda_family_transpose = {.name = "transpose", .launch = launch_transpose};
const cuda_family cuda_family_bias_act = {.name = "bias_act", .check = check_bias_act, .launch = launch_bias_act};
