/* SPDX-License-Identifier: MIT */
/* conform.h - the conformance engine: checks any op of rayo-ops.h against
 * a float64 reference and the op's accuracy contract.
 *
 * For one op the engine builds a plan of test cases from the op's signature
 * class (sizes 0 to 2^20, unaligned pointers, edge values, transposes,
 * alpha/beta, NULL gamma/beta...) and groups of harder cases (long sums of
 * 1e5..6e6 terms, rows with a large offset or constant, values near FLT_MAX,
 * subnormal rows and divisors, eps = 0, inputs that once failed; n, k up to
 * 1e8 in the long tier, on request), makes fresh random inputs, runs each call
 * through a runner (normally rayo_run_on: one backend, no fallback) and
 * checks:
 *   - the status (RAYO_OK; RAYO_E_INVALID for argmax of n = 0);
 *   - every output element against the float64 reference:
 *       |y - ref| <= tol_rel * scale + tol_abs   (scale: |ref| or sum of |terms|)
 *     exact ops must match the float result exactly (NaN matches NaN, the
 *     sign of zero is not checked); a result equal to the reference rounded
 *     to float always passes (the contract cannot ask for better);
 *   - outputs were all written (they are poisoned with a signalling NaN);
 *   - inputs are unchanged and the guard zones around every buffer intact.
 *
 * Used by rayo-conform, rayo-bench and the tests; not part of librayo.
 */
#ifndef RAYO_CONFORM_H
#define RAYO_CONFORM_H

#include "rayo.h"
#include <stddef.h>
#include <stdint.h>

/* ---- random numbers (splitmix64: small, fast, reproducible) ----------- */
typedef struct conform_rng {
    uint64_t state;
} conform_rng;

void conform_rng_seed(conform_rng *rng, uint64_t seed);
uint64_t conform_rng_next(conform_rng *rng);
double conform_rng_uniform(conform_rng *rng); /* in [0, 1) */
void conform_fill_uniform(conform_rng *rng, float *x, size_t n, double lo, double hi);
/* One row of n elements (a whole number of blocks) in dtype dt at dst:
 * uniform values in [lo, hi) converted or quantized, or for Q4_K and Q6_K
 * random blocks with small scales (plans-infer.c). */
void conform_fill_row(conform_rng *rng, rayo_dtype dt, unsigned char *dst, size_t n, float lo, float hi);

/* RAYO_CONFORM_SEED when it is set (decimal or 0x hex), else a fresh seed
 * from the time and the process id. */
uint64_t conform_default_seed(void);

/* ---- references ---------------------------------------------------------- */
/* Number of output elements of a call (floats, or 1 size_t for argmax; 0 for
 * an empty elementwise call; 1 for an empty reduction, which writes its
 * identity). */
size_t conform_output_count(const rayo_call *call);

/* The status a correct implementation returns for this call. */
rayo_status conform_expected_status(const rayo_call *call);

/* Computes, in float64, the reference of every output element (argmax: the
 * index) and the sum of |terms| that make it (the contract scale of SUM
 * ops).  Reads the call's inputs, and y where the op reads it (axpy; matmul
 * and gemv with beta != 0): call it BEFORE running the call.  ref and terms
 * hold conform_output_count(call) elements, dense (matmul's strided C comes
 * out m x n without its gaps).  Returns 0, or -1 if the engine has no
 * reference for this op or for the call's dtypes (all f32 only). */
int conform_reference(const rayo_call *call, double *ref, double *terms);

/* Checks one output element against the contract of op.  Returns the error
 * in contract units (error / allowed error; <= 1 passes, INFINITY for a
 * wrong NaN/Inf or a mismatch of an exact op) and sets *pass. */
double conform_judge(const rayo_op_info *op, double ref, double terms, float y, int *pass);

/* Judges outputs computed elsewhere (device buffers, a batch, a thread) with
 * the float64 reference of call: call holds host copies of every input the
 * implementation read (y: y as it was before the call, where the op reads
 * it), out the conform_output_count(call) results (argmax: one size_t
 * index, compared exactly).  contract: the op's own when NULL, else the
 * contract to judge with (a looser one for a relaxed precision such as
 * TF32).  Returns 0 when every element is within the contract, 1 when some
 * are not, -1 when the engine has no reference for the op or memory ran
 * out; msg (size bytes) gets one sentence about the worst element (without
 * the op's name: the caller says where), or "". */
int conform_check_outputs(const rayo_op_info *contract, const rayo_call *call, const void *out,
                          char *msg, size_t size);

/* ---- checking an op ------------------------------------------------------ */
/* How to run a call: returns the status of the implementation under test. */
typedef rayo_status (*conform_run_fn)(void *user, const rayo_call *call);

/* Whether group is one of the names in the comma-separated list (NULL: none). */
int conform_group_listed(const char *list, const char *group);

typedef struct conform_options {
    uint64_t seed;         /* the same seed gives the same inputs */
    int quick;             /* leave out the largest sizes */
    int long_tier;         /* add the long tier: n, k up to 1e8 (GBs of memory, minutes) */
    /* Groups of cases to leave out, comma-separated (NULL: none): long-reduction,
     * offset, overflow, subnormal, eps0, affine, regression, nan-rows,
     * cancel, glu-tail, attn-large, x-range (plans-infer.c).  They are counted in
     * conform_result.skipped, never as passed. */
    const char *skip;
    /* The backend's device may read float32 denormal inputs as +-0
     * (RAYO_DEVICE_FLUSHES_DENORMALS): a subnormal-group case that misses the
     * reference passes if it meets the contract with those inputs flushed. */
    int flushes_denormals;
    conform_run_fn run;
    void *run_user;
    /* Called before each case (NULL: not called). */
    void (*progress)(void *user, size_t done, size_t total);
    void *progress_user;
    /* 0: every case.  RAYO_DTYPE_BIT(D): only the cases of dtype D, those
     * with an operand in D (for f32: with every operand in f32), so that one
     * typed kernel gets all its cases and nothing else runs. */
    uint32_t only_dtype;
} conform_options;

/* Does op have cases of dtype dt (see conform_options.only_dtype)? */
int conform_op_has_dtype(const rayo_op_info *op, rayo_dtype dt);

#define CONFORM_MAX_REPORTS 4

typedef struct conform_result {
    int has_reference;     /* 0: the engine does not know this op (nothing run) */
    int implemented;       /* 0: the backend computed no non-empty case (it answered
                            * RAYO_E_UNSUPPORTED, or refused as expected) */
    size_t cases;          /* cases run */
    size_t failed;         /* cases that broke the contract */
    size_t unsupported;    /* cases answered RAYO_E_UNSUPPORTED (allowed: fall through) */
    size_t skipped;        /* cases of groups in conform_options.skip, not run */
    double max_units;      /* largest error seen, in contract units */
    char worst[256];       /* where max_units was seen */
    /* The first failures, one sentence each. */
    size_t reported;
    char reports[CONFORM_MAX_REPORTS][512];
} conform_result;

/* Runs every case of op's plan.  Returns 0 when the op conforms (or is not
 * implemented), 1 when some case failed. */
int conform_check_op(const conform_options *opts, const rayo_op_info *op, conform_result *result);

/* A runner over rayo_run_on: user points to a conform_backend. */
typedef struct conform_backend {
    rayo_context *ctx;
    const char *name;
} conform_backend;
rayo_status conform_run_backend(void *user, const rayo_call *call);

#endif
