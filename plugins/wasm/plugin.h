/* SPDX-License-Identifier: MIT */
/* plugin.h - internals of the WebAssembly SIMD128 backend (not installed).
 *
 * The plugin is an Emscripten side module (rayo-wasm.so) built with
 * -msimd128: the core, built without SIMD, loads it only after its probe
 * found that the engine validates SIMD128 code.  It exports only its
 * descriptor (-fvisibility=hidden).  The glue it shares with the other CPU
 * plugins is in ../cpu-base; kernels are grouped like every CPU plugin's:
 * elementwise.c, reduce.c, rows.c, matmul.c, gemv.c, transpose.c, quant.c
 * (typed gemv), infer.c (rope, attention, gated units).
 * Every kernel works on 4-float vectors (wasm-math.h for the transcendental
 * functions); tails shorter than a vector go through the same vector code
 * on a zero-padded copy, so every element sees the same arithmetic.
 */
#ifndef RAYO_WASM_H
#define RAYO_WASM_H

#define CPU_KERNEL(NAME) wasm_##NAME
#include "simd128-plugin.h"
#include "wasm-math.h"

/* n < 4 floats into a zero-padded vector, and back */
static inline vf32 load_partial(const float *x, size_t n)
{
    float buf[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    for (size_t i = 0; i < n; i++)
        buf[i] = x[i];
    return wasm_v128_load(buf);
}

static inline void store_partial(float *y, vf32 v, size_t n)
{
    float buf[4];
    wasm_v128_store(buf, v);
    for (size_t i = 0; i < n; i++)
        y[i] = buf[i];
}

/* f16 values in the top 16 bits of i32 lanes (the low 16 bits zero) as
 * floats, exactly: the magnitude's bits moved down into place read as 2^-112
 * times the value (subnormal halves become subnormal floats), so one
 * multiply by 2^112 rebiases it; inf and NaN (exponent 31, >= 2^16 after
 * the multiply, where the largest finite half is 65504) get the float's
 * all-ones exponent; the sign bit is where it belongs already.  (bf16 in
 * the same place is a float as it is.) */
static inline vf32 wasm_f16_top_lanes(v128_t top)
{
    v128_t mag = wasm_u32x4_shr(wasm_v128_and(top, wasm_i32x4_splat(0x7fff0000)), 3);
    vf32 f = vmul(mag, vsplat(0x1p112f));
    v128_t special = wasm_f32x4_ge(f, vsplat(65536.0f));
    f = wasm_v128_or(f, wasm_v128_and(special, wasm_i32x4_splat(0x7f800000)));
    return wasm_v128_or(f, wasm_v128_and(top, wasm_i32x4_splat((int32_t)0x80000000u)));
}

/* four f16 values at p as floats */
static inline vf32 wasm_f16x4(const void *p)
{
    return wasm_f16_top_lanes(wasm_i32x4_shl(wasm_u32x4_load16x4(p), 16));
}

/* Kernels are wasm_NAME (cpu-base.h declares one for every op). */
#define WASM_KERNEL(NAME) CPU_KERNEL_FN(NAME)

#endif
