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

#define T(X) RAYO_DTYPE_##X
#define COMBO(OP, A, B, C, Y, FN) {RAYO_OP_##OP, RAYO_DTYPES(T(A), T(B), T(C), T(Y)), FN}

#define RAYO_KERNEL CPU_KERNEL
static const rayo_op_entry neon_ops[] = {
#include "rayo-op-table.h"
    /* the decode path of inference; the other dtype combinations (matmul,
     * convert, get_rows) fall through to the scalar backend */
    COMBO(GEMV, F16, F32, NONE, F32, neon_gemv_quant),
    COMBO(GEMV, BF16, F32, NONE, F32, neon_gemv_quant),
    COMBO(GEMV, Q8_0, F32, NONE, F32, neon_gemv_quant),
    COMBO(GEMV, Q4_0, F32, NONE, F32, neon_gemv_quant),
    COMBO(GEMV, Q4_K, F32, NONE, F32, neon_gemv_quant),
    COMBO(GEMV, Q6_K, F32, NONE, F32, neon_gemv_quant),
    COMBO(ROPE, F32, I32, NONE, F32, neon_rope),
    COMBO(ATTENTION, F32, F32, F32, F32, neon_attention),
    COMBO(ATTENTION, F32, F16, F16, F32, neon_attention),
    COMBO(SWIGLU, F32, F32, NONE, F32, neon_swiglu),
    COMBO(GEGLU, F32, F32, NONE, F32, neon_geglu),
    COMBO(GEGLU_TANH, F32, F32, NONE, F32, neon_geglu_tanh),
};

CPU_PLUGIN_DESCRIPTOR("neon", RAYO_ARCH_AARCH64, RAYO_CPU_ARM_ASIMD, 50, neon_ops);
