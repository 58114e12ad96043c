/* SPDX-License-Identifier: MIT */
/* infer.c - rope, attention (decode) and the gated units swiglu, geglu,
 * geglu_tanh on SIMD128.  The loops over tokens, heads, items and rows, the
 * checks and the threads are ../cpu-base/simd128-infer_tmpl.c; this file holds
 * the vector parts.
 *
 * attention: the online softmax is the glue's; here are the score dot
 * product, the weights e^(s - max) and the weighted sum of V, each in float
 * lanes.  An f16 cache is widened exactly as it is read.
 */
#include "plugin.h"
#include "simd128-infer_tmpl.c"

#include <math.h>

#define COST_GLU 12 /* cheap operations per element, for threading */

/* ---- rope ------------------------------------------------------------------- */

/* (u, v) rotated by (c, s): u c - v s, u s + v c */
static inline void rotate(vf32 u, vf32 v, vf32 c, vf32 s, vf32 *ru, vf32 *rv)
{
    *ru = vsub(vmul(u, c), vmul(v, s));
    *rv = vadd(vmul(u, s), vmul(v, c));
}

static void rope_norm_pairs(const float *x, float *y, const float *cs, const float *sn, size_t count)
{
    size_t i = 0;
    for (; i + 4 <= count; i += 4) {
        vf32 a = wasm_v128_load(x + 2 * i), b = wasm_v128_load(x + 2 * i + 4), ru, rv;
        rotate(wasm_i32x4_shuffle(a, b, 0, 2, 4, 6), wasm_i32x4_shuffle(a, b, 1, 3, 5, 7),
               wasm_v128_load(cs + i), wasm_v128_load(sn + i), &ru, &rv);
        wasm_v128_store(y + 2 * i, wasm_i32x4_shuffle(ru, rv, 0, 4, 1, 5));
        wasm_v128_store(y + 2 * i + 4, wasm_i32x4_shuffle(ru, rv, 2, 6, 3, 7));
    }
    for (; i < count; i++) {
        float u = x[2 * i], v = x[2 * i + 1];
        y[2 * i] = u * cs[i] - v * sn[i];
        y[2 * i + 1] = u * sn[i] + v * cs[i];
    }
}

static void rope_neox_pairs(const float *xu, const float *xv, float *yu, float *yv, const float *cs,
                            const float *sn, size_t count)
{
    size_t i = 0;
    for (; i + 4 <= count; i += 4) {
        vf32 ru, rv;
        rotate(wasm_v128_load(xu + i), wasm_v128_load(xv + i), wasm_v128_load(cs + i),
               wasm_v128_load(sn + i), &ru, &rv);
        wasm_v128_store(yu + i, ru);
        wasm_v128_store(yv + i, rv);
    }
    for (; i < count; i++) {
        float u = xu[i], v = xv[i];
        yu[i] = u * cs[i] - v * sn[i];
        yv[i] = u * sn[i] + v * cs[i];
    }
}

WASM_KERNEL(rope)
{
    return cpu_rope(state, call);
}

/* ---- attention ----------------------------------------------------------------- */

/* Four cache values of a row from element i, as floats. */
static inline vf32 kv4(const uint8_t *row, size_t i, int f16)
{
    return f16 ? wasm_f16x4(row + 2 * i) : wasm_v128_load(row + 4 * i);
}

static inline float kv1(const uint8_t *row, size_t i, int f16)
{
    return f16 ? rayo_f16_to_f32(rayo__le16(row + 2 * i)) : ((const float *)(const void *)row)[i];
}

/* q . k over d, in float lanes. */
static inline float attn_dot(const float *q, const uint8_t *k, size_t d, int f16)
{
    vf32 s0 = vsplat(0.0f), s1 = s0;
    size_t i = 0;
    for (; i + 8 <= d; i += 8) {
        s0 = vadd(s0, vmul(wasm_v128_load(q + i), kv4(k, i, f16)));
        s1 = vadd(s1, vmul(wasm_v128_load(q + i + 4), kv4(k, i + 4, f16)));
    }
    if (i + 4 <= d) {
        s0 = vadd(s0, vmul(wasm_v128_load(q + i), kv4(k, i, f16)));
        i += 4;
    }
    vf32 s = vadd(s0, s1);
    float sum = (wasm_f32x4_extract_lane(s, 0) + wasm_f32x4_extract_lane(s, 1)) +
                (wasm_f32x4_extract_lane(s, 2) + wasm_f32x4_extract_lane(s, 3));
    for (; i < d; i++)
        sum += q[i] * kv1(k, i, f16);
    return sum;
}

static inline __attribute__((always_inline)) void
attn_add_values(const cpu_attn_item *it, size_t j0, size_t nb, const float *w, int f16)
{
    const uint8_t *v = it->v + j0 * it->v_step;
    size_t d = it->head_dim, l = 0;
    for (; l + 4 <= d; l += 4) {
        vf32 a = vsplat(0.0f);
        for (size_t j = 0; j < nb; j++)
            a = vadd(a, vmul(kv4(v + j * it->v_step, l, f16), vsplat(w[j])));
        v128_t lo = wasm_f64x2_promote_low_f32x4(a);
        v128_t hi = wasm_f64x2_promote_low_f32x4(wasm_i32x4_shuffle(a, a, 2, 3, 0, 1));
        wasm_v128_store(it->acc + l, wasm_f64x2_add(wasm_v128_load(it->acc + l), lo));
        wasm_v128_store(it->acc + l + 2, wasm_f64x2_add(wasm_v128_load(it->acc + l + 2), hi));
    }
    for (; l < d; l++) {
        float a = 0.0f;
        for (size_t j = 0; j < nb; j++)
            a += kv1(v + j * it->v_step, l, f16) * w[j];
        it->acc[l] += a;
    }
}

/* w = e^(s - max) over the block (vexp; the tail on a padded vector). */
static inline double attn_weights(const float *s, float *w, size_t nb, float max)
{
    vf32 mx = vsplat(max), sum = vsplat(0.0f);
    size_t j = 0;
    for (; j + 4 <= nb; j += 4) {
        vf32 e = vexp(vsub(wasm_v128_load(s + j), mx));
        wasm_v128_store(w + j, e);
        sum = vadd(sum, e);
    }
    if (j < nb) /* padding lanes are not stored */
        store_partial(w + j, vexp(vsub(load_partial(s + j, nb - j), mx)), nb - j);
    double total = ((double)wasm_f32x4_extract_lane(sum, 0) + (double)wasm_f32x4_extract_lane(sum, 1)) +
                   ((double)wasm_f32x4_extract_lane(sum, 2) + (double)wasm_f32x4_extract_lane(sum, 3));
    for (; j < nb; j++)
        total += w[j];
    return total;
}

WASM_KERNEL(attention)
{
    return cpu_attention(state, call);
}

/* ---- gated units (simd128-glu_tmpl.c) ----------------------------------------- */
#define SIMD_LOAD wasm_v128_load
#define SIMD_STORE wasm_v128_store
#define SIMD_MUL vmul
#define SIMD_SILU vsilu
#define SIMD_GELU vgelu
#define SIMD_GELU_TANH vgelu_tanh
#include "simd128-glu_tmpl.c"
