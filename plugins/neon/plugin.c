/* plugin.c - the AArch64 Advanced SIMD backend: its device, op table and
 * descriptor (the glue is ../cpu-base).
 *
 * The descriptor says arch AArch64 and cpu_features ASIMD: the core checks
 * both (HWCAP) before any code of this plugin runs, so the kernels may use
 * Advanced SIMD unconditionally. */
#include "plugin.h"

const cpu_plugin_spec cpu_plugin = {
    .device_name = "CPU (AArch64 Advanced SIMD)",
    .state_size = sizeof(cpu_state),
    /* chunks of whole 16-float blocks: only the last one has a tail */
    .range_granule = 16,
};

/* The decode path of inference; the other dtype combinations (matmul,
 * convert, get_rows) fall through to the scalar backend. */
#define CPU_COMBO_MATMUL(OP, DT) CPU_COMBO_NONE(OP, DT)
#define CPU_COMBO_GEMV(OP, DT) CPU_COMBO_TYPED(OP, DT, CPU_KERNEL(gemv_quant))
#define CPU_COMBO_CONVERT(OP, DT) CPU_COMBO_NONE(OP, DT)
#define CPU_COMBO_GET_ROWS(OP, DT) CPU_COMBO_NONE(OP, DT)
#define CPU_COMBO_ROPE(OP, DT) CPU_COMBO_KERNEL(OP, DT, CPU_KERNEL(rope))
#define CPU_COMBO_ATTENTION(OP, DT) CPU_COMBO_KERNEL(OP, DT, CPU_KERNEL(attention))

static const rayo_op_entry neon_ops[] = {
#include "cpu-op-table.h"
};

CPU_PLUGIN_DESCRIPTOR("neon", RAYO_ARCH_AARCH64, RAYO_CPU_ARM_ASIMD, 50, neon_ops);
