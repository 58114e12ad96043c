/* conform.c - the conformance engine (see conform.h).
 *
 * Layout of this file:
 *   random numbers and seeds
 *   what the engine knows per op: input domains, edge values, parameters
 *   float64 references
 *   the contract check of one element
 *   judging outputs computed elsewhere (the tests of device backends)
 *   test plans: the cases of each signature
 *   guarded buffers and running one case
 */
#define _POSIX_C_SOURCE 200809L
#include "conform.h"
#include "conform-infer.h"

#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* ---- random numbers and seeds ------------------------------------------- */
void conform_rng_seed(conform_rng *rng, uint64_t seed)
{
    rng->state = seed;
}

uint64_t conform_rng_next(conform_rng *rng)
{
    uint64_t z = (rng->state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

double conform_rng_uniform(conform_rng *rng)
{
    return (double)(conform_rng_next(rng) >> 11) * 0x1.0p-53;
}

static double uniform_in(conform_rng *rng, double lo, double hi)
{
    return lo + (hi - lo) * conform_rng_uniform(rng);
}

static size_t below(conform_rng *rng, size_t n)
{
    return n ? (size_t)(conform_rng_next(rng) % n) : 0;
}

void conform_fill_uniform(conform_rng *rng, float *x, size_t n, double lo, double hi)
{
    for (size_t i = 0; i < n; i++)
        x[i] = (float)uniform_in(rng, lo, hi);
}

uint64_t conform_default_seed(void)
{
    const char *env = getenv("RAYO_CONFORM_SEED");
    if (env && *env) {
        char *end;
        unsigned long long v = strtoull(env, &end, 0);
        if (*end == '\0')
            return v;
    }
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    conform_rng r = {(uint64_t)ts.tv_sec * 1000000007u ^ (uint64_t)ts.tv_nsec ^
                     ((uint64_t)getpid() << 32)};
    /* Short enough to type when replaying a run. */
    return conform_rng_next(&r) % 4000000000u;
}

/* ---- what the engine knows per op ----------------------------------------- */
/* Random inputs come from a domain where the op is defined and interesting:
 * LINEAR: uniform in [lo, hi]; SIGNED_LOG: +-2^u, u in [lo, hi] (many
 * magnitudes: cancellation, rounding); POSITIVE: 2^u or uniform in [0.5, 2]
 * (log and sqrt: many decades, and values near 1). */
typedef enum domain_kind { DOM_LINEAR, DOM_SIGNED_LOG, DOM_POSITIVE } domain_kind;
typedef struct domain {
    domain_kind kind;
    double lo, hi;
} domain;

static domain linear(double lo, double hi)
{
    return (domain){DOM_LINEAR, lo, hi};
}

static domain op_domain(uint32_t op)
{
    switch (op) {
    case RAYO_OP_ADD: case RAYO_OP_SUB: case RAYO_OP_MUL: case RAYO_OP_DIV:
    case RAYO_OP_MAXIMUM: case RAYO_OP_MINIMUM: case RAYO_OP_SCALE: case RAYO_OP_ABS:
    case RAYO_OP_TRANSPOSE:
        return (domain){DOM_SIGNED_LOG, -8, 8};
    case RAYO_OP_EXP: return linear(-87, 88);         /* results stay normal floats */
    case RAYO_OP_LOG: case RAYO_OP_SQRT: return (domain){DOM_POSITIVE, -64, 64};
    case RAYO_OP_HARDSWISH: return linear(-6, 6);
    case RAYO_OP_MAX: case RAYO_OP_MIN: case RAYO_OP_ARGMAX: return linear(-100, 100);
    case RAYO_OP_SUM: case RAYO_OP_DOT: case RAYO_OP_NORM_L1: case RAYO_OP_NORM_L2:
    case RAYO_OP_MATMUL: case RAYO_OP_GEMV:
        return linear(-1, 1);
    case RAYO_OP_LAYERNORM: case RAYO_OP_RMSNORM: return linear(-5, 5);
    case RAYO_OP_BIAS_ACT: return linear(-6, 6);
    default: return linear(-10, 10);
    }
}

static float draw(conform_rng *rng, domain d, size_t index)
{
    switch (d.kind) {
    case DOM_SIGNED_LOG: {
        double mag = exp2(uniform_in(rng, d.lo, d.hi));
        return (float)((conform_rng_next(rng) & 1) ? -mag : mag);
    }
    case DOM_POSITIVE:
        return (float)((index & 1) ? uniform_in(rng, 0.5, 2.0) : exp2(uniform_in(rng, d.lo, d.hi)));
    case DOM_LINEAR:
    default:
        return (float)uniform_in(rng, d.lo, d.hi);
    }
}

/* Edge inputs.  Tiny values are 1e-30, not denormals: the contract does not
 * say whether a backend may flush denormals (GPUs do), so no case makes one. */
static const float edge_values[] = {
    NAN, INFINITY, -INFINITY, 0.0f, -0.0f, 1e30f, -1e30f, 1e-30f, -1e-30f,
    1.0f, -1.0f, 0.5f, -3.0f, 2.5f, FLT_MAX, -FLT_MAX,
};
#define MAX_EDGES (sizeof edge_values / sizeof edge_values[0])

/* x * g(x) activations: at -inf the formula is -inf * 0.  Whether the
 * answer is NaN (IEEE arithmetic on the formula) or 0 (the limit) is not
 * settled by rayo-ops.h, so -inf is not tested for them. */
static int minus_inf_undefined(uint32_t op)
{
    switch (op) {
    case RAYO_OP_GELU: case RAYO_OP_GELU_TANH: case RAYO_OP_SILU: case RAYO_OP_MISH:
    case RAYO_OP_HARDSWISH: case RAYO_OP_BIAS_ACT:
        return 1;
    default:
        return 0;
    }
}

static size_t edge_set(const rayo_op_info *op, float *out)
{
    /* +-FLT_MAX only where one input makes one output: with two operands,
     * 1/FLT_MAX is a denormal and a*FLT_MAX + y depends on FMA. */
    int unary = op->sig == RAYO_SIG_UNARY || op->sig == RAYO_SIG_UNARY_P ||
                op->sig == RAYO_SIG_UNARY_P2 || op->sig == RAYO_SIG_TRANSPOSE;
    size_t count = 0;
    for (size_t i = 0; i < MAX_EDGES; i++) {
        float v = edge_values[i];
        if (isinf(v) && v < 0 && minus_inf_undefined(op->id))
            continue;
        if (fabsf(v) == FLT_MAX && !unary)
            continue;
        out[count++] = v;
    }
    return count;
}

/* ---- float64 references ----------------------------------------------------- */
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

/* ---- the contract check of one element ------------------------------------ */
double conform_judge(const rayo_op_info *op, double ref, double terms, float y, int *pass)
{
    int exact = op->tol_rel == 0 && op->tol_abs == 0;
    if (isnan(ref) || isnan(y)) {
        *pass = isnan(ref) && isnan(y);
        return *pass ? 0 : INFINITY;
    }
    double scale = op->scale == RAYO_SCALE_SUM ? terms : fabs(ref);
    double allowed = op->tol_rel * scale + op->tol_abs;
    double err = fabs((double)y - ref);
    if (y == (float)ref) {
        /* The reference rounded to float: nothing can do better.  Its error
         * exceeds the contract only where the reference is out of the range
         * of normal floats (overflow, underflow): not counted there. */
        *pass = 1;
        if (exact || isinf(ref) || !(allowed > 0) || err > allowed)
            return 0;
        return err / allowed;
    }
    if (exact || isinf(ref) || isinf(y) || !(allowed > 0)) {
        *pass = 0;
        return INFINITY;
    }
    double units = err / allowed;
    *pass = units <= 1.0;
    return units;
}

/* ---- judging outputs computed elsewhere -------------------------------------- */
static int judge_index(const rayo_call *c, double ref, const void *out, char *msg, size_t size)
{
    size_t got;
    memcpy(&got, out, sizeof got);
    if ((double)got == ref)
        return 0;
    snprintf(msg, size, "index %zu, the float64 reference says %.0f (x[%zu] = %.9g)", got, ref, (size_t)ref,
             (double)((const float *)c->a)[(size_t)ref]);
    return 1;
}

static int judge_floats(const rayo_op_info *op, const double *ref, const double *terms, const float *y,
                        size_t count, char *msg, size_t size)
{
    size_t bad = 0, worst = 0;
    double worst_units = -1;
    for (size_t i = 0; i < count; i++) {
        int pass;
        double units = conform_judge(op, ref[i], terms[i], y[i], &pass);
        if (!pass && units > worst_units)
            worst_units = units, worst = i;
        bad += !pass;
    }
    if (!bad)
        return 0;
    snprintf(msg, size, "%zu of %zu elements out of contract; worst y[%zu] = %.9g, float64 reference %.9g "
             "(%.3g times the allowed error)", bad, count, worst, (double)y[worst], ref[worst], worst_units);
    return 1;
}

int conform_check_outputs(const rayo_op_info *contract, const rayo_call *call, const void *out,
                          char *msg, size_t size)
{
    const rayo_op_info *op = contract ? contract : rayo_op_by_id(call->op);
    size_t count = conform_output_count(call);
    double *ref = malloc((count + 1) * sizeof *ref), *terms = malloc((count + 1) * sizeof *terms);
    int rc = -1;
    snprintf(msg, size, "op %u: no float64 reference (or no memory for it)", (unsigned)call->op);
    if (op && ref && terms && conform_reference(call, ref, terms) == 0) {
        if (size)
            msg[0] = 0;
        if (op->sig == RAYO_SIG_ARGREDUCE)
            rc = count ? judge_index(call, ref[0], out, msg, size) : 0;
        else
            rc = judge_floats(op, ref, terms, out, count, msg, size);
    }
    free(ref);
    free(terms);
    return rc;
}

/* ---- test plans -------------------------------------------------------------- */
typedef enum fill_kind {
    FILL_RANDOM,   /* the op's domain */
    FILL_EDGE,     /* random, a quarter of the elements replaced by edge values */
    FILL_EDGE_ALL, /* every edge value (every pair of them for binary ops) */
    FILL_NAN,      /* reductions: NaN at a few places */
    FILL_PINF, FILL_NINF, FILL_BOTH_INF, FILL_ALL_NINF,
    FILL_TIES,     /* few distinct values: equal maxima */
    FILL_HUGE,     /* |x| ~ 2^90..2^115: squares overflow float */
    FILL_TINY,     /* |x| ~ 2^-125..2^-100: squares underflow float */
    FILL_WIDE,     /* softmax over [-100, 100]: exp overflows without the max */
    FILL_MASKED,   /* softmax with -inf entries (never a whole row) */
    FILL_SHIFTED,  /* uniform in offset +- spread (spread 0: constant) */
    FILL_PLUSMINUS,/* offset +- spread, the sign at random */
    FILL_NEAR_MAX, /* +-[FLT_MAX/2, FLT_MAX], and 3.23862215e38, +-FLT_MAX */
    FILL_DIV_HUGE, /* div: a near +-FLT_MAX, b in +-[1, 100] */
    FILL_DIV_SUBNORMAL, /* div: subnormal b, a small enough for a finite quotient */
    FILL_LITERAL,  /* the case's own data (regression cases), repeated to length */
    FILL_MAX_RUNS  /* runs of 64 FLT_MAX, 64 -FLT_MAX, ..., then 1 (dot: times 2) */
} fill_kind;

static const char *const fill_names[] = {
    "", "edge values", "every edge value", "NaN inputs", "+inf inputs", "-inf inputs",
    "+inf and -inf inputs", "all -inf", "ties", "huge values", "tiny values",
    "wide range", "-inf entries", "shifted", "+-", "near FLT_MAX", "a near FLT_MAX",
    "subnormal divisors", "literal data", "runs of +-FLT_MAX",
};

typedef struct case_spec {
    size_t m, n, k;
    uint32_t flags;
    float alpha, beta;
    fill_kind fill;
    unsigned misalign; /* floats the data sits off 64-byte alignment */
    int alias;         /* 1: y == a, 2: y == b (in place) */
    int no_gamma, no_beta;
    double offset, spread;       /* FILL_SHIFTED, FILL_PLUSMINUS */
    int big_affine;              /* norms: gamma ~ 100, beta ~ +-100 */
    const struct literal *literal; /* FILL_LITERAL */
    const char *group;           /* NULL, or the name of a group of cases (see below) */
} case_spec;

/* Groups of cases that a run may leave out by name (conform_options.skip),
 * e.g. while a backend's fix for them is pending.  Cases of no group are
 * always run.  The "long" group runs only on request (conform_options.long_tier). */
#define GROUP_LONG_REDUCTION "long-reduction" /* n, k ~ 1e5..6e6: accumulation error */
#define GROUP_OFFSET "offset"                 /* large offset, tiny spread, constant rows */
#define GROUP_OVERFLOW "overflow"             /* values near FLT_MAX, partial sums past it */
#define GROUP_SUBNORMAL "subnormal"           /* subnormal rows and divisors */
#define GROUP_EPS0 "eps0"                     /* layernorm, rmsnorm with eps = 0 */
#define GROUP_AFFINE "affine"                 /* layernorm with gamma ~ 100, beta ~ +-100 */
#define GROUP_REGRESSION "regression"         /* inputs that once failed, kept as data */
#define GROUP_LONG "long"                     /* n, k up to 1e8: the long tier */
#define GROUP_NAN_ROWS "nan-rows"             /* row ops: a NaN in a row makes the row NaN */

/* Input data of a regression case: operand a, b, c as written down when the
 * failure was found (repeated cyclically to the case's length). */
typedef struct literal {
    const float *data[3];
    size_t count[3];
} literal;

typedef struct plan {
    const rayo_op_info *op;
    conform_rng *rng;
    int quick, long_tier;
    case_spec *v;
    size_t count, cap;
    int oom;
    case_spec scratch; /* written to when out of memory */
} plan;

static const float matmul_alpha_beta[][2] = {
    {1.0f, 0.0f}, {1.0f, 1.0f}, {-0.75f, 0.5f}, {2.5f, 0.0f}, {0.5f, -1.5f},
};
static const float norm_eps[] = {1e-5f, 1e-6f, 1e-2f};

/* Parameters of a case, from its class (and the op where the class leaves
 * the meaning of alpha to the op). */
static void choose_params(const plan *p, case_spec *cs, size_t index)
{
    conform_rng *rng = p->rng;
    switch (p->op->sig) {
    case RAYO_SIG_UNARY_P:
        if (p->op->id == RAYO_OP_SCALE)
            cs->alpha = (float)(exp2(uniform_in(rng, -4, 4)) * ((index & 2) ? -1 : 1));
        else if (p->op->id == RAYO_OP_LEAKY_RELU)
            cs->alpha = index % 3 ? (float)uniform_in(rng, 0.001, 0.5) : 0.01f;
        else
            cs->alpha = index % 3 ? (float)uniform_in(rng, 0.1, 2.0) : 1.0f;
        break;
    case RAYO_SIG_UNARY_P2:
        cs->alpha = (float)uniform_in(rng, -5, 0);
        cs->beta = (float)uniform_in(rng, 0, 5);
        break;
    case RAYO_SIG_AXPY:
        cs->alpha = (float)uniform_in(rng, -3, 3);
        break;
    case RAYO_SIG_NORM:
        cs->alpha = norm_eps[index % 3];
        cs->no_gamma = (index >> 1) & 1;
        cs->no_beta = (index >> 2) & 1;
        break;
    case RAYO_SIG_MATMUL: case RAYO_SIG_GEMV: {
        size_t i = index % (sizeof matmul_alpha_beta / sizeof matmul_alpha_beta[0]);
        cs->alpha = matmul_alpha_beta[i][0];
        cs->beta = matmul_alpha_beta[i][1];
        break;
    }
    case RAYO_SIG_BIAS_ACT:
        cs->flags = (uint32_t)(index % RAYO_ACT_LIMIT);
        break;
    default:
        break;
    }
}

/* Appends a case with these sizes, alternating aligned/unaligned data. */
static case_spec *plan_add(plan *p, size_t m, size_t n, size_t k)
{
    if (p->count == p->cap) {
        size_t cap = p->cap ? 2 * p->cap : 64;
        case_spec *v = realloc(p->v, cap * sizeof *v);
        if (!v) {
            p->oom = 1;
            return &p->scratch;
        }
        p->v = v;
        p->cap = cap;
    }
    case_spec *cs = &p->v[p->count];
    memset(cs, 0, sizeof *cs);
    cs->m = m, cs->n = n, cs->k = k;
    cs->misalign = p->count & 1;
    choose_params(p, cs, p->count);
    p->count++;
    return cs;
}

static case_spec *plan_fill(plan *p, size_t m, size_t n, size_t k, fill_kind fill)
{
    case_spec *cs = plan_add(p, m, n, k);
    cs->fill = fill;
    return cs;
}

/* A case of a named group (see GROUP_*). */
static case_spec *plan_group(plan *p, size_t m, size_t n, size_t k, fill_kind fill, const char *group)
{
    case_spec *cs = plan_fill(p, m, n, k, fill);
    cs->group = group;
    return cs;
}

/* Inputs uniform in offset +- spread (FILL_SHIFTED) or offset +- spread
 * (FILL_PLUSMINUS); matrix products: alpha = 1, beta = 0. */
static case_spec *plan_values(plan *p, size_t m, size_t n, size_t k, fill_kind fill, double offset,
                              double spread, const char *group)
{
    case_spec *cs = plan_group(p, m, n, k, fill, group);
    cs->offset = offset, cs->spread = spread;
    if (p->op->sig == RAYO_SIG_MATMUL || p->op->sig == RAYO_SIG_GEMV)
        cs->alpha = 1.0f, cs->beta = 0.0f;
    return cs;
}

/* Long sums of uniform(0, 1) terms: no cancellation hides the error that a
 * float accumulator gathers, so it shows at its full size. */
static case_spec *plan_positive(plan *p, size_t m, size_t n, size_t k, const char *group)
{
    return plan_values(p, m, n, k, FILL_SHIFTED, 0.5, 0.5, group);
}

static const size_t vector_sizes[] = {0, 1, 2, 3, 7, 15, 16, 17, 31, 33, 1000, 4097};
#define LARGE_VECTOR ((size_t)1 << 20)
#define COUNT_OF(a) (sizeof(a) / sizeof((a)[0]))

/* sum [FLT_MAX, FLT_MAX, -FLT_MAX, -FLT_MAX, 1] = 1: float partial sums
 * overflow where the float64 result is finite; dot: products 2 FLT_MAX. */
static const float max_cancel[] = {FLT_MAX, FLT_MAX, -FLT_MAX, -FLT_MAX, 1.0f};
static const float twos[] = {2.0f, 2.0f, 2.0f, 2.0f, 1.0f};
static const literal max_cancel_literal = {{max_cancel, twos, NULL}, {5, 5, 0}};

static void plan_reduction_extremes(plan *p)
{
    plan_group(p, 0, 5, 0, FILL_LITERAL, GROUP_OVERFLOW)->literal = &max_cancel_literal;
    plan_group(p, 0, 1000, 0, FILL_LITERAL, GROUP_OVERFLOW)->literal = &max_cancel_literal;
    /* runs: every SIMD lane sees FLT_MAX twice, whatever the lane layout */
    plan_group(p, 0, 129, 0, FILL_MAX_RUNS, GROUP_OVERFLOW);
    plan_group(p, 0, 4 * 1024 + 1, 0, FILL_MAX_RUNS, GROUP_OVERFLOW);
    plan_positive(p, 0, 1000003, 0, GROUP_LONG_REDUCTION);
    if (p->long_tier)
        plan_positive(p, 0, 100000000, 0, GROUP_LONG);
}

/* Elementwise ops near the top of the float range: results that are finite
 * floats must not overflow inside the kernel (selu(3.23862215e38), axpy's
 * alpha x + y, FLT_MAX / 50), and divisors may be subnormal. */
static void plan_elementwise_extremes(plan *p)
{
    rayo_op_sig sig = p->op->sig;
    plan_group(p, 0, 257, 0, FILL_NEAR_MAX, GROUP_OVERFLOW);
    if (sig == RAYO_SIG_AXPY)
        plan_group(p, 0, 1000, 0, FILL_NEAR_MAX, GROUP_OVERFLOW)->alpha = -1.75f;
    if (p->op->id == RAYO_OP_DIV) {
        plan_group(p, 0, 257, 0, FILL_DIV_HUGE, GROUP_OVERFLOW);
        plan_group(p, 0, 257, 0, FILL_DIV_SUBNORMAL, GROUP_SUBNORMAL);
    }
}

static void plan_vector(plan *p)
{
    rayo_op_sig  sig = p->op->sig;
    for (size_t i = 0; i < COUNT_OF(vector_sizes); i++) {
        plan_add(p, 0, vector_sizes[i], 0);
        plan_add(p, 0, vector_sizes[i], 0);
    }
    int reduction = sig == RAYO_SIG_REDUCE || sig == RAYO_SIG_REDUCE2 || sig == RAYO_SIG_ARGREDUCE;
    /* Quick runs keep one large reduction: accumulation error shows only there. */
    if (!p->quick || reduction)
        plan_add(p, 0, LARGE_VECTOR, 0);
    if (!p->quick)
        plan_add(p, 0, LARGE_VECTOR, 0);
    if (reduction) {
        plan_fill(p, 0, 17, 0, FILL_NAN);
        plan_fill(p, 0, 1000, 0, FILL_NAN);
        plan_fill(p, 0, 1000, 0, FILL_PINF);
        plan_fill(p, 0, 33, 0, FILL_NINF);
        plan_fill(p, 0, 1000, 0, FILL_BOTH_INF);
        plan_fill(p, 0, 7, 0, FILL_ALL_NINF);
        plan_fill(p, 0, 33, 0, FILL_TIES);
        plan_fill(p, 0, 1000, 0, FILL_TIES);
        plan_fill(p, 0, 1000, 0, FILL_HUGE);
        plan_fill(p, 0, 1000, 0, FILL_TINY);
        plan_reduction_extremes(p);
        return;
    }
    /* elementwise */
    float edges[MAX_EDGES];
    size_t ne = edge_set(p->op, edges);
    plan_fill(p, 0, 257, 0, FILL_EDGE);
    plan_fill(p, 0, 1000, 0, FILL_EDGE);
    plan_fill(p, 0, (sig == RAYO_SIG_BINARY || sig == RAYO_SIG_AXPY) ? ne * ne : 3 * ne, 0, FILL_EDGE_ALL);
    plan_add(p, 0, 33, 0)->alias = 1;
    plan_fill(p, 0, 1000, 0, FILL_EDGE)->alias = 1;
    if (sig == RAYO_SIG_BINARY)
        plan_add(p, 0, 17, 0)->alias = 2;
    plan_elementwise_extremes(p);
}

static const size_t row_cols[] = {1, 2, 3, 7, 15, 16, 17, 31, 33, 1000, 4097};
static const size_t row_rows[] = {1, 3, 17};

/* Rows far from 0 relative to their spread: statistics and shifts must be
 * right relative to the spread (mean 1e4 std 1, log_softmax of 1e12 + x). */
static const double row_offsets[][2] = {
    {1e4, 1.7}, {1234.567, 0}, {1e12, 0}, {1e12, 1e12 * 0x1p-21}, {1e16, 1e16 * 0x1p-21},
    {1e30, 0}, {-1e30, 1e30 * 0x1p-20}, {3e38, 0},
};

static void plan_row_extremes(plan *p)
{
    for (size_t i = 0; i < COUNT_OF(row_offsets); i++) {
        plan_values(p, 3, 1000, 0, FILL_SHIFTED, row_offsets[i][0], row_offsets[i][1], GROUP_OFFSET);
        plan_values(p, 1, 7, 0, FILL_SHIFTED, row_offsets[i][0], row_offsets[i][1], GROUP_OFFSET);
    }
    plan_values(p, 1, 1000000, 0, FILL_PLUSMINUS, 0.5, 0.2, GROUP_OFFSET);  /* 0.3 or 0.7 */
    plan_values(p, 3, 1000, 0, FILL_PLUSMINUS, 0, 1e20, GROUP_OVERFLOW);
    plan_values(p, 3, 1000, 0, FILL_PLUSMINUS, 0, 3e38, GROUP_OVERFLOW);
    plan_values(p, 2, 33, 0, FILL_SHIFTED, 3e38, 3e38 * 0x1p-10, GROUP_OVERFLOW);
    /* one long row: loops of millions of iterations per row */
    plan_values(p, 1, 6000000, 0, FILL_SHIFTED, 0, p->op->sig == RAYO_SIG_ROWS ? 0 : 3,
                GROUP_LONG_REDUCTION);
    if (p->long_tier)
        plan_values(p, 1, 17800000, 0, FILL_SHIFTED, 0, p->op->sig == RAYO_SIG_ROWS ? 0 : 3, GROUP_LONG);
}

/* layernorm: found failing for seed 2686411465 (vulkan, rows=1 cols=2, eps=1e-5, gamma NULL). */
static const float regress_ln_x[] = {-0x1.053684p+1f, -0x1.04b59ep+1f};
static const float regress_ln_beta[] = {-0x1.5ec52cp-1f, -0x1.e487cep-1f};
static const literal regress_layernorm = {{regress_ln_x, NULL, regress_ln_beta}, {2, 0, 2}};

/* eps = 0 (constant and all-zero rows are defined in rayo-ops.h), subnormal
 * rows, rows of +-3e38, and gamma ~ 100 with beta ~ -+100, where outputs
 * near 0 come from cancellation of two values near 100. */
static void plan_norm_extremes(plan *p)
{
    const size_t sizes[][2] = {{3, 1000}, {1, 2}, {17, 33}};
    for (size_t i = 0; i < COUNT_OF(sizes); i++) {
        case_spec *cs = plan_add(p, sizes[i][0], sizes[i][1], 0);
        cs->alpha = 0.0f;
        cs->group = GROUP_EPS0;
    }
    plan_values(p, 3, 1000, 0, FILL_SHIFTED, 1234.567, 0, GROUP_EPS0)->alpha = 0.0f;
    plan_values(p, 2, 17, 0, FILL_SHIFTED, 0, 0, GROUP_EPS0)->alpha = 0.0f;
    plan_values(p, 3, 1000, 0, FILL_PLUSMINUS, 0, 3e38, GROUP_EPS0)->alpha = 0.0f;
    plan_values(p, 3, 1000, 0, FILL_SHIFTED, 0, 1e-39, GROUP_SUBNORMAL)->alpha = 0.0f;
    plan_values(p, 2, 33, 0, FILL_SHIFTED, 1e-39, 2e-40, GROUP_SUBNORMAL)->alpha = 0.0f;
    for (int i = 0; i < 2; i++) {
        case_spec *cs = plan_group(p, i ? 1 : 8, i ? 1000 : 4097, 0, FILL_RANDOM, GROUP_AFFINE);
        cs->big_affine = 1;
        cs->no_gamma = cs->no_beta = 0;
        cs->alpha = 1e-5f;
    }
    if (p->op->id == RAYO_OP_LAYERNORM) {
        case_spec *cs = plan_group(p, 1, 2, 0, FILL_LITERAL, GROUP_REGRESSION);
        cs->literal = &regress_layernorm;
        cs->alpha = 1e-5f, cs->no_gamma = 1, cs->no_beta = 0;
    }
}

/* ROWS, NORM and BIAS_ACT: rows x cols */
static void plan_rows(plan *p)
{
    for (size_t c = 0; c < COUNT_OF(row_cols); c++)
        for (size_t r = 0; r < COUNT_OF(row_rows); r++)
            plan_add(p, row_rows[r], row_cols[c], 0);
    plan_add(p, 0, 7, 0);
    plan_add(p, 7, 0, 0);
    plan_add(p, 0, 0, 0);
    if (!p->quick)
        plan_add(p, 256, 4096, 0);
    if (p->op->sig == RAYO_SIG_ROWS) {
        plan_fill(p, 3, 1000, 0, FILL_WIDE);
        plan_fill(p, 2, 17, 0, FILL_WIDE);
        plan_fill(p, 5, 33, 0, FILL_MASKED);
        plan_fill(p, 2, 4097, 0, FILL_MASKED);
    } else if (p->op->sig == RAYO_SIG_BIAS_ACT) {
        for (uint32_t act = 0; act < RAYO_ACT_LIMIT; act++)
            plan_fill(p, 2, 257, 0, FILL_EDGE)->flags = act;
    }
    if (p->op->sig == RAYO_SIG_ROWS || p->op->sig == RAYO_SIG_NORM) {
        plan_row_extremes(p);
        plan_group(p, 3, 1000, 0, FILL_NAN, GROUP_NAN_ROWS);
        plan_group(p, 5, 17, 0, FILL_NAN, GROUP_NAN_ROWS);
    }
    if (p->op->sig == RAYO_SIG_NORM)
        plan_norm_extremes(p);
}

static const size_t transpose_sizes[] = {1, 2, 3, 7, 16, 17, 33, 100};

static void plan_transpose(plan *p)
{
    for (size_t r = 0; r < COUNT_OF(transpose_sizes); r++)
        for (size_t c = 0; c < COUNT_OF(transpose_sizes); c++)
            plan_add(p, transpose_sizes[r], transpose_sizes[c], 0);
    plan_add(p, 1, 4097, 0);
    plan_add(p, 4097, 1, 0);
    plan_add(p, 1000, 33, 0);
    plan_add(p, 0, 5, 0);
    plan_add(p, 5, 0, 0);
    plan_fill(p, 17, 33, 0, FILL_EDGE);
    if (!p->quick)
        plan_add(p, 1024, 1024, 0);
}

static const size_t matmul_sizes[] = {1, 2, 3, 7, 16, 17, 33, 64, 100, 257};

static size_t pick(conform_rng *rng, const size_t *sizes, size_t count)
{
    return sizes[below(rng, count)];
}

/* Long inner dimensions, and m = 1 or n = 1, where a kernel may fall back
 * to one float accumulator over all of k. */
static void plan_long_matmul(plan *p)
{
    plan_positive(p, 8, 8, 100000, GROUP_LONG_REDUCTION);
    plan_values(p, 1, 4096, 4096, FILL_SHIFTED, 0.7, 0, GROUP_LONG_REDUCTION); /* constant */
    plan_positive(p, 1, 1, 100003, GROUP_LONG_REDUCTION);
    plan_positive(p, 37, 1, 20000, GROUP_LONG_REDUCTION)->flags = RAYO_TRANS_B;
    plan_positive(p, 1, 19, 50000, GROUP_LONG_REDUCTION)->flags = RAYO_TRANS_A;
    if (p->long_tier) {
        plan_positive(p, 8, 8, 5000000, GROUP_LONG);
        plan_positive(p, 1, 1, 50000000, GROUP_LONG);
    }
}

/* Few 128 x 128 tiles of C and a long k, where a GPU backend splits k into
 * slabs and adds their partials (cuda: 16 slabs of 256 for the first), and m = 1 or
 * n = 1 long enough for a gemv's vector loads; every transpose. */
static void plan_skinny_matmul(plan *p)
{
    for (uint32_t flags = 0; flags < 4; flags++) {
        if (p->quick && flags != 0 && flags != 3)
            continue;
        plan_add(p, 128, 256, 4096)->flags = flags;
        plan_add(p, 200, 300, 1112)->flags = flags; /* edge tiles; cuda: 5 slabs, the last shorter */
        plan_add(p, 1, 256, 300)->flags = flags;
        plan_add(p, 256, 1, 300)->flags = flags;
        if (!p->quick)
            plan_add(p, 256, 384, 1024)->flags = flags;
    }
}

static void plan_matmul(plan *p)
{
    plan_skinny_matmul(p);
    for (uint32_t flags = 0; flags < 4; flags++) {
        for (size_t i = 0; i < COUNT_OF(matmul_sizes); i++)
            plan_add(p, matmul_sizes[i], matmul_sizes[i], matmul_sizes[i])->flags = flags;
        for (int r = 0; r < 8; r++) {
            size_t m = pick(p->rng, matmul_sizes, COUNT_OF(matmul_sizes));
            size_t n = pick(p->rng, matmul_sizes, COUNT_OF(matmul_sizes));
            size_t k = pick(p->rng, matmul_sizes, COUNT_OF(matmul_sizes));
            plan_add(p, m, n, k)->flags = flags;
        }
    }
    plan_add(p, 0, 5, 5);
    plan_add(p, 5, 0, 5);
    case_spec *cs = plan_add(p, 5, 6, 0);  /* C = beta C */
    cs->alpha = 1.0f, cs->beta = 0.5f;
    cs = plan_add(p, 6, 5, 0);             /* C = 0, though C holds NaN */
    cs->alpha = 1.0f, cs->beta = 0.0f;
    if (!p->quick)
        plan_add(p, 500, 480, 520)->flags = (uint32_t)below(p->rng, 4);
    plan_long_matmul(p);
}

static const size_t gemv_sizes[] = {1, 2, 3, 7, 16, 17, 33, 64, 100, 257, 1000, 4097};

/* gemv: one output of a long sum (m = 1, or n = 1 transposed), and many
 * rows transposed (each output sums m = 100000 terms). */
static void plan_long_gemv(plan *p)
{
    plan_positive(p, 100000, 64, 0, GROUP_LONG_REDUCTION)->flags = RAYO_TRANS_A;
    plan_positive(p, 100003, 1, 0, GROUP_LONG_REDUCTION)->flags = RAYO_TRANS_A;
    plan_positive(p, 1, 100003, 0, GROUP_LONG_REDUCTION);
    plan_positive(p, 64, 100000, 0, GROUP_LONG_REDUCTION);
    if (p->long_tier) {
        plan_positive(p, 1, 17000000, 0, GROUP_LONG);
        plan_positive(p, 17000000, 1, 0, GROUP_LONG)->flags = RAYO_TRANS_A;
    }
}

static void plan_gemv(plan *p)
{
    for (uint32_t flags = 0; flags <= RAYO_TRANS_A; flags += RAYO_TRANS_A) {
        for (size_t i = 0; i < COUNT_OF(matmul_sizes); i++)
            plan_add(p, matmul_sizes[i], matmul_sizes[i], 0)->flags = flags;
        for (int r = 0; r < 12; r++) {
            size_t m = pick(p->rng, gemv_sizes, COUNT_OF(gemv_sizes));
            size_t n = pick(p->rng, gemv_sizes, COUNT_OF(gemv_sizes));
            if (m * n > ((size_t)1 << 21))
                n = 33;
            plan_add(p, m, n, 0)->flags = flags;
        }
        for (int e = 0; e < 2; e++) { /* inner length 0: y = beta y, or 0 */
            case_spec *cs = plan_add(p, e ? 0 : 5, e ? 5 : 0, 0);
            cs->flags = flags;
            cs->alpha = 1.0f, cs->beta = 0.5f;
        }
        if (!p->quick)
            plan_add(p, 1024, 1024, 0)->flags = flags;
    }
    plan_long_gemv(p);
}

static int make_plan(plan *p)
{
    switch (p->op->sig) {
    case RAYO_SIG_BINARY: case RAYO_SIG_UNARY: case RAYO_SIG_UNARY_P:
    case RAYO_SIG_UNARY_P2: case RAYO_SIG_AXPY: case RAYO_SIG_REDUCE:
    case RAYO_SIG_REDUCE2: case RAYO_SIG_ARGREDUCE:
        plan_vector(p);
        break;
    case RAYO_SIG_ROWS: case RAYO_SIG_NORM: case RAYO_SIG_BIAS_ACT:
        plan_rows(p);
        break;
    case RAYO_SIG_TRANSPOSE: plan_transpose(p); break;
    case RAYO_SIG_MATMUL: plan_matmul(p); break;
    case RAYO_SIG_GEMV: plan_gemv(p); break;
    default: return -1;
    }
    return p->oom ? -1 : 0;
}

static const char *const act_names[RAYO_ACT_LIMIT] = {"none", "relu", "gelu", "silu", "tanh", "sigmoid"};

/* A case in words: "m=3 n=17 k=33, A transposed, alpha=1 beta=0, unaligned". */
static void describe(const rayo_op_info *op, const case_spec *cs, char *buf, size_t size)
{
    size_t len = 0;
#define ADD(...) (len += (size_t)snprintf(buf + len, len < size ? size - len : 0, __VA_ARGS__))
    switch (op->sig) {
    case RAYO_SIG_ROWS: case RAYO_SIG_TRANSPOSE: ADD("rows=%zu cols=%zu", cs->m, cs->n); break;
    case RAYO_SIG_NORM:
        ADD("rows=%zu cols=%zu eps=%g%s%s", cs->m, cs->n, (double)cs->alpha,
            cs->no_gamma ? ", gamma NULL" : "", cs->no_beta ? ", beta NULL" : "");
        break;
    case RAYO_SIG_BIAS_ACT:
        ADD("rows=%zu cols=%zu act=%s", cs->m, cs->n, cs->flags < RAYO_ACT_LIMIT ? act_names[cs->flags] : "?");
        break;
    case RAYO_SIG_MATMUL: case RAYO_SIG_GEMV:
        ADD("m=%zu n=%zu", cs->m, cs->n);
        if (op->sig == RAYO_SIG_MATMUL)
            ADD(" k=%zu", cs->k);
        ADD("%s%s, alpha=%g beta=%g", (cs->flags & RAYO_TRANS_A) ? ", A transposed" : "",
            (cs->flags & RAYO_TRANS_B) ? ", B transposed" : "", (double)cs->alpha, (double)cs->beta);
        if (cs->beta == 0)
            ADD(" (C/y NaN-poisoned)");
        break;
    default:
        ADD("n=%zu", cs->n);
        if (op->sig == RAYO_SIG_UNARY_P || op->sig == RAYO_SIG_AXPY)
            ADD(", alpha=%g", (double)cs->alpha);
        else if (op->sig == RAYO_SIG_UNARY_P2)
            ADD(", lo=%g hi=%g", (double)cs->alpha, (double)cs->beta);
        break;
    }
    if (cs->fill == FILL_SHIFTED && cs->spread == 0)
        ADD(", constant %.9g", cs->offset);
    else if (cs->fill == FILL_SHIFTED)
        ADD(", uniform in %.9g +- %.3g", cs->offset, cs->spread);
    else if (cs->fill == FILL_PLUSMINUS)
        ADD(", values %.9g +- %.3g", cs->offset, cs->spread);
    else if (cs->fill != FILL_RANDOM)
        ADD(", %s", fill_names[cs->fill]);
    if (cs->big_affine)
        ADD(", gamma ~ 100, beta ~ +-100");
    if (cs->misalign)
        ADD(", unaligned");
    if (cs->alias)
        ADD(", in place (y == %c)", cs->alias == 1 ? 'a' : 'b');
    if (cs->group)
        ADD(" [%s]", cs->group);
#undef ADD
}

/* ---- guarded buffers ------------------------------------------------------- */
/* Each buffer is [guard | data | guard].  Guards and not-yet-written outputs
 * hold signalling NaNs: arithmetic never produces those bit patterns, so a
 * write is always visible. */
#define GUARD_FLOATS 16
static const uint32_t GUARD_BITS = 0x7fbadbadu;
static const uint32_t POISON_BITS = 0x7f8a5a5au;

typedef struct buffer {
    unsigned char *mem, *saved;
    size_t bytes;
    size_t lead;  /* floats before data */
    size_t count; /* floats of data */
    float *data;
} buffer;

static void set_words(void *dst, size_t count, uint32_t bits)
{
    unsigned char *d = dst;
    for (size_t i = 0; i < count; i++)
        memcpy(d + 4 * i, &bits, 4);
}

static int buffer_alloc(buffer *b, size_t count, unsigned misalign)
{
    b->lead = GUARD_FLOATS + misalign;
    b->count = count;
    size_t floats = b->lead + count + GUARD_FLOATS;
    b->bytes = (floats * sizeof(float) + 63) & ~(size_t)63;
    b->mem = aligned_alloc(64, b->bytes);
    b->saved = malloc(b->bytes);
    if (!b->mem || !b->saved)
        return -1;
    set_words(b->mem, b->bytes / 4, GUARD_BITS);
    b->data = (float *)(void *)b->mem + b->lead;
    return 0;
}

static void buffer_free(buffer *b)
{
    free(b->mem);
    free(b->saved);
    memset(b, 0, sizeof *b);
}

static void buffer_save(buffer *b)
{
    if (b->mem)
        memcpy(b->saved, b->mem, b->bytes);
}

/* First float (index relative to data) that differs from the saved copy,
 * within [from, to) bytes of the allocation; 0 if none. */
static int buffer_changed(const buffer *b, size_t from, size_t to, long long *index)
{
    for (size_t i = from; i < to; i += 4)
        if (memcmp(b->mem + i, b->saved + i, 4)) {
            *index = (long long)(i / 4) - (long long)b->lead;
            return 1;
        }
    return 0;
}

/* ---- running one case --------------------------------------------------------- */
typedef struct engine {
    const conform_options *opt;
    const rayo_op_info *op;
    conform_rng rng;
    conform_result *res;
    float edges[MAX_EDGES];
    size_t edge_count;
    size_t supported_nonempty; /* non-empty cases not answered RAYO_E_UNSUPPORTED */
} engine;

typedef struct one_case {
    const case_spec *cs;
    rayo_call call;
    buffer buf[4];       /* a, b, c, y */
    int y_is_input;      /* axpy; matmul/gemv with beta != 0 */
    size_t out_count;
    double *ref, *terms;
    char desc[160];
    char problem[400];   /* the first problem found */
} one_case;

static void problem(one_case *t, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
static void problem(one_case *t, const char *fmt, ...)
{
    if (t->problem[0])
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(t->problem, sizeof t->problem, fmt, ap);
    va_end(ap);
}

/* Float counts of a, b, c and y for a case (0: not used).  Written here on
 * purpose rather than taken from rayo_operand_counts (rayo-plugin.h), which
 * the core and the plugins use: the oracle sizes its buffers from the op's
 * definition on its own, so a mistake in the shared helper shows up as a
 * conformance failure instead of being repeated by the check. */
static void operand_counts(const rayo_op_info *op, const case_spec *cs, size_t cnt[4])
{
    size_t m = cs->m, n = cs->n, k = cs->k, mn = m * n;
    int ta = (cs->flags & RAYO_TRANS_A) != 0;
    memset(cnt, 0, 4 * sizeof cnt[0]);
    switch (op->sig) {
    case RAYO_SIG_BINARY: cnt[0] = cnt[1] = cnt[3] = n; break;
    case RAYO_SIG_REDUCE: cnt[0] = n; cnt[3] = 1; break;
    case RAYO_SIG_REDUCE2: cnt[0] = cnt[1] = n; cnt[3] = 1; break;
    case RAYO_SIG_ARGREDUCE: cnt[0] = n; cnt[3] = (sizeof(size_t) + 3) / 4; break;
    case RAYO_SIG_ROWS: case RAYO_SIG_TRANSPOSE: cnt[0] = cnt[3] = mn; break;
    case RAYO_SIG_NORM:
        cnt[0] = cnt[3] = mn;
        cnt[1] = cs->no_gamma ? 0 : n;
        cnt[2] = cs->no_beta ? 0 : n;
        break;
    case RAYO_SIG_BIAS_ACT: cnt[0] = cnt[3] = mn; cnt[1] = n; break;
    case RAYO_SIG_MATMUL: cnt[0] = m * k; cnt[1] = k * n; cnt[3] = mn; break;
    case RAYO_SIG_GEMV: cnt[0] = mn; cnt[1] = ta ? m : n; cnt[3] = ta ? n : m; break;
    default: cnt[0] = cnt[3] = n; break; /* unary, axpy */
    }
}

static int operand_used(const rayo_op_info *op, const case_spec *cs, int which)
{
    switch (which) {
    case 0: case 3: return 1;
    case 1:
        return op->sig == RAYO_SIG_BINARY || op->sig == RAYO_SIG_REDUCE2 ||
               op->sig == RAYO_SIG_MATMUL || op->sig == RAYO_SIG_GEMV ||
               op->sig == RAYO_SIG_BIAS_ACT || (op->sig == RAYO_SIG_NORM && !cs->no_gamma);
    default: return op->sig == RAYO_SIG_NORM && !cs->no_beta;
    }
}

static domain operand_domain(const rayo_op_info *op, int which)
{
    if (which == 0 || op->sig == RAYO_SIG_BINARY || op->sig == RAYO_SIG_REDUCE2 ||
        op->sig == RAYO_SIG_AXPY)
        return op_domain(op->id);
    if (op->sig == RAYO_SIG_NORM)
        return which == 1 ? linear(-2, 2) : linear(-1, 1); /* gamma, beta */
    if (op->sig == RAYO_SIG_BIAS_ACT)
        return linear(-2, 2);
    return linear(-1, 1); /* matmul, gemv: B, x, C, y */
}

/* Does this fill kind change this operand?  Edge values and values near
 * FLT_MAX go to every input of an elementwise op; shifted values to every
 * input of a dot or matrix product; literal data where the case has some;
 * the other special fills to the first input only. */
static int fill_applies(const rayo_op_info *op, const case_spec *cs, int which)
{
    int elementwise2 = op->sig == RAYO_SIG_BINARY || op->sig == RAYO_SIG_AXPY;
    switch (cs->fill) {
    case FILL_EDGE: case FILL_EDGE_ALL: case FILL_NEAR_MAX: case FILL_DIV_HUGE:
    case FILL_DIV_SUBNORMAL:
        return which == 0 || elementwise2;
    case FILL_SHIFTED: case FILL_PLUSMINUS:
        return which == 0 || ((op->sig == RAYO_SIG_REDUCE2 || op->sig == RAYO_SIG_MATMUL ||
                               op->sig == RAYO_SIG_GEMV) && which < 3);
    case FILL_LITERAL:
        return which < 3 && cs->literal->count[which] > 0;
    case FILL_MAX_RUNS:
        return which == 0 || (op->sig == RAYO_SIG_REDUCE2 && which == 1);
    default:
        return which == 0;
    }
}

static float signed_at_random(conform_rng *rng, double magnitude)
{
    return (float)((conform_rng_next(rng) & 1) ? -magnitude : magnitude);
}

/* Values near the top of the float range; the first three are the ones that
 * were found to fail (selu just below FLT_MAX) and FLT_MAX itself. */
static void fill_near_max(conform_rng *rng, float *x, size_t n)
{
    static const float firsts[] = {3.23862215e38f, FLT_MAX, -FLT_MAX};
    for (size_t i = 0; i < n; i++)
        x[i] = i < COUNT_OF(firsts) ? firsts[i] : signed_at_random(rng, uniform_in(rng, 0.5, 1.0) * FLT_MAX);
}

/* div: a / b for a near FLT_MAX and b in [1, 100] (FLT_MAX / 50 must not
 * overflow), or b subnormal and a small enough that a / b is finite
 * (a reciprocal 1 / b overflows there). */
static void fill_div(conform_rng *rng, fill_kind fill, int which, float *x, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        double mag;
        if (fill == FILL_DIV_HUGE)
            mag = which == 0 ? uniform_in(rng, 0.5, 1.0) * FLT_MAX : (i == 0 ? 50 : uniform_in(rng, 1, 100));
        else
            mag = which == 0 ? exp2(uniform_in(rng, -40, -10)) : exp2(uniform_in(rng, -149, -127));
        x[i] = i == 0 && which == 0 && fill == FILL_DIV_HUGE ? FLT_MAX : signed_at_random(rng, mag);
    }
}

static void fill_values(conform_rng *rng, const case_spec *cs, float *x, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        double u = cs->fill == FILL_SHIFTED ? uniform_in(rng, -1, 1) : (conform_rng_next(rng) & 1) ? -1 : 1;
        x[i] = (float)(cs->offset + cs->spread * u);
    }
}

static void place(conform_rng *rng, float *x, size_t n, float v, size_t times)
{
    for (size_t i = 0; i < times && n; i++)
        x[below(rng, n)] = v;
}

static void fill_special(engine *e, const case_spec *cs, int which, int fastest, float *x, size_t n)
{
    conform_rng *rng = &e->rng;
    size_t ne = e->edge_count;
    switch (cs->fill) {
    case FILL_SHIFTED: case FILL_PLUSMINUS: fill_values(rng, cs, x, n); break;
    case FILL_NEAR_MAX: fill_near_max(rng, x, n); break;
    case FILL_DIV_HUGE: case FILL_DIV_SUBNORMAL: fill_div(rng, cs->fill, which, x, n); break;
    case FILL_MAX_RUNS:
        for (size_t i = 0; i < n; i++)
            x[i] = i + 1 == n ? 1.0f : which ? 2.0f : (i / 64) & 1 ? -FLT_MAX : FLT_MAX;
        break;
    case FILL_LITERAL:
        for (size_t i = 0; i < n; i++)
            x[i] = cs->literal->data[which][i % cs->literal->count[which]];
        break;
    case FILL_EDGE:
        for (size_t i = 0; i < n; i++)
            if (below(rng, 4) == 0)
                x[i] = e->edges[below(rng, ne)];
        break;
    case FILL_EDGE_ALL:
        /* with two operands the second varies fastest: every pair appears */
        for (size_t i = 0; i < n; i++)
            x[i] = e->edges[fastest ? i % ne : (i / ne) % ne];
        break;
    case FILL_NAN: place(rng, x, n, NAN, 1 + below(rng, 3)); break;
    case FILL_PINF: place(rng, x, n, INFINITY, 1 + below(rng, 3)); break;
    case FILL_NINF: place(rng, x, n, -INFINITY, 1 + below(rng, 3)); break;
    case FILL_BOTH_INF:
        place(rng, x, n, INFINITY, 2);
        place(rng, x, n, -INFINITY, 2);
        break;
    case FILL_ALL_NINF:
        for (size_t i = 0; i < n; i++)
            x[i] = -INFINITY;
        break;
    case FILL_TIES:
        for (size_t i = 0; i < n; i++)
            x[i] = (float)below(rng, 5) - 2.0f;
        break;
    case FILL_HUGE: case FILL_TINY: {
        domain d = {DOM_SIGNED_LOG, cs->fill == FILL_HUGE ? 90 : -125, cs->fill == FILL_HUGE ? 115 : -100};
        for (size_t i = 0; i < n; i++)
            x[i] = draw(rng, d, i);
        break;
    }
    case FILL_WIDE:
        conform_fill_uniform(rng, x, n, -100, 100);
        break;
    case FILL_MASKED:
        for (size_t i = 0; i < n; i++)
            if (cs->n && i % cs->n != 0 && below(rng, 4) == 0) /* column 0 stays finite */
                x[i] = -INFINITY;
        break;
    case FILL_RANDOM:
    default:
        break;
    }
}

static void fill_operand(engine *e, const case_spec *cs, int which, float *x, size_t n)
{
    domain d = operand_domain(e->op, which);
    int two_operands = e->op->sig == RAYO_SIG_BINARY || e->op->sig == RAYO_SIG_AXPY;
    if (cs->big_affine && which > 0)
        d = which == 1 ? linear(99, 101) : linear(-2, 2);
    for (size_t i = 0; i < n; i++)
        x[i] = draw(&e->rng, d, i);
    if (cs->big_affine && which == 2) /* beta ~ +-100 */
        for (size_t i = 0; i < n; i++)
            x[i] = x[i] < 0 ? x[i] - 99.0f : x[i] + 99.0f; /* +-[99, 101] */
    /* y of axpy (operand 3) is its second input */
    int input = which == 3 ? 1 : which;
    if (fill_applies(e->op, cs, input))
        fill_special(e, cs, input, !two_operands || which != 0, x, n);
}

static int setup_case(engine *e, one_case *t)
{
    const case_spec *cs = t->cs;
    const rayo_op_info *op = e->op;
    size_t cnt[4];
    operand_counts(op, cs, cnt);
    rayo_call *c = &t->call;
    c->op = op->id;
    c->struct_size = sizeof *c;
    c->flags = cs->flags;
    c->m = cs->m, c->n = cs->n, c->k = cs->k;
    c->alpha = cs->alpha, c->beta = cs->beta;
    t->y_is_input = op->sig == RAYO_SIG_AXPY ||
                    ((op->sig == RAYO_SIG_MATMUL || op->sig == RAYO_SIG_GEMV) && cs->beta != 0);
    for (int w = 0; w < 4; w++) {
        if (!operand_used(op, cs, w) || (w == 3 && cs->alias))
            continue;
        /* size_t results stay aligned: a misaligned size_t store is undefined in C */
        unsigned mis = (op->sig == RAYO_SIG_ARGREDUCE && w == 3) ? 0 : cs->misalign;
        if (buffer_alloc(&t->buf[w], cnt[w], mis))
            return -1;
        if (w < 3 || t->y_is_input)
            fill_operand(e, cs, w, t->buf[w].data, cnt[w]);
        else
            set_words(t->buf[w].data, cnt[w], POISON_BITS);
        buffer_save(&t->buf[w]);
    }
    c->a = t->buf[0].data;
    c->b = t->buf[1].data;
    c->c = t->buf[2].data;
    c->y = cs->alias ? t->buf[cs->alias - 1].data : t->buf[3].data;
    t->out_count = conform_output_count(c);
    size_t rn = t->out_count ? t->out_count : 1;
    t->ref = malloc(rn * sizeof *t->ref);
    t->terms = malloc(rn * sizeof *t->terms);
    return (t->ref && t->terms) ? 0 : -1;
}

static const char operand_names[4] = {'a', 'b', 'c', 'y'};

/* Inputs unchanged; nothing written outside any buffer's data. */
static void check_memory(one_case *t)
{
    int out = t->cs->alias ? t->cs->alias - 1 : 3;
    for (int w = 0; w < 4; w++) {
        buffer *b = &t->buf[w];
        long long at;
        if (!b->mem)
            continue;
        size_t data_start = b->lead * 4, data_end = (b->lead + b->count) * 4;
        if (w != out && buffer_changed(b, data_start, data_end, &at))
            problem(t, "the input %c was changed (%c[%lld])", operand_names[w], operand_names[w], at);
        if (buffer_changed(b, 0, data_start, &at))
            problem(t, "wrote %lld floats before the start of %c", -at, operand_names[w]);
        if (buffer_changed(b, data_end, b->bytes, &at))
            problem(t, "wrote %c[%lld], past the end of its %zu elements", operand_names[w], at, b->count);
    }
}

/* After an error: an output that is also an input (axpy's y, C with beta != 0,
 * in-place calls) must be as it was, so the call can go to another backend;
 * and a call refused by validation writes nothing at all. */
static void check_output_untouched(one_case *t)
{
    int out = t->cs->alias ? t->cs->alias - 1 : 3;
    buffer *b = &t->buf[out];
    long long at;
    int must = t->cs->alias || t->y_is_input || conform_expected_status(&t->call) != RAYO_OK;
    if (must && b->mem && buffer_changed(b, b->lead * 4, (b->lead + b->count) * 4, &at))
        problem(t, "returned an error but changed the output (y[%lld])", at);
}

static void note_worst(engine *e, one_case *t, double units, size_t i, double y, double ref)
{
    if (e->res->worst[0] && !(units > e->res->max_units))
        return;
    e->res->max_units = units;
    snprintf(e->res->worst, sizeof e->res->worst, "%s: y[%zu] = %.9g, reference %.9g",
             t->desc, i, y, ref);
}

/* Input w at element i as it was before the call (in-place calls overwrite it). */
static double input_at(const one_case *t, int w, size_t i)
{
    const buffer *b = &t->buf[w];
    float v;
    memcpy(&v, b->saved + (b->lead + i) * 4, 4);
    return v;
}

/* Inputs of element i, for messages about elementwise ops. */
static void element_inputs(const one_case *t, const rayo_op_info *op, size_t i, char *buf, size_t size)
{
    buf[0] = '\0';
    switch (op->sig) {
    case RAYO_SIG_BINARY:
        snprintf(buf, size, " (a = %.9g, b = %.9g)", input_at(t, 0, i), input_at(t, 1, i));
        break;
    case RAYO_SIG_UNARY: case RAYO_SIG_UNARY_P: case RAYO_SIG_UNARY_P2:
        snprintf(buf, size, " (x = %.9g)", input_at(t, 0, i));
        break;
    case RAYO_SIG_AXPY:
        snprintf(buf, size, " (x = %.9g, y = %.9g)", input_at(t, 0, i),
                 t->cs->alias ? input_at(t, 0, i) : input_at(t, 3, i));
        break;
    case RAYO_SIG_BIAS_ACT:
        snprintf(buf, size, " (x = %.9g, bias = %.9g)", input_at(t, 0, i), input_at(t, 1, i % t->call.n));
        break;
    default:
        break;
    }
}

static void check_values(engine *e, one_case *t)
{
    const rayo_op_info *op = e->op;
    if (op->sig == RAYO_SIG_ARGREDUCE) {
        uint32_t first;
        size_t got;
        memcpy(&first, t->call.y, 4);
        memcpy(&got, t->call.y, sizeof got);
        if (first == POISON_BITS)
            problem(t, "the index was not written");
        else if ((double)got != t->ref[0])
            problem(t, "index %zu, expected %.0f (x[%zu] = %.9g, x[%.0f] = %.9g)", got, t->ref[0],
                    got, got < t->call.n ? (double)((const float *)t->call.a)[got] : NAN, t->ref[0],
                    (double)((const float *)t->call.a)[(size_t)t->ref[0]]);
        note_worst(e, t, t->problem[0] ? INFINITY : 0, 0, (double)got, t->ref[0]);
        return;
    }
    const float *y = t->call.y;
    size_t bad = 0, unwritten = 0, worst = 0;
    double worst_units = -1, worst_bad = -1;
    size_t worst_bad_i = 0;
    for (size_t i = 0; i < t->out_count; i++) {
        uint32_t bits;
        memcpy(&bits, &y[i], 4);
        if (bits == POISON_BITS && !t->y_is_input && !t->cs->alias) {
            if (!unwritten++)
                problem(t, "y[%zu] was not written", i);
            continue;
        }
        int pass;
        double units = conform_judge(op, t->ref[i], t->terms[i], y[i], &pass);
        if (units > worst_units)
            worst_units = units, worst = i;
        if (!pass) {
            bad++;
            if (units > worst_bad)
                worst_bad = units, worst_bad_i = i;
        }
    }
    if (unwritten > 1 && t->problem[0]) {
        size_t len = strlen(t->problem);
        snprintf(t->problem + len, sizeof t->problem - len, " (%zu of %zu elements not written)",
                 unwritten, t->out_count);
    }
    if (worst_units >= 0)
        note_worst(e, t, worst_units, worst, y[worst], t->ref[worst]);
    if (bad) {
        size_t i = worst_bad_i;
        double scale = op->scale == RAYO_SCALE_SUM ? t->terms[i] : fabs(t->ref[i]);
        double allowed = op->tol_rel * scale + op->tol_abs;
        char inputs[96];
        element_inputs(t, op, i, inputs, sizeof inputs);
        const char *hint = (isnan(y[i]) && t->cs->beta == 0 &&
                            (op->sig == RAYO_SIG_MATMUL || op->sig == RAYO_SIG_GEMV))
                               ? "; beta = 0 must not read the NaN in C/y" : "";
        if (op->tol_rel == 0 && op->tol_abs == 0)
            problem(t, "y[%zu] = %.9g but the exact result is %.9g%s; %zu of %zu elements differ%s",
                    i, (double)y[i], (double)(float)t->ref[i], inputs, bad, t->out_count, hint);
        else
            problem(t, "y[%zu] = %.9g but the float64 reference is %.9g%s: error %.3g, allowed %.3g "
                    "(%.3g times the contract); %zu of %zu elements out of contract%s",
                    i, (double)y[i], t->ref[i], inputs, fabs((double)y[i] - t->ref[i]), allowed,
                    worst_bad, bad, t->out_count, hint);
    }
}

/* The contract's exception for devices that flush denormals: judge the
 * output again against the reference of the inputs with every float32
 * denormal read as a zero of its sign.  The first verdict stands if this
 * one fails too. */
static void judge_with_flushed_inputs(engine *e, one_case *t)
{
    rayo_call flushed = t->call;
    const void **inputs[3] = {&flushed.a, &flushed.b, &flushed.c};
    float *copies[3] = {NULL, NULL, NULL};
    double *ref = malloc(t->out_count * sizeof *ref), *terms = malloc(t->out_count * sizeof *terms);
    int ok = ref && terms;
    for (int w = 0; w < 3 && ok; w++) {
        const buffer *b = &t->buf[w];
        if (!b->data || *inputs[w] != b->data || RAYO_DTYPE_OF(t->call.dtypes, w) != RAYO_DTYPE_F32)
            continue;
        ok = (copies[w] = malloc(b->count * sizeof(float) + 1)) != NULL;
        for (size_t i = 0; ok && i < b->count; i++)
            copies[w][i] = fpclassify(b->data[i]) == FP_SUBNORMAL ? copysignf(0.0f, b->data[i]) : b->data[i];
        *inputs[w] = copies[w];
    }
    if (ok && conform_reference(&flushed, ref, terms) == 0) {
        char first[sizeof t->problem];
        memcpy(first, t->problem, sizeof first);
        double *was_ref = t->ref, *was_terms = t->terms;
        t->ref = ref, t->terms = terms, t->problem[0] = 0;
        check_values(e, t);
        t->ref = was_ref, t->terms = was_terms;
        if (t->problem[0])
            memcpy(t->problem, first, sizeof first);
    }
    for (int w = 0; w < 3; w++)
        free(copies[w]);
    free(ref);
    free(terms);
}

static int is_empty(const rayo_call *c, const rayo_op_info *op)
{
    switch (op->sig) {
    case RAYO_SIG_MATMUL: return c->m == 0 || c->n == 0 || c->k == 0;
    case RAYO_SIG_ROWS: case RAYO_SIG_NORM: case RAYO_SIG_TRANSPOSE:
    case RAYO_SIG_BIAS_ACT: case RAYO_SIG_GEMV:
        return c->m == 0 || c->n == 0;
    default: return c->n == 0;
    }
}

static void record(engine *e, one_case *t)
{
    conform_result *r = e->res;
    r->cases++;
    if (!t->problem[0])
        return;
    r->failed++;
    if (r->reported < CONFORM_MAX_REPORTS)
        snprintf(r->reports[r->reported++], sizeof r->reports[0], "%s: %s", t->desc, t->problem);
}

int conform_group_listed(const char *list, const char *group)
{
    size_t len = strlen(group);
    for (const char *s = list; s && *s; s += strcspn(s, ",")) {
        s += *s == ',';
        if (!strncmp(s, group, len) && (s[len] == ',' || s[len] == '\0'))
            return 1;
    }
    return 0;
}

static void run_case(engine *e, const case_spec *cs)
{
    one_case t;
    memset(&t, 0, sizeof t);
    t.cs = cs;
    describe(e->op, cs, t.desc, sizeof t.desc);
    if (setup_case(e, &t) || conform_reference(&t.call, t.ref, t.terms)) {
        problem(&t, "the test itself failed: out of memory");
    } else {
        rayo_status expected = conform_expected_status(&t.call);
        rayo_status st = e->opt->run(e->opt->run_user, &t.call);
        check_memory(&t);
        int empty = is_empty(&t.call, e->op);
        if (st != RAYO_OK)
            check_output_untouched(&t);
        if (st == RAYO_E_UNSUPPORTED && expected == RAYO_OK) {
            e->res->unsupported++;
        } else {
            if (!empty)
                e->supported_nonempty++;
            if (st != expected)
                problem(&t, "returned %s (%s), expected %s", rayo_strerror(st), rayo_last_error(),
                        rayo_strerror(expected));
            else if (st == RAYO_OK)
                check_values(e, &t);
            if (t.problem[0] && st == RAYO_OK && e->opt->flushes_denormals && !t.y_is_input && cs->group &&
                !strcmp(cs->group, GROUP_SUBNORMAL))
                judge_with_flushed_inputs(e, &t);
        }
    }
    record(e, &t);
    for (int w = 0; w < 4; w++)
        buffer_free(&t.buf[w]);
    free(t.ref);
    free(t.terms);
}

int conform_check_op(const conform_options *opts, const rayo_op_info *op, conform_result *result)
{
    engine e;
    memset(result, 0, sizeof *result);
    memset(&e, 0, sizeof e);
    e.opt = opts;
    e.op = op;
    e.res = result;
    /* One stream per op: --op NAME --seed S replays exactly that op. */
    conform_rng_seed(&e.rng, opts->seed * 0x100000001b3ull + op->id);
    e.edge_count = edge_set(op, e.edges);

    /* Probe for a reference on a one-element call of the op. */
    float one[4] = {0.5f, 0.5f, 0.5f, 0.5f};
    double r[1], tt[1];
    rayo_call probe = {.struct_size = sizeof(rayo_call), .op = op->id, .m = 1, .n = 1, .k = 1, .alpha = 0.25f, .beta = 0.75f,
                       .a = one, .b = one, .c = one, .y = one};
    if (conform_reference(&probe, r, tt) != 0)
        return conform_infer_check(opts, op, result); /* the inference ops, or no reference */
    result->has_reference = 1;

    plan p;
    memset(&p, 0, sizeof p);
    p.op = op;
    p.rng = &e.rng;
    p.quick = opts->quick;
    p.long_tier = opts->long_tier;
    if (make_plan(&p)) {
        free(p.v);
        result->failed = 1;
        snprintf(result->reports[0], sizeof result->reports[0], "the test itself failed: out of memory");
        result->reported = 1;
        return 1;
    }
    for (size_t i = 0; i < p.count; i++) {
        if (opts->progress)
            opts->progress(opts->progress_user, i, p.count);
        if (p.v[i].group && conform_group_listed(opts->skip, p.v[i].group))
            result->skipped++;
        else
            run_case(&e, &p.v[i]);
    }
    free(p.v);
    result->implemented = e.supported_nonempty > 0;
    if (!result->implemented) { /* nothing of the backend ran: nothing to blame it for */
        result->failed = 0;
        result->reported = 0;
        result->max_units = 0;
        result->worst[0] = '\0';
    }
    conform_infer_check(opts, op, result); /* matmul, gemv: other dtypes and strided views */
    return result->failed ? 1 : 0;
}

rayo_status conform_run_backend(void *user, const rayo_call *call)
{
    const conform_backend *b = user;
    return rayo_run_on(b->ctx, b->name, call);
}
