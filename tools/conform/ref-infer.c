/* SPDX-License-Identifier: MIT */
/* ref-infer.c - float64 references for the inference ops (see ref-infer.h).
 *
 * Written apart from the kernels on purpose: block formats are decoded here
 * element by element from their published layout, f16 and bf16 by the
 * formula of the format, all in double. */
#include "ref-infer.h"
#include <math.h>
#include <stdlib.h>

/* ---- element values ---- */
static unsigned byte_at(const void *p, size_t i)
{
    return ((const unsigned char *)p)[i];
}

/* The value of a 16-bit IEEE-style float with `mant` mantissa bits (f16: 10,
 * exponent bias 15; bf16: 7, bias 127). */
static double small_float_value(unsigned h, int mant, int bias)
{
    int emax = (1 << (15 - mant)) - 1, e = (h >> mant) & emax, m = h & ((1 << mant) - 1);
    double s = (h & 0x8000) ? -1.0 : 1.0;
    if (e == emax)
        return m ? NAN : s * INFINITY;
    return e ? s * ldexp((1 << mant) + m, e - bias - mant) : s * ldexp(m, 1 - bias - mant);
}

static double half_value(unsigned h)
{
    return small_float_value(h, 10, 15);
}

static double bfloat_value(unsigned h)
{
    return small_float_value(h, 7, 127);
}

static unsigned le16_at(const void *p, size_t off)
{
    return byte_at(p, off) | (byte_at(p, off + 1) << 8);
}

/* Q8_0 (34 bytes): f16 d, then 32 signed bytes; x = d q. */
static double q8_0_value(const void *row, size_t i)
{
    size_t blk = 34 * (i / 32);
    int q = (int)byte_at(row, blk + 2 + i % 32);
    return half_value(le16_at(row, blk)) * (q >= 128 ? q - 256 : q);
}

/* Q4_0 (18 bytes): f16 d, 16 bytes; value j < 16 is the low nibble of byte
 * j, value j >= 16 the high nibble of byte j - 16; x = d (q - 8). */
static double q4_0_value(const void *row, size_t i)
{
    size_t blk = 18 * (i / 32), j = i % 32;
    unsigned b = byte_at(row, blk + 2 + j % 16);
    int q = j < 16 ? (int)(b & 15) : (int)(b >> 4);
    return half_value(le16_at(row, blk)) * (q - 8);
}

/* Q4_K (144 bytes): f16 d, f16 dmin, 12 bytes of 6-bit scales and mins for
 * 8 sub-blocks of 32, 128 bytes of nibbles; x = d sc q - dmin m. */
static void q4_k_scale_min(const void *row, size_t blk, int s, int *sc, int *m)
{
    size_t p = blk + 4;
    if (s < 4) {
        *sc = (int)(byte_at(row, p + s) & 63);
        *m = (int)(byte_at(row, p + 4 + s) & 63);
    } else { /* low 4 bits in bytes 8..11, top 2 bits in the top of bytes 0..7 */
        unsigned low = byte_at(row, p + 4 + s);
        *sc = (int)((low & 15) | ((byte_at(row, p + s - 4) >> 6) << 4));
        *m = (int)((low >> 4) | ((byte_at(row, p + s) >> 6) << 4));
    }
}

static double q4_k_value(const void *row, size_t i)
{
    size_t blk = 144 * (i / 256), j = i % 256;
    int s = (int)(j / 32), sc, m;
    q4_k_scale_min(row, blk, s, &sc, &m);
    unsigned b = byte_at(row, blk + 16 + 32 * (j / 64) + j % 32);
    int q = (s & 1) ? (int)(b >> 4) : (int)(b & 15);
    return half_value(le16_at(row, blk)) * sc * q - half_value(le16_at(row, blk + 2)) * m;
}

/* Q6_K (210 bytes): ql[128] low 4 bits, qh[64] high 2 bits, 16 signed scales
 * (one per 16 values), f16 d last; x = d sc (q - 32). */
static double q6_k_value(const void *row, size_t i)
{
    size_t blk = 210 * (i / 256), j = i % 256;
    size_t half = j / 128, quarter = (j % 128) / 32, l = j % 32;
    unsigned lowbyte = byte_at(row, blk + 64 * half + 32 * (quarter % 2) + l);
    unsigned low = quarter < 2 ? (lowbyte & 15) : (lowbyte >> 4);
    unsigned high = (byte_at(row, blk + 128 + 32 * half + l) >> (2 * quarter)) & 3;
    int sc = (int)byte_at(row, blk + 192 + j / 16);
    return half_value(le16_at(row, blk + 208)) * (sc >= 128 ? sc - 256 : sc) * ((int)(low | (high << 4)) - 32);
}

double ref_element(rayo_dtype dt, const void *row, size_t i)
{
    switch (dt) {
    case RAYO_DTYPE_F32: return (double)((const float *)row)[i];
    case RAYO_DTYPE_F16: return half_value(le16_at(row, 2 * i));
    case RAYO_DTYPE_BF16: return bfloat_value(le16_at(row, 2 * i));
    case RAYO_DTYPE_I32: return (double)((const int32_t *)row)[i];
    case RAYO_DTYPE_Q8_0: return q8_0_value(row, i);
    case RAYO_DTYPE_Q4_0: return q4_0_value(row, i);
    case RAYO_DTYPE_Q4_K: return q4_k_value(row, i);
    case RAYO_DTYPE_Q6_K: return q6_k_value(row, i);
    default: return NAN;
    }
}

int ref_dequantize(rayo_dtype dt, const void *src, size_t n, double *y)
{
    size_t bytes = 0;
    if (!rayo_dtype_row_bytes(dt, n, &bytes))
        return -1;
    for (size_t i = 0; i < n; i++)
        y[i] = ref_element(dt, src, i);
    return 0;
}

/* ---- matrices ---- */
static const void *row_start(const ref_matrix *a, size_t r)
{
    size_t bytes = 0;
    rayo_dtype_row_bytes(a->dtype, a->ld, &bytes); /* checked by matrix_ok */
    return (const unsigned char *)a->data + r * bytes;
}

double ref_matrix_at(const ref_matrix *a, size_t r, size_t c)
{
    return ref_element(a->dtype, row_start(a, r), c);
}

static int matrix_ok(const ref_matrix *a)
{
    size_t bytes = 0, per = rayo_dtype_block_elems(a->dtype);
    return a->data && per && a->ld >= a->cols && a->cols % per == 0 &&
           rayo_dtype_row_bytes(a->dtype, a->ld, &bytes);
}

/* op(X)(i, p): X itself, or X^T when trans. */
static double op_at(const ref_matrix *x, int trans, size_t i, size_t p)
{
    return trans ? ref_matrix_at(x, p, i) : ref_matrix_at(x, i, p);
}

/* op(X) (rows x cols) decoded once into doubles, row-major; NULL when out of
 * memory.  The product reads each element k or m times: decoding a block
 * format's element each time made the reference most of a test's time. */
static double *dense_op(const ref_matrix *x, int trans, size_t rows, size_t cols)
{
    double *d = malloc((rows * cols > 0 ? rows * cols : 1) * sizeof *d);
    if (d)
        for (size_t i = 0; i < rows; i++)
            for (size_t p = 0; p < cols; p++)
                d[i * cols + p] = op_at(x, trans, i, p);
    return d;
}

int ref_matmul(unsigned flags, size_t m, size_t n, size_t k, double alpha, const ref_matrix *a,
               const ref_matrix *b, double beta, const float *c0, size_t ldc, double *c, double *terms)
{
    int ta = (flags & RAYO_TRANS_A) != 0, tb = (flags & RAYO_TRANS_B) != 0;
    if (!matrix_ok(a) || !matrix_ok(b) || (beta != 0 && (!c0 || ldc < n)))
        return -1;
    if ((ta ? a->cols : a->rows) < m || (ta ? a->rows : a->cols) < k ||
        (tb ? b->rows : b->cols) < n || (tb ? b->cols : b->rows) < k)
        return -1;
    /* op(A) as m rows of k, op(B) as k rows of n: the inner loop runs along
     * a row of op(B) and of C, contiguous and free of a serial chain. */
    double *da = dense_op(a, ta, m, k), *db = dense_op(b, tb, k, n);
    int rc = da && db ? 0 : -1;
    for (size_t i = 0; i < m && rc == 0; i++) {
        double *s = c + i * n, *t = terms ? terms + i * n : NULL;
        for (size_t j = 0; j < n; j++) {
            s[j] = 0;
            if (t)
                t[j] = 0;
        }
        for (size_t p = 0; p < k; p++) {
            const double av = da[i * k + p], *brow = db + p * n;
            for (size_t j = 0; j < n; j++)
                s[j] += av * brow[j];
            for (size_t j = 0; t && j < n; j++)
                t[j] += fabs(av * brow[j]);
        }
        for (size_t j = 0; j < n; j++) {
            double prior = beta != 0 ? beta * (double)c0[i * ldc + j] : 0.0;
            s[j] = alpha * s[j] + prior;
            if (t)
                t[j] = fabs(alpha) * t[j] + fabs(prior);
        }
    }
    free(da);
    free(db);
    return rc;
}

int ref_gemv(unsigned flags, const ref_matrix *a, const float *x, double alpha, double beta,
             const float *y0, double *y, double *terms)
{
    int ta = (flags & RAYO_TRANS_A) != 0;
    if (!matrix_ok(a) || !x || (beta != 0 && !y0))
        return -1;
    size_t outs = ta ? a->cols : a->rows, inner = ta ? a->rows : a->cols;
    for (size_t i = 0; i < outs; i++) {
        double s = 0, t = 0;
        for (size_t p = 0; p < inner; p++) {
            double term = op_at(a, ta, i, p) * (double)x[p];
            s += term;
            t += fabs(term);
        }
        double prior = beta != 0 ? beta * (double)y0[i] : 0.0;
        y[i] = alpha * s + prior;
        if (terms)
            terms[i] = fabs(alpha) * t + fabs(prior);
    }
    return 0;
}

int ref_get_rows(const ref_matrix *table, const int32_t *idx, size_t n_idx, double *out)
{
    if (!matrix_ok(table) || (n_idx && !idx))
        return -1;
    for (size_t r = 0; r < n_idx; r++) {
        if (idx[r] < 0 || (size_t)idx[r] >= table->rows)
            return -1;
        for (size_t c = 0; c < table->cols; c++)
            out[r * table->cols + c] = ref_matrix_at(table, (size_t)idx[r], c);
    }
    return 0;
}

/* ---- rope ---- */
int ref_rope(ref_rope_mode mode, size_t n_tokens, size_t n_heads, size_t head_dim, size_t rot_dims,
             const float *x, size_t token_stride, size_t head_stride, const int32_t *pos,
             double freq_base, double freq_scale, double *y)
{
    if (rot_dims % 2 || rot_dims > head_dim || (mode != REF_ROPE_NORM && mode != REF_ROPE_NEOX) ||
        !(freq_base > 0))
        return -1;
    size_t half = rot_dims / 2;
    for (size_t t = 0; t < n_tokens; t++)
        for (size_t h = 0; h < n_heads; h++) {
            const float *in = x + t * token_stride + h * head_stride;
            double *out = y + (t * n_heads + h) * head_dim;
            for (size_t d = rot_dims; d < head_dim; d++)
                out[d] = in[d];
            for (size_t i = 0; i < half; i++) {
                double theta = pos[t] * freq_scale * pow(freq_base, -2.0 * (double)i / (double)rot_dims);
                size_t iu = mode == REF_ROPE_NORM ? 2 * i : i;
                size_t iv = mode == REF_ROPE_NORM ? 2 * i + 1 : i + half;
                double u = in[iu], v = in[iv], c = cos(theta), s = sin(theta);
                out[iu] = u * c - v * s;
                out[iv] = u * s + v * c;
            }
        }
    return 0;
}

/* ---- attention ---- */
static double heads_at(const ref_heads *x, size_t token, size_t head, size_t d)
{
    size_t i = token * x->token_stride + head * x->head_stride + d;
    return ref_element(x->dtype, x->data, i);
}

/* One query row qd of one head against its KV head's keys and values (kd,
 * vd: n_kv rows of head_dim, decoded), in one pass over the visible keys:
 * the running maximum mx rescales what was summed so far when it grows, so
 * no exp() ever overflows and no score buffer is needed. */
static void attend_one(const ref_attention_shape *s, const double *qd, const double *kd, const double *vd,
                       size_t i, double *out, double *terms)
{
    size_t dim = s->head_dim, visible = s->causal ? s->n_kv - s->n_q + i + 1 : s->n_kv;
    double mx = -INFINITY, sum = 0;
    for (size_t d = 0; d < dim; d++)
        out[d] = terms[d] = 0;
    for (size_t j = 0; j < visible; j++) {
        const double *key = kd + j * dim, *val = vd + j * dim;
        double score = 0;
        for (size_t d = 0; d < dim; d++)
            score += qd[d] * key[d];
        score *= s->scale;
        if (score > mx) {
            double shrink = exp(mx - score); /* 0 for the first key */
            sum *= shrink;
            for (size_t d = 0; d < dim; d++) {
                out[d] *= shrink;
                terms[d] *= shrink;
            }
            mx = score;
        }
        double p = exp(score - mx);
        sum += p;
        for (size_t d = 0; d < dim; d++) {
            out[d] += p * val[d];
            terms[d] += p * fabs(val[d]);
        }
    }
    for (size_t d = 0; d < dim; d++) {
        out[d] /= sum;
        terms[d] /= sum;
    }
}

/* rows x head_dim values of one head of x, decoded: every query reads each
 * key and value, so decoding an element per read made the reference most of
 * a test's time. */
static void decode_head(const ref_heads *x, size_t rows, size_t head, size_t dim, double *y)
{
    for (size_t t = 0; t < rows; t++)
        for (size_t d = 0; d < dim; d++)
            y[t * dim + d] = heads_at(x, t, head, d);
}

static int attention_shape_ok(const ref_attention_shape *s, const ref_heads *q, const ref_heads *k,
                              const ref_heads *v)
{
    if (!s->n_kv || !s->n_kv_heads || s->n_heads % s->n_kv_heads || (s->causal && s->n_q > s->n_kv))
        return 0;
    if (q->dtype != RAYO_DTYPE_F32 || k->dtype != v->dtype ||
        (k->dtype != RAYO_DTYPE_F32 && k->dtype != RAYO_DTYPE_F16))
        return 0;
    return q->data && k->data && v->data;
}

int ref_attention(const ref_attention_shape *s, const ref_heads *q, const ref_heads *k,
                  const ref_heads *v, double *out, double *terms)
{
    if (!attention_shape_ok(s, q, k, v))
        return -1;
    size_t dim = s->head_dim, group = s->n_heads / s->n_kv_heads;
    double *kd = malloc(s->n_kv * dim * sizeof *kd), *vd = malloc(s->n_kv * dim * sizeof *vd);
    double *qd = malloc(dim * sizeof *qd), *scratch = terms ? NULL : malloc(dim * sizeof *scratch);
    int rc = kd && vd && qd && (terms || scratch) ? 0 : -1;
    for (size_t kvh = 0; kvh < s->n_kv_heads && rc == 0; kvh++) {
        decode_head(k, s->n_kv, kvh, dim, kd);
        decode_head(v, s->n_kv, kvh, dim, vd);
        for (size_t h = kvh * group; h < (kvh + 1) * group; h++)
            for (size_t i = 0; i < s->n_q; i++) {
                size_t at = (i * s->n_heads + h) * dim;
                for (size_t d = 0; d < dim; d++)
                    qd[d] = heads_at(q, i, h, d);
                attend_one(s, qd, kd, vd, i, out + at, terms ? terms + at : scratch);
            }
    }
    free(kd);
    free(vd);
    free(qd);
    free(scratch);
    return rc;
}

/* ---- gated activations ---- */
/* Written so the left tail keeps its relative precision (up ~1e30 makes
 * gates of 1e-37 count): erfc instead of 1 + erf, and 1 + tanh(z) as
 * 2 / (1 + exp(-2 z)). */
static double gate(ref_glu_kind kind, double a)
{
    switch (kind) {
    case REF_GLU_SWIGLU: return a / (1 + exp(-a));
    case REF_GLU_GEGLU: return 0.5 * a * erfc(-a / sqrt(2.0));
    default: return a / (1 + exp(-2 * 0.79788456080286535588 /* sqrt(2 / pi) */ * (a + 0.044715 * a * a * a)));
    }
}

int ref_glu(ref_glu_kind kind, size_t rows, size_t cols, const float *a, size_t lda, const float *b,
            size_t ldb, double *y)
{
    if ((kind != REF_GLU_SWIGLU && kind != REF_GLU_GEGLU && kind != REF_GLU_GEGLU_TANH) ||
        lda < cols || ldb < cols)
        return -1;
    for (size_t r = 0; r < rows; r++)
        for (size_t c = 0; c < cols; c++)
            y[r * cols + c] = gate(kind, a[r * lda + c]) * (double)b[r * ldb + c];
    return 0;
}
