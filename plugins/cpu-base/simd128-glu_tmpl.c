/* SPDX-License-Identifier: MIT */
/* simd128-glu_tmpl.c - the gated units of neon and wasm, the same but for
 * their vector words: swiglu, geglu, geglu_tanh, y = f(g) u, the last n % 4
 * values through the same vector function on a padded vector, the gate's
 * left tail redone in double (CPU_GLU_KERNEL, simd128-infer_tmpl.c).
 *
 * Included at the end of the plugin's infer.c, which defines first:
 *   SIMD_LOAD(p) SIMD_STORE(p, v) SIMD_MUL(a, b)   four floats
 *   load_partial(p, k) store_partial(p, v, k)      the first k < 4 of them
 *   SIMD_SILU SIMD_GELU SIMD_GELU_TANH             the activations
 *   COST_GLU   cheap operations per element, for threading
 */

#define GLU_ROW(NAME, F)                                                                   \
    static void NAME(const float *g, const float *u, float *y, size_t n)                   \
    {                                                                                      \
        size_t i = 0;                                                                      \
        for (; i + 4 <= n; i += 4)                                                         \
            SIMD_STORE(y + i, SIMD_MUL(F(SIMD_LOAD(g + i)), SIMD_LOAD(u + i)));           \
        if (i < n)                                                                         \
            store_partial(y + i, SIMD_MUL(F(load_partial(g + i, n - i)), load_partial(u + i, n - i)), \
                          n - i);                                                          \
    }

GLU_ROW(swiglu_row, SIMD_SILU)
GLU_ROW(geglu_row, SIMD_GELU)
GLU_ROW(geglu_tanh_row, SIMD_GELU_TANH)

CPU_GLU_KERNEL(swiglu, swiglu_row, COST_GLU, CPU_GLU_SILU, -80.0f)
CPU_GLU_KERNEL(geglu, geglu_row, COST_GLU, CPU_GLU_GELU, -4.0f) /* its vec_gelu loses the tail sooner */
CPU_GLU_KERNEL(geglu_tanh, geglu_tanh_row, COST_GLU, CPU_GLU_GELU_TANH, -3.0f)
