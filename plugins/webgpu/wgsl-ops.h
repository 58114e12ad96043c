/* SPDX-License-Identifier: MIT */
/* wgsl-ops.h - run through the C preprocessor at build time (wasm/wasm.mk):
 * with RAYO_WGSL, one WGSL constant per op of core/rayo-ops.h (webgpu-ops.wgsl),
 * so that the shaders never hold a hand-typed op id; without, the op list as
 * JS array rows [id, "ENUM", "SIG"] for webgpu-host.js. */
#ifdef RAYO_WGSL
#define RAYO_OP(ID, ENUM, NAME, SIG, TOL_REL, TOL_ABS, SCALE, SUMMARY) const OP_##ENUM: u32 = ID##u;
#else
#define RAYO_OP(ID, ENUM, NAME, SIG, TOL_REL, TOL_ABS, SCALE, SUMMARY) [ID, #ENUM, #SIG],
#endif
#include "rayo-ops.h"
