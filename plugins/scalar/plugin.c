/* SPDX-License-Identifier: MIT */
/* plugin.c - the portable C backend, the one that exists on every machine
 * rayo runs on: its device, op table and descriptor (the glue is
 * ../cpu-base). */
#include "plugin.h"

CPU_PLUGIN_SPEC("CPU (portable C)", 1);

/* Every dtype combination of rayo-ops.h has a kernel here: the other
 * backends fall through to these. */
#define CPU_COMBO_MATMUL(OP, DT) CPU_COMBO_TYPED(OP, DT, CPU_KERNEL(matmul_typed))
#define CPU_COMBO_GEMV(OP, DT) CPU_COMBO_TYPED(OP, DT, CPU_KERNEL(gemv_typed))
#define CPU_COMBO_CONVERT(OP, DT) CPU_COMBO_KERNEL(OP, DT, CPU_KERNEL(convert))
#define CPU_COMBO_GET_ROWS(OP, DT) CPU_COMBO_KERNEL(OP, DT, CPU_KERNEL(get_rows))
#define CPU_COMBO_ROPE(OP, DT) CPU_COMBO_KERNEL(OP, DT, CPU_KERNEL(rope))
#define CPU_COMBO_ATTENTION(OP, DT) CPU_COMBO_KERNEL(OP, DT, CPU_KERNEL(attention))

#define CPU_PLUGIN_ID "scalar", RAYO_ARCH_ANY, 0, 10
#include "cpu-plugin_tmpl.c"
