/* SPDX-License-Identifier: MIT */
/* rayo-op-table.h - the op table of a plugin that implements every op of
 * the base set (ids below 90) for all-f32 operands.
 *
 * Generated from the op list, so a plugin that implements all base ops never
 * lists them by hand, and a new base op in rayo-ops.h is a compile error (a
 * missing PREFIX_NAME function) instead of a silent gap:
 *
 *   #define RAYO_KERNEL(NAME) scalar_##NAME
 *   static const rayo_op_entry scalar_ops[] = {
 *   #include <rayo-op-table.h>
 *       {RAYO_OP_MATMUL, RAYO_DTYPES(RAYO_DTYPE_F32, RAYO_DTYPE_Q4_K, 0, RAYO_DTYPE_F32), scalar_mm_q4k},
 *   };
 *
 * Other dtype combinations and the inference ops (convert, get_rows, rope,
 * attention, swiglu, geglu, geglu_tanh) are listed by hand after it, as is
 * every entry of a plugin with only some ops: {RAYO_OP_ADD, 0, my_add}. */
#ifndef RAYO_KERNEL
#error "define RAYO_KERNEL(NAME) to name the plugin's kernel for op NAME"
#endif
#define RAYO_OPS_BASE_ONLY
#define RAYO_OP(ID, ENUM, NAME, SIG, TR, TA, SC, DOC) {RAYO_OP_##ENUM, 0, RAYO_KERNEL(NAME)},
#include "rayo-ops.h"
#undef RAYO_OP
#undef RAYO_OPS_BASE_ONLY
#undef RAYO_KERNEL
