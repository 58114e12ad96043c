/* test-prototypes.c - the op functions written out in rayo.h match the op
 * list (rayo-ops.h).
 *
 * The check is at compile time: for every op of the list, rayo_NAME must be
 * declared and its type must be the function type of the op's signature,
 * spelled out once below; a missing or different prototype stops the build
 * of this test with the op's name.  At run time, every op the library lists
 * (rayo_ops) must be one of these, by name and id, and the counts agree. */
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

int main(void)
{
    size_t count = 0;
    const rayo_op_info *ops = rayo_ops(&count);
    int failures = 0;
    if (count != LISTED) {
        printf("FAIL: the library lists %zu ops, rayo-ops.h %zu\n", count, LISTED);
        failures++;
    }
    for (size_t i = 0; i < count && i < LISTED; i++) {
        if (strcmp(ops[i].name, listed[i].name) || ops[i].id != listed[i].id) {
            printf("FAIL: op %zu is %s (%u) in the library, %s (%u) in rayo-ops.h\n", i,
                   ops[i].name, (unsigned)ops[i].id, listed[i].name, (unsigned)listed[i].id);
            failures++;
        }
        if (rayo_op_by_id(listed[i].id) != &ops[i]) {
            printf("FAIL: rayo_op_by_id(%u) does not find %s\n", (unsigned)listed[i].id, listed[i].name);
            failures++;
        }
    }
    printf("%zu op prototypes match rayo-ops.h; %d failure(s)\n", LISTED, failures);
    return failures ? 1 : 0;
}
