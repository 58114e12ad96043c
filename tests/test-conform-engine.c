/* SPDX-License-Identifier: MIT */
/* test-conform-engine - the conformance engine must accept right answers and
 * catch wrong ones, or a green conformance run would prove nothing.
 *
 * A fake backend answers every call with the engine's own float64 reference
 * rounded to float ("right"), or with one deliberate mistake: an element out
 * of tolerance, an element not written, a write past the end or before the
 * start of the output, a changed input, a write for an empty call, NaN
 * leaking from C when beta = 0, NaN ignored by max, the activation of
 * bias_act ignored.  Every mistake must make conform_check_op fail.
 * A backend that reads denormal inputs as zeros (NVIDIA's Vulkan driver)
 * fails the subnormal cases, and passes them only when the engine is told
 * the device flushes (the contract's documented exception).
 * RAYO_ENGINE_CHECKED (a reason) skips it where another build of the same
 * tree already ran it: the engine is plain C on a fake backend, and under
 * an emulator (the cross build in CI) it takes minutes and tests no code of
 * that machine's plugins. */
#include "conform.h"
#include "rayo-plugin.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef enum mistake {
    RIGHT, OUT_OF_TOLERANCE, NOT_WRITTEN, PAST_END, BEFORE_START, CHANGES_INPUT,
    WRITES_EMPTY, NAN_FROM_C, IGNORES_NAN, IGNORES_ACT, ALWAYS_UNSUPPORTED, FLUSHES_DENORMALS, MISTAKE_COUNT
} mistake;

static const char *const mistake_names[MISTAKE_COUNT] = {
    "right answers", "an element out of tolerance", "an element not written",
    "a write past the end", "a write before the start", "a changed input",
    "a write for an empty call", "NaN from C with beta = 0", "NaN ignored",
    "activation ignored", "always unsupported", "denormal inputs read as zero",
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

/* Where output element i (row-major, dense numbering) lives in y: matmul's
 * C may be a strided view (ldy), every other output is dense. */
static size_t output_position(const rayo_call *c, size_t i)
{
    if (c->op == RAYO_OP_MATMUL && c->ldy)
        return i / c->n * c->ldy + i % c->n;
    return i;
}

/* *out = *c with every float32 denormal of a, b and c read as a zero of its
 * sign, in copies (freed by the caller); 0 on success. */
static int flush_inputs(const rayo_call *c, rayo_call *out, float *copies[3])
{
    size_t cnt[4];
    if (rayo_operand_counts(c, (int)rayo_op_by_id(c->op)->sig, cnt))
        return -1;
    *out = *c;
    const void **inputs[3] = {&out->a, &out->b, &out->c};
    for (int w = 0; w < 3; w++) {
        if (!*inputs[w] || !cnt[w])
            continue;
        const float *x = *inputs[w];
        if (!(copies[w] = malloc(cnt[w] * sizeof(float))))
            return -1;
        for (size_t i = 0; i < cnt[w]; i++)
            copies[w][i] = fpclassify(x[i]) == FP_SUBNORMAL ? copysignf(0.0f, x[i]) : x[i];
        *inputs[w] = copies[w];
    }
    return 0;
}

static rayo_status fake_backend(void *user, const rayo_call *c)
{
    mistake how = *(const mistake *)user;
    const rayo_op_info *op = rayo_op_by_id(c->op);
    rayo_status expected = conform_expected_status(c);
    /* The engine's f32 reference knows f32 operands only: other dtype
     * combinations (judged by plans-infer.c) fall through, as a backend
     * without them does. */
    if (how == ALWAYS_UNSUPPORTED || c->dtypes != 0)
        return RAYO_E_UNSUPPORTED;
    if (expected != RAYO_OK) {
        if (how == WRITES_EMPTY)
            *(size_t *)c->y = 0;
        return expected;
    }
    size_t count = conform_output_count(c);
    double *ref = malloc((count + 1) * sizeof *ref), *terms = malloc((count + 1) * sizeof *terms);
    rayo_call flushed;
    float *copies[3] = {NULL, NULL, NULL};
    int bad = !ref || !terms || (how == FLUSHES_DENORMALS && flush_inputs(c, &flushed, copies));
    if (bad || conform_reference(how == FLUSHES_DENORMALS ? &flushed : c, ref, terms))
        bad = 1;
    for (int w = 0; w < 3; w++)
        free(copies[w]);
    if (bad) {
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
            ((float *)c->y)[output_position(c, i)] = (float)ref[i];
    if (how == PAST_END && !empty)
        ((float *)c->y)[op->sig == RAYO_SIG_ARGREDUCE ? 2 : output_position(c, count - 1) + 1] = 0.0f;
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

static conform_result check_flushing(const rayo_op_info *op, mistake how, int flushes_denormals)
{
    conform_options opts = {.seed = 20240601, .quick = 1, .run = fake_backend, .run_user = &how,
                            .flushes_denormals = flushes_denormals};
    conform_result r;
    conform_check_op(&opts, op, &r);
    return r;
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

/* conform_check_outputs, the judge of the device tests: it passes the
 * reference rounded to float, fails one wrong element or a wrong index, and
 * judges with a looser contract when given one. */
static void check_outputs_rules(void)
{
    float a[5] = {0.5f, -1.25f, 3.0f, 3.0f, 2.0f}, b[5] = {1, 2, 3, 4, 5}, y[5];
    char msg[512];
    rayo_call add = {.op = RAYO_OP_ADD, .n = 5, .a = a, .b = b, .y = NULL};
    for (int i = 0; i < 5; i++)
        y[i] = a[i] + b[i];
    expect(conform_check_outputs(NULL, &add, y, msg, sizeof msg) == 0 && !msg[0], "right sums pass",
           "check_outputs");
    y[3] = nextafterf(y[3], 0);
    expect(conform_check_outputs(NULL, &add, y, msg, sizeof msg) == 1 && strstr(msg, "y[3]"),
           "one ulp off in an exact op fails, and the message names the element", "check_outputs");
    size_t idx = 2;
    rayo_call argmax = {.op = RAYO_OP_ARGMAX, .n = 5, .a = a, .y = NULL};
    expect(conform_check_outputs(NULL, &argmax, &idx, msg, sizeof msg) == 0, "argmax: first of two maxima",
           "check_outputs");
    idx = 3;
    expect(conform_check_outputs(NULL, &argmax, &idx, msg, sizeof msg) == 1, "argmax: the second maximum fails",
           "check_outputs");
    /* gemv reads the old y when beta != 0: call->y holds it, out the result */
    float old_y[1] = {10}, x[5] = {1, 1, 1, 1, 1}, got[1] = {(float)(0.5 * 10 + 7.25)};
    rayo_call gemv = {.op = RAYO_OP_GEMV, .m = 1, .n = 5, .alpha = 1, .beta = 0.5f, .a = a, .b = x,
                      .y = old_y};
    expect(conform_check_outputs(NULL, &gemv, got, msg, sizeof msg) == 0, "gemv with beta reads call->y",
           "check_outputs");
    rayo_op_info loose = *rayo_op_by_name("gemv");
    got[0] *= 1 + 1e-4f;
    expect(conform_check_outputs(NULL, &gemv, got, msg, sizeof msg) == 1, "1e-4 off is outside gemv's contract",
           "check_outputs");
    loose.tol_rel = 1e-3;
    expect(conform_check_outputs(&loose, &gemv, got, msg, sizeof msg) == 0,
           "a looser contract is used when given", "check_outputs");
    rayo_call unknown = {.op = 9999, .n = 1, .a = a, .y = NULL};
    expect(conform_check_outputs(NULL, &unknown, y, msg, sizeof msg) == -1 && msg[0], "an unknown op is -1",
           "check_outputs");
}

int main(void)
{
    const char *checked = getenv("RAYO_ENGINE_CHECKED");
    if (checked && *checked) {
        printf("SKIP: %s\n", checked);
        return 77;
    }
    judge_rules();
    check_outputs_rules();
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

    /* The subnormal cases of these ops have denormal inputs. */
    static const char *const flushed_ops[] = {"div", "layernorm", "rmsnorm"};
    for (size_t i = 0; i < 3; i++) {
        const rayo_op_info *op = rayo_op_by_name(flushed_ops[i]);
        mistake_fails(flushed_ops[i], FLUSHES_DENORMALS);
        conform_result f = check_flushing(op, FLUSHES_DENORMALS, 1);
        expect(f.failed == 0, "denormal inputs read as zero pass on a device that says it flushes", op->name);
        if (f.failed)
            printf("  %s\n", f.reports[0]);
        /* the op's cell reports the verdict that stands: within the contract */
        expect(f.max_units <= 1.0, "the error reported for a flushing device is the flushed verdict's",
               op->name);
        if (f.max_units > 1.0)
            printf("  %.3g times the contract, at %s\n", f.max_units, f.worst);
        f = check_flushing(op, OUT_OF_TOLERANCE, 1);
        expect(f.failed > 0, "a wrong element is still caught on a device that says it flushes", op->name);
    }

    conform_result r = check(rayo_op_by_name("matmul"), ALWAYS_UNSUPPORTED);
    expect(!r.implemented && r.failed == 0, "an op answered unsupported is 'not implemented'", "matmul");

    if (failures) {
        printf("%d checks of the engine failed\n", failures);
        return 1;
    }
    printf("the conformance engine accepts right answers and catches every planted mistake\n");
    return 0;
}
