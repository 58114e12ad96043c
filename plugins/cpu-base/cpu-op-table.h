/* SPDX-License-Identifier: MIT */
/* cpu-op-table.h - the op table of a CPU plugin, generated from the op list
 * (rayo-ops.h): included inside the plugin's array of rayo_op_entry.
 *
 *   - every op of the base set with all-f32 operands: CPU_KERNEL(name)
 *     (rayo-op-table.h);
 *   - every RAYO_COMBO line (the dtype combinations of matmul, gemv and the
 *     inference ops): the entry that the plugin's CPU_COMBO_<OP>(OP, DTYPES)
 *     makes of it, one of
 *       CPU_COMBO_KERNEL(OP, DTYPES, fn)  fn runs every combination of OP
 *       CPU_COMBO_TYPED(OP, DTYPES, fn)   fn runs those with another dtype than
 *                                         f32 (the all-f32 line is the base
 *                                         set's kernel, above)
 *       CPU_COMBO_NONE(OP, DTYPES)        no kernel: the call falls through
 *                                         to the next backend
 *   - the f32-only inference ops (no RAYO_COMBO lines): CPU_KERNEL(name).
 *
 * So a plugin's table is its CPU_COMBO_<OP> choices, one line per op family:
 *
 *   #define CPU_COMBO_GEMV(OP, DT) CPU_COMBO_TYPED(OP, DT, avx2_gemv_quant)
 *   #define CPU_COMBO_CONVERT(OP, DT) CPU_COMBO_KERNEL(OP, DT, CPU_KERNEL(convert))
 *   ...
 *   static const rayo_op_entry avx2_ops[] = {
 *   #include "cpu-op-table.h"
 *   };
 *
 * An op with RAYO_COMBO lines and no CPU_COMBO_<OP> is a compile error, a
 * kernel named and not written a link error: no combination is typed by hand.
 */
#define RAYO_KERNEL CPU_KERNEL
#include "rayo-op-table.h"

#define CPU_COMBO_KERNEL(OP, DTYPES, FN) {(OP), (DTYPES), (FN)},
/* The loader skips an entry without a kernel. */
#define CPU_COMBO_TYPED(OP, DTYPES, FN) {(OP), (DTYPES), (DTYPES) ? (FN) : NULL},
#define CPU_COMBO_NONE(OP, DTYPES)

#define RAYO_OP(ID, ENUM, NAME, SIG, TR, TA, SC, DOC)
#define RAYO_COMBO(OP, A, B, C, Y, TR, TA, RR, RA)                                                    \
    CPU_COMBO_##OP(RAYO_OP_##OP, RAYO_DTYPES(RAYO_DTYPE_##A, RAYO_DTYPE_##B, RAYO_DTYPE_##C, RAYO_DTYPE_##Y))
#include "rayo-ops.h"
#undef RAYO_COMBO
#undef RAYO_OP

{RAYO_OP_SWIGLU, 0, CPU_KERNEL(swiglu)},
{RAYO_OP_GEGLU, 0, CPU_KERNEL(geglu)},
{RAYO_OP_GEGLU_TANH, 0, CPU_KERNEL(geglu_tanh)},
