/* SPDX-License-Identifier: MIT */
/* test-ref-infer.c - self-checks of the float64 references for the inference
 * ops (tools/conform/ref-infer.c): properties that hold whatever the
 * implementation (one key gives V, position 0 is the identity, rotations
 * keep norms and compose), naive second computations (two-pass softmax),
 * hand-worked values, and the block decoders against rayo-dtype.h's (two
 * independent readings of the same published layouts). */
#include "testutil.h" /* first: it sets _GNU_SOURCE */
#include "ref-infer.h"
#include <math.h>
#include "test-rng.h"

static float rnd(double lo, double hi)
{
    return (float)rng_uniform(lo, hi);
}

static void fill(float *x, size_t n, double lo, double hi)
{
    for (size_t i = 0; i < n; i++)
        x[i] = rnd(lo, hi);
}

static bool close_to(double got, double want, double tol)
{
    return fabs(got - want) <= tol * (1 + fabs(want));
}

/* ---- block decoders: ref vs rayo-dtype.h on random blocks ---- */
static void test_dequantize_agrees(void)
{
    static const rayo_dtype types[] = {RAYO_DTYPE_F16, RAYO_DTYPE_BF16, RAYO_DTYPE_Q8_0,
                                       RAYO_DTYPE_Q4_0, RAYO_DTYPE_Q4_K, RAYO_DTYPE_Q6_K};
    enum { N = 1024 };
    static uint8_t buf[N * 4];
    static float yf[N];
    static double yd[N];
    for (size_t t = 0; t < sizeof types / sizeof types[0]; t++) {
        rayo_dtype dt = types[t];
        size_t bytes = 0, bb = rayo_dtype_block_bytes(dt);
        rayo_dtype_row_bytes(dt, N, &bytes);
        for (size_t i = 0; i < bytes; i++)
            buf[i] = (uint8_t)rng_next();
        /* keep every f16 scale finite: clear its exponent's top bit */
        size_t d_at = dt == RAYO_DTYPE_Q6_K ? 208 : 0;
        for (size_t b = 0; b < bytes / bb; b++) {
            buf[b * bb + d_at + 1] &= 0xbf;
            if (dt == RAYO_DTYPE_Q4_K)
                buf[b * bb + 3] &= 0xbf;
        }
        rayo_dequantize_row(dt, buf, yf, N);
        CHECK(ref_dequantize(dt, buf, N, yd) == 0, "ref_dequantize %s", rayo_dtype_name(dt));
        int bad = 0;
        for (size_t i = 0; i < N; i++) {
            bool same = isnan(yd[i]) ? isnan(yf[i]) : fabs(yf[i] - yd[i]) <= 0x1p-24 * fabs(yd[i]) + 1e-45;
            if (!same && bad++ < 3)
                CHECK(0, "%s value %zu: rayo %.9g, ref %.17g", rayo_dtype_name(dt), i, (double)yf[i], yd[i]);
        }
        CHECK(bad == 0, "%s: %d values differ beyond f32 rounding", rayo_dtype_name(dt), bad);
    }
    double y[32];
    uint8_t blk[34] = {0};
    CHECK(ref_dequantize(RAYO_DTYPE_Q8_0, blk, 33, y) == -1, "a row of 33 q8_0 values is refused");
}

/* ---- matmul, gemv, get_rows ---- */
static void test_matmul_gemv(void)
{
    enum { M = 5, N = 7, K = 64 };
    float a[M * K], x[K];
    fill(a, M * K, -1, 1);
    fill(x, K, -1, 1);
    /* B (N x K, used transposed) in Q8_0 vs the same values as f32. */
    uint8_t bq[N * (K / 32) * 34];
    float bsrc[N * K], bf[N * K];
    fill(bsrc, N * K, -2, 2);
    rayo_quantize_q8_0(bsrc, bq, N * K);
    rayo_dequantize_q8_0(bq, bf, N * K); /* exact: q d fits an f32 */
    ref_matrix A = {RAYO_DTYPE_F32, a, M, K, K};
    ref_matrix Bq = {RAYO_DTYPE_Q8_0, bq, N, K, K}, Bf = {RAYO_DTYPE_F32, bf, N, K, K};
    double c1[M * N], c2[M * N], t1[M * N];
    CHECK(ref_matmul(RAYO_TRANS_B, M, N, K, 1.0, &A, &Bq, 0, NULL, 0, c1, t1) == 0, "matmul q8_0");
    CHECK(ref_matmul(RAYO_TRANS_B, M, N, K, 1.0, &A, &Bf, 0, NULL, 0, c2, NULL) == 0, "matmul f32");
    int bad = 0;
    for (int i = 0; i < M * N; i++)
        bad += c1[i] != c2[i] || t1[i] < fabs(c1[i]);
    CHECK(bad == 0, "quantized and f32 operands with equal values give different products");
    /* gemv W x (W = the Q8_0 rows) equals column 0 of X W^T with X = x as one row. */
    ref_matrix X = {RAYO_DTYPE_F32, x, 1, K, K};
    double g[N], mm[N];
    CHECK(ref_gemv(0, &Bq, x, 1.0, 0, NULL, g, NULL) == 0, "gemv q8_0");
    CHECK(ref_matmul(RAYO_TRANS_B, 1, N, K, 1.0, &X, &Bq, 0, NULL, 0, mm, NULL) == 0, "matmul 1 row");
    bad = 0;
    for (int i = 0; i < N; i++)
        bad += !close_to(g[i], mm[i], 1e-15);
    CHECK(bad == 0, "gemv and a one-row matmul disagree");
    /* alpha, beta and a hand-worked 2x2 with a padded row stride. */
    const float a2[] = {1, 2, 99, 3, 4, 99}, b2[] = {5, 6, 7, 8}, c0[] = {1, 1, 1, 1};
    ref_matrix A2 = {RAYO_DTYPE_F32, a2, 2, 2, 3}, B2 = {RAYO_DTYPE_F32, b2, 2, 2, 2};
    double c[4];
    CHECK(ref_matmul(0, 2, 2, 2, 2.0, &A2, &B2, -1.0, c0, 2, c, NULL) == 0 && c[0] == 37 && c[1] == 43 &&
          c[2] == 85 && c[3] == 99, "2 [1 2; 3 4][5 6; 7 8] - 1 = [37 43; 85 99], got [%g %g; %g %g]",
          c[0], c[1], c[2], c[3]);
    CHECK(ref_matmul(RAYO_TRANS_A, 2, 2, 2, 1.0, &A2, &B2, 0, NULL, 0, c, NULL) == 0 && c[0] == 26 &&
          c[1] == 30 && c[2] == 38 && c[3] == 44, "A^T B = [26 30; 38 44], got [%g %g; %g %g]", c[0], c[1], c[2], c[3]);
    ref_matrix bad_ld = {RAYO_DTYPE_Q8_0, bq, N, K, K + 1};
    CHECK(ref_gemv(0, &bad_ld, x, 1, 0, NULL, g, NULL) == -1, "a q8_0 stride off the block grid is refused");
}

static void test_get_rows(void)
{
    enum { ROWS = 6, COLS = 256 };
    static uint8_t table[ROWS * 210];
    for (size_t i = 0; i < sizeof table; i++)
        table[i] = (uint8_t)rng_next();
    for (int r = 0; r < ROWS; r++)
        table[r * 210 + 209] = 0x2c; /* d: a modest finite f16 */
    ref_matrix t = {RAYO_DTYPE_Q6_K, table, ROWS, COLS, COLS};
    const int32_t idx[] = {5, 0, 5, 2};
    static double out[4 * COLS], row[COLS];
    CHECK(ref_get_rows(&t, idx, 4, out) == 0, "get_rows");
    int bad = 0;
    for (int r = 0; r < 4; r++) {
        ref_dequantize(RAYO_DTYPE_Q6_K, table + idx[r] * 210, COLS, row);
        bad += memcmp(row, out + r * COLS, sizeof row) != 0;
    }
    CHECK(bad == 0, "get_rows rows differ from the dequantized table rows");
    const int32_t wrong[] = {1, 6}, negative[] = {-1};
    CHECK(ref_get_rows(&t, wrong, 2, out) == -1 && ref_get_rows(&t, negative, 1, out) == -1,
          "indices outside the table are refused");
}

/* ---- rope ---- */
static void test_rope(void)
{
    enum { T = 5, H = 3, D = 16, TS = H * D + 4, HS = D + 1 }; /* padded strides */
    static float x[T * TS];
    fill(x, T * TS, -1, 1);
    int32_t pos0[T] = {0, 0, 0, 0, 0}, pos[T] = {0, 1, 7, 100, 8191};
    static double y[T * H * D];
    for (int mode = REF_ROPE_NORM; mode <= REF_ROPE_NEOX; mode++) {
        CHECK(ref_rope((ref_rope_mode)mode, T, H, D, D, x, TS, HS, pos0, 10000, 1, y) == 0, "rope");
        int bad = 0;
        for (int t = 0; t < T; t++)
            for (int h = 0; h < H; h++)
                for (int d = 0; d < D; d++)
                    bad += y[(t * H + h) * D + d] != x[t * TS + h * HS + d];
        CHECK(bad == 0, "rope mode %d at position 0 is not the identity", mode);
        /* Norm of every rotated pair is kept; the unrotated tail is copied. */
        CHECK(ref_rope((ref_rope_mode)mode, T, H, D, 12, x, TS, HS, pos, 500000, 0.5, y) == 0, "rope partial");
        bad = 0;
        for (int t = 0; t < T; t++)
            for (int h = 0; h < H; h++) {
                const float *in = x + t * TS + h * HS;
                const double *out = y + (t * H + h) * D;
                for (int i = 0; i < 6; i++) {
                    int u = mode == REF_ROPE_NORM ? 2 * i : i, v = mode == REF_ROPE_NORM ? 2 * i + 1 : i + 6;
                    double n0 = (double)in[u] * in[u] + (double)in[v] * in[v];
                    bad += !close_to(out[u] * out[u] + out[v] * out[v], n0, 1e-14);
                }
                for (int d = 12; d < D; d++)
                    bad += out[d] != in[d];
            }
        CHECK(bad == 0, "rope mode %d: pair norms changed or the tail was not copied", mode);
    }
    /* Rotations compose: rope(p) of rope(q) = rope(p + q).  (One token, stride 0.) */
    float v[D];
    fill(v, D, -1, 1);
    double once[D], twice[D], direct[D];
    float mid[D];
    int32_t p = 37, q = 1000, pq = 1037;
    ref_rope(REF_ROPE_NEOX, 1, 1, D, D, v, 0, 0, &q, 10000, 1, once);
    for (int d = 0; d < D; d++)
        mid[d] = (float)once[d];
    ref_rope(REF_ROPE_NEOX, 1, 1, D, D, mid, 0, 0, &p, 10000, 1, twice);
    ref_rope(REF_ROPE_NEOX, 1, 1, D, D, v, 0, 0, &pq, 10000, 1, direct);
    int bad = 0;
    for (int d = 0; d < D; d++)
        bad += !close_to(twice[d], direct[d], 1e-6); /* mid was rounded to f32 */
    CHECK(bad == 0, "rope(37) after rope(1000) differs from rope(1037)");
    /* By hand: head_dim 4, position 2, base 100: pair 0 turns by 2 rad, pair 1
     * by 2 * 100^(-1/2) = 0.2 rad.  NORM pairs (0,1), (2,3); NEOX (0,2), (1,3). */
    const float e[4] = {1, 0, 0, 1};
    int32_t two = 2;
    double r[4];
    ref_rope(REF_ROPE_NORM, 1, 1, 4, 4, e, 0, 0, &two, 100, 1, r);
    CHECK(close_to(r[0], cos(2.0), 1e-15) && close_to(r[1], sin(2.0), 1e-15) && close_to(r[2], -sin(0.2), 1e-15) &&
          close_to(r[3], cos(0.2), 1e-15), "rope norm by hand: %g %g %g %g", r[0], r[1], r[2], r[3]);
    ref_rope(REF_ROPE_NEOX, 1, 1, 4, 4, e, 0, 0, &two, 100, 1, r);
    CHECK(close_to(r[0], cos(2.0), 1e-15) && close_to(r[2], sin(2.0), 1e-15) && close_to(r[1], -sin(0.2), 1e-15) &&
          close_to(r[3], cos(0.2), 1e-15), "rope neox by hand: %g %g %g %g", r[0], r[1], r[2], r[3]);
    CHECK(ref_rope(REF_ROPE_NORM, 1, 1, 4, 3, e, 0, 0, &two, 100, 1, r) == -1, "odd rot_dims refused");
}

/* ---- attention ---- */
/* Naive two-pass softmax over stored scores, for comparison. */
static void attention_naive(const ref_attention_shape *s, const ref_heads *q, const ref_heads *k,
                            const ref_heads *v, double *out)
{
    double *score = malloc(s->n_kv * sizeof *score);
    size_t g = s->n_heads / s->n_kv_heads;
    for (size_t i = 0; i < s->n_q; i++)
        for (size_t h = 0; h < s->n_heads; h++) {
            size_t vis = s->causal ? s->n_kv - s->n_q + i + 1 : s->n_kv;
            double mx = -INFINITY, sum = 0;
            for (size_t j = 0; j < vis; j++) {
                double dot = 0;
                for (size_t d = 0; d < s->head_dim; d++)
                    dot += ref_element(q->dtype, q->data, i * q->token_stride + h * q->head_stride + d) *
                           ref_element(k->dtype, k->data, j * k->token_stride + (h / g) * k->head_stride + d);
                score[j] = dot * s->scale;
                if (score[j] > mx) /* not fmax: gcc 12's aarch64 vectoriser crashes on it */
                    mx = score[j];
            }
            for (size_t j = 0; j < vis; j++)
                sum += exp(score[j] - mx);
            for (size_t d = 0; d < s->head_dim; d++) {
                double acc = 0;
                for (size_t j = 0; j < vis; j++)
                    acc += exp(score[j] - mx) / sum *
                           ref_element(v->dtype, v->data, j * v->token_stride + (h / g) * v->head_stride + d);
                out[(i * s->n_heads + h) * s->head_dim + d] = acc;
            }
        }
    free(score);
}

/* K and V as f32, or as f16 holding f32 values rounded. */
static void make_cache(rayo_dtype dt, size_t count, const float *src, void *dst)
{
    for (size_t i = 0; i < count; i++) {
        if (dt == RAYO_DTYPE_F32) {
            ((float *)dst)[i] = src[i];
        } else {
            uint16_t h = rayo_f32_to_f16(src[i]);
            memcpy((uint8_t *)dst + 2 * i, &h, 2);
        }
    }
}

static void check_attention_case(size_t n_q, size_t n_kv, size_t nh, size_t nkvh, size_t hd, int causal,
                                 rayo_dtype kvt, int per_head_layout, double q_range)
{
    /* Q [n_q][nh][hd] padded; cache either token-major [n_kv][nkvh][hd] or
     * head-major [nkvh][n_kv][hd] (a view of one head's cache is a stride). */
    size_t qts = nh * hd + 3, kv_count = n_kv * nkvh * hd;
    float *q = malloc(n_q * qts * sizeof *q), *ksrc = malloc(kv_count * 4), *vsrc = malloc(kv_count * 4);
    void *kc = malloc(kv_count * 4), *vc = malloc(kv_count * 4);
    double *out = malloc(n_q * nh * hd * sizeof *out), *terms = malloc(n_q * nh * hd * sizeof *terms);
    double *naive = malloc(n_q * nh * hd * sizeof *naive);
    fill(q, n_q * qts, -q_range, q_range);
    fill(ksrc, kv_count, -1, 1);
    fill(vsrc, kv_count, -1, 1);
    make_cache(kvt, kv_count, ksrc, kc);
    make_cache(kvt, kv_count, vsrc, vc);
    size_t ts = per_head_layout ? hd : nkvh * hd, hs = per_head_layout ? n_kv * hd : hd;
    ref_heads Q = {RAYO_DTYPE_F32, q, qts, hd}, K = {kvt, kc, ts, hs}, V = {kvt, vc, ts, hs};
    ref_attention_shape s = {n_q, n_kv, nh, nkvh, hd, causal, 1.0 / sqrt((double)hd)};
    CHECK(ref_attention(&s, &Q, &K, &V, out, terms) == 0, "attention");
    attention_naive(&s, &Q, &K, &V, naive);
    int bad = 0;
    for (size_t i = 0; i < n_q * nh * hd; i++)
        bad += !isfinite(out[i]) || !close_to(out[i], naive[i], 1e-12) || terms[i] < fabs(out[i]) * (1 - 1e-12);
    CHECK(bad == 0, "attention q=%zu kv=%zu heads=%zu/%zu dim=%zu causal=%d %s%s, |q| %g: %d outputs differ "
          "from a two-pass softmax", n_q, n_kv, nh, nkvh, hd, causal, rayo_dtype_name(kvt),
          per_head_layout ? " head-major" : "", q_range, bad);
    free(q); free(ksrc); free(vsrc); free(kc); free(vc); free(out); free(terms); free(naive);
}

static void test_attention(void)
{
    /* One key: the output is that key's V row, whatever the scores. */
    float q1[8], k1[4], v1[4] = {0.25f, -3, 7, 1e-3f};
    fill(q1, 8, -5, 5);
    fill(k1, 4, -5, 5);
    double out[8];
    ref_heads Q = {RAYO_DTYPE_F32, q1, 8, 4}, K = {RAYO_DTYPE_F32, k1, 4, 0}, V = {RAYO_DTYPE_F32, v1, 4, 0};
    ref_attention_shape one = {1, 1, 2, 1, 4, 1, 0.5};
    CHECK(ref_attention(&one, &Q, &K, &V, out, NULL) == 0 && out[0] == 0.25 && out[1] == -3 && out[2] == 7 &&
          out[3] == (double)1e-3f && out[4] == 0.25 && out[7] == (double)1e-3f, "one key gives its V row");
    /* Equal scores (Q = 0): causal prefill row i is the mean of V rows 0..i. */
    float qz[3 * 2] = {0}, kv[3 * 2] = {1, 2, 3, 4, 5, 6}, vv[3 * 2] = {1, 10, 2, 20, 6, 60};
    ref_heads Qz = {RAYO_DTYPE_F32, qz, 2, 2}, Kz = {RAYO_DTYPE_F32, kv, 2, 2}, Vz = {RAYO_DTYPE_F32, vv, 2, 2};
    ref_attention_shape pre = {3, 3, 1, 1, 2, 1, 1.0};
    double o3[6];
    CHECK(ref_attention(&pre, &Qz, &Kz, &Vz, o3, NULL) == 0 && o3[0] == 1 && o3[1] == 10 && close_to(o3[2], 1.5, 1e-15) &&
          close_to(o3[3], 15, 1e-15) && close_to(o3[4], 3, 1e-15) && close_to(o3[5], 30, 1e-15),
          "equal scores give running means: %g %g %g %g %g %g", o3[0], o3[1], o3[2], o3[3], o3[4], o3[5]);
    /* Decode against a long cache; prefill; chunked prefill; GQA; f16; both layouts;
     * large scores (a naive exp would overflow). */
    check_attention_case(1, 1000, 4, 2, 16, 1, RAYO_DTYPE_F32, 0, 1);
    check_attention_case(7, 7, 8, 2, 8, 1, RAYO_DTYPE_F32, 0, 1);
    check_attention_case(3, 50, 6, 3, 8, 1, RAYO_DTYPE_F16, 1, 1);
    check_attention_case(5, 9, 4, 4, 12, 0, RAYO_DTYPE_F16, 0, 1);
    check_attention_case(4, 64, 2, 1, 32, 1, RAYO_DTYPE_F32, 1, 300);
    /* Refusals. */
    ref_attention_shape gqa_bad = {1, 1, 3, 2, 4, 1, 1.0}, too_many = {2, 1, 2, 1, 4, 1, 1.0};
    CHECK(ref_attention(&gqa_bad, &Q, &K, &V, out, NULL) == -1, "n_kv_heads must divide n_heads");
    CHECK(ref_attention(&too_many, &Q, &K, &V, out, NULL) == -1, "causal with more queries than positions");
}

/* ---- glu ---- */
static void test_glu(void)
{
    const float ab[2][4] = {{1, 0, -2, 3}, {2, 5, 0.5f, -1}}; /* [gate | up] rows: a = ab[r], b = ab[r] + 2 */
    double y[4];
    CHECK(ref_glu(REF_GLU_SWIGLU, 2, 2, &ab[0][0], 4, &ab[0][2], 4, y) == 0, "swiglu");
    /* silu(1) = 1 / (1 + e^-1) = 0.7310585786300049;  silu(0) = 0;  silu(2) = 1.7615941559557646;  silu(5) = 4.966535745378576 */
    CHECK(close_to(y[0], 0.7310585786300049 * -2, 1e-15) && y[1] == 0 && close_to(y[2], 1.7615941559557646 * 0.5, 1e-15) &&
          close_to(y[3], -4.966535745378576, 1e-15), "swiglu values %g %g %g %g", y[0], y[1], y[2], y[3]);
    CHECK(ref_glu(REF_GLU_GEGLU, 1, 1, &ab[0][0], 4, &ab[0][3], 4, y) == 0 && close_to(y[0], 0.8413447460685429 * 3, 1e-15),
          "geglu(1) * 3 = %g", y[0]);
    CHECK(ref_glu(REF_GLU_GEGLU_TANH, 1, 1, &ab[0][0], 4, &ab[0][3], 4, y) == 0 && close_to(y[0], 0.8411919906082768 * 3, 1e-15),
          "geglu_tanh(1) * 3 = %g", y[0]);
    CHECK(ref_glu((ref_glu_kind)7, 1, 1, &ab[0][0], 4, &ab[0][3], 4, y) == -1, "unknown kind refused");
    /* Left tails, relative (120-digit values): 1 + erf and 1 + tanh would
     * cancel to 0 in double here. */
    const float tail[2][2] = {{-10, 1}, {-80, 1}};
    CHECK(ref_glu(REF_GLU_GEGLU, 1, 1, &tail[0][0], 2, &tail[0][1], 2, y) == 0 &&
          fabs(y[0] / -7.6198530241605260647e-23 - 1) < 1e-13, "geglu(-10) = %g", y[0]);
    CHECK(ref_glu(REF_GLU_GEGLU_TANH, 1, 1, &tail[0][0], 2, &tail[0][1], 2, y) == 0 &&
          fabs(y[0] / -1.2040923482098059937e-37 - 1) < 1e-13, "geglu_tanh(-10) = %g", y[0]);
    CHECK(ref_glu(REF_GLU_SWIGLU, 1, 1, &tail[1][0], 2, &tail[1][1], 2, y) == 0 &&
          fabs(y[0] / -1.4438811102763321378e-33 - 1) < 1e-13, "swiglu(-80) = %g", y[0]);
}

int main(void)
{
    rng_seed_from_env();
    test_dequantize_agrees();
    test_matmul_gemv();
    test_get_rows();
    test_rope();
    test_attention();
    test_glu();
    return test_summary();
}
