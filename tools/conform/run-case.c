/* SPDX-License-Identifier: MIT */
/* run-case.c - running one conformance case through the runner and
 * checking it (status, values against the reference, memory around the
 * buffers), and conform_check_op, which runs an op's whole plan
 * (conform.h). */
#define _POSIX_C_SOURCE 200809L
#include "conform-internal.h"
#include "conform-infer.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
        if (conform_buffer_alloc(&t->buf[w], cnt[w], mis))
            return -1;
        if (w < 3 || t->y_is_input)
            conform_fill_operand(e, cs, w, t->buf[w].data, cnt[w]);
        else
            conform_set_words(t->buf[w].data, cnt[w], POISON_BITS);
        conform_buffer_save(&t->buf[w]);
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
        if (w != out && conform_buffer_changed(b, data_start, data_end, &at))
            problem(t, "the input %c was changed (%c[%lld])", operand_names[w], operand_names[w], at);
        if (conform_buffer_changed(b, 0, data_start, &at))
            problem(t, "wrote %lld floats before the start of %c", -at, operand_names[w]);
        if (conform_buffer_changed(b, data_end, b->bytes, &at))
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
    if (must && b->mem && conform_buffer_changed(b, b->lead * 4, (b->lead + b->count) * 4, &at))
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

/* The largest error an op's cell reports, and where it was seen. */
typedef struct worst_seen {
    double units;
    char where[sizeof ((conform_result *)0)->worst];
} worst_seen;

static worst_seen worst_get(const conform_result *r)
{
    worst_seen w = {r->max_units, ""};
    memcpy(w.where, r->worst, sizeof w.where);
    return w;
}

static void worst_set(conform_result *r, const worst_seen *w)
{
    r->max_units = w->units;
    memcpy(r->worst, w->where, sizeof r->worst);
}

/* check_values, and for a [subnormal] case on a device that flushes
 * denormals the second verdict too.  When that one passes, the error the
 * op's cell reports is its error: the first verdict's is forgotten (a
 * flushed factor can put the first one at 1e5 times the contract). */
static void check_values_or_flushed(engine *e, one_case *t)
{
    int may_flush = e->opt->flushes_denormals && !t->y_is_input && t->cs->group &&
                    !strcmp(t->cs->group, GROUP_SUBNORMAL);
    worst_seen before = worst_get(e->res);
    check_values(e, t);
    if (!t->problem[0] || !may_flush)
        return;
    worst_seen first = worst_get(e->res);
    worst_set(e->res, &before);
    judge_with_flushed_inputs(e, t);
    if (t->problem[0]) /* the first verdict stands, and its error */
        worst_set(e->res, &first);
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
    conform_describe_case(e->op, cs, t.desc, sizeof t.desc);
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
            if (!empty && (st == RAYO_OK || st != expected)) /* as in plans-infer.c's judge */
                e->supported_nonempty++;
            if (st != expected)
                problem(&t, "returned %s (%s), expected %s", rayo_strerror(st), rayo_last_error(),
                        rayo_strerror(expected));
            else if (st == RAYO_OK)
                check_values_or_flushed(e, &t);
        }
    }
    record(e, &t);
    for (int w = 0; w < 4; w++)
        conform_buffer_free(&t.buf[w]);
    free(t.ref);
    free(t.terms);
}

int conform_dtypes_wanted(const conform_options *opts, uint32_t dtypes)
{
    if (!opts->only_dtype)
        return 1;
    uint32_t others = 0; /* the dtypes other than f32 among the operands */
    for (int w = 0; w < 4; w++)
        if (RAYO_DTYPE_OF(dtypes, w) != RAYO_DTYPE_F32)
            others |= RAYO_DTYPE_BIT(RAYO_DTYPE_OF(dtypes, w));
    if (opts->only_dtype == RAYO_DTYPE_BIT(RAYO_DTYPE_F32))
        return others == 0;
    return (others & opts->only_dtype) != 0;
}

int conform_op_has_dtype(const rayo_op_info *op, rayo_dtype dt)
{
    conform_options want = {.only_dtype = RAYO_DTYPE_BIT(dt)};
    if (dt == RAYO_DTYPE_F32)
        return 1; /* every op has f32 cases */
    for (size_t i = 0; i < rayo_op_combo_count(op->id); i++)
        if (conform_dtypes_wanted(&want, rayo_op_combo(op->id, i)->dtypes))
            return 1;
    return 0;
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
    e.edge_count = conform_edge_set(op, e.edges);

    /* Probe for a reference on a one-element call of the op. */
    float one[4] = {0.5f, 0.5f, 0.5f, 0.5f};
    double r[1], tt[1];
    rayo_call probe = {.struct_size = sizeof(rayo_call), .op = op->id, .m = 1, .n = 1, .k = 1, .alpha = 0.25f, .beta = 0.75f,
                       .a = one, .b = one, .c = one, .y = one};
    if (conform_reference(&probe, r, tt) != 0 || !conform_dtypes_wanted(opts, 0))
        return conform_infer_check(opts, op, result); /* the inference ops, other dtypes, or no reference */
    result->has_reference = 1;

    plan p;
    memset(&p, 0, sizeof p);
    p.op = op;
    p.rng = &e.rng;
    p.quick = opts->quick;
    p.long_tier = opts->long_tier;
    if (conform_make_plan(&p)) {
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
