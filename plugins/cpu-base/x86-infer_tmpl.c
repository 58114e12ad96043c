/* SPDX-License-Identifier: MIT */
/* x86-infer_tmpl.c - the inference ops of the avx2 and avx512 backends, written
 * once: convert, get_rows, rope, attention, swiglu, geglu, geglu_tanh.
 *
 * Not a header to include anywhere else: plugins/avx2/infer.c and
 * plugins/avx512/infer.c each define a vector type VF of VF_LANES floats
 * and the vf_* operations on it (their vector math gives exp and the
 * activations), then include this file, which becomes that plugin's kernels
 * (CPU_KERNEL names them avx2_NAME or avx512_NAME) compiled with its flags.
 * Where the work is arithmetic (attention, rope, the gated units) it runs at
 * the plugin's width (but for attention's decode path: 256-bit in both, see
 * x86-attention_tmpl.c); conversions (convert, get_rows, the f16 KV cache) are
 * 8 elements at a time with AVX2 + F16C in both: they move memory, and a
 * 512-bit version would not move it faster.
 *
 * Exactness: convert and get_rows give the bytes of rayo-dtype.h (the
 * scalar backend's), which conformance checks bit for bit:
 *   f32 -> f16  vcvtps2ph with rounding imm 0 (nearest even; overflow to inf,
 *               subnormals, NaN quieted with its top payload bits, as
 *               rayo_f32_to_f16);
 *   -> f32      x86-row-to-f32.h;
 *   f32 -> bf16 integer adds and shifts, the scalar formula lane by lane;
 *   Q8_0/Q4_0   quantized with the reference's roundings in the same order
 *               (no FMA contraction: X86_NO_CONTRACT); a block with a
 *               non-finite value takes the scalar quantizer.
 */

#include "x86-row-to-f32.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#ifndef VF_LANES
#error "define VF, VF_LANES and the vf_* operations before including x86-infer_tmpl.c"
#endif

/* gcc contracts a * b + c written with intrinsics into an FMA as well; the
 * quantizers must keep both roundings. */
#if defined(__GNUC__) && !defined(__clang__)
#define X86_NO_CONTRACT __attribute__((optimize("fp-contract=off")))
#else
#define X86_NO_CONTRACT
#endif

static size_t x86_or_dense(size_t stride, size_t dense)
{
    return stride ? stride : dense;
}

/* ---- f16 and bf16 rows ------------------------------------------------------ */

static void f32_row_to_f16(const float *x, unsigned char *dst, size_t n)
{
    size_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm_storeu_si128((__m128i *)(void *)(dst + 2 * i),
                         _mm256_cvtps_ph(_mm256_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT));
    for (; i < n; i++)
        rayo__put_le16(dst + 2 * i, rayo_f32_to_f16(x[i]));
}

/* rayo_f32_to_bf16 on 8 lanes: (u + 0x7fff + lsb) >> 16, NaN -> (u >> 16) | 0x40. */
static inline __m256i bf16_round(__m256i u)
{
    __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1));
    __m256i rounded = _mm256_srli_epi32(_mm256_add_epi32(u, _mm256_add_epi32(lsb, _mm256_set1_epi32(0x7fff))), 16);
    __m256i magnitude = _mm256_and_si256(u, _mm256_set1_epi32(0x7fffffff));
    __m256i nan = _mm256_cmpgt_epi32(magnitude, _mm256_set1_epi32(0x7f800000));
    __m256i quiet = _mm256_or_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(0x40));
    return _mm256_blendv_epi8(rounded, quiet, nan);
}

static void f32_row_to_bf16(const float *x, unsigned char *dst, size_t n)
{
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256i h = bf16_round(_mm256_loadu_si256((const __m256i *)(const void *)(x + i)));
        __m256i packed = _mm256_permute4x64_epi64(_mm256_packus_epi32(h, h), 0x08); /* lanes 0 and 2 */
        _mm_storeu_si128((__m128i *)(void *)(dst + 2 * i), _mm256_castsi256_si128(packed));
    }
    for (; i < n; i++)
        rayo__put_le16(dst + 2 * i, rayo_f32_to_bf16(x[i]));
}

/* ---- quantizers --------------------------------------------------------------- */

/* Loads the 32 values of a block into v and their largest magnitudes (per
 * lane) into amax; 1 when all are finite. */
static inline int load_finite_block(const float *x, __m256 v[4], __m256 *amax)
{
    const __m256 magnitude = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
    __m256 m = _mm256_setzero_ps(), finite = _mm256_castsi256_ps(_mm256_set1_epi32(-1));
    for (int j = 0; j < 4; j++) {
        v[j] = _mm256_loadu_ps(x + 8 * j);
        __m256 a = _mm256_and_ps(v[j], magnitude);
        finite = _mm256_and_ps(finite, _mm256_cmp_ps(a, _mm256_set1_ps(INFINITY), _CMP_LT_OQ));
        m = _mm256_max_ps(m, a);
    }
    *amax = m;
    return _mm256_movemask_ps(finite) == 0xff;
}

static inline float hmax8(__m256 v)
{
    __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    m = _mm_max_ps(m, _mm_movehl_ps(m, m));
    return _mm_cvtss_f32(_mm_max_ss(m, _mm_movehdup_ps(m)));
}

/* 32 int32 lanes (values fit a byte) to 32 bytes in order. */
static inline __m256i pack_bytes(const __m256i q[4])
{
    __m256i b = _mm256_packs_epi16(_mm256_packs_epi32(q[0], q[1]), _mm256_packs_epi32(q[2], q[3]));
    return _mm256_permutevar8x32_epi32(b, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
}

/* C's roundf of lanes with |x| <= 127: the truncation, moved by one where
 * the fraction (exact) reaches a half. */
static inline __m256 round_half_away(__m256 x)
{
    __m256 t = _mm256_round_ps(x, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
    __m256 frac = _mm256_sub_ps(x, t);
    __m256 up = _mm256_and_ps(_mm256_cmp_ps(frac, _mm256_set1_ps(0.5f), _CMP_GE_OQ), _mm256_set1_ps(1.0f));
    __m256 down = _mm256_and_ps(_mm256_cmp_ps(frac, _mm256_set1_ps(-0.5f), _CMP_LE_OQ), _mm256_set1_ps(1.0f));
    return _mm256_sub_ps(_mm256_add_ps(t, up), down);
}

static X86_NO_CONTRACT void quantize_q8_0_block(const float *x, const __m256 v[4], __m256 vmax, unsigned char *out)
{
    (void)x;
    float d = hmax8(vmax) / 127.0f, id = d != 0.0f ? 1.0f / d : 0.0f;
    rayo__put_le16(out, rayo_f32_to_f16(d));
    __m256i q[4];
    for (int j = 0; j < 4; j++) {
        __m256 p = _mm256_mul_ps(v[j], _mm256_set1_ps(id));
        p = _mm256_and_ps(p, _mm256_cmp_ps(p, p, _CMP_ORD_Q)); /* 0 * inf (d subnormal) -> 0 */
        p = _mm256_min_ps(_mm256_set1_ps(127.0f), _mm256_max_ps(_mm256_set1_ps(-127.0f), p));
        q[j] = _mm256_cvtps_epi32(round_half_away(p));
    }
    _mm256_storeu_si256((__m256i *)(void *)(out + 2), pack_bytes(q));
}

static X86_NO_CONTRACT void quantize_q4_0_block(const float *x, const __m256 v[4], __m256 vmax, unsigned char *out)
{
    /* The first value of the largest magnitude, with its sign (0 when all
     * are zeros, whatever their signs, as the reference). */
    float amax = hmax8(vmax), max = 0.0f;
    if (amax != 0.0f) {
        uint32_t at = 0;
        for (int j = 3; j >= 0; j--) {
            __m256 a = _mm256_and_ps(v[j], _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff)));
            at = at << 8 | (uint32_t)_mm256_movemask_ps(_mm256_cmp_ps(a, _mm256_set1_ps(amax), _CMP_EQ_OQ));
        }
        max = x[__builtin_ctz(at)];
    }
    float d = max / -8.0f, id = d != 0.0f ? 1.0f / d : 0.0f;
    rayo__put_le16(out, rayo_f32_to_f16(d));
    __m256i q[4];
    for (int j = 0; j < 4; j++) {
        __m256 t = _mm256_add_ps(_mm256_mul_ps(v[j], _mm256_set1_ps(id)), _mm256_set1_ps(8.5f));
        t = _mm256_and_ps(t, _mm256_cmp_ps(t, t, _CMP_ORD_Q));
        t = _mm256_min_ps(_mm256_set1_ps(15.0f), _mm256_max_ps(_mm256_setzero_ps(), t));
        q[j] = _mm256_cvttps_epi32(t);
    }
    __m256i bytes = pack_bytes(q);
    __m128i lo = _mm256_castsi256_si128(bytes), hi = _mm256_extracti128_si256(bytes, 1);
    _mm_storeu_si128((__m128i *)(void *)(out + 2), _mm_or_si128(lo, _mm_slli_epi16(hi, 4)));
}

typedef void quantize_vector_fn(const float *x, const __m256 v[4], __m256 vmax, unsigned char *out);
typedef void quantize_scalar_fn(const float *x, void *out, size_t n);

/* Blocks of 32 values: vector, or the reference's own for a block with NaN
 * or inf (whose bytes rayo-dtype.h leaves unspecified, but convert is
 * exact). */
static inline __attribute__((always_inline)) void quantize_row(const float *x, unsigned char *out, size_t n,
                                                               size_t block_bytes, quantize_vector_fn *vector,
                                                               quantize_scalar_fn *scalar)
{
    for (size_t b = 0; b < n / 32; b++, x += 32, out += block_bytes) {
        __m256 v[4], vmax;
        if (load_finite_block(x, v, &vmax))
            vector(x, v, vmax, out);
        else
            scalar(x, out, 32);
    }
}

/* ---- convert ------------------------------------------------------------------- */
#define CONVERT_CHUNK 1024 /* elements per item when neither side is blocked */

static int convert_supported(rayo_dtype from, rayo_dtype to)
{
    if (from == RAYO_DTYPE_F32)
        return to == RAYO_DTYPE_F16 || to == RAYO_DTYPE_BF16 || to == RAYO_DTYPE_Q8_0 || to == RAYO_DTYPE_Q4_0;
    return to == RAYO_DTYPE_F32 && from != RAYO_DTYPE_I32 && rayo_dtype_block_elems(from) != 0;
}

/* Elements per item: a run of whole blocks of the blocked side. */
static size_t convert_item(const rayo_call *c)
{
    size_t from = rayo_dtype_block_elems(RAYO_DTYPE_OF(c->dtypes, 0));
    size_t to = rayo_dtype_block_elems(RAYO_DTYPE_OF(c->dtypes, 3));
    size_t block = from > to ? from : to;
    return block > 1 ? block * (CONVERT_CHUNK / 32) : CONVERT_CHUNK;
}

static size_t bytes_before(rayo_dtype dt, size_t e)
{
    return e / rayo_dtype_block_elems(dt) * rayo_dtype_block_bytes(dt);
}

static void convert_items(const cpu_state *st, const rayo_call *c, size_t lo, size_t hi)
{
    (void)st;
    rayo_dtype from = RAYO_DTYPE_OF(c->dtypes, 0), to = RAYO_DTYPE_OF(c->dtypes, 3);
    size_t per = convert_item(c), e0 = lo * per, e1 = hi * per < c->n ? hi * per : c->n;
    const unsigned char *src = (const unsigned char *)c->a + bytes_before(from, e0);
    unsigned char *dst = (unsigned char *)c->y + bytes_before(to, e0);
    const float *x = (const float *)(const void *)src;
    switch (to) {
    case RAYO_DTYPE_F16: f32_row_to_f16(x, dst, e1 - e0); break;
    case RAYO_DTYPE_BF16: f32_row_to_bf16(x, dst, e1 - e0); break;
    case RAYO_DTYPE_Q8_0:
        quantize_row(x, dst, e1 - e0, RAYO_Q8_0_BYTES, quantize_q8_0_block, rayo_quantize_q8_0);
        break;
    case RAYO_DTYPE_Q4_0:
        quantize_row(x, dst, e1 - e0, RAYO_Q4_0_BYTES, quantize_q4_0_block, rayo_quantize_q4_0);
        break;
    default: x86_row_to_f32(from, src, (float *)(void *)dst, e1 - e0); break;
    }
}

CPU_KERNEL_FN(convert)
{
    rayo_dtype from = RAYO_DTYPE_OF(call->dtypes, 0), to = RAYO_DTYPE_OF(call->dtypes, 3);
    if (!convert_supported(from, to))
        return RAYO_E_UNSUPPORTED;
    if (call->n % rayo_dtype_block_elems(from) || call->n % rayo_dtype_block_elems(to))
        return RAYO_E_INVALID; /* the core checks this first; never a partial block */
    size_t per = convert_item(call);
    cpu_run_ranges(state, call, (call->n + per - 1) / per, per, convert_items);
    return RAYO_OK;
}

/* ---- get_rows: y[r] = table[idx[r]] as f32 ------------------------------------ */
static void get_rows_range(const cpu_state *st, const rayo_call *c, size_t lo, size_t hi)
{
    (void)st;
    rayo_dtype dt = RAYO_DTYPE_OF(c->dtypes, 0);
    const int32_t *idx = c->b;
    size_t row_bytes = 0, ldy = x86_or_dense(c->ldy, c->n);
    rayo_dtype_row_bytes(dt, x86_or_dense(c->lda, c->n), &row_bytes); /* validated by the core */
    for (size_t r = lo; r < hi; r++)
        x86_row_to_f32(dt, (const unsigned char *)c->a + (size_t)idx[r] * row_bytes, (float *)c->y + r * ldy, c->n);
}

CPU_KERNEL_FN(get_rows)
{
    const int32_t *idx = call->b;
    if (RAYO_DTYPE_OF(call->dtypes, 0) == RAYO_DTYPE_I32)
        return RAYO_E_UNSUPPORTED;
    /* Every index is checked before the first row is written, so a refused
     * call leaves y as it was. */
    for (size_t r = 0; r < call->m; r++)
        if (idx[r] < 0 || (size_t)idx[r] >= call->k)
            return RAYO_E_INVALID;
    cpu_run_ranges(state, call, call->m, call->n, get_rows_range);
    return RAYO_OK;
}

/* ---- rope ------------------------------------------------------------------------ */
/* The angle of pair i is pos * freq_scale * base^(-2i / rot).  The
 * frequencies are a geometric series, made by multiplying in double (the
 * relative error after 64 pairs is ~1e-14: 1e-10 rad at position 8191);
 * cos and sin of the angle are evaluated in double (reduction by pi/2 in
 * two parts, Taylor polynomials on [-pi/4, pi/4]) and rounded to float; the
 * rotation itself is two float FMAs per value, within 2 ulp of the pair's
 * norm. */
#define ROPE_BLOCK 64 /* pairs whose cos/sin one token keeps at a time */

/* cos and sin of 4 angles in double, |theta| < 2^30. */
static inline void cos_sin_pd(__m256d theta, __m256d *c, __m256d *s)
{
    const __m256d pio2_hi = _mm256_set1_pd(1.5707963267948966), pio2_lo = _mm256_set1_pd(6.123233995736766e-17);
    __m256d k = _mm256_round_pd(_mm256_mul_pd(theta, _mm256_set1_pd(0.63661977236758134)),
                                _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256d r = _mm256_fnmadd_pd(k, pio2_hi, theta);
    r = _mm256_fnmadd_pd(k, pio2_lo, r);
    __m256d r2 = _mm256_mul_pd(r, r);
    /* sin r = r (1 - r^2/3! + ... - r^12/13!), cos r = 1 - r^2/2! + ... + r^14/14!:
     * on |r| <= pi/4 the first omitted terms are below 1e-11. */
    __m256d ps = _mm256_set1_pd(1.0 / 6227020800.0);
    static const double sin_c[] = { -1.0 / 39916800.0, 1.0 / 362880.0, -1.0 / 5040.0, 1.0 / 120.0, -1.0 / 6.0, 1.0 };
    for (size_t i = 0; i < sizeof sin_c / sizeof sin_c[0]; i++)
        ps = _mm256_fmadd_pd(ps, r2, _mm256_set1_pd(sin_c[i]));
    ps = _mm256_mul_pd(ps, r);
    __m256d pc = _mm256_set1_pd(-1.0 / 87178291200.0);
    static const double cos_c[] = { 1.0 / 479001600.0, -1.0 / 3628800.0, 1.0 / 40320.0, -1.0 / 720.0,
                                    1.0 / 24.0, -0.5, 1.0 };
    for (size_t i = 0; i < sizeof cos_c / sizeof cos_c[0]; i++)
        pc = _mm256_fmadd_pd(pc, r2, _mm256_set1_pd(cos_c[i]));
    /* quadrant q = k mod 4: (cos, sin) = (c, s), (-s, c), (-c, -s), (s, -c) */
    __m256i q = _mm256_cvtepi32_epi64(_mm256_cvtpd_epi32(k));
    __m256d odd = _mm256_castsi256_pd(_mm256_cmpeq_epi64(_mm256_and_si256(q, _mm256_set1_epi64x(1)), _mm256_set1_epi64x(1)));
    __m256i sin_neg = _mm256_slli_epi64(_mm256_and_si256(q, _mm256_set1_epi64x(2)), 62);
    __m256i cos_neg = _mm256_slli_epi64(_mm256_and_si256(_mm256_add_epi64(q, _mm256_set1_epi64x(1)), _mm256_set1_epi64x(2)), 62);
    *s = _mm256_xor_pd(_mm256_blendv_pd(ps, pc, odd), _mm256_castsi256_pd(sin_neg));
    *c = _mm256_xor_pd(_mm256_blendv_pd(pc, ps, odd), _mm256_castsi256_pd(cos_neg));
}

typedef struct rope_plan {
    const rayo_rope_params *p;
    int neox;
    size_t rot, half, x_token, x_head, y_token, y_head;
    double ratio; /* base^(-2 / rot) */
} rope_plan;

static rope_plan rope_plan_of(const rayo_call *c)
{
    const rayo_rope_params *p = c->params;
    rope_plan r = { .p = p, .neox = p->mode == RAYO_ROPE_NEOX, .rot = p->rot_dims ? p->rot_dims : p->head_dim };
    r.half = r.rot / 2;
    r.x_head = x86_or_dense(p->head_stride_x, p->head_dim);
    r.y_head = x86_or_dense(p->head_stride_y, p->head_dim);
    r.x_token = x86_or_dense(c->lda, p->n_heads * p->head_dim);
    r.y_token = x86_or_dense(c->ldy, p->n_heads * p->head_dim);
    r.ratio = pow((double)p->freq_base, -2.0 / (double)r.rot);
    return r;
}

/* cos/sin of pairs [i0, i0 + count) at position pos into cs, sn; *freq is
 * the frequency of pair i0 and moves on to pair i0 + count.  NORM pairs are
 * adjacent values: cs holds each cosine twice, sn each sine as (-s, s). */
static void rope_angles(const rope_plan *r, double pos, size_t count, double *freq, float *cs, float *sn)
{
    double theta[ROPE_BLOCK + 3];
    for (size_t l = 0; l < count; l++, *freq *= r->ratio)
        theta[l] = pos * *freq;
    for (size_t l = count; l < (count + 3) / 4 * 4; l++)
        theta[l] = 0.0;
    for (size_t l = 0; l < count; l += 4) {
        __m256d c, s;
        cos_sin_pd(_mm256_loadu_pd(theta + l), &c, &s);
        float cf[4], sf[4];
        _mm_storeu_ps(cf, _mm256_cvtpd_ps(c));
        _mm_storeu_ps(sf, _mm256_cvtpd_ps(s));
        for (size_t e = 0; e < 4 && l + e < count; e++) {
            if (r->neox) {
                cs[l + e] = cf[e], sn[l + e] = sf[e];
            } else {
                cs[2 * (l + e)] = cs[2 * (l + e) + 1] = cf[e];
                sn[2 * (l + e)] = -sf[e], sn[2 * (l + e) + 1] = sf[e];
            }
        }
    }
}

/* y_u = u c - v s, y_v = u s + v c, lanes [0, n) of a vector. */
static inline void rope_neox_vec(const float *x, float *y, size_t half, const float *cs, const float *sn, size_t n)
{
    VF u = vf_load_n(x, n), v = vf_load_n(x + half, n), c = vf_load_n(cs, n), s = vf_load_n(sn, n);
    VF yu = vf_fmsub(u, c, vf_mul(v, s)), yv = vf_fma(u, s, vf_mul(v, c));
    vf_store_n(y, n, yu);
    vf_store_n(y + half, n, yv);
}

/* NORM: value e of a pair (u, v) becomes x[e] c[e] + swap(x)[e] sn[e]. */
static inline void rope_norm_vec(const float *x, float *y, const float *cs, const float *sn, size_t n)
{
    VF v = vf_load_n(x, n);
    vf_store_n(y, n, vf_fma(v, vf_load_n(cs, n), vf_mul(vf_swap_pairs(v), vf_load_n(sn, n))));
}

/* Pairs [i0, i0 + count) of one head. */
static void rope_head(const rope_plan *r, const float *x, float *y, size_t i0, size_t count, const float *cs,
                      const float *sn)
{
    if (r->neox) {
        for (size_t l = 0; l < count; l += VF_LANES) {
            size_t n = count - l < VF_LANES ? count - l : VF_LANES;
            rope_neox_vec(x + i0 + l, y + i0 + l, r->half, cs + l, sn + l, n);
        }
        return;
    }
    for (size_t e = 0; e < 2 * count; e += VF_LANES) {
        size_t n = 2 * count - e < VF_LANES ? 2 * count - e : VF_LANES;
        rope_norm_vec(x + 2 * i0 + e, y + 2 * i0 + e, cs + e, sn + e, n);
    }
}

static void rope_token(const rope_plan *r, const float *x, float *y, double pos)
{
    const rayo_rope_params *p = r->p;
    float cs[2 * ROPE_BLOCK], sn[2 * ROPE_BLOCK];
    double freq = (double)p->freq_scale;
    for (size_t i0 = 0; i0 < r->half; i0 += ROPE_BLOCK) {
        size_t count = r->half - i0 < ROPE_BLOCK ? r->half - i0 : ROPE_BLOCK;
        rope_angles(r, pos, count, &freq, cs, sn);
        for (size_t h = 0; h < p->n_heads; h++)
            rope_head(r, x + h * r->x_head, y + h * r->y_head, i0, count, cs, sn);
    }
    if (r->rot < p->head_dim && x != y) /* dimensions past rot_dims are copied */
        for (size_t h = 0; h < p->n_heads; h++)
            memcpy(y + h * r->y_head + r->rot, x + h * r->x_head + r->rot, (p->head_dim - r->rot) * sizeof(float));
}

static void rope_range(const cpu_state *st, const rayo_call *c, size_t lo, size_t hi)
{
    (void)st;
    rope_plan r = rope_plan_of(c);
    const int32_t *pos = c->b;
    for (size_t t = lo; t < hi; t++)
        rope_token(&r, (const float *)c->a + t * r.x_token, (float *)c->y + t * r.y_token, (double)pos[t]);
}

CPU_KERNEL_FN(rope)
{
    const rayo_rope_params *p = call->params;
    size_t rot;
    rayo_status status = cpu_rope_check(call, &rot);
    if (status != RAYO_OK || rot == 0)
        return status;
    cpu_run_ranges(state, call, call->m, p->n_heads * p->head_dim * 4, rope_range);
    return RAYO_OK;
}

/* ---- gated units: y = f(gate) * up, m rows of n ------------------------------ */
/* Gates below TAIL are redone in double (cpu-f64-fallback.h): silu below -80,
 * gelu below -12, where the float activation goes subnormal; gelu_tanh
 * below -3, where exp(2 u) magnifies the rounding of u = c (x + 0.044715
 * x^3) past the contract (4 units at x = -7 with up ~1e30).  Such gates are
 * rare, so a vector pays one compare.  The vector goes through tmp, so a
 * call in place (y == gate) still reads its gates. */
static inline void x86_glu_tail(cpu_glu_kind kind, float tail, const float *g, const float *u,
                                const float *tmp, float *y, size_t count)
{
    float fixed[VF_LANES];
    for (size_t l = 0; l < count; l++)
        fixed[l] = g[l] < tail ? cpu_glu_f64(kind, g[l], u[l]) : tmp[l];
    memcpy(y, fixed, count * sizeof(float));
}

#define X86_GLU_KERNEL(NAME, ACT, KIND, TAIL)                                                     \
    static void NAME##_rows(const cpu_state *st, const rayo_call *c, size_t lo, size_t hi)        \
    {                                                                                             \
        (void)st;                                                                                 \
        size_t n = c->n, lda = x86_or_dense(c->lda, n), ldb = x86_or_dense(c->ldb, n);            \
        size_t ldy = x86_or_dense(c->ldy, n);                                                     \
        for (size_t r = lo; r < hi; r++) {                                                        \
            const float *g = (const float *)c->a + r * lda, *u = (const float *)c->b + r * ldb;   \
            float *y = (float *)c->y + r * ldy;                                                   \
            for (size_t j = 0; j < n; j += VF_LANES) {                                            \
                size_t count = n - j < VF_LANES ? n - j : VF_LANES;                               \
                VF gv = vf_load_n(g + j, count), yv = vf_mul(ACT(gv), vf_load_n(u + j, count));   \
                if (vf_any_below(gv, TAIL)) {                                                     \
                    float tmp[VF_LANES];                                                          \
                    vf_store(tmp, yv);                                                            \
                    x86_glu_tail(KIND, TAIL, g + j, u + j, tmp, y + j, count);                    \
                } else {                                                                          \
                    vf_store_n(y + j, count, yv);                                                 \
                }                                                                                 \
            }                                                                                     \
        }                                                                                         \
    }                                                                                             \
    CPU_KERNEL_FN(NAME)                                                                           \
    {                                                                                             \
        cpu_run_ranges(state, call, call->m, call->n * 16, NAME##_rows);                          \
        return RAYO_OK;                                                                           \
    }

X86_GLU_KERNEL(swiglu, vf_silu, CPU_GLU_SILU, -80.0f)
X86_GLU_KERNEL(geglu, vf_gelu, CPU_GLU_GELU, -12.0f)
X86_GLU_KERNEL(geglu_tanh, vf_gelu_tanh, CPU_GLU_GELU_TANH, -3.0f)

#include "x86-attention_tmpl.c"
