/* SPDX-License-Identifier: MIT */
/* gpu-family.h - the kernel families of the GPU plugins (cuda, vulkan): the
 * kernels of one kind of op, which each plugin defines as
 * <plugin>_family_<name> (its own struct: how it checks, sizes and queues
 * the op).  Each op and dtype combination of the op list belongs to one
 * (gpu-op-entries.h):
 *   elementwise  BINARY, UNARY, UNARY_P, UNARY_P2, AXPY (all f32)
 *   reduce       REDUCE, REDUCE2, ARGREDUCE
 *   rows         ROWS, NORM
 *   matmul, gemv, transpose, bias_act, glu   their signature
 *   typed_matmul, gemvq   matmul and gemv with other dtypes than f32
 *   convert, get_rows, rope, attention      their RAYO_COMBO lines */
#ifndef RAYO_GPU_FAMILY_H
#define RAYO_GPU_FAMILY_H

#include <stddef.h>
#include <stdint.h>

#define GPU_FAMILIES(X)                                                                      \
    X(elementwise) X(reduce) X(rows) X(matmul) X(gemv) X(transpose) X(bias_act)              \
    X(typed_matmul) X(gemvq) X(convert) X(get_rows) X(rope) X(attention) X(glu)

/* An entry of the plugin's lookup table (gpu-op-table.h). */
typedef struct gpu_kernel {
    uint32_t op, dtypes;
    const void *family;          /* the plugin's family; NULL: no kernel */
} gpu_kernel;

/* The family of (op, dtypes) in table[0..count), or NULL. */
static inline const void *gpu_family_find(const gpu_kernel *table, size_t count, uint32_t op, uint32_t dtypes)
{
    for (size_t i = 0; i < count; i++)
        if (table[i].op == op && table[i].dtypes == dtypes && table[i].family)
            return table[i].family;
    return NULL;
}

#endif
