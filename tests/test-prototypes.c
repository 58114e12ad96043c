/* SPDX-License-Identifier: MIT */
/* test-prototypes.c - the op functions written out in rayo.h match the op
 * list (rayo-ops.h).
 *
 * The check is at compile time: for every op of the list, rayo_NAME must be
 * declared and its type must be the function type of the op's signature,
 * spelled out once below; a missing or different prototype stops the build
 * of this test with the op's name.  At run time, every op the library lists
 * (rayo_op_count, rayo_op_at) must be one of these, by name and id, and the
 * counts agree; every RAYO_COMBO line is one of its op's combinations. */
#include "rayo.h"
#include <stdio.h>
#include <string.h>

typedef rayo_status sig_BINARY(rayo_context *, const float *, const float *, float *, size_t);
typedef rayo_status sig_UNARY(rayo_context *, const float *, float *, size_t);
typedef rayo_status sig_UNARY_P(rayo_context *, const float *, float *, size_t, float);
typedef rayo_status sig_UNARY_P2(rayo_context *, const float *, float *, size_t, float, float);
typedef rayo_status sig_AXPY(rayo_context *, const float *, float *, size_t, float);
typedef rayo_status sig_REDUCE(rayo_context *, const float *, size_t, float *);
typedef rayo_status sig_REDUCE2(rayo_context *, const float *, const float *, size_t, float *);
typedef rayo_status sig_ARGREDUCE(rayo_context *, const float *, size_t, size_t *);
typedef rayo_status sig_ROWS(rayo_context *, const float *, float *, size_t, size_t);
typedef rayo_status sig_NORM(rayo_context *, const float *, const float *, const float *, float *,
                             size_t, size_t, float);
typedef rayo_status sig_MATMUL(rayo_context *, unsigned, size_t, size_t, size_t, float,
                               const float *, const float *, float, float *);
typedef rayo_status sig_GEMV(rayo_context *, unsigned, size_t, size_t, float, const float *,
                             const float *, float, float *);
typedef rayo_status sig_TRANSPOSE(rayo_context *, const float *, float *, size_t, size_t);
typedef rayo_status sig_BIAS_ACT(rayo_context *, const float *, const float *, float *, size_t,
                                 size_t, rayo_activation);
typedef rayo_status sig_CONVERT(rayo_context *, rayo_dtype, const void *, rayo_dtype, void *, size_t);
typedef rayo_status sig_GET_ROWS(rayo_context *, rayo_matrix, size_t, size_t, const int32_t *, size_t,
                                 float *, size_t);
typedef rayo_status sig_ROPE(rayo_context *, const rayo_rope_params *, const float *, size_t, float *,
                             size_t, size_t, const int32_t *);
typedef rayo_status sig_ATTENTION(rayo_context *, const rayo_attention_params *, const float *,
                                  const void *, const void *, float *);
typedef rayo_status sig_GLU(rayo_context *, const float *, size_t, const float *, size_t, float *,
                            size_t, size_t, size_t);
/* matmul and gemv with dtypes, strides and precision: not ops of their own */
typedef rayo_status sig_MATMUL_EX(rayo_context *, unsigned, size_t, size_t, size_t, float, rayo_matrix,
                                  rayo_matrix, float, float *, size_t, rayo_precision);
typedef rayo_status sig_GEMV_EX(rayo_context *, unsigned, size_t, size_t, float, rayo_matrix,
                                const float *, float, float *, rayo_precision);
_Static_assert(_Generic(rayo_matmul_ex, sig_MATMUL_EX *: 1, default: 0), "rayo.h: rayo_matmul_ex");
_Static_assert(_Generic(rayo_gemv_ex, sig_GEMV_EX *: 1, default: 0), "rayo.h: rayo_gemv_ex");

/* _Generic selects 1 only for a compatible type: an error on any compiler,
 * not a warning that a build without -Werror would let through. */
#define RAYO_OP(ID, ENUM, NAME, SIG, TR, TA, SC, DOC)                                    \
    _Static_assert(_Generic(rayo_##NAME, sig_##SIG *: 1, default: 0),                   \
                   "rayo.h: the prototype of rayo_" #NAME " does not match signature " #SIG \
                   " in rayo-ops.h");
#include "rayo-ops.h"
#undef RAYO_OP

static const struct {
    const char *name;
    uint32_t id;
} listed[] = {
#define RAYO_OP(ID, ENUM, NAME, SIG, TR, TA, SC, DOC) {#NAME, ID},
#include "rayo-ops.h"
#undef RAYO_OP
};
#define LISTED (sizeof listed / sizeof listed[0])

static const struct {
    uint32_t op, dtypes;
} combo_lines[] = {
#define RAYO_OP(ID, ENUM, NAME, SIG, TR, TA, SC, DOC)
#define RAYO_COMBO(OP, A, B, C, Y, TR, TA, RR, RA) \
    {RAYO_OP_##OP, RAYO_DTYPES(RAYO_DTYPE_##A, RAYO_DTYPE_##B, RAYO_DTYPE_##C, RAYO_DTYPE_##Y)},
#include "rayo-ops.h"
#undef RAYO_COMBO
#undef RAYO_OP
};

/* Every combination line is listed by the library, every op has at least
 * one combination, and combination 0 of an op that takes all-f32 is f32. */
static int check_combos(void)
{
    int failures = 0;
    for (size_t i = 0; i < sizeof combo_lines / sizeof combo_lines[0]; i++) {
        const rayo_combo_info *c = rayo_op_combo_find(combo_lines[i].op, combo_lines[i].dtypes);
        if (!c || c->dtypes != combo_lines[i].dtypes || c->op != (rayo_op)combo_lines[i].op) {
            printf("FAIL: combination line %zu (op %u, dtypes 0x%08x) is not listed\n", i,
                   (unsigned)combo_lines[i].op, (unsigned)combo_lines[i].dtypes);
            failures++;
        }
    }
    for (size_t i = 0; i < LISTED; i++) {
        size_t n = rayo_op_combo_count(listed[i].id);
        if (n == 0 || !rayo_op_combo(listed[i].id, n - 1) || rayo_op_combo(listed[i].id, n)) {
            printf("FAIL: %s lists %zu combinations\n", listed[i].name, n);
            failures++;
        }
        if (rayo_op_combo_find(listed[i].id, 0) && rayo_op_combo(listed[i].id, 0)->dtypes != 0) {
            printf("FAIL: %s takes all-f32 but not as combination 0\n", listed[i].name);
            failures++;
        }
    }
    if (rayo_op_combo_find(RAYO_OP_MATMUL, RAYO_DTYPES(RAYO_DTYPE_Q4_K, RAYO_DTYPE_Q4_K, 0, 0))) {
        printf("FAIL: matmul q4_k x q4_k is listed\n");
        failures++;
    }
    return failures;
}

int main(void)
{
    size_t count = rayo_op_count();
    int failures = 0;
    if (count != LISTED) {
        printf("FAIL: the library lists %zu ops, rayo-ops.h %zu\n", count, LISTED);
        failures++;
    }
    for (size_t i = 0; i < count && i < LISTED; i++) {
        if (strcmp(rayo_op_at(i)->name, listed[i].name) || rayo_op_at(i)->id != listed[i].id) {
            printf("FAIL: op %zu is %s (%u) in the library, %s (%u) in rayo-ops.h\n", i,
                   rayo_op_at(i)->name, (unsigned)rayo_op_at(i)->id, listed[i].name, (unsigned)listed[i].id);
            failures++;
        }
        if (rayo_op_by_id(listed[i].id) != rayo_op_at(i)) {
            printf("FAIL: rayo_op_by_id(%u) does not find %s\n", (unsigned)listed[i].id, listed[i].name);
            failures++;
        }
    }
    failures += check_combos();
    printf("%zu op prototypes match rayo-ops.h; %d failure(s)\n", LISTED, failures);
    return failures ? 1 : 0;
}
