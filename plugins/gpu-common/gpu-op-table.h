/* SPDX-License-Identifier: MIT */
/* gpu-op-table.h - a GPU plugin's op tables, generated from the op list:
 * included once, by the file that holds the plugin's descriptor, after it
 * defines
 *   GPU_HOST_ENTRY(name)  its rayo_kernel_fn for the host calls of family name
 *   GPU_FAMILY(name)      the address of its family name
 * It defines
 *   gpu_op_table[]        the descriptor's op table: every combination the
 *                         plugin runs, with the host entry of its family;
 *   gpu_family_of()       the family of (op, dtypes), or NULL: for the calls
 *                         the plugin records in batches (the plugin's type). */
#include "gpu-family.h"

#define GPU_X GPU_HOST_ENTRY
static const rayo_op_entry gpu_op_table[] = {
#include "gpu-op-entries.h"
};
#undef GPU_X

#define GPU_X GPU_FAMILY
static const gpu_kernel gpu_kernels[] = {
#include "gpu-op-entries.h"
};
#undef GPU_X

static const void *gpu_family_of(uint32_t op, uint32_t dtypes)
{
    return gpu_family_find(gpu_kernels, sizeof gpu_kernels / sizeof gpu_kernels[0], op, dtypes);
}
