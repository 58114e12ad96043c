/* SPDX-License-Identifier: MIT */
/* rayo-op-ids.h - run through the C preprocessor at build time
 * (plugins/vulkan/local.mk) to write rayo-op-ids.glsl in the build tree:
 * one GLSL constant OP_<ENUM> per op of core/rayo-ops.h, and the codes the
 * host and the shaders share (vk-shader-codes.h), so that no shader holds a
 * hand-typed op id.  The shaders #include "rayo-op-ids.glsl". */
#include "vk-shader-codes.h"
#define RAYO_OP(ID, ENUM, NAME, SIG, TOL_REL, TOL_ABS, SCALE, SUMMARY) const uint OP_##ENUM = ID##u;
#include "rayo-ops.h"
const uint BIAS_ACT_BASE = VK_BIAS_ACT_BASE;
