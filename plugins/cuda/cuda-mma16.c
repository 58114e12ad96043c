/* SPDX-License-Identifier: MIT */
/* cuda-mma16.c - matmul of f16 x f16 and bf16 x bf16 (C in f32) on the
 * tensor cores: the mma16_* kernels of module "mma16" (ptx/tf32.c), mma
 * m16n8k16 with float sums.
 *
 * A relaxed call takes the plain kernels (one float sum per element of C);
 * a strict one the _b256 kernels, whose float sums go into second sums
 * every 256 values of k, so the error grows with about 256 / 16 + K / 256
 * roundings: within the strict 1e-5 up to MMA16_STRICT_MAX_K.  Any M, N, K;
 * both operands in any of the four transpose layouts; row strides that are
 * multiples of 8 elements on 16-byte aligned operands.  Other calls take
 * the dequantizing path of cuda-typed-matmul.c. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "cuda-internal.h"
#include "cuda-ptx.h"

#include <stdio.h>
#include <string.h>

/* The shapes the plugin picks when the config names none (measured on the
 * H200: doc/benchmarks-cuda.md). */
#define DEFAULT_MMA16 "128x128_w2x2_p"
#define DEFAULT_MMA16_STRICT "128x128_w2x4_b256_p"
#define MMA16_STRICT_MAX_K 16384
#define MMA16_MAX_DIM 0x7fffffffu /* the kernels count rows and k in 32 bits */

/* The kernel of shape `shape` for dtype dt and the call's transposes. */
static const rayo_ptx_tf32_config *mma16_find(const char *shape, rayo_dtype dt, uint32_t flags)
{
    char name[64];
    snprintf(name, sizeof name, "mma16_%s_%c%c_%s", dt == RAYO_DTYPE_BF16 ? "bf16" : "f16",
             (flags & RAYO_TRANS_A) ? 't' : 'n', (flags & RAYO_TRANS_B) ? 't' : 'n', shape);
    for (unsigned i = 0; i < rayo_cuda_mma16_config_count; i++)
        if (strcmp(rayo_cuda_mma16_configs[i].name, name) == 0)
            return &rayo_cuda_mma16_configs[i];
    return NULL;
}

/* One key: auto (or on) = dflt, off = "" (the dequantizing path), or a
 * shape of the kernel table (whose name has `need` in it). */
static void config_shape(const rayo_host *host, const char *key, const char *dflt, const char *need, char *out,
                         size_t len)
{
    const char *v = host->config ? host->config(host, key) : NULL;
    snprintf(out, len, "%s", dflt);
    if (!v || !*v || !strcmp(v, "auto") || !strcmp(v, "on"))
        return;
    if (!strcmp(v, "off")) {
        out[0] = '\0';
        return;
    }
    if (strlen(v) < len && strstr(v, need) && mma16_find(v, RAYO_DTYPE_F16, 0)) {
        snprintf(out, len, "%s", v);
        return;
    }
    host->log(host, RAYO_LOG_WARN, "[backend.cuda] %s = %s: expected auto, off or a %s shape; using %s", key, v,
              need[0] ? need : "mma16", dflt);
}

void cuda_mma16_config(cuda_state *st)
{
    config_shape(st->host, "mma16_kernel", DEFAULT_MMA16, "", st->mma16_shape, sizeof st->mma16_shape);
    config_shape(st->host, "mma16_strict_kernel", DEFAULT_MMA16_STRICT, "_b", st->mma16_strict_shape,
                 sizeof st->mma16_strict_shape);
}

static int aligned16(CUdeviceptr p)
{
    return (p & 15u) == 0;
}

/* The choice of kernel for an f16 x f16 or bf16 x bf16 matmul: NULL when
 * none of module "mma16" takes the call (then cuda-typed-matmul.c
 * dequantizes both operands to f32). */
const rayo_ptx_tf32_config *cuda_mma16_kernel(const cuda_state *st, const cuda_op *op)
{
    rayo_dtype adt = RAYO_DTYPE_OF(op->dtypes, 0);
    if (op->op != RAYO_OP_MATMUL || (adt != RAYO_DTYPE_F16 && adt != RAYO_DTYPE_BF16) ||
        RAYO_DTYPE_OF(op->dtypes, 1) != adt || RAYO_DTYPE_OF(op->dtypes, 3) != RAYO_DTYPE_F32)
        return NULL;
    int strict = op->precision != RAYO_PRECISION_RELAXED;
    const char *shape = strict ? st->mma16_strict_shape : st->mma16_shape;
    if (!shape[0] || (strict && op->k > MMA16_STRICT_MAX_K))
        return NULL;
    int ta = (op->flags & RAYO_TRANS_A) != 0, tb = (op->flags & RAYO_TRANS_B) != 0;
    size_t lda = op->lda ? op->lda : ta ? op->m : op->k, ldb = op->ldb ? op->ldb : tb ? op->k : op->n;
    if (lda % 8 || ldb % 8 || !aligned16(op->a) || !aligned16(op->b) || op->m > MMA16_MAX_DIM ||
        op->n > MMA16_MAX_DIM || op->k > MMA16_MAX_DIM)
        return NULL;
    const rayo_ptx_tf32_config *cfg = mma16_find(shape, adt, op->flags);
    if (!cfg || cfg->smem_bytes > st->max_smem_optin || (op->m + (size_t)cfg->block_m - 1) / cfg->block_m > 65535)
        return NULL;
    return cfg;
}

rayo_status cuda_launch_mma16(cuda_state *st, CUstream stream, const cuda_op *op, const rayo_ptx_tf32_config *cfg)
{
    if (op->m == 0 || op->n == 0)
        return RAYO_OK;
    int ta = (op->flags & RAYO_TRANS_A) != 0, tb = (op->flags & RAYO_TRANS_B) != 0;
    CUdeviceptr c = op->y, a = op->a, b = op->b;
    unsigned long long m = op->m, n = op->n, k = op->k;
    unsigned long long lda = op->lda ? op->lda : ta ? op->m : op->k, ldb = op->ldb ? op->ldb : tb ? op->k : op->n;
    unsigned long long ldc = op->ldy ? op->ldy : op->n;
    float alpha = op->alpha, beta = op->beta;
    void *params[] = {&c, &a, &b, &m, &n, &k, &lda, &ldb, &ldc, &alpha, &beta};
    CUfunction fn;
    rayo_status s = cuda_function(st, MOD_MMA16, cfg->name, &fn);
    if (s != RAYO_OK)
        return s;
    unsigned gx = (unsigned)((op->n + (size_t)cfg->block_n - 1) / cfg->block_n);
    unsigned gy = (unsigned)((op->m + (size_t)cfg->block_m - 1) / cfg->block_m);
    CUresult r = cuda_launch_kernel(st, fn, gx, gy, 1, (unsigned)cfg->threads, 1, 1, (unsigned)cfg->smem_bytes,
                                         stream, params, NULL);
    if (r != CUDA_SUCCESS) {
        char what[96];
        snprintf(what, sizeof what, "launch of %s (grid %ux%u)", cfg->name, gx, gy);
        return cuda_fail(st, r, what);
    }
    return RAYO_OK;
}
