/* SPDX-License-Identifier: MIT */
/* ref-f32.c - the float64 references of the f32 ops (conform.h:
 * conform_reference); the other dtypes and the inference ops are in
 * ref-infer.c. */
#define _POSIX_C_SOURCE 200809L
#include "conform-internal.h"
#include "conform-infer.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const double SELU_LAMBDA = 1.0507009873554804934193349852946;
static const double SELU_ALPHA = 1.6732632423543772848170429916717;

/* Written for accuracy in double: gelu through erfc and gelu_tanh through
 * the logistic form avoid the cancellation of 1 + erf / 1 + tanh for x < 0. */
static int ref_unary(uint32_t op, double x, double alpha, double beta, double *out)
{
    switch (op) {
    case RAYO_OP_SCALE: *out = alpha * x; return 0;
    case RAYO_OP_RELU: *out = isnan(x) ? x : (x > 0 ? x : 0.0); return 0;
    case RAYO_OP_LEAKY_RELU: *out = x > 0 ? x : alpha * x; return 0;
    case RAYO_OP_ELU: *out = x > 0 ? x : alpha * expm1(x); return 0;
    case RAYO_OP_SELU: *out = SELU_LAMBDA * (x > 0 ? x : SELU_ALPHA * expm1(x)); return 0;
    case RAYO_OP_SIGMOID: *out = 1.0 / (1.0 + exp(-x)); return 0;
    case RAYO_OP_TANH: *out = tanh(x); return 0;
    case RAYO_OP_GELU: *out = 0.5 * x * erfc(-x / sqrt(2.0)); return 0;
    case RAYO_OP_GELU_TANH: {
        /* x (1 + tanh(u)) / 2 = x / (1 + exp(-2u)) */
        double u = sqrt(2.0 / 3.14159265358979323846) * (x + 0.044715 * x * x * x);
        *out = x / (1.0 + exp(-2.0 * u));
        return 0;
    }
    case RAYO_OP_SILU: *out = x / (1.0 + exp(-x)); return 0;
    case RAYO_OP_MISH: *out = x * tanh(log1p(exp(x))); return 0;
    case RAYO_OP_HARDSWISH: *out = x * fmin(fmax(x + 3.0, 0.0), 6.0) / 6.0; return 0;
    case RAYO_OP_CLIP: *out = isnan(x) ? x : (x < alpha ? alpha : (x > beta ? beta : x)); return 0;
    case RAYO_OP_EXP: *out = exp(x); return 0;
    case RAYO_OP_LOG: *out = log(x); return 0;
    case RAYO_OP_SQRT: *out = sqrt(x); return 0;
    case RAYO_OP_ABS: *out = fabs(x); return 0;
    /* log(1 + e^x) = max(x, 0) + log1p(e^-|x|): exp(x) alone overflows past x = 709 */
    case RAYO_OP_SOFTPLUS: *out = isnan(x) ? x : fmax(x, 0.0) + log1p(exp(-fabs(x))); return 0;
    default: return -1;
    }
}

static int ref_binary(uint32_t op, double a, double b, double *out)
{
    switch (op) {
    case RAYO_OP_ADD: *out = a + b; return 0;
    case RAYO_OP_SUB: *out = a - b; return 0;
    case RAYO_OP_MUL: *out = a * b; return 0;
    case RAYO_OP_DIV: *out = a / b; return 0;
    case RAYO_OP_MAXIMUM: *out = (isnan(a) || isnan(b)) ? NAN : (a > b ? a : b); return 0;
    case RAYO_OP_MINIMUM: *out = (isnan(a) || isnan(b)) ? NAN : (a < b ? a : b); return 0;
    default: return -1;
    }
}

static double ref_activation(uint32_t act, double x)
{
    static const uint32_t as_op[RAYO_ACT_LIMIT] = {
        [RAYO_ACT_RELU] = RAYO_OP_RELU, [RAYO_ACT_GELU] = RAYO_OP_GELU,
        [RAYO_ACT_SILU] = RAYO_OP_SILU, [RAYO_ACT_TANH] = RAYO_OP_TANH,
        [RAYO_ACT_SIGMOID] = RAYO_OP_SIGMOID,
    };
    double y = x;
    if (act < RAYO_ACT_LIMIT && as_op[act])
        ref_unary(as_op[act], x, 0, 0, &y);
    return y;
}

/* Reductions: *ref the result, *terms the sum of |terms| it adds up. */
static int ref_reduce(uint32_t op, const float *a, const float *b, size_t n, double *ref, double *terms)
{
    double s = 0, t = 0;
    switch (op) {
    case RAYO_OP_SUM:
        for (size_t i = 0; i < n; i++)
            s += a[i], t += fabs(a[i]);
        break;
    case RAYO_OP_DOT:
        for (size_t i = 0; i < n; i++) {
            double p = (double)a[i] * b[i]; /* exact */
            s += p, t += fabs(p);
        }
        break;
    case RAYO_OP_NORM_L1:
        for (size_t i = 0; i < n; i++)
            s += fabs(a[i]);
        t = s;
        break;
    case RAYO_OP_NORM_L2:
        for (size_t i = 0; i < n; i++)
            s += (double)a[i] * a[i]; /* no overflow in double for any float */
        s = t = sqrt(s);
        break;
    case RAYO_OP_MAX: case RAYO_OP_MIN:
        s = op == RAYO_OP_MAX ? -INFINITY : INFINITY;
        for (size_t i = 0; i < n; i++) {
            if (isnan(a[i])) {
                s = NAN;
                break;
            }
            if (op == RAYO_OP_MAX ? a[i] > s : a[i] < s)
                s = a[i];
        }
        t = fabs(s);
        break;
    case RAYO_OP_ARGMAX: {
        size_t best = 0;
        for (size_t i = 0; i < n; i++) {
            if (isnan(a[i])) {
                best = i;
                break;
            }
            if (a[i] > a[best])
                best = i;
        }
        s = (double)best;
        break;
    }
    default:
        return -1;
    }
    *ref = s;
    *terms = t;
    return 0;
}

static int ref_rows(const rayo_call *c, double *ref)
{
    const float *x = c->a;
    if (c->op != RAYO_OP_SOFTMAX && c->op != RAYO_OP_LOG_SOFTMAX)
        return -1;
    for (size_t r = 0; r < c->m; r++, x += c->n, ref += c->n) {
        double mx = -INFINITY, s = 0;
        for (size_t j = 0; j < c->n; j++)
            mx = x[j] > mx ? x[j] : mx;
        for (size_t j = 0; j < c->n; j++)
            s += exp(x[j] - mx);
        for (size_t j = 0; j < c->n; j++)
            ref[j] = c->op == RAYO_OP_SOFTMAX ? exp(x[j] - mx) / s : (x[j] - mx) - log(s);
    }
    return 0;
}

static int ref_norm(const rayo_call *c, double *ref)
{
    const float *x = c->a, *gamma = c->b, *beta = c->c;
    size_t n = c->n;
    if (c->op != RAYO_OP_LAYERNORM && c->op != RAYO_OP_RMSNORM)
        return -1;
    for (size_t r = 0; r < c->m; r++, x += n, ref += n) {
        double mean = 0, sq = 0;
        if (c->op == RAYO_OP_LAYERNORM) {
            for (size_t j = 0; j < n; j++)
                mean += x[j];
            mean /= (double)n;
        }
        for (size_t j = 0; j < n; j++)
            sq += (x[j] - mean) * (x[j] - mean);
        /* var + eps = 0 (a constant row, eps = 0): defined as 0 in rayo-ops.h;
         * a NaN in the row makes denom NaN, and every output NaN */
        double denom = sqrt(sq / (double)n + (double)c->alpha);
        double inv = denom == 0 ? 0.0 : 1.0 / denom;
        for (size_t j = 0; j < n; j++) {
            double y = (x[j] - mean) * inv * (gamma ? gamma[j] : 1.0);
            if (c->op == RAYO_OP_LAYERNORM && beta)
                y += beta[j];
            ref[j] = y;
        }
    }
    return 0;
}

/* The row stride of an operand stored rows x cols: ld, or cols when dense. */
static size_t row_stride(size_t ld, size_t cols)
{
    return ld ? ld : cols;
}

/* C = alpha op(A) op(B) + beta C; C is read only when beta != 0.  A, B and
 * C are read with their row strides; ref and terms are dense m x n. */
static int ref_matmul(const rayo_call *c, double *ref, double *terms)
{
    size_t m = c->m, n = c->n, k = c->k;
    int ta = (c->flags & RAYO_TRANS_A) != 0, tb = (c->flags & RAYO_TRANS_B) != 0;
    const float *A = c->a, *B = c->b, *C = c->y;
    size_t lda = row_stride(c->lda, ta ? m : k), ldb = row_stride(c->ldb, tb ? k : n);
    size_t ldc = row_stride(c->ldy, n);
    /* op(B) as a k x n row-major double matrix, so the inner loop is contiguous. */
    double *opb = malloc((k * n + 1) * sizeof *opb);
    if (!opb)
        return -1;
    for (size_t l = 0; l < k; l++)
        for (size_t j = 0; j < n; j++)
            opb[l * n + j] = tb ? B[j * ldb + l] : B[l * ldb + j];
    for (size_t i = 0; i < m; i++) {
        double *r = ref + i * n, *t = terms + i * n;
        for (size_t j = 0; j < n; j++)
            r[j] = t[j] = 0;
        for (size_t l = 0; l < k; l++) {
            double av = ta ? A[l * lda + i] : A[i * lda + l];
            const double *brow = opb + l * n;
            for (size_t j = 0; j < n; j++) {
                double p = av * brow[j];
                r[j] += p;
                t[j] += fabs(p);
            }
        }
        for (size_t j = 0; j < n; j++) {
            r[j] *= c->alpha;
            t[j] *= fabs(c->alpha);
            if (c->beta != 0) {
                double cv = (double)c->beta * C[i * ldc + j];
                r[j] += cv;
                t[j] += fabs(cv);
            }
        }
    }
    free(opb);
    return 0;
}

/* y = alpha op(A) x + beta y, A m x n (row stride lda); y is read only
 * when beta != 0. */
static void ref_gemv(const rayo_call *c, double *ref, double *terms)
{
    int ta = (c->flags & RAYO_TRANS_A) != 0;
    size_t out = ta ? c->n : c->m, inner = ta ? c->m : c->n, lda = row_stride(c->lda, c->n);
    const float *A = c->a, *x = c->b, *y = c->y;
    for (size_t o = 0; o < out; o++) {
        double s = 0, t = 0;
        for (size_t l = 0; l < inner; l++) {
            double p = (double)(ta ? A[l * lda + o] : A[o * lda + l]) * x[l];
            s += p;
            t += fabs(p);
        }
        s *= c->alpha;
        t *= fabs(c->alpha);
        if (c->beta != 0) {
            s += (double)c->beta * y[o];
            t += fabs((double)c->beta * y[o]);
        }
        ref[o] = s;
        terms[o] = t;
    }
}

size_t conform_output_count(const rayo_call *c)
{
    const rayo_op_info *op = rayo_op_by_id(c->op);
    if (!op)
        return 0;
    switch (op->sig) {
    case RAYO_SIG_REDUCE: case RAYO_SIG_REDUCE2: return 1;
    case RAYO_SIG_ARGREDUCE: return c->n ? 1 : 0;
    case RAYO_SIG_ROWS: case RAYO_SIG_NORM: case RAYO_SIG_TRANSPOSE:
    case RAYO_SIG_BIAS_ACT: case RAYO_SIG_MATMUL:
        return c->m * c->n;
    case RAYO_SIG_GEMV: return (c->flags & RAYO_TRANS_A) ? c->n : c->m;
    default: return c->n;
    }
}

rayo_status conform_expected_status(const rayo_call *c)
{
    const rayo_op_info *op = rayo_op_by_id(c->op);
    if (op && op->sig == RAYO_SIG_ARGREDUCE && c->n == 0)
        return RAYO_E_INVALID;
    return RAYO_OK;
}

/* Elementwise and row classes: one reference per element, terms = |ref|. */
static int ref_elementwise(const rayo_call *c, const rayo_op_info *op, double *ref)
{
    const float *a = c->a, *b = c->b, *y = c->y;
    for (size_t i = 0; i < c->n; i++) {
        int rc;
        switch (op->sig) {
        case RAYO_SIG_BINARY: rc = ref_binary(c->op, a[i], b[i], &ref[i]); break;
        case RAYO_SIG_AXPY: ref[i] = (double)c->alpha * a[i] + y[i]; rc = 0; break;
        default: rc = ref_unary(c->op, a[i], c->alpha, c->beta, &ref[i]); break;
        }
        if (rc)
            return -1;
    }
    return 0;
}

int conform_reference(const rayo_call *c, double *ref, double *terms)
{
    const rayo_op_info *op = rayo_op_by_id(c->op);
    size_t count = conform_output_count(c);
    int rc = 0;
    if (!op || c->dtypes != 0) /* other dtypes: ref-infer.c's references (plans-infer.c) */
        return -1;
    switch (op->sig) {
    case RAYO_SIG_BINARY: case RAYO_SIG_UNARY: case RAYO_SIG_UNARY_P:
    case RAYO_SIG_UNARY_P2: case RAYO_SIG_AXPY:
        rc = ref_elementwise(c, op, ref);
        if (op->sig == RAYO_SIG_AXPY && rc == 0) {
            const float *a = c->a, *y = c->y;
            for (size_t i = 0; i < c->n; i++)
                terms[i] = fabs((double)c->alpha * a[i]) + fabs(y[i]);
            return 0;
        }
        break;
    case RAYO_SIG_REDUCE: case RAYO_SIG_REDUCE2: case RAYO_SIG_ARGREDUCE:
        if (count)
            return ref_reduce(c->op, c->a, c->b, c->n, ref, terms);
        return 0;
    case RAYO_SIG_ROWS: rc = ref_rows(c, ref); break;
    case RAYO_SIG_NORM: rc = ref_norm(c, ref); break;
    case RAYO_SIG_MATMUL: return c->op == RAYO_OP_MATMUL ? ref_matmul(c, ref, terms) : -1;
    case RAYO_SIG_GEMV:
        if (c->op != RAYO_OP_GEMV)
            return -1;
        ref_gemv(c, ref, terms);
        return 0;
    case RAYO_SIG_TRANSPOSE:
        if (c->op != RAYO_OP_TRANSPOSE)
            return -1;
        for (size_t i = 0; i < c->m; i++)
            for (size_t j = 0; j < c->n; j++)
                ref[j * c->m + i] = ((const float *)c->a)[i * c->n + j];
        break;
    case RAYO_SIG_BIAS_ACT:
        if (c->op != RAYO_OP_BIAS_ACT)
            return -1;
        for (size_t i = 0; i < c->m; i++)
            for (size_t j = 0; j < c->n; j++)
                ref[i * c->n + j] = ref_activation(c->flags, (double)((const float *)c->a)[i * c->n + j] + ((const float *)c->b)[j]);
        break;
    default:
        return -1;
    }
    if (rc)
        return rc;
    for (size_t i = 0; i < count; i++)
        terms[i] = fabs(ref[i]);
    return 0;
}
