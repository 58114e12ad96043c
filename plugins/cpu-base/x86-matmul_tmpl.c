/* SPDX-License-Identifier: MIT */
/* x86-matmul_tmpl.c - the matmul entry points of avx2 and avx512 around
 * each plugin's blocked sgemm: empty and k = 0 products, m = 1 or n = 1 as a
 * gemv, a product past FLT_MAX in float64, the matmul kernel and the typed
 * one (dequantized panels through the same sgemm, x86-typed-matmul.c).
 * Included at the end of the plugin's matmul source, which defines
 * X86_SGEMM (its sgemm's name, declared in its plugin.h), X86_GEMV_RUN
 * (x86-gemv_tmpl.c) and gemm_blocked(st, g) first. */

/* m == 1 or n == 1: a matrix-vector product.
 *   m == 1: C (1 x n) = a^T op(B): B stored k x n is the transposed gemv,
 *           B stored n x k gives dot products;
 *   n == 1: C (m x 1) = op(A) b: A stored m x k gives dot products, A stored
 *           k x m is the transposed gemv. */
static void matmul_as_gemv(const x86_state *st, const x86_gemm_args *g)
{
    if (g->m == 1)
        X86_GEMV_RUN(st, !g->trans_b, g->trans_b ? g->n : g->k, g->trans_b ? g->k : g->n, g->alpha, g->B, g->A,
                     g->beta, g->C);
    else
        X86_GEMV_RUN(st, g->trans_a, g->trans_a ? g->k : g->m, g->trans_a ? g->m : g->k, g->alpha, g->A, g->B,
                     g->beta, g->C);
}

rayo_status X86_SGEMM(void *state, const x86_gemm_args *g)
{
    if (g->m == 0 || g->n == 0)
        return RAYO_OK;
    if (g->k == 0) { /* op(A) op(B) is the zero matrix */
        for (size_t i = 0; i < g->m * g->n; i++)
            g->C[i] = g->beta == 0.0f ? 0.0f : g->beta * g->C[i];
        return RAYO_OK;
    }
    if (g->m == 1 || g->n == 1) {
        matmul_as_gemv(state, g);
        return RAYO_OK;
    }
    if (x86_gemm_f64_if_overflow(g))
        return RAYO_OK;
    return gemm_blocked(state, g);
}

CPU_KERNEL_FN(matmul)
{
    if (rayo_call_strided(call))
        return RAYO_E_UNSUPPORTED; /* row strides: the scalar backend takes them */
    x86_gemm_args g = {
        .m = call->m, .n = call->n, .k = call->k, .alpha = call->alpha, .beta = call->beta,
        .A = call->a, .B = call->b, .C = call->y,
        .trans_a = (call->flags & RAYO_TRANS_A) != 0, .trans_b = (call->flags & RAYO_TRANS_B) != 0,
    };
    return X86_SGEMM(state, &g);
}

/* f16, bf16 and block-quantized operands: dequantized panels through this
 * sgemm (x86-typed-matmul.c). */
CPU_KERNEL_FN(matmul_typed)
{
    rayo_status s = typed_matmul_as_gemvs(state, call, CPU_KERNEL(gemv_quant));
    return s != RAYO_E_UNSUPPORTED ? s : typed_matmul_run(state, call, X86_SGEMM);
}
