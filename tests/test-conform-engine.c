/* test-conform-engine - the conformance engine must accept right answers and
 * catch wrong ones, or a green conformance run would prove nothing.
 *
 * A fake backend answers every call with the engine's own float64 reference
 * rounded to float ("right"), or with one deliberate mistake: an element out
 * of tolerance, an element not written, a write past the end or before the
 * start of the output, a changed input, a write for an empty call, NaN
 * leaking from C when beta = 0, NaN ignored by max, the activation of
 * bias_act ignored.  Every mistake must make conform_check_op fail. */
#include "conform.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef enum mistake {
    RIGHT, OUT_OF_TOLERANCE, NOT_WRITTEN, PAST_END, BEFORE_START, CHANGES_INPUT,
    WRITES_EMPTY, NAN_FROM_C, IGNORES_NAN, IGNORES_ACT, ALWAYS_UNSUPPORTED, MISTAKE_COUNT
} mistake;

static const char *const mistake_names[MISTAKE_COUNT] = {
    "right answers", "an element out of tolerance", "an element not written",
    "a write past the end", "a write before the start", "a changed input",
    "a write for an empty call", "NaN from C with beta = 0", "NaN ignored",
    "activation ignored", "always unsupported",
};

static int failures;

static void expect(int ok, const char *what, const char *op)
{
    if (!ok) {
        printf("FAIL: %s (%s)\n", what, op);
        failures++;
    }
}

/* A float farther from ref than the contract allows. */
static float out_of_tolerance(const rayo_op_info *op, double ref, double terms)
{
    double scale = op->scale == RAYO_SCALE_SUM ? terms : fabs(ref);
    float y = (float)(ref + 4 * (op->tol_rel * scale + op->tol_abs));
    if (isnan(ref))
        return 1.0f;
    for (int i = 0; i < 4; i++)
        y = nextafterf(y, isinf(y) ? 0.0f : INFINITY);
    return y;
}

/* Empty calls are answered by the core: the engine's own notion of them. */
static int is_empty_call(const rayo_call *c)
{
    switch (rayo_op_by_id(c->op)->sig) {
    case RAYO_SIG_MATMUL: return c->m == 0 || c->n == 0 || c->k == 0;
    case RAYO_SIG_ROWS: case RAYO_SIG_NORM: case RAYO_SIG_TRANSPOSE:
    case RAYO_SIG_BIAS_ACT: case RAYO_SIG_GEMV:
        return c->m == 0 || c->n == 0;
    default: return c->n == 0;
    }
}

static void apply_mistake(mistake how, const rayo_call *c, double *ref, double *terms, size_t count)
{
    const rayo_op_info *op = rayo_op_by_id(c->op);
    float *y = c->y;
    size_t mid = count / 2;
    switch (how) {
    case OUT_OF_TOLERANCE:
        if (op->sig == RAYO_SIG_ARGREDUCE)
            ref[0] = ref[0] > 0 ? ref[0] - 1 : 1;
        else
            ref[mid] = out_of_tolerance(op, ref[mid], terms[mid]);
        break;
    case IGNORES_NAN:
        if (c->op == RAYO_OP_MAXIMUM)
            for (size_t i = 0; i < count; i++)
                ref[i] = fmaxf(((const float *)c->a)[i], ((const float *)c->b)[i]);
        if (c->op == RAYO_OP_MAX) {
            float m = -INFINITY;
            for (size_t i = 0; i < c->n; i++)
                m = fmaxf(m, ((const float *)c->a)[i]);
            ref[0] = m;
        }
        break;
    case NAN_FROM_C: /* C = alpha op(A) op(B) + beta C, C read even when beta = 0 */
        if (op->sig == RAYO_SIG_MATMUL || op->sig == RAYO_SIG_GEMV)
            for (size_t i = 0; i < count; i++)
                ref[i] += c->beta == 0 ? 0.0 * y[i] : 0.0;
        break;
    case IGNORES_ACT:
        if (op->sig == RAYO_SIG_BIAS_ACT && c->flags != RAYO_ACT_NONE)
            for (size_t i = 0; i < count; i++)
                ref[i] = (double)((const float *)c->a)[i] + ((const float *)c->b)[i % c->n];
        break;
    default:
        break;
    }
}

static rayo_status fake_backend(void *user, const rayo_call *c)
{
    mistake how = *(const mistake *)user;
    const rayo_op_info *op = rayo_op_by_id(c->op);
    rayo_status expected = conform_expected_status(c);
    if (how == ALWAYS_UNSUPPORTED)
        return RAYO_E_UNSUPPORTED;
    if (expected != RAYO_OK) {
        if (how == WRITES_EMPTY)
            *(size_t *)c->y = 0;
        return expected;
    }
    size_t count = conform_output_count(c);
    double *ref = malloc((count + 1) * sizeof *ref), *terms = malloc((count + 1) * sizeof *terms);
    if (!ref || !terms || conform_reference(c, ref, terms)) {
        free(ref);
        free(terms);
        return RAYO_E_NOMEM;
    }
    int empty = is_empty_call(c);
    if (!empty)
        apply_mistake(how, c, ref, terms, count);
    size_t written = (how == NOT_WRITTEN && !empty) ? count - 1 : count;
    if (op->sig == RAYO_SIG_ARGREDUCE && written)
        *(size_t *)c->y = (size_t)ref[0];
    else
        for (size_t i = 0; i < written; i++)
            ((float *)c->y)[i] = (float)ref[i];
    if (how == PAST_END && !empty)
        ((float *)c->y)[op->sig == RAYO_SIG_ARGREDUCE ? 2 : count] = 0.0f;
    if (how == BEFORE_START && !empty)
        ((float *)c->y)[-1] = 0.0f;
    if (how == CHANGES_INPUT && !empty)
        ((float *)c->a)[0] += 1.0f;
    if (how == WRITES_EMPTY && empty && op->sig != RAYO_SIG_ARGREDUCE)
        ((float *)c->y)[count] = 0.0f;
    free(ref);
    free(terms);
    return RAYO_OK;
}

static conform_result check(const rayo_op_info *op, mistake how)
{
    conform_options opts = {.seed = 20240601, .quick = 1, .run = fake_backend, .run_user = &how};
    conform_result r;
    conform_check_op(&opts, op, &r);
    return r;
}

/* Right answers pass for every op of the list, and cases really run. */
static void right_answers_pass(void)
{
    size_t n;
    n = rayo_op_count();
    for (size_t i = 0; i < n; i++) {
        if (rayo_op_at(i)->id >= RAYO_OP_CONVERT)
            continue; /* the inference ops: judged by their plans (plans-infer.c) and their tests */
        conform_result r = check(rayo_op_at(i), RIGHT);
        expect(r.has_reference, "the engine has a reference", rayo_op_at(i)->name);
        expect(r.implemented && r.cases > 10, "cases ran", rayo_op_at(i)->name);
        expect(r.failed == 0, "right answers pass", rayo_op_at(i)->name);
        if (r.failed)
            printf("  %s\n", r.reports[0]);
        expect(r.max_units <= 1.0, "right answers are within the contract", rayo_op_at(i)->name);
    }
}

static void mistake_fails(const char *name, mistake how)
{
    const rayo_op_info *op = rayo_op_by_name(name);
    if (!op) {
        expect(0, "op exists", name);
        return;
    }
    conform_result r = check(op, how);
    char what[128];
    snprintf(what, sizeof what, "%s is caught", mistake_names[how]);
    expect(r.failed > 0 && r.reported > 0, what, name);
    if (r.failed)
        printf("ok: %s / %s: %s\n", name, mistake_names[how], r.reports[0]);
}

static void judge_rules(void)
{
    const rayo_op_info *add = rayo_op_by_name("add"), *div = rayo_op_by_name("div");
    const rayo_op_info *sum = rayo_op_by_name("sum");
    int pass;
    conform_judge(add, 1.5, 1.5, 1.5f, &pass);
    expect(pass, "exact op: equal passes", "judge");
    conform_judge(add, 1.5, 1.5, nextafterf(1.5f, 2.0f), &pass);
    expect(!pass, "exact op: one ulp off fails", "judge");
    conform_judge(add, NAN, NAN, NAN, &pass);
    expect(pass, "NaN matches NaN", "judge");
    conform_judge(add, NAN, NAN, 0.0f, &pass);
    expect(!pass, "a number where NaN is due fails", "judge");
    conform_judge(add, 1.0, 1.0, NAN, &pass);
    expect(!pass, "NaN where a number is due fails", "judge");
    conform_judge(add, 0.0, 0.0, -0.0f, &pass);
    expect(pass, "the sign of zero is not checked", "judge");
    conform_judge(add, 1e39, 1e39, INFINITY, &pass);
    expect(pass, "overflow to inf matches the rounded reference", "judge");
    conform_judge(add, INFINITY, INFINITY, -INFINITY, &pass);
    expect(!pass, "-inf for +inf fails", "judge");
    double u = conform_judge(div, 1.0, 1.0, 1.0f + 2 * FLT_EPSILON, &pass);
    expect(!pass && u > 1.0, "div: 2 ulps above 1 are out of 1.2e-7", "judge");
    u = conform_judge(div, 1.0 + 0.4 * FLT_EPSILON, 0, 1.0f, &pass);
    expect(pass && u < 1.0, "div: rounding within 1.2e-7", "judge");
    /* sum: the scale is the sum of |terms|, not |result| */
    conform_judge(sum, 1e-3, 1000.0, (float)(1e-3 + 5e-3), &pass);
    expect(pass, "sum: error measured against the sum of |terms|", "judge");
    conform_judge(sum, 1e-3, 1000.0, (float)(1e-3 + 2e-2), &pass);
    expect(!pass, "sum: beyond 1e-5 of the sum of |terms| fails", "judge");
}

int main(void)
{
    judge_rules();
    right_answers_pass();

    static const char *const ops[] = {
        "add", "div", "exp", "relu", "gelu", "clip", "axpy", "sum", "dot", "max", "argmax",
        "norm_l2", "softmax", "layernorm", "rmsnorm", "matmul", "gemv", "transpose", "bias_act",
    };
    static const mistake general[] = {OUT_OF_TOLERANCE, NOT_WRITTEN, PAST_END, BEFORE_START,
                                      CHANGES_INPUT, WRITES_EMPTY};
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
        for (size_t k = 0; k < sizeof general / sizeof general[0]; k++) {
            /* axpy's y is an input: not writing it leaves the old y, a wrong value */
            mistake_fails(ops[i], general[k]);
        }
    mistake_fails("matmul", NAN_FROM_C);
    mistake_fails("gemv", NAN_FROM_C);
    mistake_fails("maximum", IGNORES_NAN);
    mistake_fails("max", IGNORES_NAN);
    mistake_fails("bias_act", IGNORES_ACT);

    conform_result r = check(rayo_op_by_name("matmul"), ALWAYS_UNSUPPORTED);
    expect(!r.implemented && r.failed == 0, "an op answered unsupported is 'not implemented'", "matmul");

    if (failures) {
        printf("%d checks of the engine failed\n", failures);
        return 1;
    }
    printf("the conformance engine accepts right answers and catches every planted mistake\n");
    return 0;
}
