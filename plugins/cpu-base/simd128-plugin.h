/* SPDX-License-Identifier: MIT */
/* simd128-plugin.h - what the 128-bit SIMD plugins (neon, wasm) share in
 * their plugin.h, after CPU_KERNEL names their kernels: the op table's
 * kernels (cpu-op-table.h) of the decode path of inference.  Matmul with
 * other dtypes, convert and get_rows fall through to the scalar backend. */
#ifndef RAYO_SIMD128_PLUGIN_H
#define RAYO_SIMD128_PLUGIN_H

#define CPU_COMBO_MATMUL(OP, DT) CPU_COMBO_NONE(OP, DT)
#define CPU_COMBO_GEMV(OP, DT) CPU_COMBO_TYPED(OP, DT, CPU_KERNEL(gemv_quant))
#define CPU_COMBO_CONVERT(OP, DT) CPU_COMBO_NONE(OP, DT)
#define CPU_COMBO_GET_ROWS(OP, DT) CPU_COMBO_NONE(OP, DT)
#define CPU_COMBO_ROPE(OP, DT) CPU_COMBO_KERNEL(OP, DT, CPU_KERNEL(rope))
#define CPU_COMBO_ATTENTION(OP, DT) CPU_COMBO_KERNEL(OP, DT, CPU_KERNEL(attention))

#endif
