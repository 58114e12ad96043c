/* SPDX-License-Identifier: MIT */
/* cuda-wgmma.c - TF32, f16 x f16 and bf16 x bf16 matmul on Hopper's
 * warpgroup MMA (module "wgmma", ptx/wgmma.c, sm_90a): the tensor maps of
 * its bulk tensor copies, K-major copies of the f32 operands that are not
 * K-major, and the launch.
 *
 * TF32 wgmma reads both operands K-major: A as m rows of k, B as n rows of
 * k (RAYO_TRANS_B).  A row-major B (k x n) is transposed into scratch first,
 * and so is A with RAYO_TRANS_A; the transposes cost a pass over the operand
 * (about 2 k n 4 bytes of traffic for B).  The kernel handles any m, n and
 * k % 4 == 0 (the copy engine zero-fills past the edges); other calls, and
 * devices other than cc 9.0, take the mma.sync kernels (cuda-launch.c).
 *
 * f16 and bf16 wgmma read an operand MN-major too (transposed in the
 * instruction), so the 16-bit kernels take every transpose layout in place,
 * row strides included (lda, ldb: multiples of 8 elements, the copy
 * engine's 16-byte pitch; n and ldc even), with no scratch.  Relaxed calls only:
 * one float sum per element of C over all of k is not within the strict
 * contract for long k (cuda-mma16.c's _b256 kernels keep strict calls). */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "cuda-internal.h"
#include "cuda-ptx.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define WG_SCRATCH_ALIGN 256
/* the 16-bit calls' shape when the configured one has at most half as many
 * tiles as the GPU has multiprocessors (twice the blocks of 128 x 256) */
#define WG_SMALL_SHAPE "128x128"
/* split k: at most this many slices, each at least this many k tiles */
#define WG_SPLIT_MAX_PARTS 16
#define WG_SPLIT_MIN_TILES 4

static const rayo_ptx_wgmma_config *wg_config(const char *name)
{
    for (unsigned i = 0; i < rayo_cuda_wgmma_config_count; i++)
        if (strcmp(rayo_cuda_wgmma_configs[i].name, name) == 0)
            return &rayo_cuda_wgmma_configs[i];
    return NULL;
}

static size_t round_up(size_t v)
{
    return (v + WG_SCRATCH_ALIGN - 1) & ~(size_t)(WG_SCRATCH_ALIGN - 1);
}

/* The kernel for this f32 call, or NULL when the wgmma path does not take it. */
static const rayo_ptx_wgmma_config *wg_pick(const cuda_state *st, const cuda_op *op)
{
    if (!st->use_wgmma || !st->drv->cuTensorMapEncodeTiled || op->dtypes)
        return NULL;
    const rayo_ptx_wgmma_config *c = wg_config(st->wgmma_kernel);
    if (!c || c->smem_bytes > st->max_smem_optin)
        return NULL;
    /* 16-byte row pitch for the copies; pairs of columns for the stores */
    if (!op->m || !op->n || !op->k || op->k % 4 || op->n % 2 || (op->y & 7))
        return NULL;
    if (op->m > INT32_MAX || op->n > INT32_MAX || op->k > INT32_MAX ||
        (op->m + (size_t)c->block_m - 1) / (size_t)c->block_m > 65535)
        return NULL;
    return c;
}

/* Bytes of the K-major copies: A's (RAYO_TRANS_A), then B's (no RAYO_TRANS_B). */
static size_t wg_copy_a(const cuda_op *op) { return (op->flags & RAYO_TRANS_A) ? round_up(op->m * op->k * 4) : 0; }
static size_t wg_copy_b(const cuda_op *op) { return (op->flags & RAYO_TRANS_B) ? 0 : round_up(op->n * op->k * 4); }

size_t cuda_wgmma_scratch_bytes(const cuda_state *st, const cuda_op *op)
{
    if (!st->allow_tf32 || !wg_pick(st, op))
        return 0;
    return wg_copy_a(op) + wg_copy_b(op);
}

/* A 2-D map of `rows` rows of `cols` elements of type dt, `pitch` bytes
 * apart, at `base`: boxes of box_cols x box_rows with the 128-byte swizzle
 * that the kernel's descriptors name. */
static CUresult wg_tensor_map(const cuda_state *st, CUtensorMap *map, CUtensorMapDataType dt, CUdeviceptr base,
                              size_t rows, size_t cols, size_t pitch, unsigned box_cols, unsigned box_rows)
{
    cuuint64_t dims[2] = {cols, rows}, strides[1] = {pitch};
    cuuint32_t box[2] = {box_cols, box_rows}, unit[2] = {1, 1};
    return st->drv->cuTensorMapEncodeTiled(map, dt, 2, (void *)(uintptr_t)base, dims, strides, box, unit,
                                           CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                                           CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
}

/* dst (cols x rows) = src (rows x cols)^T, on the stream: 16-byte accesses
 * (wg_transpose_v4) where the shapes and pointers allow, else module
 * matrix's transpose. */
static rayo_status wg_transpose(cuda_state *st, CUstream stream, CUdeviceptr dst, CUdeviceptr src, size_t rows,
                                size_t cols)
{
    size_t gx = (cols + 63) / 64, gy = (rows + 63) / 64;
    if (rows % 4 || cols % 4 || (src & 15) || (dst & 15) || gy > 65535 || gx > INT32_MAX) {
        cuda_op tr = {.op = RAYO_OP_TRANSPOSE, .m = rows, .n = cols, .a = src, .y = dst,
                      .family = &cuda_family_transpose};
        return cuda_launch_op(st, stream, &tr);
    }
    CUfunction fn;
    rayo_status s = cuda_function(st, MOD_WGMMA, "wg_transpose_v4", &fn);
    if (s != RAYO_OK)
        return s;
    unsigned long long r = rows, c = cols;
    void *params[] = {&dst, &src, &r, &c};
    CUresult e = cuda_launch_kernel(st, fn, (unsigned)gx, (unsigned)gy, 1, 256, 1, 1, 0, stream, params, NULL);
    return e == CUDA_SUCCESS ? RAYO_OK : cuda_fail(st, e, "wg_transpose_v4");
}

/* A and B as the float64 redo of a sum that overflowed reads them: the
 * TF32 kernels' K-major operands (k apart), the bf16 kernels' as stored
 * (lda, ldb apart); the f16 kernels ignore them. */
typedef struct wg_redo_operands {
    CUdeviceptr a, b;
    unsigned long long lda, ldb;
} wg_redo_operands;

/* k tiles per slice when a call's k is split in `parts` (1: all of them). */
static size_t wg_slice_tiles(const rayo_ptx_wgmma_config *c, size_t k, size_t parts)
{
    size_t tiles = (k + (size_t)c->box_k - 1) / (size_t)c->box_k;
    return (tiles + parts - 1) / parts;
}

/* The kernel of configuration c on tensor maps ta and tb, C (ldc apart);
 * a split kernel over `parts` slices of k (grid z: ceil(k tiles / parts)
 * each), else parts = 1. */
static rayo_status wg_launch(cuda_state *st, CUstream stream, const rayo_ptx_wgmma_config *c, CUtensorMap *ta,
                             CUtensorMap *tb, const cuda_op *op, size_t ldc, wg_redo_operands *ro, unsigned parts)
{
    CUfunction fn;
    rayo_status s = cuda_function(st, MOD_WGMMA, c->name, &fn);
    if (s != RAYO_OK)
        return s;
    CUdeviceptr y = op->y;
    unsigned long long m = op->m, n = op->n, k = op->k, ld = ldc;
    float alpha = op->alpha, beta = op->beta;
    void *params[] = {ta, tb, &y, &m, &n, &k, &ld, &alpha, &beta, &ro->a, &ro->b, &ro->lda, &ro->ldb};
    CUresult r;
    unsigned gx = (unsigned)((op->n + (size_t)c->block_n - 1) / (size_t)c->block_n);
    unsigned gy = (unsigned)((op->m + (size_t)c->block_m - 1) / (size_t)c->block_m);
    r = cuda_launch_kernel(st, fn, gx, gy, parts, (unsigned)c->threads, 1, 1, (unsigned)c->smem_bytes, stream,
                           params, NULL);
    return r == CUDA_SUCCESS ? RAYO_OK : cuda_fail(st, r, c->name);
}

rayo_status cuda_launch_wgmma_tf32(cuda_state *st, CUstream stream, const cuda_op *op)
{
    const rayo_ptx_wgmma_config *c = wg_pick(st, op);
    if (!c)
        return RAYO_E_UNSUPPORTED;
    size_t need = wg_copy_a(op) + wg_copy_b(op);
    if (need && !op->scratch)
        return RAYO_E_UNSUPPORTED; /* a caller without scratch for the copies (typed matmul) */
    CUdeviceptr a = op->a, b = op->b;
    if ((wg_copy_a(op) == 0 && (a & 15)) || (wg_copy_b(op) == 0 && (b & 15)))
        return RAYO_E_UNSUPPORTED;
    CUtensorMap ta, tb;
    rayo_status s = RAYO_OK;
    if (wg_copy_a(op)) {
        a = op->scratch;
        s = wg_transpose(st, stream, a, op->a, op->k, op->m);
    }
    if (s == RAYO_OK && wg_copy_b(op)) {
        b = op->scratch + wg_copy_a(op);
        s = wg_transpose(st, stream, b, op->b, op->k, op->n);
    }
    if (s != RAYO_OK)
        return s;
    CUresult r = wg_tensor_map(st, &ta, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, a, op->m, op->k, op->k * 4,
                               (unsigned)c->box_k, (unsigned)c->block_m);
    if (r == CUDA_SUCCESS)
        r = wg_tensor_map(st, &tb, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, b, op->n, op->k, op->k * 4, (unsigned)c->box_k,
                          (unsigned)c->block_n);
    if (r != CUDA_SUCCESS)
        return cuda_fail(st, r, "cuTensorMapEncodeTiled");
    wg_redo_operands ro = {a, b, op->k, op->k};
    return wg_launch(st, stream, c, &ta, &tb, op, op->n, &ro, 1);
}

/* The 16-bit kernel for this call (relaxed f16 x f16 or bf16 x bf16, C in
 * f32), or NULL when the wgmma path does not take it. */
static const rayo_ptx_wgmma_config *wg_pick_half(const cuda_state *st, const cuda_op *op)
{
    rayo_dtype dt = RAYO_DTYPE_OF(op->dtypes, 0);
    if (!st->use_wgmma || !st->use_wgmma_half || !st->drv->cuTensorMapEncodeTiled ||
        op->op != RAYO_OP_MATMUL || op->precision != RAYO_PRECISION_RELAXED)
        return NULL;
    if ((dt != RAYO_DTYPE_F16 && dt != RAYO_DTYPE_BF16) || RAYO_DTYPE_OF(op->dtypes, 1) != dt ||
        RAYO_DTYPE_OF(op->dtypes, 3) != RAYO_DTYPE_F32)
        return NULL;
    int ta = (op->flags & RAYO_TRANS_A) != 0, tb = (op->flags & RAYO_TRANS_B) != 0;
    size_t lda = op->lda ? op->lda : ta ? op->m : op->k, ldb = op->ldb ? op->ldb : tb ? op->k : op->n;
    size_t ldc = op->ldy ? op->ldy : op->n;
    /* 16-byte row pitch and base for the copies; pairs of columns for the
     * stores (an odd n would write one past each row: H200 conform, strided C) */
    if (!op->m || !op->n || !op->k || lda % 8 || ldb % 8 || ldc % 2 || op->n % 2 || (op->a & 15) ||
        (op->b & 15) || (op->y & 7))
        return NULL;
    if (op->m > INT32_MAX || op->n > INT32_MAX || op->k > INT32_MAX || lda > INT32_MAX || ldb > INT32_MAX)
        return NULL;
    /* the configured shape (wg_tf32_<shape>) in this type and layout, or
     * 128 x 128 where the configured one's tiles would fill at most half
     * the GPU (2048^3: 128 tiles of 128 x 256 on 132 SMs ran 584 TFLOP/s,
     * kept; 1024^3: 32 tiles, 140) */
    const char *shape = strncmp(st->wgmma_kernel, "wg_tf32_", 8) == 0 ? st->wgmma_kernel + 8 : "128x256";
    char name[48];
    const rayo_ptx_wgmma_config *c = NULL;
    for (int pass = 0; pass < 2; pass++) {
        snprintf(name, sizeof name, "wg_%s_%c%c_%s", dt == RAYO_DTYPE_BF16 ? "bf16" : "f16", ta ? 't' : 'n',
                 tb ? 't' : 'n', pass ? WG_SMALL_SHAPE : shape);
        const rayo_ptx_wgmma_config *t = wg_config(name);
        if (t && t->smem_bytes <= st->max_smem_optin)
            c = t;
        if (!c || 2 * ((op->m + (size_t)c->block_m - 1) / (size_t)c->block_m) *
                          ((op->n + (size_t)c->block_n - 1) / (size_t)c->block_n) > (size_t)st->sm_count)
            break;
    }
    if (!c || c->smem_bytes > st->max_smem_optin ||
        (op->m + (size_t)c->block_m - 1) / (size_t)c->block_m > 65535)
        return NULL;
    return c;
}

/* Operand X of a 16-bit call, stored as `rows` rows of `cols` elements
 * `ld` apart: K-major (its rows run along k; boxes of one k tile x `tile`
 * rows) or MN-major (its rows are k; boxes of 64 x one k tile). */
static CUresult wg_half_map(const cuda_state *st, CUtensorMap *map, CUtensorMapDataType dt, CUdeviceptr base,
                            size_t rows, size_t cols, size_t ld, int k_major, const rayo_ptx_wgmma_config *c,
                            int tile)
{
    unsigned bk = (unsigned)c->box_k;
    return wg_tensor_map(st, map, dt, base, rows, cols, ld * 2, k_major ? bk : 64, k_major ? (unsigned)tile : bk);
}

int cuda_wgmma_half_takes(const cuda_state *st, const cuda_op *op)
{
    return wg_pick_half(st, op) != NULL;
}

/* Kernel c (a split one when parts > 1) on the 16-bit call op. */
static rayo_status wg_launch_half(cuda_state *st, CUstream stream, const cuda_op *op,
                                  const rayo_ptx_wgmma_config *c, unsigned parts)
{
    int ta = (op->flags & RAYO_TRANS_A) != 0, tb = (op->flags & RAYO_TRANS_B) != 0;
    CUtensorMapDataType dt = RAYO_DTYPE_OF(op->dtypes, 0) == RAYO_DTYPE_BF16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16
                                                                             : CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
    size_t lda = op->lda ? op->lda : ta ? op->m : op->k, ldb = op->ldb ? op->ldb : tb ? op->k : op->n;
    CUtensorMap mta, mtb;
    /* A: m x k (K-major) or, transposed, k x m (M-major); B: n x k
     * (transposed: K-major) or k x n (N-major) */
    CUresult r = ta ? wg_half_map(st, &mta, dt, op->a, op->k, op->m, lda, 0, c, c->block_m)
                    : wg_half_map(st, &mta, dt, op->a, op->m, op->k, lda, 1, c, c->block_m);
    if (r == CUDA_SUCCESS)
        r = tb ? wg_half_map(st, &mtb, dt, op->b, op->n, op->k, ldb, 1, c, c->block_n)
               : wg_half_map(st, &mtb, dt, op->b, op->k, op->n, ldb, 0, c, c->block_n);
    if (r != CUDA_SUCCESS)
        return cuda_fail(st, r, "cuTensorMapEncodeTiled");
    wg_redo_operands ro = {op->a, op->b, lda, ldb};
    return wg_launch(st, stream, c, &mta, &mtb, op, op->ldy ? op->ldy : op->n, &ro, parts);
}

rayo_status cuda_launch_wgmma_half(cuda_state *st, CUstream stream, const cuda_op *op)
{
    const rayo_ptx_wgmma_config *c = wg_pick_half(st, op);
    return c ? wg_launch_half(st, stream, op, c, 1) : RAYO_E_UNSUPPORTED;
}

/* The split-k kernel of the call's shape: f16 A x B^T into a dense C
 * that holds nothing yet (beta = 0: each slice stores its own part). */
static const rayo_ptx_wgmma_config *wg_pick_split(const cuda_state *st, const cuda_op *op)
{
    const rayo_ptx_wgmma_config *c = wg_pick_half(st, op);
    if (!c || !st->use_prompt_split_k || RAYO_DTYPE_OF(op->dtypes, 0) != RAYO_DTYPE_F16 ||
        (op->flags & (RAYO_TRANS_A | RAYO_TRANS_B)) != RAYO_TRANS_B || (op->ldy && op->ldy != op->n) ||
        op->beta != 0.0f)
        return NULL;
    char name[64];
    snprintf(name, sizeof name, "%s_sk", c->name);
    const rayo_ptx_wgmma_config *sk = wg_config(name);
    return sk && sk->smem_bytes <= st->max_smem_optin ? sk : NULL;
}

/* Waves of `blocks` blocks on the GPU's multiprocessors (one block each). */
static size_t wg_waves(const cuda_state *st, size_t blocks)
{
    return (blocks + (size_t)st->sm_count - 1) / (size_t)st->sm_count;
}

unsigned cuda_wgmma_half_parts(const cuda_state *st, const cuda_op *op)
{
    const rayo_ptx_wgmma_config *c = wg_pick_split(st, op);
    if (!c || st->sm_count <= 0)
        return 1;
    size_t tiles = ((op->m + (size_t)c->block_m - 1) / (size_t)c->block_m) *
                   ((op->n + (size_t)c->block_n - 1) / (size_t)c->block_n);
    if (tiles >= (size_t)st->sm_count)
        return 1; /* a full wave already */
    size_t most = wg_slice_tiles(c, op->k, 1) / WG_SPLIT_MIN_TILES, best = 1;
    if (most > WG_SPLIT_MAX_PARTS)
        most = WG_SPLIT_MAX_PARTS;
    /* the time goes as waves / parts (each block does 1 / parts of the
     * work); a split must save a tenth to pay for its partial sums */
    for (size_t p = 2; p <= most; p++)
        if (10 * wg_waves(st, tiles * p) * best < 9 * wg_waves(st, tiles * best) * p)
            best = p;
    /* as many parts as slices of that length need: none is empty (the
     * kernel cuts slices of ceil(k tiles / parts), no longer) */
    size_t per = wg_slice_tiles(c, op->k, best);
    return (unsigned)((wg_slice_tiles(c, op->k, 1) + per - 1) / per);
}

rayo_status cuda_launch_wgmma_half_split(cuda_state *st, CUstream stream, const cuda_op *op, unsigned parts)
{
    if (parts <= 1)
        return cuda_launch_wgmma_half(st, stream, op);
    const rayo_ptx_wgmma_config *c = wg_pick_split(st, op);
    return c ? wg_launch_half(st, stream, op, c, parts) : RAYO_E_UNSUPPORTED;
}

/* Dynamic shared memory of a wgmma kernel (0: not one). */
int cuda_wgmma_smem_bytes(const char *name)
{
    const rayo_ptx_wgmma_config *c = wg_config(name);
    return c ? c->smem_bytes : 0;
}
