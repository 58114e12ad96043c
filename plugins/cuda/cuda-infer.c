/* cuda-infer.c - launches of the inference kernels (PTX module "infer",
 * ptx/infer-gemv.c): gemv with half and quantized weights. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "cuda-internal.h"
#include "cuda-ptx.h"

#include <stdio.h>
#include <string.h>

int cuda_strides_supported(uint32_t op, uint32_t dtypes)
{
    return op == RAYO_OP_GEMV && dtypes != 0;
}

static const rayo_ptx_gemvq_config *gemvq_config(rayo_dtype dt)
{
    for (unsigned i = 0; i < rayo_cuda_gemvq_config_count; i++)
        if (rayo_cuda_gemvq_configs[i].dtype == (int)dt)
            return &rayo_cuda_gemvq_configs[i];
    return NULL;
}

/* y(m) = alpha A x + beta y, A m x n in its dtype (rows lda elements apart). */
rayo_status cuda_launch_gemvq(cuda_state *st, CUstream stream, const cuda_op *op)
{
    rayo_dtype dt = RAYO_DTYPE_OF(op->dtypes, 0);
    const rayo_ptx_gemvq_config *cfg = gemvq_config(dt);
    size_t row_bytes;
    if (!cfg || (op->flags & RAYO_TRANS_A) || !rayo_dtype_row_bytes(dt, op->lda ? op->lda : op->n, &row_bytes))
        return RAYO_E_UNSUPPORTED;
    size_t smem = rayo_ptx_gemvq_smem(cfg, op->n);
    if (smem > (size_t)st->max_smem_optin)
        return RAYO_E_UNSUPPORTED;
    if (op->m == 0)
        return RAYO_OK;
    size_t blocks = op->m / RAYO_PTX_GEMVQ_ROWS + (op->m % RAYO_PTX_GEMVQ_ROWS != 0);
    if (blocks > 0x7fffffffu)
        return RAYO_E_UNSUPPORTED;
    CUfunction fn;
    rayo_status s = cuda_function(st, MOD_INFER, cfg->name, &fn);
    if (s != RAYO_OK)
        return s;
    CUdeviceptr y = op->y, a = op->a, x = op->b;
    unsigned long long m = op->m, n = op->n, lda = row_bytes;
    float alpha = op->alpha, beta = op->beta;
    void *params[] = {&y, &a, &x, &m, &n, &lda, &alpha, &beta};
    CUresult r = st->drv->cuLaunchKernel(fn, (unsigned)blocks, 1, 1, 32 * RAYO_PTX_GEMVQ_ROWS, 1, 1,
                                         (unsigned)smem, stream, params, NULL);
    if (r != CUDA_SUCCESS) {
        char what[96];
        snprintf(what, sizeof what, "launch of %s (%zu blocks)", cfg->name, blocks);
        return cuda_fail(st, r, what);
    }
    return RAYO_OK;
}
