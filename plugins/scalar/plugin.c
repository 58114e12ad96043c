/* plugin.c - the portable C backend, the one that exists on every machine
 * rayo runs on: its device, op table and descriptor (the glue is
 * ../cpu-base). */
#include "plugin.h"

const cpu_plugin_spec cpu_plugin = {
    .device_name = "CPU (portable C)",
    .state_size = sizeof(cpu_state),
    .range_granule = 1,
};

#define T(dt) RAYO_DTYPE_##dt
#define COMBO(OP, A, B, C, Y, FN) {RAYO_OP_##OP, RAYO_DTYPES(T(A), T(B), T(C), T(Y)), FN}

#define RAYO_KERNEL CPU_KERNEL
static const rayo_op_entry scalar_ops[] = {
#include "rayo-op-table.h"
    /* every dtype combination of rayo-ops.h */
    COMBO(MATMUL, F32, F16, NONE, F32, scalar_matmul_typed),
    COMBO(MATMUL, F32, BF16, NONE, F32, scalar_matmul_typed),
    COMBO(MATMUL, F32, Q8_0, NONE, F32, scalar_matmul_typed),
    COMBO(MATMUL, F32, Q4_0, NONE, F32, scalar_matmul_typed),
    COMBO(MATMUL, F32, Q4_K, NONE, F32, scalar_matmul_typed),
    COMBO(MATMUL, F32, Q6_K, NONE, F32, scalar_matmul_typed),
    COMBO(MATMUL, F16, F16, NONE, F32, scalar_matmul_typed),
    COMBO(MATMUL, BF16, BF16, NONE, F32, scalar_matmul_typed),
    COMBO(GEMV, F16, F32, NONE, F32, scalar_gemv_typed),
    COMBO(GEMV, BF16, F32, NONE, F32, scalar_gemv_typed),
    COMBO(GEMV, Q8_0, F32, NONE, F32, scalar_gemv_typed),
    COMBO(GEMV, Q4_0, F32, NONE, F32, scalar_gemv_typed),
    COMBO(GEMV, Q4_K, F32, NONE, F32, scalar_gemv_typed),
    COMBO(GEMV, Q6_K, F32, NONE, F32, scalar_gemv_typed),
    COMBO(CONVERT, F32, NONE, NONE, F16, scalar_convert),
    COMBO(CONVERT, F16, NONE, NONE, F32, scalar_convert),
    COMBO(CONVERT, F32, NONE, NONE, BF16, scalar_convert),
    COMBO(CONVERT, BF16, NONE, NONE, F32, scalar_convert),
    COMBO(CONVERT, F32, NONE, NONE, Q8_0, scalar_convert),
    COMBO(CONVERT, F32, NONE, NONE, Q4_0, scalar_convert),
    COMBO(CONVERT, Q8_0, NONE, NONE, F32, scalar_convert),
    COMBO(CONVERT, Q4_0, NONE, NONE, F32, scalar_convert),
    COMBO(CONVERT, Q4_K, NONE, NONE, F32, scalar_convert),
    COMBO(CONVERT, Q6_K, NONE, NONE, F32, scalar_convert),
    COMBO(GET_ROWS, F32, I32, NONE, F32, scalar_get_rows),
    COMBO(GET_ROWS, F16, I32, NONE, F32, scalar_get_rows),
    COMBO(GET_ROWS, BF16, I32, NONE, F32, scalar_get_rows),
    COMBO(GET_ROWS, Q8_0, I32, NONE, F32, scalar_get_rows),
    COMBO(GET_ROWS, Q4_0, I32, NONE, F32, scalar_get_rows),
    COMBO(GET_ROWS, Q4_K, I32, NONE, F32, scalar_get_rows),
    COMBO(GET_ROWS, Q6_K, I32, NONE, F32, scalar_get_rows),
    COMBO(ROPE, F32, I32, NONE, F32, scalar_rope),
    COMBO(ATTENTION, F32, F32, F32, F32, scalar_attention),
    COMBO(ATTENTION, F32, F16, F16, F32, scalar_attention),
    COMBO(SWIGLU, F32, F32, NONE, F32, scalar_swiglu),
    COMBO(GEGLU, F32, F32, NONE, F32, scalar_geglu),
    COMBO(GEGLU_TANH, F32, F32, NONE, F32, scalar_geglu_tanh),
};

CPU_PLUGIN_DESCRIPTOR("scalar", RAYO_ARCH_ANY, 0, 10, scalar_ops);
