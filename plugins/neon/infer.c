/* SPDX-License-Identifier: MIT */
/* infer.c - rope, attention (decode) and the gated units swiglu, geglu,
 * geglu_tanh on Advanced SIMD.  The loops over tokens, heads, items and
 * rows, the checks and the threads are ../cpu-base/simd128-infer_tmpl.c; this
 * file holds the vector parts.
 *
 * attention: the online softmax is the glue's; here are the score dot
 * product, the weights e^(s - max) and the weighted sum of V, each in float
 * lanes.  An f16 cache is widened exactly as it is read.
 */
#include "plugin.h"
#include "neon-math.h"
#include "simd128-infer_tmpl.c"

#include <math.h>

#define COST_GLU 12 /* cheap operations per element, for threading */

/* ---- rope ------------------------------------------------------------------- */

/* (u, v) rotated by (c, s): u c - v s, u s + v c */
static inline void rotate(float32x4_t u, float32x4_t v, float32x4_t c, float32x4_t s, float32x4_t *ru,
                          float32x4_t *rv)
{
    *ru = vfmsq_f32(vmulq_f32(u, c), v, s);
    *rv = vfmaq_f32(vmulq_f32(u, s), v, c);
}

static void rope_norm_pairs(const float *x, float *y, const float *cs, const float *sn, size_t count)
{
    size_t i = 0;
    for (; i + 4 <= count; i += 4) {
        float32x4x2_t in = vld2q_f32(x + 2 * i), out;
        rotate(in.val[0], in.val[1], vld1q_f32(cs + i), vld1q_f32(sn + i), &out.val[0], &out.val[1]);
        vst2q_f32(y + 2 * i, out);
    }
    for (; i < count; i++) {
        float u = x[2 * i], v = x[2 * i + 1];
        y[2 * i] = fmaf(-v, sn[i], u * cs[i]);
        y[2 * i + 1] = fmaf(v, cs[i], u * sn[i]);
    }
}

static void rope_neox_pairs(const float *xu, const float *xv, float *yu, float *yv, const float *cs,
                            const float *sn, size_t count)
{
    size_t i = 0;
    for (; i + 4 <= count; i += 4) {
        float32x4_t ru, rv;
        rotate(vld1q_f32(xu + i), vld1q_f32(xv + i), vld1q_f32(cs + i), vld1q_f32(sn + i), &ru, &rv);
        vst1q_f32(yu + i, ru);
        vst1q_f32(yv + i, rv);
    }
    for (; i < count; i++) {
        float u = xu[i], v = xv[i];
        yu[i] = fmaf(-v, sn[i], u * cs[i]);
        yv[i] = fmaf(v, cs[i], u * sn[i]);
    }
}

NEON_KERNEL(rope)
{
    return cpu_rope(state, call);
}

/* ---- attention ----------------------------------------------------------------- */

/* Four cache values of a row from element i, as floats. */
static inline float32x4_t kv4(const uint8_t *row, size_t i, int f16)
{
    if (f16)
        return vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16((const uint16_t *)(const void *)row + i)));
    return vld1q_f32((const float *)(const void *)row + i);
}

static inline float kv1(const uint8_t *row, size_t i, int f16)
{
    return f16 ? rayo_f16_to_f32(rayo__le16(row + 2 * i)) : ((const float *)(const void *)row)[i];
}

/* q . k over d, in float lanes. */
static inline float attn_dot(const float *q, const uint8_t *k, size_t d, int f16)
{
    float32x4_t s0 = vdupq_n_f32(0.0f), s1 = s0;
    size_t i = 0;
    for (; i + 8 <= d; i += 8) {
        s0 = vfmaq_f32(s0, vld1q_f32(q + i), kv4(k, i, f16));
        s1 = vfmaq_f32(s1, vld1q_f32(q + i + 4), kv4(k, i + 4, f16));
    }
    if (i + 4 <= d) {
        s0 = vfmaq_f32(s0, vld1q_f32(q + i), kv4(k, i, f16));
        i += 4;
    }
    float s = vaddvq_f32(vaddq_f32(s0, s1));
    for (; i < d; i++)
        s = fmaf(q[i], kv1(k, i, f16), s);
    return s;
}

/* acc[l .. l + 4) += the block's float sum a. */
static inline void add_to_acc(double *acc, float32x4_t a)
{
    vst1q_f64(acc, vaddq_f64(vld1q_f64(acc), vcvt_f64_f32(vget_low_f32(a))));
    vst1q_f64(acc + 2, vaddq_f64(vld1q_f64(acc + 2), vcvt_high_f64_f32(a)));
}

/* Eight dimensions per pass over the keys (two accumulators: one weight
 * load serves both), then four, then one by one. */
static inline __attribute__((always_inline)) void
attn_add_values(const cpu_attn_item *it, size_t j0, size_t nb, const float *w, int f16)
{
    const uint8_t *v = it->v + j0 * it->v_step;
    size_t d = it->head_dim, l = 0;
    for (; l + 8 <= d; l += 8) {
        float32x4_t a0 = vdupq_n_f32(0.0f), a1 = a0;
        for (size_t j = 0; j < nb; j++) {
            a0 = vfmaq_n_f32(a0, kv4(v + j * it->v_step, l, f16), w[j]);
            a1 = vfmaq_n_f32(a1, kv4(v + j * it->v_step, l + 4, f16), w[j]);
        }
        add_to_acc(it->acc + l, a0);
        add_to_acc(it->acc + l + 4, a1);
    }
    if (l + 4 <= d) {
        float32x4_t a = vdupq_n_f32(0.0f);
        for (size_t j = 0; j < nb; j++)
            a = vfmaq_n_f32(a, kv4(v + j * it->v_step, l, f16), w[j]);
        add_to_acc(it->acc + l, a);
        l += 4;
    }
    for (; l < d; l++) {
        float a = 0.0f;
        for (size_t j = 0; j < nb; j++)
            a = fmaf(kv1(v + j * it->v_step, l, f16), w[j], a);
        it->acc[l] += a;
    }
}

/* w = e^(s - max) over the block (vec_exp; the last nb % 4 by expf). */
static inline double attn_weights(const float *s, float *w, size_t nb, float max)
{
    float32x4_t mx = vdupq_n_f32(max), sum = vdupq_n_f32(0.0f);
    size_t j = 0;
    for (; j + 4 <= nb; j += 4) {
        float32x4_t e = vec_exp(vsubq_f32(vld1q_f32(s + j), mx));
        vst1q_f32(w + j, e);
        sum = vaddq_f32(sum, e);
    }
    double total = vaddvq_f32(sum);
    for (; j < nb; j++) {
        w[j] = expf(s[j] - max);
        total += w[j];
    }
    return total;
}

NEON_KERNEL(attention)
{
    return cpu_attention(state, call);
}

/* ---- gated units (simd128-glu_tmpl.c) ----------------------------------------- */
#define SIMD_LOAD vld1q_f32
#define SIMD_STORE vst1q_f32
#define SIMD_MUL vmulq_f32
#define SIMD_SILU vec_silu
#define SIMD_GELU vec_gelu
#define SIMD_GELU_TANH vec_gelu_tanh
#include "simd128-glu_tmpl.c"
