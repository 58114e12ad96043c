/* SPDX-License-Identifier: MIT */
/* conform-internal.h - what the files of the conformance engine share:
 * random draws, per-op input domains, test plans, guarded buffers, the
 * state of one op's run.  Not for users of the engine (they include
 * conform.h).
 *
 * The engine's files:
 *   rng.c          random numbers and seeds
 *   op-domains.c   what the engine knows per op: input domains, edge values
 *   ref-f32.c      float64 references of the f32 ops
 *   judge.c        the contract check of one element; judging outputs
 *                  computed elsewhere (the tests of device backends)
 *   plans-f32.c    test plans: the cases of each signature
 *   guarded-buffer.c  buffers with guard zones around their data
 *   fill-inputs.c  the input values of a case
 *   run-case.c     running and checking one case; conform_check_op
 *   plans-infer.c, ref-infer.c  the inference ops and non-f32 dtypes
 */
#ifndef RAYO_CONFORM_INTERNAL_H
#define RAYO_CONFORM_INTERNAL_H

#include "conform.h"
#include <stddef.h>
#include <stdint.h>

#define COUNT_OF(a) (sizeof(a) / sizeof((a)[0]))

/* ---- random draws (rng.c) --------------------------------------------- */
static inline double uniform_in(conform_rng *rng, double lo, double hi)
{
    return lo + (hi - lo) * conform_rng_uniform(rng);
}

static inline size_t below(conform_rng *rng, size_t n)
{
    return n ? (size_t)(conform_rng_next(rng) % n) : 0;
}

/* ---- what the engine knows per op (op-domains.c) ---------------------- */
/* Random inputs come from a domain where the op is defined and interesting:
 * LINEAR: uniform in [lo, hi]; SIGNED_LOG: +-2^u, u in [lo, hi] (many
 * magnitudes: cancellation, rounding); POSITIVE: 2^u or uniform in [0.5, 2]
 * (log and sqrt: many decades, and values near 1). */
typedef enum domain_kind { DOM_LINEAR, DOM_SIGNED_LOG, DOM_POSITIVE } domain_kind;
typedef struct domain {
    domain_kind kind;
    double lo, hi;
} domain;

static inline domain linear(double lo, double hi)
{
    return (domain){DOM_LINEAR, lo, hi};
}

domain conform_op_domain(uint32_t op);
/* A random value of domain d; index alternates POSITIVE's two kinds. */
float conform_draw(conform_rng *rng, domain d, size_t index);

/* The edge inputs of op (at most MAX_EDGES) written to out; returns their count. */
#define MAX_EDGES 16
size_t conform_edge_set(const rayo_op_info *op, float *out);

/* ---- test plans (plans-f32.c) ----------------------------------------- */
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

/* Builds p's cases for p->op (p->op, rng, quick and long_tier set by the
 * caller); -1 when out of memory or the signature has no plan. */
int conform_make_plan(plan *p);
/* A case in words: "m=3 n=17 k=33, A transposed, alpha=1 beta=0, unaligned". */
void conform_describe_case(const rayo_op_info *op, const case_spec *cs, char *buf, size_t size);

/* ---- guarded buffers (guarded-buffer.c) ------------------------------- */
/* Each buffer is [guard | data | guard].  Guards and not-yet-written outputs
 * hold signalling NaNs: arithmetic never produces those bit patterns, so a
 * write is always visible. */
#define GUARD_BITS 0x7fbadbadu
#define POISON_BITS 0x7f8a5a5au

typedef struct buffer {
    unsigned char *mem, *saved;
    size_t bytes;
    size_t lead;  /* floats before data */
    size_t count; /* floats of data */
    float *data;
} buffer;

void conform_set_words(void *dst, size_t count, uint32_t bits);
/* count floats of data, misalign floats off 64-byte alignment; -1 when out of memory. */
int conform_buffer_alloc(buffer *b, size_t count, unsigned misalign);
void conform_buffer_free(buffer *b);
/* Keeps a copy of the whole allocation for conform_buffer_changed. */
void conform_buffer_save(buffer *b);
/* First float (index relative to data) that differs from the saved copy,
 * within [from, to) bytes of the allocation; 0 if none. */
int conform_buffer_changed(const buffer *b, size_t from, size_t to, long long *index);

/* ---- one op's run (run-case.c, fill-inputs.c) ------------------------- */
typedef struct engine {
    const conform_options *opt;
    const rayo_op_info *op;
    conform_rng rng;
    conform_result *res;
    float edges[MAX_EDGES];
    size_t edge_count;
    size_t supported_nonempty; /* non-empty cases the backend computed (or answered wrongly) */
} engine;

/* Writes the n values of operand which (0..3: a, b, c, y) of case cs. */
void conform_fill_operand(engine *e, const case_spec *cs, int which, float *x, size_t n);

#endif
