/* plugin.c - the WebAssembly SIMD128 backend: its device, op table and
 * descriptor (the glue is ../cpu-base).
 *
 * The core loads this plugin only where the engine validates SIMD128 code
 * (the descriptor's cpu_features); the base's probe says so again for
 * rayo-info. */
#include "plugin.h"

const cpu_plugin_spec cpu_plugin = {
    .device_name = "WebAssembly SIMD128 (4 x f32)",
    .state_size = sizeof(cpu_state),
    /* chunks of whole vectors: only the last one has a tail */
    .range_granule = 4,
};

#define T(X) RAYO_DTYPE_##X
#define COMBO(OP, A, B, C, Y, FN) {RAYO_OP_##OP, RAYO_DTYPES(T(A), T(B), T(C), T(Y)), FN}

#define RAYO_KERNEL CPU_KERNEL
static const rayo_op_entry wasm_ops[] = {
#include "rayo-op-table.h"
    /* the decode path of inference; the other dtype combinations (matmul,
     * convert, get_rows) fall through to the scalar backend */
    COMBO(GEMV, F16, F32, NONE, F32, wasm_gemv_quant),
    COMBO(GEMV, BF16, F32, NONE, F32, wasm_gemv_quant),
    COMBO(GEMV, Q8_0, F32, NONE, F32, wasm_gemv_quant),
    COMBO(GEMV, Q4_0, F32, NONE, F32, wasm_gemv_quant),
    COMBO(GEMV, Q4_K, F32, NONE, F32, wasm_gemv_quant),
    COMBO(GEMV, Q6_K, F32, NONE, F32, wasm_gemv_quant),
    COMBO(ROPE, F32, I32, NONE, F32, wasm_rope),
    COMBO(ATTENTION, F32, F32, F32, F32, wasm_attention),
    COMBO(ATTENTION, F32, F16, F16, F32, wasm_attention),
    COMBO(SWIGLU, F32, F32, NONE, F32, wasm_swiglu),
    COMBO(GEGLU, F32, F32, NONE, F32, wasm_geglu),
    COMBO(GEGLU_TANH, F32, F32, NONE, F32, wasm_geglu_tanh),
};

CPU_PLUGIN_DESCRIPTOR("wasm", RAYO_ARCH_WASM32, RAYO_CPU_WASM_SIMD128, 50, wasm_ops);
